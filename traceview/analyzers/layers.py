"""The attribution's layer table: the single statement of its rules as data.

Each :class:`Layer` is one row — a bucket's detail, where it is looked for (:data:`SCOPES`), the
roles or special selectors whose time it takes, and in which traces — and :data:`LAYERS` lists
them in priority order: the first layer active in a moment wins it (analyzers/attribution.py).
docs/attribution.md embeds the table as :func:`layers_markdown` writes it (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from traceview.roles import Role
from traceview.schema import CopyKind

INFERRED_GLUE = "launch_overhead.inferred"  # the detail the short gaps go to (framework glue)

R = Role


@dataclass(frozen=True)
class Layer:
    """One row of the attribution table: a detail of a bucket, where it is looked for, and when."""

    name: str  # "bucket" or "bucket.detail"
    scope: str  # device | driver | others | host (see SCOPES)
    selects: tuple[str, ...]  # roles whose own time is selected, or one of the special selectors
    modes: frozenset[str]  # "device" (traces with device activity), "cpu" (CPU-only traces)
    means: str  # one line for the docs

    @property
    def bucket(self) -> str:
        return self.name.split(".")[0]


SCOPES = {
    "device": "device streams",
    "driver": "the step's thread (markers / the user's loop): its innermost event's role",
    "others": "other host threads, only while the step's thread waits in a call",
    "host": "any host thread",
}
_CPU, _DEV, _BOTH = frozenset({"cpu"}), frozenset({"device"}), frozenset({"cpu", "device"})
# Special selectors: the driver waits in a call; short / long unrecorded gaps on the driver;
# a launched kernel queued; copies by direction; nothing recorded on the others while waiting.
WAIT, WAIT_TRACING, WAIT_SYNC = "<wait>", "<wait, tracing call>", "<wait, sync>"
# Each kind of wait on the step's thread, and the layer that takes it when nothing is recorded elsewhere.
WAIT_FALLBACKS = ((WAIT, "launch_overhead.call"), (WAIT_TRACING, "graph_build.instantiate"), (WAIT_SYNC, "sync_wait"))
GAP_SHORT, GAP_LONG, QUEUED, CALL_FALLBACK = "<short gap>", "<long gap>", "<queued>", "<nothing>"
PAUSE = "<pause: longer than at the same place in the other steps>"
GIL_WAIT = "<wait for the interpreter lock: whole switch intervals>"
GLUE = "<user frame between framework calls>"
HOOKS = "<hooks the autograd engine runs around a node>"
PER_CALL = "<per-call cost of a compute call>"
# A CPU op call's fixed cost (dispatcher, TensorIterator set-up, output allocation), when the trace
# has no no-math calls of the same entry point to measure it: aten::mul on 8 elements takes 2.4 µs
# own time, on 16 elements 2.2–2.7 µs (profiled, torch 2.13 CPU).
PER_CALL_MAX_NS = 3_000
# The copy layers in priority order (where copies of two kinds run at once, the first kind's layer
# wins the moment; the docs table lists them in this order): every CopyKind but NONE, a copy of
# which counts as "other".
COPY_KINDS: tuple[str, ...] = tuple(kind.value for kind in (CopyKind.H2D, CopyKind.D2H, CopyKind.D2D, CopyKind.P2P,
                                                            CopyKind.H2H, CopyKind.OTHER, CopyKind.MEMSET))
# Step-thread layers that are the thread waiting when another thread computes at the same moment
# (see attribution._segments): a range with nothing of its own recorded inside, framework runtime,
# and the own time of a Python frame — the Python tracer records calls into Python, not the wait a
# frame makes in native code (JAX's block_until_ready under jax.profiler.trace's default Python
# tracer: the user's frame holds the whole step while the XLA program runs on the client's threads).
WAITING_IF_OTHERS_COMPUTE = frozenset({"host_compute.annotation", "launch_overhead.dispatch",
                                       "launch_overhead.python", "host_compute.python", "launch_overhead.binding"})

# Roles of host calls that return only once the device has done work (a pageable copy, a launch
# into a full queue): where the device works meanwhile, the what-if replay reads them as a wait for it.
DEVICE_BOUND_CALLS = frozenset({R.COPY_PAGEABLE.value, R.LAUNCH_BLOCKED.value})

# Priority order: the first layer active in a moment wins it.
LAYERS: tuple[Layer, ...] = (
    Layer("kernel", "device", (R.DEVICE_KERNEL.value,), _DEV, "a compute kernel runs on a device stream"),
    Layer("communication.exposed", "device", (R.DEVICE_COMMUNICATION.value,), _DEV,
          "a collective-communication kernel runs and no compute kernel does (exposed communication)"),
    Layer("graph_build.device", "device", (R.DEVICE_COMPILE.value,), _DEV,
          "a kernel, copy or memset that graph building or compilation launched runs, and no compute kernel or "
          "collective does (the compiler running the graph's ops, autotuning)"),
    *(Layer(f"memcpy.{ck}", "device", (f"<copy {ck}>",), _DEV,
            f"a {ck} copy / memset runs, no kernel or collective") for ck in COPY_KINDS),
    Layer("kernel", "driver", (R.COMPUTE.value,), _CPU, "the step's thread runs a compute op (its own time)"),
    Layer("launch_overhead.per_call", "driver", (PER_CALL,), _CPU,
          "the fixed cost of each compute call (measured on a shared entry point's no-math calls, else the "
          f"first {PER_CALL_MAX_NS / 1e3:g} µs of the call), taken off its own time"),
    Layer("kernel.compiled", "driver", (R.COMPILED_CODE.value,), _CPU,
          "the step's thread runs compiled code (XLA executable, inductor graph) outside recorded ops"),
    Layer("graph_build.graph", "host", (R.GRAPH_BUILD.value,), _DEV, "(device idle) a host thread traces a graph"),
    Layer("graph_build.compile", "host", (R.COMPILE.value,), _DEV, "(device idle) a host thread compiles"),
    Layer("graph_build.startup", "host", (R.STARTUP.value,), _BOTH,
          "(device idle) one-time runtime start-up: context creation, module loading, library init"),
    Layer("graph_build.instantiate", "host", (R.CALL_TRACING.value,), _DEV,
          "(device idle) a call that traced or compiled its function this time runs outside its recorded work: "
          "the new graph's tracing and set-up (on a CPU trace: the wait rows below)"),
    Layer("graph_build.graph", "driver", (R.GRAPH_BUILD.value,), _CPU, "the step's thread traces a graph"),
    Layer("graph_build.compile", "driver", (R.COMPILE.value,), _CPU, "the step's thread compiles"),
    Layer("memcpy.pageable", "host", (R.COPY_PAGEABLE.value,), _DEV,
          "(device idle) a copy call from or to pageable memory runs: the host copies through the driver's "
          "pinned staging buffer"),
    Layer("sync_wait", "host", (R.SYNC.value, R.DEVICE_SYNC.value), _DEV,
          "(device idle) a host thread blocks on the device, or a stream records a sync wait"),
    Layer(WAIT_SYNC, "driver", (R.SYNC.value,), _CPU,
          "the step's thread blocks on a result (XLA BlockUntilReady): the moment goes to what the other "
          "threads do (rows below; last row differs)"),
    Layer("launch_overhead.launch_api", "host", (R.LAUNCH.value,), _BOTH, "a launch API call runs"),
    Layer("launch_overhead.launch_api", "host", (R.LAUNCH_BLOCKED.value,), _DEV,
          "a launch call that waited for room in the device's queue runs (the replay: a wait for the device)"),
    Layer("launch_overhead.runtime_api", "host", (R.RUNTIME.value,), _BOTH, "another runtime API call runs"),
    Layer("launch_overhead.queued", "device", (QUEUED,), _DEV, "a launched kernel waits to start"),
    Layer("input", "driver", (R.INPUT.value,), _CPU, "the step's thread is in the input pipeline"),
    Layer("communication.host", "driver", (R.COMMUNICATION.value,), _CPU,
          "the step's thread runs a collective (Gloo: waiting for the peers, moving the data)"),
    Layer("host_compute.hooks", "host", (HOOKS,), _DEV,
          "(device idle) the autograd engine runs hooks around a node: a node range's own time beyond the "
          "engine's bookkeeping (ENGINE_BOOKKEEPING_NS)"),
    Layer("launch_overhead.dispatch", "host",
          (R.DISPATCH.value, R.VIEW_ALLOC.value, R.CALL.value, R.COMPILED_CODE.value, R.COMPUTE.value), _DEV,
          "(device idle) a framework op / call dispatches on the host"),
    Layer("input", "host", (R.INPUT.value,), _DEV, "(device idle) input pipeline"),
    Layer("host_compute.hooks", "driver", (HOOKS,), _CPU,
          "the step's thread runs hooks the autograd engine calls around a node (tensor, module and gradient "
          "hooks): a node range's own time beyond the engine's bookkeeping (ENGINE_BOOKKEEPING_NS)"),
    Layer("launch_overhead.dispatch", "driver", (R.DISPATCH.value, R.VIEW_ALLOC.value), _CPU,
          "the step's thread runs framework runtime: op wrappers, views, allocation, autograd engine"),
    Layer("launch_overhead.python", "driver", (R.PYTHON_FRAMEWORK.value,), _BOTH,
          "the step's thread runs Python in the frameworks' packages"),
    Layer("host_compute.python", "driver", (R.PYTHON_USER.value,), _BOTH,
          "the step's thread runs the user's Python"),
    Layer("host_compute.annotation", "driver", (R.ANNOTATION.value,), _BOTH,
          "the step's thread is inside a user range, outside every recorded op"),
    Layer(WAIT, "driver", (R.CALL.value,), _CPU,
          "the step's thread waits in a call: the moment goes to what the other threads do (rows below)"),
    Layer(WAIT_TRACING, "driver", (R.CALL_TRACING.value,), _CPU,
          "the same, in a call that traced its function this time (rows below; last row differs)"),
    Layer("launch_overhead.binding", "driver", (GLUE,), _BOTH,
          "the user's Python frame between two framework calls, for no longer than the gap threshold: "
          "the call into the framework (argument parsing, the binding), not user work"),
    Layer(INFERRED_GLUE, "driver", (GAP_SHORT,), _BOTH,
          "unrecorded gap between the step thread's events, shorter than the gap threshold (framework glue)"),
    Layer("host_compute.inferred", "driver", (GAP_LONG,), _BOTH,
          "unrecorded gap on the step's thread longer than the threshold (user code, GC, the OS)"),
    Layer("idle.paused", "driver", (PAUSE,), _BOTH,
          "the step's thread stops where the other steps of its shape do not: an event or a gap at least "
          "1 ms and 2× longer than its median at that place (the OS or the hypervisor took the core; "
          "analyzers/pauses.py)"),
    Layer("idle.gil_wait", "driver", (GIL_WAIT,), _BOTH,
          "the step's thread waits for Python's interpreter lock while another thread of the process runs "
          "Python: stretches outside compute lasting whole switch intervals (5 ms) all over the step "
          "(analyzers/gil_waits.py)"),
    Layer("host_compute", "host", (R.PYTHON_USER.value, R.ANNOTATION.value), _DEV,
          "(device idle) other recorded host work"),
    Layer("kernel.other_threads", "others", (R.COMPUTE.value, R.COMPILED_CODE.value), _CPU,
          "… another thread computes (executor threads running a tf.function's ops)"),
    Layer("communication.host", "others", (R.COMMUNICATION.value,), _CPU,
          "… another thread runs a collective (Gloo's work thread: the step waits for its peers)"),
    Layer("graph_build.graph", "others", (R.GRAPH_BUILD.value,), _CPU, "… another thread traces"),
    Layer("graph_build.compile", "others", (R.COMPILE.value,), _CPU, "… another thread compiles (XLA codegen)"),
    Layer("input", "others", (R.INPUT.value,), _CPU, "… another thread runs the input pipeline"),
    Layer("host_compute.other_threads", "others", (R.PYTHON_USER.value,), _CPU,
          "… another thread runs the user's work (a tf.py_function's body, a tf.print's formatting on an "
          "executor thread)"),
    Layer("sync_wait", "others", (R.SYNC.value,), _CPU, "… another thread blocks on a device"),
    Layer("launch_overhead.dispatch", "others",
          (R.DISPATCH.value, R.VIEW_ALLOC.value, R.CALL.value, R.CALL_TRACING.value, R.PYTHON_FRAMEWORK.value), _CPU,
          "… another thread runs framework runtime (executor bookkeeping)"),
    Layer("launch_overhead.call", "others", (CALL_FALLBACK,), _CPU,
          "… nothing is recorded elsewhere: the call's own runtime (executor start-up, bookkeeping)"),
    Layer("graph_build.instantiate", "others", (CALL_FALLBACK,), _CPU,
          "… nothing is recorded elsewhere, in a tracing call: the new graph is instantiated and optimized"),
    Layer("sync_wait", "others", (CALL_FALLBACK,), _CPU,
          "… nothing is recorded elsewhere, in a sync: the wait itself"),
)


def layers_markdown() -> str:
    """The attribution table as markdown (docs/attribution.md embeds it; a test checks it)."""
    lines = ["| priority | layer (bucket.detail) | where | selects (roles) | traces |",
             "|---|---|---|---|---|"]
    for i, layer in enumerate(LAYERS, 1):
        modes = " + ".join(m for m in ("device", "cpu") if m in layer.modes)
        selects = ", ".join(f"`{s}`" for s in layer.selects)
        lines.append(f"| {i} | `{layer.name}` | {layer.scope}: {layer.means} | {selects} | {modes} |")
    return "\n".join(lines) + "\n"
