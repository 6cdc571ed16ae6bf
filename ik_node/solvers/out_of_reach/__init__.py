"""Targets out of reach: the closest pose search, the proven reach bound (``min_residual``)
and the measured reach, shared by the iterative solvers."""
