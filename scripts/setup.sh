#!/usr/bin/env bash
# Idempotent environment set-up for pypto-lab.
#   - creates .venv (system python3) in the repo root if missing
#   - pip installs the repo editable with [lab,test] extras, only when
#     pyproject.toml changed since the last successful install
#   - installs Debian's graphviz when `dot` is not on PATH
#   - PYPTO_SETUP_CHROMIUM=1 also installs Debian's chromium if missing
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV=".venv"
STAMP="$VENV/.pypto-stamp"

log() { echo "[setup] $*"; }
warn() { echo "[setup] WARNING: $*" >&2; }

# ---- apt helper: install Debian packages (sudo only when not root) ----------
APT_UPDATED=0
apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        warn "apt-get not available; please install '$*' yourself. Continuing."
        return 0
    fi
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo="sudo"
        else
            warn "not root and no sudo; please install '$*' yourself. Continuing."
            return 0
        fi
    fi
    log "apt-get install $*"
    if [ "$APT_UPDATED" -eq 0 ]; then
        if ! $sudo apt-get update -qq; then
            warn "apt-get update failed; cannot install '$*'. Continuing."
            return 0
        fi
        APT_UPDATED=1
    fi
    local aptlog
    aptlog="$(mktemp)"
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >"$aptlog" 2>&1; then
        tail -n 20 "$aptlog" >&2
        warn "apt-get install $* failed. Continuing."
    fi
    rm -f "$aptlog"
}

# ---- virtualenv ---------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV with $(command -v python3)"
    python3 -m venv "$VENV"
    rm -f "$STAMP"
fi

# ---- editable install (skipped when pyproject.toml is unchanged) ---------------
# The stamp also covers the checkout location: the editable install records it.
want="$( { sha256sum < pyproject.toml; echo "$ROOT"; } | sha256sum | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
    log "pip install -e .[lab,test] (pyproject.toml changed or first run)"
    "$VENV/bin/python" -m pip install -q -e ".[lab,test]"
    echo "$want" > "$STAMP"
else
    log "python packages up to date (pyproject.toml unchanged)"
fi

# ---- system packages ----------------------------------------------------------
if command -v dot >/dev/null 2>&1; then
    log "graphviz present ($(command -v dot))"
else
    apt_install graphviz
fi

if [ "${PYPTO_SETUP_CHROMIUM:-0}" = "1" ]; then
    if [ -x /usr/bin/chromium ]; then
        log "chromium present (/usr/bin/chromium)"
    else
        apt_install chromium
    fi
fi

log "done"
