"""Linear maps as values: the vocabulary of Ellis et al. Fig. 3, with the
run-time semantics of Fig. 4, so that an unoptimised ``[D f]`` runs and can
be applied (``lmApply``, ⊙) and transposed (``lmApplyR``, ⊙ᴿ).

Constructors that need the types of the spaces take *witness* values of the
primal types, as ksc does: ``(lmZero s t) : LM dT(s) dT(t)``.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

from ..ir.types import FLOAT, INTEGER, TLM, TLam, TTensor, TTuple, Type
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import tangent_type
from ..values import PrimError, dense, make_vec, zero_tangent_of
from ..values import _add_value as _add_tangent
from .arith import _scale
from .tangents import add_fn, zero_tangent_fn


@dataclass(frozen=True)
class LinearMap:
    """A linear map, known by its action ⊙ and its transpose's action ⊙ᴿ."""

    apply: Callable[[Any], Any]
    apply_r: Callable[[Any], Any]


def _total(add: Callable, items, what: str, space: Type | None = None) -> Any:
    acc, first = None, True
    for x in items:
        acc, first = (x, False) if first else (add(acc, x), False)
    if first:
        zero = _type_zero(space) if space is not None else None
        if zero is None:
            raise PrimError(f"{what}: a sum of no linear maps into {space} has no known size")
        return zero
    return acc


def _type_zero(t: Type) -> Any:
    """The zero of a tangent type whose values have no sizes (Floats, tuples), else None."""
    if t == FLOAT:
        return 0.0
    if isinstance(t, TTuple):
        parts = [_type_zero(e) for e in t.elems]
        return None if any(p is None for p in parts) else tuple(parts)
    return None


def _lm(t: Type) -> TLM | None:
    return t if isinstance(t, TLM) else None


def _lms(t: Type) -> tuple[TLM, ...] | None:
    elems = t.elems if isinstance(t, TTuple) else (t,)
    return elems if elems and all(isinstance(e, TLM) for e in elems) else None


def _lm_prim(name: str, typeof, impl, doc: str) -> None:
    primitive(name, typeof, impl, doc, cost=lambda r, a: 1, nondiff=True)


# 0, 1, S(k)
_lm_prim("lmZero", lambda t: TLM(tangent_type(t.elems[0]), tangent_type(t.elems[1]))
         if args_of(t, 2) else None,
         lambda t: spread(lambda s, x: LinearMap(lambda _: zero_tangent_fn(t.elems[1])(x),
                                                 lambda _: zero_tangent_fn(t.elems[0])(s))),
         "(lmZero s t): the zero linear map dT(s) ⊸ dT(t).")
_lm_prim("lmOne", lambda t: TLM(tangent_type(t), tangent_type(t)),
         lambda t: lambda s: LinearMap(lambda dx: dx, lambda dr: dr), "(lmOne s): the identity on dT(s).")


def _scale_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return TLM(tangent_type(ab[0]), tangent_type(ab[0])) if ab and ab[1] == FLOAT else None


_lm_prim("lmScale", _scale_type,
         lambda t: spread(lambda s, k: LinearMap(lambda dx: _scale(tangent_type(t.elems[0]))(k, dx),
                                                 lambda dr: _scale(tangent_type(t.elems[0]))(k, dr))),
         "(lmScale s k): multiplication by the Float k, on dT(s).")


def _make_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    ok = ab and isinstance(ab[0], TLam) and ab[1] == TLam(ab[0].res, ab[0].arg)
    return TLM(ab[0].arg, ab[0].res) if ok else None


_lm_prim("lmMake", _make_type, lambda t: spread(LinearMap),
         "(lmMake f g): the linear map whose action is the function f and whose transpose's action is g "
         "(the Jacobian [D p] of a primitive, from its rules).")


# composition, sum, transposition
def _compose_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return TLM(ab[1].src, ab[0].dst) if ab and _lm(ab[0]) and _lm(ab[1]) and ab[0].src == ab[1].dst else None


_lm_prim("lmCompose", _compose_type,
         lambda t: spread(lambda m, n: LinearMap(lambda dx: m.apply(n.apply(dx)),
                                                 lambda dr: n.apply_r(m.apply_r(dr)))),
         "(lmCompose m n): m ∘ n, n first.")


def _add_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[0] if ab and _lm(ab[0]) and ab[0] == ab[1] else None


def _add_impl(t: Type):
    add_dst, add_src = add_fn(t.elems[0].dst), add_fn(t.elems[0].src)
    return spread(lambda m, n: LinearMap(lambda dx: add_dst(m.apply(dx), n.apply(dx)),
                                         lambda dr: add_src(m.apply_r(dr), n.apply_r(dr))))


_lm_prim("lmAdd", _add_type, _add_impl, "(lmAdd m n): m ⊕ n.")
_lm_prim("lmTranspose", lambda t: TLM(t.dst, t.src) if _lm(t) else None,
         lambda t: lambda m: LinearMap(m.apply_r, m.apply), "(lmTranspose m): mᵀ.")


# VCat (×) and HCat (⋈), n-ary
def _vcat_type(t: Type) -> Type | None:
    ms = _lms(t)
    ok = ms and all(m.src == ms[0].src for m in ms)
    return TLM(ms[0].src, TTuple(tuple(m.dst for m in ms))) if ok else None


def _vcat_impl(t: Type):
    add, several = add_fn(_lms(t)[0].src), isinstance(t, TTuple)

    def vcat(ms):
        ms = ms if several else (ms,)
        return LinearMap(lambda dx: tuple(m.apply(dx) for m in ms),
                         lambda dr: _total(add, (m.apply_r(r) for m, r in zip(ms, dr)), "lmVCat"))
    return vcat


def _hcat_type(t: Type) -> Type | None:
    ms = _lms(t)
    ok = ms and all(m.dst == ms[0].dst for m in ms)
    return TLM(TTuple(tuple(m.src for m in ms)), ms[0].dst) if ok else None


def _hcat_impl(t: Type):
    add, several = add_fn(_lms(t)[0].dst), isinstance(t, TTuple)

    def hcat(ms):
        ms = ms if several else (ms,)
        return LinearMap(lambda dx: _total(add, (m.apply(x) for m, x in zip(ms, dx)), "lmHCat"),
                         lambda dr: tuple(m.apply_r(dr) for m in ms))
    return hcat


_lm_prim("lmVCat", _vcat_type, _vcat_impl, "(lmVCat m1 ... mn): m1 × ... × mn, into a tuple.")
_lm_prim("lmHCat", _hcat_type, _hcat_impl, "(lmHCat m1 ... mn): m1 ⋈ ... ⋈ mn, from a tuple.")


# Loops over i: B (build), B' (its transpose) and Σ (sum), each of (n, lam i m),
# with an optional witness s of the source space (its zero, when n is 0).
def _loop_rank(t: Type) -> int:
    """The rank of the tensor a loop linear map ranges over (its size is t.elems[0])."""
    n = (args_of(t, 3) or args_of(t, 2))[0]
    return 1 if n == INTEGER else len(n.elems)


def _loop_lm(t: Type) -> TLM | None:
    """The element map's type of (lmBuild n (lam i m) [witness]); n an Integer or an
    N-tuple of Integers, as for build (Note [Loop linear maps over tensors])."""
    ab = args_of(t, 3) or args_of(t, 2)
    ok_size = ab and (ab[0] == INTEGER or isinstance(ab[0], TTuple) and ab[0].elems
                      and all(e == INTEGER for e in ab[0].elems))
    if ok_size and isinstance(ab[1], TLam) and ab[1].arg == ab[0]:
        m = _lm(ab[1].res)
        return m if m and (len(ab) == 2 or tangent_type(ab[2]) == m.src) else None
    return None


def _loop_args(args: tuple) -> tuple[int, Callable, Any]:
    """(n, f, zero of the source space or None)."""
    n, f, *witness = args
    return n, f, zero_tangent_of(witness[0]) if witness else None


def _or_zero(total: Callable, zero: Any) -> Callable:
    def run(x):
        try:
            return total(x)
        except PrimError:
            if zero is None:
                raise
            return zero
    return run


def _indices(n):
    shape = (n,) if isinstance(n, int) else tuple(n)
    if any(k < 0 for k in shape):
        raise PrimError(f"negative size {n}")
    return range(shape[0]) if isinstance(n, int) else itertools.product(*(range(k) for k in shape))


def _shape(n) -> tuple[int, ...]:
    return (n,) if isinstance(n, int) else tuple(n)


# Note [Loop linear maps over tensors]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# build over a Tensor N (n an N-tuple, i an N-tuple index) has the Jacobian
# B(n, i.m) with the same n and i: its forward application builds a Tensor N
# of the element maps' results and its transpose sums m_iᵀ(dr[i]) over every
# index.  Knossos AD gives every loop map the size and index of its loop, so
# Knossos's Tensor programs differentiate like their vector-of-vector forms.


def _build_impl(t: Type):
    m_t = _lm(t.elems[1].res)
    add = add_fn(m_t.src)

    def lm_build(args):
        n, f, zero = _loop_args(args)
        return LinearMap(lambda dx: make_vec(m_t.dst, [f(i).apply(dx) for i in _indices(n)], _shape(n)),
                         _or_zero(lambda dr: _total(add, (f(i).apply_r(_at(dense(dr), i)) for i in _indices(n)),
                                                    "lmBuild", m_t.src), zero))
    return lm_build


def _build_t_impl(t: Type):
    m_t = _lm(t.elems[1].res)
    add = add_fn(m_t.dst)
    return spread(lambda n, f: LinearMap(
        lambda dx: _total(add, (f(i).apply(_at(dense(dx), i)) for i in _indices(n)), "lmBuildT", m_t.dst),
        lambda dr: make_vec(m_t.src, [f(i).apply_r(dr) for i in _indices(n)], _shape(n))))


def _at(v, i):
    x = v[i if isinstance(i, int) else tuple(i)]
    return float(x) if v.dtype != object else x


def _sumbuild_impl(t: Type):
    m_t = _lm(t.elems[1].res)
    add_dst, add_src = add_fn(m_t.dst), add_fn(m_t.src)

    def lm_sumbuild(args):
        n, f, zero = _loop_args(args)
        return LinearMap(
            lambda dx: _total(add_dst, (f(i).apply(dx) for i in _indices(n)), "lmSumBuild", m_t.dst),
            _or_zero(lambda dr: _total(add_src, (f(i).apply_r(dr) for i in _indices(n)), "lmSumBuild", m_t.src),
                     zero))
    return lm_sumbuild


_lm_prim("lmBuild", lambda t: TLM(m.src, TTensor(_loop_rank(t), m.dst)) if (m := _loop_lm(t)) else None, _build_impl,
         "(lmBuild n (lam i m)): B(n, i.m) = V(build n (lam i m)): s ⊸ Vec t.")
_lm_prim("lmBuildT", lambda t: TLM(TTensor(_loop_rank(t), m.src), m.dst) if (m := _loop_lm(t)) else None,
         _build_t_impl,
         "(lmBuildT n (lam i m)): B′(n, i.m) = H(build n (lam i m)): Vec s ⊸ t.")
_lm_prim("lmSumBuild", lambda t: _loop_lm(t), _sumbuild_impl,
         "(lmSumBuild n (lam i m)): Σ(n, i.m), the sum of linear maps.")


# VCatV and HCatV over a vector of linear maps
def _vcat_v_type(t: Type) -> Type | None:
    m = _lm(t.elem) if isinstance(t, TTensor) and t.rank == 1 else None
    return TLM(m.src, TTensor(1, m.dst)) if m else None


def _hcat_v_type(t: Type) -> Type | None:
    m = _lm(t.elem) if isinstance(t, TTensor) and t.rank == 1 else None
    return TLM(TTensor(1, m.src), m.dst) if m else None


_lm_prim("lmVCatV", _vcat_v_type,
         lambda t: lambda ms: _build_impl(TTuple((INTEGER, TLam(INTEGER, t.elem))))((len(ms), lambda i: ms[i])),
         "(lmVCatV ms): V(ms), a vector of linear maps stacked: s ⊸ Vec t.")
_lm_prim("lmHCatV", _hcat_v_type,
         lambda t: lambda ms: _build_t_impl(TTuple((INTEGER, TLam(INTEGER, t.elem))))((len(ms), lambda i: ms[i])),
         "(lmHCatV ms): H(ms), a vector of linear maps side by side: Vec s ⊸ t.")


# Application
def _apply_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[0].dst if ab and _lm(ab[0]) and ab[1] == ab[0].src else None


def _apply_r_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[1].src if ab and _lm(ab[1]) and ab[0] == ab[1].dst else None


_lm_prim("lmApply", _apply_type, lambda t: spread(lambda m, dx: m.apply(dx)), "(lmApply m dx): m ⊙ dx.")
_lm_prim("lmApplyR", _apply_r_type, lambda t: spread(lambda dr, m: m.apply_r(dr)), "(lmApplyR dr m): dr ⊙ᴿ m.")


# lmFold (Ellis et al. Figs. 12-13): the Jacobian of fold, from the step's Jacobian
# as a function of ∂t, the linear map of the step's argument.
def _fold_type(t: Type) -> Type | None:
    """(lmFold step jac acc0 v ∂acc0 ∂v) : LM dS dA."""
    args = args_of(t, 6)
    if args is None:
        return None
    step, jac, acc, v, m_acc, m_v = args
    ok = (isinstance(step, TLam) and isinstance(jac, TLam) and jac.arg == step.arg
          and isinstance(jac.res, TLam) and _lm(m_acc) and _lm(m_v) and m_acc.src == m_v.src)
    return TLM(m_acc.src, m_acc.dst) if ok else None


def _fold_impl(t: Type):
    add_ds = add_fn(t.elems[4].src)
    x_t = t.elems[3].elem

    def lm_fold(step, jac, acc0, v, m_acc, m_v):
        def apply(ds):  # FFold (Fig. 14)
            acc, dacc, dv = acc0, m_acc.apply(ds), dense(m_v.apply(ds))
            for i, x in enumerate(dense(v)):
                x = float(x) if dense(v).dtype != object else x
                here = LinearMap(lambda _, d=(dacc, dv[i]): d, None)
                acc, dacc = step((acc, x)), jac((acc, x))(here).apply(ds)
            return dacc

        def apply_r(dr):  # RFold (Fig. 15), with a probe standing for ∂t
            xs = [float(x) if dense(v).dtype != object else x for x in dense(v)]
            states, acc = [], acc0
            for x in xs:
                states.append(acc)
                acc = step((acc, x))
            zero_ds = m_acc.apply_r(zero_tangent_of(acc0))
            total, dacc, dxs = zero_ds, dr, [None] * len(xs)
            for i in reversed(range(len(xs))):
                seen = []
                probe = LinearMap(None, lambda c: (seen.append(c), zero_ds)[1])  # noqa: B023 (used now)
                total = add_ds(total, jac((states[i], xs[i]))(probe).apply_r(dacc))
                c = seen[0]
                for extra in seen[1:]:
                    c = tuple(_add_tangent(a, b) for a, b in zip(c, extra))
                dacc, dxs[i] = c if seen else (zero_tangent_of(states[i]), zero_tangent_of(xs[i]))
            dv = make_vec(tangent_type(x_t), dxs)
            return add_ds(add_ds(total, m_acc.apply_r(dacc)), m_v.apply_r(dv))
        return LinearMap(apply, apply_r)
    return spread(lm_fold)


_lm_prim("lmFold", _fold_type, _fold_impl,
         "(lmFold step jac acc0 v ∂acc0 ∂v): the Jacobian of (fold step acc0 v), Ellis et al. Fig. 13; "
         "jac t ∂t is the step's Jacobian given ∂t.")
