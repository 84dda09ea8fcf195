"""Errors a user can act on. The CLI turns each into one line on stderr and its exit code."""

from __future__ import annotations


class TraceviewError(Exception):
    """Base class: ``str(err)`` is the whole message shown to the user (what, where, what to do)."""

    exit_code = 2


class InputError(TraceviewError):
    """The input path is missing, unreadable, or not a trace traceview can read."""


class FormatError(TraceviewError):
    """The file is of a known format but broken (truncated, malformed, inconsistent)."""


class MissingExtraError(TraceviewError):
    """An optional dependency (torch, tensorflow, a test oracle) is not installed."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} is not installed: run `pip install 'traceview[{extra}]'` to get it")
        self.extra = extra


class UsageError(TraceviewError):
    """Options that cannot work together, or a value out of range."""
