"""Tensor.set_cache_policy / get_cache_policy: validated, recorded per tensor memory, no effect on numbers."""

import warnings

import pytest
import torch

import pypto
from pypto.frontend.cache_policy import CachePolicyConflictWarning
from tests.golden.helper import check_kernel, rand

PREFETCH, NONE_CACHEABLE = pypto.CachePolicy.PREFETCH, pypto.CachePolicy.NONE_CACHEABLE


def test_declared_tensor_policies_start_off_and_toggle():
    t = pypto.tensor((16, 16), pypto.DT_FP32)
    assert t.get_cache_policy(PREFETCH) is False and t.get_cache_policy(NONE_CACHEABLE) is False
    t.set_cache_policy(NONE_CACHEABLE, True)
    assert t.get_cache_policy(NONE_CACHEABLE) is True and t.get_cache_policy(PREFETCH) is False
    t.set_cache_policy(NONE_CACHEABLE, False)
    assert t.get_cache_policy(NONE_CACHEABLE) is False
    other = pypto.tensor((16, 16), pypto.DT_FP32)
    t.set_cache_policy(PREFETCH, True)
    assert other.get_cache_policy(PREFETCH) is False  # per tensor


def test_the_two_policies_exclude_each_other_first_one_stays():
    t = pypto.tensor((4,), pypto.DT_FP16)
    t.set_cache_policy(PREFETCH, True)
    with pytest.warns(CachePolicyConflictWarning, match="PREFETCH.*NONE_CACHEABLE") as rec:
        t.set_cache_policy(NONE_CACHEABLE, True)
    assert rec[0].filename == __file__  # points at the caller's line
    assert t.get_cache_policy(PREFETCH) is True and t.get_cache_policy(NONE_CACHEABLE) is False
    t.set_cache_policy(PREFETCH, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.set_cache_policy(NONE_CACHEABLE, True)  # once the first is off, the other may be set
    assert t.get_cache_policy(NONE_CACHEABLE) is True


@pytest.mark.parametrize("policy, value, param", [(1, True, "policy"), ("NONE_CACHEABLE", True, "policy"),
                                                   (NONE_CACHEABLE, 1, "value"), (PREFETCH, None, "value")])
def test_bad_arguments_are_named(policy, value, param):
    t = pypto.tensor((4,), pypto.DT_FP32)
    with pytest.raises(pypto.ArgumentTypeError) as info:
        t.set_cache_policy(policy, value)
    assert isinstance(info.value, TypeError) and f"'{param}'" in str(info.value)
    assert t.get_cache_policy(PREFETCH) is False and t.get_cache_policy(NONE_CACHEABLE) is False
    with pytest.raises(pypto.ArgumentTypeError, match="'policy'"):
        t.get_cache_policy(0)


seen = {}


@pypto.jit
def scaled(w: pypto.Tensor([8, 16], pypto.DT_FP32), x: pypto.Tensor([8, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 16)
    w.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)  # a weight read once
    rows = w[0:4, :]
    seen["view"] = rows.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE)  # views share the memory's
    seen["x"] = x.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE)
    return w * x + 1.0


def test_in_a_kernel_the_policy_is_a_hint_on_the_memory():
    w, x = rand((8, 16), seed=1), rand((8, 16), seed=2)
    check_kernel(scaled, [w, x], w * x + 1.0)
    assert seen == {"view": True, "x": False}


@pypto.jit
def bad_policy(x: pypto.Tensor([8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8)
    x.set_cache_policy("PREFETCH", True)
    return x + 1.0


def test_bad_policy_in_a_kernel_points_at_its_line():
    with pytest.raises(pypto.ArgumentTypeError) as info:
        bad_policy(torch.zeros(8))
    assert 'x.set_cache_policy("PREFETCH", True)' in str(info.value)
