"""The solver registry: solver name -> class, and :func:`make_solver`."""

from typing import Any, Dict, Mapping, Optional, Type

from ik_node.chain import Chain
from ik_node.errors import ConfigError
from ik_node.solvers.base import IkResult, IkStatus, ParamSpec, Solver, TipResult

SOLVERS: Dict[str, Type[Solver]] = {}


def register(cls: Type[Solver]) -> Type[Solver]:
    """Class decorator adding a solver to :data:`SOLVERS` under ``cls.name``."""
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
    return solver_class(name)(chain, params)


# Importing the modules registers the solvers.
from ik_node.solvers import damped_jacobian, fabrik, hip_knee  # noqa: E402,F401

__all__ = ['SOLVERS', 'IkResult', 'IkStatus', 'ParamSpec', 'Solver', 'TipResult',
           'make_solver', 'register', 'solver_class']
