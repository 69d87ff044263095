"""``labrys verify``: check every derivation against central finite
differences, against each other (dot-product test) and across algorithms.

Every implemented derivation of the registry (:mod:`labrys.ad.registry`) whose
calling convention is forward-like or reverse-like is checked on every
function that accepts it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .ad import REGISTRY
from .ad.derivation import Derivation
from .api import Derivative, Function, Module
from .cost import sized_value
from .errors import LabrysError
from .ir import nodes as ir
from .ir.names import DerivedName, TypedName, show_name
from .ir.types import TTuple, Type, has_function
from .types.checker import Signature
from .types.tangent import is_constant_tangent
from .values import Inj, Sparse, to_python


def algorithms() -> list[Derivation]:
    """The derivations verify checks: every implemented forward or reverse one."""
    return [d for d in REGISTRY if d.implemented and not d.internal and d.convention.direction]


def _floats(v: Any) -> list[float]:
    """The Float parts of a (tangent) value, flattened in a fixed order."""
    if isinstance(v, (bool, int, str)):
        return []
    if isinstance(v, float):
        return [v]
    if isinstance(v, tuple):
        return [x for e in v for x in _floats(e)]
    if isinstance(v, Inj):
        return _floats(v.value)
    if isinstance(v, np.ndarray) and v.dtype != object:
        return [float(x) for x in v.ravel()]
    return [x for e in (v.ravel() if isinstance(v, np.ndarray) else v) for x in _floats(e)]


def random_value(t: Type, rng: np.random.Generator, tangent: bool = False) -> Any:
    """A random value of type t with small sizes (vectors of 3, Integers in 0..3)."""
    return sized_value(t, 3, rng, tangent, random_integers=True)


def _axpy(x: Any, h: float, d: Any) -> Any:
    """x + h·d for a primal x and a tangent d (Integer parts unchanged)."""
    if isinstance(x, float):
        return x + h * d
    if isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, tuple):
        return tuple(_axpy(a, h, b) for a, b in zip(x, d))
    if isinstance(x, np.ndarray) and x.dtype != object:
        return x + h * np.asarray(d)
    if isinstance(x, Inj):
        return Inj(x.left, _axpy(x.value, h, d.value))
    return [_axpy(a, h, b) for a, b in zip(x, d)]


def _tangent_like(v: Any, rng: np.random.Generator) -> Any:
    """A random tangent shaped like the value v (sizes and sum alternatives taken from v)."""
    if isinstance(v, Sparse):
        v = v.dense()
    if isinstance(v, (bool, int, str)):
        return ()
    if isinstance(v, float):
        return float(rng.uniform(-1, 1))
    if isinstance(v, tuple):
        return tuple(_tangent_like(x, rng) for x in v)
    if isinstance(v, Inj):
        return Inj(v.left, _tangent_like(v.value, rng))
    if isinstance(v, np.ndarray) and v.dtype != object:
        return rng.uniform(-1, 1, v.shape)
    if isinstance(v, np.ndarray):
        out = np.empty(v.shape, dtype=object)
        for idx in np.ndindex(v.shape):
            out[idx] = _tangent_like(v[idx], rng)
        return out
    return [_tangent_like(x, rng) for x in v]


@dataclass
class Cell:
    ok: bool | None           # None: unsupported
    error: float = 0.0        # max relative error seen
    detail: str = ""

    def text(self) -> str:
        if self.ok is None:
            return f"unsupported: {self.detail}"
        return f"✓ {self.error:.1e}" if self.ok else f"✗ {self.detail}"


@dataclass
class Row:
    function: str
    cells: dict[str, Cell] = field(default_factory=dict)


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-3)


def check_function(module: Module, sig: Signature, trials: int = 3, tol: float = 1e-5,
                   seed: int = 0) -> Row:
    """Every registered algorithm on one function, at ``trials`` random points."""
    row = Row(show_name(sig.name))
    rng = np.random.default_rng(seed)
    f = module.function(sig.name)[sig.arg]
    derived: dict[str, Callable] = {}
    for alg in algorithms():
        try:
            derived[alg.name] = _derived(module, alg.name, sig)
        except LabrysError as exc:
            row.cells[alg.name] = Cell(None, detail=_where(exc))
    for _ in range(trials):
        try:
            if has_function(sig.ret):
                raise LabrysError(f"a function-typed result ({sig.ret}) has no finite differences")
            x = random_value(sig.arg, rng)
        except LabrysError as exc:
            for alg in algorithms():
                row.cells[alg.name] = Cell(None, detail=str(exc.message))
            return row
        dx = _tangent_like(x, rng)
        try:
            dy = _tangent_like(f(x), rng)
            h = 1e-6
            fd = [(a - b) / (2 * h) for a, b in zip(_floats(f(_axpy(x, h, dx))), _floats(f(_axpy(x, -h, dx))))]
        except LabrysError:
            continue  # the function is not defined around this point
        fd_dot = float(np.dot(fd, _floats(dy))) if fd else 0.0
        results: dict[str, list[float]] = {}
        for alg in algorithms():
            if alg.name not in derived or row.cells.get(alg.name, Cell(True)).ok is False:
                continue
            cell = row.cells.setdefault(alg.name, Cell(True))
            try:
                if alg.convention.direction == "forward":
                    out = _floats(alg.convention.tangent(derived[alg.name](x, dx)))
                    err = max((_rel(a, b) for a, b in zip(out, fd)), default=0.0)
                    results[alg.name] = [float(np.dot(out, _floats(dy)))]
                else:
                    out = _floats(derived[alg.name](x, dy))
                    err = _rel(float(np.dot(out, _floats(dx))), fd_dot)
                    results[alg.name] = [float(np.dot(out, _floats(dx)))]
            except LabrysError as exc:
                row.cells[alg.name] = Cell(False, detail=_where(exc))
                continue
            cell.error = max(cell.error, err)
            if err > tol:
                cell.ok, cell.detail = False, f"{err:.1e} at x = {_short(x)}"
        _agreement(row, results, x)
    return row


def _agreement(row: Row, results: dict[str, list[float]], x: Any, tol: float = 1e-8) -> None:
    """Every pair of algorithms gives the same <dy, J dx> (for a forward and a
    reverse derivation this is the dot-product test <rev(x,dy),dx> = <dy,fwd(x,dx)>)."""
    names = sorted(results)
    cell = row.cells.setdefault("agree", Cell(True))
    for a in names:
        for b in names:
            if a < b:
                err = _rel(results[a][0], results[b][0]) if max(abs(results[a][0]), abs(results[b][0])) > 1e-300 \
                    else 0.0
                cell.error = max(cell.error, err)
                if err > tol and cell.ok:
                    cell.ok, cell.detail = False, f"{a} vs {b}: {err:.1e} at x = {_short(x)}"


def _derived(module: Module, derivation: str, sig: Signature) -> Callable:
    """[derivation f] as the program resolves it: a hand-written one if the user
    wrote it, else generated now (so an unsupported construct is reported here)."""
    name = DerivedName(derivation, TypedName(sig.name, sig.arg) if isinstance(sig.name, str) else sig.name)
    written = [s for s in module.checked.functions.candidates(name) if isinstance(s.decl, ir.Def)
               and isinstance(s.arg, TTuple) and s.arg.elems and s.arg.elems[0] == sig.arg]  # this overload's
    if not written:
        return Derivative(module, derivation, sig)
    fn = Function(module, written[0].name, written)
    return lambda *args: fn(args[0] if len(args) == 1 else tuple(args))


def _where(exc: LabrysError) -> str:
    where = f" at {exc.span!r}" if exc.span is not None else ""
    return exc.message.split(" does not support ")[-1] + where


def _short(x: Any) -> str:
    return repr(to_python(x) if not isinstance(x, list) else x)[:60]


def verify(module: Module, name: str | None = None, progress: Callable[[str], None] = lambda text: None,
           **options: Any) -> list[Row]:
    """One row per function (or for ``name``) whose input and output hold Floats."""
    rows = []
    for d in module.program.decls:
        if not isinstance(d, ir.Def) or (name is not None and show_name(d.name) != name):
            continue
        if is_constant_tangent(d.arg_type) or is_constant_tangent(d.ret):
            continue
        progress(show_name(d.name))
        sig = module.checked.functions.resolve(d.name, d.arg_type)
        rows.append(check_function(module, sig, **options))
    if name is not None and not rows:
        raise LabrysError(f"no differentiable function named {name} (its argument and result need Floats)")
    return rows

