"""The library is the command line: every input form and analysis option of ``diagnose``,
``compare`` and ``export`` gives, through ``traceview.diagnose / compare / export``, the very JSON
(or file) the command prints; errors carry the same one line. Plus the result types' contract:
frozen, a one-line repr, ``to_dict()`` = the JSON report."""

from __future__ import annotations

import dataclasses
import gzip
import inspect
import shutil
from pathlib import Path

import orjson
import pandas as pd
import pytest

import traceview
from tests.conftest import REPO, SAMPLES, gen_docs
from traceview.cli import main
from traceview.table import Table
from traceview.errors import InputError, QualityError, RegressionError, UsageError
from traceview.renderers.json_report import dumps

MLP2 = SAMPLES / "mlp2"
TORCH_EAGER = MLP2 / "torch-eager"
TF_EAGER = MLP2 / "tf-eager"

pytestmark = pytest.mark.skipif(not MLP2.is_dir(), reason="no sample traces")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the command line in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _relative(path: Path) -> str:
    """Paths as the user typed them (the report shows the source as given)."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every input form the command line's argument resolution accepts (traceview.readers.discover)."""
    root = tmp_path_factory.mktemp("inputs")
    xplane = next(TF_EAGER.rglob("*.xplane.pb"))
    kineto = next(TORCH_EAGER.glob("*.pt.trace.json.gz"))
    # A logdir with two profile runs: the newest is read unless run= names the other.
    logdir = root / "logdir"
    for run in ("2026_01_01_00_00_00", "2026_01_02_00_00_00"):
        (logdir / "plugins" / "profile" / run).mkdir(parents=True)
        shutil.copy(xplane, logdir / "plugins" / "profile" / run / "vm.xplane.pb")
    # Two hosts of one profile run: the ranks of one run (a multi-rank section).
    hosts = root / "hosts" / "plugins" / "profile" / "2026_01_01_00_00_00"
    hosts.mkdir(parents=True)
    for host in ("host-a", "host-b"):
        shutil.copy(xplane, hosts / f"{host}.xplane.pb")
    # A folder of captures of two frameworks (what traceview collect writes): compared with torch.
    captures = root / "captures"
    shutil.copytree(TORCH_EAGER, captures / "torch-eager")
    shutil.copytree(TF_EAGER, captures / "tf-eager")
    # A folder of plain trace files.
    files = root / "files"
    files.mkdir()
    shutil.copy(kineto, files / "a.pt.trace.json.gz")
    shutil.copy(next((MLP2 / "torch-compile").glob("*.pt.trace.json.gz")), files / "b.pt.trace.json.gz")
    return {
        "kineto file": kineto,
        "capture folder": TORCH_EAGER,
        "xplane file": xplane,
        "tensorboard logdir": TF_EAGER,
        "profile run folder": xplane.parent,
        "logdir of two runs": logdir,
        "hosts of one run": root / "hosts",
        "folder of captures": captures,
        "folder of trace files": files,
    }


DIAGNOSE_CASES = [
    ("kineto file", {}),
    ("capture folder", {"dispatch_gap_us": 50.0}),
    ("xplane file", {"top": "3"}),
    ("tensorboard logdir", {"top": "all", "redact": True}),
    ("profile run folder", {}),
    ("logdir of two runs", {"run": "2026_01_01_00_00_00"}),
    ("hosts of one run", {"jobs": 2}),
    ("folder of captures", {"jobs": 1, "dispatch_gap_us": 0.0}),
    ("folder of trace files", {"redact": True, "top": "2"}),
]


def _flags(options: dict[str, object]) -> list[str]:
    out: list[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


@pytest.mark.parametrize(("form", "options"), DIAGNOSE_CASES, ids=[c[0] for c in DIAGNOSE_CASES])
def test_diagnose_gives_the_command_lines_json(capsys, inputs, form, options):
    path = _relative(inputs[form])
    code, out, err = cli(capsys, "diagnose", path, "--format", "json", *_flags(options))
    assert code == 0, err
    result = traceview.diagnose(path, **options)
    assert traceview.render(result, "json") == out
    assert dumps(result.to_dict()) == out


def test_the_input_forms_are_what_they_claim(inputs):
    """The cases above cover what they say: several traces, a chosen run, ranks, comparisons."""
    older = traceview.diagnose(inputs["logdir of two runs"], run="2026_01_01_00_00_00")
    newest = traceview.diagnose(inputs["logdir of two runs"])
    assert "2026_01_01" in older.source and "2026_01_02" in newest.source
    hosts = traceview.diagnose(inputs["hosts of one run"])
    assert isinstance(hosts, traceview.FolderDiagnosis) and len(hosts.multi_rank) == 1
    captures = traceview.diagnose(inputs["folder of captures"])
    assert [c.candidate.timeline.meta.framework for c in captures.comparisons] == ["tensorflow"]
    assert isinstance(traceview.diagnose(inputs["capture folder"]), traceview.Diagnosis)


def test_load_reads_every_input_form(inputs):
    one = traceview.load(inputs["tensorboard logdir"])
    assert isinstance(one.events, pd.DataFrame) and one.meta.format == "xplane"
    several = traceview.load(inputs["folder of trace files"])
    assert isinstance(several, list) and [t.meta.framework for t in several] == ["torch", "torch"]
    chosen = traceview.load(inputs["logdir of two runs"], run="2026_01_01_00_00_00")
    assert "2026_01_01" in chosen.meta.source


COMPARE_CASES = [
    ("kineto file", "tensorboard logdir", {}),
    ("capture folder", "xplane file", {"top": "3", "dispatch_gap_us": 100.0}),
    ("kineto file", "logdir of two runs", {"run": "2026_01_01_00_00_00", "redact": True, "top": "all"}),
]


@pytest.mark.parametrize(("base", "cand", "options"), COMPARE_CASES, ids=[f"{b}-{c}" for b, c, _ in COMPARE_CASES])
def test_compare_gives_the_command_lines_json(capsys, inputs, base, cand, options):
    a, b = _relative(inputs[base]), _relative(inputs[cand])
    code, out, err = cli(capsys, "compare", a, b, "--format", "json", *_flags(options))
    assert code == 0, err
    result = traceview.compare(a, b, **options)
    assert traceview.render(result, "json") == out == dumps(result.to_dict())
    if "top" in options and options["top"] != "all":
        assert len(result.op_diff) == int(options["top"])


def test_compare_takes_diagnoses_too(inputs):
    a = traceview.diagnose(_relative(inputs["kineto file"]))
    b = traceview.diagnose(_relative(inputs["tensorboard logdir"]))
    from_paths = traceview.compare(_relative(inputs["kineto file"]), _relative(inputs["tensorboard logdir"]))
    assert dumps(traceview.compare(a, b).to_dict()) == dumps(from_paths.to_dict())
    folder = traceview.diagnose(inputs["folder of trace files"])
    with pytest.raises(UsageError, match="the baseline must be a trace path or a Diagnosis, got a FolderDiagnosis"):
        traceview.compare(folder, b)


def test_the_text_reports_are_the_command_lines(capsys, inputs):
    a, b = _relative(inputs["kineto file"]), _relative(inputs["tensorboard logdir"])
    result = traceview.compare(a, b)
    for fmt in ("terminal", "md", "html"):
        code, out, err = cli(capsys, "compare", a, b, "--format", fmt, "--width", "90")
        assert code == 0, err
        assert traceview.render(result, fmt, width=90) == out


def test_export_writes_the_command_lines_file(capsys, inputs, tmp_path):
    traces = [_relative(inputs["kineto file"]), _relative(inputs["logdir of two runs"])]
    code, _, err = cli(capsys, "export", *traces, "--perfetto", str(tmp_path / "cli.json"), "--run",
                       "2026_01_01_00_00_00", "--dispatch-gap-us", "80", "--redact")
    assert code == 0, err
    written = traceview.export(traces, tmp_path / "lib.json", run="2026_01_01_00_00_00", dispatch_gap_us=80,
                               redact=True)
    assert (tmp_path / "lib.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert written.bytes == (tmp_path / "lib.json").stat().st_size and len(written.sources) == 2
    assert f"({len(written.sources)} traces, {written.events:,} events" in err
    # The dispatch-gap threshold reaches the attribution track.
    default = traceview.export(traces[:1], tmp_path / "default.json")
    assert default.events == traceview.export(traces[:1], tmp_path / "gap0.json", dispatch_gap_us=0).events
    assert (tmp_path / "default.json").read_bytes() != (tmp_path / "gap0.json").read_bytes()


def test_the_options_have_the_command_lines_names_and_defaults():
    from traceview.commands.compare import compare as compare_command
    from traceview.commands.diagnose import diagnose as diagnose_command
    from traceview.commands.export import export as export_command
    from traceview.commands.normalize import normalize as normalize_command
    from traceview.commands.query import query as query_command

    presentation = {"format", "output", "width", "color", "per_rank", "per_trace"}  # traceview.render's arguments, not the analysis'
    for command, function in ((diagnose_command, traceview.diagnose), (compare_command, traceview.compare),
                              (export_command, traceview.export), (normalize_command, traceview.write_parquet)):
        library = inspect.signature(function).parameters
        for name, parameter in inspect.signature(command).parameters.items():
            if name in presentation:
                continue
            assert name in library, f"{function.__name__} lacks {name}="
            default = parameter.default.default  # typer's OptionInfo / ArgumentInfo
            if default is not ... and name != "top":
                assert library[name].default == default, name
        if "top" in library:
            assert str(library["top"].default) == inspect.signature(command).parameters["top"].default.default
    # query's --format is the text it returns, not a rendering of a result: the library takes it too.
    library = inspect.signature(traceview.query).parameters
    for name, parameter in inspect.signature(query_command).parameters.items():
        assert name in library and parameter.default.default in (..., library[name].default), name


def _broken_copy(tmp_path: Path) -> Path:
    """The torch sample with one event whose ts is not a number: dropped as lost data."""
    source = next(TORCH_EAGER.glob("*.pt.trace.json.gz"))
    document = orjson.loads(gzip.decompress(source.read_bytes()))
    document["traceEvents"].append({"ph": "X", "name": "broken", "cat": "cpu_op", "ts": "soon", "dur": 1,
                                    "pid": 1, "tid": 1})
    path = tmp_path / "broken.pt.trace.json.gz"
    path.write_bytes(gzip.compress(orjson.dumps(document)))
    return path


def test_strict_raises_the_command_lines_line_with_the_result(capsys, tmp_path):
    broken = str(_broken_copy(tmp_path))
    code, out, err = cli(capsys, "diagnose", broken, "--format", "json", "--strict")
    assert code == 2 and out  # the report first, then the line
    with pytest.raises(QualityError) as caught:
        traceview.diagnose(broken, strict=True)
    assert err.strip() == f"traceview: {caught.value}"
    assert dumps(caught.value.result.to_dict()) == out
    traceview.diagnose(broken)  # without strict: no error
    code, _, err = cli(capsys, "compare", broken, broken, "--format", "json", "--strict")
    with pytest.raises(QualityError) as caught:
        traceview.compare(broken, broken, strict=True)
    assert code == 2 and err.strip() == f"traceview: {caught.value}"


def test_fail_if_slower_raises_the_command_lines_verdict(capsys):
    a, b = _relative(next(TORCH_EAGER.glob("*.gz"))), _relative(TF_EAGER)
    code, out, err = cli(capsys, "compare", a, b, "--format", "json", "--fail-if-slower", "5")
    with pytest.raises(RegressionError) as caught:
        traceview.compare(a, b, fail_if_slower=5)
    assert code == 1 == caught.value.exit_code
    assert err.strip() == f"traceview: {caught.value}" and "slower than the baseline" in err
    assert dumps(caught.value.comparison.to_dict()) == out
    assert traceview.compare(b, a, fail_if_slower=5).ratio < 1  # faster: passes


@pytest.mark.parametrize(("call", "args"), [
    ("diagnose", ["no/such/trace.json"]),
    ("diagnose", ["sample_traces/mlp2/torch-eager", "--top", "0"]),
    ("diagnose", ["sample_traces/mlp2/torch-eager", "--dispatch-gap-us", "-1"]),
    ("compare", ["sample_traces/mlp2", "sample_traces/mlp2/tf-eager"]),
])
def test_bad_input_is_the_same_one_line(capsys, call, args):
    code, _, err = cli(capsys, call, *args, "--format", "json")
    positional = [a for a in args if not a.startswith("--")][: 2 if call == "compare" else 1]
    flags = {args[i][2:].replace("-", "_"): args[i + 1] for i in range(len(args)) if args[i].startswith("--")}
    options = {k: (float(v) if k == "dispatch_gap_us" else v) for k, v in flags.items()}
    with pytest.raises((InputError, UsageError)) as caught:
        getattr(traceview, call)(*positional, **options)
    assert code == 2 and err.strip() == f"traceview: {caught.value}"


# ---------------------------------------------------------------------------------------------
# The result types


def test_results_are_frozen_with_a_one_line_repr_and_json_ready_dicts():
    diag = traceview.diagnose(TORCH_EAGER)
    cmp = traceview.compare(diag, TF_EAGER)
    folder = traceview.diagnose(MLP2 / "tf-eager" / "..", jobs=1)
    for result in (diag, cmp, folder, diag.steps, diag.attribution, diag.findings[0]):
        text = repr(result)
        assert "\n" not in text and len(text) < 200, text
        assert text.startswith(type(result).__name__ + "(")
    assert "torch-eager" in repr(diag) and "8.15×" in repr(cmp) and f"{len(folder.diagnoses)} traces" in repr(folder)
    for result in (diag, cmp, folder):
        document = result.to_dict()
        assert orjson.loads(orjson.dumps(document)) == document  # plain JSON types only
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.findings = ()  # type: ignore[misc]
    # A diagnosis's tables are numpy columns (no pandas needed); a comparison's are DataFrames.
    assert isinstance(diag.kernels, Table) and isinstance(diag.kernels.to_pandas(), pd.DataFrame)
    assert isinstance(cmp.op_diff, pd.DataFrame)
    steps = diag.per_step()
    assert list(steps.columns[:5]) == ["number", "name", "start", "duration", "cold"]
    assert (steps[list(diag.buckets)].sum(axis=1) == steps["duration"]).all()


def test_the_api_reference_is_current_and_complete():
    docs = gen_docs()
    doc = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    assert docs.render(doc, docs.API_BLOCKS) == doc, "docs/api.md is stale: run python scripts/gen_docs.py"
    for name in traceview.__all__:
        if name != "__version__":
            assert f"### `traceview.{name}`" in doc or f"### `{name}`" in doc, f"{name} is not in docs/api.md"
    for field in dataclasses.fields(traceview.Comparison):
        assert f"| `{field.name}` |" in doc


def test_the_analyses_on_a_second_thread_run_in_the_callers_numpy_settings(monkeypatch):
    # diagnose_timeline runs some analyses on a helper thread; numpy's error settings are a
    # context variable, which a new thread would not see unless the caller's context is carried.
    import numpy as np

    from traceview.analyzers import diagnosis

    seen = []
    launch_stats = diagnosis.launch_stats
    monkeypatch.setattr(diagnosis, "launch_stats", lambda *a: seen.append(np.geterr()["over"]) or launch_stats(*a))
    trace = sorted(SAMPLES.rglob("*.pt.trace.json.gz"))[0]
    with np.errstate(over="ignore"):
        traceview.diagnose(trace)
    assert seen == ["ignore"]
