"""The IK solvers: the :class:`Solver` contract, the registry and one subpackage per solver.

* :mod:`~ik_node.solvers.base`: the contract (:class:`Solver`, :class:`FloatSolver`), results
  (:class:`IkResult`, :class:`IkStatus`) and the honest wrap around every solve.
* :mod:`~ik_node.solvers.registry`: name -> class, :func:`make_solver` (which composes each
  solver with independent legs and the collision guard, :class:`SolverParts`).
* :mod:`~ik_node.solvers.hip_knee`, :mod:`~ik_node.solvers.fabrik`,
  :mod:`~ik_node.solvers.damped_jacobian`: the solvers.
* :mod:`~ik_node.solvers.out_of_reach`: the closest pose to a target out of reach, the measured
  reach, and the status and message of each way the closest-pose search stops
  (:mod:`~ik_node.solvers.out_of_reach.outcome`), shared by the iterative solvers.
* :mod:`~ik_node.solvers.trees`: several tips at once (independent legs, trees with a trunk).
* :mod:`~ik_node.solvers.geometry`: geometry the solvers share (planar circles, a leg's reach
  set, the proven reach bound, a target's residuals).
* :mod:`~ik_node.solvers.numerics`: numerics the iterative solvers share (generated code,
  small-matrix helpers, the null-space pull, time budgets, the damped least squares' settings).
* :mod:`~ik_node.kernels`: the compiled kernels' loader, and the kernel library every
  compiled solver calls (:mod:`~ik_node.kernels.fk`: forward kinematics and its
  Jacobian; :mod:`~ik_node.kernels.planar`: the planar angle helpers).
* :mod:`~ik_node.solvers.input_checks`, :mod:`~ik_node.solvers.params`,
  :mod:`~ik_node.solvers.results`: the contract's input checks, parameter specs and result
  types.
"""

from ik_node.solvers.base import (FloatSolver, IkResult, IkStatus, ParamSpec, Solver, SolverParts,
                                  TipResult)
from ik_node.solvers.registry import SOLVERS, make_solver, register, solver_class

__all__ = ['SOLVERS', 'FloatSolver', 'IkResult', 'IkStatus', 'ParamSpec', 'Solver', 'SolverParts',
           'TipResult', 'make_solver', 'register', 'solver_class']
