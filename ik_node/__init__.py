"""ik_node: live inverse kinematics for ROS 2 robots described by URDF.

The kinematics core and the solvers (this package minus :mod:`ik_node.node`) import numpy and
transforms3d only, so they run without ROS::

    from ik_node import Chain, make_solver
    chain = Chain.from_urdf_file('leg.urdf', 'base_link', 'foot')
    result = make_solver('analytic_hip_knee', chain).solve([0.2, 0.1, -0.5])
"""

from ik_node.chain import Chain, Joint, Tip
from ik_node.errors import ChainError, ConfigError, IkError, TargetError
from ik_node.solvers import (SOLVERS, IkResult, IkStatus, ParamSpec, Solver, TipResult,
                             make_solver, solver_class)

__version__ = '0.1.0'

__all__ = ['SOLVERS', 'Chain', 'ChainError', 'ConfigError', 'IkError', 'IkResult', 'IkStatus',
           'Joint', 'ParamSpec', 'Solver', 'TargetError', 'Tip', 'TipResult', 'make_solver',
           'solver_class', '__version__']
