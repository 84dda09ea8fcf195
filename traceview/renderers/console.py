"""Rich consoles for the command line's own output: messages, progress, the workload table."""

from __future__ import annotations

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
    return made
