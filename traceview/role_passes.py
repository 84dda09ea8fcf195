"""The passes after the role table: what a row of :data:`traceview.roles.ROLE_RULES` cannot tell.

A row gives an event its role from the event alone: its kind, name and stats. Some roles depend
on more — how long the event took, how large its inputs were, which other events the trace
holds, the events it runs inside and those inside it. :data:`ROLE_PASSES` decides them, in order,
after the rows: each pass takes the roles as the rows and the passes before it left them and
changes some. :func:`assign_role_codes` runs the rows, then the passes. docs/attribution.md lists
the passes (:func:`passes_markdown`) after the rows.

Every pass is vectorized: it works on role codes (:data:`traceview.roles.ROLE_CODE`) and on masks
built once per distinct name, and a pass that walks the nesting does so in one compiled pass over
the rows (:class:`traceview.arrays.Nesting`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from traceview import categories as cat
from traceview.arrays import (Nesting, at_rows, codes_matching, first_match, membership, unique_sorted,
                              values_matching)
from traceview.roles import ROLE_CODE, ROLE_VALUES, Role, matching_rows, role_codes, rule_role_codes, text_column
from traceview.schema import Kind, has_device_rows
from traceview.table import Table

# An op whose largest input holds at most this many elements does at most ~1 µs of math on one
# CPU core, less than the call itself costs (aten::mul on 8 elements: 2.4 µs own time, torch 2.13
# CPU): when shapes are recorded, such an op's own time is per-op dispatch, not compute.
TINY_OP_ELEMENTS = 1024

# A runtime / driver call this long is one-time start-up, whatever its name: CUDA context
# creation lands in the first runtime call (29.9 s in cudaDeviceGetStreamPriorityRange on the
# shared A100 alexnet trace), lazy cuDNN / cuBLAS initialisation in cudaFree (6.0 s), lazy module
# loading in the first cudaLaunchKernel (3.1 s). Steady-state runtime calls take µs.
STARTUP_CALL_NS = 100_000_000

# A launch call returns once its work is queued: ~5 µs (the median launch call on the shared V100
# ResNet trace, 5.2 µs). One many times that long, whose work then waited in the device's queue,
# waited for room in that queue: the device's queue holds ~1,000 launches, and with the host that far
# ahead each launch returns only when a kernel finishes (the same trace: launch calls of 288 µs at
# the 95th percentile, 72 ms of a 95.7 ms step in launch calls, its kernels starting 76 ms after
# their launch).
BLOCKED_LAUNCH_NS = 50_000  # (HTA's launch-call outlier threshold)
BLOCKED_LAUNCH_FACTOR = 10.0

# XLA auto-clustering's compile op (categories.TF_XLA_COMPILE_OP) runs before every launch of its
# cluster: it compiles on the first call and then looks the executable up in XLA's cache. A lookup
# returns in tens of µs (47 µs a step on a CPU capture); compiling even a small cluster takes tens
# to hundreds of ms (235 ms there). One shorter than this is the lookup: the framework's dispatch,
# not graph building (it read as 2 % of "steady graph building, retracing").
XLA_CACHE_HIT_NS = 1_000_000


@dataclass(frozen=True)
class RoleContext:
    """What the passes read besides the roles, computed once for all of them: the table, its name
    and tf_function_call columns as codes (:func:`traceview.roles.text_column`), its kinds and its
    nesting."""

    events: Table
    name_codes: np.ndarray
    name_values: list[str]
    call_codes: np.ndarray
    call_values: list[str]
    kind_in: Callable[[Iterable[Any]], np.ndarray]  # whether each row's kind is one of these
    host_op: np.ndarray  # rows of kind host_op
    python: np.ndarray  # rows of kind python
    nesting: Nesting

    def named(self, pattern: re.Pattern[str]) -> np.ndarray:
        """The rows whose name ``pattern`` is found in (tested once per distinct name)."""
        return matching_rows(pattern, self.name_values, self.name_codes)


@dataclass(frozen=True)
class RolePass:
    """One pass: ``run`` takes the context and the role codes so far and returns the new ones (it
    may change the array it is given)."""

    name: str
    decides: str  # what it decides and why, one paragraph (docs/attribution.md lists it)
    run: Callable[[RoleContext, np.ndarray], np.ndarray]


def _tiny_ops(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Compute ops whose largest recorded input holds at most TINY_OP_ELEMENTS elements become
    dispatch; a trace without shapes (no ``elements`` column) keeps its roles."""
    events = context.events
    if "elements" not in events.columns:
        return role
    elements = events["elements"]
    tiny = (role == ROLE_CODE[Role.COMPUTE.value]) & (elements >= 0) & (elements <= TINY_OP_ELEMENTS)
    role[tiny] = ROLE_CODE[Role.DISPATCH.value]
    return role


def _startup_calls(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Runtime, launch and sync API calls of STARTUP_CALL_NS or longer become startup."""
    api = context.kind_in([Kind.RUNTIME.value, Kind.LAUNCH.value, Kind.SYNC.value])
    role[api & (context.events["dur"] >= STARTUP_CALL_NS)] = ROLE_CODE[Role.STARTUP.value]
    return role


def _pageable_copies(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Launch calls whose device copy names pageable memory (categories.PAGEABLE_COPY) become
    copy_pageable, however long they took (after startup_calls: a large copy is no start-up)."""
    events = context.events
    pageable = values_matching(context.name_values, cat.PAGEABLE_COPY)  # (per distinct name)
    if not pageable.any():
        return role
    copies = np.flatnonzero(context.kind_in([Kind.MEMCPY.value]) & codes_matching(context.name_codes, pageable)
                            & (events["correlation"] >= 0))
    calls = np.flatnonzero(context.kind_in([Kind.LAUNCH.value]) & (events["correlation"] >= 0))
    if not len(copies) or not len(calls):
        return role
    correlation = events["correlation"]
    call_of_copy = first_match(correlation[calls], calls, correlation[copies], -1)
    role[call_of_copy[call_of_copy >= 0]] = ROLE_CODE[Role.COPY_PAGEABLE.value]
    return role


def _blocked_launches(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Launch calls of at least BLOCKED_LAUNCH_NS and BLOCKED_LAUNCH_FACTOR times the trace's median
    launch call, whose device work started after the call returned, become launch_blocked."""
    events = context.events
    if not has_device_rows(events):
        return role
    launch = ROLE_CODE[Role.LAUNCH.value]
    calls = np.flatnonzero((role == launch) & (events["correlation"] >= 0))
    if not len(calls):
        return role
    dur = events["dur"]
    long_calls = calls[dur[calls] >= max(BLOCKED_LAUNCH_NS, BLOCKED_LAUNCH_FACTOR * float(np.median(dur[calls])))]
    if not len(long_calls):
        return role
    device = np.flatnonzero((events["device"] >= 0) & (events["correlation"] >= 0))
    correlation, ts = events["correlation"], events["ts"]
    # The start of each long call's first device activity (a graph launch has many): the first
    # match among the activities in time order.
    device = device[np.argsort(ts[device], kind="stable")]
    started = first_match(correlation[device], ts[device], correlation[long_calls], -1)
    queued = (started >= 0) & (started >= ts[long_calls] + dur[long_calls])
    role[long_calls[queued]] = ROLE_CODE[Role.LAUNCH_BLOCKED.value]
    return role


def _compiling_calls(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Calls (role call) around graph building or compilation, at any depth, become call_tracing."""
    building = np.isin(role, role_codes(Role.GRAPH_BUILD, Role.COMPILE))
    if not building.any():
        return role
    parent = context.events["parent"]
    rows = np.flatnonzero(building)
    rows = rows[(parent[rows] < 0) | ~building[np.maximum(parent[rows], 0)]]  # (each subtree's top)
    call, tracing = ROLE_CODE[Role.CALL.value], ROLE_CODE[Role.CALL_TRACING.value]
    current = np.unique(parent[rows])
    while len(current):
        current = current[current >= 0]
        role[current[role[current] == call]] = tracing
        current = np.unique(parent[current])
    return role


def _compile_time_kernels(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Device kernels, copies and memsets whose launching host row's role is graph_build or compile
    become device_compile."""
    events = context.events
    if not has_device_rows(events):
        return role
    device_work = role_codes(Role.DEVICE_KERNEL, Role.DEVICE_MEMCPY, Role.DEVICE_MEMSET)
    kernels = np.flatnonzero(np.isin(role, device_work) & (events["correlation"] >= 0))
    building = role_codes(Role.GRAPH_BUILD, Role.COMPILE)
    # (the host row that shares the kernel's correlation id: a launch call, or on XPlane the
    # launching thread's range named after the kernel)
    calls = np.flatnonzero(np.isin(role, building) & (events["device"] < 0) & (events["correlation"] >= 0))
    if not len(kernels) or not len(calls):
        return role
    correlation = events["correlation"]
    launched_in_build = first_match(correlation[calls], calls, correlation[kernels], -1) >= 0
    role[kernels[launched_in_build]] = ROLE_CODE[Role.DEVICE_COMPILE.value]
    return role


def _xla_cache_hits(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """XLA cluster compile ops shorter than XLA_CACHE_HIT_NS become dispatch."""
    xla_compile = context.named(cat.TF_XLA_COMPILE_OP)
    if xla_compile.any():
        role[xla_compile & (context.events["dur"] < XLA_CACHE_HIT_NS)] = ROLE_CODE[Role.DISPATCH.value]
    return role


def _python_functions(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """The ops named ``X`` and ``XBackward`` (categories.TORCH_PYTHON_FUNCTION_BACKWARD), both in the
    trace, X not in categories.TORCH_OWN_PYTHON_FUNCTIONS: those the rows left dispatch become the
    user's Python (``CompiledFunction`` stays a call)."""
    name_codes, name_values, host_op = context.name_codes, context.name_values, context.host_op
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
    chosen = host_op & codes_matching(name_codes, paired) & (role == ROLE_CODE[Role.DISPATCH.value])
    role[chosen] = ROLE_CODE[Role.PYTHON_USER.value]
    return role


def frames_name_paths(name_values: list[Any], name_codes: np.ndarray, python: np.ndarray) -> bool:
    """Whether any of the ``python`` frames names its file with a folder (torch's Python tracer
    does, ``torch/nn/modules/module.py(1751): _call_impl``; JAX's and TensorFlow's do not)."""
    return any(cat.PATH_IN_NAME.search(str(name_values[code])) for code in unique_sorted(name_codes[python]).tolist()
               if code >= 0)


def _framework_files_by_api_calls(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Files whose frames run inside an API call's wrapper frame (categories.PYTHON_API_BOUNDARY),
    but not those of the outermost frames outside every such call, and files a wrapper calls
    directly: their frames the rows left the user's become the framework's. Only where no frame
    names its file with a folder (:func:`frames_name_paths`)."""
    name_codes, name_values, python = context.name_codes, context.name_values, context.python
    nesting = context.nesting
    code = ROLE_CODE
    boundary = python & context.named(cat.PYTHON_API_BOUNDARY)
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


# Roles of framework work: a range nested in one of these is the framework's runtime scope.
_FRAMEWORK_PARENT_CODES = role_codes(Role.CALL, Role.CALL_TRACING, Role.DISPATCH, Role.VIEW_ALLOC, Role.COMPUTE,
                                     Role.COMPILED_CODE)
_INHERITING = role_codes(Role.GRAPH_BUILD, Role.COMPILE, Role.INPUT)
_HOST_ROLES = role_codes(*(r for r in Role if not r.value.startswith("device_") and r is not Role.STEP))
_PARENTS_OF_BUILTINS = role_codes(Role.PYTHON_USER, Role.PYTHON_FRAMEWORK, Role.COMPILE)
_PYTHON_ROLES = role_codes(Role.PYTHON_USER, Role.PYTHON_FRAMEWORK)
_MATH_ROLE_CODES = role_codes(Role.COMPUTE, Role.COMPILED_CODE)
# Roles of graph building and compilation (anomaly_detection_rows: no anomaly work inside them).
_BUILDING_ROLE_CODES = role_codes(Role.COMPILE, Role.GRAPH_BUILD)
# The roles of the events inside anomaly detection's work that take its role (_anomaly_detection).
_ANOMALY_WORK_ROLE_CODES = role_codes(Role.COMPUTE, Role.COMPILED_CODE, Role.DISPATCH, Role.VIEW_ALLOC,
                                      Role.ANNOTATION, Role.PYTHON_FRAMEWORK, Role.PYTHON_USER)
_NO_ROLE = -1  # the parent role of a row without a parent: in no set of the nesting rules


def _nesting(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Nesting rules, from the top down so they flow through whole subtrees (each row's role from
    its own and its parent's final one: :func:`_nested_role`)."""
    code = ROLE_CODE
    python, host_op = context.python, context.host_op
    tracing = np.array([v.startswith("traced") for v in context.call_values] + [False], dtype=bool)[context.call_codes]
    builtin = context.named(cat.PYTHON_BUILTIN_FRAME) | context.named(cat.STDLIB_FRAME)
    builtin &= python
    thunk = host_op & context.named(cat.XLA_THUNK_NAME)
    text = python & context.named(cat.TENSOR_TO_TEXT_FRAME)
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

    final = context.nesting.states_down(own, 16 * len(ROLE_VALUES), 8 * len(ROLE_VALUES), step, alone=alone)
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
    code = ROLE_CODE
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


def _loose_thunks(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """On a thread whose top level runs XLA module executions (categories.XLA_MODULE_EXECUTION, role
    compiled code), the top-level dispatch ops named like instructions (categories.XLA_THUNK_NAME)
    become compute."""
    events = context.events
    if not len(role) or "track" not in events.columns:
        return role
    code = ROLE_CODE
    depth = events["depth"]
    executions = (role == code[Role.COMPILED_CODE.value]) & context.named(cat.XLA_MODULE_EXECUTION)
    executions &= depth == 0  # at the top of its thread: the thread is there to run programs
    if not executions.any():
        return role
    track = events["track"].codes  # (a category column, like the nesting that reads it)
    worker = np.zeros(int(track.max()) + 1, dtype=bool)
    worker[track[executions]] = True
    loose = (depth == 0) & context.host_op & worker[track] & (role == code[Role.DISPATCH.value])
    loose &= context.named(cat.XLA_THUNK_NAME)
    role[loose] = code[Role.COMPUTE.value]
    return role


def _host_callbacks(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Ops named like JAX's host callbacks (categories.JAX_HOST_CALLBACK) that are math so far become
    the user's Python."""
    callback = context.host_op & context.named(cat.JAX_HOST_CALLBACK)
    role[callback & np.isin(role, _MATH_ROLE_CODES)] = ROLE_CODE[Role.PYTHON_USER.value]
    return role


def _inductor_generated_code(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """Frames of inductor's generated module (categories.INDUCTOR_GENERATED_MODULE) and the Python
    subtrees below them become the framework's Python; the C++ kernels among them
    (categories.INDUCTOR_CPP_KERNEL), compiled code."""
    generated = context.python & context.named(cat.INDUCTOR_GENERATED_MODULE)
    if not generated.any():
        return role
    inside = _subtree(role, generated, context.nesting, _PYTHON_ROLES)
    role[inside] = ROLE_CODE[Role.PYTHON_FRAMEWORK.value]
    role[inside & context.named(cat.INDUCTOR_CPP_KERNEL)] = ROLE_CODE[Role.COMPILED_CODE.value]
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
        name_codes, name_values = text_column(events, "name")
    check = matching_rows(cat.TORCH_ANOMALY_NAN_CHECK, name_values, name_codes)
    stack = matching_rows(cat.TORCH_ANOMALY_STACK, name_values, name_codes)
    if not (check.any() or stack.any()):
        return check, stack
    kind_in = membership(events["kind"])
    host_op = kind_in([Kind.HOST_OP.value])
    parent = events["parent"]
    has_parent = parent >= 0
    up = np.where(has_parent, parent, 0)
    check &= host_op & has_parent
    if check.any():
        check &= matching_rows(cat.TORCH_ENGINE_NODE, name_values, name_codes)[up]
        checked = np.zeros(len(parent), dtype=bool)
        mark = name_values.index(cat.TORCH_ANOMALY_NAN_CHECK_MARK) if cat.TORCH_ANOMALY_NAN_CHECK_MARK in name_values \
            else -2
        checked[parent[check & (name_codes == mark)]] = True
        check &= checked[up]
    stack &= kind_in([Kind.PYTHON.value]) & has_parent
    if stack.any():
        stack &= (host_op & matching_rows(cat.TORCH_ATEN_OP, name_values, name_codes))[up]
        stack &= ~(np.isin(role, _BUILDING_ROLE_CODES) if role is not None else
                   membership(events["role"])([Role.COMPILE.value, Role.GRAPH_BUILD.value]))
    return check, stack


def _anomaly_detection(context: RoleContext, role: np.ndarray) -> np.ndarray:
    """The subtrees that anomaly_detection_rows begins: the checks' become dispatch, the stored
    stacks' the framework's Python; runtime calls inside keep their roles."""
    check, stack = anomaly_detection_rows(context.events, context.name_values, context.name_codes, role)
    for roots, given in ((check, Role.DISPATCH), (stack, Role.PYTHON_FRAMEWORK)):
        if roots.any():
            # Ops and Python below take it; runtime calls keep theirs (a check's `item` waits for
            # a GPU in a sync: that wait stays a sync).
            role[_subtree(role, roots, context.nesting, _ANOMALY_WORK_ROLE_CODES)] = ROLE_CODE[given.value]
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


# The passes, in the order they run. The order matters where passes meet: the tiny-op pass reads
# the rows' compute, before any pass makes more; the nesting reads the user's Python the
# autograd.Function and framework-file passes decided and carries it down; the passes after the
# nesting correct what it carried where a name says better (loose thunks it could not see, host
# callbacks and inductor's code it took for math or the user's); anomaly detection comes last among
# the host passes, so that its subtrees take its roles whatever the passes before gave them; the
# compile-time kernels read their launch calls' final roles.
ROLE_PASSES: tuple[RolePass, ...] = (
    RolePass("tiny_ops", f"An op the rows made `compute` whose largest recorded input holds at most "
             f"`TINY_OP_ELEMENTS` ({TINY_OP_ELEMENTS}) elements is `dispatch`. Where shapes are recorded (torch "
             "`record_shapes=True`: the `elements` column) such an op does at most ~1 µs of math on one core, less "
             "than the call itself costs (`aten::mul` on 8 elements: 2.4 µs own time, torch 2.13 CPU): its own time "
             "is the framework's per-call cost, not math.", _tiny_ops),
    RolePass("startup_calls", "A runtime, launch or sync API call of at least `STARTUP_CALL_NS` "
             f"({STARTUP_CALL_NS // 1_000_000} ms) is `startup`, whatever its name: only one-time start-up takes "
             "that long in one call — CUDA context creation lands in the first runtime call (29.9 s in "
             "`cudaDeviceGetStreamPriorityRange` on the shared A100 alexnet trace), lazy cuDNN / cuBLAS "
             "initialisation in `cudaFree` (6.0 s), lazy module loading in the first `cudaLaunchKernel` (3.1 s); "
             "steady-state runtime calls take µs.", _startup_calls),
    RolePass("blocked_launches", "A launch call of at least `BLOCKED_LAUNCH_NS` "
             f"({BLOCKED_LAUNCH_NS // 1000} µs, HTA's launch-call outlier) and `BLOCKED_LAUNCH_FACTOR` "
             f"({BLOCKED_LAUNCH_FACTOR:g}) times the trace's median launch call, whose device work started only "
             "after the call returned, is `launch_blocked`: it waited for room in the device's queue (the host "
             "~1,000 launches ahead of the device: each launch returns when a kernel finishes). The attribution "
             "reads it as a launch call (`launch_overhead.launch_api`, where the device is idle; where the device "
             "runs, its kernels take the moment); the what-if replay reads it as a wait for the device, so that "
             "faster kernels shorten it (the shared V100 ResNet trace: 72 ms of a 95.7 ms step in such calls; "
             "`--scale kernel=0.5` saved nothing in four of its five steps).", _blocked_launches),
    RolePass("pageable_copies", "A launch call whose device copy names pageable memory (Kineto's `Memcpy DtoH "
             "(Device -> Pageable)`: `categories.PAGEABLE_COPY`) is `copy_pageable`, however long it took: the "
             "driver copies through a pinned staging buffer of its own and the host stays in the call — a copy "
             "to pageable memory returns only once it is done, one from it stages the data before the device "
             "moves it. Where the device moves nothing the host is still copying (memcpy.pageable, not launch "
             "overhead: 1.55 ms of a 52.5 ms `cudaMemcpyAsync` of 64 MB to pageable memory on an H200, after "
             "its 50.9 ms device copy), and where it does the host waits for it (the what-if replay: removing "
             "the copy ends the call). XPlane's copies name no memory kind: their calls stay `launch`.",
             _pageable_copies),
    RolePass("xla_cache_hits", "XLA auto-clustering's compile op (`cluster:_XlaCompile`, "
             "`categories.TF_XLA_COMPILE_OP`, row `compile`) shorter than `XLA_CACHE_HIT_NS` "
             f"({XLA_CACHE_HIT_NS // 1_000_000} ms) is `dispatch`: it runs before every launch of its cluster, "
             "compiles on the first and then looks the executable up in XLA's cache, in tens of µs (47 µs a step on "
             "a CPU capture, where compiling the cluster took 235 ms). The lookups read as 2 % of \"steady graph "
             "building, retracing\".", _xla_cache_hits),
    RolePass("python_functions", "An op `X` and an op `XBackward` in the same trace are a Python "
             "`autograd.Function` (torch records `Function.apply` under the class's name and names its backward "
             "node `<class>Backward`; C++ nodes end in a number, `AddmmBackward0`: "
             "`categories.TORCH_PYTHON_FUNCTION_BACKWARD`): where the rows left them `dispatch`, their own time is "
             "the user's Python (`python_user`), unless the class is one of torch's own "
             "(`categories.TORCH_OWN_PYTHON_FUNCTIONS`, its Python glue). Without the pair, a custom Function's "
             "1.8 ms Python backward read as the autograd engine's dispatch, 95 % of a gap in launch/dispatch (the "
             "host_compute finding now names such ops: \"the ops that run it\").",
             _python_functions),
    RolePass("framework_files_by_api_calls", "Where Python frames are named without their folders (JAX's and "
             "TensorFlow's Python tracers write `$api.py:466 grad_f`), the python rows, which go by package paths, "
             "cannot apply: a file is the framework's (`python_framework`) when its frames run inside one of the "
             "framework's API calls — told by the wrapper frame every public API call runs in, JAX's "
             "`traceback_util.py` and TensorFlow's / Keras's `traceback_utils.py` "
             "(`categories.PYTHON_API_BOUNDARY`) — and it is not a file of the user's loop (the files of the "
             "outermost frames outside every such call), or when it holds what a wrapper calls directly. An "
             "un-jitted `jax.grad` step read as 86 % the user's Python; it is JAX's Python dispatch. A user's "
             "module reached only through the framework (a loss in its own file) counts as the framework's, and "
             "the host_compute finding says that what is left may hold some of it.", _framework_files_by_api_calls),
    RolePass("nesting", "Roles carried down the nesting, from the top, through whole subtrees: everything "
             "inside graph building, compilation or input takes that role (ops run while tracing, a map "
             "function's ops); a framework op directly inside compiled code is `compute` (an XLA thunk, an aten op "
             "it calls), and a sync directly inside it is the program waiting for its own work (XLA's "
             "`CpuExecutable::ExecuteAsyncOnStream` → `BlockUntilReady` while its thunks run on worker threads): "
             "`compiled_code`, where `tf.function(jit_compile=True)` read 1 % sync wait with \"avoid .item()\" "
             "advice; a call that traced its function (stat `tf_function_call` = traced-…), and any call inside "
             "one, is `call_tracing`; a range opened inside a framework op or call is the framework's runtime "
             "scope (`dispatch`); a Python builtin of no framework (`<built-in method append of list object>`) or "
             "a standard-library frame takes the role of the frame that called it; Python below a framework call "
             "(`call`: JAX's `np.asarray(jax.Array)` fetching a value, with `$array.py:615 _value` waiting inside "
             "it) is the framework's, where the tracer names files without folders; the framework's Python inside "
             "a tensor's formatting as text (`categories.TENSOR_TO_TEXT_FRAME`: Tensor `__repr__` / `__str__` / "
             "`__format__` and `torch/_tensor_str.py`, with the builtins they call) is the user's (`print(loss)` "
             "each step read as framework Python dispatch; the few ops it runs stay ops), and so is Python called "
             "back from inside the math (an XLA thunk running a host callback: `jax.debug.print`, "
             "`jax.pure_callback`), JAX's callback plumbing included.", _nesting),
    RolePass("compiling_calls", "A call (`call`) that holds graph building or compilation, at any depth, is "
             "`call_tracing`, as a tf.function call that traced is by its stat: its "
             "moments with nothing recorded are the new graph's tracing and set-up (`graph_build.instantiate`), not "
             "the call's runtime. JAX records no stat: a jitted call that retraces holds the compile's ranges, and "
             "the unrecorded time around them (Python tracing, with the Python tracer off) read as "
             "`launch_overhead.call`, which the replay without graph building kept.", _compiling_calls),
    RolePass("loose_thunks", "XLA thunks at the top of a worker thread are `compute`. XLA's CPU runtime runs "
             "parts of a program on a pool of threads, where the instructions (`dot.2`, `ynn_fusion`) are often "
             "recorded with nothing around them, so the nesting (a framework op directly inside compiled code) "
             "does not see them. A thread that runs XLA module executions at its top level "
             "(`categories.XLA_MODULE_EXECUTION`, role `compiled_code`; not a thread that runs them inside a call, "
             "like TensorFlow's step thread) is such a worker: its top-level ops named like instructions "
             "(`categories.XLA_THUNK_NAME`) that the rows left `dispatch` are the program's math.", _loose_thunks),
    RolePass("host_callbacks", "JAX's host callbacks (`categories.JAX_HOST_CALLBACK`: `pure_callback.N`, "
             "`io_callback.N`, `debug_callback.N`, `debug_print.N`, named after JAX's primitives) are the user's "
             "Python (`python_user`), not math: the XLA program waits in the instruction while the host runs the "
             "callback, and without JAX's Python tracer the instruction holds the whole callback (2 ms of Python "
             "in a `pure_callback` read as kernel time, with compute_bound first). After the nesting, which reads "
             "the instruction as math to make the Python frames under it the user's where the tracer records "
             "them.", _host_callbacks),
    RolePass("inductor_generated_code", "torch inductor's generated module (`<cache dir>/<key[1:3]>/<key>.py`, "
             "key `c` + hash: `categories.INDUCTOR_GENERATED_MODULE`), with the Python it calls, is "
             "`python_framework`, the framework's runtime: inside `## Call CompiledFxGraph` (compiled code) the "
             "nesting took it for Python called back from the math, the user's. The fused C++ kernels it calls "
             "on CPU (`<built-in function kernel>`: `categories.INDUCTOR_CPP_KERNEL`) are `compiled_code`, the "
             "math. `tests/data/torch_cpu_compile/whole_python_events`' steady state read 5 % the user's Python; "
             "the cold step of a compile still holds its compilation (10.7 s).", _inductor_generated_code),
    RolePass("anomaly_detection", "The work torch's autograd anomaly detection adds "
             "(`torch.autograd.set_detect_anomaly(True)`, a debugging switch), whole subtrees, is the "
             "framework's, decided last: the NaN checks the engine runs on each backward node's outputs "
             "(`aten::isnan`, `aten::_is_any_true`, `aten::item` directly inside the node's range, marked by "
             "`_is_any_true`: `categories.TORCH_ANOMALY_NAN_CHECK`) are `dispatch`, not the model's math; the "
             "Python stack each forward op that records a node stores (`torch/fx/traceback.py(…): format_stack` "
             "directly inside an ATen op, outside compilation, with the standard library's frames under it: "
             "`categories.TORCH_ANOMALY_STACK`) is `python_framework` — inside a compute op it would read as "
             "Python called back from the math, the user's. Runtime calls inside keep their roles (a check's "
             "`item` waiting for a GPU stays a sync). With Python events, `tests/data/torch_cpu_anomaly`'s 1.9 ms "
             "a step of stored stacks read as 43.8 % graph building; without them the stacks stay inside the "
             "forward ops' own time, where no rule can tell them apart, and the `anomaly_detection` finding says "
             "so.", _anomaly_detection),
    RolePass("compile_time_kernels", "A device kernel, copy or memset whose launching host row (the launch "
             "call with its correlation id; on XPlane, the launching thread's range named after the kernel) the "
             "passes above made `graph_build` or `compile` is `device_compile`: the compiler's work on the "
             "device, not the step's math or data — torch.compile runs the graph's ops while it traces and lowers "
             "a new shape (97 ms of kernels a step, launched from inside its compile ranges, in "
             "benchmarks/truth/cases/gpu-compile-recompile on an H200, which read as kernel time and stayed in "
             "the step replayed without graph building: 104 ms predicted against the fix's 2.3 ms), and XLA's "
             "GEMM autotuner launches its candidate kernels and buffer copies from PjRt's compile threads "
             "(gpu-jax-retrace: 36.6 ms of kernels and 6.5 ms of copies a step). Decided after every pass that "
             "sets a host row's role.", _compile_time_kernels),
)


def assign_role_codes(events: Table) -> np.ndarray:
    """The role of every row as an index into :data:`traceview.roles.ROLE_VALUES` (int8): the
    rows of the role table, then :data:`ROLE_PASSES` in order."""
    # The rows and the passes read the name and tf_function_call columns: their codes are made once.
    names = text_column(events, "name")
    calls = text_column(events, "fn_call")
    role = rule_role_codes(events, names, calls)
    kind_in = membership(events["kind"])
    context = RoleContext(events, *names, *calls, kind_in, host_op=kind_in([Kind.HOST_OP.value]),
                          python=kind_in([Kind.PYTHON.value]), nesting=Nesting(events["parent"], events["depth"]))
    for role_pass in ROLE_PASSES:
        role = role_pass.run(context, role)
    return role


def assign_roles(events: Table) -> np.ndarray:
    """The role of every row (object array of :class:`traceview.roles.Role` values), rows then passes."""
    return np.array(ROLE_VALUES, dtype=object)[assign_role_codes(events)]


def passes_markdown() -> str:
    """The passes, in order, as a markdown table (docs/attribution.md embeds it; a test checks it)."""
    lines = ["| order | pass | what it decides, and why |", "|---|---|---|"]
    for i, role_pass in enumerate(ROLE_PASSES, 1):
        decides = role_pass.decides.replace("|", "\\|")  # (a "|" would end the cell)
        lines.append(f"| {i} | `{role_pass.name}` | {decides} |")
    return "\n".join(lines) + "\n"
