"""``docs/COMPAT.md`` and ``docs/compat.json`` from the per-file results (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .failures import Failure, cause_key
from .results import STATUSES, FileResult, GroupTotals, totals
from .selection import GROUP_TITLES, GROUPS, SUITES, suite_of

FORMAT_VERSION = 1


@dataclass
class Blocker:
    """One cause of failure and what it stops."""

    cause: str
    files: list = field(default_factory=list)  # paths whose first failure has this cause
    cases: int = 0  # failing test cases with this cause, over all files
    example: Failure | None = None

    def to_dict(self) -> dict:
        return {"cause": self.cause, "files": len(self.files), "cases": self.cases, "paths": self.files,
                "example": self.example.to_dict() if self.example else None}


def blockers(results: list[FileResult]) -> list[Blocker]:
    """Causes ranked by the number of files they stop (first failure of failed, timed-out and
    crashed files), then by the failing test cases they account for."""
    by_cause: dict[str, Blocker] = {}
    for r in results:
        if r.status in ("failed", "timeout", "crashed") and r.failure is not None:
            key = cause_key(r.failure)
            b = by_cause.setdefault(key, Blocker(key, example=r.failure))
            b.files.append(r.path)
        for failure, n in r.case_causes:
            if failure is None or r.status == "out_of_scope":
                continue
            key = cause_key(failure)
            by_cause.setdefault(key, Blocker(key, example=failure)).cases += n
    return sorted(by_cause.values(), key=lambda b: (-len(b.files), -b.cases, b.cause))


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _case_summary(r: FileResult) -> str:
    c = r.cases
    total = sum(c.values())
    if not total:
        return ""
    parts = [f"{c['passed']}/{total} passed ({r.verified_cases} verified)"]
    parts += [f"{c[k]} {k.replace('_', ' ')}" for k in ("failed", "error", "out_of_scope", "skipped") if c[k]]
    parts += [f"{m['tests']} 950-only on {name}: {m['status']}" for name, m in sorted(r.machines.items())]
    return ", ".join(parts)


def to_json(results: list[FileResult], meta: dict) -> dict:
    """The machine-readable report (stable keys; ``files`` sorted by path)."""
    groups = totals(results, lambda r: r.group)
    suites = totals(results, lambda r: suite_of(r.path))
    return {
        "format": FORMAT_VERSION, **meta,
        "totals": {g: _totals_dict(groups[g]) for g in GROUPS if g in groups},
        "suites": {s: _totals_dict(suites[s]) for s in SUITES if s in suites},
        "blockers": [b.to_dict() for b in blockers(results)],
        "files": [r.to_dict() for r in sorted(results, key=lambda r: r.path)],
    }


def _totals_dict(t: GroupTotals) -> dict:
    return {"files": t.files, "ran": t.ran, "verified": t.verified, "statuses": t.statuses, "cases": t.cases,
            "verified_cases": t.verified_cases,
            "pass_rate": t.pass_rate(), "pass_rate_in_scope": t.pass_rate(in_scope_only=True)}


def _suites_of(path: str) -> list:
    names = suite_of(path)
    return [names] if isinstance(names, str) else list(names)


def to_markdown(results: list[FileResult], meta: dict, notes: str = "", top: int = 30) -> str:
    """The human report: totals, case pass rates, ranked blockers, the per-file table, notes."""
    groups = totals(results, lambda r: r.group)
    suites = totals(results, lambda r: suite_of(r.path))
    out = ["# Upstream compatibility", "",
           f"Measured {meta.get('date', '?')} against upstream commit `{meta.get('upstream_commit', '?')}` "
           f"with `{meta.get('command', 'tools/upstream_compat.py')}` (per-file timeout "
           f"{meta.get('timeout', '?')} s). Generated file: rerun the tool instead of editing it.", "",
           "## Totals", "",
           "| group | files | ran | verified | failed | out of scope | timeout | crashed | no test ran "
           "| cases passed / run | cases verified |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for g in GROUPS:
        if g not in groups:
            continue
        t = groups[g]
        s = t.statuses
        cases = f"{t.cases['passed']} / {t.case_total}" if t.case_total else "–"
        out.append(f"| {GROUP_TITLES[g]} | {t.files} | {t.ran} | {t.verified} | {s['failed']} | "
                   f"{s['out_of_scope']} | {s['timeout']} | {s['crashed']} | {s['skipped']} | {cases} | "
                   f"{t.verified_cases if t.case_total else '–'} |")
    out += ["", "A case is a test of a test file, or a sub-case of a script (a `test_*` function its main block "
            "calls; scripts stop at their first failing case). A verified case passed and made at least one "
            "numeric check, none failing."]
    missing = meta.get("uncollected") or {}
    out += ["", "## Test-case pass rates", "",
            "Pass rate = passed / (passed + failed + error + out of scope); the in-scope rate leaves the "
            "out-of-scope cases out. Skipped cases (upstream's own skips) count in neither; tests marked for "
            "the Ascend 950 only run in a second pass on the emulated 950 and count here; tests marked for "
            "other SoCs are in no column (next section). "
            "Not collected = `test_*` functions of pytest files that reported no case at all (import "
            "failure, timeout before collection, out of scope as a whole), counted from the source "
            "(`tools/compat/uncollected.py`; a parametrized test counts once). The last column counts "
            "everything: passed / (cases + not collected), skipped cases included.", "",
            "| suite | files | cases | passed | failed | error | out of scope | skipped | not collected "
            "| pass rate | in-scope rate | passed of all |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in SUITES:
        if name in suites:
            t = suites[name]
            c = t.cases
            lost = sum(n for path, n in missing.items() if name in _suites_of(path))
            every = t.case_total + lost
            out.append(f"| {name} | {t.files} | {t.case_total} | {c['passed']} | {c['failed']} | {c['error']} | "
                       f"{c['out_of_scope']} | {c['skipped']} | {lost} | {_pct(t.pass_rate())} | "
                       f"{_pct(t.pass_rate(in_scope_only=True))} | {_pct(c['passed'] / every if every else None)} |")
    out += _soc_only_section(meta.get("soc_only") or [], results)
    ranked = blockers(results)
    out += ["", "## Blockers", "",
            f"Causes of failure ranked by the files they stop (a file's first failure), then by the failing "
            f"test cases they account for. Numbers in messages are blanked (`N`) so that one rule hit with "
            f"different sizes groups together. Top {min(top, len(ranked))} of {len(ranked)}.", "",
            "| # | cause | files | cases | example (upstream line -> our line) |", "|---:|---|---:|---:|---|"]
    for i, b in enumerate(ranked[:top], 1):
        where = b.example.location() if b.example else ""
        example = where or (b.files[0] if b.files else "")
        out.append(f"| {i} | {_cell(b.cause)} | {len(b.files)} | {b.cases} | {_cell(example, 120)} |")
    out += ["", "## Per file", ""]
    for g in GROUPS:
        rows = sorted((r for r in results if r.group == g), key=lambda r: r.path)
        if not rows:
            continue
        out += [f"### {GROUP_TITLES[g]}", "", "| file | status | s | checks | cases | first failure |",
                "|---|---|---:|---:|---|---|"]
        for r in rows:
            checks = f"{r.checks}" + (f" ({r.check_failures} failed)" if r.check_failures else "")
            failure = ""
            if r.failure is not None:
                failure = _cell(r.failure.headline(), 140) + (f" @ `{r.failure.location()}`" if r.failure.location() else "")
            out.append(f"| {r.path} | {r.status} | {r.seconds:.0f} | {checks} | {_case_summary(r)} | {failure} |")
        out.append("")
    if notes:
        out += [notes.rstrip(), ""]
    return "\n".join(out)


def _soc_only_section(rows: list, results: list[FileResult]) -> list:
    """The tests upstream runs on the Ascend 950 only, with the 950 features their source names,
    and what each file's pass on the emulated 950 gave."""
    if not rows:
        return []
    tests = sum(r["tests"] for r in rows)
    overall: dict = {}
    for r in rows:
        for name, n in r["features"].items():
            overall[name] = overall.get(name, 0) + n
    second = {r.path: r.machines for r in results if r.machines}
    statuses: dict = {}
    for machines in second.values():
        for m in machines.values():
            statuses[m["status"]] = statuses.get(m["status"], 0) + 1
    out = ["", "## Ascend-950-only tests (run on the emulated 950)", "",
           f"{tests} collected tests in {len(rows)} files are marked `@pytest.mark.soc(...)` without \"910\"; "
           "upstream's conftest deselects them on a 910B card, the default machine here. Each such file runs a "
           "second time with `PYPTO_MACHINE=A5` (an Ascend 950PR: its emulated NPU reports SoC 260, and its "
           "buffers and cores are upstream's 950 figures; its timing is not calibrated), where the conftest "
           "selects them; that pass counts in the totals above. Its status per file: "
           + (", ".join(f"{n} {s}" for s, n in sorted(statuses.items(), key=lambda kv: (-kv[1], kv[0]))) or "none ran")
           + ". Features their source names (the test function, else its file; `tools/compat/soc_features.py`), "
           "tests per feature: "
           + ", ".join(f"{name} {n}" for name, n in sorted(overall.items(), key=lambda kv: (-kv[1], kv[0]))) + ".",
           "", "| file | tests | SoCs | features named (tests) | on the emulated 950 |", "|---|---:|---|---|---|"]
    for r in rows:
        feats = ", ".join(f"{name} ({n})" for name, n in sorted(r["features"].items(), key=lambda kv: (-kv[1], kv[0])))
        ran = second.get(r["path"], {})
        where = "; ".join(m["status"] + (f": {_cell(m['failure'], 90)}" if m.get("failure") and m["status"] != "verified"
                                         else "") for m in ran.values()) or "not run"
        out.append(f"| {r['path']} | {r['tests']} | {', '.join(r['socs'])} | {_cell(feats)} | {where} |")
    return out


def status_counts(results: list[FileResult]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for r in results:
        counts[r.status] += 1
    return counts
