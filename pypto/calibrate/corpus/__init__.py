"""One module per family of published points; each registers its cases with `cases.case`."""
