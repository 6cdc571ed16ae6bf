"""Helpers shared by the benchmark rooms: solver adapters, target checks, reports, plots."""
