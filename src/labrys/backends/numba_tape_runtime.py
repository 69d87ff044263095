"""The tape of Smeding & Vákár's ``dualrevtape`` (Dual-numbers reverse AD,
efficiently, §9.3) as machine data for the ``compiled`` backend: a struct of
growable arrays and the compiled reverse sweep over it.

    Tape = { meta   : int64[4]   (next ID n, pairs used k, open runs d)
             start  : int64[≥n+1] (ID i's entry is pairs start[i] … start[i+1]−1)
             opnd   : int64[≥k]   (each pair's operand ID)
             part   : float64[≥k] (each pair's partial ∂)
             frames : int64[≥d]   (each open run's first ID, its slot 0) }

Note [The tape as arrays]
~~~~~~~~~~~~~~~~~~~~~~~~~
The Python run time keeps a list of tuples per run (``labrys.ad.dualrev_runtime``);
here one run is a segment of three flat arrays, written in ID order, so an op
costs a few array writes and no allocation: when an array is full it is
replaced by one twice as large (the copy is amortised O(1) per write).  The
arrays live in a Numba ``StructRef`` because a replaced array must be seen by
every function holding the tape: the tape is the one mutable object the
generated code passes along (Note [The tape in generated code] in
:mod:`.numba_tape`).  Runs nest like the Python run time's stack of runs: a
run starts at the current top (``_drt_begin``), its IDs are absolute positions,
and the sweep pops it, so the next run reuses the space.  The adjoints are a
separate array indexed by ID − base, as in the Python sweep (P7).

The helpers are compiled in each process without Numba's disk cache (the
package's folder may be read-only); a generated module that calls them is
cached whole by labrys's cache, helpers included (Note [Compile cache]).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.experimental import structref


@structref.register
class TapeType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class Tape(structref.StructRefProxy):
    """The tape of one compiled call (never crosses the boundary)."""


structref.define_proxy(Tape, TapeType, ["meta", "start", "opnd", "part", "frames"])

FIRST_CAPACITY = 256


@njit(cache=False)
def _drt_new():
    """An empty tape, no run open."""
    return Tape(np.zeros(4, np.int64), np.zeros(FIRST_CAPACITY, np.int64), np.empty(FIRST_CAPACITY, np.int64),
                np.empty(FIRST_CAPACITY), np.zeros(8, np.int64))


@njit(cache=False)
def _drt_grow(tape, ids, pairs):
    """Room for ``ids`` more IDs and ``pairs`` more pairs: full arrays doubled."""
    meta = tape.meta
    need = meta[0] + ids + 1
    if need > tape.start.shape[0]:
        s = np.empty(max(2 * tape.start.shape[0], need), np.int64)
        s[:tape.start.shape[0]] = tape.start
        tape.start = s
    need = meta[1] + pairs
    if need > tape.opnd.shape[0]:
        size = max(2 * tape.opnd.shape[0], need)
        o = np.empty(size, np.int64)
        o[:tape.opnd.shape[0]] = tape.opnd
        tape.opnd = o
        p = np.empty(size)
        p[:tape.part.shape[0]] = tape.part
        tape.part = p


@njit(cache=False)
def _drt_fresh(tape):
    """A fresh ID with an empty entry: an input's or a literal's (drtZero)."""
    meta = tape.meta
    if meta[2] == 0:
        raise ValueError("drtZero outside a run of dualrevtape")
    n = meta[0]
    if n + 2 > tape.start.shape[0]:
        _drt_grow(tape, 1, 0)
    tape.start[n + 1] = meta[1]
    meta[0] = n + 1
    return n


@njit(cache=False)
def _drt_ids(tape, count):
    """``count`` consecutive fresh IDs with empty entries (a vector input); the first."""
    meta = tape.meta
    n, k = meta[0], meta[1]
    if n + count + 1 > tape.start.shape[0]:
        _drt_grow(tape, count, 0)
    start = tape.start
    for q in range(count):
        start[n + 1 + q] = k
    meta[0] = n + count
    return n


@njit(cache=False)
def _drt_op(tape, ids, partials):
    """drtOp: the entry [(ids[q], partials[q])] written at the next ID, which it returns."""
    meta = tape.meta
    if meta[2] == 0:
        raise ValueError("drtOp outside a run of dualrevtape")
    n, k, c = meta[0], meta[1], len(ids)
    if n + 2 > tape.start.shape[0] or k + c > tape.opnd.shape[0]:
        _drt_grow(tape, 1, c)
    opnd, part = tape.opnd, tape.part
    for q in range(c):
        opnd[k + q] = ids[q]
        part[k + q] = partials[q]
    tape.start[n + 1] = k + c
    meta[0] = n + 1
    meta[1] = k + c
    return n


@njit(cache=False)
def _drt_begin(tape):
    """drtInputs starts a run at the top of the tape; its first ID is slot 0, never used (P5)."""
    meta = tape.meta
    if meta[2] >= tape.frames.shape[0]:
        f = np.zeros(2 * tape.frames.shape[0], np.int64)
        f[:tape.frames.shape[0]] = tape.frames
        tape.frames = f
    tape.frames[meta[2]] = meta[0]
    meta[2] += 1
    _drt_fresh(tape)


@njit(cache=False)
def _drt_base(tape):
    """The innermost open run's first ID."""
    if tape.meta[2] == 0:
        raise ValueError("drtGradient without drtInputs")
    return tape.frames[tape.meta[2] - 1]


@njit(cache=False)
def _drt_adjoints(tape):
    """A zero adjoint per ID of the innermost run (indexed by ID − base)."""
    return np.zeros(tape.meta[0] - _drt_base(tape))


@njit(cache=False)
def _drt_sweep(tape, adj):
    """Fig. 13's loop on the tape: IDs descending to the run's slot 1, each entry's
    operands get adjoint · ∂ (an adjoint 0 is skipped, as in the Python sweep);
    then the run is popped.  adj holds the seeded outputs; afterwards the inputs'."""
    meta = tape.meta
    base = _drt_base(tape)
    start, opnd, part = tape.start, tape.opnd, tape.part
    for i in range(meta[0] - 1, base, -1):
        a = adj[i - base]
        if a == 0.0:
            continue
        for q in range(start[i], start[i + 1]):
            j = opnd[q] - base
            if j < 0:
                raise ValueError("an ID of another run on dualrevtape's tape")
            adj[j] += a * part[q]
    meta[0] = base
    meta[1] = start[base]
    meta[2] -= 1


@njit(cache=False)
def _drt_length(tape):
    """The number of IDs and of pairs on the tape (for tests: tape length = number of ops)."""
    return tape.meta[0], tape.meta[1]
