#!/usr/bin/env bash
# Set up a fresh environment (torch CPU, TensorFlow CPU, traceview with its test extras) and run the tests.
# Usage: bash scripts/test.sh [pytest args...]     (VENV=path to reuse another environment folder)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${VENV:-.venv-test}"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# torch is pinned to the CPU build so the resolver never fetches a CUDA wheel.
"$venv/bin/python" -m pip install --quiet "torch==2.13.*" "tensorflow-cpu==2.21.*" -e ".[all,test]"
"$venv/bin/python" -m pytest -q "$@"
