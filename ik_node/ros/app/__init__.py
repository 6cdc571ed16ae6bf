"""The ``ik_node`` executable: its entry point, the run loop and clean shutdown, the signals
held back, and ``ik-solve target`` (the command line's ROS client)."""
