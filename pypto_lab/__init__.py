"""pypto_lab: the notebook lab for pypto (magic and dashboard widgets)."""
