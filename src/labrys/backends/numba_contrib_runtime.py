"""Smeding & Vákár's ``dualrev`` (Dual-numbers reverse AD, efficiently, §9.1–9.2) and
Krawiec et al.'s naive ``deltarev2`` (§6, eval₂) on the tape of
:mod:`.numba_tape_runtime`: the same preallocated arrays, other entries and other sweeps.

    Contrib node c = tape entry c: per operand k the pairs (ID_k, ∂_k), (Contrib_k, 0)
    staging array  = (staged : int64[n] the Contrib of each ID, 0 for [];  adj : float64[n] its accumulator)

Note [Contribs on the tape]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
In ``dualrev`` a Float's dual part is (ID, Contrib) and a Contrib is the list
[(ID, Contrib, ∂)] of an op's operands (§9.2), shared by reference: a DAG
(Fig. 14).  On the compiled backend a Contrib is the index of a node of the
tape (an int64; 0, the outermost run's unused slot, is []).  ``(drcOp u1 ∂1 …)``
draws the op's fresh ID i and writes its Contrib as the entry of that same
index, two pairs per operand — (ID_k, ∂_k) and (Contrib_k, unused) — so the dual
part is (i, i); a literal's and an input's dual part is (i, 0).  Nothing is
resolved in the forward pass: the Contrib is data, the partials are computed
now (P14).  The reverse pass is Fig. 13 after §9.1: a staging array of
(Contrib, accumulator) per ID, the outputs staged at their own IDs with their
own Contribs (P6), then IDs descending: a slot with a Contrib and a non-zero
accumulator stages each triple's Contrib at its ID and adds ∂ · accumulator to
it.  What ``dualrevtape`` (§9.3) then removes is exactly the Contrib field
(an entry at every ID makes it redundant), which is why these entries reuse its
writes, counters, capacities, refit and pool unchanged.

Note [Naive eval₂ on the tape]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``deltarev2``'s Deltas are the nodes ``deltarev``'s ``Zero``/``Scale``/``Add``
already write (Note [Deltas on the tape] in :mod:`.numba_tape`); what makes it
naive is eval₂ (Fig. 8), a walk of each output's Delta *as a tree*.  So its
gradient is such a walk with an explicit stack of (node, factor): a node
reachable by k paths is visited k times, as on the Python run time (the 2ⁿ of
``examples/delta_chain.ks``), and an input node (one without pairs) receives
the factor.  The stack never holds more than one entry per pair of the run.
"""
from __future__ import annotations

import numpy as _np

# the tape's layout and the helpers these call, compiled beside them in one module (numba_runtime.source)
from .numba_tape_runtime import CAPK, CAPN, OVER, SCR, K, N, S, _drt_base, _drt_pop

NAMES = ("_drc_op", "_drc_op1", "_drc_op2", "_drc_staging", "_drc_sweep", "_delta2_walk")


def _drc_op(tape, ids, cbs, partials):
    """drcOp: a fresh ID whose tape entry is its Contrib [(ids[q], cbs[q], partials[q])]."""
    ints, pairs = tape[0], tape[1]
    n, k, c = ints[N], ints[K], 2 * len(ids)
    ok = (n + 1 < ints[CAPN]) & (k + c <= ints[CAPK])  # Note [A tape write without branches]
    at = ok * 2 * k
    for q in range(len(ids)):
        pairs[ok * (at + 4 * q)] = ids[q]
        pairs[ok * (at + 4 * q + 1)] = partials[q]
        pairs[ok * (at + 4 * q + 2)] = cbs[q]
    ints[SCR + ok * (S + n + 1 - SCR)] = k + c
    ints[N] = n + 1
    ints[K] = k + c
    return n


def _drc_op1(tape, j1, c1, d1):
    """drcOp with one operand, straight-line."""
    ints, pairs = tape[0], tape[1]
    n, k = ints[N], ints[K]
    ok = (n + 1 < ints[CAPN]) & (k + 2 <= ints[CAPK])
    at = ok * 2 * k
    pairs[at] = j1
    pairs[at + 1] = d1
    pairs[at + 2] = c1
    ints[SCR + ok * (S + n + 1 - SCR)] = k + 2
    ints[N] = n + 1
    ints[K] = k + 2
    return n


def _drc_op2(tape, j1, c1, d1, j2, c2, d2):
    """drcOp with two operands, straight-line."""
    ints, pairs = tape[0], tape[1]
    n, k = ints[N], ints[K]
    ok = (n + 1 < ints[CAPN]) & (k + 4 <= ints[CAPK])
    at = ok * 2 * k
    pairs[at] = j1
    pairs[at + 1] = d1
    pairs[at + 2] = c1
    pairs[at + 4] = j2
    pairs[at + 5] = d2
    pairs[at + 6] = c2
    ints[SCR + ok * (S + n + 1 - SCR)] = k + 4
    ints[N] = n + 1
    ints[K] = k + 4
    return n


def _drc_staging(tape):
    """The Contrib field of the staging array of the innermost run, every slot [] (indexed by ID − base):
    a view of the tape's own column, zeroed for the run, as its adjoints are (Note [A pool of tapes]);
    for a run that did not fit (it is not swept), a fresh one in which the outputs can still be staged."""
    base, top = _drt_base(tape), tape[0][N]
    if top > tape[4].shape[0]:
        return _np.zeros(top - base, _np.int64)
    staged = tape[4][base:top]
    staged[:] = 0
    return staged


def _drc_sweep(tape, adj, staged):
    """Fig. 13 after §9.1–9.2 (Note [Contribs on the tape]); then the run is popped.
    A run that did not fit is not swept: the entry runs the call again."""
    ints, pairs = tape[0], tape[1]
    base = _drt_base(tape)
    if ints[N] >= ints[CAPN] or ints[K] > ints[CAPK]:
        ints[OVER] = 1
    if ints[OVER] == 0:
        for i in range(ints[N] - 1, base, -1):
            c, a = staged[i - base], adj[i - base]
            if c == 0 or a == 0.0:  # an input, a literal, or nothing reached it
                continue
            for q in range(ints[S + c], ints[S + c + 1], 2):
                j = int(pairs[2 * q]) - base
                if j < 0:
                    raise ValueError("an ID of another run on dualrev's tape")
                staged[j] = int(pairs[2 * q + 2])
                adj[j] += a * pairs[2 * q + 1]
    _drt_pop(tape, base)


def _delta2_walk(tape, seeds, adj):
    """eval₂ of every seeded output Delta as a tree (Note [Naive eval₂ on the tape]): an input
    node i gets the products of the partials along every path into adj[i − base]; then the
    run is popped.  Returns the number of nodes visited."""
    ints, pairs = tape[0], tape[1]
    base = _drt_base(tape)
    if ints[N] >= ints[CAPN] or ints[K] > ints[CAPK]:
        ints[OVER] = 1
    visits = 0
    if ints[OVER] == 0:
        nodes = _np.empty(ints[K] - ints[S + base] + 2, _np.int64)
        factors = _np.empty(nodes.shape[0])
        for i in range(ints[N] - 1, base, -1):
            if seeds[i - base] == 0.0:
                continue
            nodes[0], factors[0], top = i, seeds[i - base], 1
            while top > 0:
                top -= 1
                d, x = nodes[top], factors[top]
                visits += 1
                lo, hi = ints[S + d], ints[S + d + 1]
                if lo == hi:  # an input (or Zero, whose slot is never read)
                    adj[d - base] += x
                for q in range(hi - 1, lo - 1, -1):  # Add's left operand walked first
                    nodes[top] = int(pairs[2 * q])
                    factors[top] = x * pairs[2 * q + 1]
                    top += 1
    _drt_pop(tape, base)
    return visits
