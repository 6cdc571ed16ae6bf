"""Benchmarks of the running node: latency over DDS, first answer, CPU per answer."""
