"""Cache policies of a tensor (``Tensor.set_cache_policy`` / ``get_cache_policy``).

Upstream marks a tensor's GM data PREFETCH (loaded into L2 ahead of use) or NONE_CACHEABLE (kept
out of L2, for weights read once or outputs too large to reuse). They are hints for the hardware:
here they are validated and recorded, and change no number.

A policy belongs to the tensor's memory, so every view of a tensor shares it. The two policies
exclude each other: enabling one while the other is on keeps the first, with a warning, as
upstream does.
"""

from __future__ import annotations

import warnings

from ..enums import CachePolicy
from ..errors import ArgumentTypeError, user_loc


class CachePolicyConflictWarning(UserWarning):
    """PREFETCH and NONE_CACHEABLE were both asked for on one tensor; the first one stays."""


class CachePolicies:
    """The policies enabled on one tensor's memory (all off at first)."""

    __slots__ = ("_on",)

    def __init__(self):
        self._on: set[CachePolicy] = set()

    def set(self, policy, value) -> None:
        policy, value = _policy_arg(policy, "set_cache_policy"), _value_arg(value)
        if not value:
            self._on.discard(policy)
            return
        others = self._on - {policy}
        if others:
            first = sorted(others)[0]
            where = user_loc()
            message = (f"pypto.Tensor.set_cache_policy: {first} and {policy} cannot apply at the same time; "
                       f"{first}, set first, stays")
            if where is None:
                warnings.warn(message, CachePolicyConflictWarning, stacklevel=3)
            else:
                warnings.warn_explicit(message, CachePolicyConflictWarning, where.file, where.line)
            return
        self._on.add(policy)

    def get(self, policy) -> bool:
        return _policy_arg(policy, "get_cache_policy") in self._on

    def enabled(self) -> tuple:
        """The policies on, in enum order."""
        return tuple(sorted(self._on))


def _policy_arg(policy, method: str) -> CachePolicy:
    if not isinstance(policy, CachePolicy):
        raise ArgumentTypeError(f"pypto.Tensor.{method}: 'policy' must be a pypto.CachePolicy",
                                expected=" or ".join(str(p) for p in CachePolicy), got=repr(policy),
                                param="policy", loc=user_loc())
    return policy


def _value_arg(value) -> bool:
    if not isinstance(value, bool):
        raise ArgumentTypeError("pypto.Tensor.set_cache_policy: 'value' must be a bool (enable or disable "
                                "the policy)", expected="True or False", got=repr(value), param="value",
                                loc=user_loc())
    return value
