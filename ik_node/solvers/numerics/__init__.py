"""Numerics shared by the iterative solvers, in plain floats.

* :mod:`~ik_node.solvers.numerics.codegen`: generated straight-line code per chain size.
* :mod:`~ik_node.solvers.numerics.null_space`: the pull away from the joint limits.
* :mod:`~ik_node.solvers.numerics.budget`: wall-time budgets (no step ends past the deadline).
* :mod:`~ik_node.solvers.numerics.dls_settings`: the damped least squares' damping, stall and
  restart settings.
"""
