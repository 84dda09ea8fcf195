"""What each event *does* for the step: its role, decided once, from ordered rule tables.

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
                    creation, module loading, library initialisation (≥ STARTUP_CALL_NS)
python_framework    Python frames in the frameworks' own packages (and their C bindings)
python_user         Python frames in the user's files (and builtins they call)
annotation          a range the user (or a library) opened; its own time is host work
step                a step marker (its own time is the thread between recorded events)
device_*            device activity (compute kernel, memcpy, memset, sync, annotation), and
                    ``device_communication``: a kernel that moves data between devices (NCCL /
                    RCCL collectives, XLA all-reduce …): launched by a collective op, else
                    named like one
==================  ==========================================================================

An op whose recorded input shapes are tiny (≤ ``TINY_OP_ELEMENTS``) is ``dispatch``: its time is
the per-call cost. An unknown host event is never ``compute``: compute is an allowlist (:data:`ROLE_RULES` rows
with role ``compute``). Rules are rows of :data:`ROLE_RULES`, tried in order, first match wins;
each row says where the names come from. Kinds without a matching row take the role of the
kind (:data:`KIND_ROLES`: a ``kernel`` is ``device_kernel`` unless a row makes it
``device_communication``). An op ``X`` beside an op ``XBackward`` is a Python autograd.Function:
its own time, left dispatch by the rows, is the user's Python (:func:`_python_functions`). Nesting
rules (:func:`assign_roles`) then apply (and JAX's host callbacks are the user's Python:
:func:`_host_callbacks`):
everything inside graph building / compilation / input takes that role, an op called by
compiled code is compute, and a Python builtin inherits the role of the frame that called it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from enum import Enum

import numpy as np

from traceview import categories as cat
from traceview.arrays import (Nesting, at_rows, codes_matching, column_codes, column_combinations, membership,
                              unique_sorted)
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
    RUNTIME = "runtime"
    PYTHON_FRAMEWORK = "python_framework"
    PYTHON_USER = "python_user"
    ANNOTATION = "annotation"
    STEP = "step"
    STARTUP = "startup"
    DEVICE_KERNEL = "device_kernel"
    DEVICE_COMMUNICATION = "device_communication"
    DEVICE_MEMCPY = "device_memcpy"
    DEVICE_MEMSET = "device_memset"
    DEVICE_SYNC = "device_sync"
    DEVICE_ANNOTATION = "device_annotation"


ROLE_VALUES: tuple[str, ...] = tuple(r.value for r in Role)
# Roles whose own time does math (the CPU "kernel" bucket; top compute ops).
MATH_ROLES = frozenset({Role.COMPUTE.value, Role.COMPILED_CODE.value})

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

# XLA auto-clustering's compile op (categories.TF_XLA_COMPILE_OP) runs before every launch of its
# cluster: it compiles on the first call and then looks the executable up in XLA's cache. A lookup
# returns in tens of µs (47 µs a step on a CPU capture); compiling even a small cluster takes tens
# to hundreds of ms (235 ms there). One shorter than this is the lookup: the framework's dispatch,
# not graph building (it read as 2 % of "steady graph building, retracing").
XLA_CACHE_HIT_NS = 1_000_000
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
             "(`<built-in method mul of Tensor object>`, `torch/_C` builtins)",
             name=_re(r"(^|[/\\$])(torch|tensorflow|keras|tf_keras|jax|jaxlib|flax|optax|triton|functorch|"
                      r"torchvision)[/\\]|<built-in (method|function) \w+ of (type object|Tensor|torch|tensorflow|"
                      r"PyCapsule)|torch\._C|_pywrap_|torchinductor_|^nn\.Module: ")),
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

# A runtime / driver call this long is one-time start-up, whatever its name: CUDA context
# creation lands in the first runtime call (29.9 s in cudaDeviceGetStreamPriorityRange on the
# shared A100 alexnet trace), lazy cuDNN / cuBLAS initialisation in cudaFree (6.0 s), lazy module
# loading in the first cudaLaunchKernel (3.1 s). Steady-state runtime calls take µs.
STARTUP_CALL_NS = 100_000_000

# An op whose largest input holds at most this many elements does at most ~1 µs of math on one
# CPU core, less than the call itself costs (aten::mul on 8 elements: 2.4 µs own time, torch 2.13
# CPU): when shapes are recorded, such an op's own time is per-op dispatch, not compute.
TINY_OP_ELEMENTS = 1024

# Roles of framework work: a range nested in one of these is the framework's runtime scope.
_FRAMEWORK_PARENTS = [Role.CALL.value, Role.CALL_TRACING.value, Role.DISPATCH.value, Role.VIEW_ALLOC.value,
                      Role.COMPUTE.value, Role.COMPILED_CODE.value]


# Roles as small integers while they are decided (a comparison of codes, not of millions of strings).
_ROLE_CODE = {value: code for code, value in enumerate(ROLE_VALUES)}


def _role_codes(*roles: Role) -> np.ndarray:
    return np.array([_ROLE_CODE[r.value] for r in roles], dtype=np.int8)


def assign_roles(events: Table) -> np.ndarray:
    """The role of every row (object array of :class:`Role` values), rules then nesting."""
    return np.array(ROLE_VALUES, dtype=object)[assign_role_codes(events)]


def assign_role_codes(events: Table) -> np.ndarray:
    """The role of every row as an index into :data:`ROLE_VALUES` (int8)."""
    kind_codes, kind_values = _category(events, "kind")
    name_codes, name_values = _category(events, "name")
    fw_codes, fw_values = _category(events, "fw_op")
    call_codes, call_values = _category(events, "fn_call")
    launcher_codes, launcher_values = _category(events, "launcher")
    hlo_codes, hlo_values = _category(events, "hlo_op")
    # The rules read only these columns: they run once per distinct combination of them (a trace of
    # millions of events has a few hundred), and each row takes its combination's role.
    columns = (kind_codes, name_codes, fw_codes, call_codes, launcher_codes, hlo_codes)
    combination, first = _combinations(columns, (kind_values, name_values, fw_values, call_values, launcher_values,
                                                 hlo_values))
    kind_at, name_at, fw_at, call_at, launcher_at, hlo_at = (codes[first] for codes in columns)
    by_combination = _rule_roles(kind_at, kind_values, name_at, name_values, fw_at, fw_values, call_at, call_values,
                                 launcher_at, launcher_values, hlo_at, hlo_values)
    role = by_combination[combination]
    del combination
    kind_in = membership(events["kind"])
    tracing = np.array([v.startswith("traced") for v in call_values] + [False], dtype=bool)[call_codes]
    if "elements" in events.columns:
        # Shapes recorded (torch record_shapes): an op on a tiny input does next to no math; its own
        # time is the per-call cost of the framework.
        elements = events["elements"]
        tiny = (role == _ROLE_CODE[Role.COMPUTE.value]) & (elements >= 0) & (elements <= TINY_OP_ELEMENTS)
        role[tiny] = _ROLE_CODE[Role.DISPATCH.value]
    api = kind_in([Kind.RUNTIME.value, Kind.LAUNCH.value, Kind.SYNC.value])
    role[api & (events["dur"] >= STARTUP_CALL_NS)] = _ROLE_CODE[Role.STARTUP.value]
    xla_compile = _lookup(cat.TF_XLA_COMPILE_OP, name_values, name_codes)
    if xla_compile.any():
        # A cluster's compile op that returns this fast found its executable in XLA's cache.
        role[xla_compile & (events["dur"] < XLA_CACHE_HIT_NS)] = _ROLE_CODE[Role.DISPATCH.value]
    python = kind_in([Kind.PYTHON.value])
    host_op = kind_in([Kind.HOST_OP.value])
    # The nesting, for both rules that walk it from the top.
    nesting = Nesting(events["parent"], events["depth"])
    role = _python_functions(role, name_values, name_codes, host_op)
    role = _framework_files_by_api_calls(role, name_values, name_codes, python, nesting)
    role = _nesting(role, name_values, name_codes, tracing, python, host_op, nesting)
    role = _loose_thunks(events, role, name_values, name_codes, host_op)
    role = _host_callbacks(role, name_values, name_codes, host_op)
    role = _inductor_generated_code(role, name_values, name_codes, python, nesting)
    return _anomaly_detection(role, anomaly_detection_rows(events, name_values, name_codes, role), nesting)


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
            match = match & _lookup(rule.name, name_values, name_codes)
        if rule.fw_op is not None:
            match = match & _lookup(rule.fw_op, fw_values, fw_codes)
        if rule.fn_call:
            match = match & has_call
        if rule.hlo_op:
            match = match & has_hlo
        if rule.launcher is not None:
            match = match & _lookup(rule.launcher, launcher_values, launcher_codes)
        role[match] = _ROLE_CODE[rule.role.value]
    # The rows decide first (a kernel may be communication); every other event's kind decides.
    for k, r in KIND_ROLES.items():
        role[kind_in({k}) & (role < 0)] = _ROLE_CODE[r.value]
    role[role < 0] = _ROLE_CODE[Role.ANNOTATION.value]
    return role


def frames_name_paths(name_values: list[Any], name_codes: np.ndarray, python: np.ndarray) -> bool:
    """Whether any of the ``python`` frames names its file with a folder (torch's Python tracer
    does, ``torch/nn/modules/module.py(1751): _call_impl``; JAX's and TensorFlow's do not)."""
    return any(cat.PATH_IN_NAME.search(str(name_values[code])) for code in unique_sorted(name_codes[python]).tolist()
               if code >= 0)


def _framework_files_by_api_calls(role: np.ndarray, name_values: list[str], name_codes: np.ndarray,
                                  python: np.ndarray, nesting: Nesting) -> np.ndarray:
    """The framework's own Python, where the trace names Python files without their folders.

    JAX's and TensorFlow's Python tracers record a frame as ``$api.py:466 grad_f``: the rule that
    tells a framework's frames by their package's path (``jax/``, ``tensorflow/``) cannot apply, and
    every frame would count as the user's (an un-jitted ``jax.grad`` step as 86 % user Python). What
    runs inside one of the framework's API calls is told by its wrapper frame
    (:data:`categories.PYTHON_API_BOUNDARY`), and a file is the framework's when its frames run
    inside such a call and it is not a file of the user's own loop — the files of the outermost
    frames outside every such call — or when it holds what a wrapper directly calls (the API's own
    implementation: ``api.py``, whose ``block_until_ready`` the loop may also call without a
    wrapper). Frames of the framework's files become ``python_framework``,
    inside an API call or not (a jax.numpy operator on arrays runs the same files). A user's module
    reached only through the framework (a loss in its own file, called by ``jax.grad``) is counted
    as the framework's: its own time is the Python glue between array calls."""
    code = _ROLE_CODE
    boundary = python & _lookup(cat.PYTHON_API_BOUNDARY, name_values, name_codes)
    if not boundary.any():
        return role
    if frames_name_paths(name_values, name_codes, python):
        return role  # (the path rules decide)
    file_of = [cat.BASE_NAME_FRAME.match(value) for value in name_values]  # (builtins, "$builtins len": none)
    files = sorted({m.group(1) for m in file_of if m is not None})
    file_index = {name: i for i, name in enumerate(files)}
    file = np.array([file_index[m.group(1)] if m is not None else -1 for m in file_of] + [-1], dtype=np.int64)[name_codes]
    parent = nesting.parent
    # The frame, or a Python frame around it, is an API call's wrapper: states (inside, python) as
    # 2 * inside + python, a frame inside where it is a wrapper or its parent is a frame inside.
    own = 2 * boundary.astype(np.int32) + python
    inside = nesting.states_down(own, 4, 4, step=lambda up, mine: mine | (2 * ((up >> 1) & up & 1)),
                                 alone=lambda mine: mine) >= 2
    has_parent = parent >= 0
    outermost = python & ~inside & (~has_parent | ~at_rows(python, parent))
    below_wrapper = python & has_parent & at_rows(boundary, parent)  # the API's own implementation
    framework = np.zeros(len(files) + 1, dtype=bool)  # (the last entry: no file)
    framework[file[python & inside]] = True
    framework[file[outermost]] = False
    framework[file[below_wrapper | boundary]] = True
    framework[-1] = False
    chosen = python & framework[file] & (role == code[Role.PYTHON_USER.value])
    role[chosen] = code[Role.PYTHON_FRAMEWORK.value]
    return role


def _python_functions(role: np.ndarray, name_values: list[str], name_codes: np.ndarray,
                      host_op: np.ndarray) -> np.ndarray:
    """The user's Python autograd.Functions: the own time of their forward op (``MyFn``) and
    backward node (``MyFnBackward``) is the Python they run.

    Told by the pair (categories.TORCH_PYTHON_FUNCTION_BACKWARD): both ops in the trace, the forward
    not one of torch's own Functions (categories.TORCH_OWN_PYTHON_FUNCTIONS, whose Python is the
    framework's glue). Without the pair, the backward node read as the autograd engine's dispatch:
    a custom Function's 1.8 ms Python backward came out as 95 % of a gap in launch/dispatch.
    Only rows the rules left as dispatch change (``CompiledFunction`` stays a call)."""
    present = np.zeros(len(name_values) + 1, dtype=bool)
    present[unique_sorted(name_codes[host_op])] = True  # (code -1: the last entry)
    op_code = {name_values[c]: c for c in np.flatnonzero(present[:-1]).tolist()}
    paired = np.zeros(len(name_values), dtype=bool)
    for value, code in op_code.items():
        match = cat.TORCH_PYTHON_FUNCTION_BACKWARD.match(value)
        if match and match.group(1) in op_code and match.group(1) not in cat.TORCH_OWN_PYTHON_FUNCTIONS:
            paired[[code, op_code[match.group(1)]]] = True
    if not paired.any():
        return role
    chosen = host_op & codes_matching(name_codes, paired) & (role == _ROLE_CODE[Role.DISPATCH.value])
    role[chosen] = _ROLE_CODE[Role.PYTHON_USER.value]
    return role


def _loose_thunks(events: Table, role: np.ndarray, name_values: list[str], name_codes: np.ndarray,
                  host_op: np.ndarray) -> np.ndarray:
    """XLA thunks at the top of a worker thread are compute too.

    XLA's CPU runtime runs parts of a program on a pool of threads; on those threads the
    instructions (``dot.2``, ``ynn_fusion``) are often recorded with nothing around them, so the
    nesting rule (a framework op directly inside compiled code) does not see them. A thread that
    runs XLA module executions at its top level (``ThunkExecutor::Execute`` …, role compiled code;
    not a thread that runs them inside a call, like TensorFlow's step thread) is such a worker: its
    top-level framework ops named like instructions are the program's math."""
    if not len(role) or "track" not in events.columns:
        return role
    code = _ROLE_CODE
    depth = events["depth"]
    executions = (role == code[Role.COMPILED_CODE.value]) & _lookup(cat.XLA_MODULE_EXECUTION, name_values, name_codes)
    executions &= depth == 0  # at the top of its thread: the thread is there to run programs
    if not executions.any():
        return role
    track = events["track"].codes  # (a category column, like the nesting that reads it)
    worker = np.zeros(int(track.max()) + 1, dtype=bool)
    worker[track[executions]] = True
    loose = (depth == 0) & host_op & worker[track] & (role == code[Role.DISPATCH.value])
    loose &= _lookup(cat.XLA_THUNK_NAME, name_values, name_codes)
    role[loose] = code[Role.COMPUTE.value]
    return role


def _host_callbacks(role: np.ndarray, name_values: list[str], name_codes: np.ndarray,
                    host_op: np.ndarray) -> np.ndarray:
    """JAX's host callbacks (categories.JAX_HOST_CALLBACK: ``pure_callback.1``, ``debug_print.1``)
    are the user's Python, not math: the XLA program waits in the instruction while the host runs
    the callback (2 ms of Python in a pure_callback read as kernel time without JAX's Python
    tracer). Decided after the nesting rules, which read the instruction as math to make the
    Python frames under it the user's where the tracer records them."""
    callback = host_op & _lookup(cat.JAX_HOST_CALLBACK, name_values, name_codes)
    role[callback & np.isin(role, _MATH_ROLE_CODES)] = _ROLE_CODE[Role.PYTHON_USER.value]
    return role


def anomaly_detection_rows(events: Table, name_values: list[str] | None = None,
                           name_codes: np.ndarray | None = None,
                           role: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The work torch's autograd anomaly detection adds, as the rows that begin it (each with its
    subtree): the NaN checks after backward nodes (categories.TORCH_ANOMALY_NAN_CHECK ops directly
    inside an engine node range that holds the check's own op) and the Python stacks stored by
    forward ops (categories.TORCH_ANOMALY_STACK frames directly inside an ATen op, outside compilation:
    torch.fx records the same stack for each node of a graph it traces; recorded only with Python
    events). ``role``: the rows' role codes, while they are decided (else the table's role column).
    Two masks; all False in any other trace."""
    if name_values is None or name_codes is None:
        name_codes, name_values = _category(events, "name")
    check = _lookup(cat.TORCH_ANOMALY_NAN_CHECK, name_values, name_codes)
    stack = _lookup(cat.TORCH_ANOMALY_STACK, name_values, name_codes)
    if not (check.any() or stack.any()):
        return check, stack
    kind_in = membership(events["kind"])
    host_op = kind_in([Kind.HOST_OP.value])
    parent = events["parent"]
    has_parent = parent >= 0
    up = np.where(has_parent, parent, 0)
    check &= host_op & has_parent
    if check.any():
        check &= _lookup(cat.TORCH_ENGINE_NODE, name_values, name_codes)[up]
        checked = np.zeros(len(parent), dtype=bool)
        mark = name_values.index(cat.TORCH_ANOMALY_NAN_CHECK_MARK) if cat.TORCH_ANOMALY_NAN_CHECK_MARK in name_values \
            else -2
        checked[parent[check & (name_codes == mark)]] = True
        check &= checked[up]
    stack &= kind_in([Kind.PYTHON.value]) & has_parent
    if stack.any():
        stack &= (host_op & _lookup(cat.TORCH_ATEN_OP, name_values, name_codes))[up]
        stack &= ~(np.isin(role, _BUILDING_ROLE_CODES) if role is not None else
                   membership(events["role"])([Role.COMPILE.value, Role.GRAPH_BUILD.value]))
    return check, stack


def _inductor_generated_code(role: np.ndarray, name_values: list[str], name_codes: np.ndarray, python: np.ndarray,
                             nesting: Nesting) -> np.ndarray:
    """torch inductor's generated module (categories.INDUCTOR_GENERATED_MODULE), with the Python it
    calls, is the framework's runtime: inside `## Call CompiledFxGraph` (compiled code) the nesting
    took it for Python called back from the math, the user's (a compiled step's steady state read
    5 % host compute: tests/data/torch_cpu_compile); the fused C++ kernels it calls on CPU (categories.INDUCTOR_CPP_KERNEL) are
    compiled code, the math."""
    generated = python & _lookup(cat.INDUCTOR_GENERATED_MODULE, name_values, name_codes)
    if not generated.any():
        return role
    inside = _subtree(role, generated, nesting, _PYTHON_ROLES)
    role[inside] = _ROLE_CODE[Role.PYTHON_FRAMEWORK.value]
    role[inside & _lookup(cat.INDUCTOR_CPP_KERNEL, name_values, name_codes)] = _ROLE_CODE[Role.COMPILED_CODE.value]
    return role


def _subtree(role: np.ndarray, roots: np.ndarray, nesting: Nesting, taking: np.ndarray) -> np.ndarray:
    """The rows of ``roots`` and, below them, every row whose role is one of ``taking`` (codes) and
    whose parent is such a row: whole subtrees, down to the first row of another role."""
    marker = len(ROLE_VALUES)  # (a value no role has: what the roots give their subtrees)
    values = role.copy()
    values[roots] = marker
    takes = np.zeros(marker + 1, dtype=bool)
    takes[taking] = True
    gives = np.zeros(marker + 1, dtype=bool)
    gives[marker] = True
    return nesting.copy_down(values, takes, gives) == marker


def _anomaly_detection(role: np.ndarray, rows: tuple[np.ndarray, np.ndarray], nesting: Nesting) -> np.ndarray:
    """The work of torch's autograd anomaly detection (anomaly_detection_rows), whole subtrees, is
    the framework's: its NaN checks dispatch (the math they do is not the model's: a debugging
    switch's own work, like an op's per-call cost), the stacks it stores are framework Python
    (called from inside an op, they would read as the user's Python run from the math, as a JAX
    host callback is; the compile rule does not take torch/fx/traceback.py for them). With Python
    events, 1.9 ms a step of stored stacks read as 43.8 % graph building
    (tests/data/torch_cpu_anomaly)."""
    check, stack = rows
    for roots, given in ((check, Role.DISPATCH), (stack, Role.PYTHON_FRAMEWORK)):
        if roots.any():
            # Ops and Python below take it; runtime calls keep theirs (a check's `item` waits for
            # a GPU in a sync: that wait stays a sync).
            role[_subtree(role, roots, nesting, _ANOMALY_WORK_ROLE_CODES)] = _ROLE_CODE[given.value]
    return role


def _category(events: Table, column: str) -> tuple[np.ndarray, list[str]]:
    if column not in events.columns:
        return np.full(len(events), -1, dtype=np.int64), []
    codes, values = column_codes(events[column])
    return codes, ["" if c is None or c != c else str(c) for c in values]


def _lookup(pattern: re.Pattern[str], values: list[str], codes: np.ndarray) -> np.ndarray:
    """Match a pattern once per distinct value; code -1 (missing) never matches."""
    return codes_matching(codes, np.array([bool(pattern.search(v)) for v in values], dtype=bool))


_INHERITING = _role_codes(Role.GRAPH_BUILD, Role.COMPILE, Role.INPUT)
_HOST_ROLES = _role_codes(*(r for r in Role if not r.value.startswith("device_") and r is not Role.STEP))
_PARENTS_OF_BUILTINS = _role_codes(Role.PYTHON_USER, Role.PYTHON_FRAMEWORK, Role.COMPILE)
_PYTHON_ROLES = _role_codes(Role.PYTHON_USER, Role.PYTHON_FRAMEWORK)
_MATH_ROLE_CODES = _role_codes(Role.COMPUTE, Role.COMPILED_CODE)
_FRAMEWORK_PARENT_CODES = np.array([_ROLE_CODE[v] for v in _FRAMEWORK_PARENTS], dtype=np.int8)
# Roles of graph building and compilation (anomaly_detection_rows: no anomaly work inside them).
_BUILDING_ROLE_CODES = _role_codes(Role.COMPILE, Role.GRAPH_BUILD)
# The roles of the events inside anomaly detection's work that take its role (_anomaly_detection).
_ANOMALY_WORK_ROLE_CODES = _role_codes(Role.COMPUTE, Role.COMPILED_CODE, Role.DISPATCH, Role.VIEW_ALLOC,
                                       Role.ANNOTATION, Role.PYTHON_FRAMEWORK, Role.PYTHON_USER)
_NO_ROLE = -1  # the parent role of a row without a parent: in no set of the nesting rules


def _nesting(role: np.ndarray, name_values: list[str], name_codes: np.ndarray, tracing: np.ndarray,
             python: np.ndarray, host_op: np.ndarray, nesting: Nesting) -> np.ndarray:
    """Nesting rules, from the top down so they flow through whole subtrees (each row's role from
    its own and its parent's final one: :func:`_nested_role`)."""
    code = _ROLE_CODE
    builtin = (_lookup(cat.PYTHON_BUILTIN_FRAME, name_values, name_codes)
               | _lookup(cat.STDLIB_FRAME, name_values, name_codes))
    builtin &= python
    thunk = host_op & _lookup(cat.XLA_THUNK_NAME, name_values, name_codes)
    text = python & _lookup(cat.TENSOR_TO_TEXT_FRAME, name_values, name_codes)
    role[tracing & (role == code[Role.CALL.value])] = code[Role.CALL_TRACING.value]
    # A row's own state packs its role and four flags; a final state, its role and three flags
    # (in_tracing, in_user, in_call).
    own = role.astype(np.int32)
    for flag in (builtin, thunk, tracing, text):  # (in place: one array, not a temporary per step)
        own *= 2
        own += flag
    del builtin, thunk, text

    def nested(par_role: np.ndarray, par_flags: tuple[np.ndarray, ...], mine: np.ndarray) -> np.ndarray:
        new_role, in_tracing, in_user, in_call = _nested_role(
            par_role, *par_flags, mine >> 4, ((mine >> 3) & 1) == 1, ((mine >> 2) & 1) == 1,
            ((mine >> 1) & 1) == 1, (mine & 1) == 1)
        return new_role.astype(np.int32) * 8 + in_tracing * 4 + in_user * 2 + in_call

    def step(up: np.ndarray, mine: np.ndarray) -> np.ndarray:
        return nested(up >> 3, (((up >> 2) & 1) == 1, ((up >> 1) & 1) == 1, (up & 1) == 1), mine)

    def alone(mine: np.ndarray) -> np.ndarray:
        # A row without a parent: the same rules, under a parent of no role and no flag.
        no = np.zeros(len(mine), dtype=bool)
        return nested(np.full(len(mine), _NO_ROLE), (no, no, no), mine)

    final = nesting.states_down(own, 16 * len(ROLE_VALUES), 8 * len(ROLE_VALUES), step, alone=alone)
    return (final >> 3).astype(role.dtype)


def _nested_role(par_role: Any, par_tracing: np.ndarray, par_user: np.ndarray, par_call: np.ndarray, own_role: Any,
                 builtin: np.ndarray, thunk: np.ndarray, own_tracing: np.ndarray,
                 own_text: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A nested row's role, whether it is inside tracing, inside the user's Python run by the
    framework and inside a framework call, from its parent's final role and those three flags and
    its own role, builtin / thunk flags, tracing and whether it formats a tensor as text:

    - inside graph building → graph_build; inside compilation → compile (ops run while tracing, the
      passes inside a compile range); inside input → input (map functions' ops);
    - a framework op directly inside compiled code is compute (XLA thunks; aten ops it calls);
    - a sync directly inside compiled code is the program waiting for its own work (XLA's
      CpuExecutable::ExecuteAsyncOnStream → BlockUntilReady while its thunks run on worker
      threads): compiled code, not the user's program waiting for a result;
    - a call anywhere inside a call that traces (``call_tracing``) is ``call_tracing`` too;
    - a range (annotation) opened inside a framework op or call is the framework's runtime scope:
      ``dispatch`` (PJRT_LoadedExecutable_Execute, ThenExecuteCallback inside PjitFunction(f));
    - a Python builtin of no framework, or a standard-library frame, takes the role of the Python
      frame that called it;
    - Python below a framework call (role ``call``: the framework runs the body; JAX's
      ``np.asarray(jax.Array)`` fetching a value, with ``$array.py:615 _value`` waiting inside it)
      is the framework's, where the tracer names files without their folders and could not tell;
    - the framework's Python inside a tensor's formatting as text (``categories.TENSOR_TO_TEXT_FRAME``:
      ``print(loss)`` each step) is the user's: it runs only because the user prints, formats or
      logs a tensor (ops inside keep their roles); so is Python called from inside the math (an
      XLA thunk running a host callback: ``jax.debug.print``, ``jax.pure_callback``), the JAX
      plumbing around the user's function included (both: ``in_user``, carried down).
    """
    code = _ROLE_CODE
    flow = np.isin(par_role, _INHERITING) & np.isin(own_role, _HOST_ROLES) & (own_role != code[Role.SYNC.value])
    role = np.where(flow, par_role, own_role)
    on_compiled_code = ~flow & (par_role == code[Role.COMPILED_CODE.value]) & thunk
    role[on_compiled_code & (own_role == code[Role.DISPATCH.value])] = code[Role.COMPUTE.value]
    role[~flow & (par_role == code[Role.COMPILED_CODE.value]) & (own_role == code[Role.SYNC.value])] = \
        code[Role.COMPILED_CODE.value]
    runtime_scope = ~flow & (role == code[Role.ANNOTATION.value]) & np.isin(par_role, _FRAMEWORK_PARENT_CODES)
    role[runtime_scope] = code[Role.DISPATCH.value]
    in_tracing = own_tracing | par_tracing
    role[in_tracing & (role == code[Role.CALL.value])] = code[Role.CALL_TRACING.value]
    inherit = ~flow & builtin & (role == code[Role.PYTHON_USER.value]) & np.isin(par_role, _PARENTS_OF_BUILTINS)
    role[inherit] = par_role[inherit]
    role[par_call & (role == code[Role.PYTHON_USER.value])] = code[Role.PYTHON_FRAMEWORK.value]
    in_call = par_call | (role == code[Role.CALL.value])
    callback = np.isin(role, _PYTHON_ROLES) & np.isin(par_role, _MATH_ROLE_CODES)
    in_user = own_text | par_user | callback
    role[in_user & (role == code[Role.PYTHON_FRAMEWORK.value])] = code[Role.PYTHON_USER.value]
    return role, in_tracing, in_user, in_call


def roles_markdown() -> str:
    """The role rules as a markdown table (docs/attribution.md embeds it; a test checks it)."""
    lines = ["| row | role | kinds | names (where they come from) |", "|---|---|---|---|"]
    for i, rule in enumerate(ROLE_RULES, 1):
        lines.append(f"| {i} | `{rule.role.value}` | {', '.join(sorted(rule.kinds))} | {rule.source} |")
    return "\n".join(lines) + "\n"
