"""Targets out of reach: the closest pose search, the proven reach bound (``min_residual``),
the measured reach, and the status and message of each way the search stops (``outcome``),
shared by the iterative solvers."""
