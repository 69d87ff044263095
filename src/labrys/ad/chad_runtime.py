"""The run-time support of CHAD's linear layer (Vákár & Smeding, CHAD: combinatory
homomorphic automatic differentiation, §4–§5, Figs 5–7, and §9's lowering).

The generated code is plain IR: a linear function is a ``lam`` and its
application an ``App``; the monoid structure of §5.3 and the copowers of §4
are these primitives, each specialised on its static type:

    chadZero (lam (z : T) z)   the typed 0 of T            chadPlus a b      a + b in T
    chadZeroLike x             the 0 of x's cotangent type, shaped like the primal x (symbolic here;
                               §9's lowering makes it ts_zero x: Note [Zeros shaped like the context])
    chadOpen t                 a tuple's zero opened one level, so get$i$n applies
    chadLeft s, chadRight s    the side of a tagged sum cotangent (Note [Sum cotangents])
    chadApp f a                a power (a function's tangent) applied; 0 a = 0
    chadIndex i w, chadOneHot xs i w, chadSumVec w    index, its transpose, constVec's transpose
    chadCopow a w              the copower !a ⊗ w         chadCopowFold f c   case c of !a ⊗ w -> f (a, w)
    chadSumBuild n f           Σ_i f i in a linear type
    chadFoldF / chadFoldR / chadIFoldF / chadIFoldR   fold's tangent and cotangent loops
    chadDense x w              a cotangent with every symbolic zero materialised, shaped like x

Note [Symbolic zero]
~~~~~~~~~~~~~~~~~~~~
Pitfall 5 of CHAD: the zero of a ``Vec`` has no size at compile time, and a
dense zero per context entry per loop iteration makes map and build
quadratic.  So the zero of every type but Float and (Tuple) is one symbolic
value, :data:`ZERO`: ``0 + a`` is O(1), ``chadOpen`` turns a zero tuple into a
tuple of zeros only where a projection needs it, and ``chadDense`` (the
wrapper's last step) materialises what reaches the user.  Vectors of reals use
the sparse one-hots of Note [Sparse cotangents] for ``index``'s transpose.

Note [Copowers]
~~~~~~~~~~~~~~~
A copower ``!τ ⊗ σ`` is a formal sum of pairs (Fig. 7): ``0`` is the empty
sum, ``+`` concatenates, and ``case`` runs its body once per pair and adds the
results.  It is an append tree (:class:`CopowCat` of :class:`CopowLeaf`), so
``+`` is O(1) and the tree is walked once, with an explicit stack, when it is
folded; its order is unobservable (a quotient, Insight 6).
"""
from __future__ import annotations

import operator
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..ir.build import index_type
from ..ir.types import FLOAT, INTEGER, UNIT, TBase, TLam, TSum, TTensor, TTuple, Type
from ..prelude.arith import is_data
from ..prelude.tangents import add_fn
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import tangent_type
from ..values import DeltaVec, Inj, PrimError, Sparse, dense, make_vec, numel
from .chad_sparse import OneHots


class LinZero:
    """The symbolic zero of a linear type (Note [Symbolic zero])."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "0"


ZERO = LinZero()


class CopowLeaf:
    __slots__ = ("arg", "cot")

    def __init__(self, arg: Any, cot: Any) -> None:
        self.arg, self.cot = arg, cot


class CopowCat:
    __slots__ = ("left", "right")

    def __init__(self, left: Any, right: Any) -> None:
        self.left, self.right = left, right


def copow_entries(c: Any):
    """The (argument, cotangent) pairs of a copower, walked without recursion."""
    stack = [c]
    while stack:
        x = stack.pop()
        if isinstance(x, CopowLeaf):
            yield x.arg, x.cot
        elif isinstance(x, CopowCat):
            stack.append(x.right)
            stack.append(x.left)


# --- the monoid of §5.3, by type ----------------------------------------------------


@lru_cache(maxsize=None)
def zero_of(t: Type) -> Any:
    if t == FLOAT:
        return 0.0
    if t == UNIT or isinstance(t, TBase):
        return ()
    return ZERO


@lru_cache(maxsize=None)
def plus_fn(t: Type) -> Callable[[Any, Any], Any]:
    """a + b in the linear type t; either side may be the symbolic zero."""
    if t == FLOAT:
        return operator.add
    if t == UNIT or isinstance(t, TBase):
        return lambda a, b: ()
    if isinstance(t, TTuple):
        fs = [plus_fn(e) for e in t.elems]

        def plus_tuple(a, b):
            if a is ZERO:
                return b
            if b is ZERO:
                return a
            return tuple(f(x, y) for f, x, y in zip(fs, a, b))
        return plus_tuple
    if isinstance(t, TTensor):
        if t.elem == FLOAT:
            add = add_fn(t)

            def plus_reals(a, b):
                if a is ZERO:
                    return b
                if b is ZERO:
                    return a
                return add(a, b)
            return plus_reals
        inner = plus_fn(t.elem)

        def plus_vec(a, b):
            if a is ZERO:
                return b
            if b is ZERO:
                return a
            if isinstance(a, (CopowLeaf, CopowCat)) or isinstance(b, (CopowLeaf, CopowCat)):
                return CopowCat(a, b)   # Note [Copowers]
            if isinstance(a, OneHots) or isinstance(b, OneHots):  # Note [Sparse one-hots of any element type]
                if a.shape != b.shape:
                    raise PrimError(f"chadPlus: vector sizes differ ({a.shape} and {b.shape})")
                return a.cat(b) if isinstance(a, OneHots) else b.cat(a)
            a, b = dense(a), dense(b)
            if a.shape != b.shape:
                raise PrimError(f"chadPlus: vector sizes differ ({a.shape} and {b.shape})")
            return make_vec(t.elem, [inner(x, y) for x, y in zip(a.flat, b.flat)], a.shape)
        return plus_vec
    if isinstance(t, TSum):
        left, right = plus_fn(t.left), plus_fn(t.right)

        def plus_sum(a, b):
            if a is ZERO:
                return b
            if b is ZERO:
                return a
            if a.left != b.left:
                raise PrimError("chadPlus: cotangents of the two sides of a sum (internal)")
            return Inj(a.left, (left if a.left else right)(a.value, b.value))
        return plus_sum
    if isinstance(t, TLam):  # powers are added pointwise (Fig. 7)
        inner = plus_fn(t.res)

        def plus_power(f, g):
            if f is ZERO:
                return g
            if g is ZERO:
                return f
            return lambda x: inner(f(x), g(x))
        return plus_power
    raise PrimError(f"chadPlus: no addition in {t}")


def _cheap(r: Any, a: Any) -> int:
    return 1


def _plus_cost(r: Any, a: Any) -> int:
    x, y = a
    return 1 if x is ZERO or y is ZERO or isinstance(r, (CopowCat, Sparse)) else numel(r)


def _zero_type(t: Type) -> Type | None:
    return t.arg if isinstance(t, TLam) and t.arg == t.res else None


def _same_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[0] if ab and ab[0] == ab[1] else None


primitive("chadZero", _zero_type, lambda t: lambda _: zero_of(t.arg),
          "(chadZero (lam (z : T) z)): CHAD's typed zero of T (symbolic unless T is Float or (Tuple)).",
          cost=_cheap, nondiff=True)


def _zero_like_type(t: Type) -> Type | None:
    try:
        return tangent_type(t) if is_data(t) else None
    except ValueError:
        return None


primitive("chadZeroLike", _zero_like_type, lambda t: lambda _: zero_of(tangent_type(t)),
          "(chadZeroLike x): CHAD's zero of the (co)tangent type of the primal x, shaped like x "
          "(symbolic at run time; the §9 lowering makes it (ts_zero x)).", cost=_cheap, nondiff=True)
primitive("chadPlus", _same_type, lambda t: spread(plus_fn(t.elems[0])),
          "(chadPlus a b): a + b in a linear type of CHAD (tuples, vectors, tagged sums, powers, copowers).",
          cost=_plus_cost, nondiff=True)


def _open_impl(t: Type):
    zeros = tuple(zero_of(e) for e in t.elems)
    return lambda x: zeros if x is ZERO else x


primitive("chadOpen", lambda t: t if isinstance(t, TTuple) else None, _open_impl,
          "(chadOpen t): t, with the symbolic zero of a tuple type opened into a tuple of zeros.",
          cost=_cheap, nondiff=True)


def _side_impl(left: bool):
    def impl(t: Type):
        zero = zero_of(t.left if left else t.right)
        return lambda s: s.value if isinstance(s, Inj) and s.left == left else zero
    return impl


primitive("chadLeft", lambda t: t.left if isinstance(t, TSum) else None, _side_impl(True),
          "(chadLeft s): the left part of a tagged sum cotangent (zero otherwise).", cost=_cheap, nondiff=True)
primitive("chadRight", lambda t: t.right if isinstance(t, TSum) else None, _side_impl(False),
          "(chadRight s): the right part of a tagged sum cotangent (zero otherwise).", cost=_cheap, nondiff=True)


def _app_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[0].res if ab and isinstance(ab[0], TLam) and ab[0].arg == ab[1] else None


def _app_impl(t: Type):
    zero = zero_of(t.elems[0].res)
    return spread(lambda f, a: zero if f is ZERO else f(a))


primitive("chadApp", _app_type, _app_impl, "(chadApp f a): a power (a function's tangent) applied; 0 a = 0.",
          cost=_cheap, nondiff=True)


# --- arrays -----------------------------------------------------------------------


def _index_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[1].elem if ab and isinstance(ab[1], TTensor) and ab[0] == index_type(ab[1]) else None


def _index_impl(t: Type):
    zero = zero_of(t.elems[1].elem)

    def index(i, w):
        if w is ZERO:
            return zero
        w = dense(w)
        try:
            x = w[i]
        except IndexError:
            raise PrimError(f"chadIndex: index {i} out of range for a tensor of size {w.shape}") from None
        return float(x) if isinstance(x, np.floating) else x
    return spread(index)


primitive("chadIndex", _index_type, _index_impl, "(chadIndex i w): element i of a cotangent vector (0 for 0).",
          cost=_cheap, nondiff=True)


def _onehot_type(t: Type) -> Type | None:
    abc = args_of(t, 3)
    return TTensor(abc[0].rank, abc[2]) if abc and isinstance(abc[0], TTensor) \
        and abc[1] == index_type(abc[0]) else None


def _onehot_impl(t: Type):
    elem = t.elems[2]

    def onehot(xs, i, w):
        shape = dense(xs).shape
        if elem == FLOAT:
            return DeltaVec(shape[0] if len(shape) == 1 else shape, i, w, FLOAT)
        # Note [Sparse one-hots of any element type]
        return OneHots(shape, elem, zero_of(elem), plus_fn(elem), index=i, value=w)
    return spread(onehot)


primitive("chadOneHot", _onehot_type, _onehot_impl,
          "(chadOneHot xs i w): the cotangent vector shaped like xs that is w at i and 0 elsewhere "
          "(sparse for Floats).", cost=_cheap, nondiff=True)


def _sumvec_impl(t: Type):
    plus, zero = plus_fn(t.elem), zero_of(t.elem)

    def sumvec(w):
        if w is ZERO:
            return zero
        w = dense(w)
        if t.elem == FLOAT:
            return float(np.sum(w))
        acc = zero
        for x in w.flat:
            acc = plus(acc, x)
        return acc
    return sumvec


primitive("chadSumVec", lambda t: t.elem if isinstance(t, TTensor) else None, _sumvec_impl,
          "(chadSumVec w): the sum of a cotangent tensor's elements (constVec transposed).",
          cost=lambda r, a: 1 if a is ZERO else numel(a), nondiff=True)


def _sumbuild_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    shaped = args_of(t, 3)  # (chadSumBuild n f γ): γ the primal the zero is shaped like (§9's lowering)
    if shaped and _zero_like_type(shaped[2]) == getattr(shaped[1], "res", None):
        ab = shaped[:2]
    ok = ab and (ab[0] == INTEGER or isinstance(ab[0], TTuple) and ab[0].elems
                 and all(e == INTEGER for e in ab[0].elems))
    return ab[1].res if ok and isinstance(ab[1], TLam) and ab[1].arg == ab[0] else None


def _sumbuild_impl(t: Type):
    plus, zero = plus_fn(t.elems[1].res), zero_of(t.elems[1].res)

    def sumbuild(n, f, _shape=None):
        acc = zero
        for i in (range(n) if isinstance(n, int) else np.ndindex(*n)):
            acc = plus(acc, f(i if isinstance(i, int) else tuple(int(k) for k in i)))
        return acc
    return spread(sumbuild)


primitive("chadSumBuild", _sumbuild_type, _sumbuild_impl,
          "(chadSumBuild n (lam (i : Integer) e) [γ]): the sum of e(0) .. e(n-1) in a linear type "
          "(γ: a primal its zero is shaped like, for §9's lowering; ignored here).",
          cost=lambda r, a: 0, nondiff=True)


# --- copowers (Note [Copowers]) ----------------------------------------------------------


def _copow_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return TTensor(1, TTuple(ab)) if ab else None


primitive("chadCopow", _copow_type, lambda t: spread(CopowLeaf),
          "(chadCopow a w): the copower !a ⊗ w, one (argument, cotangent) pair.", cost=_cheap, nondiff=True)


def _copowfold_type(t: Type) -> Type | None:
    ab = args_of(t, 2)
    return ab[0].res if ab and isinstance(ab[0], TLam) and ab[1] == TTensor(1, ab[0].arg) else None


def _copowfold_impl(t: Type):
    plus, zero = plus_fn(t.elems[0].res), zero_of(t.elems[0].res)

    def fold(f, c):
        acc = zero
        if c is ZERO:
            return acc
        for a, w in copow_entries(c):
            acc = plus(acc, f((a, w)))
        return acc
    return spread(fold)


primitive("chadCopowFold", _copowfold_type, _copowfold_impl,
          "(chadCopowFold (lam (aw : Tuple A W) e) c): case c of !a ⊗ w -> e, summed over the pairs of c.",
          cost=lambda r, a: 0, nondiff=True)
