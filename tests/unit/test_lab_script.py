"""Issue 20 ("Also"): scripts/lab.sh does not suggest listening on every interface (a Jupyter
server runs code for whoever reaches it)."""

from __future__ import annotations

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lab.sh"


def test_the_lab_script_suggests_no_public_interface():
    text = SCRIPT.read_text()
    assert "0.0.0.0" not in text and "--ip" not in text.split("set -euo", 1)[0]
    assert "localhost" in text  # and says how to reach it safely
