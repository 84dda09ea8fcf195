"""How the torch profiles beside this file were captured (torch 2.13 CPU, a shared 2-core VM): an
MLP's SGD step (256 -> 512 -> 512 -> 10, ReLU, batch 64, cross-entropy; one intra-op thread, so
that no op's threads compete for a core) profiled by ``torch.profiler`` (5 active steps after 2
warm-up ones), while another thread of the process runs a pure-Python loop — and once without it.
Each framework call lets go of the interpreter lock and waits a whole switch interval (5 ms) to
take it back while the other thread holds it.

- ``clean/``: no other thread.
- ``contended/``: the other thread runs; no Python events (torch.profiler's default): the waits
  are unrecorded gaps between ops and the own time of the autograd engine's node ranges and of
  ``Optimizer.step``'s range.
- ``contended_stack/``: the same with Python events (``with_stack=True``): the waits are in the
  Python frames' own time too.
- ``sleeps_stack/``: no other thread; the step sleeps 5 ms twice (``time.sleep(0.005)`` before
  it, ``threading.Event().wait(0.005)`` after it), with Python events: stretches of one interval
  at two places a step that are the user's own, not waits for the lock.
- ``prefetch_stack/``: no busy loop beside the step; instead the step takes its batch from a queue
  that another thread fills, building each batch in Python (a loop of ``PREFETCH_WORK``
  iterations, then ``torch.randn``), with Python events. The filling thread holds the lock while
  it builds; the step waits for it after one or two of its ops a step (and for its batches).

Unprofiled, on the machine that captured it (medians, printed by this script): a step 2.0 ms
alone, 100 ms while the busy thread runs, 9.9 ms fed by the prefetching thread.

    python tests/data/torch_cpu_gil/capture.py tests/data/torch_cpu_gil
"""

import queue
import sys
import threading
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py
from torch_cpu_step import median_step_ms, profile_steps, sgd_step  # noqa: E402 - tests/data/torch_cpu_step.py


def python_loop_until(stop: threading.Event) -> None:
    """Pure Python, no call that lets go of the interpreter lock, until ``stop`` is set."""
    while not stop.is_set():
        for _ in range(10_000):
            pass


PREFETCH_WORK = 400_000


def build_batches(batches: queue.Queue, stop: threading.Event) -> None:
    """Batches built in Python (a loop standing for decoding), put on ``batches`` until ``stop``."""
    while not stop.is_set():
        total = 0.0
        for _ in range(PREFETCH_WORK):
            total += 1.0
        try:
            batches.put((torch.randn(64, 256), torch.randint(0, 10, (64,))), timeout=0.1)
        except queue.Full:
            pass


def main(out: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    step = sgd_step(model, x, y)

    print(f"alone: unprofiled median {median_step_ms(step, 10, 60):.2f} ms")
    (out / "clean").mkdir(parents=True, exist_ok=True)
    profile_steps(step, str(out / "clean" / "clean.pt.trace.json"), warmup=2, active=5)

    never_set = threading.Event()

    def sleepy_step() -> float:
        time.sleep(0.005)
        loss = step()
        never_set.wait(0.005)
        return loss

    (out / "sleeps_stack").mkdir(parents=True, exist_ok=True)
    profile_steps(sleepy_step, str(out / "sleeps_stack" / "sleeps_stack.pt.trace.json"), warmup=2, active=5,
                  with_stack=True)

    stop = threading.Event()
    other = threading.Thread(target=python_loop_until, args=(stop,), daemon=True)
    other.start()
    print(f"another thread running Python: unprofiled median {median_step_ms(step, 3, 15):.2f} ms")
    for folder, options in (("contended", {}), ("contended_stack", {"with_stack": True})):
        (out / folder).mkdir(parents=True, exist_ok=True)
        profile_steps(step, str(out / folder / f"{folder}.pt.trace.json"), warmup=2, active=5, **options)
    stop.set()
    other.join()

    import torch.nn.functional as F

    batches: queue.Queue = queue.Queue(maxsize=4)
    stop = threading.Event()
    feeder = threading.Thread(target=build_batches, args=(batches, stop), daemon=True)
    feeder.start()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def fed_step() -> float:
        x, y = batches.get()
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    print(f"fed by the prefetching thread: unprofiled median {median_step_ms(fed_step, 5, 30):.2f} ms")
    (out / "prefetch_stack").mkdir(parents=True, exist_ok=True)
    profile_steps(fed_step, str(out / "prefetch_stack" / "prefetch_stack.pt.trace.json"), warmup=2, active=5,
                  with_stack=True)
    stop.set()
    feeder.join()
    gzip_in_place(out, "*.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
