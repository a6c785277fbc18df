"""The simulated schedules stay the same to the cycle: every case of `schedule_fingerprints`
(the timing tests' kernels, the flash-attention example under every schedule mode and AICPU
thread count, small calibration cases) against the stored fingerprints, simulated with one
re-used `Replayer` per call (whatever it caches across simulations), in another order than the
store's, and with a new `Replayer` per simulation.

A failure here after a change meant only to speed the simulator up is a bug in that change; after
a change to the timing model that moves cycles on purpose, regenerate the store (see
`schedule_fingerprints`) in the same commit."""

import json
import random

import pytest

from tests.timing import schedule_fingerprints as sf

with open(sf.STORE) as f:
    STORED = json.load(f)


@pytest.fixture(scope="module")
def built():
    return list(sf.cases())


def _check(name, opts, timeline):
    want = STORED[name][sf.option_key(opts)]
    got = sf.fingerprint(timeline)
    assert got == want, f"{name} under {opts}: schedule moved (makespan {want['makespan']} -> {got['makespan']})"


def test_every_case_is_stored(built):
    assert {name for name, *_ in built} == set(STORED)
    for name, _, _, options in built:
        assert {sf.option_key(o) for o in options} == set(STORED[name])


def test_reused_replayer_in_another_order(built):
    from pypto.runtime.machine import current_machine
    from pypto.runtime.scheduler import Replayer

    m = current_machine()
    rng = random.Random(19)
    for name, rp, runtime, options in built:
        # the store was made in the listed order: here its caches fill in another one
        order = rng.sample(options, len(options))
        r = Replayer(rp.lowered, rp.stream, rp.memory_key)
        for opts in order + order[:3]:  # and again: a repeated option may be answered from a cache
            _check(name, opts, r.simulate({**runtime, **opts}, m))


def test_fresh_replayer_per_simulation(built):
    from pypto.runtime.machine import current_machine
    from pypto.runtime.scheduler import simulate

    m = current_machine()
    for name, rp, runtime, options in built:
        for opts in options[:2]:  # each builds the call's tasks again: a few per case
            _check(name, opts, simulate(rp.lowered, rp.stream, {**runtime, **opts}, m, rp.memory_key))


def test_a_reused_replayer_follows_the_machine(built):
    # schedules and costs kept for one machine never answer for another
    from pypto.runtime.machine import current_machine, machine_model
    from pypto.runtime.scheduler import Replayer, simulate

    name, rp, runtime, options = next(b for b in built if b[0] == "timing/chains")
    r = Replayer(rp.lowered, rp.stream, rp.memory_key)
    for m in (current_machine(), machine_model("small"), current_machine()):
        for opts in options[:4]:
            got = sf.fingerprint(r.simulate({**runtime, **opts}, m))
            want = sf.fingerprint(simulate(rp.lowered, rp.stream, {**runtime, **opts}, m, rp.memory_key))
            assert got == want, f"{name} under {opts} on {m.name}"
