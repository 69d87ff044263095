"""The tape of Smeding & Vákár's ``dualrevtape`` (Dual-numbers reverse AD,
efficiently, §9.3) as machine data for the ``compiled`` backend: a struct of
preallocated arrays and the compiled reverse sweep over it.

    Tape = ( ints   : int64[16 + ≥n+1] (next ID n, pairs used k, open runs d, overflow, high-water marks,
                                        capacities; then start[i]: ID i's entry is pairs start[i] … start[i+1]−1)
             pairs  : float64[≥2k]     (each pair's operand ID and partial ∂, side by side)
             frames : int64[64]        (each open run's first ID, its slot 0)
             adj    : float64[≥n+1]    (the sweep's adjoints, indexed by ID)
             staged : int64[≥n+1]      (dualrev's staging array of Contribs, indexed by ID) )

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
ID − base, as in the Python sweep (P7): a view of the tape's own ``adj``, zeroed
for the run when its gradient is asked for (runs nest, so an inner run's
adjoints lie above every ID of the runs around it and are done before theirs).

Note [A tape write without branches]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``_drt_op2`` is what a loop of dualrevtape spends its time in, so it is written
as straight-line code: no test of the run being open, no branch on the tape
being full.  A write that does not fit goes to a scratch slot (index 0 of
``pairs``, ``ints[SCR]``) and the counters count on: the run's sweep sees
that they passed the capacities and marks the overflow.  Outside a run the
capacities ``ints[CAPN]``, ``ints[CAPK]`` are 0, so nothing is written, and
the IDs left on the tape after the call are the error (``_drt_fits``).  Without branches, Numba's
reference-count pruning removes the increments of the tape's arrays that a
branch kept in the loop, and LLVM keeps the loop tight (dot's forward pass
went from 18 to 13 ns per element, docs/dualrev.md).  A binary op is the
common case (``_drt_op2``), a unary one has ``_drt_op1``; ``_drt_op`` takes any
number of pairs.

Note [A pool of tapes]
~~~~~~~~~~~~~~~~~~~~~~
A fresh array costs its page faults when it is first written (on this
machine about 0.2 ns per byte, six times the cost of writing memory that is
already mapped), and a tape is written once per call: on dot at n = 10⁶
fresh tapes were more than half the gradient's time.  So a tape of at least
POOLED IDs is taken from a small pool of the process and given back after a
call that succeeded (``_drt_take``, ``_drt_give``; an object-mode call of a
few microseconds, nothing beside a call of at least 2¹⁵ IDs), with its
adjoint array and dualrev's staging array of Contribs (Note [Contribs on the
tape] in numba_contrib_runtime.py), per-ID columns of the same kind: on GMM
d10 K25 a fresh staging array per call cost dualrev 146 against 115 ms
(``np.empty``: a tape that never stages maps no page of it).  A tape is only
scratch space, reset when taken; a call that fails drops its tape; each call
takes its own, so threads and a compiled call made from inside another never
share one.  The pool keeps at most POOL_SIZE tapes of at most POOL_BYTES
bytes each.

These are plain functions: :mod:`.numba_runtime` compiles them with its own helpers,
as an entry of labrys's cache, and gives them to every generated module as
globals (Note [Compile cache]).
"""
from __future__ import annotations

import threading

import numpy as _np

# ints[N] next ID, ints[K] pairs used, ints[D] open runs, ints[OVER] 1 once a run did not fit,
# ints[TOP_N], ints[TOP_K] the most IDs and pairs a popped run had,
# ints[CAPN], ints[CAPK] the room for IDs and pairs while a run is open (0 otherwise), ints[SCR] a
# scratch slot (Note [A tape write without branches]); ints[S + i] = start[i];
# MAX_RUNS runs open at once (a derivative called inside a derivative's run)
N, K, D, OVER, TOP_N, TOP_K, CAPN, CAPK, SCR, S, MAX_RUNS = 0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 64
CONSTANTS = (f"N, K, D, OVER, TOP_N, TOP_K, CAPN, CAPK, SCR, S, MAX_RUNS = "
             f"{N}, {K}, {D}, {OVER}, {TOP_N}, {TOP_K}, {CAPN}, {CAPK}, {SCR}, {S}, {MAX_RUNS}\n")
# Note [A pool of tapes]: the smallest tape taken from the pool, and what the pool keeps
POOLED, POOL_SIZE, POOL_BYTES = 1 << 15, 2, 1 << 30
# the module the compiled helpers import the pool from (cache.py runs their source as its own module)
IMPORTS = (f"from numba import objmode as _objmode\n"
           f"from {__name__} import _pool_take, _pool_give\n"
           f"POOLED = {POOLED}\n")
NAMES = ("_drt_new", "_drt_take", "_drt_give", "_drt_fresh", "_drt_ids", "_drt_op", "_drt_op1", "_drt_op2",
         "_drt_begin", "_drt_base", "_drt_adjoints", "_drt_sweep", "_drt_pop", "_drt_fits", "_drt_refit")

_POOL: list[tuple] = []
_LOCK = threading.Lock()
_objmode = None  # Numba's objmode in the helpers' module (IMPORTS); numba is not imported here


def _pool_take(ids: int, pairs: int) -> tuple:
    """The smallest pooled tape with room for ``ids`` IDs and ``pairs`` pairs, or a new one."""
    with _LOCK:  # threads take and give concurrently
        fits = [k for k, t in enumerate(_POOL) if t[0].shape[0] >= S + ids + 2 and t[1].shape[0] >= 2 * pairs]
        if fits:
            return _POOL.pop(min(fits, key=lambda k: _POOL[k][1].shape[0]))  # by position: arrays have no ==
    return _drt_new(ids, pairs)


def _pool_give(tape: tuple) -> None:
    if sum(a.nbytes for a in tape) <= POOL_BYTES:
        with _LOCK:
            _POOL.append(tape)
            _POOL.sort(key=lambda t: -t[1].shape[0])
            del _POOL[POOL_SIZE:]


def _drt_new(ids, pairs):
    """An empty tape with room for ``ids`` IDs and ``pairs`` pairs, no run open."""
    ints = _np.empty(S + ids + 2, _np.int64)
    ints[:S + 1] = 0
    return (ints, _np.empty(2 * pairs), _np.zeros(MAX_RUNS, _np.int64), _np.empty(ids + 2),
            _np.empty(ids + 2, _np.int64))


def _drt_take(ids, pairs):
    """A tape for a call: a fresh one, or for a large call one from the pool (Note [A pool of tapes])."""
    if ids < POOLED:
        return _drt_new(ids, pairs)
    with _objmode(tape="Tuple((int64[::1], float64[::1], int64[::1], float64[::1], int64[::1]))"):  # a literal
        tape = _pool_take(ids, pairs)
    tape[0][:S + 1] = 0
    tape[2][:] = 0
    return tape


def _drt_give(tape):
    """After a call that succeeded: a large tape goes back to the pool."""
    if tape[0].shape[0] >= POOLED:
        with _objmode():
            _pool_give(tape)


def _drt_fresh(tape):
    """A fresh ID with an empty entry: an input's or a literal's (drtZero)."""
    ints = tape[0]
    n = ints[N]
    ok = n + 1 < ints[CAPN]  # Note [A tape write without branches]
    ints[SCR + ok * (S + n + 1 - SCR)] = ints[K]
    ints[N] = n + 1
    return n


def _drt_ids(tape, count):
    """``count`` consecutive fresh IDs with empty entries (a vector input); the first."""
    ints = tape[0]
    n, k = ints[N], ints[K]
    if n + count < ints[CAPN]:  # else the sweep finds the overflow
        for q in range(count):
            ints[S + n + 1 + q] = k
    ints[N] = n + count
    return n


def _drt_op(tape, ids, partials):
    """drtOp: the entry [(ids[q], partials[q])] written at the next ID, which it returns."""
    ints, pairs = tape[0], tape[1]
    n, k, c = ints[N], ints[K], len(ids)
    ok = (n + 1 < ints[CAPN]) & (k + c <= ints[CAPK])
    at = ok * 2 * k
    for q in range(c):
        pairs[ok * (at + 2 * q)] = ids[q]  # an ID as a float64: exact below 2^53
        pairs[ok * (at + 2 * q + 1)] = partials[q]
    ints[SCR + ok * (S + n + 1 - SCR)] = k + c
    ints[N] = n + 1
    ints[K] = k + c
    return n


def _drt_op1(tape, j1, d1):
    """drtOp with one operand (Note [A tape write without branches])."""
    ints, pairs = tape[0], tape[1]
    n, k = ints[N], ints[K]
    ok = (n + 1 < ints[CAPN]) & (k + 1 <= ints[CAPK])
    at = ok * 2 * k
    pairs[at] = j1
    pairs[at + 1] = d1
    ints[SCR + ok * (S + n + 1 - SCR)] = k + 1
    ints[N] = n + 1
    ints[K] = k + 1
    return n


def _drt_op2(tape, j1, d1, j2, d2):
    """drtOp with two operands (Note [A tape write without branches])."""
    ints, pairs = tape[0], tape[1]
    n, k = ints[N], ints[K]
    ok = (n + 1 < ints[CAPN]) & (k + 2 <= ints[CAPK])
    at = ok * 2 * k
    pairs[at] = j1
    pairs[at + 1] = d1
    pairs[at + 2] = j2
    pairs[at + 3] = d2
    ints[SCR + ok * (S + n + 1 - SCR)] = k + 2
    ints[N] = n + 1
    ints[K] = k + 2
    return n


def _drt_begin(tape):
    """drtInputs starts a run at the top of the tape; its first ID is slot 0, never used (P5)."""
    ints, frames = tape[0], tape[2]
    if ints[D] >= MAX_RUNS:
        raise ValueError("more than 64 runs of dualrevtape open at once")
    frames[ints[D]] = ints[N]
    if ints[D] == 0:
        ints[CAPN] = min(ints.shape[0] - S, tape[3].shape[0])
        ints[CAPK] = tape[1].shape[0] // 2
    ints[D] += 1
    _drt_fresh(tape)


def _drt_base(tape):
    """The innermost open run's first ID."""
    if tape[0][D] == 0:
        raise ValueError("drtGradient without drtInputs")
    return tape[2][tape[0][D] - 1]


def _drt_adjoints(tape):
    """A zero adjoint per ID of the innermost run (indexed by ID − base): the tape's own array,
    or, for a run that did not fit (its IDs past the array; it is not swept), a fresh one in
    which the outputs can still be seeded."""
    base, top = _drt_base(tape), tape[0][N]
    if top > tape[3].shape[0]:
        return _np.zeros(top - base)
    adj = tape[3][base:top]
    adj[:] = 0.0
    return adj


def _drt_sweep(tape, adj):
    """Fig. 13's loop on the tape: IDs descending to the run's slot 1, each entry's
    operands get adjoint · ∂ (an adjoint 0 is skipped, as in the Python sweep);
    then the run is popped.  adj holds the seeded outputs; afterwards the inputs'.
    A run that did not fit is not swept: the entry runs the call again (Note [The tape as arrays])."""
    ints, pairs = tape[0], tape[1]
    base = _drt_base(tape)
    if ints[N] >= ints[CAPN] or ints[K] > ints[CAPK]:  # a write of this run did not fit
        ints[OVER] = 1
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
    _drt_pop(tape, base)


def _drt_pop(tape, base):
    """The end of a run's sweep: note its high-water marks and give its IDs and pairs back."""
    ints = tape[0]
    ints[TOP_N] = max(ints[TOP_N], ints[N])
    ints[TOP_K] = max(ints[TOP_K], ints[K])
    ints[N] = base
    ints[K] = ints[S + base] if ints[OVER] == 0 else 0
    ints[D] -= 1
    if ints[D] == 0:
        ints[CAPN] = 0
        ints[CAPK] = 0


def _drt_fits(tape):
    """After a call: True if every write fitted.  Every run pops its IDs, so an ID left
    on the tape was drawn outside a run: an error."""
    if tape[0][N] != 0 or tape[0][D] != 0:
        raise ValueError("drtOp outside a run of dualrevtape")
    return tape[0][OVER] == 0


def _drt_refit(tape):
    """A tape with room for what a call on ``tape`` needed (with a margin)."""
    ints = tape[0]
    ids, pairs = max(ints[TOP_N], ints[N]), max(ints[TOP_K], ints[K])
    return _drt_take(ids + ids // 4 + 16, pairs + pairs // 4 + 16)
