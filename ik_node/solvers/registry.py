"""The solver registry: solver name -> class, and :func:`make_solver`.

The top of the solvers package: it imports every solver, and :func:`make_solver` composes each
solver it builds with the strategies they share (:data:`PARTS`: :class:`~ik_node.solvers.trees.
legs.Legs` for independent legs, the collision guard of :mod:`ik_node.solvers.collision_guard`);
no solver imports it.
"""

from typing import Any, Dict, Mapping, Optional, Type

from ik_node.errors import ConfigError
from ik_node.model.chain import Chain
from ik_node.solvers.base import Solver, SolverParts
from ik_node.solvers.collision_guard import collision_hook
from ik_node.solvers.damped_jacobian.solver import DampedJacobianSolver
from ik_node.solvers.fabrik.solver import FabrikSolver
from ik_node.solvers.hip_knee.solver import HipKneeSolver
from ik_node.solvers.trees.legs import Legs

#: What :func:`make_solver` composes every solver with: a tree of independent legs is solved leg
#: by leg, one instance per leg; answers within tolerance count as reached only when
#: collision-free.
PARTS = SolverParts(compose_legs=Legs, collision_hook=collision_hook)

#: Every solver by its name (``Solver.name``), the values of the ``solver`` parameter.
SOLVERS: Dict[str, Type[Solver]] = {
    cls.name: cls for cls in (HipKneeSolver, FabrikSolver, DampedJacobianSolver)}


def register(cls: Type[Solver]) -> Type[Solver]:
    """Class decorator adding a solver of your own to :data:`SOLVERS` under ``cls.name`` (then
    ``solver: <name>`` works in files, the CLI and the node). An ``__init__`` of its own takes
    ``(chain, params=None, parts=None)`` and passes all three to ``super().__init__``."""
    SOLVERS[cls.name] = cls
    return cls


def solver_class(name: str) -> Type[Solver]:
    """The solver class registered as ``name``; :class:`ConfigError` listing the valid names."""
    try:
        return SOLVERS[name]
    except (KeyError, TypeError):
        raise ConfigError(f'unknown solver {name!r}. Available solvers: '
                          f'{", ".join(sorted(SOLVERS))}') from None


def make_solver(name: str, chain: Chain, params: Optional[Mapping[str, Any]] = None) -> Solver:
    """Build solver ``name`` for ``chain`` with ``params`` (unset ones take their defaults).

    Raises:
        ConfigError: unknown solver name, unknown parameter name or out-of-range value.
        ChainError: the solver cannot work on this chain (says why).
    """
    return solver_class(name)(chain, params, PARTS)
