"""Per-file status from a child's raw result, and the totals over files (pure).

A file is

* ``verified``: it ran to completion without error (every test that ran passed, for a test
  file) and at least one of upstream's numeric checks executed, none failing;
* ``ran``: it ran to completion without error, but no numeric check executed or one returned
  a mismatch that the file did not act on (the first such check is shown as its failure);
* ``failed``: an uncaught exception, a collection error, or a failing test (the first one is
  the file's failure);
* ``out_of_scope``: it failed only for lack of an out-of-scope feature (see
  ``failures.OUT_OF_SCOPE``);
* ``timeout`` / ``crashed``: killed after the time limit / died without a result (signal);
* ``skipped``: a test file in which no test ran (all skipped or deselected).

``ran`` in the totals counts ``ran`` and ``verified`` files.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .failures import Failure, out_of_scope
from .selection import Job

SOC_950 = "950"  # upstream's test tag of the Ascend 950 (SoC 260)
STATUSES = ("verified", "ran", "failed", "out_of_scope", "timeout", "crashed", "skipped")
OUTCOMES = ("passed", "failed", "error", "skipped", "out_of_scope")


@dataclass
class FileResult:
    """One upstream file's measured outcome."""

    group: str
    path: str
    mode: str
    status: str
    seconds: float = 0.0
    checks: int = 0
    check_failures: int = 0
    cases: dict = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    verified_cases: int = 0  # passed cases that made a numeric check, none failing
    case_causes: list = field(default_factory=list)  # [(cause Failure, count)] of failing cases
    failure: Failure | None = None
    out_of_scope: str | None = None
    # collected tests marked for other SoCs only ({name, socs, function}): upstream's conftest
    # deselects them on a 910B, so they are in no count of this file
    soc_only: list = field(default_factory=list)
    # a second pass on another emulated machine: {machine: {"status", "tests", "failure"}}; its
    # cases and checks are counted in this result
    machines: dict = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return self.status in ("ran", "verified")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["failure"] = self.failure.to_dict() if self.failure else None
        d["case_causes"] = [[f.to_dict(), n] for f, n in self.case_causes]
        return d

    @staticmethod
    def from_dict(d: dict) -> "FileResult":
        d = dict(d)
        d["failure"] = Failure.from_dict(d.get("failure"))
        d["case_causes"] = [(Failure.from_dict(f), n) for f, n in d.get("case_causes", [])]
        return FileResult(**d)


def _case_outcome(case: dict) -> tuple[str, Failure | None]:
    failure = Failure.from_dict(case.get("failure"))
    outcome = case["outcome"]
    if outcome in ("failed", "error") and out_of_scope(failure):
        return "out_of_scope", failure
    return outcome, failure


def classify(job: Job, raw: dict | None, *, seconds: float = 0.0, timed_out: bool = False,
             timeout: float = 0.0, returncode: int | None = 0, log_tail: str = "") -> FileResult:
    """The :class:`FileResult` of one child run (``raw`` is its result JSON, if it wrote one)."""
    result = FileResult(job.group, job.path, job.mode, "failed", round(seconds, 2))
    raw = raw or {}
    first_case_failure: Failure | None = None
    causes: dict[Failure, int] = {}
    for case in raw.get("cases", []):
        outcome, failure = _case_outcome(case)
        result.cases[outcome] += 1
        result.verified_cases += outcome == "passed" and case.get("checks", 0) > 0 and not case.get("check_failures")
        if failure is not None and outcome != "skipped":
            causes[failure] = causes.get(failure, 0) + 1
            if outcome in ("failed", "error") and first_case_failure is None:
                first_case_failure = failure
    result.case_causes = sorted(causes.items(), key=lambda kv: -kv[1])
    result.soc_only = list(raw.get("soc_only", []))
    checks = raw.get("checks") or {}
    result.checks, result.check_failures = checks.get("calls", 0), checks.get("failures", 0)
    error = Failure.from_dict(raw.get("error"))

    if timed_out:
        result.status = "timeout"
        result.failure = Failure("Timeout", f"no result within {timeout:g} s", origin="harness")
    elif not raw.get("finished"):
        result.status = "crashed"
        result.failure = Failure("Crash", f"process exited with code {returncode} without a result"
                                 + (f"; last output: {log_tail}" if log_tail else ""), origin="harness")
    elif error is not None or first_case_failure is not None:
        result.failure = error or first_case_failure
        result.out_of_scope = out_of_scope(result.failure)
        result.status = "out_of_scope" if result.out_of_scope else "failed"
    elif job.mode == "pytest" and result.cases["passed"] == 0:
        oos = [f for f, _ in result.case_causes if out_of_scope(f)]
        result.status = "out_of_scope" if oos else "skipped"
        if oos:
            result.failure, result.out_of_scope = oos[0], out_of_scope(oos[0])
    elif result.checks and not result.check_failures:
        result.status = "verified"
    else:
        result.status = "ran"
        if result.check_failures:
            where = checks.get("first_failure", "")
            result.failure = Failure("CheckMismatch", f"{result.check_failures} of {result.checks} numeric "
                                     f"checks reported a mismatch (first: {where})", origin="upstream")
    return result


# a file's result over two passes: the worse of these, else what ran
_WORST_FIRST = ("timeout", "crashed", "failed", "out_of_scope")


def combine(first: FileResult, second: FileResult, machine: str) -> FileResult:
    """One file's result from its pass on the default 910B (``first``) and its pass on
    ``machine`` (``second``, which ran the tests ``first`` deselected as 950-only): cases,
    checks and failing causes add up; the status is the worse of a failing pass, else the
    statuses of the passes in which tests ran, by the rule of `classify` over the checks of both."""
    out = FileResult(first.group, first.path, first.mode, first.status, round(first.seconds + second.seconds, 2),
                     first.checks + second.checks, first.check_failures + second.check_failures,
                     {k: first.cases.get(k, 0) + second.cases.get(k, 0) for k in OUTCOMES},
                     first.verified_cases + second.verified_cases)
    causes: dict = {}
    for f, n in [*first.case_causes, *second.case_causes]:
        causes[f] = causes.get(f, 0) + n
    out.case_causes = sorted(causes.items(), key=lambda kv: -kv[1])
    out.soc_only = list(first.soc_only)  # what the 910B pass deselected (the 950 pass ran those for the 950)
    out.machines = {machine: {"status": second.status, "tests": sum(SOC_950 in t["socs"] for t in first.soc_only),
                              "failure": second.failure.headline() if second.failure else None}}
    passes = (first, second)
    for status in _WORST_FIRST:
        hit = next((r for r in passes if r.status == status), None)
        if hit is not None:
            out.status, out.failure, out.out_of_scope = status, hit.failure, hit.out_of_scope
            return out
    ran = [r for r in passes if r.status != "skipped"]
    if not ran:
        out.status = "skipped"
    elif out.checks and not out.check_failures:
        out.status, out.failure = "verified", None
    else:
        out.status = "ran"
        out.failure = next((r.failure for r in ran if r.failure is not None), None)
    return out


@dataclass
class GroupTotals:
    files: int = 0
    ran: int = 0
    verified: int = 0
    statuses: dict = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    cases: dict = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    verified_cases: int = 0

    def add(self, r: FileResult) -> None:
        self.files += 1
        self.verified_cases += r.verified_cases
        self.ran += r.ran
        self.verified += r.status == "verified"
        self.statuses[r.status] += 1
        for k, v in r.cases.items():
            self.cases[k] += v

    @property
    def case_total(self) -> int:
        return sum(self.cases.values())

    def pass_rate(self, in_scope_only: bool = False) -> float | None:
        """Passed over the tests that ran (skipped ones excluded; out-of-scope ones excluded too
        when ``in_scope_only``)."""
        c = self.cases
        denominator = c["passed"] + c["failed"] + c["error"] + (0 if in_scope_only else c["out_of_scope"])
        return None if denominator == 0 else c["passed"] / denominator


def totals(results: list[FileResult], key) -> dict[str, GroupTotals]:
    """Totals per ``key(result)`` (a name or a list of names)."""
    out: dict[str, GroupTotals] = {}
    for r in results:
        names = key(r)
        for name in [names] if isinstance(names, str) else names:
            out.setdefault(name, GroupTotals()).add(r)
    return out
