"""One measurement or capture of one case, in its own process (``generate`` starts these).

``python -m benchmarks.truth.worker MODE --case NAME [--variant V] [--knob K] --result FILE``

Modes:
- ``calibrate``: the two variants the knob tells apart (clean / injected; first / injected in a
  two-cause case; clean / exposed in a hidden case) in this process; find the knob
  (``measure.search_knob``).
- ``point``: one variant at one knob, median iteration time (calibration of isolated cases).
- ``measure``: steady window, every variant in this process, interleaved in blocks with
  rotating order behind the calm gate; or one variant (``--variant``) for isolated cases.
- ``cold``: the first step of a fresh process (the clean twin runs one step first).
- ``profile``: one profiled capture of one variant into ``--out``, traces rewritten so they
  carry no local paths or host name.

Times are *iterations*: from the start of a step to the end of the work after it (for most
cases that work is nothing, so an iteration is the step).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import platform
import re
import shutil
import site
import socket
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.truth.cases import BY_NAME, EXPOSED, Case, StepProgram
from benchmarks.truth.measure import FOREIGN_CPU_LIMIT, Calm, ForeignCPU, search_knob

REPO = Path(__file__).resolve().parents[2]
HOST_PLACEHOLDER = "host"


# ---------------------------------------------------------------------------------------------
# Process setup
# ---------------------------------------------------------------------------------------------


def setup_process(case: Case, threads: int) -> dict[str, Any]:
    """Environment, thread pools and framework import, before anything builds a tensor."""
    for key, value in case.env.items():
        os.environ[key] = tempfile.mkdtemp(prefix="truth-") if value == "{fresh_dir}" else value
    if case.framework == "torch":
        import torch

        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(2)
        except RuntimeError:
            pass
        return {"torch_intra_op": torch.get_num_threads(), "torch_inter_op": torch.get_num_interop_threads()}
    if case.framework == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")  # no probing for accelerators
        from traceview.collectors.jax_collector import configure

        return configure(threads, "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    return {
        "tf_intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
        "tf_inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
    }


def versions(case: Case) -> dict[str, str]:
    import numpy as np

    out = {"python": platform.python_version(), "numpy": np.__version__}
    if case.framework == "torch":
        import torch

        out["torch"] = torch.__version__
    elif case.framework == "jax":
        from traceview.collectors.jax_collector import versions as jax_versions

        out.update(jax_versions())
    else:
        import keras
        import tensorflow as tf

        out["tensorflow"] = tf.__version__
        out["keras"] = keras.__version__
    return out


# Every program built stays alive until the process ends: destroying a tf.data iterator whose
# map runs a tf.py_function can deadlock (the iterator's teardown waits for a thread that waits
# for the GIL), so calibration never drops one, and the worker leaves through os._exit.
_KEEP: list[StepProgram] = []


def build(case: Case, variant: str, knob: int | None) -> StepProgram:
    prog = case.build(variant, knob or 0)
    _KEEP.append(prog)
    prog.enter()
    return prog


def settle() -> None:
    """Collect, then freeze what survives, so a collection pause does not walk the frameworks' heaps."""
    gc.collect()
    gc.freeze()


# ---------------------------------------------------------------------------------------------
# Timing loops
# ---------------------------------------------------------------------------------------------


class Timer:
    """Collects iteration times from a program's loop callbacks."""

    def __init__(self) -> None:
        self.iter_ns: list[int] = []
        self.step_ns: list[int] = []
        self._t0 = 0
        self._t1 = 0

    def begin(self, i: int) -> None:
        self._t0 = time.perf_counter_ns()

    def end(self, i: int, loss: float | None) -> None:
        self._t1 = time.perf_counter_ns()

    def after(self, i: int) -> None:
        now = time.perf_counter_ns()
        self.step_ns.append(self._t1 - self._t0)
        self.iter_ns.append(now - self._t0)


def run_indices(prog: StepProgram, indices: list[int]) -> Timer:
    timer = Timer()
    start = time.perf_counter_ns()
    prog.loop(indices, timer.begin, timer.end, timer.after)
    if prog.asynchronous and indices:
        # The steps returned before their work was done: the block's time to the end of that
        # work, an equal share a step (StepProgram).
        prog.drain()
        share = (time.perf_counter_ns() - start) // len(indices)
        timer.iter_ns = [share] * len(indices)
        timer.step_ns = [share] * len(indices)
    return timer


def warm(prog: StepProgram, n: int, counter: list[int]) -> None:
    """``n`` warm-up steps (negative indices)."""
    if n > 0:
        run_indices(prog, [-(counter[0] + j + 1) for j in range(n)])
        counter[0] += n


def blocks(
    progs: dict[str, StepProgram], rounds: int, block: int, calm: Calm, strict: bool = True
) -> dict[str, Any]:
    """Rounds of one block per variant, order rotating; a round counts when calm before and after."""
    names = list(progs)
    times: dict[str, list[int]] = {v: [] for v in names}
    nxt = {v: 0 for v in names}
    kept = rejected = 0
    while kept < rounds and kept + rejected < rounds * 3:
        order = names if (kept + rejected) % 2 == 0 else names[::-1]
        calm_before, _ = calm.wait()
        other = ForeignCPU()
        got: dict[str, list[int]] = {}
        for v in order:
            progs[v].enter()
            idx = list(range(nxt[v], nxt[v] + block))
            nxt[v] += block
            got[v] = run_indices(progs[v], idx).iter_ns[1:]  # the first after a switch is dropped
        calm_after = other.share() <= FOREIGN_CPU_LIMIT and calm.is_calm(calm.probe())
        if (calm_before and calm_after) or not strict:
            kept += 1
            for v in names:
                times[v].extend(got[v])
        else:
            rejected += 1
    if kept == 0:  # never calm: keep the last round rather than nothing, and say so
        for v in names:
            times[v].extend(got[v])
    return {"iter_ns": times, "rounds_kept": kept, "rounds_rejected": rejected}


def _median(xs: list[int]) -> float:
    import numpy as np

    return float(np.median(xs))


# ---------------------------------------------------------------------------------------------
# Modes
# ---------------------------------------------------------------------------------------------


def mode_calibrate(case: Case, args: argparse.Namespace, calm: Calm) -> dict[str, Any]:
    assert case.knob is not None
    kn = case.knob

    # The knob sizes the last cost: injected over clean, or over first in a two-cause case; a
    # hidden case's work on its own (exposed over clean).
    base, top = case.calibrated_variants

    def cost_at(k: int) -> tuple[float, float]:
        progs = {v: build(case, v, k) for v in (base, top)}
        counter = [0]
        for p in progs.values():
            p.enter()
            warm(p, case.warmup, counter)
        settle()
        got = blocks(progs, 3, 4, calm, strict=False)["iter_ns"]
        below = _median(got[base])
        return _median(got[top]) - below, below

    target = lambda clean: max(kn.target_ms * 1e6, kn.share * clean)  # noqa: E731
    knob, points = search_knob(kn.start, kn.power, kn.lo, kn.hi, target, cost_at)
    return {"knob": knob, "points": points}


def mode_point(case: Case, args: argparse.Namespace, calm: Calm) -> dict[str, Any]:
    prog = build(case, args.variant, args.knob)
    warm(prog, case.warmup, [0])
    settle()
    got = blocks({args.variant: prog}, 3, 5, calm, strict=False)
    return {"median_ns": _median(got["iter_ns"][args.variant])}


def mode_measure(case: Case, args: argparse.Namespace, calm: Calm) -> dict[str, Any]:
    variants = [args.variant] if args.variant else list(case.measured_variants)
    rounds = args.rounds or case.rounds
    progs = {v: build(case, v, args.knob) for v in variants}
    counter = [0]
    for p in progs.values():
        p.enter()
        warm(p, case.warmup, counter)
    settle()
    return blocks(progs, rounds, case.block, calm)


def mode_cold(case: Case, args: argparse.Namespace, calm: Calm) -> dict[str, Any]:
    prog = build(case, args.variant, args.knob)
    if args.variant == "clean":
        warm(prog, 1, [0])  # the clean twin pays its cold step before the measured one
    settle()
    calm_before, ratio = calm.wait()
    other = ForeignCPU()
    timer = run_indices(prog, [0, 1, 2])
    foreign = other.share()
    calm_after = foreign <= FOREIGN_CPU_LIMIT and calm.is_calm(calm.probe())
    return {"first_ns": timer.iter_ns[0], "iter_ns": timer.iter_ns, "calm": bool(calm_before and calm_after),
            "probe_ratio": ratio, "foreign_cpu_share": foreign}


def mode_profile(case: Case, args: argparse.Namespace, calm: Calm) -> dict[str, Any]:
    from traceview.collectors.harness import StepRecorder

    prog = build(case, args.variant, args.knob)
    cold = case.window == "cold"
    if cold:
        lead = "cold" if args.variant == "injected" else "first step after an unprofiled warm-up step"
        if args.variant == "clean":
            warm(prog, 1, [0])
        n_warm = 0
    else:
        warm(prog, case.warmup, [0])
        lead = "warm-up (profiled)"
        n_warm = case.warmup
    settle()
    calm_before, ratio_before = calm.wait()
    if case.refill_warmup and not cold:
        # (after the gate, which a producer that runs ahead spent filling its buffer: Case.refill_warmup)
        warm(prog, case.refill_warmup, [n_warm])
        n_warm += case.refill_warmup
    tmp = Path(tempfile.mkdtemp(prefix="truth-capture-"))
    if case.framework == "torch":
        from traceview.collectors.torch_collector import TorchProfilerSession

        session: Any = TorchProfilerSession(tmp, record_shapes=case.record_shapes, python_events=case.python_events)
    elif case.framework == "jax":
        from traceview.collectors.jax_collector import JaxProfilerSession

        # Python tracer (unless the case asks for it) and HLO protos off, as traceview captures JAX.
        session = JaxProfilerSession(tmp, python_events=case.python_tracer)
    else:
        from traceview.collectors.tf_collector import TFProfilerSession

        session = TFProfilerSession(tmp)
    recorder = StepRecorder(markers=session)
    iters: list[int] = []
    t0 = [0]

    def begin(i: int) -> None:
        recorder.begin(i)
        t0[0] = recorder._t0

    def after(i: int) -> None:
        iters.append(time.perf_counter_ns() - t0[0])

    steps = 1 + case.profiled_steady
    other = ForeignCPU()
    session.start()
    loop_start = time.perf_counter_ns()
    prog.loop(list(range(steps)), begin, recorder.end, after)
    prog.drain()  # (an asynchronous program's queued work, inside the profiler's window)
    step_ns = [int(t * 1e9) for t in recorder.times_s]
    if prog.asynchronous:  # its steps timed as a block, an equal share each (StepProgram)
        step_ns = iters = [(time.perf_counter_ns() - loop_start) // steps] * steps
    written = session.stop()
    foreign = other.share()
    calm_after = foreign <= FOREIGN_CPU_LIMIT and calm.is_calm(calm.probe())
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if case.framework == "torch":
        trace = rewrite_kineto(written, out / f"{args.variant}.pt.trace.json.gz")
    else:
        trace = rewrite_xplane(written, out, case.framework)
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "trace": str(trace.relative_to(out)),
        "profiler": session.describe(),
        "step_ns": step_ns,
        "iter_ns": iters,
        "calm": bool(calm_before and calm_after),
        "probe_ratio_before": ratio_before,
        "foreign_cpu_share": foreign,
        "steps": {
            "unprofiled_warmup_before_capture": n_warm if not cold else (1 if args.variant == "clean" else 0),
            "profiled": steps,
            "lead_step": {"index": 0, "role": lead},
            "steady": list(range(1, steps)),
        },
    }


# ---------------------------------------------------------------------------------------------
# Making traces shareable
# ---------------------------------------------------------------------------------------------


def _path_prefixes() -> list[tuple[str, str]]:
    """Local folders that appear in traces (Python file names, logdirs) and what replaces them."""
    pairs: list[tuple[str, str]] = []
    for sp in [*site.getsitepackages(), site.getusersitepackages()]:
        pairs.append((str(Path(sp)) + "/", "site-packages/"))
    for key in ("stdlib", "platstdlib"):
        pairs.append((sysconfig.get_paths()[key] + "/", "python-lib/"))
    pairs += [
        (str(REPO) + "/", ""),
        (sys.prefix + "/", "python-prefix/"),
        (sys.base_prefix + "/", "python-prefix/"),
        (tempfile.gettempdir() + "/", "tmp/"),
        (str(Path.home()) + "/", "~/"),
    ]
    seen: set[str] = set()
    out = []
    for a, b in sorted(pairs, key=lambda p: -len(p[0])):
        if a not in seen and len(a) > 1:
            seen.add(a)
            out.append((a, b))
    return out


def scrub(text: str) -> str:
    for a, b in _path_prefixes():
        text = text.replace(a, b)
    host = socket.gethostname()
    if host:
        text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", HOST_PLACEHOLDER, text)
    return text


def rewrite_kineto(src: Path, dst: Path) -> Path:
    import gzip

    data = json.loads(scrub(gzip.decompress(src.read_bytes()).decode("utf-8")))
    data["traceName"] = dst.name
    if "host_name" in data:
        data["host_name"] = HOST_PLACEHOLDER
    dst.write_bytes(gzip.compress(json.dumps(data, separators=(",", ":")).encode("utf-8"), mtime=0))
    return dst


def scrub_bytes(blob: bytes) -> bytes:
    """Local folders inside serialized protos (XLA's HLO protos name source files) blanked out.

    Each folder is replaced by a string of the same length (``.`` then ``/`` padding), so the
    length prefixes of the enclosing protobuf messages stay valid without parsing them.
    """
    for a, _ in _path_prefixes():
        raw = a.encode("utf-8")
        if raw in blob:
            blob = blob.replace(raw, b"." + b"/" * (len(raw) - 1))
    return blob


def scrub_profile_options(blob: bytes, framework: str) -> bytes:
    """The ``profile_options`` stat with its logdir replaced (TF records it as ``repository_path``)."""
    if framework != "tensorflow":
        return scrub_bytes(blob)  # JAX's options hold no path; any local folder is blanked all the same
    from tensorflow.tsl.profiler.protobuf import profiler_options_pb2

    opts = profiler_options_pb2.ProfileOptions()
    opts.ParseFromString(blob)
    opts.repository_path = "logdir"
    return opts.SerializeToString()


def rewrite_xplane(src: Path, logdir: Path, framework: str) -> Path:
    # traceview's own XPlane classes (a private descriptor pool): the JAX worker has no TensorFlow.
    from traceview.readers.proto.xplane_descriptor import message_classes

    space = message_classes()["XSpace"]()
    space.ParseFromString(src.read_bytes())
    del space.hostnames[:]
    space.hostnames.append(HOST_PLACEHOLDER)
    for plane in space.planes:
        for md in plane.stat_metadata.values():
            md.name = scrub(md.name)
        for md in plane.event_metadata.values():
            md.name = scrub(md.name)
            md.display_name = scrub(md.display_name)
        options_id = next((k for k, md in plane.stat_metadata.items() if md.name == "profile_options"), None)
        stats_lists = [plane.stats] + [md.stats for md in plane.event_metadata.values()]
        stats_lists += [e.stats for line in plane.lines for e in line.events]
        for stats in stats_lists:
            for st in stats:
                if st.WhichOneof("value") == "str_value":
                    st.str_value = scrub(st.str_value)
                elif st.metadata_id == options_id and st.WhichOneof("value") == "bytes_value":
                    st.bytes_value = scrub_profile_options(st.bytes_value, framework)
                elif st.WhichOneof("value") == "bytes_value":
                    st.bytes_value = scrub_bytes(st.bytes_value)
    run = src.parent.name
    # Stored gzipped (traceview reads <host>.xplane.pb.gz by content) to keep the committed traces small.
    dst = logdir / "plugins" / "profile" / run / f"{HOST_PLACEHOLDER}.xplane.pb.gz"
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress(space.SerializeToString(), mtime=0))
    return dst


# ---------------------------------------------------------------------------------------------

MODES = {
    "calibrate": mode_calibrate,
    "point": mode_point,
    "measure": mode_measure,
    "cold": mode_cold,
    "profile": mode_profile,
}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("mode", choices=sorted(MODES))
    ap.add_argument("--case", required=True)
    ap.add_argument("--variant", choices=("clean", "first", "injected", EXPOSED))
    ap.add_argument("--knob", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--out")
    ap.add_argument("--result", required=True)
    args = ap.parse_args(argv)
    case = BY_NAME[args.case]
    variant_threads = case.threads[1] if args.variant in ("first", "injected", EXPOSED) else case.threads[0]
    threads = setup_process(case, variant_threads)
    calm = Calm()
    started = time.time()
    result = MODES[args.mode](case, args, calm)
    result.update(threads=threads, versions=versions(case), wall_s=time.time() - started, pid=os.getpid())
    calm.save()
    Path(args.result).write_text(json.dumps(result, indent=1))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown (see _KEEP)


if __name__ == "__main__":
    main()
