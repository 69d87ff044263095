"""The derivative rules of every primitive (Note [Derivative rules] in
``labrys.types.primitives``), checked numerically.

For each primitive and a representative argument type, the rule IR built by
``fwd(args, dargs, types)`` and ``rev(args, dr, types)`` is printed into a
small module next to the primal call::

    (def prim R  ((x1 : T1) (x2 : T2))                        (p x1 x2))
    (def fwd  dR ((x1 : T1) (x2 : T2) (dx1 : dT1) (dx2 : dT2)) FWD)
    (def rev  (Tuple dT1 dT2) ((x1 : T1) (x2 : T2) (dr : dR))  (tuple REV1 REV2))

so the type checker confirms each rule has the tangent type the contract
promises, and then, on seeded random well-conditioned inputs:

1. ``fwd`` matches central finite differences of ``prim``;
2. ``rev`` is the transpose of ``fwd``: <rev(x, dr), dx> == <dr, fwd(x, dx)>
   over the Float parts (Integer arguments have unit ``()`` tangents).

Expected values come from ``prim`` (the primitive's evaluator) and NumPy,
never from another derivative rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np
import pytest

import labrys
from labrys.ir.build import C
from labrys.ir.nodes import Var
from labrys.ir.types import FLOAT, INTEGER, TBase, TTensor, TTuple, Type, Vec, show_type
from labrys.prelude import PRIMITIVES
from labrys.types.tangent import tangent_type

F, I = FLOAT, INTEGER  # noqa: E741 (the cases read as type signatures)
VF = Vec(FLOAT)
M2 = TTensor(2, FLOAT)
VVF = Vec(VF)
II = TTuple((I, I))
FF = TTuple((F, F))
UNIT = TTuple(())

FD_H = 1e-6
FD_TOL = 1e-6
DOT_TOL = 1e-10
TRIALS = 3


# --- values, tangents and their Float parts, by type ------------------------

def rand_tangent(t: Type, v: Any, rng: np.random.Generator) -> Any:
    """A random tangent of the value ``v : t`` (unit for Integer parts)."""
    match t:
        case TBase("Float"):
            return float(rng.standard_normal())
        case TBase():
            return ()
        case TTuple(elems):
            return tuple(rand_tangent(e, x, rng) for e, x in zip(elems, v))
        case TTensor(_, TBase("Float")):
            return rng.standard_normal(np.shape(v))
        case TTensor(1, elem):
            return [rand_tangent(elem, x, rng) for x in v]
    raise TypeError(t)


def axpy(t: Type, x: Any, h: float, dx: Any) -> Any:
    """``x + h dx`` on the Float parts of ``x : t`` (Integer parts unchanged)."""
    match t:
        case TBase("Float"):
            return x + h * dx
        case TBase():
            return x
        case TTuple(elems):
            return tuple(axpy(e, a, h, b) for e, a, b in zip(elems, x, dx))
        case TTensor(_, TBase("Float")):
            return np.asarray(x, dtype=float) + h * np.asarray(dx, dtype=float)
        case TTensor(1, elem):
            return [axpy(elem, a, h, b) for a, b in zip(x, dx)]
    raise TypeError(t)


def flat(t: Type, v: Any) -> np.ndarray:
    """The Float parts of ``v`` (a value of ``t`` or of its tangent type), in order."""
    match t:
        case TBase("Float"):
            assert isinstance(v, float), f"expected a Float, got {v!r}"
            return np.array([v])
        case TBase():
            return np.zeros(0)
        case TTuple(elems):
            assert isinstance(v, tuple) and len(v) == len(elems), f"expected a {len(elems)}-tuple, got {v!r}"
            return np.concatenate([np.zeros(0)] + [flat(e, x) for e, x in zip(elems, v)])
        case TTensor(rank, TBase("Float")):
            a = np.asarray(v, dtype=float)
            assert a.ndim == rank, f"expected a rank-{rank} tensor, got {v!r}"
            return a.ravel()
        case TTensor(1, elem):
            return np.concatenate([np.zeros(0)] + [flat(elem, x) for x in v])
    raise TypeError(t)


# --- the cases --------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    prim: str
    types: tuple[Type, ...]
    gen: Callable[[np.random.Generator], tuple]
    label: str = ""

    @property
    def id(self) -> str:
        return f"{self.prim}[{self.label or ','.join(map(str, self.types))}]"


def pos(rng, shape=None):
    """Positive and away from zero."""
    return rng.uniform(0.5, 2.0, shape) if shape else float(rng.uniform(0.5, 2.0))


def signed(rng, shape=None):
    """Either sign, away from zero."""
    if shape is None:
        return float(rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0))
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)


def small(rng, shape=None):
    return rng.uniform(-1.0, 1.0, shape) if shape else float(rng.uniform(-1.0, 1.0))


def distinct(rng, n):
    """n well-separated values in random order (no ties for max/min)."""
    return rng.permutation(np.arange(n) * 0.7 + rng.uniform(-0.2, 0.2, n) - 1.0)


def rows(rng, m, n, draw=small):
    return [draw(rng, n) for _ in range(m)]


CASES: list[Case] = []


def case(prim, types, gen, label=""):
    CASES.append(Case(prim, tuple(types), gen, label))


# Elementwise maths: domain per function (log/sqrt positive; lgamma positive).
_DOMAIN = {"log": pos, "sqrt": pos, "lgamma": pos, "tan": lambda rng, s=None: small(rng, s)}
for _f in ("exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "erf", "lgamma"):
    _draw = _DOMAIN.get(_f, small)
    case(_f, [F], lambda rng, d=_draw: (d(rng),))
    case(_f, [VF], lambda rng, d=_draw: (d(rng, 4),))

case("abs", [F], lambda rng: (signed(rng),))
case("neg", [F], lambda rng: (small(rng),))
case("neg", [VF], lambda rng: (small(rng, 3),))
case("neg", [TTuple((F, VF))], lambda rng: ((small(rng), small(rng, 2)),))

# add / sub: scalars, tensors, broadcasting both ways, tuples.
for _op in ("add", "sub"):
    case(_op, [F, F], lambda rng: (small(rng), small(rng)))
    case(_op, [VF, VF], lambda rng: (small(rng, 3), small(rng, 3)))
    case(_op, [M2, M2], lambda rng: (small(rng, (2, 3)), small(rng, (2, 3))))
    case(_op, [VF, F], lambda rng: (small(rng, 3), small(rng)))
    case(_op, [F, VF], lambda rng: (small(rng), small(rng, 3)))
    case(_op, [M2, F], lambda rng: (small(rng, (2, 3)), small(rng)))
    case(_op, [VVF, VVF], lambda rng: (rows(rng, 2, 3), rows(rng, 2, 3)))
    _T = TTuple((F, VF))
    case(_op, [_T, _T], lambda rng: ((small(rng), small(rng, 2)), (small(rng), small(rng, 2))))
    _T = TTuple((F, TTuple((F, F))))
    case(_op, [_T, _T], lambda rng: ((small(rng), (small(rng), small(rng))),
                                     (small(rng), (small(rng), small(rng)))))

# mul: scalars, elementwise, scalar*tensor both orders, matrix*vector, Float*Integer.
case("mul", [F, F], lambda rng: (small(rng), small(rng)))
case("mul", [VF, VF], lambda rng: (small(rng, 3), small(rng, 3)))
case("mul", [F, VF], lambda rng: (small(rng), small(rng, 3)))
case("mul", [VF, F], lambda rng: (small(rng, 3), small(rng)))
case("mul", [F, M2], lambda rng: (small(rng), small(rng, (2, 3))))
case("mul", [F, VVF], lambda rng: (small(rng), rows(rng, 2, 3)))
case("mul", [VVF, F], lambda rng: (rows(rng, 2, 3), small(rng)))
case("mul", [F, FF], lambda rng: (small(rng), (small(rng), small(rng))))
case("mul", [FF, FF], lambda rng: ((small(rng), small(rng)), (small(rng), small(rng))))
case("mul", [M2, VF], lambda rng: (small(rng, (2, 3)), small(rng, 3)))
case("mul", [VVF, VF], lambda rng: (rows(rng, 2, 3), small(rng, 3)))
case("mul", [F, I], lambda rng: (small(rng), int(rng.integers(-3, 4))))

# div: denominators away from zero; broadcasting both ways.
case("div", [F, F], lambda rng: (small(rng), signed(rng)))
case("div", [VF, VF], lambda rng: (small(rng, 3), signed(rng, 3)))
case("div", [VF, F], lambda rng: (small(rng, 3), signed(rng)))
case("div", [F, VF], lambda rng: (small(rng), signed(rng, 3)))
case("div", [M2, F], lambda rng: (small(rng, (2, 3)), signed(rng)))

# Tuples mixing Float and Integer parts: only the Float parts have tangents.
_FI = TTuple((F, I))
for _op in ("add", "sub", "mul", "div"):
    case(_op, [_FI, _FI], lambda rng: ((small(rng), int(rng.integers(-3, 4))),
                                       (signed(rng), int(rng.choice([-2, -1, 1, 2, 3])))))

# pow: Float and Integer exponents, positive base.
case("pow", [F, F], lambda rng: (pos(rng), small(rng) * 2))
case("pow", [F, I], lambda rng: (pos(rng), int(rng.choice([-2, -1, 0, 1, 2, 3]))))

# max / min: two Floats (no ties) and of a Vec Float (unique extremum).
for _op in ("max", "min"):
    case(_op, [F, F], lambda rng: tuple(distinct(rng, 2).tolist()))
    case(_op, [VF], lambda rng: (distinct(rng, 5),))

# Vectors and tensors.
case("index", [I, VF], lambda rng: (int(rng.integers(0, 4)), small(rng, 4)))
case("index", [II, M2], lambda rng: ((int(rng.integers(0, 2)), int(rng.integers(0, 3))), small(rng, (2, 3))))
case("index", [I, VVF], lambda rng: (int(rng.integers(0, 2)), rows(rng, 2, 3)))
case("indexL", [I, VF], lambda rng: (int(rng.integers(0, 4)), small(rng, 4)))
case("indexL", [II, M2], lambda rng: ((int(rng.integers(0, 2)), int(rng.integers(0, 3))), small(rng, (2, 3))))
case("sum", [VF], lambda rng: (small(rng, 4),))
case("sum", [M2], lambda rng: (small(rng, (2, 3)),))
case("sum", [VVF], lambda rng: (rows(rng, 3, 2),))
case("constVec", [I, F], lambda rng: (int(rng.integers(1, 5)), small(rng)))
case("constVec", [II, F], lambda rng: ((2, 3), small(rng)))
case("constVec", [I, VF], lambda rng: (3, small(rng, 2)))
case("deltaVec", [I, I, F], lambda rng: (4, int(rng.integers(0, 4)), small(rng)))
case("deltaVec", [II, II, F], lambda rng: ((2, 3), (int(rng.integers(0, 2)), int(rng.integers(0, 3))), small(rng)))
case("ts_delta", [VF, I, F], lambda rng: (small(rng, 4), int(rng.integers(0, 4)), small(rng)))
case("ts_delta", [M2, II, F], lambda rng: (small(rng, (2, 3)), (int(rng.integers(0, 2)), int(rng.integers(0, 3))),
                                           small(rng)))
case("unzip", [Vec(FF)], lambda rng: ([(small(rng), small(rng)) for _ in range(3)],))
case("unzip", [Vec(TTuple((F, VF)))], lambda rng: ([(small(rng), small(rng, 2)) for _ in range(3)],))
case("dup", [F], lambda rng: (small(rng),))
case("dup", [VF], lambda rng: (small(rng, 3),))
case("Vec_init", [F, F, F], lambda rng: (small(rng), small(rng), small(rng)))
case("Vec_init", [F], lambda rng: (small(rng),))
case("Vec_init", [VF, VF], lambda rng: (small(rng, 2), small(rng, 2)))
case("setAt", [I, VF, F], lambda rng: (int(rng.integers(0, 4)), small(rng, 4), small(rng)))
case("setAt", [II, M2, F], lambda rng: ((int(rng.integers(0, 2)), int(rng.integers(0, 3))), small(rng, (2, 3)),
                                        small(rng)))
case("dot", [VF, VF], lambda rng: (small(rng, 4), small(rng, 4)))
case("dot", [M2, M2], lambda rng: (small(rng, (2, 3)), small(rng, (2, 3))))
case("matvec_T", [M2, VF], lambda rng: (small(rng, (2, 3)), small(rng, 2)))
case("dotv", [VF, VF], lambda rng: (small(rng, 4), small(rng, 4)))
case("mul$Mat$Vec", [VVF, VF], lambda rng: (rows(rng, 2, 3), small(rng, 3)))
case("matvec_T", [VVF, VF], lambda rng: (rows(rng, 2, 3), small(rng, 2)))
case("outer", [VF, VF], lambda rng: (small(rng, 2), small(rng, 3)))

# Tangent-space operations.
case("ts_add", [F, F], lambda rng: (small(rng), small(rng)))
case("ts_add", [VF, VF], lambda rng: (small(rng, 3), small(rng, 3)))
case("ts_add", [TTuple((F, I)), TTuple((F, UNIT))], lambda rng: ((small(rng), 3), (small(rng), ())))
case("ts_neg", [F], lambda rng: (small(rng),))
case("ts_neg", [VF], lambda rng: (small(rng, 3),))
case("ts_neg", [TTuple((F, VF))], lambda rng: ((small(rng), small(rng, 2)),))
case("ts_scale", [F, F], lambda rng: (small(rng), small(rng)))
case("ts_scale", [F, VF], lambda rng: (small(rng), small(rng, 3)))
case("ts_scale", [F, TTuple((F, VF))], lambda rng: (small(rng), (small(rng), small(rng, 2))))
case("ts_dot", [F, F], lambda rng: (small(rng), small(rng)))
case("ts_dot", [VF, VF], lambda rng: (small(rng, 3), small(rng, 3)))
case("ts_dot", [VVF, VVF], lambda rng: (rows(rng, 2, 2), rows(rng, 2, 2)))

# Identity hints.
for _op in ("$trace", "$inline", "$copydown", "checkpoint"):
    case(_op, [F], lambda rng: (small(rng),))
    case(_op, [VF], lambda rng: (small(rng, 3),))


# --- modules of rules ---------------------------------------------------------

@dataclass
class Rules:
    """A case's primal, fwd rule and rev rule as callable `.ks` functions."""

    case: Case
    result: Type
    prim: labrys.Function
    fwd: labrys.Function
    rev: labrys.Function
    source: str


def _params(names, types) -> str:
    return "(" + " ".join(f"({n} : {show_type(t)})" for n, t in zip(names, types)) + ")"


@lru_cache(maxsize=None)
def rules_of(c: Case) -> Rules:
    p = PRIMITIVES[c.prim]
    n = len(c.types)
    arg_t = c.types[0] if n == 1 else TTuple(c.types)
    result = p.typeof(arg_t)
    assert result is not None, f"{c.prim} has no overload at {arg_t}"
    xs = [f"x{k}" for k in range(1, n + 1)]
    dxs = [f"dx{k}" for k in range(1, n + 1)]
    args = [Var(x) for x in xs]
    dtypes = [tangent_type(t) for t in c.types]

    fwd = p.rules["fwd"](args, [Var(d) for d in dxs], c.types, Var("y"))  # y: the primal result
    rev = tuple(p.rules["rev"](args, Var("dr"), c.types, Var("y")))
    assert len(rev) == n, f"rev of {c.prim} returned {len(rev)} cotangents for {n} arguments"
    if n == 1:
        rev_t, rev_body = dtypes[0], labrys.show_expr(rev[0])
    else:
        rev_t = TTuple(tuple(dtypes))
        rev_body = "(tuple " + " ".join(labrys.show_expr(e) for e in rev) + ")"

    y = f"(y {labrys.show_expr(C(c.prim, *args))})"
    source = "\n".join([
        f"(def prim {show_type(result)} {_params(xs, c.types)}\n  {labrys.show_expr(C(c.prim, *args))})",
        f"(def fwd {show_type(tangent_type(result))} {_params(xs + dxs, list(c.types) + dtypes)}\n"
        f"  (let {y} {labrys.show_expr(fwd)}))",
        f"(def rev {show_type(rev_t)} {_params(xs + ['dr'], list(c.types) + [tangent_type(result)])}\n"
        f"  (let {y} {rev_body}))",
    ])
    m = labrys.load(source)
    return Rules(c, result, m.prim, m.fwd, m.rev, source)


def _seed(c: Case, trial: int) -> np.random.Generator:
    return np.random.default_rng([sum(map(ord, c.id)), trial, 20240])


def _draw(c: Case, rng: np.random.Generator):
    x = c.gen(rng)
    assert len(x) == len(c.types)
    dx = tuple(rand_tangent(t, v, rng) for t, v in zip(c.types, x))
    return x, dx


# --- 1. fwd against finite differences ----------------------------------------

@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_fwd_matches_finite_differences(c: Case):
    r = rules_of(c)
    for trial in range(TRIALS):
        rng = _seed(c, trial)
        x, dx = _draw(c, rng)
        plus = [axpy(t, v, FD_H, d) for t, v, d in zip(c.types, x, dx)]
        minus = [axpy(t, v, -FD_H, d) for t, v, d in zip(c.types, x, dx)]
        fd = (flat(r.result, r.prim(*plus)) - flat(r.result, r.prim(*minus))) / (2 * FD_H)
        tangent = flat(r.result, r.fwd(*x, *dx))
        assert tangent.shape == fd.shape, f"fwd tangent has {tangent.size} Floats, the result {fd.size}\n{r.source}"
        err = np.linalg.norm(tangent - fd)
        scale = max(np.linalg.norm(tangent), 1e-3)
        assert err <= FD_TOL * scale, (
            f"{c.id}: fwd rule disagrees with finite differences\n  x = {x}\n  dx = {dx}\n"
            f"  fwd = {tangent}\n  finite differences = {fd}\n{r.source}")


# --- 2. rev is the transpose of fwd -------------------------------------------

@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rev_is_transpose_of_fwd(c: Case):
    r = rules_of(c)
    for trial in range(TRIALS):
        rng = _seed(c, trial)
        x, dx = _draw(c, rng)
        dr = rand_tangent(r.result, r.prim(*x), rng)
        tangent = r.fwd(*x, *dx)
        cot = r.rev(*x, dr)
        if len(c.types) == 1:
            cot = (cot,)
        lhs = sum(float(flat(t, a) @ flat(t, d)) for t, a, d in zip(c.types, cot, dx))
        rhs = float(flat(r.result, dr) @ flat(r.result, tangent))
        assert abs(lhs - rhs) <= DOT_TOL * max(abs(lhs), abs(rhs), 1e-12), (
            f"{c.id}: <rev(x, dr), dx> = {lhs!r} but <dr, fwd(x, dx)> = {rhs!r}\n"
            f"  x = {x}\n  dx = {dx}\n  dr = {dr}\n  rev = {cot}\n  fwd = {tangent}\n{r.source}")


# --- 3. overloads on Integers only: the rules must still give unit tangents ------

def _int(rng):
    return int(rng.choice([-3, -2, -1, 1, 2, 3]))


VI = Vec(I)
INTEGER_CASES = [Case(p, tuple(ts), g) for p, ts, g in [
    ("add", [I, I], lambda rng: (_int(rng), _int(rng))),
    ("sub", [I, I], lambda rng: (_int(rng), _int(rng))),
    ("mul", [I, I], lambda rng: (_int(rng), _int(rng))),
    ("div", [I, I], lambda rng: (_int(rng), _int(rng))),
    ("neg", [I], lambda rng: (_int(rng),)),
    ("abs", [I], lambda rng: (_int(rng),)),
    ("max", [I, I], lambda rng: (_int(rng), _int(rng))),
    ("min", [I, I], lambda rng: (_int(rng), _int(rng))),
    ("sum", [VI], lambda rng: ([_int(rng) for _ in range(3)],)),
    ("index", [I, VI], lambda rng: (1, [_int(rng) for _ in range(3)])),
    ("constVec", [I, I], lambda rng: (3, _int(rng))),
    ("dup", [I], lambda rng: (_int(rng),)),
    ("Vec_init", [I, I], lambda rng: (_int(rng), _int(rng))),
    ("setAt", [I, VI, I], lambda rng: (1, [_int(rng) for _ in range(3)], _int(rng))),
    ("$trace", [I], lambda rng: (_int(rng),)),
]]


def _is_unit_tangent(v: Any) -> bool:
    if isinstance(v, (list, np.ndarray)):
        return all(_is_unit_tangent(x) for x in v)
    return isinstance(v, tuple) and all(_is_unit_tangent(x) for x in v)


@pytest.mark.parametrize("c", INTEGER_CASES, ids=lambda c: c.id)
def test_rules_at_integer_overloads(c: Case):
    """A primitive called on Integers has unit tangents in and out; its rules
    must type-check there (an AD pass meets such calls in any program that
    counts) and produce units."""
    r = rules_of(c)
    x, dx = _draw(c, _seed(c, 0))
    dr = rand_tangent(r.result, r.prim(*x), _seed(c, 1))
    assert _is_unit_tangent(r.fwd(*x, *dx))
    assert _is_unit_tangent(r.rev(*x, dr))


# --- 4. non-differentiable primitives ---------------------------------------------

NONDIFF = ["eq", "ne", "lt", "gt", "lte", "gte", "and", "or", "not",   # comparisons and logic
           "size", "imax", "imin", "shape",                              # sizes and positions
           "to_float", "bool_to_float", "$ranhashdoub", "pi",            # conversions, constants
           "ts_zero", "elim", "print", "pr", "$check", "$BENCH"]         # zero, effects, tools


@pytest.mark.parametrize("name", NONDIFF)
def test_nondiff_primitives(name):
    p = PRIMITIVES[name]
    assert p.nondiff is True
    assert "fwd" not in p.rules and "rev" not in p.rules


# --- 5. completeness ----------------------------------------------------------------

STRUCTURAL = {"build", "sumbuild", "fold", "map", "map2", "ifold", "ts_sumbuild", "nTimes", "ccl"}
NO_DERIVATIVE = {"digamma", "rfold", "buildFromSparse", "buildFromSparseTupled",
                 # Krawiec et al.'s run-time helpers, never differentiated (ad/deltas.py, ad/dual_io.py)
                 "zeroS", "oplus", "otimes", "deltaInputs", "delta2Inputs", "delta1Inputs",
                 "deltaGradient", "delta2Gradient", "delta1Gradient", "dualZip",
                 # Smeding & Vákár's wrappers' run time (ad/dualrev_runtime.py, ad/dualrev_staged.py)
                 *(f"dr{v}{io}" for v in ("c", "t", "1", "2", "3", "4", "5") for io in ("Inputs", "Gradient"))}


def test_every_primitive_is_classified():
    unclassified = []
    for name, p in PRIMITIVES.items():
        has_fwd, has_rev = "fwd" in p.rules, "rev" in p.rules
        assert has_fwd == has_rev, f"{name} has only one of fwd/rev"
        nondiff = p.nondiff
        assert not (nondiff and has_fwd), f"{name} is nondiff but has derivative rules"
        if not (has_fwd or nondiff or name in STRUCTURAL | NO_DERIVATIVE):
            unclassified.append(name)
    assert not unclassified, f"primitives without derivative rules or nondiff=True: {unclassified}"
    assert not (STRUCTURAL | NO_DERIVATIVE) - PRIMITIVES.keys()
    for name in STRUCTURAL | NO_DERIVATIVE:
        assert "fwd" not in PRIMITIVES[name].rules and not PRIMITIVES[name].nondiff


def test_every_rule_is_checked_here():
    with_rules = {name for name, p in PRIMITIVES.items() if "fwd" in p.rules}
    checked = {c.prim for c in CASES}
    assert with_rules - checked == set(), "primitives with rules but no case in this file"
    assert checked - with_rules == set(), "cases for primitives without rules"
