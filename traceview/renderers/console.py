"""Rich consoles for the command line's own output: messages, progress, the workload table."""

from __future__ import annotations

import errno
import os
from typing import Any

# Narrower than this, a console shows nothing useful: COLUMNS=0 in the environment made rich
# print nothing at all, error messages included; such a console gets the fallback width.
MIN_WIDTH = 40
FALLBACK_WIDTH = 80


def console(**options: Any) -> Any:  # noqa: ANN401 - rich imported lazily
    """A rich ``Console(**options)``, at least ``MIN_WIDTH`` columns wide."""
    from rich.console import Console

    made = Console(**options)
    if made.width < MIN_WIDTH:
        made.width = FALLBACK_WIDTH
    made.on_broken_pipe = _broken_pipe
    return made


def _broken_pipe() -> None:
    """A closed pipe is a failed write like any other (one line, exit status 2, from the command
    line's error handling), not rich's silent exit with status 1, which the command line keeps
    for a regression found by ``compare --fail-if-slower``."""
    raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
