"""``grad``, ``jvp`` and ``vjp`` of labrys functions, by any registered derivation
whose calling convention fits (:class:`labrys.ad.derivation.Convention`).

A reverse method (``rev``, ``deltarev`` …) gives a gradient in one call.  A
forward method (``fwd``, ``fwdt``, ``dualfwd`` …) gives one directional
derivative per call, so its gradient is assembled from one call per real of
the argument (a column of the Jacobian each).  A method of another kind
(``D``, a translation) is refused, naming the methods that fit.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ad import REGISTRY
from .ad.derivation import Derivation
from .ad.dual_io import cotangent_like, count_reals
from .api import Derivative, Function
from .errors import LabrysError
from .ir.names import show_name
from .ir.types import FLOAT
from .values import to_python

FORWARD, REVERSE = "forward", "reverse"


def grad(f: Function, method: str = "rev") -> Callable[..., Any]:
    """The gradient of a Float-valued labrys function: ``grad(m.f)(x, y)``."""
    f = _function(f, "grad")
    entry = _method(method, (REVERSE, FORWARD), "grad")

    def gradient(*args: Any) -> Any:
        sig, value = f.select(args)
        if sig.ret != FLOAT:
            raise LabrysError(f"grad needs a Float result; {show_name(sig.name)} returns {sig.ret} (use vjp)")
        derived = Derivative(f.module, method, sig)
        if entry.convention.direction == REVERSE:
            return derived(_primal(args), 1.0)
        basis = np.eye(count_reals(value, sig.arg))
        columns = [entry.convention.tangent(derived(_primal(args), to_python(cotangent_like(e, value, sig.arg))))
                   for e in basis]
        return to_python(cotangent_like(np.array(columns, dtype=float), value, sig.arg))
    return gradient


def jvp(f: Function, primals: tuple, tangents: tuple, method: str = "fwd") -> tuple[Any, Any]:
    """(f(primals), the derivative of f at primals applied to tangents)."""
    f = _function(f, "jvp")
    entry = _method(method, (FORWARD,), "jvp")
    sig, _ = f.select(primals)
    out = Derivative(f.module, method, sig)(_primal(primals), _primal(tangents))
    return f(*primals), entry.convention.tangent(out)


def vjp(f: Function, *primals: Any, method: str = "rev") -> tuple[Any, Callable[[Any], Any]]:
    """(f(primals), the pullback: a cotangent of the result to one of the arguments)."""
    f = _function(f, "vjp")
    _method(method, (REVERSE,), "vjp")
    sig, _ = f.select(primals)
    back = Derivative(f.module, method, sig)
    return f(*primals), lambda ct: back(_primal(primals), ct)


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


def _primal(args: tuple) -> Any:
    return args[0] if len(args) == 1 else tuple(args)
