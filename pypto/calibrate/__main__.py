"""``python -m pypto.calibrate``: build the corpus, fit, measure, write the report.

    python -m pypto.calibrate                 # fit, leave-one-family-out, write files
    python -m pypto.calibrate --no-fit        # measure the parameters as they are (no file changes
                                              # but docs/CALIBRATION.md and model_error.json)
    python -m pypto.calibrate --only gemm     # cases whose id or family contains a word (no files)

Model-kernel cases run upstream's own files: ``--upstream PATH`` (or $PYPTO_UPSTREAM) names an
upstream PyPTO checkout (without one those cases are reported as not built).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .cases import load_all
from .fit import Evaluator, fit, fitted_names, leave_one_family_out
from .report import REPO, markdown, ratio_error, summary, write_model_error, write_platform


def start_machine(machine):
    """``machine`` with each fitted parameter at its start value (the platform file's ``start``)."""
    kw = {n: machine.sources[n].get("start", getattr(machine, n)) for n in fitted_names(machine)}
    return machine.with_(**kw)


def targets(cases, summ) -> list:
    fam = summ["families"]
    o = summ["overall"]
    worst_family = max((s["median"] for s in fam.values() if s["median"] is not None), default=None)
    g = fam.get("gemm", {})
    loo = o.get("loo_median")
    out = [("median over all points <= 25%", f"{100 * o['median']:.0f}%", o["median"] <= 0.25),
           ("each family's median within 1.5x (error <= 50%)", f"worst family {100 * worst_family:.0f}%",
            worst_family <= 0.5)]
    if g.get("points"):
        out += [("GEMM median <= 15%", f"{100 * g['median']:.0f}%", g["median"] <= 0.15),
                ("GEMM worst <= 30%", f"{100 * g['worst']:.0f}%", g["worst"] <= 0.30)]
    if loo is not None:
        out.append(("leave-one-family-out median within 1.5x", f"{100 * loo:.0f}%", loo <= 0.5))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pypto.calibrate", description=__doc__.splitlines()[0])
    ap.add_argument("--no-fit", action="store_true", help="measure the current parameters, fit nothing")
    ap.add_argument("--no-loo", action="store_true", help="skip the leave-one-family-out refits")
    ap.add_argument("--only", nargs="*", help="cases whose id or family contains one of these words (writes nothing)")
    ap.add_argument("--rounds", type=int, default=3, help="coordinate-descent rounds (default 3)")
    ap.add_argument("--upstream", help="an upstream PyPTO checkout for the model-kernel cases (else $PYPTO_UPSTREAM)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="worker processes for the simulations (default 2)")
    ap.add_argument("--out", default=str(REPO / "docs" / "CALIBRATION.md"))
    args = ap.parse_args(argv)
    if args.upstream:
        import os

        os.environ["PYPTO_UPSTREAM"] = args.upstream

    from ..runtime.machine import A2A3

    t0 = time.perf_counter()
    cases = load_all()
    if args.only:
        cases = {k: c for k, c in cases.items() if any(w in k or w in c.family for w in args.only)}
    print(f"[calibrate] building {len(cases)} cases")
    ev = Evaluator(cases, jobs=args.jobs)
    print(f"[calibrate] built in {time.perf_counter() - t0:.1f} s")
    names = fitted_names(A2A3)
    start = start_machine(A2A3)
    if args.no_fit:
        best = A2A3
    else:
        best, _ = fit(ev, start, rounds=args.rounds)
    result = ev.run(best, kinds=True)
    loo = None if (args.no_loo or args.only) else leave_one_family_out(ev, start)
    ev.close()
    summ = summary(cases, result.simulated, loo, result.kinds)
    for cid, us in result.simulated.items():
        c = cases[cid]
        print(f"  {cid:36s} {c.family:16s} published {c.published_us:9.1f}  simulated {us:9.1f}  "
              f"x{us / c.published_us:5.2f}")
    for cid, err in result.errors.items():
        print(f"  {cid:36s} FAILED {err.splitlines()[0][:120]}")
    o = summ["overall"]
    print(f"[calibrate] median error {100 * o['median']:.0f}%, worst {100 * o['worst']:.0f}% over {o['points']} points")
    tg = targets(cases, summ)
    for t, v, ok in tg:
        print(f"  {'ok ' if ok else 'NO '} {t}: {v}")
    if args.only:
        return 0
    if not args.no_fit:
        print(f"[calibrate] wrote {write_platform(best, names, start)}")
    print(f"[calibrate] wrote {write_model_error(summ, best.name)}")
    base_path = Path(__file__).with_name("baseline.json")
    baseline = json.loads(base_path.read_text()) if base_path.exists() else None
    if baseline:
        baseline = {k: v for k, v in baseline.items() if not k.startswith("_")}
    text = markdown(cases, result, summ, names, best, start, ev, time.perf_counter() - t0, baseline, tg)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"[calibrate] wrote {args.out} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
