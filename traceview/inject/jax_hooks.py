"""JAX inside the profiled process: calls of jitted functions are the steps; jax.profiler records.

Loaded only once the script has imported jax. ``jax.jit`` is wrapped so that the calls of the
functions it makes are counted by :class:`~.hook.CallSteps`, as a TensorFlow custom loop's: the
first jitted function called a second time is the train step, a step ends when a call of it
returns, and a window starting at step 1 starts at step 2. A loop with no ``jax.jit`` (eager, op by
op) is counted by the calls of the functions ``jax.grad`` and ``jax.value_and_grad`` make
(:data:`GRADIENT_TRANSFORMS`), each known by the script's line that calls it, since such a function
is often made anew inside the loop; inside a jitted function they are not counted. JAX dispatches asynchronously: a step's device work
can run on into the next step unless the loop waits for a result (``float(loss)``,
``block_until_ready``) — say so in the report's reading.

The profiler is ``jax.profiler.start_trace``/``stop_trace`` (TensorBoard layout, like TensorFlow),
with the Python tracer and HLO protos off, which keep a few steps to a small file; each step is a
``StepTraceAnnotation('train', step_num=N)``.
"""

from __future__ import annotations

import functools
from typing import Any

from .hook import EAGER_DETAIL, CallSteps, ProfilerSession
from .tf_hooks import STEP_MARKER, newest_xplane

SOURCE = "jax.jit"
EAGER_SOURCE = "jax.grad"
# The transformations whose functions an un-jitted training loop calls once a step (jax/_src/api.py;
# optax and flax loops take their gradients through them too).
GRADIENT_TRANSFORMS = ("grad", "value_and_grad")


class _Jitted:
    """A jitted function whose calls :class:`~.hook.CallSteps` counts; everything else (``lower``,
    ``trace``, ``clear_cache`` …) is the jitted function's own."""

    def __init__(self, jitted: Any, steps: Any) -> None:
        functools.update_wrapper(self, jitted, updated=())
        self._steps = steps

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._steps.call(self, self.__wrapped__, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "__wrapped__":  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


def install(run: Any, jax: Any) -> None:
    original_jit = jax.jit
    steps = CallSteps(run, SOURCE, "jax", "jitted function")

    @functools.wraps(original_jit)
    def jit(fun: Any = None, *args: Any, **kwargs: Any) -> Any:
        if fun is None:  # used as @jax.jit(static_argnums=...)
            return lambda f: jit(f, *args, **kwargs)
        return _Jitted(original_jit(fun, *args, **kwargs), steps)

    jax.jit = jit
    eager = CallSteps(run, EAGER_SOURCE, "jax", "jax.grad", detail=EAGER_DETAIL)
    for name in GRADIENT_TRANSFORMS:
        setattr(jax, name, _counted_transform(eager, getattr(jax, name), name))


def _counted_transform(steps: CallSteps, transform: Any, name: str) -> Any:
    """``jax.<name>`` whose functions count the steps of an eager loop."""

    @functools.wraps(transform)
    def counted_transform(fun: Any, *args: Any, **kwargs: Any) -> Any:
        transformed = transform(fun, *args, **kwargs)

        @functools.wraps(transformed)
        def counted(*call_args: Any, **call_kwargs: Any) -> Any:
            return steps.call_from_line(transformed, call_args, call_kwargs,
                                        lambda: f"jax.{name}({getattr(fun, '__name__', '?')}) called")

        return counted

    return counted_transform


class Session(ProfilerSession):
    """One jax.profiler trace over the window; one xplane.pb."""

    trace_format = "xplane"

    def start(self) -> None:
        import jax

        try:
            options = jax.profiler.ProfileOptions()
            options.python_tracer_level = 0
            options.enable_hlo_proto = False
            jax.profiler.start_trace(self.trace_dir, profiler_options=options)
        except (AttributeError, TypeError):  # an older jax without ProfileOptions
            jax.profiler.start_trace(self.trace_dir)

    def marker(self, n: int) -> Any:
        import jax

        return jax.profiler.StepTraceAnnotation(STEP_MARKER, step_num=n)

    def stop(self, open_step: int | None = None) -> str:
        # A marker never closed (open_step) is not recorded by the JAX profiler.
        import jax

        jax.profiler.stop_trace()
        return newest_xplane(self.trace_dir)

    def describe(self) -> dict[str, Any]:
        return {
            "profiler": "jax.profiler.start_trace/stop_trace",
            "options": "python_tracer_level 0, enable_hlo_proto False",
            "step_marker": f"StepTraceAnnotation('{STEP_MARKER}', step_num=N), N = the script's step number from 1",
            "step_marker_offset": 1,
            "logdir_layout": "plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb",
        }


def facts() -> dict[str, Any]:
    import jax

    versions = {"jax": jax.__version__}
    try:
        import jaxlib

        versions["jaxlib"] = jaxlib.__version__
    except ImportError:
        pass
    first = jax.devices()[0]
    device = {"kind": first.platform, "name": getattr(first, "device_kind", None)}
    return {"versions": versions, "threads": {}, "device": device}
