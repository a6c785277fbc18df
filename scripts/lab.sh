#!/usr/bin/env bash
# Start JupyterLab on notebooks/. Extra arguments go to `jupyter lab`,
# e.g.  scripts/lab.sh --port 8888 --no-browser
# It listens on localhost only (Jupyter's default). To reach it from another machine, forward the
# port over SSH (ssh -L 8888:localhost:8888 host) rather than listening on every interface.
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
