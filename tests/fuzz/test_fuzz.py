"""The differential fuzzer's short profile: random valid kernels against torch (see README.md).

Each example is a whole program (ranks 0-4, DYNAMIC/STATIC/int/named dims, tiles, loops with
views and assembles, runtime ``if``, chains of 2-8 ops) run twice with different runtime sizes:
both calls must match torch and compile once. A failure shows hypothesis' shrunk program as a
standalone script. The examples are derandomized so the suite is repeatable; set
``PYPTO_FUZZ_SEED`` to explore other programs, or run ``bash scripts/fuzz.sh N`` for long sweeps.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed

from .generate import programs
from .oracle import CAPACITY_ERRORS, repro_text, run_program

# about 20 s of one core per profile on an idle machine (~0.2 s a kernel)
EXAMPLES = int(os.environ.get("PYPTO_FUZZ_EXAMPLES", "60"))
SEED = os.environ.get("PYPTO_FUZZ_SEED")


def _fuzz(dtypes):
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=SEED is None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(programs(dtypes=dtypes))
    def check(prog):
        outcome = run_program(prog)
        if outcome.status == "fail" or (outcome.status == "rejected" and outcome.kind not in CAPACITY_ERRORS):
            raise AssertionError("a valid program failed:\n" + repro_text(outcome))
    return hypothesis_seed(int(SEED))(check) if SEED is not None else check


@pytest.mark.parametrize("dtypes", [("fp32",), ("fp16", "bf16"), ("int32",)], ids=["fp32", "half", "int32"])
def test_random_kernels_match_torch(dtypes):
    _fuzz(dtypes)()
