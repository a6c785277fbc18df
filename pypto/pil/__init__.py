"""Upstream's ``pypto.pil`` (its PIL frontend over the C++ IR) is not part of this package.

Only `compile_pipeline` exists, for the one name upstream's test set-ups patch there.
"""
