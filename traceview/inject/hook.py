"""Inside the profiled process: find the training steps and profile the requested window of them.

:func:`install` runs at interpreter start-up (from the ``sitecustomize.py`` ``traceview run``
writes). It only puts an import watcher on ``sys.meta_path``; when the script imports a framework,
that framework's step source is installed (``torch_hooks``, ``tf_hooks``, ``jax_hooks``):

- torch: a step ends when the first optimizer to step returns from ``step()`` (a global
  optimizer step post-hook); step 1 begins when the first optimizer is constructed, each later
  step where the previous one ended.
- Keras ``Model.fit``: a callback appended to ``fit``'s callbacks; a step is one train batch
  (``on_train_batch_begin`` → ``on_train_batch_end``), profiled with the Keras backend's profiler.
- a TensorFlow custom loop: the outermost ``tf.function`` that is called a second time first is
  the train step; a step ends when a call of it returns.
- JAX: the same with the functions ``jax.jit`` makes.

The first source to reach a step claims the run (in ``auto`` mode whichever framework that is);
the others stay idle. Steps are numbered from 1. The profiler starts when step ``first`` begins
and stops when step ``last`` ends, and each step in between is marked the framework's way
(``ProfilerStep#N``, ``Trace('train', step_num=N, _r=1)``, ``StepTraceAnnotation``), so
``traceview diagnose`` finds the steps by their markers. Each window step is also timed with
``perf_counter_ns`` (after its marker opens, before it closes), which a calibration run repeats
without the profiler.

Nothing here may break the script: a failing hook writes one ``traceview:`` line to stderr and
stands down.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import threading
import time
from typing import Any, Callable

from . import protocol

_RUN: "Run | None" = None
FAILED = object()  # what Run._guard returns when the call raised


def install() -> None:
    """Start-up: read the settings, watch for framework imports (no framework is imported here)."""
    global _RUN
    settings = protocol.Settings.from_env(os.environ)
    if settings is None or _RUN is not None or not os.path.isdir(settings.status_dir):
        return  # not under traceview run, or a process that outlived it
    _touch(os.path.join(settings.status_dir, protocol.LOADED_NAME))
    _RUN = Run(settings)
    # Every framework's import is noted (the parent names them when no step was found); a step
    # source is installed where its framework is the one asked for. Keras 3 runs on TensorFlow,
    # JAX or torch: its fit callback claims the run for its backend's framework.
    watched = {
        "torch": _source(settings, ("torch",), "torch_hooks", "install"),
        "keras": _source(settings, ("tf", "jax", "torch"), "tf_hooks", "install_keras"),
        "tf_keras": _source(settings, ("tf",), "tf_hooks", "install_keras"),
        "tensorflow": _source(settings, ("tf",), "tf_hooks", "install_tf_function"),
        "jax": _source(settings, ("jax",), "jax_hooks", "install"),
    }
    sys.meta_path.insert(0, _ImportWatcher(watched, _RUN))
    atexit.register(_RUN.at_exit)


def _source(settings: protocol.Settings, frameworks: tuple[str, ...], module: str,
            function: str) -> Callable[[Any], None]:
    """The import callback that installs ``module.function`` as a step source, when wanted."""

    def install_source(framework_module: Any) -> None:
        if settings.framework == "auto" or settings.framework in frameworks:
            getattr(_load(module), function)(_RUN, framework_module)

    return install_source


def _load(name: str) -> Any:
    import importlib

    return importlib.import_module(f"{__package__}.{name}")


def _touch(path: str) -> None:
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError:
        pass


def warn(message: str) -> None:
    """One line on the script's stderr."""
    try:
        sys.stderr.write(f"traceview: {message}\n")
    except Exception:  # noqa: BLE001 - a closed stderr must not break the script
        pass


class _ImportWatcher:
    """A ``sys.meta_path`` finder that runs a callback right after a watched top-level module has
    executed. It finds the module with the other finders and wraps that loader's
    ``exec_module`` for this one import, so the module and its loader stay what they are."""

    def __init__(self, watched: dict[str, Callable[[Any], None]], run: "Run") -> None:
        self._watched = watched
        self._run = run
        self._busy: set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self._watched or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.discard(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        callback = self._watched.pop(fullname)
        run = self._run
        exec_module = loader.exec_module

        def exec_then_hook(module: Any) -> None:
            try:
                exec_module(module)
            finally:
                try:
                    del loader.exec_module
                except AttributeError:
                    pass
            run.imported.append(fullname)
            try:
                callback(module)
            except Exception as err:  # noqa: BLE001 - the script goes on without this source
                warn(f"could not hook {fullname} ({type(err).__name__}: {err}); its steps are not counted")

        try:
            loader.exec_module = exec_then_hook
        except (AttributeError, TypeError):
            return spec
        return spec

    def invalidate_caches(self) -> None:
        return None


class Run:
    """The step window of this process: which source counts steps, the profiler, the timings."""

    def __init__(self, settings: protocol.Settings) -> None:
        self.settings = settings
        self.pid = os.getpid()
        self.first = settings.first
        self.last = settings.last
        self.owner: str | None = None  # the source that counts steps ("" when another process claimed)
        self.framework: str | None = None
        self.source_detail = ""
        self.session: Any = None
        self.started = False
        self.stopped = False
        self.current: int | None = None  # the step open now
        self.done = 0  # steps completed
        self.inside_fit = 0  # Keras fit running (its own tf.function calls are not steps)
        # Whether a counted call runs on this thread now: shared by every CallSteps, so a call
        # made inside another (an optimizer step inside a tf.function being traced) is not counted.
        self.calls = threading.local()
        self.imported: list[str] = []
        self.times: dict[int, float] = {}
        # Per window step: seconds the process's threads were runnable but waited for a CPU.
        self.cpu_waits: dict[int, float] = {}
        self._wait0: int | None = None
        self.trace: str | None = None
        self.notes: list[str] = []
        self._t0 = 0
        self.guard: Any = None  # the memory guard while the profiler runs (memory_guard.py)
        self.memory_stop: dict[str, Any] | None = None  # why and where the guard ended the window
        self._in_hook = False  # begin/end running: a stop the guard asks for waits for them
        self._stop_asked = False

    # -- who counts -------------------------------------------------------------------------------
    def claim(self, source: str, framework: str, detail: str) -> bool:
        """True when ``source`` counts this run's steps: it is the first source to reach a step in
        this process, its framework is the one asked for, and no other process claimed first."""
        if self.owner is not None:
            return self.owner == source
        if self.settings.framework not in ("auto", framework) or os.getpid() != self.pid:
            return False
        if not protocol.claim(self.settings.status_dir):
            self.owner = ""
            return False
        self.owner = source
        self.framework = framework
        self.source_detail = detail
        return True

    def owns(self, source: str) -> bool:
        return self.owner == source and os.getpid() == self.pid

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- steps ------------------------------------------------------------------------------------
    def in_window(self, n: int) -> bool:
        return self.first <= n <= self.last

    def begin(self, n: int) -> None:
        self._in_hook = True
        try:
            self.current = n
            if self.in_window(n):
                if self.settings.profile and not self.started:
                    self._start()
                if self.started and not self.stopped:
                    self._guard("mark a step", self.session.begin, n)
        finally:
            self._in_hook = False
        self._wait0 = runqueue_wait_ns() if self.in_window(n) else None
        self._t0 = time.perf_counter_ns()
        if self._stop_asked:
            self._stop_inside_step()

    def end(self, n: int) -> None:
        t1 = time.perf_counter_ns()
        wait1 = runqueue_wait_ns() if self._wait0 is not None else None
        if self.current != n:
            return
        self._in_hook = True
        try:
            self.current = None
            self.done = n
            if self.in_window(n):
                self.times[n] = (t1 - self._t0) / 1e9
                if wait1 is not None and self._wait0 is not None:
                    self.cpu_waits[n] = (wait1 - self._wait0) / 1e9
                if self.started and not self.stopped:
                    self._guard("mark a step", self.session.end, n)
                    self._end_window_early_for_memory(n)
            if n == self.last:
                self._stop()
                self.write_status()
        finally:
            self._in_hook = False

    # -- the memory guard -------------------------------------------------------------------------
    def _end_window_early_for_memory(self, n: int) -> None:
        """Make ``n`` the window's last step when one more step's events would pass the guard's limit."""
        guard = self.guard
        profiled = n - self.first + 1
        if guard is None or n >= self.last or not guard.next_step_would_pass(profiled):
            return
        from .memory_guard import STOP_EXPANSION, size_text

        growth = guard.growth()
        kept = f"step {n}" if n == self.first else f"steps {self.first}-{n}"
        self.note(f"profiled {kept} of {self.first}-{self.last}: the profiler's events took "
                  f"{size_text(growth)} ({size_text(growth / profiled)} a step), and one more step would pass "
                  f"{size_text(guard.limit)}, what they may take so that stopping the profiler (~{STOP_EXPANSION:g}x "
                  f"that) stays within {size_text(guard.budget)} ({self._budget_source()}); "
                  f"{self._memory_advice()}")
        self.memory_stop = {"inside_step": None, "after_step": n, "growth_bytes": growth, "limit_bytes": guard.limit,
                            "budget_bytes": guard.budget}
        self.last = n

    def _stop_inside_step(self) -> None:
        """The guard's limit passed inside a step: stop the profiler now, dropping that step."""
        if self._in_hook:
            self._stop_asked = True  # begin/end finish first, then come back here
            return
        self._stop_asked = False
        guard = self.guard
        if guard is None or self.stopped:
            return
        from .memory_guard import size_text

        n = self.current
        growth = guard.growth()
        self.note(f"the profiler was stopped inside step {n}: its events had taken {size_text(growth)}, past "
                  f"{size_text(guard.limit)}, what they may take so that stopping the profiler stays within "
                  f"{size_text(guard.budget)} ({self._budget_source()}); step {n} is not in the trace; "
                  f"{self._memory_advice(whole_step=n == self.first)}")
        self.memory_stop = {"inside_step": n, "after_step": None, "growth_bytes": growth, "limit_bytes": guard.limit,
                            "budget_bytes": guard.budget}
        self._stop()  # (while step n is in the window: its open marker is dropped)
        if n is not None:
            self.last = n - 1
        self.write_status()

    def _budget_source(self) -> str:
        if self.settings.profiler_memory > 0:
            return "--profiler-memory"
        from .memory_guard import AUTOMATIC_SHARE

        return f"{AUTOMATIC_SHARE:.0%} of the memory available when it started; --profiler-memory sets it"

    def _memory_advice(self, whole_step: bool = False) -> str:
        if self.framework == "torch" and self.settings.python_events:
            return "--no-python-events records far fewer events a step"
        if whole_step:
            return ("one step this large needs more: a larger --profiler-memory where the machine has it, or a "
                    "smaller step (fewer batches or iterations in it)")
        return "a shorter --steps window keeps the capture within it"

    def _start(self) -> None:
        assert self.framework is not None
        self.started = True
        session = self._guard("create the profiler session", _session_for, self.framework,
                              self.settings.trace_dir, self.settings.python_events)
        if session is FAILED or self._guard("start the profiler", session.start) is FAILED:
            self.stopped = True
            return
        self.session = session
        from .memory_guard import MemoryGuard

        guard = self._guard("watch the profiler's memory", MemoryGuard.for_budget, self.settings.profiler_memory,
                            self._stop_inside_step)
        self.guard = None if guard is FAILED else guard

    def _stop(self) -> None:
        if not self.started or self.stopped:
            return
        self.stopped = True
        if self.guard is not None:
            self.guard.close()
        if self.session is not None:
            # A step still open (the script ended inside the window) must not be in the trace as a
            # step: its marker stays open, and the session drops it where the profiler closes it.
            open_step = self.current if self.current is not None and self.in_window(self.current) else None
            trace = self._guard("stop the profiler and write the trace", self.session.stop, open_step)
            self.trace = None if trace is FAILED else trace

    def _guard(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``; a failure becomes a note and a stderr line, and :data:`FAILED`."""
        try:
            return fn(*args)
        except Exception as err:  # noqa: BLE001 - never break the script
            message = f"could not {what}: {type(err).__name__}: {err}"
            self.note(message)
            warn(message)
            return FAILED

    # -- what the parent reads --------------------------------------------------------------------
    def at_exit(self) -> None:
        if os.getpid() != self.pid or not os.path.isdir(self.settings.status_dir):
            return  # a forked child inherited this handler, or traceview run is over
        if self.owner:
            self._stop()  # the script ended inside the window
            self.write_status()
        elif self.imported and self.owner is None:
            path = os.path.join(self.settings.status_dir, f"{protocol.IMPORTED_PREFIX}{self.pid}.json")
            self._guard("write the status", protocol.write_json, path,
                        {"pid": self.pid, "imported": self.imported})

    def write_status(self) -> None:
        session = self.session
        status = {
            "pid": self.pid,
            "framework": self.framework,
            "source": self.owner,
            "source_detail": self.source_detail,
            "first": self.first,
            "last": self.last,
            "steps_seen": self.done,
            "times_s": {str(n): t for n, t in sorted(self.times.items())},
            "cpu_wait_s": {str(n): t for n, t in sorted(self.cpu_waits.items())},
            "profiled": bool(self.started and session is not None),
            "trace": self.trace,
            "trace_format": getattr(session, "trace_format", None),
            "profiler": _or_none(self._guard("describe the profiler", session.describe)) if session else None,
            "facts": _or_none(self._guard("read versions and threads", _facts, self.framework)),
            "notes": list(self.notes),
            "python_events": self.settings.python_events,
            "memory_stop": self.memory_stop,
        }
        self._guard("write the status", protocol.write_json,
                    os.path.join(self.settings.status_dir, protocol.STATUS_NAME), status)


def runqueue_wait_ns() -> int | None:
    """Nanoseconds the process's threads have spent runnable but not running — waiting for a CPU
    another process (or more threads than cores) held — summed over its threads (Linux
    ``/proc/self/task/*/schedstat``, its second field); None where the system does not say."""
    total = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/schedstat", encoding="ascii") as fh:
                total += int(fh.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue  # (a thread that ended meanwhile)
    return total


class ProfilerSession:
    """A framework's profiler over the window: ``start()``, a marker around each step,
    ``stop(open_step)`` → the trace's path (``open_step``: a step begun but not ended, whose
    marker must not be in the trace). Subclasses give ``start``, ``marker``, ``stop``,
    ``describe`` and ``trace_format``."""

    trace_format = ""

    def __init__(self, trace_dir: str, python_events: bool = True) -> None:
        self.trace_dir = trace_dir
        self.python_events = python_events  # record the script's Python calls, where the profiler can
        self._marker: Any = None

    def marker(self, n: int) -> Any:
        """The context manager that marks step ``n``."""
        raise NotImplementedError

    def begin(self, n: int) -> None:
        self._marker = self.marker(n)
        self._marker.__enter__()

    def end(self, n: int) -> None:
        if self._marker is not None:
            self._marker.__exit__(None, None, None)
            self._marker = None


def _or_none(value: Any) -> Any:
    return None if value is FAILED else value


class CallSteps:
    """Steps counted by the calls of one function: a TensorFlow custom loop's ``tf.function``, a
    jitted JAX function, or in an eager loop a call made once a step (:meth:`call_from_line`: a
    tape left, an optimizer applied, a gradient function called; tf_hooks, jax_hooks).
    Only outermost calls count: not those made while another counted call runs (a function being
    traced, an optimizer's ``apply`` under its ``apply_gradients``), nor Keras ``fit``'s own. The
    first function called a second time is taken for the train step (one called once, such as an
    initialiser, is not); from then on a step ends when a call of it returns and the next step
    begins there. Its step 1 is over before it is recognised: a window from step 1 starts at step
    2, and step 2 begins at the call itself.

    A function is known by its identity, or by a ``key`` the caller gives: an eager loop's calls
    are known by the line of the script that makes them, since the object called is often new
    each step (a ``GradientTape``, ``jax.grad(loss)`` written inside the loop)."""

    def __init__(self, run: Run, source: str, framework: str, what: str,
                 detail: str = "calls of the {what} {name}") -> None:
        self.run = run
        self.source = source
        self.framework = framework
        self.what = what  # "a {what} train step is recognised …"
        self.detail = detail  # which rule found the steps, as the run names it
        self._called_once: dict[Any, Any] = {}
        self._step: Any = None

    def call(self, fn: Any, call: Callable[..., Any], args: Any, kwargs: Any, key: Any = None,
             name: Callable[[], str] | None = None) -> Any:
        """``call(*args, **kwargs)`` for the function ``fn`` (known by ``key`` when given, and
        named by ``name()`` in the run's notes: asked only when it is taken for the train step),
        counting the step it ends."""
        run = self.run
        calls = run.calls
        if getattr(calls, "inside", False) or run.inside_fit or run.owner not in (None, self.source):
            return call(*args, **kwargs)
        key = id(fn) if key is None else key
        calls.inside = True
        try:
            self._entering(key, fn, name or (lambda: getattr(fn, "__name__", "?")))
            result = call(*args, **kwargs)
        finally:
            calls.inside = False
        if self._step is not None and key == self._step and run.current is not None:
            n = run.current
            run.end(n)
            run.begin(n + 1)
        return result

    def call_from_line(self, call: Callable[..., Any], args: Any, kwargs: Any, label: Callable[[], str]) -> Any:
        """:meth:`call` for a call an eager loop makes once a step, known by the script's line that
        called the wrapper calling this (the object called is often new each step), and named
        ``"<label()> at <file>:<line>"``."""
        line = caller_line(3)  # (0: caller_line, 1: here, 2: the wrapper, 3: the script's line)
        return self.call(call, call, args, kwargs, key=line, name=lambda: f"{label()} at {where(line)}")

    def _entering(self, key: Any, fn: Any, name: Callable[[], str]) -> None:
        if self._step is not None:
            return
        if key not in self._called_once:
            self._called_once[key] = fn  # kept alive, so an id used as its key is not reused
            return
        run = self.run
        if not run.claim(self.source, self.framework, self.detail.format(what=self.what, name=name())):
            return
        self._step = key
        self._called_once.clear()
        run.done = 1
        if run.first < 2:
            run.first = 2
            run.note(f"a {self.what} train step is recognised at its second call: the capture starts at step 2")
        if run.first == 2:
            run.note("step 2 begins at the train step's call; later steps begin where the previous call returned")
        run.begin(2)


# How a call an eager loop makes once a step names the rule that found the steps.
EAGER_DETAIL = "an eager loop's {name}, once a step"


def caller_line(depth: int = 2) -> tuple[str, int]:
    """``(file, line)`` of the frame ``depth`` levels above this one: where the script called."""
    frame = sys._getframe(depth)
    return frame.f_code.co_filename, frame.f_lineno


def where(line: tuple[str, int]) -> str:
    return f"{os.path.basename(line[0])}:{line[1]}"


_HOOK_MODULE = {"torch": "torch_hooks", "tf": "tf_hooks", "jax": "jax_hooks"}


def _session_for(framework: str, trace_dir: str, python_events: bool) -> Any:
    return _load(_HOOK_MODULE[framework]).Session(trace_dir, python_events)


def _facts(framework: str | None) -> dict[str, Any]:
    import platform

    facts: dict[str, Any] = {"versions": {"python": platform.python_version()}}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        facts["versions"]["numpy"] = getattr(numpy, "__version__", "?")
    if framework in _HOOK_MODULE:
        more = _load(_HOOK_MODULE[framework]).facts()
        facts["versions"].update(more.pop("versions", {}))
        facts.update(more)
    return facts
