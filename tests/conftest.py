"""Tests that are not about backends run on the reference interpreter (fast to
start); tests/test_backends.py chooses backends explicitly.  Every pass of every
derivation is linted (Note [Pass driver])."""
import os

os.environ.setdefault("LABRYS_BACKEND", "interp")
os.environ.setdefault("LABRYS_LINT", "1")
