"""ik_node benchmarks, run from the repository root as ``python -m benchmarks.<room>.<name>``."""
