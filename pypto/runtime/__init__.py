"""Execution of compiled kernels: the executor, the cost model, the scheduler and the timeline.

It also holds upstream's public ``pypto.runtime`` entry points for the explicit
``pypto.function`` flow (``_device_init``, ``_device_run_once_data_from_host``,
``_device_synchronize``, ``_device_fini``), with the simulator as the device (`device`), and
its pass-verify staging (``setup_verify_data``, ``_pto_verify_datas``, ``_pto_to_tensor_data``:
`verify_data`).
"""

from .device import (_device_fini, _device_init, _device_run_once_data_from_host, _device_synchronize,
                     last_function)
from .verify_data import setup_verify_data, tensor_data as _pto_to_tensor_data, verify_datas as _pto_verify_datas

__all__ = ["_device_init", "_device_fini", "_device_run_once_data_from_host", "_device_synchronize",
           "last_function", "setup_verify_data", "_pto_verify_datas", "_pto_to_tensor_data"]
