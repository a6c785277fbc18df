"""The differential fuzzer: random pypto kernels checked against torch (see README.md here)."""
