#!/usr/bin/env bash
# Start JupyterLab on notebooks/. Extra arguments go to `jupyter lab`,
# e.g.  scripts/lab.sh --ip 0.0.0.0 --port 8888 --no-browser
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh

mkdir -p notebooks
extra=()
# Jupyter refuses to start as root (e.g. in containers) without --allow-root.
if [ "$(id -u)" -eq 0 ]; then
    extra+=(--allow-root)
fi
exec .venv/bin/jupyter lab --notebook-dir notebooks "${extra[@]}" "$@"
