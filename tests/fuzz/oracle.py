"""Run one fuzzed program against torch and judge it.

The program's script (`render.render`) is written to a temporary module file and imported, so
errors point at real lines; it is called three times (other runtime sizes at the second call, the
first sizes again with new values at the third), and each call is compared with its torch
reference. Outcomes:

* ``pass``: every call matches torch and the kernel compiled exactly once;
* ``rejected``: pypto refused the program with a `pypto.PyptoError` (counted apart; the message's
  first line is kept so rejections can be reviewed);
* ``fail``: a wrong number, a second compile, or any other exception (an internal error).

A wrong number in a half-precision program is checked once more with AutoCast rounding at every
op (`pypto.passes.autocast.SKIP_ROUND_TRIPS` off: every reader of a half tensor reads its rounded
value, as in torch): when that compile matches torch at every call, the difference came only from
upstream's rule that an fp32 chain reads the unrounded value while other readers read the rounded
copy (README, "Half precision"), and the program passes with kind ``two-value``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import pypto

from .program import Program
from .render import render

_COUNTER = itertools.count()
# refusals of a valid program that are about capacity, not correctness: the program is valid but
# its tiles do not fit the simulated core (the default profile keeps them rare)
CAPACITY_ERRORS = ("BufferOverflowError",)


@dataclass(frozen=True)
class Outcome:
    status: str          # "pass", "rejected" or "fail"
    kind: str            # short class of the outcome: "mismatch", "recompiled", an exception name
    detail: str          # what went wrong (empty for a pass)
    source: str          # the standalone script

    @property
    def signature(self) -> str:
        """What a smaller program must still show to count as the same failure."""
        return f"{self.status}:{self.kind}"


def _load(source: str, workdir: Path):
    path = workdir / f"fuzz_case_{os.getpid()}_{next(_COUNTER)}.py"
    path.write_text(source)
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module, path


def _error(exc: BaseException, source: str) -> Outcome:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, pypto.PyptoError):
        return Outcome("rejected", type(exc).__name__, first, source)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return Outcome("fail", type(exc).__name__, tb, source)


def run_program(prog: Program, workdir: str | Path | None = None) -> Outcome:
    """Run ``prog`` three times against torch; see the module docstring for the outcomes."""
    try:
        source = render(prog)
    except Exception:  # noqa: BLE001 - a generator bug, reported like a failure
        return Outcome("fail", "invalid-program", "rendering raised (a generator bug):\n"
                       + traceback.format_exc(), repr(prog))
    own_dir = None
    if workdir is None:
        own_dir = tempfile.TemporaryDirectory(prefix="pypto_fuzz_")
        workdir = own_dir.name
    try:
        module, path = _load(source, Path(workdir))
    except Exception as exc:  # noqa: BLE001 - every exception is a result here
        if own_dir:
            own_dir.cleanup()
        return _error(exc, source)
    try:
        for call in range(len(module.SIZES)):
            try:
                got, want, spread = module.run(call)
            except Exception as exc:  # noqa: BLE001
                # the reference runs first in `run`: ask it alone only now, off the passing path
                return _reference_error(module, call, source) or _error(exc, source)
            bad = module.compare(got, want, spread)
            if bad:
                detail = f"call {call} sizes {module.SIZES[call]}: " + "; ".join(bad)
                if module.PRECISION != module.torch.float32 and _matches_rounding_every_op(source, workdir):
                    return Outcome("pass", "two-value", detail, source)
                return Outcome("fail", "mismatch", detail, source)
        misses = module.kernel.cache_info().misses
        if misses != 1:
            return Outcome("fail", "recompiled", f"compiled {misses} times for runtime-size changes", source)
        try:  # disagreeing sizes, an output aliasing an input, an empty dim (render.extra_calls)
            bad = module.extra_calls()
        except Exception as exc:  # noqa: BLE001
            return _error(exc, source) if not isinstance(exc, pypto.PyptoError) else \
                Outcome("fail", "refused-extra-call", f"a valid extra call was refused: {exc}", source)
        if bad:
            return Outcome("fail", "extra-call", "; ".join(bad), source)
        return Outcome("pass", "", "", source)
    finally:
        sys.modules.pop(module.__name__, None)
        path.unlink(missing_ok=True)
        if own_dir:
            own_dir.cleanup()


def _reference_error(module, call: int, source: str) -> Outcome | None:
    """An ``invalid-program`` failure when the torch reference itself raises at ``call`` (a
    generator bug, not pypto's), else None."""
    try:
        module.reference(*module.make_inputs(call))
    except Exception:  # noqa: BLE001 - the generator made an invalid program
        return Outcome("fail", "invalid-program",
                       "the torch reference raised (a generator bug):\n" + traceback.format_exc(), source)
    return None


def _matches_rounding_every_op(source: str, workdir) -> bool:
    """Whether the program matches torch at every call when AutoCast rounds at every op."""
    from pypto.passes import autocast

    saved = autocast.SKIP_ROUND_TRIPS
    autocast.SKIP_ROUND_TRIPS = False
    try:
        module, path = _load(source, Path(workdir))
    except Exception:  # noqa: BLE001
        autocast.SKIP_ROUND_TRIPS = saved
        return False
    try:
        return all(not module.compare(*module.run(call)) for call in range(len(module.SIZES)))
    except Exception:  # noqa: BLE001 - any error: not explained by the rounding rule
        return False
    finally:
        autocast.SKIP_ROUND_TRIPS = saved
        sys.modules.pop(module.__name__, None)
        path.unlink(missing_ok=True)


def repro_text(outcome: Outcome) -> str:
    """The standalone script of a failure, headed by what went wrong."""
    detail = "\n".join("# " + line for line in outcome.detail.rstrip().splitlines())
    return f"# fuzz {outcome.status}: {outcome.kind}\n{detail}\n{outcome.source}"
