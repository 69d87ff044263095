"""Tests that are not about backends run on the reference interpreter (fast to
start); tests/test_backends.py chooses backends explicitly.  Every pass of every
derivation is linted (Note [Pass driver])."""
import os

os.environ.setdefault("LABRYS_BACKEND", "interp")
os.environ.setdefault("LABRYS_LINT", "1")
# Compiled gradients are generated serial (Note [Parallel reverse sums]): the suite's expectations
# are the serial code's, and a parallel function costs seconds to compile; tests/test_threads.py
# asks for threads explicitly.
os.environ.setdefault("LABRYS_THREADS", "1")
