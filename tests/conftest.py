"""Tests that are not about backends run on the reference interpreter (fast to
start); tests/test_backends.py chooses backends explicitly."""
import os

os.environ.setdefault("LABRYS_BACKEND", "interp")
