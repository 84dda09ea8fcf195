"""The Python examples of README.md and docs/*.md run against the bundled sample traces, so that
what the docs show cannot drift from what the code does.

How an example is written:

- a ```python block written as a session (``>>>`` prompts, each output under its line) is a
  doctest: it runs, and what it prints must be the output shown (spacing aside; ``...`` stands
  for any text);
- any other ```python block runs as a script and must finish without an error;
- a file's blocks run in order in one namespace (a block may use the names an earlier one made),
  in the repository's root, so that ``sample_traces/mlp2/torch-eager`` names the bundled trace;
- a block that cannot run here (a training loop of your own, a Spark cluster) has the line
  ``<!-- not run: why -->`` right above its opening fence;
- the generated reference between ``<!-- api:begin`` and ``<!-- api:end -->`` (signatures, not
  code) is not run: tests/test_library.py holds it to the code.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

NOT_RUN = "<!-- not run:"
GENERATED = ("<!-- api:begin", "<!-- api:end")
SESSION_PROMPT = ">>>"


@dataclass(frozen=True)
class Example:
    """A ```python block: where it starts (its first code line, 1-based) and its code."""

    line: int
    code: str

    @property
    def is_session(self) -> bool:
        return any(line.lstrip().startswith(SESSION_PROMPT) for line in self.code.splitlines())


def examples(document: Path) -> list[Example]:
    """The ```python blocks of a markdown file that are meant to run (see the module's docstring)."""
    found: list[Example] = []
    lines = document.read_text(encoding="utf-8").splitlines()
    generated = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith(GENERATED[0]):
            generated = True
        elif line.startswith(GENERATED[1]):
            generated = False
        if not line.startswith("```"):
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if lines[i].startswith("```")), len(lines))
        before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        if line.strip() == "```python" and not generated and not before.startswith(NOT_RUN):
            found.append(Example(index + 2, "\n".join(lines[index + 1:end]) + "\n"))
        index = end + 1
    return found


# The files with examples to run.
DOCUMENTS = [d for d in (REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))) if examples(d)]


def test_the_convention_finds_the_examples() -> None:
    """Each kind of block is told apart: the README's session, a script, a block marked not run,
    the generated signatures."""
    readme = examples(REPO / "README.md")
    assert any(example.is_session for example in readme)
    assert not any("cap.step()" in example.code for example in readme)  # marked not run
    api = examples(REPO / "docs" / "api.md")
    assert api and not any(example.is_session for example in api)
    assert not any(example.code.startswith("traceview.load(path") for example in api)  # generated


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.relative_to(REPO).as_posix() for d in DOCUMENTS])
def test_the_examples_run_and_print_what_they_show(document: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (SAMPLES / "mlp2").is_dir():
        pytest.skip(f"the sample traces are not in {SAMPLES}")
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    where = document.relative_to(REPO).as_posix()
    for example in examples(document):
        if example.is_session:
            _check_session(example, namespace, where)
        else:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(example.code, f"{where}:{example.line}", "exec"), namespace)  # noqa: S102 - the docs' own code


def _check_session(example: Example, namespace: dict[str, object], where: str) -> None:
    """A ``>>>`` session run as a doctest; a difference fails with doctest's report of it."""
    test = doctest.DocTestParser().get_doctest(example.code, namespace, where, where, example.line - 1)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    result = runner.run(test, out=report.write, clear_globs=False)
    assert result.failed == 0, f"{where} line {example.line}: the session's output differs\n{report.getvalue()}"


def test_the_readme_names_the_environments_the_scripts_make() -> None:
    """The README's setup lines name the virtual environments scripts/demo.sh and scripts/test.sh
    create, and `traceview run` is shown run from the one that has the frameworks (the demo's has
    none: a script profiled from it cannot import torch)."""
    def environment(script: str) -> str:
        text = (REPO / "scripts" / script).read_text(encoding="utf-8")
        match = re.search(r'venv="\$\{VENV:-([^}]+)\}"', text)
        assert match, f"scripts/{script} no longer says where its environment goes"
        return match.group(1)

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    analysis, frameworks = environment("demo.sh"), environment("test.sh")
    assert f"`{analysis}`" in readme and f"`{frameworks}`" in readme
    profile = readme.split("## Profile a training script", 1)[1].split("\n## ", 1)[0]
    activate = profile.find(f"source {frameworks}/bin/activate")
    assert 0 <= activate < profile.find("traceview run --"), "the section's commands start without the environment"
