"""The command line: bad input gets one clear line and exit 2; output is deterministic."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import REPO, SAMPLES, sample_kineto_traces, shared_trace


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True, text=True, cwd=cwd or REPO,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)


def _bad_inputs(tmp_path):
    real_json = next(iter(sample_kineto_traces()), None) or shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")
    raw = gzip.decompress(real_json.read_bytes()) if real_json.suffix == ".gz" else real_json.read_bytes()
    cases = {
        "empty.json": b"",
        "truncated.json": raw[: len(raw) // 2],
        "truncated.json.gz": gzip.compress(raw)[:200],
        "notatrace.json": b'{"hello": "world"}',
        "random.bin": bytes(range(256)) * 4,
        "text.txt": b"just some text\n",
    }
    xplanes = sorted(SAMPLES.rglob("*.xplane.pb"))
    if xplanes:
        cases["truncated.xplane.pb"] = xplanes[0].read_bytes()[:300]
    paths = []
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        paths.append(path)
    empty_dir = tmp_path / "emptydir"
    empty_dir.mkdir()
    (empty_dir / "notes.txt").write_text("no traces here")
    paths.append(empty_dir)
    paths.append(tmp_path / "missing.json")
    return paths


def test_bad_input_gets_one_line_and_exit_2(tmp_path):
    for path in _bad_inputs(tmp_path):
        before = path.read_bytes() if path.is_file() else None
        result = run_cli("diagnose", str(path))
        assert result.returncode == 2, (path.name, result.stdout, result.stderr)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, (path.name, result.stderr)
        assert "Traceback" not in result.stderr
        assert path.name in lines[0]
        if before is not None:
            assert path.read_bytes() == before, "the user's file must never be modified"


def test_unknown_format_option_is_a_usage_error():
    trace = shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")
    result = run_cli("diagnose", str(trace), "--format", "pdf")
    assert result.returncode == 2
    assert "--format" in result.stderr and "Traceback" not in result.stderr


def test_json_output_is_byte_identical_across_runs():
    trace = (sample_kineto_traces() or [shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")])[0]
    first = run_cli("diagnose", str(trace), "--format", "json")
    second = run_cli("diagnose", str(trace), "--format", "json")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    doc = orjson.loads(first.stdout)
    assert doc["report_version"] == "1"
    assert doc["steps"]["count"] >= 1
    buckets = doc["steady_state"]["buckets_ns"]
    assert abs(sum(buckets.values()) - doc["steady_state"]["mean_step_time_ns"]) < 1.0


def test_terminal_report_names_the_essentials():
    trace = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    result = run_cli("diagnose", str(trace), "--width", "80")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for needle in ("Steady-state step", "Per step", "Top kernels", "Top framework ops", "Launch / dispatch",
                   "kernel launches per step", "found by rule 'markers'", "dropped"):
        assert needle in out, needle
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "\x1b[" not in out


@pytest.mark.skipif(not (SAMPLES / "cnn-infer" / "torch-eager").is_dir(), reason="sample_traces/ not present")
def test_findings_are_listed_largest_cause_first_in_every_format(tmp_path):
    """The first finding is the largest cause, whatever its grade: a moderate compute_bound that
    explains most of the step comes before a high launch_bound on a smaller share, in the
    terminal and the HTML report as in the analysis (and the JSON)."""
    import traceview

    capture = SAMPLES / "cnn-infer" / "torch-eager"
    findings = traceview.diagnose(capture).findings
    ranked = [f.rule for f in findings]
    problems = [f for f in findings if f.grade in ("high", "moderate")]
    assert [f.grade for f in problems[:2]] == ["moderate", "high"], "the sample no longer shows the case"
    result = run_cli("diagnose", str(capture), "--width", "200")
    assert result.returncode == 0, result.stderr
    shown = re.findall(r"^\s*(?:HIGH|MODERATE|ok|skipped)\s+(\w+):", result.stdout, flags=re.M)
    assert shown == ranked
    html = tmp_path / "report.html"
    assert run_cli("diagnose", str(capture), "--format", "html", "-o", str(html)).returncode == 0
    assert re.findall(r'<span class="grade \w+">\w+</span></td><td><b>(\w+)</b>', html.read_text()) == ranked


@pytest.mark.skipif(not (SAMPLES / "mlp2" / "tf-function").is_dir(), reason="sample_traces/ not present")
def test_top_tables_never_show_two_names_alike(tmp_path):
    """Two layers' 'gradient_tape/mlp2_1/dense{0,1}_1/MatMul/MatMul:MatMul' differ only in the
    middle: cut to fit, they must still read differently, in the terminal, markdown and HTML."""
    capture = SAMPLES / "mlp2" / "tf-function"
    terminal = run_cli("diagnose", str(capture), "--width", "80").stdout
    table = terminal[terminal.index("Top compute ops"):].split("\n\n")[0].splitlines()[2:]
    names = [line.split("  ")[0].strip() for line in table]
    assert len(names) >= 5 and len(set(names)) == len(names), names
    md = run_cli("diagnose", str(capture), "--format", "md").stdout
    section = md[md.index("**Top compute ops ("):].split("\n\n")[1].splitlines()[2:]
    md_names = [row.split("|")[1].strip() for row in section]
    assert len(set(md_names)) == len(md_names), md_names


def test_progress_never_reaches_piped_output():
    trace = shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")
    result = run_cli("diagnose", str(trace), "--format", "json")
    assert result.stderr == ""
    orjson.loads(result.stdout)


@pytest.mark.skipif(not (SAMPLES / "mlp2").is_dir(), reason="no sample traces")
def test_diagnose_a_folder_of_captures_compares_the_frameworks():
    result = run_cli("diagnose", "sample_traces/mlp2", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = orjson.loads(result.stdout)
    traces = doc["traces"]
    assert {t["trace"]["framework"] for t in traces} == {"torch", "tensorflow", "jax"}
    assert {t["trace"]["format"] for t in traces} == {"kineto-json", "xplane"}
    # Every other capture of the workload, torch's other modes too, against torch eager.
    baseline = next(t["trace"]["source"] for t in traces if "torch-eager" in t["trace"]["source"])
    assert sorted(c["candidate"] for c in doc["comparisons"]) == sorted(t["trace"]["source"] for t in traces
                                                                        if t["trace"]["source"] != baseline)
    assert {c["baseline"] for c in doc["comparisons"]} == {baseline}


@pytest.mark.skipif(not (SAMPLES / "mlp2").is_dir(), reason="no sample traces")
def test_a_folder_compares_traces_within_their_workload_only(tmp_path) -> None:
    """Captures named by their manifest's workload are compared within it, every mode included;
    traces of no named workload only with those running the same ops (a float32 and a float64
    capture of one model), never a JAX program with an unrelated torch one, as the first torch
    trace of the folder was the baseline of everything."""
    import shutil

    for capture in ("torch-eager", "torch-compile", "tf-eager"):
        shutil.copytree(SAMPLES / "mlp2" / capture, tmp_path / "mlp2" / capture)
    shutil.copytree(SAMPLES / "cnn" / "torch-compile", tmp_path / "cnn" / "torch-compile")
    shutil.copytree(REPO / "tests" / "data" / "jax_cpu_mlp2", tmp_path / "jax_step")
    (tmp_path / "dtype").mkdir()
    for name in ("float32", "float64"):
        shutil.copy(REPO / "tests" / "data" / "torch_cpu_dtype" / f"{name}.pt.trace.json.gz", tmp_path / "dtype")
    result = run_cli("diagnose", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr

    def where(source: str) -> str:  # the capture's folder below the one diagnosed, or the trace's file
        return "/".join(Path(source).relative_to(tmp_path).parts[:2])

    pairs = {(where(c["baseline"]), where(c["candidate"])) for c in orjson.loads(result.stdout)["comparisons"]}
    assert pairs == {("mlp2/torch-eager", "mlp2/torch-compile"), ("mlp2/torch-eager", "mlp2/tf-eager"),
                     ("dtype/float32.pt.trace.json.gz", "dtype/float64.pt.trace.json.gz")}


@pytest.mark.skipif(not (SAMPLES / "mlp2").is_dir(), reason="no sample traces")
def test_the_folder_summary_title_takes_the_reports_width():
    result = run_cli("diagnose", "sample_traces/mlp2", "--width", "150")
    assert result.returncode == 0, result.stderr
    title = next(line for line in result.stdout.splitlines() if line.startswith("Across the traces"))
    assert title.endswith("per steady step)"), title  # one line, not wrapped at the table's width


@pytest.mark.parametrize("fmt", ["terminal", "md", "json", "html"])
def test_redact_removes_paths_and_host_names_from_every_report(fmt):
    trace = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    plain = run_cli("diagnose", str(trace), "--format", fmt)
    redacted = run_cli("diagnose", str(trace), "--format", fmt, "--redact")
    assert plain.returncode == 0 and redacted.returncode == 0, redacted.stderr
    plain_text, redacted_text = (r.stdout.replace("\\_", "_") for r in (plain, redacted))
    for secret in ("twshared39868", str(trace.parent)):
        assert secret in plain_text
        assert secret not in redacted_text
    assert "resnet_v100_1rank" in redacted_text


def test_missing_framework_names_the_extra_to_install(tmp_path):
    code = ("import sys; sys.modules['torch'] = None; from traceview.cli import main; "
            f"main(['collect', 'mlp2', '--framework', 'torch', '--mode', 'eager', '-o', {str(tmp_path / 'out')!r}])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "pip install 'traceview[torch]'" in result.stderr and "pip install -e '.[torch]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["diagnose", "--version"])
def test_a_report_is_whole_when_the_process_leaves_without_teardown(command: str) -> None:
    # diagnose and compare end the process once the report is written (cli._leave_without_teardown):
    # exit handlers do not run, yet the whole report reaches the pipe; other commands end as usual.
    trace = next(iter(sample_kineto_traces()))
    args = [command, str(trace), "--format", "json"] if command == "diagnose" else [command]
    code = ("import atexit, sys; from traceview.cli import console_main; "
            "atexit.register(lambda: sys.stdout.write('<teardown>'))\nconsole_main()")
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 0, result.stderr
    if command == "diagnose":
        assert "<teardown>" not in result.stdout and orjson.loads(result.stdout)["steps"]
    else:
        assert result.stdout.endswith("<teardown>")


def test_a_profiler_watching_the_command_line_still_gets_its_exit(tmp_path) -> None:
    # cProfile (like coverage) writes its results at exit: the ordinary exit runs under it.
    trace = next(iter(sample_kineto_traces()))
    profile = tmp_path / "out.prof"
    result = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "traceview", "diagnose",
                             str(trace), "--format", "json"], capture_output=True, text=True, cwd=REPO,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 0, result.stderr
    assert profile.stat().st_size > 0


def test_closed_standard_streams_end_quietly(tmp_path) -> None:
    trace = next(iter(sample_kineto_traces()))
    report = tmp_path / "r.json"
    result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(trace), "--format", "json",
                             "-o", str(report)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300,
                            preexec_fn=lambda: os.close(1))
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    assert orjson.loads(report.read_bytes())["steps"]


@pytest.mark.parametrize("command", ["diagnose", "collect --list", "--version", "--help"])
def test_a_full_standard_output_is_one_line_and_exit_2(command: str) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    args = command.split()
    if command == "diagnose":
        args += [str(next(iter(sample_kineto_traces()))), "--format", "json"]
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "traceview", *args],
                                stdout=full, stderr=subprocess.PIPE, text=True, cwd=REPO,
                                env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "cannot write" in result.stderr


def test_a_closed_standard_error_sends_no_message_to_standard_output(tmp_path) -> None:
    # rich, given no file, writes to standard output: a message would land in a report or a pipe.
    result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(tmp_path / "missing.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300,
                            preexec_fn=lambda: os.close(2))
    assert result.returncode == 2 and result.stdout == b""


@pytest.mark.parametrize("case", ["error", "usage error", "warning", "export"])
def test_a_full_standard_error_keeps_the_exit_status(tmp_path, case: str) -> None:
    # A message that cannot be written is lost (there is nowhere left to say so); the command's
    # exit status stays its own: 2 for an error, 0 for a report written beside a warning.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    trace = next(iter(sample_kineto_traces()))
    report = tmp_path / "report.json"
    if case == "warning":  # a folder whose second trace is a broken link: skipped with a warning
        (tmp_path / "runs").mkdir()
        (tmp_path / "runs" / trace.name).write_bytes(trace.read_bytes())
        (tmp_path / "runs" / "gone.pt.trace.json").symlink_to(tmp_path / "missing.json")
    args = {"error": ["diagnose", str(tmp_path / "missing.json")], "usage error": ["diagnose", "--no-such-option"],
            "warning": ["diagnose", str(tmp_path / "runs"), "--format", "json", "-o", str(report)],
            "export": ["export", str(trace), "--perfetto", str(report)]}[case]  # ("wrote …" on stderr)
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "traceview", *args], stdout=subprocess.PIPE, stderr=full,
                                cwd=REPO, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == (0 if case in ("warning", "export") else 2)
    if case == "warning":
        assert orjson.loads(report.read_bytes())["steps"]
    if case == "export":
        assert orjson.loads(report.read_bytes())["traceEvents"]


@pytest.mark.parametrize("link", ["same path", "hard link"])
@pytest.mark.parametrize("command", ["diagnose", "compare"])
def test_a_report_never_overwrites_an_input_trace(tmp_path, command: str, link: str) -> None:
    trace = tmp_path / "trace.json.gz"
    trace.write_bytes(next(iter(sample_kineto_traces())).read_bytes())
    before = trace.read_bytes()
    target = trace
    if link == "hard link":
        target = tmp_path / "report.json"
        os.link(trace, target)
    inputs = [str(trace)] * (2 if command == "compare" else 1)
    result = run_cli(command, *inputs, "--format", "json", "-o", str(target))
    assert result.returncode == 2 and "would overwrite the input trace" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert trace.read_bytes() == before


@pytest.mark.parametrize("command, option, value", [
    ("diagnose", "--dispatch-gap-us", "nan"),
    ("diagnose", "--dispatch-gap-us", "inf"),
    ("diagnose", "--dispatch-gap-us", "1e308"),
    ("diagnose", "--dispatch-gap-us", "-1"),
    ("diagnose", "--width", "0"),
    ("diagnose", "--width", "100000000"),
    ("diagnose", "--top", "²"),  # a digit to str.isdigit(), not to int()
    ("compare", "--fail-if-slower", "nan"),
    ("compare", "--fail-if-slower", "-inf"),
])
def test_option_values_out_of_range_are_one_line(command: str, option: str, value: str) -> None:
    trace = str(next(iter(sample_kineto_traces())))
    result = run_cli(command, *([trace] * (2 if command == "compare" else 1)), option, value)
    assert result.returncode == 2, (result.stdout[:200], result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1 and option in result.stderr, result.stderr
    assert result.stdout == ""


def test_a_step_window_beyond_any_counter_is_one_line(tmp_path) -> None:
    result = run_cli("run", "--steps", "5-99999999999999999999", "-o", str(tmp_path / "run"), "--", "true")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "--steps" in result.stderr, result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("args, names", [
    (["diagnose"], "Missing argument 'PATH'"),
    (["diagnose", "x.json", "--no-such-option"], "--no-such-option"),
    (["diagnose", "x.json", "--width", "wide"], "--width"),
    (["no-such-command"], "no-such-command"),
])
def test_usage_errors_of_the_parser_are_one_line_naming_the_help(args: list[str], names: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0] and "--help" in lines[0], result.stderr


def test_an_environment_width_of_zero_still_shows_messages() -> None:
    # COLUMNS=0 made rich print nothing at all, the error message included.
    result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", "/nonexistent/trace.json"],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin", "COLUMNS": "0"})
    assert result.returncode == 2 and "/nonexistent/trace.json" in result.stderr
    listing = subprocess.run([sys.executable, "-m", "traceview", "collect", "--list"], capture_output=True,
                             text=True, cwd=REPO, timeout=120, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                                                                    "COLUMNS": "0"})
    assert listing.returncode == 0 and "mlp2" in listing.stdout


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("traceview ") and "schema" in result.stdout


def test_top_sets_the_rows_of_the_kernel_and_op_tables():
    import json as _json
    import os as _os
    import subprocess as _subprocess
    import sys as _sys

    from tests.conftest import REPO, SAMPLES

    folder = SAMPLES / "mlp2" / "tf-function"
    if not folder.is_dir():
        import pytest as _pytest

        _pytest.skip("sample traces not present")

    def run(*args: str) -> _subprocess.CompletedProcess[str]:
        return _subprocess.run([_sys.executable, "-m", "traceview", "diagnose", str(folder), *args],
                               capture_output=True, text=True, cwd=REPO, timeout=120,
                               env={"NO_COLOR": "1", "PATH": _os.environ.get("PATH", "/usr/bin:/bin")})

    every = _json.loads(run("--top", "all", "--format", "json").stdout)
    three = _json.loads(run("--top", "3", "--format", "json").stdout)
    default = _json.loads(run("--format", "json").stdout)
    assert len(three["top_kernels"]) == 3 and len(default["top_kernels"]) == 10
    assert len(every["top_kernels"]) > 10 and every["top_kernels"][:3] == three["top_kernels"]
    bad = run("--top", "x")
    assert bad.returncode == 2 and "--top" in bad.stderr


def test_collect_names_an_unknown_workload_first():
    import os as _os
    import subprocess as _subprocess
    import sys as _sys

    from tests.conftest import REPO

    result = _subprocess.run([_sys.executable, "-m", "traceview", "collect", "nosuch"], capture_output=True, text=True,
                             cwd=REPO, timeout=120, env={"NO_COLOR": "1", "PATH": _os.environ.get("PATH", "/usr/bin:/bin")})
    assert result.returncode == 2
    assert "unknown workload 'nosuch'" in result.stderr and "mlp2" in result.stderr


# --------------------------------------------------------------------------------------------
# Help text: placeholders, never type tags
# --------------------------------------------------------------------------------------------
COMMANDS = ("diagnose", "compare", "whatif", "collect", "export", "normalize", "query", "run")


def _placeholders(help_text: str) -> list[str]:
    """The usage line and the names column of the argument and option lists: where typer would
    put ``{PATH}`` or a type tag (``<str>``, ``<path>``); the help column may quote ``<path>``."""
    lines = help_text.splitlines()
    found = [line for line in lines if line.startswith("Usage:")]
    section = ""
    for line in lines:
        if line.endswith(":") and not line.startswith(" "):
            section = line
        elif section in ("Arguments:", "Options:") and line.startswith("  ") and not line.startswith("   "):
            found.append(re.split(r"\s{2,}", line.strip())[0])
    return found


def test_every_command_is_covered_by_the_help_check() -> None:
    from traceview.cli import app

    assert sorted(c.name for c in app.registered_commands) == sorted(COMMANDS)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_names_placeholders_not_type_tags(command: str) -> None:
    from typer.testing import CliRunner

    from traceview.cli import app

    result = CliRunner().invoke(app, [command, "--help"] if command else ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    placeholders = _placeholders(result.output)
    assert len(placeholders) > 2, result.output
    tagged = [p for p in placeholders if re.search(r"[<>{}]", p)]
    assert not tagged, f"type tags in `traceview {command} --help`: {tagged}"



def test_a_report_that_cannot_be_written_whole_leaves_no_partial_file(tmp_path, monkeypatch) -> None:
    # A full disk stops a write half way: what it left would pass for a whole report.
    from pathlib import Path

    from traceview.commands.output import emit
    from traceview.errors import UsageError

    target = tmp_path / "report.md"

    def half_then_full(self: Path, text: str, encoding: str = "utf-8") -> None:
        with open(self, "w", encoding=encoding) as handle:
            handle.write(text[: len(text) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full)
    with pytest.raises(UsageError, match="No space left"):
        emit("# report\n" * 100, target)
    assert not target.exists()


@pytest.mark.parametrize("args", [
    ["diagnose", ""], ["diagnose", "{trace}", "-o", ""], ["compare", "", "{trace}"], ["compare", "{trace}", ""],
    ["normalize", "{trace}", "-o", ""], ["export", "", "--perfetto", "out.json"],
    ["export", "{trace}", "--perfetto", ""], ["query", "", "SELECT 1"],
])
def test_an_empty_path_is_one_line_and_exit_2(tmp_path, args: list[str]) -> None:
    # Path("") is the current folder: an unset shell variable must not analyse it or write into it.
    trace = str(next(iter(sample_kineto_traces())))
    result = run_cli(*[a.replace("{trace}", trace) for a in args], cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "an empty path" in result.stderr, result.stderr
    assert not result.stdout and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, said", [
    (["diagnose", "x.json", "--stirct"], "no such option: --stirct (did you mean --strict?)"),
    (["compare", "a.json", "b.json", "--fromat", "md"], "no such option: --fromat (did you mean --format?)"),
    (["diagnose", "x.json", "--per_rank"], "no such option: --per_rank (did you mean --per-rank?)"),
    (["diagnose", "x.json", "--form", "md"], "no such option: --form (did you mean --format?)"),
    # Nothing near: the command's options, never a guess two letters in five alike (--jobs for --bogus).
    (["diagnose", "x.json", "--bogus"], "no such option: --bogus; the options are --color, --dispatch-gap-us, "
                                        "--format, --help, --jobs, --no-color, --output, --per-rank, --per-trace, "
                                        "--redact, --run, --strict, --top, --width"),
    (["--bogus"], "no such option: --bogus; the options are --help, --install-completion, --max-bytes"),
])
def test_an_unknown_option_names_the_one_it_mistypes_or_the_commands_options(args: list[str], said: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], result.stderr


def test_a_run_that_a_folder_of_torch_traces_does_not_hold_is_refused_naming_its_runs(tmp_path) -> None:
    """--run picks a run in a folder of torch.profiler traces as in a TensorBoard logdir (each
    folder holding traces is a run); one that names none is refused, not ignored."""
    trace = (sample_kineto_traces() or [shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")])[0]
    for run in ("first", "second"):
        (tmp_path / run).mkdir()
        (tmp_path / run / trace.name).write_bytes(trace.read_bytes())
    refused = run_cli("diagnose", str(tmp_path), "--run", "nope")
    assert refused.returncode == 2 and not refused.stdout
    assert refused.stderr.strip().splitlines() == [
        f"traceview: {tmp_path}: no run named 'nope' (runs found: first, second); pick one of those"]
    alone = run_cli("diagnose", str(tmp_path / "first"), "--run", "nope")
    assert alone.returncode == 2 and "(runs found: first)" in alone.stderr
    chosen = run_cli("diagnose", str(tmp_path), "--run", "second", "--format", "json")
    assert chosen.returncode == 0, chosen.stderr
    assert f"{os.sep}second{os.sep}" in orjson.loads(chosen.stdout)["trace"]["source"]


@pytest.mark.parametrize("words, offered", [
    ("traceview diagnose x.json --format ", ["html", "json", "md", "terminal"]),
    ("traceview compare a.json b.json -f m", ["md"]),
    ("traceview whatif x.json --format ", ["json", "md", "terminal"]),  # (no HTML what-if report)
    ("traceview query runs/ SQL --format ", ["table", "csv", "json"]),
])
def test_shell_completion_offers_the_format_names(words: str, offered: list[str]) -> None:
    """`traceview --install-completion`'s bash completion, asked through the console script as the
    shell asks it: the formats the renderer registry (traceview.sql for query) has for the command."""
    script = os.path.join(os.path.dirname(sys.executable), "traceview")
    if not os.path.exists(script):
        pytest.skip(f"no traceview console script beside {sys.executable}")
    result = subprocess.run([script], capture_output=True, text=True, cwd=REPO, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "_TRACEVIEW_COMPLETE": "complete_bash",
                                 "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - (words[-1] != " "))})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == offered


@pytest.mark.skipif(not (SAMPLES / "mlp2").is_dir(), reason="no sample traces")
@pytest.mark.parametrize("fmt, report_heading", [("terminal", "╭─ traceview diagnose"),
                                                 ("md", "### traceview diagnose:")])
def test_a_folder_of_captures_shows_the_comparisons_a_line_per_trace_and_one_report(fmt: str,
                                                                                       report_heading: str) -> None:
    """The demo's folder (9 captures of one model) reads on a screen or two: the comparisons, a
    line per capture, and the baseline's own report (it printed all 9, ~1,000 lines); --per-trace
    shows every capture's."""
    short = run_cli("diagnose", "sample_traces/mlp2", "--format", fmt, "--width", "100")
    assert short.returncode == 0, short.stderr
    captures = sorted(path.name for path in (SAMPLES / "mlp2").iterdir() if path.is_dir())
    summary = short.stdout.split("Per trace", 1)[1].split(report_heading, 1)[0]
    assert [c for c in captures if re.search(rf"(^|\| ) ?{re.escape(c)} ", summary, re.M)] == captures
    assert short.stdout.count(report_heading) == 1
    assert "torch-eager" in short.stdout.split(report_heading, 1)[1].splitlines()[0 if fmt == "md" else 1]
    assert "--per-trace shows every trace's" in " ".join(short.stdout.split())
    assert len(short.stdout.splitlines()) < 200
    every = run_cli("diagnose", "sample_traces/mlp2", "--format", fmt, "--width", "100", "--per-trace")
    assert every.returncode == 0 and every.stdout.count(report_heading) == len(captures)
