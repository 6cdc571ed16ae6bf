"""IK, FK and Cartesian paths on request, with MoveIt's meaning (no ROS here).

The node serves MoveIt's ``GetPositionIK``, ``GetPositionFK`` and ``GetCartesianPath``
(:mod:`ik_node.ros.services`); what those answers mean is decided here, on plain values:

* :mod:`.error_codes`: the ``MoveItErrorCodes`` values, and :class:`.error_codes.ServiceError`,
  a refused request with the code that names its cause.
* :mod:`.groups`: the planning groups an SRDF declares (chains, joint lists, groups of groups)
  as a base link and tips the solvers take.
* :mod:`.requests`: a request's checked parts (poses, seed, timeout, constraints).
* :mod:`.constraints`: joint, position and orientation constraints checked on an answer.
* :mod:`.group_solvers`: one solver per group (and per collision setting) of the node's
  configuration, and the answer to one IK request with its error code.
* :mod:`.restart_seeds`: seeds near a target for a request solved again within its budget.
* :mod:`.cartesian`: straight-line paths through waypoints and their timing by the URDF's
  velocity limits.
"""
