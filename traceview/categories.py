"""Name patterns that map each profiler's event names to traceview kinds — all in one place.

torch (Kineto) and TensorFlow/JAX (XPlane) patterns sit side by side; every pattern says where
the name comes from. Readers use these to set the ``kind`` column; analyzers use the
``*_FAMILY`` and leaf-op patterns. Patterns are compiled once and matched against whole
category arrays (``pandas.Series.str.contains``) or unique names, never per event.
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------------------------
# Step markers
# --------------------------------------------------------------------------------------------
# torch: torch.profiler.profile.step() records a user_annotation "ProfilerStep#<n>".
TORCH_STEP = re.compile(r"^ProfilerStep#(\d+)$")
# TF: tf.profiler.experimental.Trace('train', step_num=n, _r=1) -> host event "train" with stat step_num.
# JAX: jax.profiler.StepTraceAnnotation(name, step_num=n) -> host event named `name` with stat step_num.
XPLANE_STEP_STAT = "step_num"

# --------------------------------------------------------------------------------------------
# Host runtime / driver API calls (Kineto cat cuda_runtime / cuda_driver; XPlane Host Threads lines)
# --------------------------------------------------------------------------------------------
# Calls that enqueue device work. CUDA runtime (cudaLaunchKernel…), CUDA driver (cuLaunchKernel, used
# by Triton/inductor and XLA), HIP (hipLaunchKernel, hipModuleLaunchKernel, hipExtModuleLaunchKernel),
# async copies/memsets and CUDA-graph launches.
LAUNCH_API = re.compile(
    r"^(cuda|cu|hip)(LaunchKernel|LaunchKernelExC|LaunchKernelEx|LaunchCooperativeKernel|"
    r"ModuleLaunchKernel|ExtModuleLaunchKernel|ExtLaunchKernel|ModuleLaunchCooperativeKernel|"
    r"GraphLaunch|MemcpyAsync|Memcpy2DAsync|Memcpy3DAsync|MemcpyHtoDAsync(_v2)?|MemcpyDtoHAsync(_v2)?|"
    r"MemcpyDtoDAsync(_v2)?|MemcpyPeerAsync|MemsetAsync|MemsetD8Async|MemsetD16Async|MemsetD32Async|"
    r"MemsetD2D8Async|LaunchHostFunc)(_v2|_ptsz|_spt)*$"
)
# Calls that block the host until the device catches up. A synchronous cudaMemcpy blocks too;
# cudaStreamQuery / cudaEventQuery only poll and return at once, so they are plain runtime calls.
SYNC_API = re.compile(
    r"^(cuda|cu|hip)(DeviceSynchronize|StreamSynchronize|EventSynchronize|CtxSynchronize|"
    r"Memcpy|MemcpyHtoD|MemcpyDtoH|MemcpyDtoD|Memcpy2D|Memset|MemcpyWithStream)"
    r"(_v2|_ptds|_ptsz)*$"
)

# --------------------------------------------------------------------------------------------
# torch (Kineto) host names
# --------------------------------------------------------------------------------------------
# torch.compile writes its phases as cpu_op / user_annotation ranges (torch/_dynamo/utils.py
# dynamo_timed, torch/_inductor). Dynamo's bytecode analysis is graph building; AOT autograd,
# inductor lowering/codegen and the C++/Triton builds are compilation.
TORCH_GRAPH_BUILD = re.compile(
    r"^(dynamo|entire_frame_compile|_compile\.compile_inner|compile_inner|OutputGraph\.call_user_compiler|"
    r"bytecode_tracing|InstructionTranslator|build_guards|CompileId|"
    r"torch\.jit\.(script|trace)|TorchScript graph|GraphExecutor.*optimize)",
)
TORCH_COMPILE = re.compile(
    r"^(backend_compile|inductor_compile|compile_fx_inner|compile_fx|create_aot_dispatcher_function|"
    r"aot_collect_metadata|compile_file|async_compile\.wait|GraphLowering|fx_codegen_and_compile|"
    r"_recursive_joint_graph_passes|code_gen|PyCodeCache|TritonBundler|CachingAutotuner|"
    r"min_cut_rematerialization_partition|.*: compile_id=\d+/\d+)"
)
# DataLoader iteration: "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__".
TORCH_INPUT = re.compile(r"^enumerate\(DataLoader\)#|DataLoaderIter\.__next__")

# --------------------------------------------------------------------------------------------
# TensorFlow / JAX (XPlane) host names
# --------------------------------------------------------------------------------------------
# tf.function tracing: "tf.function-graph_building" (TF python/eager/polymorphic_function) and
# FuncGraph construction; JAX tracing/lowering: "jit_*" trace and lower phases.
TF_GRAPH_BUILD = re.compile(
    r"^(tf\.function-graph_building|FuncGraph|__inference_.*_tracing|"
    r"TraceContext|pjit\.trace|jax.*trace_to_jaxpr|lower_jaxpr|jaxpr_to_mlir|"
    r"(Trace|Lower)(ing)?\s?\(|.*\.trace$|.*\.lower$)"
)
# XLA compilation: HLO pass pipelines, backend codegen (TF XLA and JAX alike); there is no
# single XlaCompile event in current TF (see docs/attribution.md).
TF_COMPILE = re.compile(
    r"^(HLO passes|CpuCompiler::|GpuCompiler::|NVPTXCompiler::|AMDGPUCompiler::|ThunkEmitter::|"
    r"JitCompiler::Compile|FusionCompiler::Compile|XlaCompile|BuildXlaCompilerArgs|"
    r"XlaCompilationCache|DeviceCompiler|PjRt.*Compile|CompileAndLoad|backend_compile|"
    r"compile_or_get_cached|RunHloPasses|RunBackend|Compile$|.*::Compile$|"
    r"xla::Compile|LLVM|OptimizeHloModule|PrepareHloModuleForIrEmitting)"
)
# tf.data and feeding: IteratorGetNext op, Iterator::* ranges from tf.data's iterator stack.
TF_INPUT = re.compile(r"^(IteratorGetNext|IteratorGetNextSync|Iterator::|MultiDeviceIteratorGetNextFromShard|"
                      r".*:IteratorGetNext$|.*Iterator.*GetNext)")

# --------------------------------------------------------------------------------------------
# Leaf compute ops on CPU (the ops whose time is "kernel" in CPU-only traces)
# --------------------------------------------------------------------------------------------
# torch: aten ops that only make views or allocate do no math; a leaf cpu_op that is not one of
# these is treated as a compute kernel.
TORCH_NON_COMPUTE_OP = re.compile(
    r"^aten::(empty|empty_like|empty_strided|as_strided|view|_unsafe_view|reshape|_reshape_alias|"
    r"t|transpose|permute|expand|expand_as|squeeze|unsqueeze|detach|detach_|alias|slice|select|"
    r"narrow|resize_|set_|lift_fresh|contiguous|numpy_T|to|_to_copy|result_type|is_nonzero|item|"
    r"_local_scalar_dense|size|stride|dim|broadcast_tensors|unbind|split|chunk|record_stream|"
    r"view_as|flatten|unflatten|zeros_like|ones_like|new_empty|new_empty_strided|_has_compatible_shallow_copy_type)$"
)
# TF op kernels on tf_Compute / TensorFlow Ops lines are named "name:Type"; these types do no math.
TF_NON_COMPUTE_OP = re.compile(
    r":(Identity|IdentityN|NoOp|Const|Placeholder|_Arg|_Retval|ReadVariableOp|VarHandleOp|"
    r"_Recv|_Send|Shape|Reshape|_HostRecv|_HostSend|StopGradient)$"
)

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
