"""How the torch profiles beside this file were captured (torch 2.13 CPU): inference steps whose
batch is built from Python lists each step (a word-level tokenizer in plain Python, then
``torch.tensor`` of the ids), profiled the way torch.profiler is most often run — without Python
events — and once with them.

- ``tokenize/``: ProfilerStep#N around each step, ``with_stack=False``: the tokenizer's Python
  leaves unrecorded gaps of a few hundred µs between the ops.
- ``tokenize_stack/``: the same with ``with_stack=True``: the tokenizer's frames are recorded.
- ``print_stack/``: a small MLP's SGD training step that prints its loss tensor each step
  (``print(loss)``), ``with_stack=True``: torch formats the tensor in Python (Tensor.__repr__,
  torch/_tensor_str.py), with a few ops of its own.

Unprofiled, on the capturing machine (medians of 40 interleaved steps, printed by this script):
a step 0.74-0.77 ms, the tokenizer alone 0.29 ms of it (two fifths); the training step
0.59 ms printing its loss, 0.33 ms without (print to standard error).

    python tests/data/torch_cpu_python/capture.py tests/data/torch_cpu_python
"""

import random
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py

torch.manual_seed(0)
torch.set_num_threads(2)
random.seed(0)
WORDS = [f"w{i}" for i in range(2000)]
VOCAB = {w: i for i, w in enumerate(WORDS)}
SENTENCES = [" ".join(random.choice(WORDS) for _ in range(400)) for _ in range(32)]
EMBED = nn.EmbeddingBag(len(WORDS) + 1, 64)
HEAD = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2))


def tokenize(sentence: str) -> list[int]:
    return [VOCAB.get(word, len(WORDS)) for word in sentence.lower().split()]


def step(i: int) -> torch.Tensor:
    batch = SENTENCES[(i % 4) * 8:(i % 4 + 1) * 8]
    with torch.no_grad():
        ids = nn.utils.rnn.pad_sequence([torch.tensor(tokenize(s)) for s in batch], batch_first=True)
        return HEAD(EMBED(ids)).argmax(1)


def tokenize_only(i: int) -> list[list[int]]:
    return [tokenize(s) for s in SENTENCES[(i % 4) * 8:(i % 4 + 1) * 8]]


MODEL = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
OPTIMIZER = torch.optim.SGD(MODEL.parameters(), lr=0.01)
X, Y = torch.randn(32, 64), torch.randn(32, 1)


def train_step(i: int, printing: bool = True) -> None:
    OPTIMIZER.zero_grad()
    loss = ((MODEL(X) - Y) ** 2).mean()
    loss.backward()
    OPTIMIZER.step()
    if printing:
        print(loss, file=sys.stderr)


def timed() -> None:
    times: dict[str, list[float]] = {"step": [], "tokenize": [], "train+print": [], "train": []}
    for i in range(45):
        for name, fn in (("step", step), ("tokenize", tokenize_only), ("train+print", train_step),
                         ("train", lambda i: train_step(i, printing=False))):
            start = time.perf_counter()
            fn(i)
            if i >= 5:
                times[name].append((time.perf_counter() - start) * 1e3)
    print({k: round(statistics.median(v), 3) for k, v in times.items()}, "ms")


def capture(folder: Path, with_stack: bool, body=step) -> None:  # noqa: ANN001
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=4),
                 with_stack=with_stack, on_trace_ready=tensorboard_trace_handler(str(folder))) as prof:
        for i in range(6):
            body(i)
            prof.step()
    gzip_in_place(folder, "*.json")


if __name__ == "__main__":
    out = Path(sys.argv[1])
    timed()
    capture(out / "tokenize", with_stack=False)
    capture(out / "tokenize_stack", with_stack=True)
    capture(out / "print_stack", with_stack=True, body=train_step)
