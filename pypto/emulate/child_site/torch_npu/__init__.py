"""``import torch_npu`` in a Python process started by an emulated one (subprocess, multiprocessing).

`pypto.emulate.install` puts this folder on ``PYTHONPATH``: as on a machine with an NPU, where
torch_npu is installed for every process, a child that imports torch_npu gets the emulated NPU.
This module switches emulation on and then stands aside for the real stand-in.
"""

import importlib
import sys

import pypto.emulate

pypto.emulate.install()
sys.modules[__name__] = importlib.import_module("pypto.emulate.torch_npu")
