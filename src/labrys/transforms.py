"""The function transformations a JAX user expects — ``grad``, ``value_and_grad``,
``jvp``, ``vjp``, ``jacfwd``/``jacrev``/``jacobian``, ``hessian``, ``hvp`` — on
labrys functions, by any registered derivation whose calling convention fits
(:class:`labrys.ad.derivation.Convention`).

A reverse method (``rev``, ``deltarev`` …) gives a gradient in one call.  A
forward method (``fwd``, ``fwdt``, ``dualfwd`` …) gives one directional
derivative per call, so its gradient is assembled from one call per real of
the argument.  A method of another kind (``D``, a translation) is refused,
naming the methods that fit.  Second derivatives differentiate a derived
function: ``hessian`` and ``hvp`` run ``[rev [fwd f]]`` (or ``[fwd [rev f]]``),
which labrys generates like any other derived function.

Unlike JAX, ``argnums=None`` (the default) means every argument: the gradient
of ``f(x, y)`` is the pair ``(df/dx, df/dy)``.  Gradients come back shaped like
the arguments given (a 2-D array for a ``Vec (Vec Float)`` passed as one).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .ad import REGISTRY
from .ad.default_gradient import Choice, default_gradient
from .ad.derivation import Derivation
from .ad.dual_io import cotangent_like, count_reals
from .api import Derivative, Function
from .backends.boundary import SLOW
from .context import check_fast_math, check_threads
from .errors import LabrysError
from .ir import nodes as ir
from .ir.names import DerivedName, show_name
from .ir.types import FLOAT, TTuple, Type
from .values import from_python, to_python, zero_tangent_of

FORWARD, REVERSE = "forward", "reverse"
Argnums = int | Sequence[int] | None


def grad(f: Function, argnums: Argnums = None, has_aux: bool = False,
         method: str | None = None, threads: int | None = None,
         fast_math: bool | None = None) -> Callable[..., Any]:
    """The gradient of a Float-valued labrys function: ``grad(m.f)(x, y)``.  With
    ``has_aux``, f returns ``(value, aux)`` and the result is ``(gradient, aux)``.
    No ``method``: the default gradient, ``rev`` or ``sufrev`` as
    :func:`default_method` says for f.  ``threads``: the compiled backend may run
    the gradient's outer reverse sum on that many threads (None: :func:`labrys.set_threads`'s
    setting, every core by default; 1 is serial; Note [Parallel reverse sums]).  ``fast_math``:
    the compiled code may reassociate sums and fuse multiply-adds, so that its inner loops use
    vector instructions (None: :func:`labrys.set_fast_math`'s setting, off by default; Note
    [Reassociation on one thread])."""
    both = value_and_grad(f, argnums, has_aux, method, value=has_aux, threads=threads, fast_math=fast_math)

    def gradient(*args: Any) -> Any:
        value, g = both(*args)
        return (g, value[1]) if has_aux else g
    return gradient


# Note [Cached gradient dispatch]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A scalar gradient's run is about a microsecond on the compiled backend; choosing
# the derivation, the active parameters and the derived function again on every call
# cost three more.  For the common call (one signature, a Float result, reverse mode,
# no value asked for) they are decided on the first call with arguments of given
# Python types and kept per tuple of types: a later call runs the derivative and
# shapes its result like the arguments (only when there is an array or a tuple to
# shape like).  The derivative's own call still checks the values.


def value_and_grad(f: Function, argnums: Argnums = None, has_aux: bool = False,
                   method: str | None = None, value: bool = True,
                   threads: int | None = None, fast_math: bool | None = None) -> Callable[..., tuple[Any, Any]]:
    """``(f(x), grad f(x))`` from one derivative run (the value, with has_aux, is ``(value, aux)``;
    ``value=False``: None instead, f is not run — what :func:`grad` asks for)."""
    f = _function(f, "value_and_grad")
    chosen = method
    entry = _method(method or "rev", (REVERSE, FORWARD), "grad")  # the default is rev or sufrev: both REV
    _check_argnums(argnums)
    check_threads(threads)
    check_fast_math(fast_math)
    made = f.module.derivatives   # per (method, signature, wrt[, threads, fast_math]): made once per module

    def derivative(name: str, sig, wrt: tuple[str, ...] = ()) -> Derivative:
        key = (name, id(sig), wrt) + (() if threads is None and fast_math is None else (threads, fast_math))
        if key not in made:
            made[key] = Derivative(f.module, name, sig, wrt=wrt)
            made[key].threads, made[key].fast_math = threads, fast_math
        return made[key]

    plans: dict[tuple, Callable[[tuple], Any]] = {}   # Note [Cached gradient dispatch]

    def plan(sig, kinds: tuple) -> Callable[[tuple], Any]:
        """The gradient's call for arguments of these Python types: everything but the run decided once."""
        name = chosen or default_gradient(f.module.derivations, sig).method
        wrt = _active(_method(name, (REVERSE, FORWARD), "grad"), sig, argnums, len(kinds))
        shaped = any(k in (np.ndarray, tuple, list) for k in kinds)
        if wrt is not None:
            d, ks = derivative(name, sig, wrt[0]), wrt[1]
            one = not isinstance(argnums, int) and len(ks) == 1

            def run_wrt(args: tuple) -> Any:
                g = _call(d, _primal(args))
                g = (g,) if one else g
                if not shaped:
                    return g
                return _shaped_like(g, args[ks[0]] if isinstance(argnums, int) else tuple(args[k] for k in ks))
            return run_wrt
        d = derivative(name, sig)

        def run(args: tuple) -> Any:
            g = _call(d, _primal(args))
            return _select(_shaped_like(g, _primal(args)) if shaped else g, argnums, len(args))
        return run

    single = not value and len(f.sigs) == 1 and entry.convention.direction == REVERSE
    arity = _arity(f.sigs[0]) if single else -1
    planned = single and not has_aux and f.sigs[0].ret == FLOAT

    def both(*args: Any) -> tuple[Any, Any]:
        if planned and len(args) == arity:
            kinds = tuple(map(type, args))
            run = plans.get(kinds)
            if run is None:
                run = plans[kinds] = plan(f.sigs[0], kinds)
            return None, run(args)
        if single and arity == len(args):
            sig = f.sigs[0]   # no conversion here: the derivative's own call checks the values
        else:
            sig, _ = f.select(args)
        out = f(*args) if value else None
        if has_aux:
            if not (isinstance(sig.ret, TTuple) and len(sig.ret.elems) == 2 and sig.ret.elems[0] == FLOAT):
                raise LabrysError(f"has_aux needs f to return (Tuple Float AUX); {show_name(sig.name)} returns "
                                  f"{sig.ret}")
            seed = (1.0, to_python(zero_tangent_of(from_python(out[1], sig.ret.elems[1]))))
        elif sig.ret != FLOAT:
            raise LabrysError(f"grad needs a Float result; {show_name(sig.name)} returns {sig.ret} (use vjp, or "
                              "has_aux=True for (Tuple Float AUX))")
        else:
            seed = 1.0
        name = chosen or default_gradient(f.module.derivations, sig).method
        wrt = _active(_method(name, (REVERSE, FORWARD), "grad"), sig, argnums, len(args))
        if wrt is not None:  # only the asked cotangents are computed (labrys.ad.activity)
            g = derivative(name, sig, wrt[0])(_primal(args), seed)
            if not isinstance(argnums, int) and len(wrt[1]) == 1:
                g = (g,)
            like = tuple(args[k] for k in wrt[1])
            return out, _shaped_like(g, like[0] if isinstance(argnums, int) else like)
        derived = derivative(name, sig)
        if entry.convention.direction == REVERSE:
            g = derived(_primal(args), seed)
        else:  # one directional derivative per real of the argument
            _, value_in = f.select(args)
            columns = [_first(entry.convention.tangent(derived(_primal(args), d)), has_aux)
                       for d in _basis(value_in, sig.arg)]
            g = to_python(cotangent_like(np.array(columns, dtype=float), value_in, sig.arg))
        return out, _select(_shaped_like(g, _primal(args)), argnums, len(args))
    return both


def jvp(f: Function, primals: tuple, tangents: tuple, method: str = "fwd") -> tuple[Any, Any]:
    """(f(primals), the derivative of f at primals applied to tangents)."""
    f = _function(f, "jvp")
    entry = _method(method, (FORWARD,), "jvp")
    sig, _ = f.select(primals)
    out = Derivative(f.module, method, sig)(_primal(primals), _primal(tangents))
    return f(*primals), entry.convention.tangent(out)


def vjp(f: Function, *primals: Any, method: str | None = None) -> tuple[Any, Callable[[Any], Any]]:
    """(f(primals), the pullback: a cotangent of the result to one of the arguments)."""
    f = _function(f, "vjp")
    _method(method or "rev", (REVERSE,), "vjp")
    sig, _ = f.select(primals)
    back = Derivative(f.module, method or default_gradient(f.module.derivations, sig).method, sig)
    return f(*primals), lambda ct: _shaped_like(back(_primal(primals), ct), _primal(primals))


def default_method(f: Function, *args: Any) -> Choice:
    """The reverse mode ``grad(f)`` uses with no method (``rev`` or ``sufrev``) and why
    (Note [The default gradient]); ``args`` pick an overload of f."""
    f = _function(f, "default_method")
    if args:
        sig = f.select(args)[0]
    elif len(f.sigs) == 1:
        sig = f.sigs[0]
    else:
        raise LabrysError(f"{show_name(f.name)} is overloaded: pass arguments, or name one ('[f Float]')")
    return default_gradient(f.module.derivations, sig)


def jacrev(f: Function, argnums: Argnums = None, method: str = "rev") -> Callable[..., Any]:
    """The Jacobian, one reverse sweep per real of the result: shape ``result.shape +
    argument.shape`` (a tuple over arguments when there are several)."""
    return _jacobian(f, argnums, method, REVERSE)


def jacfwd(f: Function, argnums: Argnums = None, method: str = "fwd") -> Callable[..., Any]:
    """The Jacobian, one forward sweep per real of the argument (shaped as :func:`jacrev`)."""
    return _jacobian(f, argnums, method, FORWARD)


jacobian = jacrev


def hessian(f: Function, argnums: Argnums = None, method: str = "rev", inner: str = "fwd") -> Callable[..., Any]:
    """The Hessian of a Float-valued function, one run of ``[method [inner f]]`` per
    real of the argument: reverse over forward by default (it also takes folds),
    or forward over reverse (``method="fwd", inner="rev"``).  Shape ``x.shape + x.shape``."""
    f = _function(f, "hessian")
    _check_argnums(argnums)
    second = _second_order(method, inner)

    def h(*args: Any) -> Any:
        sig, value = f.select(args)
        if sig.ret != FLOAT:
            raise LabrysError(f"hessian needs a Float result; {show_name(sig.name)} returns {sig.ret}")
        run = second(f, sig)
        columns = [_flat(run(_primal(args), d), sig.arg) for d in _basis(value, sig.arg)]
        return _blocks(np.array(columns).T, args, args, argnums)
    return h


def hvp(f: Function, primals: tuple, tangents: tuple, method: str = "rev", inner: str = "fwd") -> Any:
    """The Hessian of f at primals times tangents, by one run of ``[method [inner f]]``."""
    f = _function(f, "hvp")
    sig, _ = f.select(primals)
    return _shaped_like(_second_order(method, inner)(f, sig)(_primal(primals), _primal(tangents)), _primal(primals))


def _second_order(method: str, inner: str) -> Callable:
    """(f, sig) -> (x, v) -> H(x) v, by ``[method [inner f]]``: forward over reverse
    differentiates the gradient in direction v; reverse over forward pulls the
    directional derivative <∇f(x), v> back to x."""
    outer_dir = _method(method, (FORWARD, REVERSE), "hessian").convention.direction
    inner_dir = _method(inner, (FORWARD, REVERSE), "hessian").convention.direction
    if outer_dir == inner_dir:
        raise LabrysError(f"hessian and hvp take a forward method over a reverse one or the other way round, "
                          f"not {method} over {inner}")

    def make(f: Function, sig) -> Callable[[Any, Any], Any]:
        inner_sig = f.module.checked.functions.by_name(DerivedName(inner, sig.name))
        if inner_sig is None:
            raise LabrysError(f"no [{inner} {show_name(sig.name)}] to differentiate again")
        derived = Derivative(f.module, method, inner_sig)
        tangent = REGISTRY.get(method).convention.tangent
        if outer_dir == FORWARD:  # the seed 1.0 of [rev f] is held fixed: its tangent is 0.0
            return lambda x, v: tangent(derived((x, 1.0), (v, 0.0)))
        return lambda x, v: derived((x, v), 1.0)[0]
    return make


# --- helpers -----------------------------------------------------------------------------

def _jacobian(f: Function, argnums: Argnums, method: str, direction: str) -> Callable[..., Any]:
    f = _function(f, "jacrev" if direction == REVERSE else "jacfwd")
    _check_argnums(argnums)
    entry = _method(method, (direction,), "jacrev" if direction == REVERSE else "jacfwd")

    def jac(*args: Any) -> Any:
        sig, value = f.select(args)
        out = f(*args)
        out_value = from_python(out, sig.ret)
        derived = Derivative(f.module, method, sig)
        if direction == REVERSE:
            rows = [_flat(derived(_primal(args), d), sig.arg) for d in _basis(out_value, sig.ret)]
            flat = np.array(rows).reshape(len(rows), count_reals(value, sig.arg))
        else:
            columns = [_flat(entry.convention.tangent(derived(_primal(args), d)), sig.ret)
                       for d in _basis(value, sig.arg)]
            flat = np.array(columns).reshape(len(columns), count_reals(out_value, sig.ret)).T
        return _blocks(flat, (out,), args, argnums)
    return jac


def _basis(value: Any, t: Type) -> list[Any]:
    """One-hot tangents of ``value : t``, one per real, as Python values."""
    n = count_reals(value, t)
    return [to_python(cotangent_like(e, value, t)) for e in np.eye(n)]


def _flat(v: Any, t: Type) -> np.ndarray:
    """The reals of a tangent value of ``dT(t)``, in order."""
    out: list[float] = []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        elif isinstance(x, np.ndarray) and x.dtype == object:
            stack.extend(reversed(list(x)))
        elif isinstance(x, np.ndarray):
            out.extend(x.ravel().tolist())
        elif isinstance(x, float | int) and not isinstance(x, bool):
            out.append(float(x))
    return np.array(out)


def _shape(x: Any) -> tuple[int, ...] | None:
    """The array shape of a Python value made of reals (None: not an array of reals)."""
    if isinstance(x, float | int) and not isinstance(x, bool):
        return ()
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return None
    return a.shape


def _blocks(flat: np.ndarray, rows_like: tuple, cols_like: tuple, argnums: Argnums) -> Any:
    """A flat matrix (reals of ``rows_like`` × reals of ``cols_like``) as blocks shaped
    ``row.shape + col.shape``: one per argument, or rows × arguments for a Hessian of
    several arguments; the flat matrix itself when a part is not an array of reals."""
    row_shapes, col_shapes = [_shape(r) for r in rows_like], [_shape(c) for c in cols_like]
    if any(s is None for s in row_shapes + col_shapes):
        return flat
    def cuts(shapes):
        ends = np.cumsum([int(np.prod(s)) for s in shapes])
        return list(zip([0, *ends[:-1]], ends))
    def block(r0, r1, c0, c1, shape):
        b = flat[r0:r1, c0:c1].reshape(shape)
        return float(b) if b.ndim == 0 else b
    grid = [tuple(block(r0, r1, c0, c1, rs + cs) for (c0, c1), cs in zip(cuts(col_shapes), col_shapes))
            for (r0, r1), rs in zip(cuts(row_shapes), row_shapes)]
    picked = [_select(row if len(cols_like) > 1 else row[0], argnums, len(cols_like)) for row in grid]
    if len(rows_like) == 1:
        return picked[0]
    return _select(tuple(picked), argnums, len(rows_like))


def _check_argnums(argnums: Any) -> None:
    ok = argnums is None or isinstance(argnums, int) or \
        isinstance(argnums, (tuple, list)) and all(isinstance(k, int) for k in argnums)
    if not ok:
        raise LabrysError(f"argnums takes an int, a tuple of ints or None, not {argnums!r} "
                          "(the derivation is method=..., e.g. grad(f, method='deltarev'))")


def _active(entry: Derivation, sig, argnums: Argnums, n_args: int) -> tuple[tuple[str, ...], list[int]] | None:
    """(wrt, argument positions) when ``argnums`` can be a derivative with respect to those
    parameters only (a derivation that takes wrt, a def called with one value per parameter)."""
    if argnums is None or not entry.activity or not isinstance(sig.decl, ir.Def):
        return None
    params = sig.decl.params
    if n_args != len(params) or n_args < 2:
        return None
    ks = [argnums] if isinstance(argnums, int) else list(argnums)
    if not ks or any(not -n_args <= k < n_args for k in ks):
        return None  # _select reports it
    ks = [k % n_args for k in ks]
    if len(set(ks)) != len(ks):
        return None
    return tuple(params[k].name for k in ks), ks


def _arity(sig) -> int:
    return len(sig.arg.elems) if isinstance(sig.arg, TTuple) and len(sig.arg.elems) != 1 else 1


def _select(g: Any, argnums: Argnums, n_args: int) -> Any:
    if argnums is None:
        return g
    parts = g if n_args > 1 else (g,)
    for k in [argnums] if isinstance(argnums, int) else argnums:
        if not -n_args <= k < n_args:
            raise LabrysError(f"argnums {argnums}: the function takes {n_args} argument(s)")
    return parts[argnums] if isinstance(argnums, int) else tuple(parts[k] for k in argnums)


def _shaped_like(g: Any, like: Any) -> Any:
    """``g`` in the form of the argument the user gave: a 2-D array stays one."""
    if isinstance(like, tuple) and isinstance(g, tuple):
        return tuple(_shaped_like(a, b) for a, b in zip(g, like))
    if isinstance(like, np.ndarray) and like.dtype != object and isinstance(g, list):
        return np.array(g, dtype=float).reshape(like.shape)
    return g


def _first(tangent: Any, has_aux: bool) -> Any:
    return tangent[0] if has_aux else tangent


def _function(f: Any, what: str) -> Function:
    if not isinstance(f, Function):
        raise LabrysError(f"{what} takes a labrys function (module.f, or module['[f T]']), "
                          f"not {type(f).__name__} {repr(f)[:60]}")
    return f


def _method(method: str, directions: tuple[str, ...], what: str) -> Derivation:
    entry = REGISTRY.get(method)
    if entry.convention.direction not in directions:
        fits = [n for d in directions for n in REGISTRY.names(d)]
        raise LabrysError(f"{what} cannot use '{method}': [{method} f] is called {entry.convention.shape}; "
                          f"methods that fit: {', '.join(fits)}")
    return entry


def _call(d: Derivative, primal: Any) -> Any:
    """``d(primal, 1.0)``, straight into its compiled entry once there is one (Note [Cached gradient dispatch])."""
    fast = getattr(d._code, "fast", None)
    if fast is not None:
        out = fast((primal, 1.0))
        if out is not SLOW:
            return out
    return d(primal, 1.0)


def _primal(args: tuple) -> Any:
    return args[0] if len(args) == 1 else tuple(args)
