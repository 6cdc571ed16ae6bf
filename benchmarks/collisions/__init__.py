"""Collision check benchmarks."""
