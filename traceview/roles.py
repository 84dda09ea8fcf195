"""What each event *does* for the step: its role, decided once — the roles and the rule table.

``kind`` (set by the readers) says what an event is; ``role`` says what its own time (the time
in which it is the innermost event on its thread) is spent on, which is what attribution needs:

==================  ==========================================================================
role                own time is …
==================  ==========================================================================
compute             math: aten leaf ops, TF op kernels, the eager kernel of a math op, XLA thunks
compiled_code       generated code the profiler does not look into (XLA executable on CPU,
                    inductor's compiled graph call): math plus the glue around it
call                a call whose body runs elsewhere or is not recorded: a tf.function call,
                    ``EagerLocalExecute: __inference_…``, Keras ``multi_step_on_iterator``,
                    ``CompiledFunction``, TorchScript's ``DifferentiableGraph``, ``PjitFunction``.
                    Its own time is the caller *waiting*, never compute
call_tracing        a call that traced its function in this very call (XPlane stat
                    tf_function_call = traced-…), and the calls inside it: while it waits with
                    nothing recorded elsewhere, the runtime instantiates and optimizes the new graph
dispatch            framework runtime: op wrappers, autograd engine, executor bookkeeping
view_alloc          framework ops that only make views, allocate or read variables
graph_build         tracing / graph construction, and anything that runs inside it
compile             backend compilation (XLA passes, inductor), and anything inside it
input               input pipeline (DataLoader next, tf.data, IteratorGetNext), and inside it
sync                host blocked on a device
launch / runtime    runtime / driver API calls
startup             a runtime / driver call so long it can only be one-time start-up: context
                    creation, module loading, library initialisation
                    (≥ ``role_passes.STARTUP_CALL_NS``)
python_framework    Python frames in the frameworks' own packages (and their C bindings)
python_user         Python frames in the user's files (and builtins they call)
annotation          a range the user (or a library) opened; its own time is host work
step                a step marker (its own time is the thread between recorded events)
device_*            device activity (compute kernel, memcpy, memset, sync, annotation), and
                    ``device_communication``: a kernel that moves data between devices (NCCL /
                    RCCL collectives, XLA all-reduce …): launched by a collective op, else
                    named like one
==================  ==========================================================================

The rows of :data:`ROLE_RULES` decide first, from each event's kind, name and stats: tried in
order, first match wins. An event no row takes gets its kind's role (:data:`KIND_ROLES`: a
``kernel`` is ``device_kernel`` unless a row makes it ``device_communication``), else
``annotation``. An unknown host event is never ``compute``: compute is an allowlist (the rows of
role ``compute``). What an event alone cannot tell — how long it took, how large its inputs were,
the events around it — the passes of :mod:`traceview.role_passes` decide after the rows
(``role_passes.assign_role_codes`` runs both). docs/attribution.md lists the rows, each with where
its names come from, and the passes in order, each with what it decides and why
(:func:`roles_markdown`, ``role_passes.passes_markdown``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from enum import Enum

import numpy as np

from traceview import categories as cat
from traceview.arrays import codes_matching, column_codes, column_combinations
from traceview.schema import Kind
from traceview.table import Table


class Role(str, Enum):
    COMPUTE = "compute"
    COMPILED_CODE = "compiled_code"
    CALL = "call"
    CALL_TRACING = "call_tracing"
    DISPATCH = "dispatch"
    VIEW_ALLOC = "view_alloc"
    GRAPH_BUILD = "graph_build"
    COMPILE = "compile"
    INPUT = "input"
    SYNC = "sync"
    COMMUNICATION = "communication"  # a collective run on the host (Gloo's work threads on CPU)
    LAUNCH = "launch"
    # A copy call from or to pageable memory: the driver copies through a pinned staging buffer of
    # its own, the host in the call all along (role_passes: pageable_copies).
    COPY_PAGEABLE = "copy_pageable"
    # A launch call that waited for room in the device's queue (role_passes: blocked_launches).
    LAUNCH_BLOCKED = "launch_blocked"
    RUNTIME = "runtime"
    PYTHON_FRAMEWORK = "python_framework"
    PYTHON_USER = "python_user"
    ANNOTATION = "annotation"
    STEP = "step"
    STARTUP = "startup"
    DEVICE_KERNEL = "device_kernel"
    DEVICE_COMMUNICATION = "device_communication"
    # Device work launched from inside graph building or compilation (role_passes: compile_time_kernels).
    DEVICE_COMPILE = "device_compile"
    DEVICE_MEMCPY = "device_memcpy"
    DEVICE_MEMSET = "device_memset"
    DEVICE_SYNC = "device_sync"
    DEVICE_ANNOTATION = "device_annotation"


ROLE_VALUES: tuple[str, ...] = tuple(r.value for r in Role)
# Roles whose own time does math (the CPU "kernel" bucket; top compute ops).
MATH_ROLES = frozenset({Role.COMPUTE.value, Role.COMPILED_CODE.value})
# Roles as small integers while they are decided (a comparison of codes, not of millions of strings).
ROLE_CODE: dict[str, int] = {value: code for code, value in enumerate(ROLE_VALUES)}


def role_codes(*roles: Role) -> np.ndarray:
    """The codes (:data:`ROLE_CODE`) of ``roles``, for ``np.isin`` and lookup tables."""
    return np.array([ROLE_CODE[r.value] for r in roles], dtype=np.int8)


# Kinds whose role follows from the kind alone (the readers already decided them by name).
KIND_ROLES: dict[str, Role] = {
    Kind.STEP.value: Role.STEP,
    Kind.GRAPH_BUILD.value: Role.GRAPH_BUILD,
    Kind.COMPILE.value: Role.COMPILE,
    Kind.INPUT.value: Role.INPUT,
    Kind.SYNC.value: Role.SYNC,
    Kind.LAUNCH.value: Role.LAUNCH,
    Kind.RUNTIME.value: Role.RUNTIME,
    Kind.KERNEL.value: Role.DEVICE_KERNEL,
    Kind.MEMCPY.value: Role.DEVICE_MEMCPY,
    Kind.MEMSET.value: Role.DEVICE_MEMSET,
    Kind.DEVICE_SYNC.value: Role.DEVICE_SYNC,
    Kind.DEVICE_ANNOTATION.value: Role.DEVICE_ANNOTATION,
}

_OP = frozenset({Kind.HOST_OP.value})
_OP_OR_RANGE = frozenset({Kind.HOST_OP.value, Kind.ANNOTATION.value})
_RANGE = frozenset({Kind.ANNOTATION.value})
_PYTHON = frozenset({Kind.PYTHON.value})
_KERNEL = frozenset({Kind.KERNEL.value})

# TF function-call op types: a graph function runs as an op of this type (eager_op / tf_op stat,
# or the type after ":" in an op kernel name). tensorflow/core/common_runtime/function*.cc,
# tf.function's `__inference_<name>_<id>` / `__forward_…` / `__backward_…` concrete functions,
# XLA clusters launched by `_XlaRun` / `XlaLaunch` (tensorflow/compiler/jit/kernels/xla_ops.cc).
# (A function's name is the Python one's: `__inference_<lambda>_149` for a tf.function of a lambda.)
_FUNCTION_TYPE = (r"(__inference_[^\s:]*|__forward_[^\s:]*|__backward_[^\s:]*|StatefulPartitionedCall|PartitionedCall|"
                  r"_XlaRun|XlaLaunch)")
# Input-pipeline op types: tf.data's ops (tensorflow/core/ops/dataset_ops.cc,
# experimental_dataset_ops.cc). Each dataset constructor's type ends in "Dataset" (MapDataset,
# ParallelMapDatasetV2, PrefetchDataset …: Keras fit builds them each epoch); the iterator ops make an
# iterator (MakeIterator, AnonymousIteratorV3, IteratorV2), drop it (DeleteIterator) or take the next
# element (IteratorGetNext …, kernels/data/iterator_ops.cc).
_INPUT_TYPE = (r"(IteratorGetNext|IteratorGetNextSync|IteratorGetNextAsOptional|MultiDeviceIteratorGetNextFromShard|"
               r"MakeIterator|AnonymousIterator(V\d+)?|IteratorV2|DeleteIterator|\w+Dataset(V\d+)?)")
# TF op types whose kernel calls back into the user's Python (tensorflow/python/ops/script_ops.py:
# tf.py_function → EagerPyFunc; tf.numpy_function and tf.compat.v1.py_func → PyFunc, PyFuncStateless).
_PY_FUNC_TYPE = r"(EagerPyFunc|PyFunc|PyFuncStateless)"
# TF op types that format or write text for the user (tensorflow/core/ops/string_ops.cc, logging_ops.cc,
# summary_ops.cc: tf.print → StringFormat + PrintV2; tf.strings.as_string / format / join; tf.summary's
# writes).
_TEXT_OUTPUT_TYPE = (r"(StringFormat|PrintV2|Print|AsString|StringJoin|WriteSummary|WriteScalarSummary|"
                     r"WriteHistogramSummary|WriteImageSummary|WriteAudioSummary|WriteRawProtoSummary|"
                     r"FlushSummaryWriter|ScalarSummary|HistogramSummary|MergeSummary)")
# TF op types that move no data through math (tensorflow/core/ops/*: variables, identities, shapes).
_TF_NO_MATH_TYPE = (
    r"(Identity|IdentityN|NoOp|Const|Placeholder|_Arg|_Retval|ReadVariableOp|VarHandleOp|_Recv|_Send|Shape|"
    r"ShapeN|Reshape|_HostRecv|_HostSend|StopGradient|DestroyResourceOp|BroadcastGradientArgs|Size|Rank|"
    r"ExpandDims|Squeeze|OptionalHasValue|OptionalGetValue|OptionalFromValue|OptionalNone)"
)
# aten ops that only make views, allocate, or convert metadata (aten/src/ATen/native/native_functions.yaml).
_ATEN_VIEW_ALLOC = (
    r"empty|empty_like|empty_strided|as_strided|view|_unsafe_view|reshape|_reshape_alias|t|transpose|permute|"
    r"expand|expand_as|squeeze|unsqueeze|detach|detach_|alias|slice|select|narrow|resize_|set_|lift_fresh|"
    r"contiguous|numpy_T|result_type|is_nonzero|size|stride|dim|broadcast_tensors|unbind|split|chunk|"
    r"record_stream|view_as|flatten|unflatten|new_empty|new_empty_strided|_has_compatible_shallow_copy_type|"
    r"resolve_conj|resolve_neg|_local_scalar_dense|item|to|_to_copy|lift_fresh_copy"
)
# aten composite ops: their own time is dispatch; the math runs in the op they call
# (linear → addmm, relu → clamp_min, conv2d → mkldnn_convolution, batch_norm → native_batch_norm).
_ATEN_COMPOSITE = (
    r"linear|matmul|conv1d|conv2d|conv3d|convolution|_convolution|_convolution_mode|batch_norm|"
    r"_batch_norm_impl_index|dropout|cross_entropy_loss|relu|lstm|gru|rnn_tanh|rnn_relu|layer_norm|group_norm|"
    r"conv_transpose2d|max_pool2d|softmax|convolution_backward_overrideable|einsum|chain_matmul|embedding"
)


@dataclass(frozen=True)
class RoleRule:
    """One row: events of ``kinds`` whose name / framework op / call stat match get ``role``."""

    role: Role
    kinds: frozenset[str]
    source: str  # where the names come from (profiler, file)
    name: re.Pattern[str] | None = None  # searched in the event name
    fw_op: re.Pattern[str] | None = None  # searched in the XPlane framework op (eager_op / tf_op stat)
    fn_call: bool = False  # the event carries XPlane's tf_function_call stat
    hlo_op: bool = False  # the event carries XPlane's hlo_op stat (an XLA thunk)
    launcher: re.Pattern[str] | None = None  # searched in the framework op that launched a device event


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# Python frames of the frameworks' packages and their C bindings, by file path or builtin owner
# (torch's tracer: "torch/nn/modules/module.py(1751): _call_impl", "<built-in method mul of Tensor
# object>"; JAX's and TensorFlow's: "$jax/…" where a folder is named). The role rule below, and the
# hot-frame view that names the user's own lines (analyzers/hot_frames.py).
FRAMEWORK_PYTHON_FRAME = _re(r"(^|[/\\$])(torch|tensorflow|keras|tf_keras|jax|jaxlib|flax|optax|triton|functorch|"
                             r"torchvision)[/\\]|<built-in (method|function) \w+ of (type object|Tensor|torch|"
                             r"tensorflow|PyCapsule)|torch\._C|_pywrap_|torchinductor_|^nn\.Module: ")


ROLE_RULES: tuple[RoleRule, ...] = (
    # ---- compiled code: the math runs here, inside code the profiler does not look into ----
    RoleRule(Role.COMPILED_CODE, _OP_OR_RANGE, "torch inductor: `## Call CompiledFxGraph <hash> ##` encloses "
             "the generated code's call (torch/_inductor/output_code.py)", name=cat.INDUCTOR_GRAPH_CALL),
    RoleRule(Role.COMPILED_CODE, _OP, "XLA on CPU: the executable runs the compiled code inline "
             "(xla/service/cpu/cpu_executable.cc, ThunkExecutor)",
             name=_re(r"^(CpuExecutable::Execute\w*|ThunkExecutor::Execute|.+:XLA CPU module)$")),
    RoleRule(Role.COMPILED_CODE, _OP_OR_RANGE, "XLA on CPU: the thunk executor waits for the thunks it ran "
             "asynchronously on its worker threads — the program is still running, between and around the "
             "thunks the profiler records (xla/backends/cpu/runtime/thunk_executor.cc)",
             name=cat.XLA_PROGRAM_WAIT),
    # ---- calls: the caller waits while the body runs on other threads or in unrecorded code ----
    RoleRule(Role.CALL, _OP_OR_RANGE, "TF python line: a tf.function call event, named after the Python "
             "function (`_step`, Keras `multi_step_on_iterator`), stat tf_function_call", fn_call=True),
    RoleRule(Role.COMPILE, _OP, "TF op kernel `cluster:_XlaCompile` (XLA auto-clustering compiles here; one "
             "shorter than XLA_CACHE_HIT_NS found its cluster in the cache: dispatch)", name=cat.TF_XLA_COMPILE_OP),
    RoleRule(Role.INPUT, _OP_OR_RANGE, "TF eager runtime running a tf.data op: taking the next element "
             "(EagerLocalExecute: IteratorGetNext), building a dataset or an iterator (MakeIterator, MapDataset "
             "at each Keras fit epoch); stat eager_op", fw_op=_re(rf"^{_INPUT_TYPE}$")),
    RoleRule(Role.INPUT, _OP, "TF op kernel of a tf.data op type (`x:MakeIterator`, `x:PrefetchDataset`)",
             name=_re(rf":{_INPUT_TYPE}$")),
    RoleRule(Role.CALL, _OP, "TF eager runtime executing a graph function (EagerExecute, "
             "EagerKernelExecute, KernelAndDeviceFunc::Run, FunctionRun; stat eager_op __inference_f_12)",
             name=_re(r"^(TFE_Py_\w+|EagerExecute|EagerLocalExecute: .*|EagerKernelExecute|"
                      r"KernelAndDevice(Func|Op)::Run|FunctionRun)$"),
             fw_op=_re(rf"^{_FUNCTION_TYPE}$")),
    RoleRule(Role.CALL, _OP, "TF op kernel whose type is a function (`__inference_f_12:__inference_f_12`, "
             "`StatefulPartitionedCall`, XLA `_XlaRun`)", name=_re(rf"(^|:){_FUNCTION_TYPE}$")),
    RoleRule(Role.CALL, _OP, "TF eager runtime, function named in the event (EagerLocalExecute: __inference_…)",
             name=_re(r"^EagerLocalExecute: (__inference_|__forward_|__backward_)")),
    RoleRule(Role.CALL, _OP, "torch.compile: AOT autograd's autograd.Function around the compiled graph "
             "(torch/_functorch/_aot_autograd/runtime_wrappers.py)", name=cat.TORCH_COMPILED_FUNCTION),
    RoleRule(Role.CALL, _OP, "TorchScript profiling executor: differentiable graph and its forward / backward "
             "ranges (torch/csrc/jit/runtime/graph_executor.cpp)",
             name=cat.TORCHSCRIPT_GRAPH_CALL),
    RoleRule(Role.CALL, _OP_OR_RANGE, "TF1 graph mode: Session.run (TraceMe `SessionRun`, "
             "tensorflow/core/common_runtime/direct_session.cc); the graph runs on executor threads",
             name=cat.TF_SESSION_RUN),
    RoleRule(Role.CALL, _OP, "JAX: a jitted call (PjitFunction(f) on the python line)",
             name=cat.JAX_JITTED_CALL),
    RoleRule(Role.CALL, _OP_OR_RANGE, "JAX: an array's value fetched to the host (`np.asarray(jax.Array)`: "
             "jax.Array._value in jax/_src/array.py, behind float(x), x.item(), np.asarray(x), print) waits "
             "for the computation producing it, then copies it", name=_re(r"^np\.asarray\(jax\.Array\)$")),
    # ---- framework runtime around the math ----
    RoleRule(Role.DISPATCH, _OP, "torch.compile runtime wrappers: guards, cache lookup, AOT prologue/epilogue "
             "(torch/_dynamo/eval_frame.py, torch/_functorch/_aot_autograd/runtime_wrappers.py)",
             name=cat.any_of(cat.TORCH_COMPILED_REGION,
                             _re(r"^(TorchDynamo Cache Lookup|AOTDispatcher Runtime Wrapper|Pregraph bytecode|"
                                 r"PythonDispatchMode)"))),
    RoleRule(Role.DISPATCH, _OP, "torch autograd engine: node evaluation and backward-node wrappers "
             "(torch/csrc/autograd/engine.cpp, function.h)",
             name=cat.any_of(cat.TORCH_ENGINE_NODE, _re(r"^[A-Za-z0-9_]+Backward\d*$|^torch::autograd::"))),
    RoleRule(Role.VIEW_ALLOC, _OP, "aten ops that only make views / allocate (native_functions.yaml)",
             name=_re(rf"^aten::({_ATEN_VIEW_ALLOC})$")),
    RoleRule(Role.DISPATCH, _OP, "aten composite ops (their math runs in the op they call)",
             name=_re(rf"^aten::({_ATEN_COMPOSITE})$")),
    RoleRule(Role.VIEW_ALLOC, _OP, "TF op kernels of no-math types on executor threads (`x/ReadVariableOp:ReadVariableOp`)",
             name=_re(rf":{_TF_NO_MATH_TYPE}$")),
    RoleRule(Role.VIEW_ALLOC, _OP_OR_RANGE, "TF eager runtime running a no-math op (stat eager_op ReadVariableOp …)",
             fw_op=_re(rf"^{_TF_NO_MATH_TYPE}$")),
    # ---- the user's Python, run by the framework ----
    RoleRule(Role.PYTHON_USER, _OP, "TF op kernel that calls the user's Python function (`EagerPyFunc:EagerPyFunc` "
             "of tf.py_function, `PyFunc` / `PyFuncStateless` of tf.numpy_function; on an executor thread while "
             "the step's thread waits in the tf.function call)", name=_re(rf":{_PY_FUNC_TYPE}$")),
    RoleRule(Role.PYTHON_USER, _OP, "TF eager: the op kernel of a py_function run eagerly (KernelAndDeviceOp::Run, "
             "stat eager_op EagerPyFunc)", name=cat.TF_EAGER_KERNEL,
             fw_op=_re(rf"^{_PY_FUNC_TYPE}$")),
    RoleRule(Role.PYTHON_USER, _OP, "TF op kernel that formats or writes text for the user (`x/StringFormat:StringFormat` "
             "and `x/PrintV2:PrintV2` of tf.print, tf.strings formatting, tf.summary writes): the user's logging, "
             "not math (a tf.print in a tf.function read as 91 % of the math, with 'speed up the math' advice)",
             name=_re(rf":{_TEXT_OUTPUT_TYPE}$")),
    RoleRule(Role.PYTHON_USER, _OP, "TF eager: the op kernel of a text-formatting or -writing op run eagerly "
             "(KernelAndDeviceOp::Run, stat eager_op StringFormat / PrintV2 …)",
             name=cat.TF_EAGER_KERNEL, fw_op=_re(rf"^{_TEXT_OUTPUT_TYPE}$")),
    # ---- the math (allowlist) ----
    RoleRule(Role.COMPUTE, _OP, "aten / prims / quantized / mkldnn / vision leaf ops (torch.profiler cpu_op)",
             name=_re(r"^(aten|prims|quantized|mkldnn|onednn|fbgemm|torchvision|torchaudio)::\w+$")),
    RoleRule(Role.COMMUNICATION, _OP, "TF collective op kernels run on the host (tf.distribute on CPU: "
             "`sgd/CollectiveReduceV2:CollectiveReduceV2` on the collective_ops threads waits for the other "
             "replicas and reduces their data; categories.FRAMEWORK_COLLECTIVE_OP)", name=cat.FRAMEWORK_COLLECTIVE_OP),
    RoleRule(Role.COMMUNICATION, _OP, "XLA on CPU: a collective thunk (`all-reduce.4` with stat hlo_op, on an "
             "XLA worker thread: JAX sharded over host devices) waits in a Rendezvous for the other devices and "
             "moves their data; categories.XLA_COLLECTIVE_HLO", name=cat.XLA_COLLECTIVE_HLO),
    RoleRule(Role.COMPUTE, _OP, "TF op kernels `name:Type` on executor threads (tf_Compute, inter-op pools)",
             name=cat.TF_OP_KERNEL),
    RoleRule(Role.COMPUTE, _OP, "TF eager: the op kernel itself (KernelAndDeviceOp::Run / KernelAndDeviceFunc::Run "
             "of a math op; the type is in stat eager_op)", name=cat.TF_EAGER_KERNEL),
    RoleRule(Role.COMPUTE, _OP, "XLA thunks: an op with stat hlo_op runs one instruction of a compiled program "
             "(XLA's CPU thunk executor names it `ynn_fusion.2`, `conv_general_dilated.3` and sets hlo_op, "
             "hlo_module), inside a module execution or alone on a worker pool's thread", hlo_op=True),
    # ---- everything else that a reader called a framework op or a range ----
    RoleRule(Role.PYTHON_FRAMEWORK, _RANGE, "torch.optim profile hook ranges around the optimizer's Python "
             "(torch/optim/optimizer.py: `Optimizer.step#SGD.step`)", name=_re(r"^Optimizer\.\w+#")),
    RoleRule(Role.PYTHON_FRAMEWORK, _RANGE, "DistributedDataParallel's range around the wrapped module's forward "
             "and its own Python (torch/nn/parallel/distributed.py: `DistributedDataParallel.forward`)",
             name=_re(r"^DistributedDataParallel\.\w+$")),
    RoleRule(Role.DISPATCH, _OP, "any other framework op: runtime (TFE_Py_*, EagerExecute, ExecutorState::Process, "
             "convert_to_tensor) or an op that is not on the compute allowlist"),
    RoleRule(Role.COMMUNICATION, _RANGE, "torch.distributed on CPU: the `gloo:all_reduce`, `gloo:broadcast` … "
             "range ProcessGroupGloo records around each collective it runs on its work threads (waiting for the "
             "peers and moving the data; torch/csrc/distributed/c10d/ProcessGroupGloo.cpp)",
             name=_re(r"^gloo:\w+$")),
    RoleRule(Role.COMMUNICATION, _RANGE, "TF's collective executor running a collective op "
             "(CollectiveOpV2Kernel::Run, BaseCollectiveExecutor::ExecuteAsync, CollectiveExecutor::CompleteParams, "
             "CollectiveExecutor::ExecuteAsync::Done …; tensorflow/core/common_runtime/base_collective_executor.cc, "
             "tensorflow/core/kernels/collective_ops.cc)",
             name=_re(r"^(Base)?CollectiveExecutor::|^CollectiveOpV2Kernel::")),
    RoleRule(Role.DISPATCH, _RANGE, "TF executor / tf.data runtime ranges (ExecutorState::ProcessAsync::Start, "
             "ExecutorDoneCallback)", name=_re(r"^(ExecutorState::|ExecutorDoneCallback|ThreadpoolListener)")),
    RoleRule(Role.ANNOTATION, _RANGE, "any other range: user record_function / tf.profiler Trace, library ranges"),
    # ---- Python frames (torch with_stack / python_function; XPlane `$file.py:12 f`) ----
    RoleRule(Role.COMPILE, _PYTHON, "Python in the compilers' own modules: dynamo's tracer, AOT autograd's "
             "compile path, inductor's lowering / codegen, jax's tracing and lowering. Not the modules that also "
             "run at every call of compiled code, which compile only inside these frames (by nesting): AOT "
             "autograd's aot_autograd.py (its runtime forward), dynamo's guards.py (the guard check before each "
             "call), torch.fx (helpers compiled code calls; torch/fx/traceback.py's format_stack, which autograd "
             "anomaly detection calls in every forward op: categories.TORCH_ANOMALY_STACK) — in a torch.compile "
             "step's steady state they read as 28 % graph building (tests/data/torch_cpu_compile)",
             name=_re(r"(torch/_dynamo/(convert_frame|symbolic_convert|output_graph|variables/|bytecode_transformation)|"
                      r"torch/_functorch/_aot_autograd/(jit_compile_runtime_wrappers|dispatch_and_compile_graph|"
                      r"collect_metadata_analysis|graph_compile)|torch/_functorch/partitioners\.py|"
                      r"torch/_inductor/(compile_fx|graph|lowering|scheduler|codegen/|ir|fx_passes/|codecache|"
                      r"async_compile|select_algorithm|decomposition)|torch/_subclasses/fake_|"
                      r"jax/_src/(interpreters/partial_eval|interpreters/mlir|pjit\.py.*_pjit_lower|compiler\.py))")),
    RoleRule(Role.COMPILE, _PYTHON, "jax.jit tracing, lowering and compiling a function on a cache miss, as "
             "JAX's own Python tracer names the frames (`$file.py:LINE function`, the file's base name only): in "
             "pjit.py _trace_for_jit / _create_pjit_jaxpr / _resolve_and_lower / _pjit_lower*, in compiler.py "
             "compile_or_get_cached / _compile_and_write_cache / backend_compile*, in pxla.py the lowering and "
             "compile steps (jax/_src). The tracing below them (partial_eval.py, the user's function) takes their "
             "role; un-jitted transformations (jax.grad called eagerly) trace outside them and stay the "
             "framework's dispatch. 140 ms of a JAX loop's first step read as dispatch",
             name=_re(r"^\$pjit\.py:\d+ (_trace_for_jit|_create_pjit_jaxpr|_resolve_and_lower|_pjit_lower\w*)$|"
                      r"^\$compiler\.py:\d+ (compile_or_get_cached|_compile_and_write_cache|backend_compile\w*)$|"
                      r"^\$pxla\.py:\d+ (lower_sharding_computation|_cached_lowering_to_hlo|_cached_compilation|"
                      r"from_hlo|compile)$")),
    RoleRule(Role.PYTHON_FRAMEWORK, _PYTHON, "Python in the frameworks' packages, and their C bindings "
             "(`<built-in method mul of Tensor object>`, `torch/_C` builtins)", name=FRAMEWORK_PYTHON_FRAME),
    RoleRule(Role.PYTHON_USER, _PYTHON, "any other Python frame: the user's files, the standard library and "
             "other packages called from them"),
    # ---- device kernels that communicate (collectives): the op that launched them first, then names ----
    RoleRule(Role.DEVICE_COMMUNICATION, _KERNEL, "a kernel launched by a torch.distributed collective "
             "(launcher `record_param_comms`, `c10d::allreduce_`, `_c10d_functional::all_reduce`; by correlation)",
             launcher=cat.TORCH_COLLECTIVE_OP),
    RoleRule(Role.DEVICE_COMMUNICATION, _KERNEL, "a kernel of an XLA collective (hlo_op `all-reduce.1`, "
             "`all-gather-start`, `reduce-scatter`, `collective-permute-done`, `all-to-all`)",
             launcher=cat.XLA_COLLECTIVE_HLO),
    RoleRule(Role.DEVICE_COMMUNICATION, _KERNEL, "a kernel of a JAX / TF collective op (op path `jit(step)/psum`, "
             "`all_gather`; tf_op `…:CollectiveReduceV2`, `…:NcclAllReduce`)", launcher=cat.FRAMEWORK_COLLECTIVE_OP),
    RoleRule(Role.DEVICE_COMMUNICATION, _KERNEL, "NCCL / RCCL kernels by name, launch not tied to an op "
             "(`ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_Generic_1`, `mscclKernel_…`)",
             name=cat.COLLECTIVE_KERNEL),
)

# A text column as each row's code into its distinct values (-1: missing) and those values.
TextColumn = tuple[np.ndarray, list[str]]


def text_column(events: Table, column: str) -> TextColumn:
    """A column's codes and distinct values as text ("" for a missing value); every code -1 where
    the table has no such column."""
    if column not in events.columns:
        return np.full(len(events), -1, dtype=np.int64), []
    codes, values = column_codes(events[column])
    return codes, ["" if c is None or c != c else str(c) for c in values]


def matching_rows(pattern: re.Pattern[str], values: list[str], codes: np.ndarray) -> np.ndarray:
    """Match a pattern once per distinct value; code -1 (missing) never matches."""
    return codes_matching(codes, np.array([bool(pattern.search(v)) for v in values], dtype=bool))


def rule_role_codes(events: Table, names: TextColumn, calls: TextColumn) -> np.ndarray:
    """The role the first matching row of :data:`ROLE_RULES` gives each row (else its kind's,
    :data:`KIND_ROLES`; else annotation), as codes into :data:`ROLE_VALUES` (int8). ``names`` and
    ``calls``: the name and tf_function_call columns (:func:`text_column`), which the passes after
    the rows read too."""
    kind_codes, kind_values = text_column(events, "kind")
    name_codes, name_values = names
    fw_codes, fw_values = text_column(events, "fw_op")
    call_codes, call_values = calls
    launcher_codes, launcher_values = text_column(events, "launcher")
    hlo_codes, hlo_values = text_column(events, "hlo_op")
    # The rules read only these columns: they run once per distinct combination of them (a trace of
    # millions of events has a few hundred), and each row takes its combination's role.
    columns = (kind_codes, name_codes, fw_codes, call_codes, launcher_codes, hlo_codes)
    combination, first = _combinations(columns, (kind_values, name_values, fw_values, call_values, launcher_values,
                                                 hlo_values))
    kind_at, name_at, fw_at, call_at, launcher_at, hlo_at = (codes[first] for codes in columns)
    by_combination = _rule_roles(kind_at, kind_values, name_at, name_values, fw_at, fw_values, call_at, call_values,
                                 launcher_at, launcher_values, hlo_at, hlo_values)
    return by_combination[combination]


def _combinations(columns: tuple[np.ndarray, ...], values: tuple[list[str], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's combination of codes (numbered in order of first appearance) and the first row of
    each combination. The codes (-1: missing) are packed into one integer key per row."""
    n = len(columns[0])
    sizes = [len(v) + 1 for v in values]  # code -1 → 0
    if not n or float(np.prod(np.array(sizes, dtype=float))) >= 2**62:
        return np.arange(n), np.arange(n)  # (a key would not fit: every row its own combination)
    return column_combinations(columns, [1] * len(columns), sizes)


def _rule_roles(kind_codes: np.ndarray, kind_values: list[str], name_codes: np.ndarray, name_values: list[str],
                fw_codes: np.ndarray, fw_values: list[str], call_codes: np.ndarray, call_values: list[str],
                launcher_codes: np.ndarray, launcher_values: list[str], hlo_codes: np.ndarray,
                hlo_values: list[str]) -> np.ndarray:
    """The role :data:`ROLE_RULES` give (then the kind's role, then annotation) to rows given as
    codes into their columns' values."""
    n = len(kind_codes)

    def kind_in(kinds: Any) -> np.ndarray:
        return np.array([v in kinds for v in kind_values] + [False], dtype=bool)[kind_codes]

    role = np.full(n, -1, dtype=np.int8)
    has_call = np.array([v != "" for v in call_values] + [False], dtype=bool)[call_codes]
    has_hlo = np.array([v != "" for v in hlo_values] + [False], dtype=bool)[hlo_codes]
    for rule in ROLE_RULES:
        open_rows = (role < 0) & kind_in(rule.kinds)
        if not open_rows.any():
            continue
        match = open_rows
        if rule.name is not None:
            match = match & matching_rows(rule.name, name_values, name_codes)
        if rule.fw_op is not None:
            match = match & matching_rows(rule.fw_op, fw_values, fw_codes)
        if rule.fn_call:
            match = match & has_call
        if rule.hlo_op:
            match = match & has_hlo
        if rule.launcher is not None:
            match = match & matching_rows(rule.launcher, launcher_values, launcher_codes)
        role[match] = ROLE_CODE[rule.role.value]
    # The rows decide first (a kernel may be communication); every other event's kind decides.
    for k, r in KIND_ROLES.items():
        role[kind_in({k}) & (role < 0)] = ROLE_CODE[r.value]
    role[role < 0] = ROLE_CODE[Role.ANNOTATION.value]
    return role


def roles_markdown() -> str:
    """The role rules as a markdown table (docs/attribution.md embeds it; a test checks it)."""
    lines = ["| row | role | kinds | names (where they come from) |", "|---|---|---|---|"]
    for i, rule in enumerate(ROLE_RULES, 1):
        lines.append(f"| {i} | `{rule.role.value}` | {', '.join(sorted(rule.kinds))} | {rule.source} |")
    return "\n".join(lines) + "\n"
