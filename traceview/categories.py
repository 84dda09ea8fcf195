"""Name patterns that map each profiler's event names to traceview kinds — all in one place.

torch (Kineto) and TensorFlow/JAX (XPlane) patterns sit side by side; every pattern says where
the name comes from. The kind tables (``traceview/kinds.py``), the role table and its passes
(``traceview/roles.py``, ``traceview/role_passes.py``) and the mode table (``analyzers/modes.py``)
use them; the compare analyzer uses the op families. A rule that takes the events of several
patterns joins them (:func:`any_of`) instead of stating a name again. Patterns are compiled once and
matched against whole category arrays (``pandas.Series.str.contains``) or unique names, never per
event.
"""

from __future__ import annotations

import re
import sys


def any_of(*patterns: re.Pattern[str]) -> re.Pattern[str]:
    """One pattern that a name matches where it matches one of ``patterns`` (searched or matched
    alike: an alternation of whole patterns). Groups are renumbered: for tests of a name, not for
    reading its parts."""
    if any(p.flags != patterns[0].flags for p in patterns):
        raise ValueError("any_of: the patterns' flags differ")
    return re.compile("|".join(p.pattern for p in patterns), patterns[0].flags)


# --------------------------------------------------------------------------------------------
# Step markers
# --------------------------------------------------------------------------------------------
# torch: torch.profiler.profile.step() records a user_annotation "ProfilerStep#<n>".
TORCH_STEP = re.compile(r"^ProfilerStep#(\d+)$")
# TF: tf.profiler.experimental.Trace('train', step_num=n, _r=1) -> host event "train" with stat step_num.
# JAX: jax.profiler.StepTraceAnnotation(name, step_num=n) -> host event named `name` with stat step_num.
XPLANE_STEP_STAT = "step_num"

# Fallback step rule (no markers): repeated top-level events that are not steps. Profiler start/stop
# frames (torch/jax profiler.py), waits (jax block_until_ready, PjRt "Wait for … holds") and
# buffer bookkeeping repeat too but do not delimit a training step.
NOT_A_STEP = re.compile(
    r"(?:profiler\.py|start_trace|stop_trace|block_until_ready|^Wait for|BufferSequencingEvent|"
    r"ThenExecuteCallback|Release$|^\[memory\]|^cuda|^hip|^cu[A-Z])"
)
# torch.optim's profile hooks wrap every optimizer's update and gradient reset in ranges named
# "Optimizer.step#<Class>.step" and "Optimizer.zero_grad#<Class>.zero_grad" (torch/optim/
# optimizer.py, Optimizer.profile_hook_step and zero_grad), whatever the optimizer. Without markers
# or a repeated loop unit, each update ends one training step (analyzers/steps.py, rule 3).
TORCH_OPTIMIZER_UPDATE = "Optimizer.step#"
TORCH_OPTIMIZER_RANGES = (TORCH_OPTIMIZER_UPDATE, "Optimizer.zero_grad#")
# Ranges whose edges may cross their neighbours' on one thread with nothing wrong in the trace:
# TF's executor records ExecutorState::Process for each batch of ready nodes a thread runs, inline
# inside another batch's range, and in a while loop's frames (an LSTM) such a range can end after
# the one it started in (on the sample LSTM captures: 1 µs over at the median, up to 0.3 ms).
# Nesting counts no overlap in which one of these takes part (normalize.nest_tracks, ``loose``).
NESTING_LOOSE = re.compile(r"^ExecutorState::Process$")
# Tracks that run the user's Python loop (Kineto main thread names, XPlane "python" lines).
USER_LOOP_TRACK = re.compile(r"(?:python|pt_main_thread|MainThread)", re.IGNORECASE)

# --------------------------------------------------------------------------------------------
# Host runtime / driver API calls (Kineto cat cuda_runtime / cuda_driver; XPlane Host Threads lines)
# --------------------------------------------------------------------------------------------
# Calls that enqueue device work. CUDA runtime (cudaLaunchKernel…), CUDA driver (cuLaunchKernel, used
# by Triton/inductor and XLA), HIP (hipLaunchKernel, hipModuleLaunchKernel, hipExtModuleLaunchKernel),
# async copies/memsets and CUDA-graph launches.
# XLA's GPU tracer names a graph launch with the graph's id: "cuGraphLaunch (CudaGraph:2)" (JAX 0.11
# on an H200: a jitted step's 90 kernels under one such launch, benchmarks/gpu/captures).
_XLA_GRAPH_ID = r"( \(CudaGraph:\d+\))?"
LAUNCH_API = re.compile(
    r"^(cuda|cu|hip)(LaunchKernel|LaunchKernelExC|LaunchKernelEx|LaunchCooperativeKernel|"
    r"ModuleLaunchKernel|ExtModuleLaunchKernel|ExtLaunchKernel|ModuleLaunchCooperativeKernel|"
    r"GraphLaunch|MemcpyAsync|Memcpy2DAsync|Memcpy3DAsync|MemcpyHtoDAsync(_v2)?|MemcpyDtoHAsync(_v2)?|"
    r"MemcpyDtoDAsync(_v2)?|MemcpyPeerAsync|MemsetAsync|MemsetD8Async|MemsetD16Async|MemsetD32Async|"
    r"MemsetD2D8Async|LaunchHostFunc)(_v2|_ptsz|_spt)*" + _XLA_GRAPH_ID + "$"
)
# Calls that block the host until the device catches up. A synchronous cudaMemcpy blocks too;
# cudaStreamQuery / cudaEventQuery only poll and return at once, so they are plain runtime calls.
SYNC_API = re.compile(
    r"^(cuda|cu|hip)(DeviceSynchronize|StreamSynchronize|EventSynchronize|CtxSynchronize|"
    r"Memcpy|MemcpyHtoD|MemcpyDtoH|MemcpyDtoD|Memcpy2D|Memset|MemcpyWithStream)"
    r"(_v2|_ptds|_ptsz)*$"
)
# Calls whose device activities all carry the call's one correlation id: a CUDA/HIP graph launch
# (cudaGraphLaunch, cuGraphLaunch — also XLA's command buffers — hipGraphLaunch) replays many
# kernels and copies, a multi-device cooperative launch runs one kernel per device. Every other
# launch queues exactly one device activity (the trace-quality check counts repeats).
# A CUDA/HIP graph launch (cudaGraphLaunch, cuGraphLaunch — also XLA's command buffers —
# hipGraphLaunch): one call replays the graph's kernels and copies, which all carry its correlation id.
# (XLA's GPU tracer names the call with the graph's id: _XLA_GRAPH_ID, above.)
GRAPH_LAUNCH = re.compile(r"^(cuda|cu|hip)GraphLaunch(_v2|_ptsz|_spt)*" + _XLA_GRAPH_ID + "$")
MULTI_ACTIVITY_LAUNCH = re.compile(
    r"^(cuda|cu|hip)(GraphLaunch|LaunchCooperativeKernelMultiDevice)(_v2|_ptsz|_spt)*" + _XLA_GRAPH_ID + "$"
)

# --------------------------------------------------------------------------------------------
# torch (Kineto) host names
# --------------------------------------------------------------------------------------------
# TorchScript scripting or tracing a model: the torch.jit.script / torch.jit.trace ranges
# (torch/jit/_script.py, torch/jit/_trace.py), in the step that builds it.
TORCHSCRIPT_BUILD = re.compile(r"^torch\.jit\.(script|trace)")
# TorchScript's profiling executor running a model: the differentiable graph and its forward /
# backward ranges (torch/csrc/jit/runtime/graph_executor.cpp: DifferentiableGraphOp,
# DifferentiableGraphBackward, `<forward op>`, `<backward op>`). The graph runs inside them.
TORCHSCRIPT_GRAPH_CALL = re.compile(r"DifferentiableGraph|^<(forward|backward) op>$")
# torch.compile writes its phases as cpu_op / user_annotation ranges (torch/_dynamo/utils.py
# dynamo_timed, torch/_inductor). Dynamo's bytecode analysis is graph building; AOT autograd,
# inductor lowering/codegen and the C++/Triton builds are compilation.
TORCH_GRAPH_BUILD = any_of(re.compile(
    r"^(dynamo|entire_frame_compile|_compile\.compile_inner|compile_inner|OutputGraph\.call_user_compiler|"
    r"bytecode_tracing|InstructionTranslator|build_guards|CompileId|"
    r"TorchScript graph|GraphExecutor.*optimize)",
), TORCHSCRIPT_BUILD)
# Evidence that dynamo ran, whether or not it compiled anything: its `dynamo` and
# `entire_frame_compile` ranges around each frame it converts (torch/_dynamo/convert_frame.py,
# dynamo_timed) and the `compile_id=` its phases' ranges carry.
TORCH_DYNAMO_RAN = re.compile(r"^(dynamo|entire_frame_compile)$|compile_id=")
TORCH_COMPILE = re.compile(
    r"^(backend_compile|inductor_compile|compile_fx_inner|compile_fx|create_aot_dispatcher_function|"
    # AOT autograd's lazy backward compilation: "entire_backward_compile_data: fn_name=…, compile_id=0/0"
    # (torch/_functorch/_aot_autograd/runtime_wrappers.py, dynamo_timed).
    r"entire_backward_compile|"
    r"aot_collect_metadata|compile_file|async_compile\.wait|GraphLowering|fx_codegen_and_compile|"
    r"_recursive_joint_graph_passes|code_gen|PyCodeCache|TritonBundler|CachingAutotuner|"
    r"min_cut_rematerialization_partition|.*: compile_id=\d+/\d+)"
)
# torch.compile's range around each run of a compiled frame (torch/_dynamo/eval_frame.py:
# "Torch-Compiled Region: <frame id>/<compile id>"). A graph break ends a frame's graph; the rest
# of the function resumes as another frame, compiled on its own and run as a region of its own
# (nested in the first: "1/0" inside "0/0"), so a step with breaks runs several regions.
TORCH_COMPILED_REGION = re.compile(r"^Torch-Compiled Region")
# One region's run named with its ids (the regions a step runs: modes.compiled_regions_per_step).
TORCH_COMPILED_REGION_RUN = re.compile(TORCH_COMPILED_REGION.pattern + r": ")
# AOT autograd's autograd.Function around a compiled graph and its backward node
# (torch/_functorch/_aot_autograd/runtime_wrappers.py: CompiledFunction, CompiledFunctionBackward):
# the compiled forward / backward run inside them.
TORCH_COMPILED_FUNCTION = re.compile(r"^CompiledFunction(Backward)?$")
# torch inductor: `## Call CompiledFxGraph <hash> ##` encloses the call of a compiled graph's
# generated code (torch/_inductor/output_code.py).
INDUCTOR_GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph")
# torch.profiler(record_shapes=True) writes each op's input types in args "Input type": a tensor's
# dtype name ("float", "double", "c10::Half", "c10::BFloat16", "long int"), "" for an absent
# input, and these words for inputs that are not one tensor (torch/csrc/profiler/collection.cpp,
# the input encoder's tags: a scalar, a list of scalars / tensors, any other list).
NON_TENSOR_INPUT_TYPES = frozenset({"Scalar", "ScalarList", "TensorList", "GenericList", "None"})
# DataLoader iteration: "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__".
TORCH_INPUT = re.compile(r"^enumerate\(DataLoader\)#|DataLoaderIter\.__next__")
# A DataLoader with worker processes (num_workers > 0: torch/utils/data/dataloader.py names its iterator
# _MultiProcessingDataLoaderIter): processes of the program's own that run beside the step.
TORCH_WORKER_INPUT = re.compile(r"_MultiProcessingDataLoaderIter")
# torch autograd's nodes for the backward of a backward (torch/csrc/autograd/generated/Functions.h:
# TanhBackwardBackward0, MseLossBackwardBackward0): the step differentiates its own gradients
# (torch.autograd.grad(create_graph=True)), which torch.compile does not compile.
TORCH_DOUBLE_BACKWARD = re.compile(r"BackwardBackward\d*$")
# torch: the autograd engine's range around one node's evaluation (torch/csrc/autograd/engine.cpp,
# evaluate_function): inside it the node's own op (`AddmmBackward0`), and around that, unrecorded,
# the hooks registered on the node and its inputs (tensor.register_hook, module full backward
# hooks, post-accumulate-grad hooks) and the engine's bookkeeping.
TORCH_ENGINE_NODE = re.compile(r"^autograd::engine::evaluate_function: ")
# torch autograd anomaly detection (torch.autograd.set_detect_anomaly(True), detect_anomaly()): a
# debugging switch with two costs. After each backward node the engine checks every output for
# NaN (torch/csrc/autograd/engine.cpp, call_function, with AnomalyMode::should_check_nan:
# `isnan(output)._is_any_true().item()`): these ops, directly inside the node's range; the check's
# own op, which no other part of the engine calls, marks a node range as checked.
TORCH_ANOMALY_NAN_CHECK = re.compile(r"^aten::(isnan|_is_any_true|item)$")
TORCH_ANOMALY_NAN_CHECK_MARK = "aten::_is_any_true"
# And each forward op that records a backward node stores the Python stack that called it
# (torch/csrc/autograd/python_anomaly_mode.cpp, PyAnomalyMetadata::store_stack:
# torch.fx.traceback.format_stack; the standard library's traceback.format_stack in older torch):
# with Python events, this frame directly inside the op — an ATen operator (TORCH_ATEN_OP), whose
# autograd kernel records the node: a user's own autograd.Function formatting a stack is not it.
TORCH_ANOMALY_STACK = re.compile(r"(^|[/\\])(torch[/\\]fx[/\\])?traceback\.py\(\d+\): format_stack$")
TORCH_ATEN_OP = re.compile(r"^aten::")
# torch: a Python autograd.Function. `Function.apply` records an op named after the class
# (THPFunction_apply in torch/csrc/autograd/python_function.cpp: RECORD_FUNCTION of the type's
# name, `MyFn`), and its backward node is a class made at definition, named `<class>Backward`
# (torch/autograd/function.py, FunctionMeta); C++ nodes generated from derivatives.yaml end in
# the overload's number (`AddmmBackward0`). A trace holding both `X` and `XBackward` as ops ran
# the Python Function X: the own time of both is its Python forward / backward.
TORCH_PYTHON_FUNCTION_BACKWARD = re.compile(r"^(\w+)Backward$")
# torch's own Python autograd.Functions (classes deriving autograd.Function in torch 2.13's
# torch/ package, test helpers left out): their own time is the framework's Python glue around
# the ops they call, not the user's code. Not listed: BackwardHookFunction (torch/nn/modules/
# _functions.py, for register_full_backward_hook): its backward node runs the user's hooks;
# CompiledFunction: a call (roles.py).
TORCH_OWN_PYTHON_FUNCTIONS = frozenset({
    "CheckpointFunction",  # torch/utils/checkpoint.py (use_reentrant=True)
    "_DDPSink",  # torch/nn/parallel/distributed.py
    "Broadcast", "ReduceAddCoalesced", "Gather", "Scatter",  # torch/nn/parallel/_functions.py (DataParallel)
    "SyncBatchNorm", "CrossMapLRN2d",  # torch/nn/modules/_functions.py
    "_AllGather", "_AllGatherBase", "_AllReduce", "_AlltoAll", "_AlltoAllSingle", "_Broadcast", "_Gather",
    "_Reduce", "_Reduce_Scatter", "_Scatter",  # torch/distributed/nn/functional.py
    "RegisterPostBackwardFunction", "RegisterPreBackwardFunction",  # torch/distributed/fsdp/_fully_shard
    "Redistribute", "NestedRedistribute", "_ToTorchTensor", "_FromTorchTensor",  # torch/distributed/tensor
    "Graphed",  # torch/cuda/graphs.py make_graphed_callables
    "ViewBufferFromNested", "ViewNestedFromBuffer",  # torch/nested/_internal/nested_tensor.py
    "CondAutogradOp", "ScanAutogradOp", "AssociativeScanAutogradOp", "WhileLoopAutogradOp", "MapAutogradOp",
    "FlexAttentionAutogradOp", "InvokeSubgraphAutogradOp", "InvokeLeafFunctionAutogradOp",
    "LocalMapAutogradOp",  # torch/_higher_order_ops/*.py
    "LinearPerSampleGrad", "ConvPerSampleGrad", "EmbeddingPerSampleGrad", "GroupNormPerSampleGrad",
    "InstanceNormPerSampleGrad", "LayerNormPerSampleGrad",  # torch/nn/utils/_expanded_weights
    "RMSNormFunction",  # torch/_vendor/quack/rmsnorm.py
    "LOBPCGAutogradFunction",  # torch/_lobpcg.py
    "_Dirichlet",  # torch/distributions/dirichlet.py
    "FakeQuantPerChannel",  # torch/ao/quantization
    "_MaskedContiguous", "_MaskedToDense", "_MaskedToSparse", "_MaskedToSparseCsr", "_MaskedWhere",
    "GetData", "Constructor",  # torch/masked/maskedtensor
})
# Dtype casts, as compare's per-op table names them (compare.dtype_casts_per_step): TensorFlow's op
# type Cast (tensorflow/core/kernels/cast_op.cc; XPlane op events end ":Cast", Keras mixed precision
# casts inputs and variables); torch's ToCopyBackward0, the autograd node of aten::_to_copy behind
# .to(dtype) and autocast's casts (torch's CPU traces record the cast itself as an aten::copy_, as
# any copy).
DTYPE_CAST = re.compile(r":Cast$|^Cast$|ToCopyBackward0$")

# --------------------------------------------------------------------------------------------
# TensorFlow / JAX (XPlane) host names
# --------------------------------------------------------------------------------------------
# tf.function tracing: "tf.function-graph_building" (TF python/eager/polymorphic_function) and
# FuncGraph construction; JAX tracing/lowering: "jit_*" trace and lower phases.
TF_GRAPH_BUILD = re.compile(
    r"^(tf\.function-graph_building|tf\.compat\.v1-graph_building|FuncGraph|__inference_.*_tracing|"
    r"TraceContext|pjit\.trace|jax.*trace_to_jaxpr|lower_jaxpr|jaxpr_to_mlir|"
    r"(Trace|Lower)(ing)?\s?\(|.*\.trace$|.*\.lower$)"
)
# XLA compilation: HLO pass pipelines, backend codegen (TF XLA and JAX alike); there is no
# single XlaCompile event in current TF (see docs/attribution.md). TF 2.21 jit_compile on CPU
# writes "HLO passes through layout assignment", "HLO passes after layout assignment",
# "CpuCompiler::RunBackend", "ThunkEmitter::EmitEntryComputation", "JitCompiler::Compile",
# "RunInvariantCheckers" (between passes) and "SubbytePacker pipeline"; the individual passes
# ("dce", "algsimp", "sharding-removal" …) are matched by XPLANE_HLO_PASS below.
TF_COMPILE = re.compile(
    r"^(HLO passes|CpuCompiler::|GpuCompiler::|NVPTXCompiler::|AMDGPUCompiler::|ThunkEmitter::|"
    r"JitCompiler::Compile|FusionCompiler::Compile|XlaCompile|BuildXlaCompilerArgs|"
    r"XlaCompilationCache|DeviceCompiler|PjRt.*Compile|CompileAndLoad|backend_compile|"
    r"compile_or_get_cached|RunHloPasses|RunBackend|Compile$|.*::Compile$|"
    r"xla::Compile|LLVM|OptimizeHloModule|PrepareHloModuleForIrEmitting|"
    r"RunInvariantCheckers$|SubbytePacker pipeline$|HloPassPipeline)"
)
# tf.data and feeding: IteratorGetNext op, Iterator::* ranges from tf.data's iterator stack.
TF_INPUT = re.compile(r"^(IteratorGetNext|IteratorGetNextSync|Iterator::|MultiDeviceIteratorGetNextFromShard|"
                      r".*:IteratorGetNext$|.*Iterator.*GetNext)")
# Framework op dispatch on a host thread (kind host_op). TF eager (TF 2.21 python line, nested
# outer to inner): "TFE_Py_FastPathExecute_C" > "EagerExecute" (stat eager_op) >
# "EagerLocalExecute: MatMul" > "EagerCopyToDevice", "ValidateInputTypeAndPlacement",
# "EagerKernelExecute" > "KernelAndDeviceFunc::Run" (the kernel itself; in tf.function calls it
# holds "FunctionRun" and waits for the tf_Compute threads). Python-API wrappers
# "convert_to_tensor", "tf.constant". Graph executor: "ExecutorState::Process" encloses the op
# kernels of a tf_Compute thread. XLA on CPU: "CpuExecutable::ExecuteAsyncOnStream" >
# "ThunkExecutor::Execute" > thunks (stat hlo_op). JAX: "PjitFunction(matmul)" (a jitted call),
# "jit_matmul:XLA GPU module" (module execution on the host, thunks nested inside).
TF_HOST_OP = re.compile(
    r"^(TFE_Py_\w+|TFE_Execute|TFE_DeleteTensorHandle|EagerExecute|EagerLocalExecute: .+|EagerKernelExecute|"
    r"EagerCopyToDevice|ValidateInputTypeAndPlacement|KernelAndDevice(Func|Op)::Run|FunctionRun|"
    r"convert_to_tensor|tf\.constant|ExecutorState::Process|CpuExecutable::\w+|ThunkExecutor::Execute|"
    r"(Pjit|Pmap)Function\(.*\)|.+:XLA (CPU|GPU|TPU) module)$"
)
# TF op kernels (graph executor, XLA cluster ops) are named "name:Type": "sgd_1/Mul_3:Mul",
# "__inference_step_90:__inference_step_90". ("EagerLocalExecute: MatMul" has a space: no match.)
TF_OP_KERNEL = re.compile(r"^[^\s:]+:[A-Za-z_][\w]*$")
# TF eager: the kernel of an op run eagerly (tensorflow/core/common_runtime/eager/kernel_and_device.cc:
# KernelAndDeviceOp::Run for an op, KernelAndDeviceFunc::Run for a graph function); the op's type
# is in stat eager_op.
TF_EAGER_KERNEL = re.compile(r"^KernelAndDevice(Func|Op)::Run$")
# XLA auto-clustering (TF_XLA_FLAGS=--tf_xla_auto_jit, tf.config.optimizer.set_jit): each cluster
# runs as two op kernels (tensorflow/compiler/jit/kernels/xla_ops.cc), `cluster:_XlaCompile`, which
# compiles on the cluster's first call and then looks its executable up in XLA's cache, and
# `cluster:_XlaRun`, which runs it.
TF_XLA_COMPILE_OP = re.compile(r":_XlaCompile$")
TF_XLA_RUN_OP = re.compile(r":_XlaRun$")
# TF1 graph mode: Session.run's TraceMe (tensorflow/core/common_runtime/direct_session.cc); the
# graph runs on executor threads inside it.
TF_SESSION_RUN = re.compile(r"^SessionRun$")
# JAX: a call of a jitted function on the python line: jaxlib's C++ dispatch records a TraceMe
# "PjitFunction(<function name>)" around each call (xla/python/pjit.cc, PjitFunction::Call), and
# "PmapFunction(<function name>)" for a pmapped one.
JAX_JITTED_CALL = re.compile(r"^(Pjit|Pmap)Function\(")
# The host waits for XLA work it enqueued (XLA CPU runs thunks on Eigen threads; PJRT buffers).
# Python frames that turn a tensor into text, as torch's tracer names them (with_stack /
# python_function: "torch/_tensor.py(558): __repr__", "torch/_tensor_str.py(712): _str"): Tensor's
# __repr__ / __str__ / __format__ (torch/_tensor.py) and the formatting module they call
# (torch/_tensor_str.py). They run only when the user prints, formats or logs a tensor.
# torch inductor's generated code: the Python module of each compiled graph, written to the code
# cache as <cache dir>/<key[1:3]>/<key>.py with a key "c" + hash (torch/_inductor/codecache.py,
# get_path and PyCodeCache; the default cache dir is /tmp/torchinductor_<user>). Its frames, with
# Python events, sit inside `## Call CompiledFxGraph` (compiled code): the framework's runtime, not
# the user's Python called back from the math.
INDUCTOR_GENERATED_MODULE = re.compile(r"[/\\]([a-z0-9]{2})[/\\]c\1[a-z0-9]{20,}\.py\(\d+\)")
# On CPU the module calls each fused C++ kernel through a Python binding whose function is named
# "kernel" (codecache.py, CppPythonBindingsCodeCache.entry_function): the compiled math itself.
INDUCTOR_CPP_KERNEL = re.compile(r"^<built-in function kernel>$")
TENSOR_TO_TEXT_FRAME = re.compile(r"(^|[/\\])torch[/\\](_tensor_str\.py\(|_tensor\.py\(\d+\): __(repr|str|format)__$)")
# tf.data's iterators record their place in the pipeline as a path from the root
# ("Iterator::Root::Prefetch::ParallelMapV2::…::TensorSlice": TraceMe names of
# tensorflow/core/framework/dataset.cc, one component per dataset, "[n]" for a repeat's epoch).
# The components that say how the pipeline feeds the step (input_bound's advice):
TF_DATA_ITERATOR = re.compile(r"^Iterator::")
TF_DATA_PREFETCH = frozenset({"Prefetch"})  # dataset.prefetch(n): batches made ahead, on their own thread
# map with num_parallel_calls, its fused map-and-batch, parallel interleave and batch
TF_DATA_PARALLEL = frozenset({"ParallelMap", "ParallelMapV2", "MapAndBatch", "ParallelInterleave",
                              "ParallelInterleaveV2", "ParallelInterleaveV3", "ParallelInterleaveV4", "ParallelBatch"})
TF_DATA_SEQUENTIAL_MAP = frozenset({"Map"})  # dataset.map(f) without num_parallel_calls: one element at a time
TF_DATA_CACHE = frozenset({"MemoryCache", "Cache", "CacheV2"})  # dataset.cache()

# XLA on CPU: the thunk executor waiting for the thunks it runs on its worker threads (TraceMe in
# xla/backends/cpu/runtime/thunk_executor.cc). The program runs meanwhile, so for the step it is the
# program's time (roles.py: compiled_code); but its own time is a wait, no math of its own: the
# thunks it waits for are counted on their threads, so the per-op tables leave it out.
XLA_PROGRAM_WAIT = re.compile(r"^ThunkExecutor::Execute \(wait for completion\)$")
XLA_SYNC = re.compile(r"^(BlockUntilReady|BlockHostUntilReady|\w+::BlockHostUntilReady|\w+::BlockUntilReady)$")
# Python frames as JAX's and TensorFlow's Python tracers name them: "$<file base name>:<line> <function>"
# (no folder: a framework's files cannot be told from the user's by their package's path).
BASE_NAME_FRAME = re.compile(r"^\$([^/\\:]+):\d+ ")
PATH_IN_NAME = re.compile(r"[/\\]")  # a frame named with its file's folder
# A Python frame that names its code: file, line and function, as torch's tracer names it
# ("train.py(42): step", "/home/me/train.py(42): step") or JAX's and TensorFlow's ("$train.py:42 step").
# Builtins ("<built-in function sleep>", "$builtins sleep") name none.
CODE_FRAME = re.compile(r"^(?:\$(?P<xfile>[^:]+):(?P<xline>\d+) (?P<xfunction>.+)|"
                        r"(?P<file>[^<(][^(]*)\((?P<line>\d+)\): (?P<function>.+))$")
# Python builtins (`<built-in method append of list object>`, as torch's tracer names them): whose
# owner says nothing about who is working, they take the role of the frame that called them.
PYTHON_BUILTIN_FRAME = re.compile(r"^<built-in (method|function) ")
# Python frames of the standard library ("typing.py(359): inner", "$contextlib.py:141 __exit__"),
# by the module names CPython itself lists (sys.stdlib_module_names): library code that works for
# whoever called it. A bare module name (how torch's tracer prints the standard library) or a path
# in lib/pythonX.Y; a user script named like a standard module ("test.py") is read as library code.
STDLIB_FRAME = re.compile(r"^\$?(?:.*[/\\]lib[/\\]python[\d.]*[/\\])?(" + "|".join(sorted(sys.stdlib_module_names))
                          + r")(?:[/\\][\w/\\]*)?\.py[(:]")
# The wrapper frame every public API call of a framework runs in, named so: JAX wraps its API
# functions with jax/_src/traceback_util.py api_boundary (frame reraise_with_filtered_traceback);
# TensorFlow (tensorflow/python/util/traceback_utils.py) and Keras 3 (keras/src/utils/
# traceback_utils.py) with filter_traceback's error_handler. What runs inside one is the framework's
# work, and a file whose frames run there is the framework's (roles.py).
PYTHON_API_BOUNDARY = re.compile(r"^\$traceback_utils?\.py:\d+ (reraise_with_filtered_traceback|api_boundary|"
                                 r"error_handler)$")
# Host ranges inside which XLA runs its thunks; a child named like an HLO instruction
# ("custom-call.1", "loop_convert_fusion", "wrapped_transpose") is a thunk (kind host_op).
XLA_MODULE_EXECUTION = re.compile(r"(:XLA (CPU|GPU|TPU) module$|^ThunkExecutor::Execute$|^GpuExecutable::ExecuteThunks$)")
XLA_THUNK_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")
# JAX's host callbacks: the XLA program stops in an instruction named after the callback's
# primitive (jax/_src/callback.py: pure_callback, io_callback; jax/_src/debugging.py:
# debug_callback, debug_print — jax.debug.print) that calls the user's Python on the host.
JAX_HOST_CALLBACK = re.compile(r"^(pure_callback|io_callback|debug_callback|debug_print)(\.\d+)?$")
# HLO pass and pass-pipeline names as XLA's pass pipeline records them: lower case words with
# - _ . ("dce", "sharding-removal", "float-normalization-bf16", "simplification after layout
# assignment"). Used only next to a compile event under the same parent (see readers/xplane.py).
XPLANE_HLO_PASS = re.compile(r"^[a-z][a-z0-9_\-.]*( [a-z0-9_\-.]+)*$")
# Python tracer frames (JAX enables it by default): "$builtins isinstance", "$util.py:175 <genexpr>".
XPLANE_PYTHON_FRAME = re.compile(r"^\$")
# Allocator samples on host lines (zero duration): TF's / XLA's BFC allocators record every
# allocation and free as an instant "MemoryAllocation" / "MemoryDeallocation" with its stats
# (readers/xplane_memory.py reads them into the memory table).
XPLANE_MEMORY_RECORD = re.compile(r"^Memory(Allocation|Deallocation)$")
XPLANE_MEMORY_FREE = "MemoryDeallocation"
# The device an allocator serves, from its allocator_name stat: a device allocator is named after
# the device ("GPU_0_bfc": TF's and XLA's BFC allocator of GPU 0). Host allocators
# ("bfc_cpu_allocator_for_gpu" — TF's CPU BFC allocator, "gpu_host_bfc" / "xla_gpu_host_bfc" —
# pinned host memory for copies) match no pattern and are host memory (device -1).
XPLANE_DEVICE_ALLOCATOR = re.compile(r"^(?:GPU|TPU)_(\d+)_")

# --------------------------------------------------------------------------------------------
# XPlane planes and lines (TF / JAX / XLA profiler, tsl/profiler/utils/xplane_schema.h)
# --------------------------------------------------------------------------------------------
XPLANE_HOST_PLANE = re.compile(r"^/host:(?!metadata$)")
XPLANE_DEVICE_PLANE = re.compile(r"^/device:(GPU|TPU):(\d+)$")
# Planes that hold no timed events of their own: HLO protos, the session's start time, and
# custom planes such as "/device:CUSTOM:Megascale Trace".
XPLANE_METADATA_PLANE = re.compile(r"^(/host:metadata|Task Environment|/device:CUSTOM:.*)$")
# Device stream lines: "Stream #16(Kernel)", "Stream #7(MemcpyH2D,Kernel)", "Stream #2".
XPLANE_STREAM_LINE = re.compile(r"^Stream #(\d+)")
# Host lines of the GPU tracer (CUPTI / roctracer API callbacks): "Host Threads/2356".
XPLANE_API_LINE = re.compile(r"^Host Threads/")
# Host threads that only compile: TF 2.21 XLA CPU codegen pool "tf_xla-cpu-codegen/<id>"; PjRt's
# compile pool "tf_pjrt_compile_thread_pool/<id>" (JAX 0.11 on an H200: the GEMM autotuner's kernel
# launches there, RedzoneAllocatorKernelImpl and the candidate GEMMs, benchmarks/truth/cases/gpu-jax-retrace).
XPLANE_COMPILE_LINE = re.compile(r"(xla-cpu-codegen|xla-gpu-compile|xla_compile|XLACompile|pjrt_compile_thread_pool)",
                                 re.IGNORECASE)
# tf.data threads ("tf_data_iterator_resource/<id>", "tf_data_private_threadpool/<id>"): the map
# functions' op kernels ("mul:Mul") and iterator ranges there are input-pipeline work.
XPLANE_INPUT_LINE = re.compile(r"^tf_data_")
# Lines derived from other events by TF >= 2.4 / xprof tooling (derived_timeline.cc). They
# duplicate events kept elsewhere (device stream events, host ops), so readers drop them; on a
# device plane without stream lines (TPU) "XLA Ops" is the primary record and is kept.
XPLANE_DERIVED_LINES = {
    "Steps": "step markers",
    "TensorFlow Ops": "op kernels",
    "Framework Ops": "op kernels",
    "TensorFlow Name Scope": "op kernels",
    "Framework Name Scope": "op kernels",
    "XLA Modules": "device events",
    "XLA Ops": "device events",
    "Async XLA Ops": "device events",
    "XLA TraceMe": "host events",
    "Launch Stats": "launch API events",
    "Source code": "op kernels",
    "Host Offload Ops": "device events",
    "SparseCore Steps": "step markers",
    "Sparse Core Steps": "step markers",
}
# Device events that are copies / fills. NVIDIA (CUPTI): "MemcpyH2D", "MemcpyD2H", "MemcpyD2D",
# "MemcpyP2P", "Memset"; AMD (ROCm) runs hipMemcpy*/hipMemset* as blit kernels
# "__amd_rocclr_copyBuffer.kd", "__amd_rocclr_fillBufferAligned.kd".
XPLANE_DEVICE_MEMCPY = re.compile(r"^(Memcpy|memcpy|__amd_rocclr_copy)")
XPLANE_DEVICE_MEMSET = re.compile(r"^(Memset|memset|__amd_rocclr_fill)")
XPLANE_COPY_NAME_DIRECTION = {"MemcpyH2D": "H2D", "MemcpyD2H": "D2H", "MemcpyD2D": "D2D", "MemcpyP2P": "P2P",
                              "MemcpyH2H": "H2H"}
# Copy direction from the launching API: hipMemcpyHtoDAsync, cuMemcpyDtoHAsync_v2, cudaMemcpyPeerAsync.
API_COPY_DIRECTION = re.compile(r"(HtoD|DtoH|DtoD|HtoH|Peer)")
# memcpy_details "kind_src:<k> kind_dst:<k> size:N dest:D async:B": memory kinds (tsl GetMemoryKindName).
XPLANE_HOST_MEMORY = frozenset({"pageable", "pinned", "host", "managed_host"})
XPLANE_DEVICE_MEMORY = frozenset({"device", "array", "managed", "device_static", "managed_static"})
# Framework of an XPlane file. JAX: jitted calls "PjitFunction(f)", XLA modules "jit_f"/"pmap_f"
# (module names in stats, "/host:metadata" and "jit_f:XLA GPU module"). TensorFlow: eager runtime
# events, "__inference_*" functions, tf_Compute threads, tf.function call stats.
JAX_MARKER = any_of(JAX_JITTED_CALL, re.compile(r"^(jit|pjit|pmap)_\S*:XLA \w+ module$"))
JAX_MODULE = re.compile(r"^(jit|pjit|pmap)_")
TF_MARKER = re.compile(r"^(EagerExecute$|EagerLocalExecute: |TFE_Py_|tf\.function-graph_building$|__inference_)")
TF_LINE = re.compile(r"^(tf_Compute|tf_inter_op|tf_data)")

# --------------------------------------------------------------------------------------------
# Collective communication: device kernels that move data between devices (role table rows)
# --------------------------------------------------------------------------------------------
# Evidence first: the framework op that launched a kernel (its ``launcher``).
# torch.distributed: every c10d collective runs inside ``record_param_comms``
# (torch/csrc/distributed/c10d/ParamCommsUtils.hpp, RECORD_PARAM_COMMS in ProcessGroupNCCL.cpp),
# itself inside the dispatcher op ``c10d::allreduce_``, ``c10d::_allgather_base_``,
# ``c10d::broadcast_``, ``c10d::send`` … (torch/csrc/distributed/c10d/Ops.cpp); functional
# collectives (torch.compile, DTensor) are ``_c10d_functional::all_reduce`` … The
# ``nccl:all_reduce`` range around the launch is a user_annotation, not an op, so never a launcher.
TORCH_COLLECTIVE_OP = re.compile(r"^(record_param_comms|c10d::\w+|_?c10d_functional::\w+)$")
# XLA (JAX, TF): the HLO instruction of a device event (stat hlo_op; xla/hlo/ir/hlo_opcode.h),
# synchronous or async start/done halves: "all-reduce.1", "all-reduce-start", "all-gather-done.3",
# "reduce-scatter", "collective-permute-start.2", "all-to-all", "ragged-all-to-all".
XLA_COLLECTIVE_HLO = re.compile(
    r"^%?(all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all|ragged-all-to-all|"
    r"collective-broadcast)(-start|-done)?(\.\d+)?$"
)
# The framework op around an XLA collective when XPlane names one instead of the HLO: the JAX
# primitive at the end of the op path (stat name: "jit(step)/psum", "pmap(f)/all_gather";
# jax/_src/lax/parallel.py) or a TF collective op type after "name:" (stat tf_op:
# "allreduce/CollectiveReduceV2:CollectiveReduceV2"; tensorflow/core/ops/collective_ops.cc, nccl_ops.cc).
FRAMEWORK_COLLECTIVE_OP = re.compile(
    r"(^|/)(psum|pmax|pmin|pmean|psum_scatter|all_gather|all_to_all|ppermute|pbroadcast|reduce_scatter)"
    r"(\[[^/]*\])?$|:(Collective(Reduce|Gather|BcastSend|BcastRecv|AllToAll|ReduceScatter)V\d|"
    r"Nccl(AllReduce|Reduce|Broadcast))$"
)
# The kernels' own names, for collectives whose launch the trace does not tie to an op (launch
# not recorded, or a launcher of another library). NCCL ≤ 2.18 "ncclKernel_AllReduce_RING_LL_Sum_float
# (ncclWorkElem)", NCCL ≥ 2.19 "ncclDevKernel_AllReduce_Sum_f32_RING_LL(…)" and
# "ncclDevKernel_Generic_1(…)"; RCCL keeps NCCL's names, its MSCCL path adds "mscclKernel_…".
# HTA's communication kernels are ``^nccl.*Kernel`` (hta/utils/utils.py).
COLLECTIVE_KERNEL = re.compile(r"^(nccl|msccl)\w*Kernel")

# --------------------------------------------------------------------------------------------
# Memcpy direction
# --------------------------------------------------------------------------------------------
# Kineto gpu_memcpy names: "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoD (Device -> Device)",
# "Memcpy PtoP (Device -> Device)". XPlane memcpy_details: "kind_src:device kind_dst:host ...".
KINETO_COPY_DIRECTION = {
    "HtoD": "H2D",
    "DtoH": "D2H",
    "DtoD": "D2D",
    "HtoH": "H2H",
    "PtoP": "P2P",
}
KINETO_COPY_NAME = re.compile(r"^Memcpy (\w+)")
PAGEABLE_COPY = re.compile(r"Pageable")


def copy_kind_from_kineto_name(name: str) -> str:
    """Direction of a Kineto gpu_memcpy from its name; "other" when the name does not say."""
    m = KINETO_COPY_NAME.match(name)
    if not m:
        return "other"
    return KINETO_COPY_DIRECTION.get(m.group(1), "other")


# --------------------------------------------------------------------------------------------
# Op families: align framework ops and kernels across frameworks (traceview compare)
# --------------------------------------------------------------------------------------------
# Matched against the op's base name: torch "aten::addmm" -> "addmm"; TF op kernels
# "dense/MatMul:MatMul" -> the type after ":"; eager "EagerLocalExecute: MatMul" -> "MatMul";
# GPU kernels by their own name (cuBLAS "sgemm", cuDNN "conv", Triton "triton_…").
OP_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("optimizer", re.compile(
        r"(?i)^(Optimizer\.|_foreach_|_fused_(adam|sgd)|adam|sgd|ResourceApply|ApplyAdam|ApplyGradientDescent|"
        r"AssignSubVariableOp|AssignAddVariableOp|AssignVariableOp|addcdiv|addcmul|lerp)")),
    ("loss", re.compile(
        r"(?i)(mse_?loss|cross_?entropy|nll_?loss|log_?softmax|_softmax_backward|SoftmaxCrossEntropy|"
        r"SquaredDifference|binary_cross_entropy|smooth_l1|huber)")),
    ("normalization", re.compile(r"(?i)(batch_norm|layer_norm|group_norm|FusedBatchNorm|bn_fw|bn_bw|LayerNorm|rms_norm)")),
    ("conv", re.compile(r"(?i)(conv(?!ert)|cudnn_convolution|Conv2D|Conv3D|winograd|implicit_gemm|"
                        r"(?<![a-z])dgrad|(?<![a-z])wgrad)")),
    ("matmul", re.compile(
        r"(?i)(^(addmm|mm|bmm|matmul|linear|baddbmm|addmv|mv|dot|dot_general|einsum)$|MatMul|BatchMatMul|gemm|gemv|cublas|cutlass|"
        r"_scaled_mm|^lstm|^gru|^rnn|LSTM|GRU|Dense)")),
    ("reduction", re.compile(r"(?i)(^(sum|mean|max|min|amax|amin|prod|norm|argmax|argmin|var|std)$|reduce|Sum$|Mean$|Max$|"
                             r"BiasAddGrad|Prod$|ArgMax)")),
    ("copy", re.compile(r"(?i)(^(copy_|to|_to_copy|cat|stack|clone|contiguous|index|index_select|gather|scatter)$|"
                        r"Memcpy|memcpy|Copy|(?<![a-z])Cast|ConcatV2|Pack|Identity|Transpose|Tile|GatherV2|Slice)")),
    ("elementwise", re.compile(
        r"(?i)(^(add|add_|sub|mul|mul_|div|div_|relu|relu_|threshold|threshold_backward|sigmoid|tanh|exp|log|pow|sqrt|"
        r"rsqrt|neg|abs|clamp|clamp_min|where|fill_|zero_|zeros|ones|gelu|silu|dropout|native_dropout|"
        r"sigmoid_backward|tanh_backward|masked_fill|maximum|minimum|square|reciprocal|sign|rand|randn|uniform_|"
        r"bernoulli_|normal_)$|elementwise|vectorized|BiasAdd|Relu|ReluGrad|AddV2|Add$|Sub$|Mul$|RealDiv|Sigmoid|"
        r"Tanh|Square|Sqrt|Rsqrt|Exp|Log|Neg|Maximum|Minimum|Select|ZerosLike|OnesLike|Fill|Dropout|triton_poi)")),
)


def op_base_name(name: str) -> str:
    """The op's own name without framework prefixes: "aten::addmm" -> "addmm",
    "dense/MatMul:MatMul" -> "MatMul", "EagerLocalExecute: MatMul" -> "MatMul"."""
    name = str(name)
    name = TORCH_ENGINE_NODE.sub("", name, count=1)
    if ": " in name:
        name = name.rsplit(": ", 1)[1]
    elif ":" in name and "::" not in name:
        name = name.rsplit(":", 1)[1]
    if "::" in name:
        name = name.rsplit("::", 1)[1]
    return name


# Families are read from the start of a name: the patterns run over it several times, and a
# trace may carry megabyte-long names (generated code, a hostile file).
FAMILY_NAME_CHARS = 1024


def op_family(name: str) -> str:
    """Common family of a framework op or kernel name; "other" when none matches.

    Tried in order: the op's own name ("BiasAddGrad"), the same without an XLA instruction's
    number ("dot.3" -> "dot") or a backward suffix ("AddmmBackward0" -> "Addmm"), then the full
    name (name scopes such as "Adam/…").
    """
    name = str(name)[:FAMILY_NAME_CHARS]
    base = op_base_name(name)
    unnumbered = re.sub(r"\.\d+$", "", base)
    forward = re.sub(r"(Backward\d|Grad)$", "", base)
    for text in (base, unnumbered, forward, name):
        for family, pattern in OP_FAMILIES:
            if pattern.search(text):
                return family
    return "other"
