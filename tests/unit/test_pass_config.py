"""Per-pass switches: defaults from the ``pass.default_pass_configs.*`` global keys, overrides per
(strategy, pass), and bool-only values."""

from __future__ import annotations

import pytest

import pypto
from pypto.error import PassError

KEY = pypto.PassConfigKey.KEY_DUMP_GRAPH


@pytest.fixture(autouse=True)
def clean():
    yield
    pypto.reset_global_config()
    from pypto.pass_config import reset_pass_configs

    reset_pass_configs()


def test_default_config_is_the_global_key():
    assert pypto.get_pass_default_config(KEY, True) is False  # defined (False), so the fallback is unused
    pypto.set_pass_default_config(KEY, True)
    assert pypto.get_pass_default_config(KEY, False) is True
    assert pypto.get_global_config("pass.default_pass_configs.dump_graph") is True


def test_a_pass_setting_overrides_the_default_for_that_pass_only():
    pypto.set_pass_config("PVC2_OOO", "ExpandFunction", KEY, True)
    assert pypto.get_pass_config("PVC2_OOO", "ExpandFunction", KEY, False) is True
    assert pypto.get_pass_config("PVC2_OOO", "OtherPass", KEY, True) is False  # the default
    pypto.set_pass_default_config(KEY, True)
    pypto.set_pass_config("PVC2_OOO", "ExpandFunction", KEY, False)
    assert pypto.get_pass_config("PVC2_OOO", "ExpandFunction", KEY, True) is False
    configs = pypto.get_pass_configs("PVC2_OOO", "ExpandFunction")
    assert configs.dumpGraph is False and configs.dumpPassTimeCost is True and configs.disablePass is False
    assert pypto.get_pass_configs("PVC2_OOO", "OtherPass").dumpGraph is True
    with pytest.raises(AttributeError):
        configs.dumpGraph = True  # read only


@pytest.mark.parametrize("call,match", [
    (lambda: pypto.get_pass_default_config(KEY, -2), "Expected boolean type, but received int"),
    (lambda: pypto.set_pass_default_config(KEY, 1), "Expected boolean type, but received int"),
    (lambda: pypto.set_pass_config("PVC2_OOO", "", KEY, True), "'identifier'"),
    (lambda: pypto.get_pass_config("PVC2_OOO", "P", "dump_graph", True), "PassConfigKey"),
])
def test_bad_arguments(call, match):
    with pytest.raises(PassError, match=match) as info:
        call()
    assert isinstance(info.value, TypeError)


def test_semantic_label_of_the_hash_order_form_is_refused():
    with pytest.raises(pypto.error.FeError, match="conflicts with function-granularity hashOrder"):
        pypto.set_semantic_label("func12_0")
    pypto.set_semantic_label("func_attention")  # other labels are fine
