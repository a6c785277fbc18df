"""Modules that child processes of an emulated process import first (see ``torch_npu/__init__.py``)."""
