"""Targets out of reach: the closest pose search, the measured reach, the tip sample whose
nearest tips start the search, the compiled reach checks, and the status and message of each way
the search stops (``outcome``), shared by the iterative solvers. The proven reach bound
(``min_residual``) is :mod:`ik_node.solvers.geometry.reach_bound`; a leg's closed-form closest
pose is :mod:`ik_node.solvers.hip_knee.exact_leg`."""
