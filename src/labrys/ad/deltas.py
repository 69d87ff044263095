"""The run-time half of the dual-number algorithms of Krawiec et al. (Provably
correct, asymptotically efficient, higher-order reverse-mode AD, POPL 2022):
``Delta`` values and their constructors (Fig. 7 / Fig. 10), the tape that
``deltaLet`` appends to (§7.3), the two evaluators — ``eval₂``, a tree walk
(Fig. 8), and ``eval``, one backward sweep over the tape (§7.3) — D1's ⊕/⊗ on
flat cotangents (§5).  The wrappers' helpers that use them are in
:mod:`labrys.ad.dual_io`.

The generated code (labrys.ad.dualfwd / deltarev1 / deltarev2 / deltarev) only
*calls* these; each is a primitive entry like any other.  Every evaluator is
iterative: a tape as long as the primal run is no problem (the Let nest is as deep as the tape).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..context import count, current
from ..ir.types import DELTA, FLOAT, UNIT, TTensor
from ..types.primitives import args_of, primitive, spread
from ..values import PrimError


class Delta:
    """A symbolic cotangent contribution: Zero | OneHot i | Scale r d | Add d d | Var i."""
    __slots__ = ()


class Zero(Delta):
    __slots__ = ()

    def __repr__(self) -> str:
        return "Zero"


class OneHot(Delta):  # deltarev2's input slot i (1-based)
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"(OneHot {self.i})"


class Var(Delta):  # deltarev's reference to tape binding i (inputs are 1..a)
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"(Var {self.i})"


class Scale(Delta):
    __slots__ = ("r", "d")

    def __init__(self, r: float, d: Delta) -> None:
        self.r, self.d = r, d

    def __repr__(self) -> str:
        return f"(Scale {self.r!r} {self.d!r})"


class Add(Delta):
    __slots__ = ("a", "b")

    def __init__(self, a: Delta, b: Delta) -> None:
        self.a, self.b = a, b

    def __repr__(self) -> str:
        return f"(Add {self.a!r} {self.b!r})"


class Let(Delta):  # Fig. 10's sharing construct: rhs is bound to id i in body
    __slots__ = ("i", "rhs", "body")

    def __init__(self, i: int, rhs: Delta, body: Delta) -> None:
        self.i, self.rhs, self.body = i, rhs, body

    def __repr__(self) -> str:  # iterative: a Let nest is as deep as the tape
        spine, d = [], self
        while type(d) is Let:
            spine.append(f"(Let {d.i} {d.rhs!r} ")
            d = d.body
        return "".join(spine) + repr(d) + ")" * len(spine)


ZERO = Zero()


class Tape:
    """The bindings of one deltarev run, oldest first: binding ``first + k`` is ``rhs[k]``.
    Realises Fig. 10's state (next id, Binds) as the array of §7.3."""

    def __init__(self, inputs: int) -> None:
        self.first = inputs + 1
        self.rhs: list[Delta] = []

    def let(self, d: Delta) -> Var:
        self.rhs.append(d)
        return Var(self.first + len(self.rhs) - 1)

    def run_delta(self, result: Delta) -> Delta:
        """runDelta of Fig. 10: the bindings as a Let nest around result, oldest outermost."""
        for k in range(len(self.rhs) - 1, -1, -1):
            result = Let(self.first + k, self.rhs[k], result)
        return result

    def show(self, result: Delta | None = None) -> str:
        """The Let nest runDelta would build (Fig. 10), oldest binding outermost."""
        lines = [f"Let x{self.first + k} = {d!r}" for k, d in enumerate(self.rhs)]
        return "\n".join(lines + ([f"in {result!r}"] if result is not None else []))


def last_tape() -> Tape | None:
    """The tape of the most recent deltarev run on this thread (its bindings, as in Fig. 12)."""
    return current().last_tape


def delta_let(d: Delta) -> Delta:
    """``deltaLet d``: share d by naming it on the tape of the innermost run (§7.1);
    Note [Run-time context] in labrys.context."""
    tapes = current().tapes
    if not tapes:
        raise PrimError("deltaLet outside a deltarev run (call [deltarev f], not [delta f], from outside)")
    return tapes[-1].let(d)


# --- evaluators -------------------------------------------------------------

def _accumulate(x: float, d: Delta, into: np.ndarray, leaf: type, offset: int, who: str) -> None:
    """Walk the Let-free d as a tree from seed x: each ``leaf`` node i adds the scaled
    seed to into[i - offset].  Counts every node visited on the op-count meter."""
    stack, visits = [(x, d)], 0
    while stack:
        x, d = stack.pop()
        visits += 1
        kind = type(d)
        if kind is leaf:
            into[d.i - offset] += x
        elif kind is Add:
            stack.append((x, d.b))
            stack.append((x, d.a))
        elif kind is Scale:
            stack.append((x * d.r, d.d))
        elif kind is not Zero:
            raise PrimError(f"{who} met a {kind.__name__} Delta")
    count(visits)


def eval_tree(x: float, d: Delta, grad: np.ndarray) -> None:
    """eval₂ (Fig. 8): adds x·(d's coefficient of input i) to grad[i-1].  A Delta
    reachable by k paths is walked k times: that is deltarev2's blow-up."""
    _accumulate(x, d, grad, OneHot, 1, "deltarev2")


def eval_into(x: float, d: Delta, adj: np.ndarray) -> None:
    """eval on a Let-free Delta (a tape rhs or an output): adj[i] += x·coefficient of Var i."""
    _accumulate(x, d, adj, Var, 0, "deltarev")


def eval_map(x: float, d: Delta, mp: dict[int, float]) -> dict[int, float]:
    """eval of Fig. 10 with a DeltaMap (a dict id ↦ adjoint), on any Delta with Lets:
    a Let's body first, then its rhs scaled by the adjoint the body gathered for its
    id, which is then deleted.  An explicit stack, so Let nests of any depth work."""
    work: list[tuple] = [(x, d)]
    while work:
        item = work.pop()
        if len(item) == 3:  # (i, rhs, None): the body of Let i is done
            g = mp.pop(item[0], None)
            if g is not None:
                work.append((g, item[1]))
            continue
        x, d = item
        kind = type(d)
        if kind is Var:
            mp[d.i] = mp.get(d.i, 0.0) + x
        elif kind is Add:
            work.append((x, d.b))
            work.append((x, d.a))
        elif kind is Scale:
            work.append((x * d.r, d.d))
        elif kind is Let:
            work.append((d.i, d.rhs, None))
            work.append((x, d.body))
        elif kind is not Zero:
            raise PrimError(f"eval met a {kind.__name__} Delta")
    return mp


def sweep(tape: Tape, adj: np.ndarray) -> None:
    """Fig. 10's eval of the Let nest, as the loop of §7.3: newest binding first,
    each rhs evaluated once with the adjoint its uses gathered (skipped if none, P6)."""
    for k in range(len(tape.rhs) - 1, -1, -1):
        g = adj[tape.first + k]
        if g != 0.0:
            eval_into(g, tape.rhs[k], adj)


# --- primitives -------------------------------------------------------------
# None of these is differentiated: the ones whose results hold reals have no
# derivative rule, so an AD pass that meets them says so instead of treating
# them as constants.

primitive("Zero", lambda t: DELTA if t == UNIT else None, lambda t: lambda _: ZERO,
          "The Delta of a constant (Krawiec et al. Fig. 7).", nondiff=True)
primitive("Scale", lambda t: DELTA if args_of(t, 2) == (FLOAT, DELTA) else None,
          lambda t: spread(Scale), "(Scale r d): the Delta d scaled by the Float r.", nondiff=True)
primitive("Add", lambda t: DELTA if args_of(t, 2) == (DELTA, DELTA) else None,
          lambda t: spread(Add), "(Add d1 d2): the sum of two Deltas.", nondiff=True)
primitive("deltaLet", lambda t: DELTA if t == DELTA else None, lambda t: delta_let,
          "(deltaLet d): bind d on the current deltarev tape; returns (Var i) (Krawiec et al. §7).",
          cost=lambda r, a: 1, nondiff=True, impure=True)

VEC = TTensor(1, FLOAT)


def _oplus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not len(a):
        return b
    if not len(b):
        return a
    return a + b


def _otimes_cost(result: Any, arg: Any) -> int:
    return len(result)


# On the compiled backend deltarev1's cotangents are the same float64 vectors (empty for zero_S), so ⊕ and ⊗
# cost a operations there too: the quadratic cost of this stage is the point of it.
primitive("zeroS", lambda t: VEC if t == UNIT else None, lambda t: lambda _: np.zeros(0),
          "deltarev1's zero cotangent (the empty vector stands for 0 of every size).",
          numba=lambda xs, ts, r: "_np.zeros(0)")
primitive("oplus", lambda t: VEC if args_of(t, 2) == (VEC, VEC) else None, lambda t: spread(_oplus),
          "(oplus a b): deltarev1's ⊕ on the input's cotangent, a flat vector (Krawiec et al. §5).",
          cost=_otimes_cost, numba=lambda xs, ts, r: "({1}.copy() if {0}.shape[0] == 0 else ({0}.copy() if "
          "{1}.shape[0] == 0 else {0} + {1}))".format(*xs))
primitive("otimes", lambda t: VEC if args_of(t, 2) == (FLOAT, VEC) else None,
          lambda t: spread(lambda r, a: r * a),
          "(otimes r a): deltarev1's ⊗, the cotangent a scaled by r (Krawiec et al. §5).",
          cost=_otimes_cost, numba=lambda xs, ts, r: f"({xs[0]} * {xs[1]})")
