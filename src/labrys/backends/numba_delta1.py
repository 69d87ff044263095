"""Krawiec et al.'s naive ``deltarev1`` (§5, Figs 5–6) on the ``compiled`` backend: its
wrapper's two primitives (``zeroS``, ``oplus`` and ``otimes`` are lowered where they
are registered, as float64 vectors).

    Γ ⊢ (delta1Inputs x) : D1[S]        ↦  a = |x's reals|; the k-th real paired with one-hot k of length a
    Γ ⊢ (delta1Gradient x y dt) : dS    ↦  g = Σ_j dt_j ⊗ ds_j over y's reals (an empty ds_j is zero_S); g shaped like x

Note [deltarev1 compiled]
~~~~~~~~~~~~~~~~~~~~~~~~~
D1[Float] = (Tuple Float (Vec Float)) needs no run time beyond vectors, so the
compiled code keeps the stage's cost: every ⊕ and ⊗ on a non-zero cotangent is a
loop over a = |S| reals (Note [D1 cotangents] in ``labrys.ad.deltarev1``), the
gradient Θ(a · ops(f)).  The inputs are walked by type as dualrevtape's
Interleave walks them (Float, Integer, Bool, tuples, ``Vec Float`` whose dual is a
struct of arrays with an a-column matrix of one-hots); the gradient is read back
with dualrevtape's Deinterleave, from index 0.  Another input or output type
raises :class:`Unsupported`: the derivative runs on ``python`` with a note.
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.types import BOOL, FLOAT, INTEGER, STRING, TTensor, TTuple, Type
from ..types.tangent import is_constant_tangent
from .numba_types import Unsupported

DELTA1_IO = ("delta1Inputs", "delta1Gradient")


def _reals(x: str, t: Type, span) -> list[str]:
    """Source of the number of reals of x : t, as terms of a sum."""
    if t == FLOAT:
        return ["1"]
    if t in (INTEGER, BOOL, STRING) or _no_reals(t):
        return []
    if isinstance(t, TTuple):
        return [n for k, u in enumerate(t.elems) for n in _reals(f"{x}[{k}]", u, span)]
    if isinstance(t, TTensor) and t.rank == 1 and t.elem == FLOAT:
        return [f"{x}.shape[0]"]
    raise Unsupported(f"deltarev1's input of type {t}", span)


def _no_reals(t: Type) -> bool:
    """``Vec Integer``, ``Vec Bool`` (ADBench hand's bone parents): no reals, its dual is itself."""
    return isinstance(t, TTensor) and t.elem in (INTEGER, BOOL)


class Delta1Mixin:
    """deltarev1's wrapper primitives in the Numba emitter (Note [deltarev1 compiled])."""

    def delta1_call(self, t: str, name: str, args: tuple[ir.Expr, ...], e: ir.Call) -> bool:
        if name not in DELTA1_IO:
            return False
        x, xt = self.atom(args[0]), args[0].type
        a, k = self.mod.fresh("a"), self.mod.fresh("k")
        self.emit(f"{a} = {' + '.join(['0'] + _reals(x, xt, e.span))}")
        if name == "delta1Inputs":
            self.emit(f"{k} = 0")
            self.emit(f"{t} = {self.onehots(x, xt, a, k, e)}")
            return True
        y, dt = self.atom(args[1]), self.atom(args[2])
        g = self.mod.fresh("g")
        self.emit(f"{g} = _np.zeros({a})")
        self.gather(g, y, args[1].type, dt, args[2].type, e)
        self.emit(f"{k} = 0")
        self.emit(f"{t} = {self.deinterleave(g, k, x, xt, e)}")  # dualrevtape's, numba_tape.py
        return True

    def onehots(self, x: str, t: Type, a: str, k: str, e: ir.Call) -> str:
        """x's reals, the k-th paired with one-hot k of length a (Fig. 6's seeds)."""
        if t in (INTEGER, BOOL, STRING) or (isinstance(t, TTuple) and not t.elems) or _no_reals(t):
            return x
        if t == FLOAT:
            s = self.mod.fresh("s")
            self.emit(f"{s} = _np.zeros({a})")
            self.emit(f"{s}[{k}] = 1.0")
            self.emit(f"{k} += 1")
            return f"({x}, {s})"
        if isinstance(t, TTuple):
            parts = [self.onehots(f"{x}[{q}]", u, a, k, e) for q, u in enumerate(t.elems)]
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if isinstance(t, TTensor) and t.rank == 1 and t.elem == FLOAT:
            s = self.mod.fresh("s")
            self.emit(f"{s} = _np.zeros(({x}.shape[0], {a}))")
            i = self.mod.fresh("i")
            self.emit(f"for {i} in range({x}.shape[0]):")
            self.indented().emit(f"{s}[{i}, {k} + {i}] = 1.0")
            self.emit(f"{k} += {x}.shape[0]")
            return f"({x}.shape[0], {x}.copy(), {s})"
        raise Unsupported(f"deltarev1's input of type {t}", e.span)

    def gather(self, g: str, y: str, yt: Type, dt: str, dtt: Type, e: ir.Call) -> None:
        """g += Σ_j dt_j ⊗ ds_j over the reals of the output y (Fig. 6)."""
        if is_constant_tangent(dtt):
            return
        if dtt == FLOAT:
            self.emit(f"if {y}[1].shape[0] != 0:")
            self.indented().emit(f"{g} += {dt} * {y}[1]")
        elif isinstance(dtt, TTuple):
            for q, (u, v) in enumerate(zip(yt.elems, dtt.elems)):
                self.gather(g, f"{y}[{q}]", u, f"{dt}[{q}]", v, e)
        elif isinstance(dtt, TTensor) and dtt.rank == 1 and dtt.elem == FLOAT:
            self.emit(f"if {y}[0] != {dt}.shape[0]:")
            self.indented().emit('raise ValueError("the cotangent\'s shape differs from the output\'s")')
            i = self.mod.fresh("i")
            self.emit(f"for {i} in range({y}[0]):")
            inner = self.indented()
            inner.emit(f"if {y}[2][{i}].shape[0] != 0:")
            inner.indented().emit(f"{g} += {dt}[{i}] * {y}[2][{i}]")
        else:
            raise Unsupported(f"deltarev1's output cotangent of type {dtt}", e.span)
