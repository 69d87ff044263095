"""Hypothesis strategies for random, well-typed `.ks` programs.

The generator is *type-directed*: :meth:`_Gen.gen` produces an expression of
a requested type in a typed environment, choosing among the productions that
can make that type.  Every program it makes type-checks, and runs to a value
without run-time errors and without overflow, on the inputs :func:`values`
makes.  This module is meant to be reused by the property tests of every AD
algorithm, so what it guarantees is spelled out here.

Generated IR is in the form the parser produces, so ``parse(print(p)) == p``;
in particular a call of a local function variable ``(g x)`` is whatever the
parser makes of it (see :func:`local_call`).  ``labrys.check_program`` gives
the typed form.

Public API
----------
``programs(features=ALL_FEATURES, *, result="float", max_defs=3, max_depth=4, exclude=())``
    Strategy for :class:`GenProgram` ``(program, entry, args)``: an
    ``ir.Program`` of 1-3 ``def``s (each may call the earlier ones; the last
    one, ``entry``, is the function to test) and a tuple of Python argument
    values, one per parameter of ``entry``, ready for
    ``labrys.load(text).function(entry)(*args)``.
``text_programs(...)``
    The same, with the program printed by :func:`labrys.show_program`:
    ``(text, entry, args)``.
``exprs(t=FLOAT, env=None, *, features, depth=3, exclude=(), bound=..., nonempty=())``
    Strategy for one expression of type ``t`` whose free variables are among
    ``env`` (``{name: Type}``), with no calls of user functions.
``values(t)`` / ``env_values(env)``
    Strategies for argument values: Floats in [-2, 2], Integers in [0, 5],
    Bools, ``Vec Float`` of length 1-4 (Python lists), tuples of those.
``tangent_values(t, like)``
    Tangents / cotangents shaped like the value ``like`` of type ``t`` (for AD tests).
``local_call(g, arg)``
    The IR of ``(g arg)`` for a local function variable ``g``.
``value_has_type(v, t)``, ``all_finite(v)``
    Checks on what a labrys function returned.

Features (``features`` is a set or a comma-separated string; "core" is
always on):

- ``core``: constants, variables, ``let`` (also tuple patterns, shadowing),
  ``if`` with comparisons and ``and``/``or``/``not``, ``tuple``/``get$i$n``,
  ``assert`` (of conditions that hold), arithmetic, ``exp log sqrt pow sin
  cos tan tanh sinh cosh erf lgamma abs max min to_float bool_to_float pi``
  in safe domains (``(log (add 1.0 (mul a a)))``, ``(div a (add 2.0 (mul y
  y)))``, ``(exp a)`` with ``a`` bounded, ...), calls of earlier ``def``s.
- ``vectors``: ``Vec Float`` values; ``build``, ``sumbuild``, ``index`` (only
  in-range: an index bound by a ``build``/``sumbuild`` over ``(size w)`` of a
  vector of the same size class, or ``(min (abs e) (sub (size w) 1))`` for a
  vector known to be non-empty), ``size``, ``sum``, ``constVec``, ``map``,
  ``fold``, elementwise ``add``/``sub``/``mul`` of vectors of equal size,
  scaling, ``max``/``imax`` of non-empty vectors.
- ``closures``: ``Lam`` types; ``lam`` (capturing locals), let-bound lambdas,
  application of local function variables, ``(fn f)`` of earlier defs,
  functions as arguments, results and tuple components, ``map`` with a
  function variable.
- ``sums``: ``Sum`` types; ``inl``/``inr``/``case``.
- ``recursion``: one helper is recursive,
  ``(def f R ((n : Integer) ...) (if (lte n 0) BASE (let (r (f (sub n 1) ...)) STEP)))``,
  with at most one more self-call in STEP (never under a lambda or a loop),
  called with a counter in [0, 4]; the entry always calls it.

``exclude`` removes productions by name: a primitive name (``"abs"``,
``"if"``, ``"max"``...) or a construct (``"let"``, ``"let_tuple"``, ``"if"``,
``"assert"``, ``"case"``, ``"app"``, ``"call"``, ``"get"``, ``"fold"``,
``"map"``, ``"build"``, ``"sumbuild"``, ``"index"``, ``"shadow"`` (no
shadowing)...).  ``NONSMOOTH`` is the set to exclude for programs that are
differentiable everywhere (no kinks, no branches).

How values stay finite
~~~~~~~~~~~~~~~~~~~~~~
Each request carries an upper bound ``m`` on the magnitude of every number in
the value to produce (for a ``Lam``, of its results, given arguments bounded
by ``ARG_BOUND``); each production returns the bound it achieved, so ``(add a
b)`` asks for ``a`` within ``alpha*m`` and for ``b`` within what is left,
``(exp a)`` asks for ``a`` within ``log m``, and so on.  Variables carry the
bound of what they were bound to.  Vectors have at most 4 elements
(``MAX_LEN``).  Vector sizes are tracked by *size classes*, so elementwise
operations only combine vectors of equal length and indices are in range.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple

import numpy as np
from hypothesis import strategies as st

from labrys import show_program
from labrys.ir import nodes as ir
from labrys.ir.types import BOOL, FLOAT, INTEGER, TLam, TSum, TTensor, TTuple, Type

__all__ = [
    "ALL_FEATURES", "NONSMOOTH", "VEC", "GenProgram", "programs", "text_programs", "exprs", "values",
    "env_values", "tangent_values", "local_call", "value_has_type", "all_finite", "entry_def", "parse_features",
]

VEC = TTensor(1, FLOAT)
ALL_FEATURES = frozenset({"core", "vectors", "closures", "sums", "recursion"})
#: Exclude these for programs that are smooth everywhere (no kinks, no branches).
NONSMOOTH = frozenset({"abs", "max", "min", "if", "case", "imax", "lt", "gt", "lte", "gte", "bool_to_float"})

ARG_BOUND = 10.0       # |numbers| in arguments of helpers and lambdas
RESULT_BOUND = 100.0   # |numbers| in results of helpers
ENTRY_BOUND = 1000.0   # |numbers| in the result of the entry function
ANY = 1000.0           # operands whose size does not matter (sin's argument, comparisons)
MAX_LEN = 4            # longest vector
ENTRY_FLOAT, ENTRY_INT = 2.0, 5   # entry arguments: Floats in [-2, 2], Integers in [0, 5]
_LGAMMA_MIN = 0.1216   # -min lgamma(x) over x >= 1


# --- bookkeeping ------------------------------------------------------------


@dataclass(frozen=True)
class SizeClass:
    """Vectors of one class have the same length at run time.

    ``lit`` is set for classes of a literal length; ``nonempty`` means the
    length is known to be at least 1.
    """

    key: tuple
    nonempty: bool
    lit: int | None = None


def _lit_class(k: int) -> SizeClass:
    return SizeClass(("lit", k), k > 0, k)


@dataclass(frozen=True)
class VarInfo:
    type: Type
    bound: float                   # magnitude bound of the numbers in the value
    cls: SizeClass | None = None   # Vec Float variables: their size class
    idx: SizeClass | None = None   # Integer variables: a valid index for vectors of this class


class Info(NamedTuple):
    bound: float
    cls: SizeClass | None = None


Env = dict[str, VarInfo]


@dataclass
class _DefInfo:
    name: str
    params: tuple[tuple[str, Type], ...]
    ret: Type
    bound: float
    recursive: bool = False  # then the first parameter is the counter

    @property
    def arg_type(self) -> Type:
        ts = tuple(t for _, t in self.params)
        return ts[0] if len(ts) == 1 else TTuple(ts)


def _F(x: float) -> ir.Const:
    return ir.const(float(x))


def _I(k: int) -> ir.Const:
    return ir.const(int(k))


def _call(f: str, *args: ir.Expr) -> ir.Call:
    return ir.call(f, *args)


def _parser_makes_app() -> bool:
    """Does the parser read ``(g x)``, for a local function ``g``, as an ``App``?

    (Otherwise it makes a ``Call`` and the type checker turns it into an ``App``.)"""
    from labrys import parse_expr

    return isinstance(parse_expr("(let (g (lam (x : Float) x)) (g 1.0))").body, ir.App)


_LOCAL_CALL_IS_APP = _parser_makes_app()


def local_call(f: str, arg: ir.Expr) -> ir.Expr:
    """``(f arg)`` for a local function variable ``f``, as the parser represents it."""
    return ir.App(ir.Var(f), arg) if _LOCAL_CALL_IS_APP else ir.Call(f, arg)


def _is_first_order(t: Type) -> bool:
    match t:
        case TLam():
            return False
        case TTuple(elems):
            return all(map(_is_first_order, elems))
        case TSum(a, b):
            return _is_first_order(a) and _is_first_order(b)
    return True


def _inverse(f: Callable[[float], float], m: float, hi: float = ANY) -> float:
    """The largest c in [0, hi] with f(c) <= m (f increasing), by bisection."""
    if f(hi) <= m:
        return hi
    lo = 0.0
    if f(lo) > m:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) <= m else (lo, mid)
    return lo


def parse_features(features: str | Iterable[str]) -> frozenset[str]:
    fs = {f.strip() for f in features.split(",")} if isinstance(features, str) else set(features)
    fs.discard("")
    unknown = fs - ALL_FEATURES
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; choose from {sorted(ALL_FEATURES)}")
    return frozenset(fs | {"core"})


_NICE_FLOATS = (0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.5, 0.25, -0.75)

Option = tuple[str, int, Callable[[], tuple[ir.Expr, Info]]]


# --- the generator ----------------------------------------------------------


class _Gen:
    """One program's worth of generation state; ``draw`` is Hypothesis's."""

    def __init__(self, draw: Callable, features: frozenset[str], exclude: frozenset[str]):
        self.draw = draw
        self.features = features
        self.exclude = exclude
        self.defs: list[_DefInfo] = []
        self.taken: set[str] = set()
        self.counter = itertools.count(1)
        self.classes = itertools.count(1)
        self.protected: frozenset[str] = frozenset()
        self.lam_depth = 0                 # > 0 inside lambda bodies: no self-calls there
        self.rec: _DefInfo | None = None   # the recursive def being generated
        self.rec_budget = 0                # self-calls still allowed in its body

    def has(self, feature: str) -> bool:
        return feature in self.features

    # --- names, classes, environments -------------------------------------

    def fresh(self, stem: str) -> str:
        while True:
            name = f"{stem}{next(self.counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def new_class(self, nonempty: bool = False) -> SizeClass:
        return SizeClass(("id", next(self.classes)), nonempty)

    def binder(self, env: Env, stem: str, shadow_ok: bool = True, avoid: Iterable[str] = ()) -> str:
        """A fresh name, or sometimes (when allowed) one that shadows a variable in scope."""
        if shadow_ok and "shadow" not in self.exclude:
            avoid = set(avoid)
            cands = sorted(n for n in env if n not in self.protected and n not in avoid)
            if cands and self.draw(st.integers(0, 3)) == 3:
                return self.draw(st.sampled_from(cands))
        return self.fresh(stem)

    def var_info(self, t: Type, info: Info) -> VarInfo:
        cls = None
        if t == VEC:
            cls = info.cls if info.cls is not None else self.new_class()
        return VarInfo(t, info.bound, cls)

    def bind(self, env: Env, name: str, t: Type, info: Info) -> Env:
        return {**env, name: self.var_info(t, info)}

    # --- types --------------------------------------------------------------

    def data_type(self, depth: int = 1, sums: bool = True) -> Type:
        """A first-order type: Float (often), Integer, Bool, Vec Float, Tuple, Sum."""
        choices: list[Any] = [FLOAT, FLOAT, FLOAT, INTEGER, BOOL]
        if self.has("vectors"):
            choices += [VEC, VEC]
        if depth > 0:
            choices += ["tuple"]
            if sums and self.has("sums"):
                choices += ["sum"]
        c = self.draw(st.sampled_from(choices))
        if c == "tuple":
            n = self.draw(st.integers(2, 3))
            return TTuple(tuple(self.data_type(depth - 1, sums) for _ in range(n)))
        if c == "sum":
            return TSum(self.data_type(depth - 1, sums), self.data_type(depth - 1, sums))
        return c

    def lam_type(self) -> TLam:
        return TLam(self.data_type(1, sums=False), self.data_type(1, sums=False))

    def any_type(self) -> Type:
        """A data type or, with closures, sometimes a function type."""
        if self.has("closures") and self.draw(st.integers(0, 3)) == 3:
            if self.draw(st.integers(0, 4)) == 4:
                return TTuple((self.lam_type(), self.data_type(0)))
            return self.lam_type()
        return self.data_type()

    def entry_param_type(self) -> Type:
        base = [FLOAT, FLOAT, FLOAT, INTEGER, BOOL] + ([VEC, VEC] if self.has("vectors") else [])
        c = self.draw(st.sampled_from(base + ["tuple"]))
        if c == "tuple":
            return TTuple(tuple(self.draw(st.sampled_from(base)) for _ in range(self.draw(st.integers(2, 3)))))
        return c

    def result_type(self, result: str | Type) -> Type:
        if isinstance(result, Type):
            return result
        if result == "float":
            return FLOAT
        if result != "any":
            raise ValueError(f"result must be 'float', 'any' or a Type, not {result!r}")
        base = [FLOAT, VEC] if self.has("vectors") else [FLOAT]
        c = self.draw(st.sampled_from(base + ["tuple"]))
        if c == "tuple":
            return TTuple(tuple(self.draw(st.sampled_from(base)) for _ in range(self.draw(st.integers(2, 3)))))
        return c

    # --- the type-directed generator ----------------------------------------

    def gen(self, t: Type, env: Env, depth: int, m: float, cls: SizeClass | None = None) -> tuple[ir.Expr, Info]:
        """An expression of type ``t`` in ``env`` with numbers bounded by ``m``;
        for ``t == VEC`` and ``cls`` given, a vector of that size class."""
        m = max(0.0, min(m, 1e6))
        leaves: list[Option] = []
        inner: list[Option] = []
        essential: list[Option] = []
        self.generic_options(t, env, depth, m, cls, leaves, inner)
        if t == FLOAT:
            self.float_options(env, depth, m, leaves, inner, essential)
        elif t == INTEGER:
            self.int_options(env, depth, m, leaves, inner, essential)
        elif t == BOOL:
            self.bool_options(env, depth, m, leaves, inner, essential)
        elif t == VEC:
            self.vec_options(env, depth, m, cls, leaves, inner, essential)
        elif isinstance(t, TTuple):
            self.tuple_options(t, env, depth, m, leaves, inner, essential)
        elif isinstance(t, TSum):
            self.sum_options(t, env, depth, m, leaves, inner, essential)
        elif isinstance(t, TLam):
            self.lam_options(t, env, depth, m, leaves, inner, essential)
        else:
            raise TypeError(f"cannot generate a value of type {t}")
        opts = [o for o in (leaves + (inner if depth > 0 else [])) if o[0] not in self.exclude]
        if not opts:
            opts = essential
        assert opts, f"generator bug: nothing can make {t} (class {cls}) in {sorted(env)}"
        index = [k for k, o in enumerate(opts) for _ in range(o[1])]
        name, _, make = opts[self.draw(st.sampled_from(index))]
        return make()

    # --- productions for every type -----------------------------------------

    def generic_options(self, t: Type, env: Env, depth: int, m: float, cls: SizeClass | None,
                        leaves: list[Option], inner: list[Option]) -> None:
        d = depth - 1
        known_cls = cls is not None  # a vector of a given size class: only size-preserving forms
        names = [n for n, vi in env.items() if vi.type == t and vi.bound <= m and (cls is None or vi.cls == cls)]
        if names:
            leaves.append(("var", 8, lambda: self.var(env, names)))
        if not known_cls:
            gets = [(n, k) for n, vi in sorted(env.items()) if isinstance(vi.type, TTuple) and vi.bound <= m
                    for k, c in enumerate(vi.type.elems) if c == t]
            if gets:
                leaves.append(("get", 2, lambda: self.get_var(env, gets)))
        inner.append(("let", 3, lambda: self.let(t, env, d, m, cls)))
        inner.append(("let_tuple", 1, lambda: self.let_tuple(t, env, d, m, cls)))
        inner.append(("if", 2, lambda: self.if_(t, env, d, m, cls)))
        inner.append(("assert", 1, lambda: self.assert_(t, env, d, m, cls)))
        if self.has("sums"):
            inner.append(("case", 2, lambda: self.case(t, env, d, m, cls)))
        if known_cls:
            return
        if self.has("closures"):
            fs = [n for n, vi in sorted(env.items())
                  if isinstance(vi.type, TLam) and vi.type.res == t and vi.bound <= m]
            if fs:
                inner.append(("app", 10, lambda: self.app(env, d, fs)))
            inner.append(("let_lam", 2, lambda: self.let_lam(t, env, d, m)))
            refs = [f for f in self.defs if not f.recursive and _is_first_order(f.arg_type)
                    and _is_first_order(f.ret)]
            if refs:
                inner.append(("fn", 2, lambda: self.let_fn(t, env, d, m, refs)))
        callees = [f for f in self.defs if f.ret == t and f.bound <= m]
        if callees:
            inner.append(("call", 6, lambda: self.call_def(env, d, callees)))
        if (self.rec is not None and self.rec_budget > 0 and self.lam_depth == 0
                and self.rec.ret == t and self.rec.bound <= m):
            inner.append(("selfcall", 4, lambda: self.self_call(env, d)))
        inner.append(("get", 1, lambda: self.get_expr(t, env, d, m)))
        if self.has("vectors") and _is_first_order(t):
            inner.append(("fold", 1, lambda: self.fold(t, env, d, m)))

    def var(self, env: Env, names: list[str]) -> tuple[ir.Expr, Info]:
        n = self.draw(st.sampled_from(names))
        vi = env[n]
        return ir.Var(n), Info(vi.bound, vi.cls)

    def get_var(self, env: Env, gets: list[tuple[str, int]]) -> tuple[ir.Expr, Info]:
        n, k = self.draw(st.sampled_from(gets))
        vi = env[n]
        return ir.Get(k + 1, len(vi.type.elems), ir.Var(n)), Info(vi.bound)

    def get_expr(self, t: Type, env: Env, d: int, m: float) -> tuple[ir.Expr, Info]:
        n = self.draw(st.integers(2, 3))
        k = self.draw(st.integers(0, n - 1))
        elems = [self.data_type(0) for _ in range(n)]
        elems[k] = t
        tt = TTuple(tuple(elems))
        e, info = self.gen(tt, env, d, m)
        return ir.Get(k + 1, n, e), Info(info.bound)

    def let(self, t: Type, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        rt = self.any_type()
        rhs, ri = self.gen(rt, env, d, m if rt in (FLOAT, VEC) else ARG_BOUND * 10)
        x = self.binder(env, "x", shadow_ok=cls is None)
        body, bi = self.gen(t, self.bind(env, x, rt, ri), d, m, cls)
        return ir.Let(x, rhs, body), bi

    def let_tuple(self, t: Type, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        n = self.draw(st.integers(2, 3))
        rt = TTuple(tuple(self.any_type() if self.draw(st.booleans()) else self.data_type(0) for _ in range(n)))
        rhs, ri = self.gen(rt, env, d, m)
        names: list[str] = []
        inner = dict(env)
        for et in rt.elems:
            x = self.binder(env, "x", shadow_ok=cls is None, avoid=names)
            names.append(x)
            inner[x] = self.var_info(et, Info(ri.bound))
        body, bi = self.gen(t, inner, d, m, cls)
        return ir.Let(tuple(names), rhs, body), bi

    def cond(self, env: Env, d: int) -> ir.Expr:
        return self.gen(BOOL, env, d, ANY)[0]

    def if_(self, t: Type, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        c = self.cond(env, d)
        a, ia = self.gen(t, env, d, m, cls)
        b, ib = self.gen(t, env, d, m, cls)
        return ir.If(c, a, b), Info(max(ia.bound, ib.bound), ia.cls if ia.cls == ib.cls else None)

    def assert_(self, t: Type, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        """``(assert (gte (add 1.0 (mul a a)) 1.0) body)``: the condition always holds."""
        a, _ = self.gen(FLOAT, env, d - 1, ANY)  # appears twice: keep it small
        c = _call("gte", _call("add", _F(1.0), _call("mul", a, a)), _F(1.0))
        body, bi = self.gen(t, env, d, m, cls)
        return ir.Assert(c, body), bi

    def case(self, t: Type, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        st_ = TSum(self.data_type(0), self.data_type(1))
        if self.draw(st.booleans()):
            st_ = TSum(st_.right, st_.left)
        s, si = self.gen(st_, env, d, ARG_BOUND * 10)
        lv = self.binder(env, "x", shadow_ok=cls is None)
        rv = self.binder(env, "x", shadow_ok=cls is None)
        lb, li = self.gen(t, {**env, lv: self.var_info(st_.left, Info(si.bound))}, d, m, cls)
        rb, ri = self.gen(t, {**env, rv: self.var_info(st_.right, Info(si.bound))}, d, m, cls)
        return ir.Case(s, lv, lb, rv, rb), Info(max(li.bound, ri.bound), li.cls if li.cls == ri.cls else None)

    def let_lam(self, t: Type, env: Env, d: int, m: float) -> tuple[ir.Expr, Info]:
        """``(let (g (lam (x : A) body)) rest)``: a closure over the locals, usually applied in ``rest``."""
        res = t if _is_first_order(t) and self.draw(st.booleans()) else self.data_type(1, sums=False)
        lt = TLam(self.data_type(1, sums=False), res)
        lam, li = self.gen(lt, env, d, m if res in (FLOAT, VEC) else ARG_BOUND * 10)
        g = self.binder(env, "g")
        inner = self.bind(env, g, lt, li)
        if res == t and li.bound <= m and self.draw(st.booleans()):
            rest, ri = self.app(inner, d, [g])
        else:
            rest, ri = self.gen(t, inner, d, m)
        return ir.Let(g, lam, rest), ri

    def let_fn(self, t: Type, env: Env, d: int, m: float, refs: list[_DefInfo]) -> tuple[ir.Expr, Info]:
        """``(let (g (fn f)) rest)`` for an earlier def ``f``."""
        f = self.draw(st.sampled_from(refs))
        lt = TLam(f.arg_type, f.ret)
        g = self.binder(env, "g")
        inner = self.bind(env, g, lt, Info(f.bound))
        if f.ret == t and f.bound <= m and self.draw(st.booleans()):
            rest, ri = self.app(inner, d, [g])
        else:
            rest, ri = self.gen(t, inner, d, m)
        return ir.Let(g, ir.FnRef(f.name), rest), ri

    def app(self, env: Env, d: int, fs: list[str]) -> tuple[ir.Expr, Info]:
        f = self.draw(st.sampled_from(fs))
        vi = env[f]
        arg, _ = self.gen(vi.type.arg, env, d, ARG_BOUND)
        return local_call(f, arg), Info(vi.bound)

    def args_for(self, f: _DefInfo, env: Env, d: int) -> list[ir.Expr]:
        out = []
        for k, (_, pt) in enumerate(f.params):
            if f.recursive and k == 0:
                out.append(self.counter_expr(env, d))
            else:
                out.append(self.gen(pt, env, d, ARG_BOUND)[0])
        return out

    def call_def(self, env: Env, d: int, callees: list[_DefInfo]) -> tuple[ir.Expr, Info]:
        f = self.draw(st.sampled_from(callees))
        return _call(f.name, *self.args_for(f, env, d)), Info(f.bound)

    def counter_expr(self, env: Env, d: int) -> ir.Expr:
        """An Integer in [0, 4]: the counter argument of a recursive function."""
        if d <= 0 or self.draw(st.booleans()):
            return _I(self.draw(st.integers(0, 4)))
        return _call("abs", self.gen(INTEGER, env, d, 4)[0])

    def self_call(self, env: Env, d: int) -> tuple[ir.Expr, Info]:
        f = self.rec
        assert f is not None
        self.rec_budget -= 1
        args = [_call("sub", ir.Var(f.params[0][0]), _I(1))]
        args += [self.gen(pt, env, d, ARG_BOUND)[0] for _, pt in f.params[1:]]
        return _call(f.name, *args), Info(f.bound)

    def fold(self, t: Type, env: Env, d: int, m: float) -> tuple[ir.Expr, Info]:
        """``(fold (lam (p : (Tuple T Float)) body) acc0 v)`` with body bounded like acc0."""
        v, vi = self.gen(VEC, env, d, ARG_BOUND * 10)
        acc0, ai = self.gen(t, env, d, m)
        p = self.binder(env, "a")
        pt = TTuple((t, FLOAT))
        self.lam_depth += 1
        try:
            inner = {**env, p: VarInfo(pt, max(m, vi.bound))}
            if self.draw(st.booleans()):
                a = self.binder(inner, "a", avoid=[p])
                x = self.binder(inner, "x", avoid=[p, a])
                inner2 = {**inner, a: self.var_info(t, Info(m)), x: VarInfo(FLOAT, vi.bound)}
                b, bi = self.gen(t, inner2, d, m)
                body = ir.Let((a, x), ir.Var(p), b)
            else:
                body, bi = self.gen(t, inner, d, m)
        finally:
            self.lam_depth -= 1
        return _call("fold", ir.Lam(p, pt, body), acc0, v), Info(max(ai.bound, bi.bound))

    # --- Float ----------------------------------------------------------------

    def float_const(self, m: float) -> tuple[ir.Expr, Info]:
        c = min(2.0, m)
        if c <= 0:
            return _F(0.0), Info(0.0)
        nice = [x for x in _NICE_FLOATS if abs(x) <= c]
        x = self.draw(st.sampled_from(nice) | st.floats(-c, c, allow_nan=False, allow_infinity=False))
        return _F(x), Info(abs(x))

    def float_options(self, env: Env, depth: int, m: float, leaves: list[Option], inner: list[Option],
                      essential: list[Option]) -> None:
        d = depth - 1
        g = lambda t, mm, e=env: self.gen(t, e, d, min(mm, ANY))  # noqa: E731
        g_sq = lambda t, mm, e=env: self.gen(t, e, d - 1, min(mm, ANY))  # noqa: E731  (squared: appears twice)
        const = ("const", 3, lambda: self.float_const(m))
        leaves.append(const)
        essential.append(const)
        if m >= math.pi:
            inner.append(("pi", 1, lambda: (_call("pi"), Info(math.pi))))

        def unary(name: str, child_max: float, bound: Callable[[float], float],
                  wrap: Callable[[ir.Expr], ir.Expr] | None = None) -> Option:
            def make() -> tuple[ir.Expr, Info]:
                a, ia = (g_sq if wrap is not None else g)(FLOAT, child_max)
                return _call(name, wrap(a) if wrap else a), Info(bound(ia.bound))
            return (name, 1, make)

        inner.append(("add", 4, lambda: self.arith2("add", FLOAT, env, d, m)))
        inner.append(("sub", 3, lambda: self.arith2("sub", FLOAT, env, d, m)))
        inner.append(("mul", 4, lambda: self.arith2("mul", FLOAT, env, d, m)))
        inner.append(unary("neg", m, lambda b: b))
        inner.append(("div", 2, lambda: self.safe_div(env, d, m)))
        if m >= 1:
            for name in ("sin", "cos", "tanh", "erf"):
                inner.append(unary(name, ANY, lambda b: 1.0))
            inner.append(unary("exp", min(math.log(m), 30.0), math.exp))
            inner.append(unary("cosh", min(math.acosh(m), 30.0), math.cosh))
            inner.append(unary("sqrt", math.sqrt(max(m * m - 1, 0.0)), lambda b: math.sqrt(1 + b * b),
                               lambda a: _call("add", _F(1.0), _call("mul", a, a))))
            inner.append(("bool_to_float", 1, lambda: (_call("bool_to_float", self.cond(env, d)), Info(1.0))))
            inner.append(("pow", 1, lambda: self.pow_(env, d, m)))
        if m >= 1.56:
            inner.append(unary("tan", ANY, lambda b: math.tan(1.0), lambda a: _call("tanh", a)))
        if m > 0:
            inner.append(unary("sinh", min(math.asinh(m), 30.0), lambda b: math.sinh(b)))
            inner.append(unary("log", _inverse(lambda c: math.log1p(c * c), m), lambda b: math.log1p(b * b),
                               lambda a: _call("add", _F(1.0), _call("mul", a, a))))
        if m >= _LGAMMA_MIN:
            lg = lambda c: max(_LGAMMA_MIN, math.lgamma(1 + c * c))  # noqa: E731
            inner.append(unary("lgamma", _inverse(lg, m), lg, lambda a: _call("add", _F(1.0), _call("mul", a, a))))
        inner.append(unary("abs", m, lambda b: b))
        inner.append(("max", 1, lambda: self.arith2("max", FLOAT, env, d, m)))
        inner.append(("min", 1, lambda: self.arith2("min", FLOAT, env, d, m)))
        inner.append(("to_float", 1, lambda: self.wrap1("to_float", g(INTEGER, m))))
        if self.has("vectors"):
            self.vector_consumers(FLOAT, env, depth, m, leaves, inner)

    def wrap1(self, name: str, ei: tuple[ir.Expr, Info]) -> tuple[ir.Expr, Info]:
        return _call(name, ei[0]), Info(ei[1].bound)

    def arith2(self, op: str, t: Type, env: Env, d: int, m: float,
               cls: SizeClass | None = None) -> tuple[ir.Expr, Info]:
        """``add sub mul max min`` with the bound shared out between the operands."""
        if op == "mul":
            beta = self.draw(st.sampled_from([0.5, 0.25, 0.75, 1.0]))
            a, ia = self.gen(t, env, d, m ** beta, cls)
            b, ib = self.gen(t, env, d, m / ia.bound if ia.bound > 0 else ANY, cls)
            bound = ia.bound * ib.bound
        elif op in ("add", "sub"):
            alpha = self.draw(st.sampled_from([0.5, 0.25, 0.75, 1.0]))
            a, ia = self.gen(t, env, d, m * alpha, cls)
            b, ib = self.gen(t, env, d, m - ia.bound, cls)
            bound = ia.bound + ib.bound
        else:  # max, min
            a, ia = self.gen(t, env, d, m, cls)
            b, ib = self.gen(t, env, d, m, cls)
            bound = max(ia.bound, ib.bound)
        if self.draw(st.booleans()):
            a, b = b, a
        return _call(op, a, b), Info(bound, cls)

    def safe_div(self, env: Env, d: int, m: float) -> tuple[ir.Expr, Info]:
        """``(div a (add 2.0 (mul y y)))``."""
        a, ia = self.gen(FLOAT, env, d, min(2 * m, ANY))
        y, _ = self.gen(FLOAT, env, d - 1, ANY)  # appears twice: keep it small
        return _call("div", a, _call("add", _F(2.0), _call("mul", y, y))), Info(ia.bound / 2)

    def pow_(self, env: Env, d: int, m: float) -> tuple[ir.Expr, Info]:
        k = self.draw(st.integers(0, 3))
        if k == 0:
            a, _ = self.gen(FLOAT, env, d, ANY)
            return _call("pow", a, _I(0)), Info(1.0)
        a, ia = self.gen(FLOAT, env, d, min(m ** (1 / k), ANY))
        return _call("pow", a, _I(k)), Info(ia.bound ** k)

    # --- consumers of vectors (results of type Float or Integer) --------------

    def vec_vars(self, env: Env, m: float = math.inf, nonempty: bool = False) -> list[str]:
        return [n for n, vi in sorted(env.items())
                if vi.type == VEC and vi.bound <= m and (not nonempty or vi.cls.nonempty)]

    def vector_consumers(self, t: Type, env: Env, depth: int, m: float,
                         leaves: list[Option], inner: list[Option]) -> None:
        d = depth - 1
        if t == FLOAT:
            # (index i w) with i bound by a loop over a vector of w's size class
            pairs = [(i, w) for i, iv in sorted(env.items()) if iv.type == INTEGER and iv.idx is not None
                     for w in self.vec_vars(env, m) if env[w].cls == iv.idx]
            if pairs:
                leaves.append(("index", 20, lambda: self.index_var(env, pairs)))
            idx_classes = sorted({iv.idx for iv in env.values() if iv.type == INTEGER and iv.idx is not None
                                  and self.has_size(iv.idx, env)}, key=lambda c: str(c.key))
            if idx_classes:
                inner.append(("index", 1, lambda: self.index_expr(env, d, m, idx_classes)))
            ws = self.vec_vars(env, m, nonempty=True)
            if ws:
                inner.append(("index", 4, lambda: self.index_clamped(env, d, ws)))
                inner.append(("max", 1, lambda: self.of_vec("max", env, ws)))
                inner.append(("min", 1, lambda: self.of_vec("min", env, ws)))
            inner.append(("sum", 3, lambda: self.wrap_sum(env, d, m)))
        if t == INTEGER and m >= MAX_LEN:
            inner.append(("size", 2, lambda: (_call("size", self.gen(VEC, env, d, ANY)[0]), Info(MAX_LEN))))
            ws = self.vec_vars(env)
            if ws:
                leaves.append(("size", 2, lambda: (_call("size", ir.Var(self.draw(st.sampled_from(ws)))),
                                                    Info(MAX_LEN))))
            nes = self.vec_vars(env, nonempty=True)
            if nes:
                inner.append(("imax", 1, lambda: (_call("imax", ir.Var(self.draw(st.sampled_from(nes)))),
                                                   Info(MAX_LEN))))
        inner.append(("sumbuild", 3, lambda: self.sumbuild(t, env, d, m)))

    def index_var(self, env: Env, pairs: list[tuple[str, str]]) -> tuple[ir.Expr, Info]:
        i, w = self.draw(st.sampled_from(pairs))
        return _call("index", ir.Var(i), ir.Var(w)), Info(env[w].bound)

    def index_expr(self, env: Env, d: int, m: float, classes: list[SizeClass]) -> tuple[ir.Expr, Info]:
        """``(index i VEC)`` with VEC any vector expression of i's size class."""
        c = self.draw(st.sampled_from(classes))
        i = self.draw(st.sampled_from([n for n, iv in sorted(env.items()) if iv.type == INTEGER and iv.idx == c]))
        v, vi = self.gen(VEC, env, d, m, c)
        return _call("index", ir.Var(i), v), Info(vi.bound)

    def index_clamped(self, env: Env, d: int, ws: list[str]) -> tuple[ir.Expr, Info]:
        """``(index (min (abs e) (sub (size w) 1)) w)`` for a non-empty ``w``."""
        w = self.draw(st.sampled_from(ws))
        e, _ = self.gen(INTEGER, env, d, ANY)
        i = _call("min", _call("abs", e), _call("sub", _call("size", ir.Var(w)), _I(1)))
        return _call("index", i, ir.Var(w)), Info(env[w].bound)

    def of_vec(self, name: str, env: Env, ws: list[str]) -> tuple[ir.Expr, Info]:
        w = self.draw(st.sampled_from(ws))
        return _call(name, ir.Var(w)), Info(env[w].bound)

    def wrap_sum(self, env: Env, d: int, m: float) -> tuple[ir.Expr, Info]:
        v, vi = self.gen(VEC, env, d, m / MAX_LEN)
        return _call("sum", v), Info(vi.bound * MAX_LEN)

    def sumbuild(self, t: Type, env: Env, d: int, m: float) -> tuple[ir.Expr, Info]:
        n, cls = self.size_for_loop(env, d)
        i = self.binder(env, "i")
        self.lam_depth += 1
        try:
            body, bi = self.gen(t, {**env, i: VarInfo(INTEGER, MAX_LEN, idx=cls)}, d, m / MAX_LEN)
        finally:
            self.lam_depth -= 1
        return _call("sumbuild", n, ir.Lam(i, INTEGER, body)), Info(bi.bound * MAX_LEN)

    # --- sizes ------------------------------------------------------------------

    def has_size(self, cls: SizeClass, env: Env) -> bool:
        return cls.lit is not None or any(vi.type == VEC and vi.cls == cls for vi in env.values())

    def size_expr(self, cls: SizeClass, env: Env) -> ir.Expr | None:
        """An expression for the length of vectors of class ``cls``, if one is in scope."""
        if cls.lit is not None:
            return _I(cls.lit)
        reps = [n for n, vi in sorted(env.items()) if vi.type == VEC and vi.cls == cls]
        if not reps:
            return None
        return _call("size", ir.Var(self.draw(st.sampled_from(reps))))

    def size_for_loop(self, env: Env, d: int, cls: SizeClass | None = None) -> tuple[ir.Expr, SizeClass]:
        """The length argument of build/sumbuild/constVec, and the class it makes."""
        if cls is not None:
            n = self.size_expr(cls, env)
            assert n is not None, "generator bug: a size class with no representative in scope"
            return n, cls
        kinds = ["lit"]
        ws = self.vec_vars(env)
        if ws:
            kinds += ["size"] * 4
        if d > 0:
            kinds += ["abs", "abs1"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "lit":
            k = self.draw(st.integers(0, MAX_LEN))
            return _I(k), _lit_class(k)
        if kind == "size":
            w = self.draw(st.sampled_from(ws))
            return _call("size", ir.Var(w)), env[w].cls
        if kind == "abs":
            return _call("abs", self.gen(INTEGER, env, d, MAX_LEN)[0]), self.new_class()
        return _call("add", _I(1), _call("abs", self.gen(INTEGER, env, d, MAX_LEN - 1)[0])), self.new_class(True)

    # --- Integer ----------------------------------------------------------------

    def int_options(self, env: Env, depth: int, m: float, leaves: list[Option], inner: list[Option],
                    essential: list[Option]) -> None:
        d = depth - 1

        def const() -> tuple[ir.Expr, Info]:
            k = int(min(5, math.floor(m)))
            x = self.draw(st.integers(-k, k))
            return _I(x), Info(abs(x))

        leaves.append(("const", 4, const))
        essential.append(("const", 1, const))
        inner.append(("add", 3, lambda: self.arith2("add", INTEGER, env, d, m)))
        inner.append(("sub", 3, lambda: self.arith2("sub", INTEGER, env, d, m)))
        inner.append(("mul", 2, lambda: self.arith2("mul", INTEGER, env, d, m)))
        inner.append(("max", 1, lambda: self.arith2("max", INTEGER, env, d, m)))
        inner.append(("min", 1, lambda: self.arith2("min", INTEGER, env, d, m)))
        inner.append(("neg", 1, lambda: self.wrap1("neg", self.gen(INTEGER, env, d, m))))
        inner.append(("abs", 1, lambda: self.wrap1("abs", self.gen(INTEGER, env, d, m))))

        def div() -> tuple[ir.Expr, Info]:
            a, ia = self.gen(INTEGER, env, d, m)
            b, _ = self.gen(INTEGER, env, d, ANY)
            return _call("div", a, _call("add", _I(1), _call("abs", b))), Info(ia.bound)

        inner.append(("div", 1, div))
        if self.has("vectors"):
            self.vector_consumers(INTEGER, env, depth, m, leaves, inner)

    # --- Bool -------------------------------------------------------------------

    def bool_options(self, env: Env, depth: int, m: float, leaves: list[Option], inner: list[Option],
                     essential: list[Option]) -> None:
        d = depth - 1
        const = ("const", 2, lambda: (ir.const(self.draw(st.booleans())), Info(0.0)))
        leaves.append(const)
        essential.append(const)

        def compare(op: str, types: list[Type]) -> Option:
            def make() -> tuple[ir.Expr, Info]:
                t = self.draw(st.sampled_from(types))
                a, _ = self.gen(t, env, d, ANY)
                b, _ = self.gen(t, env, d, ANY)
                return _call(op, a, b), Info(0.0)
            return (op, 2, make)

        for op in ("lt", "gt", "lte", "gte"):
            inner.append(compare(op, [FLOAT, INTEGER]))
        for op in ("eq", "ne"):
            inner.append(compare(op, [FLOAT, INTEGER, BOOL]))
        for op in ("and", "or"):
            inner.append((op, 1, lambda op=op: (_call(op, self.cond(env, d), self.cond(env, d)), Info(0.0))))
        inner.append(("not", 1, lambda: (_call("not", self.cond(env, d)), Info(0.0))))

    # --- Vec Float --------------------------------------------------------------

    def vec_options(self, env: Env, depth: int, m: float, cls: SizeClass | None, leaves: list[Option],
                    inner: list[Option], essential: list[Option]) -> None:
        d = depth - 1
        if cls is not None and not self.has_size(cls, env):
            raise AssertionError("generator bug: a size class with no representative in scope")

        def const_vec(dd: int) -> tuple[ir.Expr, Info]:
            n, c = self.size_for_loop(env, dd, cls)
            x, xi = self.gen(FLOAT, env, dd, m) if dd >= 0 else self.float_const(m)
            return _call("constVec", n, x), Info(xi.bound, c)

        essential.append(("constVec", 1, lambda: const_vec(-1)))
        leaves.append(("constVec", 1, lambda: const_vec(-1)))
        inner.append(("constVec", 1, lambda: const_vec(d)))
        inner.append(("build", 5, lambda: self.build(env, d, m, cls)))
        inner.append(("map", 3, lambda: self.map_(env, d, m, cls)))
        if self.has("closures"):
            gs = [n for n, vi in sorted(env.items()) if vi.type == TLam(FLOAT, FLOAT) and vi.bound <= m]
            if gs:
                inner.append(("map", 2, lambda: self.map_var(env, d, cls, gs)))
        for op, w in (("add", 2), ("sub", 1), ("mul", 1)):
            inner.append((op, w, lambda op=op: self.vec_arith(op, env, d, m, cls)))
        inner.append(("mul", 2, lambda: self.vec_scale(env, d, m, cls)))
        inner.append(("neg", 1, lambda: self.wrap_cls("neg", self.gen(VEC, env, d, m, cls))))

    def wrap_cls(self, name: str, ei: tuple[ir.Expr, Info]) -> tuple[ir.Expr, Info]:
        return _call(name, ei[0]), ei[1]

    def build(self, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        n, c = self.size_for_loop(env, d, cls)
        i = self.binder(env, "i")
        self.lam_depth += 1
        try:
            body, bi = self.gen(FLOAT, {**env, i: VarInfo(INTEGER, MAX_LEN, idx=c)}, d, m)
        finally:
            self.lam_depth -= 1
        return _call("build", n, ir.Lam(i, INTEGER, body)), Info(bi.bound, c)

    def map_(self, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        v, vi = self.gen(VEC, env, d, ARG_BOUND * 10, cls)
        x = self.binder(env, "x")
        self.lam_depth += 1
        try:
            body, bi = self.gen(FLOAT, {**env, x: VarInfo(FLOAT, vi.bound)}, d, m)
        finally:
            self.lam_depth -= 1
        return _call("map", ir.Lam(x, FLOAT, body), v), Info(bi.bound, vi.cls)

    def map_var(self, env: Env, d: int, cls: SizeClass | None, gs: list[str]) -> tuple[ir.Expr, Info]:
        g = self.draw(st.sampled_from(gs))
        v, vi = self.gen(VEC, env, d, ARG_BOUND, cls)
        return _call("map", ir.Var(g), v), Info(env[g].bound, vi.cls)

    def pick_class(self, env: Env) -> SizeClass:
        """A size class that has a length expression in scope."""
        classes = sorted({vi.cls for vi in env.values() if vi.type == VEC}, key=lambda c: str(c.key))
        k = self.draw(st.integers(0, MAX_LEN))
        options = [_lit_class(k)] + classes
        return self.draw(st.sampled_from(options))

    def vec_arith(self, op: str, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        """Elementwise ``add``/``sub``/``mul`` of two vectors of one size class."""
        return self.arith2(op, VEC, env, d, m, cls if cls is not None else self.pick_class(env))

    def vec_scale(self, env: Env, d: int, m: float, cls: SizeClass | None) -> tuple[ir.Expr, Info]:
        """``(mul s v)`` or ``(mul v s)``."""
        s, si = self.gen(FLOAT, env, d, math.sqrt(m))
        v, vi = self.gen(VEC, env, d, m / si.bound if si.bound > 0 else ANY, cls)
        args = (s, v) if self.draw(st.booleans()) else (v, s)
        return _call("mul", *args), Info(si.bound * vi.bound, vi.cls)

    # --- Tuple, Sum, Lam ------------------------------------------------------------

    def tuple_options(self, t: TTuple, env: Env, depth: int, m: float, leaves: list[Option],
                      inner: list[Option], essential: list[Option]) -> None:
        def make(dd: int) -> tuple[ir.Expr, Info]:
            parts = [self.gen(et, env, dd, m) for et in t.elems]
            return ir.Tuple(tuple(p[0] for p in parts)), Info(max((p[1].bound for p in parts), default=0.0))

        essential.append(("tuple", 1, lambda: make(0)))
        leaves.append(("tuple", 1, lambda: make(0)))
        inner.append(("tuple", 4, lambda: make(depth - 1)))

    def sum_options(self, t: TSum, env: Env, depth: int, m: float, leaves: list[Option],
                    inner: list[Option], essential: list[Option]) -> None:
        def make(left: bool, dd: int) -> tuple[ir.Expr, Info]:
            e, info = self.gen(t.left if left else t.right, env, dd, m)
            return ir.Inj(left, t, e), Info(info.bound)

        essential.append(("inl", 1, lambda: make(True, 0)))
        leaves.append(("inl", 1, lambda: make(True, 0)))
        leaves.append(("inr", 1, lambda: make(False, 0)))
        inner.append(("inl", 2, lambda: make(True, depth - 1)))
        inner.append(("inr", 2, lambda: make(False, depth - 1)))

    def lam_options(self, t: TLam, env: Env, depth: int, m: float, leaves: list[Option],
                    inner: list[Option], essential: list[Option]) -> None:
        def make(dd: int) -> tuple[ir.Expr, Info]:
            x = self.binder(env, "x")
            self.lam_depth += 1
            try:
                body, bi = self.gen(t.res, {**env, x: self.var_info(t.arg, Info(ARG_BOUND))}, dd, m)
            finally:
                self.lam_depth -= 1
            return ir.Lam(x, t.arg, body), Info(bi.bound)

        essential.append(("lam", 1, lambda: make(0)))
        leaves.append(("lam", 1, lambda: make(0)))
        inner.append(("lam", 4, lambda: make(depth - 1)))
        refs = [f for f in self.defs if not f.recursive and f.arg_type == t.arg and f.ret == t.res and f.bound <= m]
        if refs:
            leaves.append(("fn", 2, lambda: self.fn_ref(refs)))

    def fn_ref(self, refs: list[_DefInfo]) -> tuple[ir.Expr, Info]:
        f = self.draw(st.sampled_from(refs))
        return ir.FnRef(f.name), Info(f.bound)

    # --- definitions --------------------------------------------------------------

    def helper_def(self, name: str, depth: int, recursive: bool) -> ir.Def:
        nparams = self.draw(st.integers(1, 3))
        params: list[tuple[str, Type]] = []
        if recursive:
            params.append(("n", INTEGER))
            nparams = self.draw(st.integers(0, 2))
        for _ in range(nparams):
            params.append((self.fresh("p"), self.any_type() if self.draw(st.booleans()) else self.data_type()))
        ret = FLOAT if self.draw(st.integers(0, 2)) > 0 else self.any_type()
        env: Env = {}
        for p, t in params:
            env[p] = VarInfo(t, 4.0) if (recursive and p == "n") else self.var_info(t, Info(ARG_BOUND))
        info = _DefInfo(name, tuple(params), ret, RESULT_BOUND, recursive)
        if not recursive:
            body, bi = self.gen(ret, env, depth, RESULT_BOUND)
            info.bound = bi.bound
        else:
            body = self.recursive_body(info, env, depth)
        self.defs.append(info)
        return ir.Def(name, ret, tuple(ir.Param(p, t) for p, t in params), body)

    def recursive_body(self, f: _DefInfo, env: Env, depth: int) -> ir.Expr:
        """``(if (lte n 0) BASE (let (r (f (sub n 1) ARGS)) STEP))``; STEP may call f once more."""
        self.protected = frozenset({"n"})
        self.rec, self.rec_budget = f, 0
        try:
            base, _ = self.gen(f.ret, env, depth - 1, f.bound)
            self.rec_budget = 1
            call, _ = self.self_call(env, depth - 2)
            self.rec_budget = 1
            r = self.fresh("r")
            step, _ = self.gen(f.ret, {**env, r: self.var_info(f.ret, Info(f.bound))}, depth - 1, f.bound)
        finally:
            self.protected, self.rec, self.rec_budget = frozenset(), None, 0
        stop = _call("lte", ir.Var("n"), _I(0))
        rec = ir.Let(r, call, step)
        if self.draw(st.booleans()):
            return ir.If(stop, base, rec)
        return ir.If(_call("gt", ir.Var("n"), _I(0)), rec, base)

    def entry_def(self, name: str, depth: int, result: str | Type) -> ir.Def:
        nparams = self.draw(st.integers(1, 3))
        params = [(self.fresh("p"), self.entry_param_type()) for _ in range(nparams)]
        ret = self.result_type(result)
        env: Env = {}
        for p, t in params:
            env[p] = VarInfo(t, _entry_bound(t), self.new_class(nonempty=True) if t == VEC else None)
        # Always exercise the recursive helper; sometimes bind calls of the others up front.
        pre: list[tuple[str, ir.Expr, Type, Info]] = []
        for f in self.defs:
            if f.recursive or self.draw(st.integers(0, 2)) == 0:
                x = self.fresh("h")
                e = _call(f.name, *self.args_for(f, env, depth - 2))
                pre.append((x, e, f.ret, Info(f.bound)))
        inner = dict(env)
        for x, _, t, info in pre:
            inner = self.bind(inner, x, t, info)
        body, _ = self.gen(ret, inner, depth, ENTRY_BOUND)
        for x, e, _, _ in reversed(pre):
            body = ir.Let(x, e, body)
        return ir.Def(name, ret, tuple(ir.Param(p, t) for p, t in params), body)


def _entry_bound(t: Type) -> float:
    """The bound on the numbers in an argument that :func:`values` makes."""
    if isinstance(t, TTuple):
        return max((_entry_bound(e) for e in t.elems), default=0.0)
    if t == INTEGER:
        return float(ENTRY_INT)
    return ENTRY_FLOAT if t in (FLOAT, VEC) else 0.0


# --- values -----------------------------------------------------------------


def _floats(bound: float = ENTRY_FLOAT) -> st.SearchStrategy[float]:
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False)


def values(t: Type) -> st.SearchStrategy[Any]:
    """Argument values of type ``t`` (Python values labrys accepts)."""
    if t == FLOAT:
        return _floats()
    if t == INTEGER:
        return st.integers(0, ENTRY_INT)
    if t == BOOL:
        return st.booleans()
    if t == VEC:
        return st.lists(_floats(), min_size=1, max_size=MAX_LEN)
    if isinstance(t, TTuple):
        return st.tuples(*(values(e) for e in t.elems))
    raise TypeError(f"no argument values of type {t}")


def tangent_values(t: Type, like: Any) -> st.SearchStrategy[Any]:
    """Tangent (or cotangent) values for a value ``like`` of type ``t``: Floats in
    [-2, 2] where ``like`` has Floats, ``()`` for Integers and Bools, vectors of the
    same length (the tangent types of docs/reference.md §2)."""
    if t == FLOAT:
        return _floats()
    if t in (INTEGER, BOOL):
        return st.just(())
    if t == VEC:
        return st.lists(_floats(), min_size=len(like), max_size=len(like))
    if isinstance(t, TTuple):
        return st.tuples(*(tangent_values(e, x) for e, x in zip(t.elems, like)))
    raise TypeError(f"no tangent values for type {t}")


def env_values(env: dict[str, Type]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({n: values(t) for n, t in env.items()})


def value_has_type(v: Any, t: Type) -> bool:
    """Does ``v`` (as returned by a labrys Function) represent a value of type ``t``?"""
    if t == FLOAT:
        return isinstance(v, (float, np.floating)) and not isinstance(v, bool)
    if t == INTEGER:
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    if t == BOOL:
        return isinstance(v, (bool, np.bool_))
    if isinstance(t, TTensor) and t.elem == FLOAT:
        return isinstance(v, np.ndarray) and v.ndim == t.rank and v.dtype == np.float64
    if isinstance(t, TTensor):
        return isinstance(v, (list, np.ndarray)) and all(value_has_type(x, t.elem) for x in v)
    if isinstance(t, TTuple):
        return isinstance(v, tuple) and len(v) == len(t.elems) and all(map(value_has_type, v, t.elems))
    if isinstance(t, TLam):
        return callable(v)
    return False


def all_finite(v: Any) -> bool:
    if isinstance(v, (float, np.floating)):
        return math.isfinite(v)
    if isinstance(v, np.ndarray) and v.dtype != object:
        return bool(np.all(np.isfinite(v)))
    if isinstance(v, (tuple, list, np.ndarray)):
        return all(all_finite(x) for x in v)
    return True


# --- the strategies -----------------------------------------------------------


class GenProgram(NamedTuple):
    """A generated program, the name of its entry function and arguments for it."""

    program: ir.Program
    entry: str
    args: tuple

    @property
    def entry_def(self) -> ir.Def:
        return entry_def(self.program, self.entry)

    @property
    def text(self) -> str:
        return show_program(self.program)


def entry_def(program: ir.Program, name: str) -> ir.Def:
    return next(d for d in program.decls if isinstance(d, ir.Def) and d.name == name)


@st.composite
def programs(draw: Callable, features: str | Iterable[str] = ALL_FEATURES, *, result: str | Type = "float",
             max_defs: int = 3, max_depth: int = 4, exclude: Iterable[str] = ()) -> GenProgram:
    """Random well-typed programs (see the module docstring)."""
    fs = parse_features(features)
    g = _Gen(draw, fs, frozenset(exclude))
    g.taken.add("n")
    recursion = "recursion" in fs
    ndefs = draw(st.integers(2 if recursion else 1, max(max_defs, 2 if recursion else 1)))
    rec_at = draw(st.integers(0, ndefs - 2)) if recursion else -1
    decls = [g.helper_def(f"f{k + 1}", max_depth - 1, k == rec_at) for k in range(ndefs - 1)]
    entry = f"f{ndefs}"
    d = g.entry_def(entry, max_depth, result)
    decls.append(d)
    args = tuple(draw(values(p.type)) for p in d.params)
    return GenProgram(ir.Program(tuple(decls)), entry, args)


def text_programs(features: str | Iterable[str] = ALL_FEATURES, **kwargs: Any) -> st.SearchStrategy[tuple]:
    """``(text, entry, args)``: :func:`programs`, printed."""
    return programs(features, **kwargs).map(lambda g: (show_program(g.program), g.entry, g.args))


@st.composite
def exprs(draw: Callable, t: Type = FLOAT, env: dict[str, Type] | None = None, *,
          features: str | Iterable[str] = ALL_FEATURES, depth: int = 3, exclude: Iterable[str] = (),
          bound: float = RESULT_BOUND, nonempty: Iterable[str] = (), env_bound: float = ARG_BOUND) -> ir.Expr:
    """An expression of type ``t`` over the variables ``env``.

    The values given to the variables must have numbers within ``env_bound``
    (the default, 10, covers :func:`values`); the Vec variables named in
    ``nonempty`` must be non-empty.  The result's numbers are within ``bound``.
    """
    fs = parse_features(features) - {"recursion"}
    g = _Gen(draw, fs, frozenset(exclude))
    env = env or {}
    g.taken |= set(env)
    nonempty = set(nonempty)
    info: Env = {n: VarInfo(vt, env_bound, g.new_class(n in nonempty) if vt == VEC else None)
                 for n, vt in env.items()}
    return g.gen(t, info, depth, bound)[0]
