"""Per-pass configuration switches (upstream's ``pypto.set_pass_config`` family).

Each pass of upstream's pipeline has a few switches (print or dump its graph, check its input or
output, skip it ...). The defaults for every pass are the global configuration keys
``pass.default_pass_configs.*`` (`pypto.set_global_config`); ``set_pass_config(strategy, pass,
key, value)`` overrides one switch of one pass of one strategy (``"PVC2_OOO"``). As the other
global configuration, these steer upstream's toolchain: this build validates, stores and reads
them back (its own pass dumps are ``debug_options``), and they are process-wide.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

from .config import get_global_config, set_global_config
from .errors import PassConfigError, user_loc


class PassConfigKey(enum.Enum):
    """The per-pass switch a call reads or writes."""

    KEY_DUMP_GRAPH = "dump_graph"


# field of PassConfigs -> global config key under pass.default_pass_configs
_FIELDS = {"printGraph": "print_graph", "dumpGraph": "dump_graph", "dumpPassTimeCost": "dump_pass_time_cost",
           "preCheck": "pre_check", "postCheck": "post_check", "disablePass": "disable_pass",
           "healthCheck": "health_check"}


@dataclass(frozen=True)
class PassConfigs:
    """The switches of one pass, read only."""

    printGraph: bool  # noqa: N815 - upstream's field names
    dumpGraph: bool  # noqa: N815
    dumpPassTimeCost: bool  # noqa: N815
    preCheck: bool  # noqa: N815
    postCheck: bool  # noqa: N815
    disablePass: bool  # noqa: N815
    healthCheck: bool  # noqa: N815


_lock = threading.Lock()
_overrides: dict[tuple[str, str, str], bool] = {}  # (strategy, pass, switch) -> value


def _key(key, loc) -> str:
    if not isinstance(key, PassConfigKey):
        raise PassConfigError(f"a pass config key must be a pypto.PassConfigKey, got {key!r}",
                        expected=", ".join(f"PassConfigKey.{k.name}" for k in PassConfigKey), got=repr(key),
                        param="key", loc=loc)
    return key.value


def _flag(value, param: str, loc) -> bool:
    if not isinstance(value, bool):
        raise PassConfigError(f"'{param}' of a pass config: Expected boolean type, but received {type(value).__name__}",
                        expected="True or False", got=repr(value), param=param, loc=loc)
    return value


def _name(value, param: str, loc) -> str:
    if not isinstance(value, str) or not value:
        raise PassConfigError(f"'{param}' of a pass config must be a non-empty str", expected="e.g. 'PVC2_OOO'",
                        got=repr(value), param=param, loc=loc)
    return value


def get_pass_default_config(key: PassConfigKey, default_value: bool) -> bool:
    """The default of switch ``key`` for every pass (``default_value`` where none is defined)."""
    loc = user_loc(2)
    name = _key(key, loc)
    _flag(default_value, "default_value", loc)
    value = get_global_config(f"pass.default_pass_configs.{name}")
    return default_value if value is None else value


def set_pass_default_config(key: PassConfigKey, value: bool) -> None:
    """Set the default of switch ``key`` for every pass."""
    loc = user_loc(2)
    set_global_config(f"pass.default_pass_configs.{_key(key, loc)}", _flag(value, "value", loc))


def get_pass_config(strategy: str, identifier: str, key: PassConfigKey, default_value: bool) -> bool:
    """Switch ``key`` of pass ``identifier`` in ``strategy``: its own setting, else the default."""
    loc = user_loc(2)
    entry = (_name(strategy, "strategy", loc), _name(identifier, "identifier", loc), _key(key, loc))
    _flag(default_value, "default_value", loc)
    with _lock:
        if entry in _overrides:
            return _overrides[entry]
    return get_pass_default_config(key, default_value)


def set_pass_config(strategy: str, identifier: str, key: PassConfigKey, value: bool) -> None:
    """Set switch ``key`` of pass ``identifier`` in ``strategy`` (its default no longer applies)."""
    loc = user_loc(2)
    entry = (_name(strategy, "strategy", loc), _name(identifier, "identifier", loc), _key(key, loc))
    flag = _flag(value, "value", loc)
    with _lock:
        _overrides[entry] = flag


def get_pass_configs(strategy: str, identifier: str) -> PassConfigs:
    """Every switch of pass ``identifier`` in ``strategy``."""
    loc = user_loc(2)
    strategy, identifier = _name(strategy, "strategy", loc), _name(identifier, "identifier", loc)
    values = {}
    with _lock:
        for field, switch in _FIELDS.items():
            own = _overrides.get((strategy, identifier, switch))
            values[field] = own if own is not None else get_global_config(f"pass.default_pass_configs.{switch}")
    return PassConfigs(**values)


def reset_pass_configs() -> None:
    """Forget every per-pass setting (the defaults stay as set)."""
    with _lock:
        _overrides.clear()


__all__ = ["PassConfigKey", "PassConfigs", "get_pass_default_config", "set_pass_default_config", "get_pass_config",
           "set_pass_config", "get_pass_configs", "reset_pass_configs"]
