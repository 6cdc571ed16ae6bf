"""The ROS side of ik_node: the only package that imports rclpy.

:mod:`ik_node.ros.node` wires the node from these parts, one concern per module:

* ``node``: :class:`~ik_node.ros.node.IkNode`, the wiring; ``target_pipeline``: a target's way
  from its message to the solver's answer. Read the two top to bottom to follow a target.
* ``entry``, ``run``: the executable (usage, a missing rclpy), start, spin, clean shutdown;
  ``held_signals``: SIGINT and SIGTERM held back until the node can end cleanly.
* ``parameters``: declaring and reading the parameters; ``parameter_changes``: applying a change
  at run time; ``robot_model``: the chain, solver and output plan in force.
* Inputs: ``inputs`` (target topics, measured state, robot description, TF), ``targets`` (target
  messages -> :class:`~ik_node.ros.targets.Target`, placed in the base frame),
  ``latest_targets`` (the newest pending target of each tip, never a backlog),
  ``planar_targets`` (point targets of a planar chain onto its plane).
* ``solve_report``: one solve as the outputs see it (a frozen value).
* ``outputs/``: ``solution_output`` (joint states or controller commands), ``jump_guard``,
  ``diagnostics`` (statuses on ``/diagnostics``) behind ``status_rate_gate``, worded by
  ``status_format``.
* ``rviz/``: what RViz shows and takes: ``markers`` and ``marker_shapes`` (marker contents),
  ``marker_output`` (``~/markers``), ``map_markers`` and ``reach_map_output``
  (``~/reachability``), ``interactive`` and ``interactive_marker_msgs`` (the interactive target
  markers), ``drag_targets`` (drags become targets).
* ``cli_target_client``: ``ik-solve target``, the command line's ROS client (it sends the
  running node a target over DDS).
"""
