"""The child's result file: rewritten after every sub-case, so a timeout keeps what finished."""

from __future__ import annotations

import json
import os

from .checks import tally
from .failures import Failure


class Recorder:
    """Collects one upstream file's outcome and writes it as JSON to ``path``."""

    def __init__(self, path: str, mode: str):
        self.path = path
        self.data: dict = {"mode": mode, "finished": False, "error": None, "cases": [], "checks": {}}

    def add_case(self, name: str, outcome: str, checks: int, check_failures: int, failure: Failure | None) -> None:
        self.data["cases"].append({"name": name, "outcome": outcome, "checks": checks,
                                   "check_failures": check_failures,
                                   "failure": failure.to_dict() if failure else None})
        self.write()

    def add_soc_only(self, name: str, socs: list, function: str) -> None:
        """A collected test marked only for other SoCs than the emulated 910B (never run here)."""
        self.data.setdefault("soc_only", []).append({"name": name, "socs": socs, "function": function})

    def set_error(self, failure: Failure) -> None:
        """The file-level failure (an uncaught exception, a collection error); the first one wins."""
        if self.data["error"] is None:
            self.data["error"] = failure.to_dict()

    def finish(self, **extra) -> None:
        self.data.update(extra, finished=True)
        self.write()

    def write(self) -> None:
        self.data["checks"] = {"calls": tally.calls, "failures": tally.failures,
                               "first_failure": tally.first_failure, "by_function": tally.by_function}
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f)
        os.replace(tmp, self.path)
