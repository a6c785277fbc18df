"""The results of a sweep: a list of `TrialRecord`s with the best one, the Pareto set, a text
table, CSV and JSON; with a store (`store.Journal`) every trial is appended as it finishes, so an
interrupted sweep resumes where it stopped."""

from __future__ import annotations

import csv
import io
import json
import os

from .trial import TrialRecord

FORMAT_VERSION = 1
FIGURES = ("makespan_cycles", "makespan_us", "critical_path_cycles", "utilization_aic", "utilization_aiv",
           "l2_hit_rate", "device_tasks", "tasks", "compile_seconds", "ub_bytes")


class Results:
    """Trial records in the order they finished. ``best`` is the ok trial with the smallest
    makespan (ties: the earlier trial); failed and mismatching trials are kept, never ranked."""

    def __init__(self, records=(), kernel: str = "", space: dict | None = None, path: str | None = None,
                 journal=None):
        self.records: list = list(records)
        self.kernel, self.space, self.path = kernel, space or {}, path
        self.journal = journal  # a store.Journal: each added record is appended to it
        self.evaluator = None  # the in-process runner's Evaluator (re-simulates a trial's timeline)
        self.pruned = 0  # configurations a constraint ruled out (never compiled nor run)
        self.interrupted = False  # the sweep was stopped (Ctrl-C, or stop= was set) before its end

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def add(self, record: TrialRecord) -> None:
        """Append ``record`` (and to the store, one line)."""
        self.records.append(record)
        if self.journal is not None:
            self.journal.append(record.to_dict())

    @property
    def next_number(self) -> int:
        """The number of the next trial: after every number used so far (a resumed sweep whose
        in-flight trials never finished has gaps; numbers are never reused)."""
        return max((r.number for r in self.records), default=-1) + 1

    @property
    def ok(self) -> list:
        return [r for r in self.records if r.ok]

    @property
    def failed(self) -> list:
        return [r for r in self.records if not r.ok]

    @property
    def best(self) -> TrialRecord | None:
        return min(self.ok, key=lambda r: (r.makespan_cycles, r.number), default=None)

    def pareto(self, objectives=("makespan_cycles", "device_tasks")) -> list:
        """The ok trials that no other ok trial beats on every one of ``objectives`` (figures,
        all minimised), ordered by the first; ties keep the earlier trial only."""
        pts = [r for r in self.ok if all(getattr(r, o) is not None for o in objectives)]
        values = {id(r): tuple(getattr(r, o) for o in objectives) for r in pts}
        pts.sort(key=lambda r: (values[id(r)], r.number))
        front: list = []
        for r in pts:
            v = values[id(r)]
            if not any(all(a <= b for a, b in zip(values[id(f)], v)) for f in front):
                front.append(r)
        return front

    def sorted(self, by: str = "makespan_cycles", descending: bool = False) -> list:
        """Records ordered by a figure (or ``number``/``status``, or a configuration name); records
        without that value go last."""
        def value(r):
            return r.config[by] if by in r.config else getattr(r, by, None)
        have = [r for r in self.records if value(r) is not None]
        missing = [r for r in self.records if value(r) is None]
        return sorted(have, key=lambda r: _sortable(value(r)), reverse=descending) + missing

    @property
    def names(self) -> list:
        """The configuration names, in the order they first appear."""
        names: dict = {}
        for r in self.records:
            names.update(dict.fromkeys(r.config))
        return list(names)

    # ---- text, CSV, JSON -------------------------------------------------------------------------
    def rows(self) -> list:
        """One flat dict per record: number, configuration, status, figures, numbers_match, error."""
        out = []
        for r in self.records:
            row = {"number": r.number, **r.config, "status": r.status}
            row.update({f: getattr(r, f) for f in FIGURES})
            row.update({"compiled": r.compiled, "numbers_match": r.numbers_match, "seconds": r.seconds,
                        "error": r.error.splitlines()[0] if r.error else ""})
            out.append(row)
        return out

    def to_csv(self, path: str | None = None) -> str:
        """The rows as CSV text (also written to ``path`` when given)."""
        rows = self.rows()
        buf = io.StringIO()
        fields = list(dict.fromkeys(k for row in rows for k in row)) or ["number"]
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        text = buf.getvalue()
        if path:
            with open(path, "w", newline="") as f:
                f.write(text)
        return text

    def table(self, limit: int | None = 10, by: str = "makespan_cycles", timing: bool = True) -> str:
        """A text table of the records ordered by ``by`` (the first ``limit``); ``timing=False``
        leaves out the compile seconds (the only column that is not deterministic)."""
        names = self.names
        head = ["#", *names, "status", "makespan", "crit path", "AIC%", "AIV%", "L2 hit", "dev tasks",
                "compile s"][:None if timing else -1]
        lines = [head]
        for r in self.sorted(by)[:limit]:
            lines.append([str(r.number), *(_cell(r.config.get(n)) for n in names), r.status,
                          _cell(r.makespan_cycles), _cell(r.critical_path_cycles), _pct(r.utilization_aic),
                          _pct(r.utilization_aiv), _pct(r.l2_hit_rate), _cell(r.device_tasks),
                          "-" if r.compile_seconds is None else f"{r.compile_seconds:.3f}"][:len(head)])
        widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in lines)

    def __repr__(self) -> str:
        best = self.best
        head = f"<Results of {self.kernel or 'a sweep'}: {len(self.records)} trial(s), {len(self.failed)} not ok"
        return head + (f", best makespan {best.makespan_cycles} cycles>" if best else ">")

    def to_json(self) -> dict:
        return {"version": FORMAT_VERSION, "kernel": self.kernel, "space": self.space,
                "records": [r.to_dict() for r in self.records]}

    def save(self, path: str) -> str:
        """Export every record as one JSON file (atomically: written to a fresh temporary file
        beside it, then renamed; an interrupted save leaves the previous file and no temporary)."""
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_json(), f, default=str)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return path

    @classmethod
    def load(cls, path: str) -> "Results":
        """The results at ``path``: a sweep's store (a journal) or a file written by `save`."""
        from ..errors import OptionError
        from .store import read

        with open(path, "rb") as f:
            first = f.readline()
        try:
            head = json.loads(first)
        except ValueError:
            head = None
        if isinstance(head, dict) and "format" in head:  # a journal
            header, records = read(path)
            key = header.get("key") or {}
            return cls([TrialRecord.from_dict(d) for d in records], key.get("kernel", {}).get("name", ""),
                       key.get("space"), path)
        with open(path) as f:
            data = json.load(f)
        if data.get("version") != FORMAT_VERSION:
            raise OptionError(f"{path} is not a pypto.tune results file of this version", param="path",
                              expected=f"version {FORMAT_VERSION}", got=repr(data.get("version")))
        return cls([TrialRecord.from_dict(d) for d in data["records"]], data.get("kernel", ""),
                   data.get("space"), path)


def _sortable(v):
    return (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, str(v))


def _cell(v) -> str:
    return "-" if v is None else str(v)


def _pct(v) -> str:
    return "-" if v is None else f"{v:.0%}"
