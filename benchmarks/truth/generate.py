"""Measure and capture every ground-truth case: ``python -m benchmarks.truth.generate [--cases a,b] [--quick]``.

For each case (``cases.CASES``), one process at a time (the frameworks never share a process):

1. calibrate the knob so the injected cost reaches its target time on this machine (a hidden
   case: so its work, measured on the exposed twin, reaches it);
2. ground truth without the profiler: steady cases interleave clean and injected steps in
   blocks with rotating order behind the calm gate (one process, or alternating processes when
   the variants need different process-wide settings); cold cases time the first step of
   several fresh processes per variant, interleaved;
3. one profiled capture per variant (retried when the machine was not calm), the trace
   rewritten to carry no local paths or host name;
4. ``cases/<case>/ground_truth.json`` beside ``clean/`` and ``injected/``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.truth.cases import EXPOSED, Case, select
from benchmarks.truth.measure import bootstrap_median_diff, search_knob
from traceview.collectors.manifest import cpu_name

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES_DIR = HERE / "cases"
PROFILE_TRIES = 2


class WorkerError(RuntimeError):
    pass


_last_tf_end = [0.0]


def worker(mode: str, case: Case, variant: str | None = None, knob: int | None = None,
           out: Path | None = None, rounds: int | None = None) -> dict[str, Any]:
    """Run one worker process and return its result."""
    if case.framework == "tensorflow":
        # TF profiler run folders are named to the second: never two TF processes in one second.
        time.sleep(max(0.0, _last_tf_end[0] + 1.1 - time.time()))
    with tempfile.TemporaryDirectory(prefix="truth-worker-") as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "benchmarks.truth.worker", mode, "--case", case.name, "--result", str(result)]
        if variant:
            cmd += ["--variant", variant]
        if knob is not None:
            cmd += ["--knob", str(knob)]
        if out is not None:
            cmd += ["--out", str(out)]
        if rounds:
            cmd += ["--rounds", str(rounds)]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if case.framework == "tensorflow":
            _last_tf_end[0] = time.time()
        if proc.returncode != 0 or not result.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-25:])
            raise WorkerError(f"{case.name} {mode} {variant or ''} failed ({proc.returncode}):\n{tail}")
        return json.loads(result.read_text())


def log(msg: str) -> None:
    print(f"[{_dt.datetime.now():%H:%M:%S}] {msg}", flush=True)


def calibrate(case: Case) -> tuple[int | None, list[dict[str, float]]]:
    if case.knob is None:
        return None, []
    if not case.isolate:
        r = worker("calibrate", case)
        return int(r["knob"]), r["points"]
    kn = case.knob

    def cost_at(k: int) -> tuple[float, float]:
        clean = worker("point", case, "clean", k)["median_ns"]
        injected = worker("point", case, "injected", k)["median_ns"]
        return injected - clean, clean

    return search_knob(kn.start, kn.power, kn.lo, kn.hi, lambda c: max(kn.target_ms * 1e6, kn.share * c), cost_at)


def truth_steady(case: Case, knob: int | None, quick: bool) -> dict[str, Any]:
    rounds = 3 if quick else case.rounds
    if not case.isolate:
        r = worker("measure", case, knob=knob, rounds=rounds)
        times, kept, rejected = r["iter_ns"], r["rounds_kept"], r["rounds_rejected"]
        processes = 1
    else:
        times = {"clean": [], "injected": []}
        kept = rejected = 0
        order = ["clean", "injected", "injected", "clean"]
        for v in order:
            r = worker("measure", case, v, knob, rounds=max(2, rounds // 2))
            times[v] += r["iter_ns"][v]
            kept += r["rounds_kept"]
            rejected += r["rounds_rejected"]
        processes = len(order)
    diff = bootstrap_median_diff(times["clean"], times["injected"])
    extra: dict[str, Any] = {}
    if "first" in times:  # a two-cause case: each cost over the variant below it
        extra = {"first": {"median_ns": float(np.median(times["first"])), "n": len(times["first"])},
                 "diff_first": bootstrap_median_diff(times["clean"], times["first"]),
                 "diff_second": bootstrap_median_diff(times["first"], times["injected"])}
    if EXPOSED in times:  # a hidden case: the work's own size, where nothing overlaps it
        extra = {EXPOSED: {"median_ns": float(np.median(times[EXPOSED])), "n": len(times[EXPOSED])},
                 f"diff_{EXPOSED}": bootstrap_median_diff(times["clean"], times[EXPOSED])}
    return {
        "measure": "iteration time (step start to the end of the work after the step), steady steps",
        "design": f"{'one process' if processes == 1 else f'{processes} alternating processes'}; rounds of one "
                  f"{case.block}-step block per variant, order rotating, first step of each block dropped; "
                  "rounds kept only when the calm gate passed before and after",
        "rounds_kept": kept,
        "rounds_rejected": rejected,
        "clean": {"median_ns": float(np.median(times["clean"])), "n": len(times["clean"])},
        "injected": {"median_ns": float(np.median(times["injected"])), "n": len(times["injected"])},
        "diff": diff,
        **extra,
        "samples_ns": times,
    }


def truth_cold(case: Case, knob: int | None, quick: bool) -> dict[str, Any]:
    reps = 1 if quick else case.cold_reps
    first: dict[str, list[int]] = {"clean": [], "injected": []}
    calm: dict[str, list[bool]] = {"clean": [], "injected": []}
    order: list[str] = []
    for r in range(reps):
        order += ["clean", "injected"] if r % 2 == 0 else ["injected", "clean"]
    for v in order:
        res = worker("cold", case, v, knob)
        first[v].append(res["first_ns"])
        calm[v].append(res["calm"])
    diff = bootstrap_median_diff(first["clean"], first["injected"])
    return {
        "measure": "first measured iteration of a fresh process (the clean twin ran one unmeasured step first)",
        "design": f"{reps} fresh processes per variant, interleaved",
        "clean": {"median_ns": float(np.median(first["clean"])), "n": reps, "calm": calm["clean"]},
        "injected": {"median_ns": float(np.median(first["injected"])), "n": reps, "calm": calm["injected"]},
        "diff": diff,
        "samples_ns": first,
    }


def profile(case: Case, variant: str, knob: int | None, dest: Path) -> dict[str, Any]:
    best: dict[str, Any] | None = None
    for attempt in range(PROFILE_TRIES):
        out = dest / f"{variant}.try{attempt}"
        r = worker("profile", case, variant, knob, out=out)
        r["attempt"] = attempt
        if best is None or (r["calm"] and not best["calm"]) or (
            r["calm"] == best["calm"] and r["foreign_cpu_share"] < best["foreign_cpu_share"]
        ):
            if best is not None:
                shutil.rmtree(best["_out"], ignore_errors=True)
            best = dict(r, _out=str(out))
        else:
            shutil.rmtree(out, ignore_errors=True)
        if r["calm"]:
            break
    assert best is not None
    final = dest / variant
    Path(best.pop("_out")).rename(final)
    return best


# The profiler distorts an injected cost when the trace holds more or less of it than runs without
# the profiler by more than the scorer's tolerance (±25 %): attribution can only split what the
# trace holds, so such a case is scored against the in-trace cost, and the table says so.
DISTORTION = 0.25


def score_fields(case: Case, cost_unprofiled: float | None, cost_in_trace: float,
                 declared: tuple[str, str] | None = None) -> dict[str, Any]:
    """Which measured cost the scorer holds the attribution against, and why (``declared``: a
    second cause's own (score_against, score_reason); default: the case's)."""
    against, reason = declared or (case.score_against, case.score_reason)
    if case.kind == "hidden":
        # What removing hidden work saves is ~0 by construction: no bucket's growth is held against
        # it. The scorer replays the injected trace without the cause against the clean twin's trace
        # (the measured fix) and bounds the finding's grade by the saving the traces measure.
        return {"against": "clean_trace", "cost_ns": cost_unprofiled,
                "why": "a hidden case: the replay without the cause is scored against the clean twin's trace, "
                       "and the finding's grade against the saving measured between the two traces; the cost "
                       "here is the unprofiled saving of removing the work (injected − clean)"}
    if against == "in_trace":
        return {"against": "in_trace", "cost_ns": cost_in_trace, "why": reason}
    if cost_unprofiled and cost_in_trace and abs(cost_in_trace / cost_unprofiled - 1) > DISTORTION:
        return {"against": "in_trace", "cost_ns": cost_in_trace,
                "why": f"the profiler changed the injected cost {cost_in_trace / cost_unprofiled:.2f}× "
                       f"(more than ±{DISTORTION:.0%}): the trace holds {cost_in_trace / 1e6:.2f} ms of it"}
    return {"against": "unprofiled", "cost_ns": cost_unprofiled,
            "why": "the injected cost is what runs without the profiler; the trace should attribute that much"}


def _machine() -> dict[str, Any]:
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}


def generate_case(case: Case, quick: bool) -> dict[str, Any]:
    t0 = time.time()
    log(f"{case.name}: calibrating")
    knob, points = calibrate(case)
    log(f"{case.name}: knob {knob}; ground truth without the profiler")
    truth = truth_cold(case, knob, quick) if case.window == "cold" else truth_steady(case, knob, quick)
    staging = CASES_DIR / f".{case.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    prof = {}
    for v in case.variants:
        log(f"{case.name}: profiling {v}")
        prof[v] = profile(case, v, knob, staging)
    if "first" in prof:  # only its timings are needed (each cost in the trace); the trace is not kept
        shutil.rmtree(staging / "first", ignore_errors=True)

    def profiled_time(r: dict[str, Any]) -> float:
        if case.window == "cold":
            return float(r["iter_ns"][0])
        return float(np.median([r["iter_ns"][i] for i in r["steps"]["steady"]]))

    in_trace = {v: profiled_time(prof[v]) for v in prof}
    cost_in_trace = in_trace["injected"] - in_trace["clean"]
    cost_unprofiled = truth["diff"]["median_diff_ns"]
    inflation = {v: in_trace[v] / truth[v]["median_ns"] for v in prof}
    first = prof["clean"]
    doc = {
        "case": case.spec(),
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "quick": quick,
        "versions": first["versions"],
        "machine": _machine(),
        "threads": {"clean": prof["clean"]["threads"], "injected": prof["injected"]["threads"]},
        "knob": {"value": knob, "calibration_points": points,
                 "target_ms": case.knob.target_ms if case.knob else None,
                 "target_share_of_clean_step": case.knob.share if case.knob else None},
        "unprofiled": {k: v for k, v in truth.items() if k != "diff"},
        "cost_unprofiled_ns": cost_unprofiled,
        "cost_unprofiled_ci95_ns": truth["diff"]["ci95_ns"],
        "cost_share_of_injected_step": (cost_unprofiled / truth["injected"]["median_ns"]) if cost_unprofiled else None,
        "profiled": {
            v: {
                "trace": f"{v}/{prof[v]['trace']}" if v != "first" else None,
                "step_ns": prof[v]["step_ns"],
                "iter_ns": prof[v]["iter_ns"],
                "compared_ns": in_trace[v],
                "calm": prof[v]["calm"],
                "attempt": prof[v]["attempt"],
                "foreign_cpu_share": prof[v]["foreign_cpu_share"],
                "profiler": prof[v]["profiler"],
            }
            for v in prof
        },
        "cost_in_trace_ns": cost_in_trace,
        "inflation": inflation,
        "inflation_note": "profiled / unprofiled time of the compared steps (steady median, or the first step)",
        "score": score_fields(case, cost_unprofiled, cost_in_trace),
        "steps": dict(prof["clean"]["steps"], window=case.window,
                      compared="first profiled step (index 0)" if case.window == "cold" else "steady steps 1..N"),
        "wall_s": round(time.time() - t0, 1),
    }
    if case.second is not None:
        doc["causes"] = pair_causes(case, truth, in_trace)
    if case.kind == "hidden":
        doc["hidden_work"] = hidden_work(truth)
        doc["knob"]["calibrated_on"] = f"{EXPOSED} − clean: the work's own size, where nothing overlaps it"
    (staging / "ground_truth.json").write_text(json.dumps(doc, indent=1) + "\n")
    final = CASES_DIR / case.name
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    ci = doc["cost_unprofiled_ci95_ns"] or [float("nan")] * 2
    work = ""
    if "hidden_work" in doc:
        hw = doc["hidden_work"]
        wci = hw["work_unprofiled_ci95_ns"] or [float("nan")] * 2
        work = f"work {hw['work_unprofiled_ns'] / 1e6:.2f} ms (CI {wci[0] / 1e6:.2f}..{wci[1] / 1e6:.2f}), "
    log(f"{case.name}: {work}cost {cost_unprofiled / 1e6:.2f} ms (CI {ci[0] / 1e6:.2f}..{ci[1] / 1e6:.2f}), in trace "
        f"{cost_in_trace / 1e6:.2f} ms, inflation clean {inflation['clean']:.2f} injected {inflation['injected']:.2f}, "
        f"{doc['wall_s']} s")
    return doc


def hidden_work(truth: dict[str, Any]) -> dict[str, Any]:
    """A hidden case's work on its own (exposed − clean, unprofiled, with its CI) beside what
    removing it saves (injected − clean): how much of it the step did not wait for."""
    work = truth[f"diff_{EXPOSED}"]
    saving = truth["diff"]["median_diff_ns"]
    return {"measured_as": f"{EXPOSED} − clean (the work where nothing overlaps it)",
            "work_unprofiled_ns": work["median_diff_ns"], "work_unprofiled_ci95_ns": work["ci95_ns"],
            "saving_unprofiled_ns": saving, "saving_unprofiled_ci95_ns": truth["diff"]["ci95_ns"],
            "saving_share_of_work": saving / work["median_diff_ns"] if work["median_diff_ns"] else None}


def pair_causes(case: Case, truth: dict[str, Any], in_trace: dict[str, float]) -> list[dict[str, Any]]:
    """A two-cause case's costs, each on its own: the first over clean, the second over first,
    unprofiled (with its CI) and in the trace, and which of them the scorer uses.

    Whether the profiler distorted the costs is judged on the two together (injected − clean):
    each cost in the trace is a difference of two profiled processes, and a noisy first cost
    (a retrace) makes the second one's in-trace share swing far more than the profiler does."""
    assert case.second is not None
    total_unprofiled = truth["diff"]["median_diff_ns"]
    total_in_trace = in_trace["injected"] - in_trace["clean"]
    distorted = bool(total_unprofiled) and abs(total_in_trace / total_unprofiled - 1) > DISTORTION
    out = []
    for which, (below, above), expected, declared in (
        ("first", ("clean", "first"), (case.cause, case.expected_bucket, case.expected_finding),
         (case.score_against, case.score_reason)),
        ("second", ("first", "injected"), (case.second.cause, case.second.expected_bucket, case.second.expected_finding),
         (case.second.score_against, case.second.score_reason)),
    ):
        diff = truth[f"diff_{which}"]
        cost_unprofiled, cost_in_trace = diff["median_diff_ns"], in_trace[above] - in_trace[below]
        if declared[0] == "in_trace":
            score = score_fields(case, cost_unprofiled, cost_in_trace, declared)
        elif distorted:
            score = {"against": "in_trace", "cost_ns": cost_in_trace,
                     "why": f"the profiler changed the two costs together {total_in_trace / total_unprofiled:.2f}× "
                            f"(more than ±{DISTORTION:.0%}): the trace holds {cost_in_trace / 1e6:.2f} ms of this one"}
        else:
            score = {"against": "unprofiled", "cost_ns": cost_unprofiled,
                     "why": f"the two costs together ran {total_in_trace / total_unprofiled:.2f}× as long profiled "
                            "(within the tolerance): the trace should attribute what runs without the profiler"}
        out.append({"cause": expected[0], "expected_bucket": expected[1], "expected_finding": expected[2],
                    "measured_as": f"{above} − {below}", "cost_unprofiled_ns": cost_unprofiled,
                    "cost_unprofiled_ci95_ns": diff["ci95_ns"], "cost_in_trace_ns": cost_in_trace, "score": score})
    return out


def respec(case: Case) -> bool:
    """Refresh the spec-derived fields of an existing ground_truth.json (no re-measurement).

    For edits to the table that change no measurement: the cause text, expected bucket/finding,
    or which recorded cost the scorer uses.
    """
    path = CASES_DIR / case.name / "ground_truth.json"
    if not path.exists():
        return False
    doc = json.loads(path.read_text())
    doc["case"] = case.spec()
    doc["score"] = score_fields(case, doc["cost_unprofiled_ns"], doc["cost_in_trace_ns"])
    if case.second is not None and "causes" in doc:
        in_trace = {v: doc["profiled"][v]["compared_ns"] for v in case.variants}
        truth = dict(doc["unprofiled"], diff={"median_diff_ns": doc["cost_unprofiled_ns"],
                                              "ci95_ns": doc["cost_unprofiled_ci95_ns"]})
        doc["causes"] = pair_causes(case, truth, in_trace)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--quick", action="store_true", help="few repetitions, for development")
    ap.add_argument("--respec", action="store_true",
                    help="only rewrite the case-table fields of existing ground_truth.json files")
    args = ap.parse_args(argv)
    CASES_DIR.mkdir(parents=True, exist_ok=True)
    if args.respec:
        for case in select(args.cases):
            log(f"{case.name}: {'updated' if respec(case) else 'no ground_truth.json'}")
        return 0
    failed = []
    for case in select(args.cases):
        try:
            generate_case(case, args.quick)
        except WorkerError as err:
            log(str(err))
            failed.append(case.name)
    total = sum(p.stat().st_size for p in CASES_DIR.rglob("*") if p.is_file() and not p.name.endswith(".json"))
    log(f"traces: {total / 1e6:.2f} MB under {CASES_DIR.relative_to(REPO)}")
    if failed:
        log(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
