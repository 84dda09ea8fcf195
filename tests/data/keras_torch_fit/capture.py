"""How the torch profile beside this file was captured (torch 2.13 CPU, Keras 3 with
``KERAS_BACKEND=torch``, 2 cores): Keras ``model.fit`` of a 256-512-512-10 MLP (Adam, batches
of 64) on the torch backend, profiled by torch.profiler (CPU activity, schedule wait=1, warmup=2,
active=3) with ``prof.step()`` from a callback at each batch's end. Keras' Adam updates the
weights with top-level multi-tensor ops (``aten::_foreach_mul_``, ``aten::_foreach_add_`` …)
that compute through ``aten::add`` / ``aten::mul`` / ``aten::sqrt``, with no torch.optim range.

    python tests/data/keras_torch_fit/capture.py tests/data/keras_torch_fit
"""

import os
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "torch"

import keras  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py
from keras_mlp import BATCH, compiled_mlp, data  # noqa: E402 - tests/data/keras_mlp.py


def main(out: Path) -> None:
    torch.set_num_threads(2)
    x, y = data(20)
    model = compiled_mlp()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)  # (warm)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                  schedule=torch.profiler.schedule(wait=1, warmup=2, active=3),
                                  on_trace_ready=torch.profiler.tensorboard_trace_handler(str(out / "fit")))

    class StepProfiler(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            prof.step()

    prof.start()
    model.fit(x[:BATCH * 7], y[:BATCH * 7], batch_size=BATCH, epochs=1, verbose=0, shuffle=False,
              callbacks=[StepProfiler()])
    prof.stop()
    gzip_in_place(out / "fit", "*.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
