"""The wrappers' half of Krawiec et al.'s run time (Figs 6, 8, 11, generalised by
Fig. 15): seed the reals of a first-order input with derivative parts
(``initVars``), and read the gradient back in the shape of the input from the
derivative parts of the output and its cotangent.  These walk *values* by
their static type, which is why they are primitives and not generated code;
:mod:`labrys.ad.deltas` holds the Delta values and evaluators they use.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..context import count, current
from ..ir.types import BOOL, DELTA, FLOAT, INTEGER, UNIT, TLam, TSum, TTensor, TTuple, Type, has_function
from ..types.primitives import args_of, primitive, spread
from ..types.tangent import is_constant_tangent, tangent_type
from ..values import Inj, PrimError, dense, make_vec
from .deltas import OneHot, Tape, Var, eval_into, eval_tree, sweep
from .dual_types import dual_type

# --- walking values by type -------------------------------------------------

def map_reals(x: Any, t: Type, f: Callable[[float], Any]) -> Any:
    """x : t with every Float r replaced by f(r), visited left to right (initVars' order)."""
    if is_constant_tangent(t):
        return x
    if t == FLOAT:
        return f(float(x))
    match t:
        case TTuple(elems):
            return tuple(map_reals(v, e, f) for v, e in zip(x, elems))
        case TTensor(_, elem):
            x = dense(x)
            return make_vec(dual_type(elem, UNIT), [map_reals(v, elem, f) for v in x.flat], x.shape)
        case TSum(a, b):
            return Inj(x.left, map_reals(x.value, a if x.left else b, f))
        case TLam():
            raise PrimError("a function-typed input or output is out of scope (Krawiec et al. §11, footnote 13)")
    return x


def count_reals(x: Any, t: Type) -> int:
    n = [0]

    def one(r: float) -> float:
        n[0] += 1
        return r
    map_reals(x, t, one)
    return n[0]


def cotangent_like(grad: np.ndarray, x: Any, t: Type) -> Any:
    """The dS value shaped like x : t whose reals are grad, in initVars' order (lookup_S)."""
    it = iter(grad.tolist())
    return _reshape(x, t, it)


def _reshape(x: Any, t: Type, it) -> Any:
    if t == FLOAT:
        return next(it)
    match t:
        case TTuple(elems):
            return tuple(_reshape(v, e, it) for v, e in zip(x, elems))
        case TTensor(_, elem):
            x = dense(x)
            return make_vec(tangent_type(elem), [_reshape(v, elem, it) for v in x.flat], x.shape)
        case TSum(a, b):
            return Inj(x.left, _reshape(x.value, a if x.left else b, it))
    return ()


def output_parts(y: Any, dt: Any, t: Type) -> list[tuple[Any, float]]:
    """(derivative part, cotangent) of every real of a dual-number output, guided by
    ``t = dT``: the ⊙_T seeding of Fig. 15 done once, for one eval."""
    out: list[tuple[Any, float]] = []
    stack = [(y, dt, t)]
    while stack:
        y, dt, t = stack.pop()
        if is_constant_tangent(t):
            continue
        if t == FLOAT:
            out.append((y[1], float(dt)))
            continue
        match t:
            case TTuple(elems):
                stack.extend(zip(y, dt, elems))
            case TTensor(_, elem):
                dt = dense(dt)
                if np.shape(dt) != y.shape:
                    raise PrimError(f"cotangent of shape {np.shape(dt)} for an output of shape {y.shape}")
                stack.extend((a, b, elem) for a, b in zip(y.flat, dt.flat))
            case TSum(a, b):
                if y.left != dt.left:
                    raise PrimError("the cotangent's alternative (inl/inr) differs from the output's")
                stack.append((y.value, dt.value, a if y.left else b))
    return out


def _inputs(image: Type) -> Callable[[Type], Type | None]:
    return lambda t: dual_type(t, image) if not has_function(t) else None


def _delta_inputs(t: Type) -> Callable[[Any], Any]:
    """initVars (Fig. 15) for deltarev: a fresh tape; the reals of x become (r, Var 1..a)."""
    def seed(x):
        ids = iter(range(1, 1 << 62))
        s0 = map_reals(x, t, lambda r: (r, Var(next(ids))))
        current().tapes.append(Tape(next(ids) - 1))
        return s0
    return seed


def _delta2_inputs(t: Type) -> Callable[[Any], Any]:
    def seed(x):
        ids = iter(range(1, 1 << 62))
        return map_reals(x, t, lambda r: (r, OneHot(next(ids))))
    return seed


def _delta1_inputs(t: Type) -> Callable[[Any], Any]:
    """Fig. 6's seeds for a general S: the k-th real carries onehot k of length a."""
    def seed(x):
        a, ids = count_reals(x, t), iter(range(1 << 62))

        def onehot(r: float):
            e = np.zeros(a)
            e[next(ids)] = 1.0
            return (r, e)
        count(a * a)
        return map_reals(x, t, onehot)
    return seed


for _name, _image, _impl in (("deltaInputs", DELTA, _delta_inputs),
                             ("delta2Inputs", DELTA, _delta2_inputs),
                             ("delta1Inputs", TTensor(1, FLOAT), _delta1_inputs)):
    primitive(_name, _inputs(_image), _impl, f"({_name} x): the wrapper's dual-number input for x "
              "(Krawiec et al. Fig. 15 initVars).")


def _gradient_type(image: Type) -> Callable[[Type], Type | None]:
    def typeof(t: Type) -> Type | None:
        a = args_of(t, 3)
        if a is None or has_function(a[0]):
            return None
        return tangent_type(a[0]) if a[2] == tangent_type(a[2]) and _matches(a[1], a[2], image) else None
    return typeof


def _matches(dual: Type, dt: Type, image: Type) -> bool:
    """dual = D[T] for the T with dT = dt (up to leaves, which dT forgets)."""
    if dt == FLOAT:
        return dual == TTuple((FLOAT, image))
    match dual, dt:
        case TTuple(ds), TTuple(ts) if len(ds) == len(ts):
            return all(_matches(d, e, image) for d, e in zip(ds, ts))
        case TTensor(r, d), TTensor(s, e) if r == s:
            return _matches(d, e, image)
        case TSum(d1, d2), TSum(e1, e2):
            return _matches(d1, e1, image) and _matches(d2, e2, image)
    return dt == UNIT and dual == dual_type(dual, image)  # a leaf, or a structure of leaves


def _delta_gradient(t: Type) -> Callable[[Any], Any]:
    """Fig. 11 / 15 for deltarev: seed the outputs' Vars with dt, one sweep, read ids 1..a."""
    s, _, dt_type = t.elems

    def gradient(x, y, dt):
        ctx = current()
        if not ctx.tapes:
            raise PrimError("deltaGradient without deltaInputs")
        tape = ctx.last_tape = ctx.tapes.pop()
        adj = np.zeros(tape.first + len(tape.rhs))
        for d, g in output_parts(y, dt, dt_type):
            if g != 0.0:
                eval_into(g, d, adj)
        sweep(tape, adj)
        return cotangent_like(adj[1:tape.first], x, s)
    return spread(gradient)


def _summed_gradient(add: Callable[[np.ndarray, Any, float], None]) -> Callable[[Type], Callable]:
    """A gradient into one array of the input's reals, each output real adding its part."""
    def impl(t: Type) -> Callable[[Any], Any]:
        s, _, dt_type = t.elems

        def gradient(x, y, dt):
            grad = np.zeros(count_reals(x, s))
            for part, g in output_parts(y, dt, dt_type):
                add(grad, part, g)
            return cotangent_like(grad, x, s)
        return spread(gradient)
    return impl


def _add_cotangent(grad: np.ndarray, ds: np.ndarray, g: float) -> None:
    if len(ds):  # the empty vector is zero_S (Note [D1 cotangents])
        grad += g * ds
        count(2 * len(ds))


_delta2_gradient = _summed_gradient(lambda grad, d, g: eval_tree(g, d, grad))  # Fig. 8: eval₂ per output
_delta1_gradient = _summed_gradient(_add_cotangent)  # Fig. 6: Σ_j dt_j ⊗ ds_j


for _name, _image, _impl in (("deltaGradient", DELTA, _delta_gradient),
                             ("delta2Gradient", DELTA, _delta2_gradient),
                             ("delta1Gradient", TTensor(1, FLOAT), _delta1_gradient)):
    primitive(_name, _gradient_type(_image), _impl,
              f"({_name} x y dt): the gradient at x from the dual-number output y and its cotangent dt "
              "(Krawiec et al. Fig. 15).")


def _dual_zip(t: Type) -> Callable[[Any], Any]:
    """zip_S of Fig. 15: pair each real of x with its tangent in dx."""
    s = t.elems[0]

    def zip_(x, dx):
        reals = _reals_of(dx, tangent_type(s))
        tangents = iter(reals)

        def pair(r: float) -> tuple[float, float]:
            t = next(tangents, None)
            if t is None:
                raise PrimError("the tangent has fewer numbers than the argument (shapes differ)")
            return r, t
        out = map_reals(x, s, pair)
        if next(tangents, None) is not None:
            raise PrimError("the tangent has more numbers than the argument (shapes differ)")
        return out
    return spread(zip_)


def _reals_of(v: Any, t: Type) -> list[float]:
    out: list[float] = []
    map_reals(v, t, lambda r: out.append(r) or r)
    return out


def _dual_zip_numba(xs: list[str], types: list[Type], result: Type) -> str | None:
    """The compiled backend's code for dualZip of Floats, Float vectors (nested: Note [Nested struct of
    arrays] in labrys.backends.numba_nested), vectors of tuples of numbers and tuples of them (None:
    other shapes).

    Note [Zipping vectors of tuples]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    A vector of tuples of numbers is a struct of arrays (n, columns…), a nested one flat
    columns and offsets (n, O1 …, columns…), and its tangent has the same layout with a
    unit ``(Tuple)`` (an Integer's tangent) in place of each non-Float: a rank-1 struct keeps
    its positions (a unit component is an empty struct ``(n,)``), a nested one has no column for
    it.  So the dual (each Float component becomes ``(Tuple Float Float)``) shares x's offsets
    and non-Float columns, and each Float column is followed by its tangent column, checked to
    have its length (ADBench hand's skinning weights, ``Vec (Vec (Tuple Integer Float))``)."""
    def zipped(x: str, dx: str, t: Type) -> str | None:
        if t == FLOAT:
            return f"({x}, {dx})"
        if dual_type(t, FLOAT) == t:  # no reals: its dual is itself
            return x
        depth, leaf = 0, t
        while isinstance(leaf, TTensor) and leaf.rank == 1:
            depth, leaf = depth + 1, leaf.elem
        if depth == 1 and leaf == FLOAT:  # a struct of arrays, columns x and dx
            return f"({x}.shape[0], {x}, _shaped({dx}, {x}))"
        if depth and leaf == FLOAT:  # flat columns and row offsets from x's shape
            offsets, count = [], f"{x}.shape[0]"
            for d in range(1, depth):
                offsets.append(f"_np.arange({count} + 1) * {x}.shape[{d}]")
                count = f"{count} * {x}.shape[{d}]"
            flat = [f"_np.ascontiguousarray({v}).ravel()" for v in (x, f"_shaped({dx}, {x})")]
            return f"({x}.shape[0], {', '.join(offsets + flat)})"
        if isinstance(t, TTuple) and t.elems:
            parts = [zipped(f"{x}[{k}]", f"{dx}[{k}]", e) for k, e in enumerate(t.elems)]
            return None if None in parts else "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if depth == 1 and isinstance(leaf, TTuple):
            return soa(x, dx, leaf)
        if depth and isinstance(leaf, TTuple):
            return nested(x, dx, depth, leaf)
        return None

    def soa(x: str, dx: str, et: TTuple) -> str | None:
        """Note [Zipping vectors of tuples]: a struct of arrays (n, columns…), dx's columns at x's positions."""
        parts = [f"{x}[0]"]
        for k, e in enumerate(et.elems):
            col, dcol = f"{x}[{k + 1}]", f"{dx}[{k + 1}]"
            if e == FLOAT:
                parts.append(f"({x}[0], {col}, _shaped({dcol}, {col}))")
            elif dual_type(e, FLOAT) == e:
                parts.append(col)
            elif isinstance(e, TTuple):
                inner = soa(col, dcol, e)
                if inner is None:
                    return None
                parts.append(inner)
            else:
                return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def nested(x: str, dx: str, r: int, et: TTuple) -> str | None:
        """Note [Zipping vectors of tuples]: a nested struct of arrays (n, offsets…, flat columns…)."""
        leaves: list[Type] = []
        todo: list[Type] = [et]
        while todo:
            e = todo.pop()
            if isinstance(e, TTuple):
                todo.extend(reversed(e.elems))
            elif e in (FLOAT, INTEGER, BOOL):
                leaves.append(e)
            else:
                return None
        parts, q = [f"{x}[{d}]" for d in range(r)], 0
        for c, e in enumerate(leaves):
            col = f"{x}[{r + c}]"
            parts.append(col)
            if e == FLOAT:
                parts.append(f"_shaped({dx}[{r + q}], {col})")
                q += 1
        return "(" + ", ".join(parts) + ")"
    return zipped(xs[0], xs[1], types[0])


primitive("dualZip", lambda t: dual_type(args_of(t, 2)[0], FLOAT)
          if args_of(t, 2) and not has_function(args_of(t, 2)[0]) and args_of(t, 2)[1] == tangent_type(args_of(t, 2)[0])
          else None, _dual_zip, "(dualZip x dx): dualfwd's input, each real of x paired with its tangent "
          "(Krawiec et al. Fig. 15 zip_S).", numba=_dual_zip_numba)
