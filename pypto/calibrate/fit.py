"""Fit the machine parameters labelled *fitted* to the calibration corpus.

The loss is the mean over families of each family's weighted mean |log(simulated / published)|:
every family counts once however many points it has (twenty flash-attention points must not
outvote two skinny-matmul ones), and a ratio of 2 costs the same in either direction. The
search is a deterministic coordinate descent in log space inside each parameter's bounds, which
come from published figures where there are any (`BOUNDS`): a fit may not leave what is physically
plausible to chase a point.

`leave_one_family_out` refits without each family in turn and measures the error on the family
left out: a model that only memorises the corpus fails that.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from .cases import end_to_end_us, kernel_span_us

# name -> (low, high, why): the range the fit may search
BOUNDS = {
    "hbm_bw": (540.0, 900.0, "published 910B HBM bandwidth 1.0-1.66 TB/s at 1.85 GHz"),
    "gm_read_latency": (300.0, 2000.0, "DMA first-data latencies of 0.15-1.1 us; upstream's cost model uses 1400"),
    "vector_scale": (0.25, 8.0, "within a factor 4-8 of upstream's compiler-side vector formula"),
    "sort_cycles": (0.25, 4.0, "a sort or merge pass at 0.25-4 cycles per element (one per cycle is the vector unit's scalar-like rate)"),
    "device_task_sync_cycles": (500.0, 20000.0, "a device-side handshake of 0.3-11 us; upstream's cost model stitchLatency 10000"),
    "device_task_build_cycles": (1000.0, 40000.0, "upstream's cost model: stitchLatency 10000 cycles"),
    "root_stitch_cycles": (300.0, 6000.0, "a root's expressions and stitch on the control AICPU, 0.2-3 us"),
    "aicpu_task_scale": (0.2, 2.0, "schedule-thread cycles per task within 0.2-2x of upstream's cost model"),
    "l2_bytes": (16 * 2**20, 192 * 2**20, "upstream's cost model 20 MB ... the published 192 MB"),
    "nd_burst_bytes": (32.0, 512.0, "one 32-byte DMA block (no penalty) ... one 512-byte L2 line"),
}
INTEGER = {"nd_burst_bytes", "gm_read_latency", "device_task_build_cycles", "device_task_sync_cycles", "root_stitch_cycles", "l2_bytes"}


@dataclass
class Result:
    """Simulated microseconds per case id under one machine, and the loss."""

    machine: object
    simulated: dict
    loss: float
    errors: dict = field(default_factory=dict)  # case id -> error text (a case that failed)
    kinds: dict = field(default_factory=dict)  # case id -> the class the lab gives its timeline


def simulated_us(case, sim, machine, kinds=None) -> float:
    """The case's simulated figure on ``machine``; ``kinds[case.id]`` gets the class the lab
    gives the timeline (runtime/model_error.py), when a dict is passed."""
    tl = sim.simulate(machine, **case.runtime)
    if kinds is not None:
        from ..runtime.model_error import kernel_kind

        kinds[case.id] = kernel_kind(tl)
    return end_to_end_us(tl) if case.measures == "end_to_end" else kernel_span_us(tl)


def log_error(sim_us: float, published_us: float) -> float:
    return abs(math.log(max(sim_us, 1e-9) / published_us))


def loss(cases: dict, simulated: dict, families=None) -> float:
    """Mean over families of the weighted mean |log ratio| of their points."""
    per: dict = {}
    for cid, us in simulated.items():
        c = cases[cid]
        if not c.fit or (families is not None and c.family not in families):
            continue
        acc = per.setdefault(c.family, [0.0, 0.0])
        acc[0] += c.weight * log_error(us, c.published_us)
        acc[1] += c.weight
    if not per:
        return 0.0
    return sum(a / w for a, w in per.values() if w) / len(per)


_FORKED: dict = {}  # the evaluator a forked worker inherited


def _run_part(args):
    machine, ids, want_kinds = args
    ev = _FORKED["evaluator"]
    out, errors, kinds = {}, {}, ({} if want_kinds else None)
    for cid in ids:
        try:
            out[cid] = simulated_us(ev.cases[cid], ev.sims[cid], machine, kinds)
        except Exception as e:  # noqa: BLE001
            errors[cid] = f"{type(e).__name__}: {e}"
    return out, errors, kinds or {}


class Evaluator:
    """Builds every case once, then simulates the corpus under any machine; with ``jobs`` > 1
    the cases are split between forked workers (which inherit the built cases) by their cost."""

    def __init__(self, cases: dict, log=print, jobs: int = 1):
        self.cases, self.sims, self.errors, self.build_seconds = cases, {}, {}, {}
        self.evaluations = 0
        for cid, c in cases.items():
            t0 = time.perf_counter()
            try:
                self.sims[cid] = c.build()
            except Exception as e:  # noqa: BLE001 - a case that cannot be built is reported, not fatal
                self.errors[cid] = f"{type(e).__name__}: {e}"
                log(f"[calibrate] {cid}: cannot be built: {self.errors[cid].splitlines()[0]}")
            self.build_seconds[cid] = time.perf_counter() - t0
        self.pool = None
        if jobs > 1 and len(self.sims) > 1:
            import multiprocessing

            from ..runtime.machine import A2A3

            cost = {}
            for cid, sim in self.sims.items():  # one simulation each: warms the task tables too
                t0 = time.perf_counter()
                try:
                    simulated_us(cases[cid], sim, A2A3)
                except Exception:  # noqa: BLE001 - reported by run()
                    pass
                cost[cid] = time.perf_counter() - t0
            parts = [[] for _ in range(jobs)]
            load = [0.0] * jobs
            for cid in sorted(cost, key=cost.get, reverse=True):  # longest first onto the lightest part
                i = load.index(min(load))
                parts[i].append(cid)
                load[i] += cost[cid]
            self.parts = parts
            _FORKED["evaluator"] = self
            self.pool = multiprocessing.get_context("fork").Pool(jobs)

    def close(self):
        if self.pool is not None:
            self.pool.close()
            self.pool.join()
            self.pool = None

    def run(self, machine, only=None, kinds: bool = False) -> Result:
        """Simulate the cases of families ``only`` (all when None); ``kinds``: also classify each
        timeline as the lab would."""
        self.evaluations += 1
        ids = [cid for cid in self.sims if only is None or self.cases[cid].family in only]
        if only is not None:  # a fit's evaluations: cases left out of the fit are not simulated
            ids = [cid for cid in ids if self.cases[cid].fit]
        out, errors, got_kinds = {}, dict(self.errors), {}
        if self.pool is not None:
            wanted = set(ids)
            for o, e, k in self.pool.map(_run_part, [(machine, [c for c in p if c in wanted], kinds)
                                                     for p in self.parts]):
                out.update(o)
                errors.update(e)
                got_kinds.update(k)
            out = {cid: out[cid] for cid in ids if cid in out}  # corpus order
        else:
            for cid in ids:
                try:
                    out[cid] = simulated_us(self.cases[cid], self.sims[cid], machine, got_kinds if kinds else None)
                except Exception as e:  # noqa: BLE001
                    errors[cid] = f"{type(e).__name__}: {e}"
        return Result(machine, out, loss(self.cases, out), errors, got_kinds)


def fitted_names(machine) -> list:
    """The parameters the platform file labels *fitted*, in file order."""
    names = [k for k, v in machine.sources.items() if v.get("label") == "fitted"]
    missing = [k for k in names if k not in BOUNDS]
    if missing:
        raise ValueError(f"fitted parameters without bounds in pypto/calibrate/fit.py: {missing}")
    return names


def _set(machine, name, value):
    return machine.with_(**{name: int(round(value)) if name in INTEGER else float(value)})


def fit(evaluator: Evaluator, start, families=None, rounds: int = 3, log=print):
    """Coordinate descent from machine ``start`` over its fitted parameters, on ``families``
    (all when None). Returns (best machine, its loss on those families, evaluations)."""
    names = fitted_names(start)
    only = None if families is None else set(families)

    if only is None:
        only = {c.family for c in evaluator.cases.values() if c.fit}

    def score(m):
        return loss(evaluator.cases, evaluator.run(m, only).simulated, only)

    best, best_loss = start, score(start)
    # each round tries every parameter a factor up and down, the factors shrinking round by round
    factors = [(2.0, 1.41), (1.19,), (1.09,)]
    for r in range(rounds):
        improved = False
        for name in names:
            lo, hi, _ = BOUNDS[name]
            for step in factors[min(r, len(factors) - 1)]:
                for f in (step, 1 / step):
                    v = min(hi, max(lo, getattr(best, name) * f))
                    if v == getattr(best, name):
                        continue
                    cand = _set(best, name, v)
                    s = score(cand)
                    if s < best_loss - 1e-6:
                        best, best_loss, improved = cand, s, True
        log(f"[calibrate] round {r + 1}: loss {best_loss:.4f} "
            + ", ".join(f"{n}={getattr(best, n):.4g}" for n in names))
        if not improved and r >= 1:
            break
    return best, best_loss


def leave_one_family_out(evaluator: Evaluator, start, rounds: int = 2, log=print) -> dict:
    """family -> {case id: simulated us} under a fit made without that family, started from the
    same start values as the full fit (never from the full fit, which has seen the family)."""
    families = sorted({evaluator.cases[c].family for c in evaluator.sims if evaluator.cases[c].fit})
    out = {}
    for fam in families:
        rest = [f for f in families if f != fam]
        m, _ = fit(evaluator, start, rest, rounds=rounds, log=lambda *_: None)
        out[fam] = evaluator.run(m, {fam}).simulated
        log(f"[calibrate] leave out {fam}: " + ", ".join(f"{n}={getattr(m, n):.4g}" for n in fitted_names(m)))
    return out
