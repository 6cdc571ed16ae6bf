"""Benchmarks of batch IK and capability maps (run from the repository root as
``python -m benchmarks.capability.<name>``): ``batch_ik`` (solves per second of ``solve_many``
against ``solve()`` one call at a time) and ``accuracy`` (held-out accuracy of maps against
dense IK, build times). Results: ``benchmarks/results/capability.md``."""
