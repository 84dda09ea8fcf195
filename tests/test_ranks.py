"""Several ranks of one run: parallel reading, the multi-rank section, stragglers, bucket spread.

Extra ranks are made from real traces: a copy with ``distributedInfo`` set to another rank and,
for the straggler, one step stretched (the marker lengthened, every later event shifted).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

from tests.conftest import REPO, SAMPLES, shared_trace
from tests.test_cli import run_cli
from traceview.loader import diagnose
from traceview.analyzers.ranks import multi_rank, summarize
from traceview.pool import diagnose_for_report
from traceview.renderers import json_report
from traceview.results import RANK_FROM_DISTRIBUTED, RANK_FROM_HOST_ORDER

STRETCH_STEP = 3
STRETCH_US = 2000.0


def write_rank(src: Path, dst: Path, rank: int, world: int, stretch_step: int | None = None,
               stretch_us: float = 0.0, shift_us: float = 0.0, backend: str = "gloo") -> Path:
    """A copy of a Kineto trace as another rank: distributedInfo set (first key, as Kineto writes
    it), optionally one ProfilerStep stretched by ``stretch_us`` and the whole trace shifted."""
    raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    doc = json.loads(raw)
    doc.pop("distributedInfo", None)
    out = {"schemaVersion": doc.pop("schemaVersion", 1),
           "distributedInfo": {"backend": backend, "rank": rank, "world_size": world}, **doc}
    events = out["traceEvents"]
    if stretch_step is not None:
        marker = next(e for e in events if e.get("name") == f"ProfilerStep#{stretch_step}")
        end = marker["ts"] + marker["dur"]
        for e in events:
            if isinstance(e.get("ts"), (int, float)) and e["ts"] >= end:
                e["ts"] += stretch_us
        marker["dur"] += stretch_us
    if shift_us:
        for e in events:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] += shift_us
    dst.write_bytes(gzip.compress(json.dumps(out).encode(), compresslevel=1))
    return dst


def sample_torch_eager() -> Path:
    found = sorted((SAMPLES / "mlp2" / "torch-eager").glob("*.pt.trace.json.gz"))
    if not found:
        pytest.skip("sample_traces/mlp2/torch-eager is missing")
    return found[0]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three ranks of a small real CPU trace; rank 2 has step #3 stretched by 2 ms."""
    return write_run(tmp_path_factory.mktemp("runs"), 3, slow=2, name="rank{}.pt.trace.json.gz")


def write_run(folder: Path, world: int, slow: int, name: str) -> Path:
    """``world`` ranks of the small real CPU trace in ``folder`` (``name`` formatted with the rank),
    each shifted by 10 µs a rank; rank ``slow`` has step STRETCH_STEP stretched by STRETCH_US."""
    src = sample_torch_eager()
    for rank in range(world):
        write_rank(src, folder / name.format(rank), rank, world,
                   stretch_step=STRETCH_STEP if rank == slow else None, stretch_us=STRETCH_US, shift_us=rank * 10.0)
    return folder


def _runs(folder: Path) -> list:
    return multi_rank([summarize(diagnose(p)) for p in sorted(folder.glob("*.json.gz"))])


def test_synthetic_straggler_is_found(small_run):
    runs = _runs(small_run)
    assert len(runs) == 1
    run = runs[0]
    assert run.rank_origin == RANK_FROM_DISTRIBUTED and run.world_size == 3 and run.backend == "gloo"
    assert list(run.ranks["rank"]) == [0, 1, 2]
    steps = run.stragglers.set_index("number")
    assert steps.loc[STRETCH_STEP, "slowest_rank"] == 2
    assert steps.loc[STRETCH_STEP, "straggler"]
    assert abs(steps.loc[STRETCH_STEP, "over_median_ns"] - STRETCH_US * 1000) <= 2  # µs floats re-read as exact ns
    others = steps.drop(index=STRETCH_STEP)
    assert not others["straggler"].any()
    assert (others["slowest_rank"] == -1).all()  # identical copies: nobody is slowest
    assert list(run.ranks["slowest_steps"]) == [0, 0, 1]
    # The rank × step matrix is each rank's own step table.
    for rank, path in enumerate(sorted(small_run.glob("*.json.gz"))):
        table = diagnose(path).steps.table.to_pandas().set_index("number")
        assert list(run.step_ns[rank]) == list(table.loc[run.step_ns.index, "duration"])


def test_bucket_spread_matches_each_rank(small_run):
    """min / median / max per bucket, computed here from each rank's own steady attribution."""
    run = _runs(small_run)[0]
    diags = [diagnose(p) for p in sorted(small_run.glob("*.json.gz"))]
    steady = [d.steady_attribution() for d in diags]
    buckets = list(steady[0])
    assert list(run.spread["bucket"]) == buckets  # whatever buckets the attribution has, in its order
    for row in run.spread.itertuples(index=False):
        values = np.array([s[row.bucket] for s in steady])
        assert row.min_ns == pytest.approx(values.min())
        assert row.median_ns == pytest.approx(np.median(values))
        assert row.max_ns == pytest.approx(values.max())
        assert row.max_rank == int(values.argmax())
    # The stretched step's extra time is in rank 2's steady mean, in some bucket.
    total = run.spread.set_index("bucket")
    assert sum(steady[2].values()) - sum(steady[0].values()) == pytest.approx(STRETCH_US * 1000 / 4, abs=4)
    assert (total["max_rank"] == 2).any()


@pytest.mark.parametrize("fmt", ["json", "md", "html", "terminal"])
def test_parallel_report_is_byte_identical_to_serial(small_run, fmt):
    serial = run_cli("diagnose", str(small_run), "--jobs", "1", "-f", fmt, "--width", "100")
    parallel = run_cli("diagnose", str(small_run), "--jobs", "3", "-f", fmt, "--width", "100")
    assert serial.returncode == 0, serial.stderr
    assert parallel.returncode == 0, parallel.stderr
    assert parallel.stdout == serial.stdout
    if fmt == "json":
        document = orjson.loads(serial.stdout)
        assert [t["trace"]["source"] for t in document["traces"]] == sorted(
            str(p) for p in small_run.glob("*.json.gz"))
        (run,) = document["multi_rank"]
        assert run["stragglers"]["ranks"] == [0, 1, 2]
        flagged = [s["number"] for s in run["stragglers"]["steps"] if s["straggler"]]
        assert flagged == [STRETCH_STEP]
    else:
        assert "Across the ranks: gloo, world size 3" in serial.stdout


def test_a_single_trace_has_no_multi_rank_section(small_run):
    one = small_run / "rank0.pt.trace.json.gz"
    plain = run_cli("diagnose", str(one), "-f", "json")
    many_jobs = run_cli("diagnose", str(one), "-f", "json", "--jobs", "4")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == many_jobs.stdout
    assert "multi_rank" not in orjson.loads(plain.stdout)


def test_a_folder_of_frameworks_is_not_ranks_and_reads_the_same_in_parallel():
    """A collect folder: no ranks; its cross-framework comparisons read event rows, kept by the pool."""
    folder = SAMPLES / "mlp2"
    if not folder.is_dir():
        pytest.skip("sample_traces/mlp2 is missing")
    serial = run_cli("diagnose", str(folder), "--jobs", "1", "-f", "json")
    parallel = run_cli("diagnose", str(folder), "--jobs", "2", "-f", "json")
    assert serial.returncode == 0, serial.stderr
    assert parallel.stdout == serial.stdout
    document = orjson.loads(serial.stdout)
    assert "multi_rank" not in document and document["comparisons"]


def test_redact_rewrites_the_rank_sources(small_run):
    result = run_cli("diagnose", str(small_run), "-f", "json", "--redact", "--jobs", "2")
    assert result.returncode == 0, result.stderr
    (run,) = orjson.loads(result.stdout)["multi_rank"]
    assert all(r["source"].startswith("<path>/") for r in run["ranks"])
    assert str(small_run) not in result.stdout


def test_xplane_hosts_of_one_run_are_ranks(tmp_path):
    xplanes = sorted((SAMPLES / "mlp2" / "tf-function").rglob("*.xplane.pb"))
    if not xplanes:
        pytest.skip("sample_traces/mlp2/tf-function is missing")
    run_folder = tmp_path / "logdir" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run_folder.mkdir(parents=True)
    for host in ("hosta", "hostb"):
        shutil.copy(xplanes[0], run_folder / f"{host}.xplane.pb")
    result = run_cli("diagnose", str(tmp_path / "logdir"), "-f", "json", "--jobs", "2")
    assert result.returncode == 0, result.stderr
    (run,) = orjson.loads(result.stdout)["multi_rank"]
    assert run["rank_from"] == RANK_FROM_HOST_ORDER
    assert [r["trace"] for r in run["ranks"]] == ["hosta.xplane.pb", "hostb.xplane.pb"]


def test_a_bad_trace_in_parallel_is_left_out_as_in_serial(small_run, tmp_path):
    folder = tmp_path / "mixed"
    shutil.copytree(small_run, folder)
    # Whole gzip, cut JSON: found as a trace (its head reads), left out when read.
    (folder / "rank1.pt.trace.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "ts": 1,'))
    serial = run_cli("diagnose", str(folder), "--jobs", "1")
    parallel = run_cli("diagnose", str(folder), "--jobs", "3")
    assert serial.returncode == parallel.returncode == 3
    assert (parallel.stdout, parallel.stderr) == (serial.stdout, serial.stderr)
    lines = parallel.stderr.strip().splitlines()
    assert len(lines) == 2 and all("rank1.pt.trace.json.gz" in line for line in lines)


def test_real_two_rank_trace_parallel_equals_serial(tmp_path):
    """The public HTA rank-1 trace and a rank-0 copy with step #4 stretched by 100 ms."""
    real = shared_trace("torch_gpu/v100_2rank_rank1_large.json.gz")
    shutil.copy(real, tmp_path / "rank1.json.gz")
    write_rank(real, tmp_path / "rank0.json.gz", 0, 2, stretch_step=4, stretch_us=100_000.0, backend="nccl")
    paths = sorted(tmp_path.glob("*.json.gz"))
    serial = [diagnose(p) for p in paths]
    parallel = diagnose_for_report(paths, None, 10, 2, keep_events=False)
    runs = multi_rank([summarize(d) for d in serial])
    assert json_report.render(parallel, multi_rank=multi_rank([summarize(d) for d in parallel])) == \
        json_report.render(serial, multi_rank=runs)
    (run,) = runs
    assert run.label == "nccl, world size 2"
    step = run.stragglers.set_index("number").loc[4]
    assert step["slowest_rank"] == 0 and step["straggler"]
    assert step["over_median_ns"] == pytest.approx(50_000_000, abs=2)  # median of two: half the stretch
    assert len(parallel[0].timeline.events) == 0 and parallel[0].timeline.has_device  # rows released, facts kept


def test_dask_example_runs_with_its_fallback(small_run, tmp_path):
    """examples/ranks_dask.py without Dask: a local process pool. The test extra installs Dask, so a
    package of its name that fails to import hides it (tests/test_distributed.py runs the bag)."""
    hidden = tmp_path / "hide_dask" / "dask"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("dask is hidden from this run")\n')
    env = {**os.environ, "PYTHONPATH": str(hidden.parent)}
    result = subprocess.run([sys.executable, str(REPO / "examples" / "ranks_dask.py"), str(small_run),
                             "--parquet", str(tmp_path / "pq"), "--jobs", "2"],
                            capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "traces read by a local process pool (Dask is not installed)" in result.stderr
    (run,) = orjson.loads(result.stdout)["multi_rank"]
    assert run == orjson.loads(json_report.dumps(_runs(small_run)[0].to_dict()))
    assert len(list((tmp_path / "pq").glob("*.steps.parquet"))) == 3


def test_one_process_lets_the_events_go_as_workers_do(small_run):
    """``jobs=1`` without ``keep_events`` releases every trace's event rows after its analysis, as
    each worker does: the same report, without a folder's events all held at once."""
    import traceview

    serial = traceview.diagnose(small_run, jobs=1, keep_events=False)
    parallel = traceview.diagnose(small_run, jobs=2, keep_events=False)
    assert all(len(d.timeline.events) == 0 for d in serial.diagnoses)
    assert traceview.render(serial, "json") == traceview.render(parallel, "json")
    kept = traceview.diagnose(small_run, jobs=1)
    assert all(len(d.timeline.events) > 0 for d in kept.diagnoses)


@pytest.mark.parametrize(("text", "cpus"), [("200000 100000", 2), ("150000 100000", 2), ("50000 100000", 1),
                                            ("max 100000", None), ("", None)])
def test_the_cgroup_quota_bounds_the_workers(tmp_path, text, cpus):
    from traceview.pool import cgroup_cpu_quota, default_jobs

    (tmp_path / "cpu.max").write_text(text)
    assert cgroup_cpu_quota(tmp_path / "cpu.max") == cpus
    assert cgroup_cpu_quota(tmp_path / "absent") is None
    assert 1 <= default_jobs() <= len(os.sched_getaffinity(0))


@pytest.fixture(scope="module")
def wide_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve ranks of a small real CPU trace; rank 7 has step #3 stretched by 2 ms."""
    return write_run(tmp_path_factory.mktemp("wide"), 12, slow=7, name="rank{:02d}.pt.trace.json.gz")


def test_a_large_run_reports_its_summary_first_and_its_outliers(wide_run):
    """More than 8 ranks: the cross-rank summary comes first, the per-rank table lists the ranks
    furthest from the median, and only the outlying ranks and a typical one get their own
    report; --per-rank lists and reports every rank; JSON holds them all either way."""
    short = run_cli("diagnose", str(wide_run), "--width", "120")
    assert short.returncode == 0, short.stderr
    text = short.stdout
    assert text.index("Across the ranks") < text.index("traceview diagnose")
    table = text[text.index("Per rank"):text.index("Stragglers")]
    assert len([line for line in table.splitlines() if ".pt.trace.json.gz" in line]) == 8
    assert "rank07.pt.trace.json.gz" in table and "+" in table
    reported = re.findall(r"trace\s+(\S+rank\d+\.pt\.trace\.json\.gz)", text)
    assert len(reported) == 2 and any(p.endswith("rank07.pt.trace.json.gz") for p in reported)
    assert "the own reports of 10 of 12 ranks" in " ".join(text.split()) and "--per-rank" in text
    every = run_cli("diagnose", str(wide_run), "--width", "120", "--per-rank").stdout
    assert len(re.findall(r"trace\s+\S+rank\d+\.pt\.trace\.json\.gz", every)) == 12
    assert "the own reports of" not in every
    for fmt in ("md", "html"):
        bounded = run_cli("diagnose", str(wide_run), "-f", fmt).stdout
        assert "--per-rank" in bounded and bounded.count("rank03.pt.trace.json.gz") < \
            run_cli("diagnose", str(wide_run), "-f", fmt, "--per-rank").stdout.count("rank03.pt.trace.json.gz")
    json_short = run_cli("diagnose", str(wide_run), "-f", "json").stdout
    assert json_short == run_cli("diagnose", str(wide_run), "-f", "json", "--per-rank").stdout
    assert len(orjson.loads(json_short)["traces"]) == 12


def _later_window(src: Path, dst: Path, steps_after: int) -> None:
    """A copy of a rank's trace as its next profiling window: every ProfilerStep#N renumbered N + steps_after."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    for event in doc["traceEvents"]:
        name = event.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            event["name"] = f"ProfilerStep#{int(name.split('#')[1]) + steps_after}"
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))


def test_repeated_ranks_are_windows_or_named(tmp_path):
    """Two profiling windows per rank in one folder (repeat > 1) are compared window by window;
    one extra copy of a rank is named, and each rank's last trace compared — neither removes the
    multi-rank section without a word."""
    src = sample_torch_eager()
    windows = tmp_path / "windows"
    windows.mkdir()
    for rank in (0, 1):
        first = windows / f"worker{rank}.100.pt.trace.json.gz"
        write_rank(src, first, rank, 2, stretch_step=STRETCH_STEP if rank == 1 else None, stretch_us=STRETCH_US)
        _later_window(first, windows / f"worker{rank}.200.pt.trace.json.gz", 10)
    runs = _runs(windows)
    assert len(runs) == 2 and all(len(run.ranks) == 2 for run in runs)
    assert [run.notes[0].split(":")[0] for run in runs] == ["window 1 of 2", "window 2 of 2"]
    assert [int(run.stragglers["number"].min()) for run in runs] == [0, 10]
    copy = tmp_path / "copy"
    shutil.copytree(windows, copy)
    for name in ("worker0.200.pt.trace.json.gz", "worker1.200.pt.trace.json.gz"):
        (copy / name).unlink()
    shutil.copy(copy / "worker1.100.pt.trace.json.gz", copy / "worker1.100-again.pt.trace.json.gz")
    (run,) = _runs(copy)
    assert list(run.ranks["rank"]) == [0, 1]
    assert "1 trace(s) repeat a rank" in run.notes[0] and "worker1.100" in run.notes[0]
    text = run_cli("diagnose", str(copy), "--width", "120").stdout
    assert "repeat a rank" in " ".join(text.split())


def test_top_bounds_the_per_rank_table(wide_run):
    text = run_cli("diagnose", str(wide_run), "--width", "120", "--top", "3").stdout
    table = text[text.index("Per rank"):text.index("Stragglers")]
    listed = [line for line in table.splitlines() if ".pt.trace.json.gz" in line]
    assert len(listed) == 3 and any("rank07" in line for line in listed)  # the slow rank is one of them
    assert "lists the 3 ranks furthest from the median step; 9 more" in " ".join(text.split())


def test_narrow_reports_leave_out_rank_columns_whole_not_cut(tmp_path):
    """The stragglers table at a width its per-rank columns do not fit: no cell is cut short
    ('244.7…'); the slow rank's column stays, the others left out are named."""
    run = write_run(tmp_path, 8, slow=5, name="rank{}.pt.trace.json.gz")
    for width in (80, 100):
        text = run_cli("diagnose", str(run), "--width", str(width)).stdout
        table = text[text.index("Stragglers"):text.index("Spread")]
        assert "…" not in table
        header = next(line for line in table.splitlines() if "over median" in line)
        assert "r5" in header.split()
        assert "do not fit in" in " ".join(table.split())
        step3 = next(line for line in table.splitlines() if line.strip().startswith("#3"))
        assert "3.16ms" in step3  # the straggler's own time, whole
