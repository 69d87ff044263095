"""The tape of Smeding & Vákár's ``dualrevtape`` (Dual-numbers reverse AD,
efficiently, §9.3) as machine data for the ``compiled`` backend: a struct of
preallocated arrays and the compiled reverse sweep over it.

    Tape = ( ints   : int64[8 + ≥n+1]  (next ID n, pairs used k, open runs d, overflow, high-water marks;
                                        then start[i]: ID i's entry is pairs start[i] … start[i+1]−1)
             pairs  : float64[≥2k]     (each pair's operand ID and partial ∂, side by side)
             frames : int64[64]        (each open run's first ID, its slot 0) )

Note [The tape as arrays]
~~~~~~~~~~~~~~~~~~~~~~~~~
The Python run time keeps a list of tuples per run (``labrys.ad.dualrev_runtime``);
here one run is a segment of two flat preallocated arrays, written in ID order,
so an op costs a few array writes and no allocation.  The tape is a plain tuple
of arrays: Numba passes it along for free, where a mutable ``StructRef`` (which
could swap a full array for a larger one) cost three times as much per op in
reference counting.  So the arrays do not grow in place; when a write does not
fit, the tape notes the overflow and counts on without writing, the sweep is
skipped, and the module's entry runs the call once more on a tape of exactly
the size the first run reached (``_drt_fits``, ``_drt_refit``; generated code is
pure, Note [Compiled fallback]).  A call that fits in 1024 IDs runs
once; a larger one pays one extra forward pass and no copying.  Runs nest like
the Python run time's stack of runs: a run starts at the current top
(``_drt_begin``), its IDs are absolute positions, and the sweep pops it, so the
next run reuses the space.  The adjoints are a separate array indexed by
ID − base, as in the Python sweep (P7).

These are plain functions: :mod:`.numba_runtime` compiles them with its own helpers,
as an entry of labrys's cache, and gives them to every generated module as
globals (Note [Compile cache]).
"""
from __future__ import annotations

import numpy as _np

# ints[N] next ID, ints[K] pairs used, ints[D] open runs, ints[OVER] 1 once something did not fit,
# ints[TOP_N], ints[TOP_K] the most IDs and pairs a popped run had; ints[S + i] = start[i];
# MAX_RUNS runs open at once (a derivative called inside a derivative's run)
N, K, D, OVER, TOP_N, TOP_K, S, MAX_RUNS = 0, 1, 2, 3, 4, 5, 8, 64
CONSTANTS = f"N, K, D, OVER, TOP_N, TOP_K, S, MAX_RUNS = {N}, {K}, {D}, {OVER}, {TOP_N}, {TOP_K}, {S}, {MAX_RUNS}\n"
NAMES = ("_drt_new", "_drt_fresh", "_drt_ids", "_drt_op", "_drt_begin", "_drt_base", "_drt_adjoints",
         "_drt_sweep", "_drt_fits", "_drt_refit")


def _drt_new(ids, pairs):
    """An empty tape with room for ``ids`` IDs and ``pairs`` pairs, no run open."""
    ints = _np.empty(S + ids + 2, _np.int64)
    ints[:S + 1] = 0
    return (ints, _np.empty(2 * pairs), _np.zeros(MAX_RUNS, _np.int64))


def _drt_fresh(tape):
    """A fresh ID with an empty entry: an input's or a literal's (drtZero)."""
    ints = tape[0]
    n = ints[N]
    if ints[D] == 0:
        raise ValueError("drtZero outside a run of dualrevtape")
    if S + n + 1 < ints.shape[0]:
        ints[S + n + 1] = ints[K]
    else:
        ints[OVER] = 1
    ints[N] = n + 1
    return n


def _drt_ids(tape, count):
    """``count`` consecutive fresh IDs with empty entries (a vector input); the first."""
    ints = tape[0]
    n, k = ints[N], ints[K]
    if S + n + count < ints.shape[0]:
        for q in range(count):
            ints[S + n + 1 + q] = k
    else:
        ints[OVER] = 1
    ints[N] = n + count
    return n


def _drt_op(tape, ids, partials):
    """drtOp: the entry [(ids[q], partials[q])] written at the next ID, which it returns."""
    ints, pairs = tape[0], tape[1]
    n, k, c = ints[N], ints[K], len(ids)
    if ints[D] == 0:
        raise ValueError("drtOp outside a run of dualrevtape")
    if S + n + 1 < ints.shape[0] and 2 * (k + c) <= pairs.shape[0]:
        for q in range(c):
            pairs[2 * (k + q)] = ids[q]  # an ID as a float64: exact below 2^53
            pairs[2 * (k + q) + 1] = partials[q]
        ints[S + n + 1] = k + c
    else:
        ints[OVER] = 1
    ints[N] = n + 1
    ints[K] = k + c
    return n


def _drt_begin(tape):
    """drtInputs starts a run at the top of the tape; its first ID is slot 0, never used (P5)."""
    ints, frames = tape[0], tape[2]
    if ints[D] >= MAX_RUNS:
        raise ValueError("more than 64 runs of dualrevtape open at once")
    frames[ints[D]] = ints[N]
    ints[D] += 1
    _drt_fresh(tape)


def _drt_base(tape):
    """The innermost open run's first ID."""
    if tape[0][D] == 0:
        raise ValueError("drtGradient without drtInputs")
    return tape[2][tape[0][D] - 1]


def _drt_adjoints(tape):
    """A zero adjoint per ID of the innermost run (indexed by ID − base)."""
    adj = _np.empty(tape[0][N] - _drt_base(tape))
    adj[:] = 0.0  # _np.empty and a fill: _np.zeros of a large size takes fresh pages every call
    return adj


def _drt_sweep(tape, adj):
    """Fig. 13's loop on the tape: IDs descending to the run's slot 1, each entry's
    operands get adjoint · ∂ (an adjoint 0 is skipped, as in the Python sweep);
    then the run is popped.  adj holds the seeded outputs; afterwards the inputs'.
    A run that did not fit is not swept: the entry runs the call again (Note [The tape as arrays])."""
    ints, pairs = tape[0], tape[1]
    base = _drt_base(tape)
    if ints[OVER] == 0:
        for i in range(ints[N] - 1, base, -1):
            a = adj[i - base]
            if a == 0.0:
                continue
            for q in range(ints[S + i], ints[S + i + 1]):
                j = int(pairs[2 * q]) - base
                if j < 0:
                    raise ValueError("an ID of another run on dualrevtape's tape")
                adj[j] += a * pairs[2 * q + 1]
    ints[TOP_N] = max(ints[TOP_N], ints[N])
    ints[TOP_K] = max(ints[TOP_K], ints[K])
    ints[N] = base
    ints[K] = ints[S + base] if ints[OVER] == 0 else 0
    ints[D] -= 1


def _drt_fits(tape):
    """After a call: True if every write fitted."""
    return tape[0][OVER] == 0


def _drt_refit(tape):
    """A tape with room for what a call on ``tape`` needed (with a margin)."""
    ints = tape[0]
    ids, pairs = max(ints[TOP_N], ints[N]), max(ints[TOP_K], ints[K])
    return _drt_new(ids + ids // 4 + 16, pairs + pairs // 4 + 16)
