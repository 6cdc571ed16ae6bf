"""The ROS side of ik_node: the only package that imports rclpy.

Rooms, each importing only the ones listed before it (``test/core/test_layers.py`` checks it):

* ``inputs/``: what flows in: the target topics (``target_subscriptions``, read from the bytes
  by ``target_cdr``, turned into ``targets``; ``target_flow``: when a kept message is handed on
  or skipped), ``latest_targets`` (the newest pending target of each tip, never a backlog),
  ``measured_state``, ``description`` (the robot description topic), ``tf_frames``;
  ``node_inputs`` holds them together.
* ``outputs/``: ``solution_output`` (joint states or controller commands), ``jump_guard``,
  ``diagnostics`` (statuses on ``/diagnostics``) behind ``status_rate_gate``, worded by
  ``status_format``; ``solve_report`` (one solve as the outputs see it, an immutable value).
* ``rviz/``: what RViz shows and takes: ``markers`` and ``marker_shapes`` (marker contents),
  ``marker_output`` (``~/markers``), ``map_markers`` and ``reach_map_output``
  (``~/reachability``), ``interactive`` and ``interactive_marker_msgs`` (the interactive target
  markers), ``drag_targets`` (drags become targets).
* ``solving/``: ``robot_model`` (the chain, solver and output plan in force),
  ``target_pipeline`` (a target's way from the queue to the solver's answer),
  ``planar_targets`` (point targets of a planar chain onto its plane), ``obstacles``
  (``~/obstacles`` into the solver's collision world).
* The node: ``node`` (:class:`~ik_node.ros.node.IkNode`, the wiring), ``solve_loop`` (when the
  node solves, and one solve from the targets to the published answer), ``model_lifecycle``
  (the model in force, replaced and dropped), ``parameters`` (declaring and reading them),
  ``parameter_changes`` (applying a change at run time).
* ``app/``: the executable: ``entry`` (usage, a missing rclpy), ``run`` (start, spin, clean
  shutdown), ``held_signals`` (SIGINT and SIGTERM held back until the node can end cleanly),
  ``cli_target_client`` (``ik-solve target``, the command line's ROS client).
"""
