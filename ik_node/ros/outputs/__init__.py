"""What the node publishes besides RViz markers: the solution (joint states or controller
commands) behind the jump guard, and its statuses on ``/diagnostics`` behind the rate gate."""
