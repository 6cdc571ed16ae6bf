"""The project's exception tree.

Bad configuration and bad input raise one of these, once, at the boundary, with a message that
names the offending value (and lists the valid ones where there is a list). Non-convergence and
unreachable targets are not errors: they are statuses on :class:`ik_node.IkResult`.
"""


class IkError(Exception):
    """Base class of every error raised by ik_node."""


class ConfigError(IkError, ValueError):
    """A solver name, solver parameter or configuration file is invalid."""


class ChainError(IkError, ValueError):
    """A URDF cannot be turned into a kinematic chain (bad XML, missing links, bad joints)."""


class TargetError(IkError, ValueError):
    """A target, seed or frame given to a solver is invalid (NaN, zero quaternion, bad shape)."""
