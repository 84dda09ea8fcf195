"""traceview.capture with a profiler schedule: each cycle's active steps, and only those, in a trace
of their own, in torch and TensorFlow; the same cell run twice (a notebook) still works.

Every loop step opens a range named after its loop index (``loop<i>``) inside the step, so a trace's
ranges say exactly which loop steps it holds."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import traceview
from traceview.capture_facts import capture_facts
from traceview.collectors import manifest as mf
from traceview.errors import UsageError
from traceview.loader import load, load_with_steps
from traceview.profile_schedule import Action, Schedule, actions_of

LOOP_RANGE = re.compile(r"^loop(\d+)$")


def loop_steps_in(trace: Path) -> list[int]:
    """The loop steps whose ``loop<i>`` range is in the trace, in order."""
    names = load(trace).events["name"].astype(str)
    return sorted(int(m.group(1)) for m in map(LOOP_RANGE.match, names) if m)


def step_numbers_in(trace: Path) -> list[int]:
    return load_with_steps(trace)[1].table["number"].tolist()


def run_torch(folder: Path, steps: int, **options: Any) -> Any:
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    with traceview.capture(folder, "torch", python_events=False, **options) as cap:
        for i in range(steps):
            with cap.step() as step, torch.profiler.record_function(f"loop{i}"):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                step.loss = loss.item()
    return cap


def test_schedule_follows_torch_profiler_schedule() -> None:
    torch = pytest.importorskip("torch")
    for args in ({"wait": 1, "warmup": 1, "active": 2, "repeat": 2},
                 {"wait": 0, "warmup": 2, "active": 1, "repeat": 0, "skip_first": 3},
                 {"wait": 2, "warmup": 1, "active": 3, "repeat": 1, "skip_first_wait": 1}):
        ours, _ = actions_of(args)
        theirs, _ = actions_of(torch.profiler.schedule(**args))
        assert [ours(i) for i in range(20)] == [theirs(i) for i in range(20)], args
    one = Schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [one.action(i) for i in range(6)] == [Action.NONE, Action.WARMUP, Action.RECORD, Action.SAVE,
                                                 Action.NONE, Action.NONE]


def test_torch_schedule_traces_hold_exactly_the_active_steps(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    cap = run_torch(folder, 9, schedule=traceview.schedule(wait=1, warmup=1, active=2, repeat=2))
    # Cycles of 4 steps: 0 waits, 1 warms up, 2-3 are profiled; again 4-7; step 8 is past the repeats.
    assert len(cap.trace_files) == 2
    assert [loop_steps_in(t) for t in cap.trace_files] == [[2, 3], [6, 7]]
    assert [step_numbers_in(t) for t in cap.trace_files] == [[0, 1], [0, 1]]
    m = mf.read(folder)
    assert [t["loop_steps"] for t in m["traces"]] == [[2, 3], [6, 7]]
    assert m["trace"] == m["traces"][0] and m["cold_steps"] == []  # loop step 0 ran unprofiled
    assert m["timing"]["unprofiled_loop_steps"] == [0, 1, 4, 5, 8]
    assert m["schedule"]["active"] == 2 and m["schedule"]["repeat"] == 2
    # Each trace's facts come from its own entry.
    assert capture_facts(cap.trace_files[1])["cold_steps"] == []


def test_torch_schedule_function_and_notebook_rerun(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    folder = tmp_path / "mine"
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=3, repeat=1)
    run_torch(folder, 6, schedule=schedule, overwrite=True)
    cap = run_torch(folder, 6, schedule=schedule, overwrite=True)  # the same cell, run again
    assert [loop_steps_in(t) for t in cap.trace_files] == [[1, 2, 3]]
    assert len(list(folder.glob("*.pt.trace.json.gz"))) == 1  # the first run's trace is gone
    assert mf.read(folder)["cold_steps"] == []


def test_a_trace_holding_loop_step_0_marks_it_cold(tmp_path: Path) -> None:
    cap = run_torch(tmp_path / "mine", 4, schedule={"wait": 0, "warmup": 0, "active": 2, "repeat": 1})
    assert [loop_steps_in(t) for t in cap.trace_files] == [[0, 1]]
    m = mf.read(tmp_path / "mine")
    assert m["cold_steps"] == [0] and m["steady_steps"] == [1]
    assert capture_facts(cap.trace_files[0])["cold_steps"] == [0]


def test_tf_schedule_starts_the_profiler_only_for_the_active_steps(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    w, x = tf.Variable(tf.ones((4, 1))), tf.random.normal((32, 4))
    step_function = tf.function(lambda: tf.reduce_mean(tf.matmul(x, w)))
    folder = tmp_path / "mine"
    for _ in range(2):  # a notebook cell run twice
        with traceview.capture(folder, "tf", overwrite=True,
                               schedule={"wait": 1, "warmup": 1, "active": 2, "repeat": 2}) as cap:
            for i in range(8):
                with cap.step() as step, tf.profiler.experimental.Trace(f"loop{i}"):
                    step.loss = float(step_function())
    assert [loop_steps_in(t) for t in cap.trace_files] == [[2, 3], [6, 7]]
    assert [step_numbers_in(t) for t in cap.trace_files] == [[0, 1], [0, 1]]
    assert len(list(folder.glob("plugins/profile/*/*.xplane.pb"))) == 2  # one run per cycle, none left over
    m = mf.read(folder)
    assert [t["loop_steps"] for t in m["traces"]] == [[2, 3], [6, 7]]


def test_schedule_and_option_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not both"):
        traceview.capture(tmp_path, "torch", max_steps=3, schedule=traceview.schedule(wait=0, warmup=0, active=1))
    with pytest.raises(UsageError, match="active=0"):
        traceview.schedule(wait=1, warmup=0, active=0)
    with pytest.raises(UsageError, match="wait=-1"):
        traceview.schedule(wait=-1, warmup=0, active=1)
    with pytest.raises(UsageError, match="missing warmup"):
        traceview.capture(tmp_path, "torch", schedule={"wait": 1, "active": 2})
    with pytest.raises(UsageError, match="unknown key"):
        traceview.capture(tmp_path, "torch", schedule={"wait": 1, "warmup": 0, "active": 2, "every": 3})
    with pytest.raises(UsageError, match="pass traceview.schedule"):
        traceview.capture(tmp_path, "torch", schedule=3)


_LAZY_PROBE = """
import sys
import traceview
before = sorted(m for m in sys.modules if m.startswith("traceview.collectors"))
function = traceview.capture
print(before, function.__module__, function is traceview.capture, "max_steps" in function.__code__.co_varnames)
"""


def test_the_package_loads_the_capture_function_when_first_asked() -> None:
    """`import traceview` loads no collector; `traceview.capture` is then the collectors' function
    itself (its signature and docstring), the same object on every later use."""
    out = subprocess.run([sys.executable, "-c", _LAZY_PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "traceview.collectors.capture", "True", "True"]


def test_tf_memory_on_the_cpu_asks_for_the_bfc_allocator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_CPU_ALLOCATOR_USE_BFC", raising=False)
    with pytest.raises(UsageError, match="TF_CPU_ALLOCATOR_USE_BFC=true"):
        traceview.capture(tmp_path, "tf", memory=True)
    monkeypatch.setenv("TF_CPU_ALLOCATOR_USE_BFC", "true")
    assert traceview.capture(tmp_path, "tf", memory=True).memory
