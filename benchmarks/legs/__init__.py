"""Leg benchmarks: the analytic hip-knee solver and the closest pose of real legs."""
