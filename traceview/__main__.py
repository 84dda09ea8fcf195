"""The ``traceview`` console script and ``python -m traceview``: start reading the traces the
command names (traceview/console.py), then load and run the command line."""

import sys

from traceview.console import start


def main() -> None:
    """Run the command line on the process's arguments."""
    start(sys.argv[1:])
    from traceview.cli import console_main

    console_main()


if __name__ == "__main__":
    main()
