"""``torchair.configs.compiler_config.CompilerConfig``: settable options, kept and ignored."""

from __future__ import annotations

import types


class _Options(types.SimpleNamespace):
    """A group of torchair options; any attribute may be set."""


class CompilerConfig:
    """torchair's compile options (``mode``, ``debug``, ``experimental_config`` ...): the
    emulated backend runs graphs eagerly, so they only record what a script asked for."""

    def __init__(self):
        self.mode = "max-autotune"
        self.debug = _Options()
        self.experimental_config = _Options()
        self.inference_config = _Options()
        self.ge_config = _Options()
        self.dump_config = _Options()
        self.export = _Options()
