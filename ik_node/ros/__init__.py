"""The ROS side of ik_node: the only package that imports rclpy.

:mod:`ik_node.ros.node` wires the node from these parts, one concern per module:

* ``node``: :class:`~ik_node.ros.node.IkNode`, the wiring; a target's path, top to bottom.
* ``entry``, ``run``: the executable (usage, a missing rclpy), start, spin, clean shutdown.
* ``parameters``: declaring and reading the parameters; ``parameter_changes``: applying a change
  at run time; ``robot_model``: the chain, solver and output plan in force.
* Inputs: ``inputs`` (target topics, measured state, robot description, TF),
  ``latest_targets`` (the newest pending target of each tip, never a backlog),
  ``drag_targets`` (drags of the interactive markers become targets).
* Outputs: ``solution_output`` (joint states or controller commands), ``diagnostics`` (statuses
  on ``/diagnostics``) behind ``status_rate_gate``, ``marker_output`` (``~/markers``),
  ``reach_map_output`` (``~/reachability``).
* Messages without rclpy: ``messages`` (ROS messages <-> numpy), ``markers`` (RViz marker
  contents), ``interactive_marker_msgs``; ``interactive`` serves the interactive markers.
"""
