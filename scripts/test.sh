#!/usr/bin/env bash
# Run the test-suite. Without arguments: tests/ (+ notebooks/ via nbval when
# notebooks exist) on 2 xdist workers. With arguments: passed to pytest as-is.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh

if [ "$#" -eq 0 ]; then
    set -- -n 2 tests  # skip reasons: pyproject.toml addopts -rs, with arguments too
    if compgen -G "notebooks/*.ipynb" >/dev/null; then
        # --dist loadscope keeps all cells of one notebook on one worker/kernel.
        set -- "$@" --dist loadscope \
            --nbval --nbval-current-env \
            --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks/
    fi
fi

echo "[test] python -m pytest $*"
rc=0
.venv/bin/python -m pytest "$@" || rc=$?

if [ "$rc" -eq 5 ]; then
    echo "[test] FAILED: pytest collected no tests (exit code 5)" >&2
fi
exit "$rc"
