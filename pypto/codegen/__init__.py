"""Code generation: one kernel per leaf function, as a PTO-style listing and as executable Python."""
