"""``python -m pypto.tune module:kernel --shape x=4096,512 ... [options]``: run a sweep from the
command line, print the table and the best configuration.

    python -m pypto.tune examples/flash_attention.py:flash_attention \\
        --shape q=1,256,64 --shape k=1,256,64 --shape v=1,256,64 --shape out=1,256,64 \\
        --param bq=16,32,64 --option device_sched_mode=0,1,2,3 --budget 200 --strategy tpe \\
        --scheduler tcp://host:8786 --store sweep.jsonl

A name given twice in ``--shape`` starts the next call shape (each configuration runs them all).
"""

from __future__ import annotations

import argparse
import ast
import sys


def _values(text: str) -> list:
    """``1,2,3`` -> [1, 2, 3]; Python literals (ints, floats, strings, True) are read as such."""
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            out.append(ast.literal_eval(part))
        except (ValueError, SyntaxError):
            out.append(part)
    return out


def _pair(text: str, flag: str) -> tuple:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise SystemExit(f"{flag} takes name=values, got {text!r}")
    return name.strip(), value


def parse_shapes(items: list) -> list:
    """``["x=4,8", "out=4,8", "x=16,8", "out=16,8"]`` -> two call shapes."""
    calls = [{}]
    for item in items:
        name, value = _pair(item, "--shape")
        if name in calls[-1]:
            calls.append({})
        calls[-1][name] = tuple(int(d) for d in value.split(","))
    return calls


def main(argv=None) -> int:
    from .results import Results
    from .render import render
    from .runner import sweep
    from .source import KernelSource
    from .space import space

    p = argparse.ArgumentParser(prog="python -m pypto.tune", description=__doc__.split("\n\n")[0])
    p.add_argument("kernel", help="module:kernel or path/to/file.py:kernel")
    p.add_argument("--shape", action="append", default=[], required=True, metavar="NAME=D0,D1,...",
                   help="a tensor parameter's shape (repeat a name to add another call shape)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="candidates of a kernel compile-time parameter")
    p.add_argument("--option", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="candidates of a runtime option (or pass.<name>)")
    p.add_argument("--dtype", action="append", default=[], metavar="NAME=fp16",
                   help="dtype of a tensor parameter whose annotation has none (default fp32)")
    p.add_argument("--baseline", action="append", default=[], metavar="NAME=VALUE",
                   help="the configuration whose numbers every trial is checked against (default: the "
                   "kernel's defaults); repeat for each name")
    p.add_argument("--strategy", default="grid", help="grid, random or tpe (default grid)")
    p.add_argument("--budget", type=int, default=None, help="at most this many trials")
    p.add_argument("--seconds", type=float, default=None, help="stop submitting trials after this long")
    p.add_argument("--scheduler", default=None, help="a Dask scheduler address (tcp://host:8786)")
    p.add_argument("--workers", type=int, default=None, help="workers of the embedded LocalCluster")
    p.add_argument("--inprocess", action="store_true", help="run trials in this process (no Dask)")
    p.add_argument("--store", default=None, help="journal file of the trials (JSON lines; resumed if it "
                   "exists and was written by this same sweep, refused if by another)")
    p.add_argument("--csv", default=None, help="also write the results as CSV here")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=10, help="rows of the printed table")
    a = p.parse_args(argv)

    source = KernelSource.parse(a.kernel)
    kernel = source.load()
    sp = space(parse_shapes(a.shape), params={n: _values(v) for n, v in map(lambda s: _pair(s, "--param"), a.param)},
               options={n: _values(v) for n, v in map(lambda s: _pair(s, "--option"), a.option)},
               dtypes=dict(_pair(d, "--dtype") for d in a.dtype))
    baseline = {n: _values(v)[0] for n, v in map(lambda s: _pair(s, "--baseline"), a.baseline)} or None
    results: Results = sweep(kernel, sp, strategy=a.strategy, budget=a.budget, seconds=a.seconds,
                             baseline=baseline,
                             runner="inprocess" if a.inprocess else "dask", scheduler_address=a.scheduler,
                             n_workers=a.workers, store=a.store, seed=a.seed,
                             source=_text(source))
    print(results.table(a.top))
    bad = results.failed
    if bad:
        print(f"\n{len(bad)} trial(s) not ok, e.g. #{bad[0].number}: {bad[0].error.splitlines()[0]}")
    if a.csv:
        results.to_csv(a.csv)
    best = results.best
    if best is None:
        print("\nno configuration ran successfully")
        return 1
    print(f"\nbest: #{best.number} makespan {best.makespan_cycles} cycles ({best.makespan_us:.2f} us)\n")
    print(render(kernel, best))
    return 0


def _text(source) -> str | None:
    """The kernel's module text when it was loaded from a file (workers may not share this
    filesystem: a remote scheduler gets the text, not the path)."""
    if source.path:
        with open(source.path) as f:
            return f.read()
    return None


def run(argv=None) -> int:
    """`main`, with a pypto error printed as its message (no traceback) and exit status 2."""
    from ..errors import PyptoError

    try:
        return main(argv)
    except PyptoError as e:
        print(f"python -m pypto.tune: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # SweepInterrupted says what the store keeps
        print(f"python -m pypto.tune: {e or 'interrupted'}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run())
