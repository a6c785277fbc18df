"""Calibration of the timing model against published Ascend A2/A3 measurements.

``pypto/calibrate/corpus/`` holds one case per published point (a kernel written the way its
source writes it, upstream files run unmodified where they exist); `fit` fits the few named,
fitted machine parameters to the corpus and writes the fitted parameter file and
``docs/CALIBRATION.md``; ``python -m pypto.calibrate`` does all of it from one command.

Nothing here is imported by ``import pypto``: calibration touches timing only.
"""
