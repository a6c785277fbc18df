"""Execution of compiled kernels (and, later, the timing simulator)."""
