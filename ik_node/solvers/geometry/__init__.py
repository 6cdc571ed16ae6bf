"""Geometry the solvers share, below every solver and strategy (imports only the model and the
numerics).

* :mod:`~ik_node.solvers.geometry.planar_core`: the planar 2-link core in closed form, and the
  angle helpers (nearest angle within limits, clamp on a circle, annulus distance).
* :mod:`~ik_node.solvers.geometry.reach_set`: the set a leg's foot reaches, joint limits aside.
* :mod:`~ik_node.solvers.geometry.reach_bound`: the proven lower bound of a target's error.
* :mod:`~ik_node.solvers.geometry.residuals`: a target's error functions (pose, position, cost).
"""
