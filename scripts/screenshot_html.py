#!/usr/bin/env python3
"""Render a traceview HTML report to a PNG with headless Chromium.

Usage: python scripts/screenshot_html.py REPORT.html OUT.png [--width 1400] [--height 2000]

Needs a Chromium or Chrome binary on PATH (``apt-get install -y chromium`` on Debian); the
report is self-contained, so no network is used. Exit status 2 when no browser is found.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_browser() -> str | None:
    """The first Chromium-family browser on PATH, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(report: Path, out: Path, width: int = 1400, height: int = 2000, timeout: float = 120.0) -> Path:
    """Write a PNG of the first ``width`` × ``height`` CSS pixels of the report."""
    browser = find_browser()
    if browser is None:
        raise FileNotFoundError("no chromium/chrome on PATH (try: apt-get install -y chromium)")
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="traceview-shot-") as profile:
        cmd = [
            browser,
            "--headless",
            "--no-sandbox",  # needed when running as root (containers, CI)
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            report.resolve().as_uri(),
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0 or not out.exists() or out.stat().st_size == 0:
        raise RuntimeError(f"{browser} failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the HTML report (traceview diagnose TRACE -f html -o REPORT.html)")
    parser.add_argument("out", type=Path, help="the PNG to write")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=2000)
    args = parser.parse_args(argv)
    if not args.report.is_file():
        print(f"{args.report}: no such file", file=sys.stderr)
        return 2
    try:
        path = screenshot(args.report, args.out, args.width, args.height)
    except FileNotFoundError as err:
        print(str(err), file=sys.stderr)
        return 2
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        print(str(err), file=sys.stderr)
        return 1
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
