"""The IK solvers: the :class:`Solver` contract, the registry and one subpackage per solver.

* :mod:`~ik_node.solvers.base`: the contract (:class:`Solver`, :class:`FloatSolver`), results
  (:class:`IkResult`, :class:`IkStatus`) and the honest wrap around every solve.
* :mod:`~ik_node.solvers.registry`: name -> class, :func:`make_solver`.
* :mod:`~ik_node.solvers.hip_knee`, :mod:`~ik_node.solvers.fabrik`,
  :mod:`~ik_node.solvers.damped_jacobian`: the solvers.
* :mod:`~ik_node.solvers.out_of_reach`: the closest pose to a target out of reach, the proven
  reach bound, the measured reach, and the status and message of each way the closest-pose
  search stops (:mod:`~ik_node.solvers.out_of_reach.outcome`), shared by the iterative solvers.
* :mod:`~ik_node.solvers.trees`: several tips at once (independent legs, trees with a trunk).
* :mod:`~ik_node.solvers.numerics`: numerics the iterative solvers share (generated code,
  small-matrix helpers, the null-space pull, time budgets).
* :mod:`~ik_node.solvers.input_checks`, :mod:`~ik_node.solvers.params`,
  :mod:`~ik_node.solvers.results`: the contract's input checks, parameter specs and result
  types.
"""

from ik_node.solvers.base import FloatSolver, IkResult, IkStatus, ParamSpec, Solver, TipResult
from ik_node.solvers.registry import SOLVERS, make_solver, register, solver_class

__all__ = ['SOLVERS', 'FloatSolver', 'IkResult', 'IkStatus', 'ParamSpec', 'Solver', 'TipResult',
           'make_solver', 'register', 'solver_class']
