#!/usr/bin/env bash
# Differential fuzzer: bash scripts/fuzz.sh N [--seed S] [--out DIR] [--max-steps K]
# Runs N random kernels against torch, prints one summary line, writes repros of failures
# (default folder: fuzz-failures/). Exit code 1 when any kernel failed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[ -x .venv/bin/python ] || bash scripts/setup.sh >&2
exec .venv/bin/python -m tests.fuzz.run "$@"
