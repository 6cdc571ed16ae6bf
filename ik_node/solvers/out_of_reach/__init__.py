"""Targets out of reach: the closest pose search, the proven reach bound (``min_residual``),
the measured reach, the tip sample whose nearest tips start the search, a leg's closed-form
closest pose (``exact_leg``), and the status and message of each way the search stops
(``outcome``), shared by the iterative solvers."""
