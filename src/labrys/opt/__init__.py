"""Optimisation passes: pure functions from IR to IR."""
