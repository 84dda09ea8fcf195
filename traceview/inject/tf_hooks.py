"""TensorFlow and Keras inside the profiled process: fit batches or tf.function calls are the steps.

Loaded only once the script has imported keras (or tf_keras) or tensorflow.

- Keras ``Model.fit``: ``fit`` is wrapped to append one callback to the callbacks it is given; a
  step is one train batch, from ``on_train_batch_begin`` to ``on_train_batch_end`` (Keras 3 fetches
  the batch inside its train function, so the fetch is in the step). The profiler is the Keras
  backend's: TensorFlow's, JAX's or torch's.
- A custom loop (``tf.function`` outside ``fit``): ``Function.__call__`` is wrapped and the calls
  are counted by :class:`~.hook.CallSteps` (the outermost function called a second time first is
  the train step; a step ends when a call of it returns, so the loop's input and Python between
  calls are in the step).
- An eager custom loop (no ``tf.function``): the calls it makes once a step are counted the same
  way, each known by the script's line that makes it — leaving a ``tf.GradientTape``, a Keras
  optimizer's ``apply_gradients`` / ``apply`` / ``stateless_apply`` (:data:`EAGER_TF_SOURCE`,
  :data:`OPTIMIZER_STEP_METHODS`). Inside a ``tf.function`` or ``fit`` these calls are not counted.

The TensorFlow profiler writes ``<trace_dir>/plugins/profile/<run>/<host>.xplane.pb``; each step
is ``tf.profiler.experimental.Trace('train', step_num=N, _r=1)``, the marker the TensorFlow
profiler's own step detection reads.
"""

from __future__ import annotations

import functools
import glob
import os
import sys
from typing import Any

from .hook import EAGER_DETAIL, CallSteps, ProfilerSession

FIT_SOURCE = "keras.Model.fit"
FUNCTION_SOURCE = "tf.function"
EAGER_TF_SOURCE = "tf.GradientTape"
EAGER_OPTIMIZER_SOURCE = "keras optimizer"
# The methods a custom loop calls on a Keras optimizer once a step. Keras 3
# (keras/src/optimizers/base_optimizer.py): apply_gradients(grads_and_vars) calls apply(grads,
# vars), and stateless_apply is the functional form a JAX-backend loop calls; tf_keras (Keras 2)
# has apply_gradients. Each is wrapped on the class that defines it, so every optimizer has it.
OPTIMIZER_STEP_METHODS = ("apply_gradients", "apply", "stateless_apply")
STEP_MARKER = "train"
_KERAS_BACKENDS = {"tensorflow": "tf", "jax": "jax", "torch": "torch"}
_CALLBACKS_POSITION = 5  # fit(x, y, batch_size, epochs, verbose, callbacks, ...)


def install_keras(run: Any, keras: Any) -> None:
    model_class = keras.Model
    original_fit = model_class.fit
    callback_class = _callback_class(keras, run)
    _install_optimizer_steps(run, keras)

    @functools.wraps(original_fit)
    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        callback = callback_class()
        callback.model_name = type(self).__name__
        if len(args) > _CALLBACKS_POSITION:
            args = (*args[:_CALLBACKS_POSITION], _with_callback(args[_CALLBACKS_POSITION], callback),
                    *args[_CALLBACKS_POSITION + 1:])
        else:
            kwargs["callbacks"] = _with_callback(kwargs.get("callbacks"), callback)
        run.inside_fit += 1
        try:
            return original_fit(self, *args, **kwargs)
        finally:
            run.inside_fit -= 1

    model_class.fit = fit


def _with_callback(callbacks: Any, callback: Any) -> Any:
    if callbacks is None:
        return [callback]
    if isinstance(callbacks, (list, tuple)):
        return [*callbacks, callback]
    if hasattr(callbacks, "append"):  # a CallbackList
        callbacks.append(callback)
    return callbacks


def _keras_framework(keras: Any) -> str:
    """The framework Keras runs on: ``tf``, ``jax`` or ``torch``."""
    try:
        name = keras.backend.backend()
    except AttributeError:  # tf_keras (Keras 2) runs on TensorFlow only
        name = "tensorflow"
    return _KERAS_BACKENDS.get(name, "tf")


def _install_optimizer_steps(run: Any, keras: Any) -> None:
    """Count a custom loop's optimizer steps: each method of :data:`OPTIMIZER_STEP_METHODS`,
    wrapped on the class of the optimizer's hierarchy that defines it."""
    optimizer_class = keras.optimizers.Optimizer
    steps = CallSteps(run, EAGER_OPTIMIZER_SOURCE, _keras_framework(keras), "Keras optimizer", detail=EAGER_DETAIL)
    for method in OPTIMIZER_STEP_METHODS:
        owner = next((c for c in optimizer_class.__mro__ if method in vars(c)), None)
        if owner is not None:
            setattr(owner, method, _counted_method(steps, vars(owner)[method], method))


def _counted_method(steps: CallSteps, original: Any, method: str) -> Any:
    @functools.wraps(original)
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        return steps.call_from_line(functools.partial(original, self), args, kwargs,
                                    lambda: f"{type(self).__name__}.{method}")

    return counted


def _callback_class(keras: Any, run: Any) -> type:
    class TraceviewSteps(keras.callbacks.Callback):  # type: ignore[misc,name-defined]
        """Counts and marks train batches for ``traceview run``."""

        model_name = "Model"

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if run.claim(FIT_SOURCE, _keras_framework(keras), f"keras {self.model_name}.fit train batches"):
                run.begin(run.done + 1)

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if run.owns(FIT_SOURCE) and run.current is not None:
                run.end(run.current)

    return TraceviewSteps


def install_tf_function(run: Any, tf: Any) -> None:
    function_class = type(tf.function(lambda: None))
    original_call = function_class.__call__
    steps = CallSteps(run, FUNCTION_SOURCE, "tf", "tf.function")

    @functools.wraps(original_call)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        return steps.call(self, functools.partial(original_call, self), args, kwargs)

    function_class.__call__ = __call__
    _install_tape_steps(run, tf)


def _install_tape_steps(run: Any, tf: Any) -> None:
    """Count an eager loop's steps by the ``tf.GradientTape`` it leaves once a step, known by the
    script's line that opens it (a new tape each step; nested tapes are on lines of their own)."""
    tape_class = tf.GradientTape
    original_exit = tape_class.__exit__
    steps = CallSteps(run, EAGER_TF_SOURCE, "tf", "tf.GradientTape", detail=EAGER_DETAIL)

    @functools.wraps(original_exit)
    def __exit__(self: Any, *exc_info: Any) -> Any:
        return steps.call_from_line(functools.partial(original_exit, self), exc_info, {},
                                    lambda: "tf.GradientTape left")

    tape_class.__exit__ = __exit__


class Session(ProfilerSession):
    """One TensorFlow profiler session over the window; one xplane.pb."""

    trace_format = "xplane"

    def start(self) -> None:
        os.makedirs(self.trace_dir, exist_ok=True)
        _tensorflow().profiler.experimental.start(self.trace_dir)

    def marker(self, n: int) -> Any:
        return _tensorflow().profiler.experimental.Trace(STEP_MARKER, step_num=n, _r=1)

    def stop(self, open_step: int | None = None) -> str:
        # A marker never closed (open_step) is not recorded by the TensorFlow profiler.
        _tensorflow().profiler.experimental.stop()
        return newest_xplane(self.trace_dir)

    def describe(self) -> dict[str, Any]:
        return {
            "profiler": "tf.profiler.experimental.start/stop",
            "options": "defaults (host_tracer_level 2; python tracer off)",
            "step_marker": f"Trace('{STEP_MARKER}', step_num=N, _r=1), N = the script's step number from 1",
            "step_marker_offset": 1,
            "logdir_layout": "plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb",
        }


def _tensorflow() -> Any:
    """The script's TensorFlow: a TF session only runs once the script has imported it."""
    return sys.modules["tensorflow"]


def newest_xplane(trace_dir: str) -> str:
    """The newest ``plugins/profile/<run>/*.xplane.pb`` under ``trace_dir`` (TF and JAX layout)."""
    found = glob.glob(os.path.join(glob.escape(trace_dir), "plugins", "profile", "*", "*.xplane.pb"))
    if not found:
        raise RuntimeError(f"the profiler wrote no plugins/profile/<run>/*.xplane.pb under {trace_dir}")
    return max(found, key=os.path.getmtime)


def facts() -> dict[str, Any]:
    tf = sys.modules.get("tensorflow")
    keras = sys.modules.get("keras") or sys.modules.get("tf_keras")
    versions: dict[str, str] = {}
    threads: dict[str, Any] = {}
    device = {"kind": "cpu", "name": None}
    if keras is not None:
        versions["keras"] = str(getattr(keras, "__version__", "?"))
    if tf is not None:
        versions["tensorflow"] = tf.__version__
        threads = {
            "tf_intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
            "tf_inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
            "tf_threads_note": "0 means TensorFlow's default (one per core)",
        }
        gpus = tf.config.list_logical_devices("GPU")
        if gpus:
            device = {"kind": "gpu", "name": gpus[0].name}
    return {"versions": versions, "threads": threads, "device": device}
