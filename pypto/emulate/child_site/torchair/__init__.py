"""``import torchair`` in a process started by an emulated one: see ``../torch_npu/__init__.py``."""

import importlib
import sys

import pypto.emulate

pypto.emulate.install()
sys.modules[__name__] = importlib.import_module("pypto.emulate.torchair")
