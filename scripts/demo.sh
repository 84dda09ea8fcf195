#!/usr/bin/env bash
# Set up traceview alone (no torch, no TensorFlow) and diagnose the bundled sample traces.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${VENV:-.venv}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e .
"$venv/bin/traceview" diagnose "${1:-sample_traces/mlp2}"
