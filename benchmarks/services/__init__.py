"""Benchmarks of the node's MoveIt services (``python -m benchmarks.services.<name>``)."""
