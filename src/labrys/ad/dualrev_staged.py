"""The run time of Smeding & Vákár's stages D¹–D⁵ (Dual-numbers reverse AD,
efficiently, §5–§8): backpropagators are real closures of the generated code
(``Lam`` values), and these primitives are what they call and return.

* c, the type the backpropagators finally produce, is dσ flattened to R^a (one
  slot per real of the input, in Interleave's order), with the empty vector for
  0_c — as Krawiec et al.'s D1 (Note [D1 cotangents] in :mod:`.deltarev1`), so each
  ``[drN g]`` is made once.  Every one-hot and every + of non-zero c values costs a.
* ``Staged`` (D², D³, D⁴): ``(c, Map key (BP, Float))``, the map an ordered key list
  beside a dict, so "take the largest key" is a real max-structure (P4); every
  lookup is counted on the run as a balanced tree's comparisons (the log factor
  of §6.3).  Staged
  values are used linearly, so ``+S`` merges the smaller map into the larger.
* ``State`` (D⁵): the two mutable arrays of Fig. 12, ``cot`` and ``stage``.

The resolve loops are iterative (P11); D¹'s backpropagators call each other, as
deep as the primal run (the deep-stack worker, Note [Deep programs], holds them).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..context import count
from ..ir.types import FLOAT, INTEGER, STAGED, STATE, UNIT, TLam, TTensor, TTuple, Type
from ..types.primitives import primitive
from .dual_io import output_parts
from .dualrev_runtime import Run, active, gradient_impl, register_io, seed_inputs

VEC = TTensor(1, FLOAT)
EMPTY_VEC = np.zeros(0)


def _onehot(a: int, k: int, z: float) -> np.ndarray:
    e = np.zeros(a)
    e[k] = z
    count(a)
    return e


def _add_c(c1: np.ndarray, c2: np.ndarray) -> np.ndarray:
    if not len(c1):
        return c2
    if not len(c2):
        return c1
    count(len(c1))
    return c1 + c2


# --- D¹ (§5, Figs 3–6) -------------------------------------------------------------------
BP1 = TLam(FLOAT, VEC)


def _input_bp1(run: Run, a: int, k: int) -> Callable[[float], np.ndarray]:
    def bp(z: float) -> np.ndarray:  # λz. d(one-hot at k): Interleave¹ with d = id
        run.input_calls += 1
        return _onehot(a, k, z)
    return bp


def _seed1(t: Type, version: str = "dualrev1", bp=_input_bp1) -> Callable:
    def seed(x):
        from .dual_io import count_reals
        a = count_reals(x, t)
        return seed_inputs(version, 0, t, lambda run, r, k: (r, bp(run, a, k)))(x)
    return seed


def _resolve1(run: Run, y: Any, dt: Any, dt_type: Type) -> np.ndarray:
    """Deinterleave¹: λz. Σ_j d_j(z_j), each output's backpropagator called once."""
    grad = np.zeros(run.inputs)
    for bp, z in output_parts(y, dt, dt_type):
        grad = _add_c(grad, bp(z))
    return grad


primitive("dr1Zero", lambda t: BP1 if t == UNIT else None, lambda t: lambda _: lambda z: EMPTY_VEC,
          "(dr1Zero): dualrev1's backpropagator of a literal, λz. 0 (Smeding & Vákár Fig. 5).",
          cost=lambda r, a: 1, nondiff=True)
register_io("dr1Inputs", "dr1Gradient", BP1, _seed1, gradient_impl(_resolve1), "dualrev1")


# --- Staged (D², D³, D⁴: §6, Fig. 8, Fig. 10) ----------------------------------------------

class Staged:
    """(c, Map key (BP, Float)); ``keys`` holds the map's keys in ascending order, searched
    by bisection, so each lookup or insertion makes the ~log₂(size) key comparisons of
    a balanced search tree (Haskell's Data.Map, which the paper uses), counted on the run."""
    __slots__ = ("c", "m", "keys", "run")

    def __init__(self, run: Run, c: np.ndarray = EMPTY_VEC) -> None:
        self.run, self.c, self.m, self.keys = run, c, {}, []

    def __repr__(self) -> str:
        return f"Staged(c={self.c.tolist()}, keys={self.keys})"

    def stage(self, key: int, bp: Any, x: float) -> "Staged":
        """Insert-or-add ``key ↦ (bp, x + old)`` (Fig. 10's StagedCall)."""
        keys = self.keys
        lo, hi = 0, len(keys)
        while lo < hi:  # the search path of the tree
            mid = (lo + hi) // 2
            if keys[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        self.run.comparisons += max(1, len(keys).bit_length())
        count(1)
        if lo < len(keys) and keys[lo] == key:
            self.m[key][1] += x
        else:
            keys.insert(lo, key)
            self.m[key] = [bp, x]
        return self

    def pop_largest(self) -> tuple[int, Any, float]:
        top = self.keys.pop()
        bp, x = self.m.pop(top)
        count(1)
        return top, bp, x


def plus_staged(s1: Staged, s2: Staged) -> Staged:
    """``+S``: add the c parts, union the maps adding equal keys' arguments."""
    big, small = (s1, s2) if len(s1.m) >= len(s2.m) else (s2, s1)
    big.c = _add_c(s1.c, s2.c)
    for key, (bp, x) in small.m.items():
        big.stage(key, bp, x)
    return big


def resolve_staged(s: Staged, key_of: Callable[[Any, int], int] = lambda bp, k: k) -> np.ndarray:
    """ResolveStaged (§6.2): while the map is non-empty take the largest key, remove
    (f, a), set s := f a +S s; then return c.  Sound because a backpropagator stages
    calls only of backpropagators made before it (footnote 19)."""
    run = s.run
    while s.m:
        key, bp, x = s.pop_largest()
        run.calls[key] += 1
        s = plus_staged(bp(x), s)
    return s.c


class TaggedBP:
    """D²'s backpropagator: a closure stamped at creation with a tag from the run's
    hidden counter (creation order is call-by-value order), the key of the map."""
    __slots__ = ("tag", "f")

    def __init__(self, tag: int, f: Callable) -> None:
        self.tag, self.f = tag, f

    def __call__(self, z: float) -> Any:
        return self.f(z)

    def __repr__(self) -> str:
        return f"<backpropagator {self.tag}>"


BP2 = TLam(FLOAT, STAGED)
IMAGE3 = TTuple((INTEGER, BP2))


def _staged_zero(t: Type) -> Callable:
    return lambda _: Staged(active("drZeroS"))


def _input_bp2(run: Run, a: int, k: int) -> Callable[[float], Staged]:
    def bp(z: float) -> Staged:  # λz. InitStaged(one-hot at k)
        run.input_calls += 1
        return Staged(run, _onehot(a, k, z))
    return bp


def _resolve_d2(run: Run, y: Any, dt: Any, dt_type: Type) -> np.ndarray:
    """Deinterleave² then ResolveStaged: s = Σ_j StagedCall d_j z_j (0S, +S)."""
    s = Staged(run, np.zeros(run.inputs))
    for part, z in output_parts(y, dt, dt_type):
        bp = part if isinstance(part, TaggedBP) else part[1]
        s = plus_staged(bp(z), s)
    return resolve_staged(s)


def _tag(run: Run, f: Callable) -> TaggedBP:
    return TaggedBP(run.fresh(), f)


primitive("drZeroS", lambda t: STAGED if t == UNIT else None, _staged_zero,
          "(drZeroS): 0S, the empty Staged value (Smeding & Vákár Fig. 8).", cost=lambda r, a: 1, nondiff=True,
          impure=True)
primitive("drPlusS", lambda t: STAGED if t == TTuple((STAGED, STAGED)) else None,
          lambda t: lambda a: plus_staged(a[0], a[1]),
          "(drPlusS s1 s2): +S, c parts added and maps united (Smeding & Vákár Fig. 8).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
primitive("dr2Tag", lambda t: BP2 if t == BP2 else None, lambda t: lambda f: _tag(active("dr2Tag"), f),
          "(dr2Tag bp): dualrev2's backpropagator stamped with a creation tag (the resolver of labrys's "
          "dualrev2; Smeding & Vákár §6, footnote 18).", cost=lambda r, a: 1, nondiff=True, impure=True)
primitive("dr2Zero", lambda t: BP2 if t == UNIT else None,
          lambda t: lambda _: _tag(active("dr2Zero"), lambda z: Staged(active("drZeroS"))),
          "(dr2Zero): dualrev2's tagged backpropagator of a literal, λz. 0S.", cost=lambda r, a: 1,
          nondiff=True, impure=True)
primitive("dr2Call", lambda t: STAGED if t == TTuple((BP2, FLOAT)) else None,
          lambda t: lambda a: Staged(active("dr2Call")).stage(a[0].tag, a[0], a[1]),
          "(dr2Call bp x): StagedCall, the call bp x recorded under bp's tag (Smeding & Vákár Fig. 8).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
register_io("dr2Inputs", "dr2Gradient", BP2,
            lambda t: _seed1(t, "dualrev2", lambda run, a, k: TaggedBP(k, _input_bp2(run, a, k))),
            gradient_impl(_resolve_d2), "dualrev2")

primitive("dr3Zero", lambda t: IMAGE3 if t == UNIT else None,
          lambda t: lambda _: (active("dr3Zero").fresh(), lambda z: Staged(active("drZeroS"))),
          "(dr3Zero): dualrev3's literal: a fresh ID and λz. 0S (Smeding & Vákár Fig. 9).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
primitive("dr3Call", lambda t: STAGED if t == TTuple((IMAGE3, FLOAT)) else None,
          lambda t: lambda a: Staged(active("dr3Call")).stage(a[0][0], a[0][1], a[1]),
          "(dr3Call (id, bp) x): StagedCall keyed by the ID: (0, {id ↦ (bp, x)}) (Smeding & Vákár Fig. 8).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
register_io("dr3Inputs", "dr3Gradient", IMAGE3,
            lambda t: _seed1(t, "dualrev3", lambda run, a, k: (k, _input_bp2(run, a, k))),
            gradient_impl(_resolve_d2), "dualrev3")


# --- D⁴: Cayley-transformed Staged (§7, Figs 10–11) ----------------------------------------
UPD4 = TLam(STAGED, STAGED)
BP4 = TLam(FLOAT, UPD4)
IMAGE4 = TTuple((INTEGER, BP4))


def _identity_updater(z: float) -> Callable[[Any], Any]:
    return lambda s: s


def _input_bp4(run: Run, a: int, k: int) -> Callable:
    def bp(z: float) -> Callable[[Staged], Staged]:
        def setter(s: Staged) -> Staged:  # StagedMapCot (λw. w with w[k] += z): copies c (§7.2)
            c = s.c.copy()
            c[k] += z
            count(len(c))
            s.c = c
            return s
        run.input_calls += 1
        return setter
    return bp


def _resolve_d4(run: Run, y: Any, dt: Any, dt_type: Type) -> np.ndarray:
    """StagedRunZero (the one full zero), the outputs' updaters applied in turn (an
    explicit list, P11), then ResolveStaged with ``s := f a s``."""
    s = Staged(run, np.zeros(run.inputs))
    count(run.inputs)
    for (_, bp), z in output_parts(y, dt, dt_type):
        s = bp(z)(s)
    while s.m:
        key, bp, x = s.pop_largest()
        run.calls[key] += 1
        s = bp(x)(s)
    return s.c


primitive("dr4Zero", lambda t: IMAGE4 if t == UNIT else None,
          lambda t: lambda _: (active("dr4Zero").fresh(), _identity_updater),
          "(dr4Zero): dualrev4's literal: a fresh ID and λz. id (Smeding & Vákár Fig. 10).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
primitive("dr4Call", lambda t: STAGED if t == TTuple((IMAGE4, FLOAT, STAGED)) else None,
          lambda t: lambda a: a[2].stage(a[0][0], a[0][1], a[1]),
          "(dr4Call (id, bp) x s): Fig. 10's StagedCall as an updater: id ↦ (bp, x + old) in s.",
          cost=lambda r, a: 1, nondiff=True, impure=True)
register_io("dr4Inputs", "dr4Gradient", IMAGE4,
            lambda t: _seed1(t, "dualrev4", lambda run, a, k: (k, _input_bp4(run, a, k))),
            gradient_impl(_resolve_d4), "dualrev4")


# --- D⁵: two mutable arrays (§8, Figs 12–13) -----------------------------------------------

class State:
    """Fig. 12's State: ``cot`` (one slot per input ID) and ``stage`` (one (BP, Float)
    slot per ID), mutated in place; a fresh one per derivative call (P7)."""
    __slots__ = ("cot", "fn", "acc")

    def __init__(self, n_in: int, n_all: int) -> None:
        self.cot = [0.0] * n_in
        self.fn: list = [None] * n_all   # None stands for the default entry (λz. id, 0)
        self.acc = [0.0] * n_all
        count(n_in + n_all)


UPD5 = TLam(STATE, STATE)
BP5 = TLam(FLOAT, UPD5)
IMAGE5 = TTuple((INTEGER, BP5))


def _stage5(a: tuple) -> State:
    (j, bp), x, s = a
    s.fn[j] = bp
    s.acc[j] += x
    return s


def _input_bp5(i: int) -> Callable:
    def bp(z: float) -> Callable[[State], State]:
        def input_cot(s: State) -> State:  # InputCot i: cot[i] += z
            s.cot[i] += z
            return s
        return input_cot
    return bp


def _resolve_d5(run: Run, y: Any, dt: Any, dt_type: Type) -> np.ndarray:
    """Wrap⁵: StateAlloc i i', the outputs' updaters, ResolveState: IDs i'−1 down to 1."""
    n_in, n_all = run.first + run.inputs, run.next_id
    s = State(n_in, n_all)
    for (_, bp), z in output_parts(y, dt, dt_type):
        s = bp(z)(s)
    for i in range(n_all - 1, 0, -1):
        bp = s.fn[i]
        if bp is not None:
            run.calls[i] += 1
            s = bp(s.acc[i])(s)
    count(n_all)
    return np.array(s.cot[1:])


primitive("dr5Zero", lambda t: IMAGE5 if t == UNIT else None,
          lambda t: lambda _: (active("dr5Zero").fresh(), _identity_updater),
          "(dr5Zero): dualrev5's literal: a fresh ID and λz. id (Smeding & Vákár Fig. 12).",
          cost=lambda r, a: 1, nondiff=True, impure=True)
primitive("dr5Call", lambda t: STATE if t == TTuple((IMAGE5, FLOAT, STATE)) else None, lambda t: _stage5,
          "(dr5Call (id, bp) x s): Fig. 12's StagedCall: stage[id] := (bp, stage[id].acc + x), in place.",
          cost=lambda r, a: 1, nondiff=True, impure=True)
register_io("dr5Inputs", "dr5Gradient", IMAGE5,
            lambda t: seed_inputs("dualrev5", 1, t, lambda run, r, k: (r, (run.first + k, _input_bp5(run.first + k)))),
            gradient_impl(_resolve_d5), "dualrev5")
