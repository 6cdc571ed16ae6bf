"""Solver benchmarks: ik_node against peers, several tips, compiled against Python, answers."""
