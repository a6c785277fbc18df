"""Upstream's ``pypto._build_online``: managers that build native libraries on first use.

Upstream compiles its pass-verify calculator (a C++ library the interpreter evaluates ops with)
the first time verification needs it. Here the calculator is the torch reference executor
(`pypto.runtime.reference`), part of the package, so there is nothing to build or load.
"""

from __future__ import annotations


class BuildOnlineCalculatorManager:
    """The pass-verify calculator's build manager (one per process, as upstream's)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def build_and_load_calculator(self) -> bool:
        """Make the calculator usable: it is the reference executor, always there. Returns True."""
        from .runtime import reference  # noqa: F401 - importable means loaded

        return True


__all__ = ["BuildOnlineCalculatorManager"]
