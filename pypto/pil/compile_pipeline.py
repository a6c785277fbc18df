"""Upstream's ``pypto.pil.compile_pipeline`` lowers PIL functions through its C++ IR passes, which
this package does not have. Upstream's module imports ``setup_verify_data`` from
``pypto.runtime``, and test set-ups replace that name here along with the others; it is the same
function (`pypto.runtime.setup_verify_data`), and nothing here calls it.
"""

from ..runtime import setup_verify_data

__all__ = ["setup_verify_data"]
