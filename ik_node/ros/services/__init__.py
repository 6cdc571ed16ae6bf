"""MoveIt's IK services on the node: ``~/compute_ik`` (``moveit_msgs/srv/GetPositionIK``),
``~/compute_fk`` (``GetPositionFK``) and ``~/compute_cartesian_path`` (``GetCartesianPath``).

:func:`attach` serves them where ``moveit_msgs`` imports; where it does not, it logs one line
saying how to get it and the node runs without them. What an answer means is decided in
:mod:`ik_node.services`; this package turns messages into its values and back:

* :mod:`.registration`: :class:`~.registration.IkServices`, the node's side: starts the
  services' own process and sends it each model the node puts in force.
* :mod:`.host`: that process: its node, the groups' solvers, ``/diagnostics``.
* :mod:`.compute_ik`, :mod:`.compute_fk`, :mod:`.cartesian_path`: one handler per service.
* :mod:`.messages`: message fields to checked values and back.
"""

from __future__ import annotations

from typing import Optional

#: What the node logs when moveit_msgs is missing.
MISSING = ('MoveIt services off (~/compute_ik, ~/compute_fk, ~/compute_cartesian_path): '
           'moveit_msgs is not importable ({error}); install ros-$ROS_DISTRO-moveit-msgs '
           '(rosdep key moveit_msgs) or source a prefix that has it, then restart the node')


def moveit_msgs_available() -> Optional[str]:
    """None when ``moveit_msgs`` (with its services) and the messages the services' process
    builds answers of import, else why not."""
    try:
        from moveit_msgs.srv import GetCartesianPath, GetPositionFK, GetPositionIK  # noqa: F401
        from shape_msgs.msg import SolidPrimitive  # noqa: F401
        from trajectory_msgs.msg import JointTrajectoryPoint  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


def attach(node, tf_timeout_s: float):
    """The node's :class:`~.registration.IkServices`, or None without moveit_msgs (the node
    says so once it has started: :func:`report`).

    Args:
        node: the IkNode (its name, namespace, remappings and logger).
        tf_timeout_s: the longest wait for a TF transform [s].
    """
    if moveit_msgs_available() is not None:
        return None
    from ik_node.ros.services.registration import IkServices
    return IkServices(node, tf_timeout_s)


def report(log) -> None:
    """Say in one line, through ``log``, how to get the services when moveit_msgs is missing
    (after the node has started: a configuration refused at start-up stays a one-line error)."""
    missing = moveit_msgs_available()
    if missing is not None:
        log(MISSING.format(error=missing))
