"""Run upstream PyPTO's own files, unmodified, against this package; write docs/COMPAT.md.

    python tools/upstream_compat.py --upstream PATH [-j N] [--timeout S] [--groups examples models st ut]
                                    [--only PATTERN] [--out docs/COMPAT.md] [--json docs/compat.json]

Every file runs in its own process under ``pypto.emulate`` (NPU emulation), from a scratch copy
of upstream's root. Examples and models run as scripts, ``python/tests`` files under pytest.
The report counts which files ran, which passed upstream's own numeric checks, the test-case
pass rates, and ranks the causes of failure. With ``--only`` (or a subset of ``--groups``) the
files run replace their entries in the existing JSON (same upstream commit) and both reports
are rendered from the merged set. See tools/compat/ for the parts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

from compat import checks, report, selection
from compat.failures import OUT_OF_SCOPE
from compat.results import FileResult
from compat.runner import run_all

REPO = Path(__file__).resolve().parent.parent


def upstream_commit(upstream: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(upstream), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def notes(meta: dict) -> str:
    oos = "\n".join(f"- **{name}**" for name in OUT_OF_SCOPE)
    counted = ", ".join(f"`{n}`" for n in checks.described())
    return f"""## Out of scope for now

These need parts of upstream that this package does not aim to provide yet; a file or test
case whose failure names one of them (in the message, or on the upstream line it came from) is
counted as *out of scope*, not failed:

{oos}

(`pypto.pil` / `pypto.ir` here are upstream's C++ IR bindings and their Python builders; this
package's own `pypto.ir` is a different, pure-Python IR. `pypto_pro` files are not selected at
all.)

## How the harness runs and counts

- Rerun: `python tools/upstream_compat.py --upstream <checkout> -j 2` (about
  {meta.get('wall_minutes', '?')} min at -j {meta.get('workers', '?')} for this run); `--only PATTERN`
  reruns matching files and merges them into this report.
- Selection: {selection.__doc__.split(chr(10) + chr(10), 1)[1].strip()}
- Each file runs in its own process (`tools/compat/child.py`) with `pypto.emulate` installed,
  `TILE_FWK_DEVICE_ID=0`, the working directory a scratch copy of upstream's root (so upstream's
  `pytest.ini` / `conftest.py` apply as in their CI, and `import pypto` finds only this package).
- Script sub-cases: the module-level `test_*` functions a script defines are wrapped just before
  its `if __name__ == "__main__":` block runs; each outermost call is a case. Scripts stop at
  their first failing case, so later cases do not run.
- Numeric checks counted (calls made from upstream's files only): {counted}. `isclose` counts as
  executed, never as failed.
- Statuses: {_status_doc()}
"""


def _status_doc() -> str:
    from compat import results

    text = results.__doc__.split("\n\n", 1)[1]
    return " ".join(text.split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, type=Path, help="upstream PyPTO checkout (read only)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="processes in parallel (default 2)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per file (default 120)")
    parser.add_argument("--groups", nargs="+", choices=selection.GROUPS, default=list(selection.GROUPS))
    parser.add_argument("--only", help="run only files whose path contains this text or matches this glob")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "COMPAT.md")
    parser.add_argument("--json", type=Path, default=REPO / "docs" / "compat.json")
    parser.add_argument("--logs", type=Path, help="keep each file's output and raw result here")
    parser.add_argument("--top", type=int, default=30, help="blockers listed in the Markdown report")
    opts = parser.parse_args(argv)

    upstream = opts.upstream.resolve()
    jobs = selection.select(upstream, opts.groups, opts.only)
    if not jobs:
        print("no upstream files selected", file=sys.stderr)
        return 2
    commit = upstream_commit(upstream)
    print(f"running {len(jobs)} upstream files from {upstream} ({commit[:10]}), -j {opts.jobs}, "
          f"timeout {opts.timeout:g} s", file=sys.stderr)

    def progress(done: int, total: int, r: FileResult) -> None:
        why = f"  {r.failure.headline()[:100]}" if r.failure and r.status != "verified" else ""
        print(f"[{done}/{total}] {r.status:<12} {r.seconds:6.1f}s {r.path}{why}", file=sys.stderr, flush=True)

    t0 = time.time()
    results = run_all(jobs, upstream, workers=opts.jobs, timeout=opts.timeout, logs=opts.logs, progress=progress)
    partial = bool(opts.only) or set(opts.groups) != set(selection.GROUPS)
    if partial and opts.json.exists():
        previous = json.loads(opts.json.read_text())
        if previous.get("upstream_commit") == commit:
            ran = {r.path for r in results}
            results += [FileResult.from_dict(d) for d in previous["files"] if d["path"] not in ran]
    meta = {"date": datetime.date.today().isoformat(), "upstream_commit": commit,
            "command": "tools/upstream_compat.py" + (" (partial rerun merged)" if partial else ""),
            "timeout": opts.timeout, "workers": opts.jobs, "wall_minutes": round((time.time() - t0) / 60, 1)}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.json.parent.mkdir(parents=True, exist_ok=True)
    opts.json.write_text(json.dumps(report.to_json(results, meta), indent=1, ensure_ascii=False) + "\n")
    opts.out.write_text(report.to_markdown(results, meta, notes(meta), top=opts.top))
    counts = report.status_counts(results)
    print("  ".join(f"{k}={v}" for k, v in counts.items()), file=sys.stderr)
    print(f"wrote {opts.out} and {opts.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
