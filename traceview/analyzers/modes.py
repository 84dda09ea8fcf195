"""How the traced program ran — eager, a compiled function, XLA, TorchScript … — read from the trace.

Advice depends on it: an XLA trace is not told to turn on ``jit_compile=True``, a TorchScript model
is not told to move to ``torch.compile``. The mode is decided from evidence the framework writes
into every trace of that mode (the first row of :data:`MODE_RULES` that matches wins), never from
file or folder names. Event names are told by the patterns of :mod:`traceview.categories`, where
the role table finds them too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from traceview import categories as cat
from traceview.arrays import column_codes, rows_matching, values_matching
from traceview.normalize import outermost_rows, rows_inside_another
from traceview.results import Steps
from traceview.schema import Timeline

# A JAX step that makes more outermost jitted calls than this per steady step runs its jax.numpy
# operations one by one (each is a jitted call of its own: PjitFunction(matmul), PjitFunction(add)
# …); a jitted step is one call (the sample captures and ground-truth cases: 1 per step), a few
# more where the loop also updates metrics or fetches a value (un-jitted: 23 to 458 per step).
EAGER_CALLS_PER_STEP = 8


@dataclass(frozen=True)
class ModeRule:
    """Traces of ``framework`` with an event named like ``name``, or a ``tf_function_call`` stat
    like ``fn_call``, ran in ``mode`` (a rule with neither is the framework's default)."""

    mode: str
    framework: str
    source: str  # where the evidence comes from
    name: re.Pattern[str] | None = None
    fn_call: re.Pattern[str] | None = None
    # With ``name``: the events so named, outermost ones only, must number more than this per
    # steady step (median).
    per_step_over: int | None = None
    # With ``name`` and ``per_step_over``: count the events so named inside one of another name
    # instead of the outermost ones.
    inside_another: bool = False


MODE_RULES: tuple[ModeRule, ...] = (
    ModeRule("jit-disabled", "jax", "jitted calls inside a jitted call of another function in the steady "
             "steps: jit is disabled (jax.disable_jit(), the jax_disable_jit flag, JAX_DISABLE_JIT=1), so the "
             "jitted function runs as Python and each jax.numpy operation in it as a jitted call of its own (a "
             "compiled step runs as one program and calls no jitted function)",
             name=cat.JAX_JITTED_CALL, per_step_over=0, inside_another=True),
    ModeRule("eager", "jax", f"more than {EAGER_CALLS_PER_STEP} outermost jitted calls (`PjitFunction(f)`, "
             "jax/_src/pjit.py) per steady step: the step's jax.numpy operations run one by one, each a jitted "
             "call of its own, not one jitted step", name=cat.JAX_JITTED_CALL,
             per_step_over=EAGER_CALLS_PER_STEP),
    ModeRule("jit", "jax", "JAX runs the step as jitted XLA code"),
    ModeRule("compile", "torch", "torch.compile's runtime ranges (torch/_dynamo/eval_frame.py, AOT autograd's "
             "CompiledFunction, inductor's `## Call CompiledFxGraph`)",
             name=cat.any_of(cat.TORCH_COMPILED_REGION, cat.TORCH_COMPILED_FUNCTION, cat.INDUCTOR_GRAPH_CALL)),
    ModeRule("compile-fallback", "torch", "torch.compile ran (dynamo's `dynamo`, `entire_frame_compile` and "
             "`compile_id=` ranges) but no compiled region runs: dynamo fell back to eager for the model",
             name=cat.TORCH_DYNAMO_RAN),
    ModeRule("torchscript", "torch", "TorchScript: scripting or tracing the model (torch.jit.script / "
             "torch.jit.trace ranges, in the step that builds it) or the profiling executor's differentiable "
             "graph (torch/csrc/jit/runtime/graph_executor.cpp). A trace of inference steps only, without "
             "the scripting step, carries neither and reads as eager",
             name=cat.any_of(cat.TORCHSCRIPT_BUILD, cat.TORCHSCRIPT_GRAPH_CALL)),
    ModeRule("eager", "torch", "no compiled region in the trace"),
    ModeRule("xla", "tensorflow", "tf.function calls compiled by XLA (stat tf_function_call traced-xla / "
             "notTraced-xla)", fn_call=re.compile(r"-xla$")),
    ModeRule("xla", "tensorflow", "XLA auto-clustering (TF_XLA_FLAGS=--tf_xla_auto_jit, "
             "tf.config.optimizer.set_jit): the graph's clusters run as _XlaCompile / _XlaRun op kernels "
             "(tensorflow/compiler/jit/kernels/xla_ops.cc)", name=cat.TF_XLA_RUN_OP),
    ModeRule("graph-v1", "tensorflow", "TF1 Session.run (TraceMe SessionRun, direct_session.cc)",
             name=cat.TF_SESSION_RUN),
    ModeRule("function", "tensorflow", "tf.function calls (stat tf_function_call traced-nonXla / "
             "notTraced-nonXla; Keras fit runs one)", fn_call=re.compile(r"-nonXla$")),
    ModeRule("functions-eagerly", "tensorflow", "tf.function calls run as plain Python, op by op: "
             "tf.config.run_functions_eagerly(True), a debugging switch (stat tf_function_call eager; "
             "tensorflow/python/eager/polymorphic_function/polymorphic_function.py)", fn_call=re.compile(r"^eager$")),
    ModeRule("eager", "tensorflow", "no graph function call in the trace"),
)


def execution_mode(timeline: Timeline, steps: Steps | None = None) -> str:
    """``<framework>-<mode>`` (``torch-compile``, ``tensorflow-xla`` …), or ``unknown``."""
    framework = timeline.meta.framework
    events = timeline.table
    names = [str(n) for n in events["name"].categories]
    calls = [str(c) for c in events["fn_call"].categories] if "fn_call" in events.columns else []
    for rule in MODE_RULES:
        if rule.framework != framework:
            continue
        if rule.name is not None and not any(rule.name.search(n) for n in names):
            continue
        if rule.fn_call is not None and not any(rule.fn_call.search(c) for c in calls):
            continue
        if rule.per_step_over is not None and rule.name is not None and (
                steps is None or _named_per_step(timeline, steps, rule.name,
                                                 "inside_another" if rule.inside_another else "outermost")
                <= rule.per_step_over):
            continue
        return f"{framework}-{rule.mode}"
    return "unknown"


def compiled_regions_per_step(timeline: Timeline, steps: Steps) -> float:
    """The median, over the steady steps, of the torch.compile regions a step runs (nested ones
    included): 1 for a step compiled whole, more where graph breaks split it (a region per compiled
    frame: categories.TORCH_COMPILED_REGION)."""
    return _named_per_step(timeline, steps, cat.TORCH_COMPILED_REGION_RUN, "all")


def dataloader_workers(timeline: Timeline) -> bool:
    """Whether the program reads its batches from a torch DataLoader's worker processes
    (num_workers > 0): they run beside the step and share the machine's cores with it."""
    _, names = column_codes(timeline.table["name"])
    return bool(values_matching(names, cat.TORCH_WORKER_INPUT).any())


def _named_per_step(timeline: Timeline, steps: Steps, name: re.Pattern[str],
                    which: Literal["all", "outermost", "inside_another"]) -> float:
    """The median, over the steady steps, of the events named like ``name``: all of them, the
    ``outermost`` (no other such event holds them), or those ``inside_another`` (one of another
    name holds them; counted in the steady steps that build no graph)."""
    events = timeline.table
    named = rows_matching(events["name"], name)
    if not named.any() or not len(steps.table):
        return 0.0
    if which == "outermost":
        rows = outermost_rows(events, named)
    elif which == "inside_another":
        rows = rows_inside_another(events, named)
    else:
        rows = np.flatnonzero(named)
    step = events["step"][rows]
    counts = np.bincount(step[step >= 0], minlength=len(steps.table))[: len(steps.table)]
    positions = steps.steady_positions
    if which == "inside_another":
        # Only steps that build no graph: tracing a function calls the jitted functions inside it
        # (a step retraced every call read as jit disabled).
        positions = positions[steps.table["graph_build_events"][positions] == 0]
        if not len(positions):
            return 0.0
    return float(np.median(counts[positions]))


# Advice that depends on the mode: finding -> mode -> text ("*" for any other mode). Each text
# only suggests what the mode does not already do. COMPILE_WITH_BREAKS: a torch-compile step that
# runs more than one compiled region.
COMPILE_WITH_BREAKS = "torch-compile-breaks"
# DOUBLE_BACKWARD: a torch eager step that differentiates its gradients (categories.TORCH_DOUBLE_BACKWARD),
# which torch.compile's AOT autograd refuses ("does not currently support double backward").
DOUBLE_BACKWARD = "torch-eager-double-backward"
# COMPILE_CUDAGRAPHS: a torch-compile step whose compiled regions replay as CUDA graphs (graph
# launches in its steps: mode='reduce-overhead').
COMPILE_CUDAGRAPHS = "torch-compile-cudagraphs"
_FUSE = {
    "torch-eager": "fuse work into fewer, larger ops with torch.compile (mode='reduce-overhead' adds CUDA "
                   "graphs on GPU), or grow the batch so each op does more work",
    DOUBLE_BACKWARD: "the step differentiates its gradients (create_graph=True: a gradient penalty, "
                     "higher-order derivatives), which torch.compile cannot compile (AOT autograd does not support "
                     "double backward): grow the batch so each op does more work, or compute the penalty every N "
                     "steps",
    "torch-compile": "the step is already one compiled graph: capture it in CUDA graphs "
                     "(mode='reduce-overhead'), or grow the batch so each op does more work",
    COMPILE_CUDAGRAPHS: "the compiled regions already replay as CUDA graphs: what still launches one by one "
                        "lies outside them (the loss or the optimizer step when not compiled with the model): "
                        "compile the whole step, loss and optimizer.step included, or grow the batch so each op "
                        "does more work",
    # (torch-compile with more than one compiled region a step: compiled_regions_per_step)
    COMPILE_WITH_BREAKS: "graph breaks split the compiled step into several regions, with eager Python "
                         "between them: remove the breaks (torch._dynamo.explain names them), then capture the "
                         "step in CUDA graphs (mode='reduce-overhead'), or grow the batch so each op does more "
                         "work",
    "torch-compile-fallback": "torch.compile fell back to eager for this model, so its ops run one by one: "
                              "torch._dynamo.explain says why (RNN modules are not compiled, for one); grow "
                              "the batch so each op does more work",
    "torch-torchscript": "TorchScript runs the ops one by one: freeze the module (torch.jit.freeze) so "
                         "constants fold and ops fuse, or grow the batch so each op does more work",
    "tensorflow-eager": "run the step as a tf.function (Keras: compile(run_eagerly=False), the default; "
                        "jit_compile=True lets XLA fuse its ops), or grow the batch so each op does more work",
    "tensorflow-function": "let XLA fuse the function's ops (tf.function(jit_compile=True)), or grow the batch "
                           "so each op does more work",
    "tensorflow-functions-eagerly": "the step's tf.function runs op by op as plain Python, because "
                                    "tf.config.run_functions_eagerly(True) is on: turn that debugging switch off so "
                                    "the function runs as one graph, then let XLA fuse its ops (jit_compile=True)",
    "tensorflow-graph-v1": "move the step to a tf.function with jit_compile=True, or grow the batch so each "
                           "op does more work",
    "tensorflow-xla": "the step is already XLA-compiled: grow the batch so each op does more work, or "
                      "run several steps per call (steps_per_execution / a loop inside the function)",
    "jax-jit": "the step is already jitted: grow the batch, or run several steps per call (lax.scan / "
               "lax.fori_loop over the step)",
    "jax-eager": "jit the step (jax.jit over the whole update, gradient included): its jax.numpy operations "
                 "now run one by one, each a dispatch of its own; or grow the batch so each does more work",
    "jax-jit-disabled": "the step's jax.jit runs op by op as Python because jit is disabled (jax.disable_jit(), "
                        "the jax_disable_jit flag or JAX_DISABLE_JIT=1: debugging switches): turn it off so the "
                        "step runs as one XLA program",
    "*": "fuse work into fewer, larger ops: torch.compile / CUDA graphs in PyTorch, tf.function / "
         "jit_compile=True in TensorFlow, jax.jit; or grow the batch so each op does more work",
}
# Wrapping anew inside the loop builds every step whatever the inputs: a new tf.function object
# traces on its first call, and jax.jit of a function object it has not seen (a new lambda or
# closure) traces and compiles. Measured on a 2-core VM: tf.function(step)(x) per call 2.3 -> 26
# ms a step, jax.jit(lambda ...)(x) per step 0.64 -> 139 ms, all of it graph building. Not so
# jax.jit(f) of the same f (0.08 -> 0.15 ms: its caches key on f) nor torch.compile(model) per
# step (dynamo caches by the code object: 0.7 ms a call).
_NEW_WRAPPER = "; and wrap the function once, before the loop: {wrapper} inside the loop builds anew every step"
_RETRACE = {
    "torch-compile": "torch.compile recompiles on new shapes or guards: mark_dynamic or dynamic=True; "
                     "torch._dynamo.explain names the guard that failed",
    "tensorflow-function": "tf.function retraces on new Python values or shapes: pass tensors, set "
                           "input_signature / reduce_retracing"
                           + _NEW_WRAPPER.format(wrapper="tf.function(f)"),
    "tensorflow-xla": "tf.function retraces (and XLA recompiles) on new Python values or shapes: pass "
                      "tensors, set input_signature / reduce_retracing, pad to a few fixed shapes"
                      + _NEW_WRAPPER.format(wrapper="tf.function(f)"),
    "jax-jit": "jax.jit retraces and recompiles on new shapes or static arguments: pad to a few fixed "
               "shapes, keep static_argnums values few"
               + _NEW_WRAPPER.format(wrapper="jax.jit of a new lambda or closure"),
    "jax-eager": "jax.jit retraces and recompiles on new shapes or static arguments (each un-jitted jax.numpy "
                 "call is a small jitted function of its own): jit the whole step, pad to a few fixed shapes, keep "
                 "static_argnums values few",
    "*": "tf.function retraces on new Python values or shapes: pass tensors, set input_signature / "
         "reduce_retracing; torch.compile recompiles on new shapes or guards: mark_dynamic or dynamic=True"
         + _NEW_WRAPPER.format(wrapper="tf.function(f), or jax.jit of a new lambda or closure,"),
}
_ONE_TIME = "a one-time cost: it matters for short jobs and benchmarks; "
_COLD = {
    "torch-compile": _ONE_TIME + "keep inductor's compile cache between runs (TORCHINDUCTOR_CACHE_DIR on a "
                     "lasting disk; torch.compiler.save_cache_artifacts / load_cache_artifacts carry it to "
                     "other machines) or exclude warm-up from timings",
    "tensorflow-xla": _ONE_TIME + "keep XLA's compiled clusters between runs (TF_XLA_FLAGS="
                      "--tf_xla_persistent_cache_directory=DIR) or exclude warm-up from timings",
    "tensorflow-function": _ONE_TIME + "tf.function traces its Python once per input signature and process: "
                           "exclude warm-up from timings (a SavedModel of the traced function loads "
                           "without tracing again)",
    "jax-jit": _ONE_TIME + "keep JAX's persistent compilation cache between runs "
               "(jax.config.update('jax_compilation_cache_dir', DIR)) or exclude warm-up from timings",
    "*": _ONE_TIME + "cache compiled artefacts (TORCHINDUCTOR_CACHE_DIR, XLA persistent cache) or exclude "
         "warm-up from timings",
}
_TORCH_INPUT = ("prefetch and parallelize input: DataLoader(num_workers>0, pin_memory=True, persistent_workers=True), "
                "with the per-sample work in the Dataset so the workers run it")
_TF_INPUT = ("prefetch and parallelize input: tf.data .map(num_parallel_calls=AUTOTUNE) and .prefetch(AUTOTUNE); a "
             "keras.utils.PyDataset fed to fit runs on workers with PyDataset(workers=N, use_multiprocessing=True)")
_INPUT = {
    **{f"torch-{mode}": _TORCH_INPUT for mode in ("eager", "compile", "compile-fallback", "torchscript")},
    **{f"tensorflow-{mode}": _TF_INPUT for mode in ("eager", "function", "functions-eagerly", "xla", "graph-v1")},
    **{f"jax-{mode}": "prefetch input on other threads (a tf.data or grain pipeline with prefetch, or a background "
                      "iterator) and put the next batch on the device (jax.device_put) while the step runs"
       for mode in ("jit", "eager", "jit-disabled")},
    "*": "prefetch and parallelize input: DataLoader(num_workers>0, pin_memory=True); tf.data .prefetch(AUTOTUNE) "
         "and .map(num_parallel_calls=AUTOTUNE)",
}
ADVICE: dict[str, dict[str, str]] = {"fuse": _FUSE, "retrace": _RETRACE, "cold": _COLD, "input": _INPUT}


def advice(kind: str, mode: str) -> str:
    """The advice ``kind`` (a key of :data:`ADVICE`) for a trace that ran in ``mode``."""
    table = ADVICE[kind]
    return table.get(mode, table["*"])
