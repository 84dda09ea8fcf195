"""Errors a user can act on. The CLI turns each into one line on stderr and its exit code."""

from __future__ import annotations

import re


class TraceviewError(Exception):
    """Base class: ``str(err)`` is the whole message shown to the user (what, where, what to do)."""

    exit_code = 2


class InputError(TraceviewError):
    """The input path is missing, unreadable, or not a trace traceview can read."""


class FormatError(TraceviewError):
    """The file is of a known format but broken (truncated, malformed, inconsistent)."""


class QualityError(TraceviewError):
    """``--strict`` / ``strict=True``: a trace has trace-quality problems (the command line writes its
    report first). ``result`` is what was analysed (a Diagnosis, FolderDiagnosis or Comparison)."""

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result


class PartialReport(TraceviewError):
    """A folder's report was written without the traces that could not be read (each named in it):
    the command line's exit status 3 says so."""

    exit_code = 3


class RegressionError(TraceviewError):
    """``--fail-if-slower`` / ``fail_if_slower=``: the candidate is slower than allowed beyond the
    step-time noise (exit status 1, after the report). ``comparison`` is the result."""

    exit_code = 1

    def __init__(self, message: str, comparison: object = None) -> None:
        super().__init__(message)
        self.comparison = comparison


def install_hint(extra: str) -> str:
    """How to install an optional part of traceview (its extra): from a package index, and from a
    clone of the repository, which is where traceview comes from until it is on an index."""
    return f"`pip install 'traceview[{extra}]'` (in a clone of the repository: `pip install -e '.[{extra}]'`)"


class MissingExtraError(TraceviewError):
    """An optional dependency (torch, tensorflow, a test oracle) is not installed."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} is not installed: run {install_hint(extra)} to get it")
        self.extra = extra


class UsageError(TraceviewError):
    """Options that cannot work together, or a value out of range."""


class TraceviewWarning(UserWarning):
    """Something the user should know that does not stop the command (a file in a folder that
    could not be read and was skipped). The CLI shows each as one ``traceview: warning:`` line."""


# The Unicode bidirectional controls (as a regex class body): they reorder the text a terminal
# shows around them, so trace text is never printed with them (here and traceview/text.py).
BIDI_CONTROLS = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
# And the Unicode line / paragraph separators and bidirectional controls.
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")


def one_line(message: str) -> str:
    """A message as one line of printable text: control characters and line separators (a
    newline, the escape sequences of a hostile file name) are written as ``\\n`` / ``\\xNN`` /
    ``\\u2028`` instead of acting."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)
