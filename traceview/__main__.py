"""``python -m traceview`` runs the command line."""

from traceview.cli import console_main

console_main()
