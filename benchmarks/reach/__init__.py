"""Reach benchmarks: targets out of reach and reachability map builds."""
