"""The upstream compatibility harness behind ``tools/upstream_compat.py``.

Parent side (pure, unit-tested): `selection` (which upstream files, how each runs), `failures`
(a failure's cause, out-of-scope causes), `results` (per-file status and totals), `report`
(``docs/COMPAT.md`` and ``docs/compat.json``), `runner` (one process per file, timeouts).
Child side (runs inside each upstream process): `child` (entry point), `checks` (counting
upstream's numeric checks), `cases` (sub-cases of a script), `pytest_plugin` (per-test outcomes).
"""
