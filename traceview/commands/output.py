"""What the report commands share: option help texts and where a report goes (width, colour, file)."""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from traceview.api import remove_partial
from traceview.errors import UsageError
from traceview.renderers.registry import COMPARISON, DIAGNOSES, WHATIF, names_rendering

RUN_HELP = ("The run folder to read: a TensorBoard logdir's (default: the newest), or the subfolder of a folder of "
            "torch.profiler traces (default: every trace).")
DISPATCH_GAP_HELP = ("Unrecorded gaps on the step's thread up to this long count as dispatch, longer ones as host "
                     "compute (default: calibrated on the trace; 0 turns the rule off).")
STRICT_HELP = ("Exit 2, after writing the report, when a trace has a trace-quality problem (lost events, "
               "clock skew, overlaps, duplicated correlation ids, empty steps: docs/bad_input.md).")


def path_from_text(text: str) -> Path:
    """A path argument or option as pathlib would take it, except that an empty one is refused:
    ``Path("")`` is the current folder, so ``traceview diagnose "$TRACE"`` with the variable unset
    would analyse whatever is there, and ``-o ""`` would write into it. (Every path the commands
    take is read by this: typer's ``parser``.)"""
    if isinstance(text, Path):
        return text
    if not text:
        raise typer.BadParameter('an empty path; name a file or folder ("." for the current one)')
    return Path(text)


# The renderer function a command's report needs, where it is not render_diagnoses: the formats
# that shell completion offers for its --format.
REPORT_RENDERER = {"compare": COMPARISON, "whatif": WHATIF}


def complete_format(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of ``--format``: the registry's formats that can show the command's report."""
    return [name for name in names_rendering(REPORT_RENDERER.get(ctx.info_name or "", DIAGNOSES))
            if name.startswith(incomplete)]


def format_option(function: str = DIAGNOSES) -> Any:  # noqa: ANN401 - typer's OptionInfo
    """``--format``, its help naming the formats that have ``function`` (the renderer function of
    the command's report: renderers/registry.py)."""
    return typer.Option("terminal", "--format", "-f", metavar="FORMAT", autocompletion=complete_format,
                        help=f"Output format: {', '.join(names_rendering(function))}.")  # (typer adds the default)


# The options diagnose and compare share, declared once (typer reads them as the parameters' defaults).
FORMAT_OPTION = format_option()
RUN_OPTION = typer.Option(None, "--run", metavar="NAME", help=RUN_HELP)
OUTPUT_OPTION = typer.Option(None, "--output", "-o", metavar="FILE", parser=path_from_text,
                             help="Write the report to this file.")
WIDTH_OPTION = typer.Option(None, "--width", metavar="COLUMNS", help="Terminal report width in columns (40 to 1000).")

# --width bounds: narrower and the cause table's columns no longer fit; wider is no screen's, and
# each row would hold a bar that long.
MIN_WIDTH, MAX_WIDTH = 40, 1000
COLOR_OPTION = typer.Option(None, "--color/--no-color", help="Force colours on or off.")
REDACT_OPTION = typer.Option(False, "--redact", help="Replace file paths, host names and user names.")
DISPATCH_GAP_OPTION = typer.Option(None, "--dispatch-gap-us", metavar="MICROSECONDS", help=DISPATCH_GAP_HELP)
STRICT_OPTION = typer.Option(False, "--strict", help=STRICT_HELP)


# A typed option is taken for a typo of an option within one edit per this many of its letters
# (at least one): --stesp is --steps (1 edit in 5), --bogus no option (--jobs is 3 edits away).
TYPO_EDITS_PER_LETTERS = 3


def unknown_option_hint(word: str, command: Any) -> str:  # noqa: ANN401 - typer's vendored click command
    """What follows "no such option: WORD" for a command: the option(s) the word is a typo of,
    " (did you mean --steps?)", else the list of the command's options. A typo is a long option
    a few :func:`edits` from the word (:data:`TYPO_EDITS_PER_LETTERS`) or one the word begins
    (``--form``). (The parser's own guess, by difflib's likeness, offered --jobs for --bogus.)"""
    typed = word.split("=", 1)[0]
    spellings = sorted({spelling for param in command.params
                        for spelling in (*param.opts, *getattr(param, "secondary_opts", ()))
                        if spelling.startswith("--")} | {"--help"})
    if typed.startswith("--") and len(typed) > 3:
        distances = {option: edits(typed[2:], option[2:]) for option in spellings}
        limit = max(1, (len(typed) - 2) // TYPO_EDITS_PER_LETTERS)
        near = [option for option in spellings if distances[option] <= limit] or [
            option for option in spellings if option.startswith(typed)]
        if near:
            best = min(distances[option] for option in near)
            return f" (did you mean {' or '.join(o for o in near if distances[o] == best)}?)"
    return f"; the options are {', '.join(spellings)}"


def edits(a: str, b: str) -> int:
    """The fewest single-letter insertions, deletions, substitutions and swaps of two neighbours
    that turn ``a`` into ``b`` (optimal string alignment distance)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, letter in enumerate(a, start=1):
        row = [i] + [0] * len(b)
        for j, other in enumerate(b, start=1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (letter != other))
            if i > 1 and j > 1 and letter == b[j - 2] and a[i - 2] == other:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return previous[-1]


def stderr_console() -> Any:  # noqa: ANN401 - rich imported lazily
    from traceview.renderers.console import console

    return console(file=_message_stream(), highlight=False)


def say(text: str) -> None:
    """A line for the user on standard error (what a command wrote, where), written as messages
    are: one that standard error cannot take is lost, not an exit status of its own."""
    stream = _message_stream()
    stream.write(text)
    stream.flush()


def _message_stream() -> Any:  # noqa: ANN401 - a text stream
    """Where messages go: standard error, or nowhere where it was closed at start (rich, given
    no file, would write them on standard output, into a report)."""
    return io.StringIO() if sys.stderr is None else _MessageStream(sys.stderr)


class _MessageStream:
    """Standard error for the command's messages. Where it cannot take them (a full device, a
    closed pipe) they are lost: there is nowhere left to say so, and the failure must not turn
    an error's exit status 2, or a finished command's 0, into an interpreter error at exit."""

    def __init__(self, stream: Any) -> None:  # noqa: ANN401 - a text stream
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            self._lose_buffered()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._lose_buffered()

    def _lose_buffered(self) -> None:
        discard_stream(self._stream)
        try:
            self._stream.flush()  # (now to the null device: the buffer empties)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - isatty, fileno, encoding … as the stream's
        return getattr(self._stream, name)


def is_terminal(stream: Any) -> bool:  # noqa: ANN401 - sys.stdout / sys.stderr
    """Whether a standard stream is a terminal (None where its descriptor was closed at start)."""
    return stream is not None and stream.isatty()


def report_width(requested: Optional[int]) -> int:
    """``--width``, else the terminal's (80 to 140 columns), else 100 for a pipe or a file."""
    if requested is not None:
        if not MIN_WIDTH <= requested <= MAX_WIDTH:
            raise UsageError(f"--width must be between {MIN_WIDTH} and {MAX_WIDTH} columns, got {requested}")
        return requested
    if is_terminal(sys.stdout):
        return max(80, min(shutil.get_terminal_size((100, 24)).columns, 140))
    return 100


def use_color(color: Optional[bool], output: Optional[Path]) -> bool:
    if color is not None:
        return color
    return is_terminal(sys.stdout) and output is None and "NO_COLOR" not in os.environ


def emit(text: str, output: Optional[Path], *, takes_output_option: bool = True) -> None:
    """The report on stdout, or in ``--output``; ``takes_output_option``: whether the command has
    ``-o/--output`` for the user to turn to when standard output cannot take the text."""
    hint = "; name a file for the report with -o/--output" if takes_output_option else ""
    if output is None:
        if sys.stdout is None:
            raise UsageError(f"standard output is closed{hint}")
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as err:
            discard_standard_output()
            raise UsageError(f"standard output: cannot write ({err.strerror or err}){hint}") from None
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        remove_partial(output)
        raise UsageError(f"{output}: cannot write the report ({err.strerror})") from None


def discard_standard_output() -> None:
    """Point standard output at the null device, so that what stays in its buffer after a failed
    write (a full disk, a closed pipe) does not fail again, as a second message, at exit."""
    discard_stream(sys.stdout)


def discard_stream(stream: Any) -> None:  # noqa: ANN401 - a text stream
    """Point a standard stream's descriptor at the null device (see discard_standard_output)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # (no descriptor to replace: an in-memory stream)
        pass
