"""ik_node: live inverse kinematics for ROS 2 robots described by URDF.

The kinematics core and the solvers (this package minus :mod:`ik_node.ros.node` and
:mod:`ik_node.ros`) import numpy and transforms3d only, so they run without ROS::

    from ik_node import Chain, make_solver
    chain = Chain.from_urdf_file('leg3.urdf', 'base_link', 'foot')
    result = make_solver('analytic_hip_knee', chain).solve([0.2, 0.1, -0.45])

The names below are imported on first use (PEP 562), so ``ik_node``'s executables start without
loading numpy before they can hold back a Ctrl-C.
"""

from importlib import import_module

__version__ = '0.1.0'

_EXPORTS = {
    'Chain': 'ik_node.model.chain', 'Joint': 'ik_node.model.chain', 'Tip': 'ik_node.model.chain',
    'ChainError': 'ik_node.errors', 'ConfigError': 'ik_node.errors',
    'IkError': 'ik_node.errors', 'TargetError': 'ik_node.errors',
    'SOLVERS': 'ik_node.solvers', 'IkResult': 'ik_node.solvers', 'IkStatus': 'ik_node.solvers',
    'ParamSpec': 'ik_node.solvers', 'Solver': 'ik_node.solvers', 'TipResult': 'ik_node.solvers',
    'make_solver': 'ik_node.solvers', 'solver_class': 'ik_node.solvers',
    'BatchResult': 'ik_node.solvers.batch', 'solve_many': 'ik_node.solvers.batch',
}

__all__ = sorted(_EXPORTS) + ['__version__']


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
