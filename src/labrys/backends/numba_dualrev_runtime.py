"""The run time of Smeding & Vákár's stages D¹–D⁵ (Dual-numbers reverse AD,
efficiently, §5–§8) as machine data for the ``compiled`` backend: the cotangent
vector c, the ``Staged`` map with its max-structure, the ``State`` arrays, and the
ID counter of a run (on the tape of :mod:`.numba_tape_runtime`).

    c      = float64[::1]  (one slot per input real; the empty array is 0_c, as in the Python run time)
    Staged = (c, Dict[int64 → ((tag, slot), float64)], List[int64])   (the map, and a binary max-heap
                                                                        of its keys)
    State  = (cot : float64[::1], fn : int64[:, 2], acc : float64[::1], base : int64)

Note [Staged maps in compiled code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The Python run time keeps a Staged map as a dict beside a sorted key list
(``labrys.ad.dualrev_staged``): an insertion is a bisection, "take the largest
key" a pop.  Here the map is a Numba typed dict from the key (D²'s creation
tag, D³'s and D⁴'s ID) to the staged call (the backpropagator, a closure
``(tag, slot)``, and the accumulated argument), and the keys not yet taken are a
binary max-heap in a typed list: inserting a new key costs O(log T) sift steps
and taking the largest key O(log T), the paper's tree map (§6.3) with the same
order of cost.  Staged values are used linearly (the translation never copies
one), so ``+S`` merges the smaller map into the larger in place, as the Python
run time does.  A backpropagator is a closure value, the same ``(tag, slot)``
pair of int64 whatever its type (Note [Defunctionalisation] in
numba_closures.py), so one dict type serves every stage.

Note [The ID counter of the staged versions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
D²'s tags and the IDs of D³–D⁵ are drawn from the tape's ID counter: the Inputs
primitive opens a run (``_drt_begin``), a fresh ID is ``_drt_fresh`` and the
Gradient primitive closes the run (``_drs_end``) without a sweep, since these
stages keep no entries on the tape.  IDs are absolute positions (the run's slot
0 is its base), so they order as the Python run time's do; D⁵'s State indexes
its arrays by ID − base.

These are plain functions: :mod:`.numba_runtime` compiles them with its other
helpers (Note [Compile cache]).
"""
from __future__ import annotations

import numpy as _np

from .numba_tape_runtime import CAPK, CAPN, D, N

# the helpers' module preamble: the typed containers and their types
PREAMBLE = ("from numba import types as _dnt\n"
            "from numba.typed import Dict as _DDict, List as _DList\n"
            "_DRS_ENTRY = _dnt.Tuple((_dnt.UniTuple(_dnt.int64, 2), _dnt.float64))\n")
NAMES = ("_dr_add_c", "_dr_onehot", "_dr_push", "_drs_end", "_drs_init", "_drs_empty", "_drs_stage",
         "_drs_plus", "_drs_pop", "_drs_setc", "_dr5_state", "_dr5_stage", "_dr5_cot")
_DDict = _DList = _dnt = _DRS_ENTRY = None  # set by PREAMBLE in the compiled helpers' module


def _dr_add_c(c1, c2):
    """c1 + c2 with the empty array as 0_c."""
    if c1.shape[0] == 0:
        return c2
    if c2.shape[0] == 0:
        return c1
    return c1 + c2


def _dr_onehot(a, k, z):
    """The c of size a with z at k: an input's backpropagator (Interleave¹)."""
    e = _np.zeros(a)
    e[k] = z
    return e


def _dr_push(lst, item):
    """Append to a list of the closures' heap; the new slot."""
    lst.append(item)
    return len(lst) - 1


def _drs_end(tape):
    """Close the innermost run without a sweep (Note [The ID counter of the staged versions])."""
    ints = tape[0]
    d = ints[D]
    if d == 0:
        raise ValueError("the gradient of a staged dualrev version without its inputs")
    ints[N] = tape[2][d - 1]
    ints[D] = d - 1
    if d == 1:
        ints[CAPN] = 0
        ints[CAPK] = 0


def _drs_init(c):
    """InitStaged c: c with an empty map."""
    return (c, _DDict.empty(key_type=_dnt.int64, value_type=_DRS_ENTRY), _DList.empty_list(_dnt.int64))


def _drs_empty():
    """0S."""
    return _drs_init(_np.zeros(0))


def _drs_stage(s, key, bp, x):
    """StagedCall into s: key ↦ (bp, x + old), a new key pushed on the max-heap."""
    m, h = s[1], s[2]
    if key in m:
        old = m[key]
        m[key] = (old[0], old[1] + x)
        return s
    m[key] = (bp, x)
    h.append(key)
    i = len(h) - 1
    while i > 0:  # sift up
        p = (i - 1) // 2
        if h[p] >= h[i]:
            break
        h[p], h[i] = h[i], h[p]
        i = p
    return s


def _drs_plus(s1, s2):
    """+S: the c parts added, the smaller map merged into the larger."""
    big, small = (s1, s2) if len(s1[1]) >= len(s2[1]) else (s2, s1)
    for key, entry in small[1].items():
        _drs_stage(big, key, entry[0], entry[1])
    return (_dr_add_c(s1[0], s2[0]), big[1], big[2])


def _drs_pop(s):
    """Remove the largest key's staged call: (key, backpropagator, argument)."""
    m, h = s[1], s[2]
    top = h[0]
    last = h.pop()
    if len(h) > 0:
        h[0] = last
        i, n = 0, len(h)
        while True:  # sift down
            left, right, b = 2 * i + 1, 2 * i + 2, i
            if left < n and h[left] > h[b]:
                b = left
            if right < n and h[right] > h[b]:
                b = right
            if b == i:
                break
            h[b], h[i] = h[i], h[b]
            i = b
    entry = m[top]
    del m[top]
    return top, entry[0], entry[1]


def _drs_setc(s, k, z):
    """D⁴'s input setter: c with c[k] += z, c copied (§7.2's remaining cost)."""
    c = s[0].copy()
    c[k] += z
    return (c, s[1], s[2])


def _dr5_state(n_in, n_all, base):
    """StateAlloc: cot (one slot per input ID), stage's backpropagators (tag −1: the default
    entry λz. id) and accumulators, one per ID of the run."""
    fn = _np.empty((n_all, 2), _np.int64)
    fn[:, 0] = -1
    fn[:, 1] = 0
    return (_np.zeros(n_in), fn, _np.zeros(n_all), base)


def _dr5_stage(s, j, bp, x):
    """Fig. 12's StagedCall: stage[j] := (bp, stage[j].acc + x), in place."""
    i = j - s[3]
    s[1][i, 0] = bp[0]
    s[1][i, 1] = bp[1]
    s[2][i] += x
    return s


def _dr5_cot(s, j, z):
    """InputCot: cot[j] += z, in place."""
    s[0][j - s[3]] += z
    return s
