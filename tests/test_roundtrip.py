"""Printer/parser round trips, generated programs that check and run, and
the binding utilities of ``labrys.ir.traverse`` (alpha-equivalence,
capture-avoiding substitution, free variables, fresh names).

The programs come from :mod:`strategies`; they are generated so that they
run without any run-time error, so *any* exception while running one
(``LabrysError`` included) is a failure: a bug of labrys or of the generator.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import labrys
from labrys import LabrysError, check_program, parse_expr, parse_program, show_expr, show_program
from labrys.ad import REGISTRY
from labrys.api import Module
from labrys.ir import nodes as ir
from labrys.ir.traverse import FreshNames, all_names, alpha_equal, children, free_vars, rebuild, substitute
from labrys.ir.types import FLOAT, INTEGER, TLam, TTuple, Type
from labrys.types.checker import Functions, check_expr

try:
    from strategies import (
        ALL_FEATURES,
        ARG_BOUND,
        NONSMOOTH,
        VEC,
        GenProgram,
        all_finite,
        env_values,
        exprs,
        programs,
        tangent_values,
        text_programs,
        value_has_type,
    )
except ImportError:  # tests/ made a package
    from tests.strategies import (
        ALL_FEATURES,
        ARG_BOUND,
        NONSMOOTH,
        VEC,
        GenProgram,
        all_finite,
        env_values,
        exprs,
        programs,
        tangent_values,
        text_programs,
        value_has_type,
    )

# labrys runs its passes on a worker thread that raises the recursion limit the
# first time it starts; start it now, not in the middle of a Hypothesis test.
parse_program("")

ROOT = Path(__file__).resolve().parents[1]
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FEATURE_SETS = ["core", "core,vectors", "core,closures", "core,sums", "core,recursion",
                ",".join(sorted(ALL_FEATURES))]


# --- 1. the example programs ------------------------------------------------------


def _example_files() -> list[Any]:
    files = sorted((ROOT / "examples").glob("*.ks"))
    params: list[Any] = [pytest.param(f, id=f"examples/{f.name}") for f in files]
    if not files:
        params.append(pytest.param(None, id="examples/*.ks", marks=pytest.mark.skip(reason="no examples yet")))
    demo = ROOT / "src" / "labrys" / "demo.ks"
    if demo.exists():
        params.append(pytest.param(demo, id="src/labrys/demo.ks"))
    return params


@pytest.mark.parametrize("path", _example_files())
def test_example_print_parse_roundtrip(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    program = parse_program(text, str(path))
    printed = show_program(program)
    assert parse_program(printed, "<printed>") == program


@pytest.mark.parametrize("path", _example_files())
def test_example_printing_is_idempotent(path: Path) -> None:
    printed = show_program(parse_program(path.read_text(encoding="utf-8"), str(path)))
    assert show_program(parse_program(printed, "<printed>")) == printed


# --- 2. generated programs ------------------------------------------------------------


def _same_value(a: Any, b: Any) -> bool:
    """Exact equality of two labrys results (NaN equals NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == object or b.dtype == object:
            return a.shape == b.shape and all(_same_value(x, y) for x, y in zip(a.flat, b.flat))
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(map(_same_value, a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _run(text: str, entry: str, args: tuple) -> Any:
    """Load ``text`` and call ``entry``; any error fails the test with the program shown."""
    try:
        module = labrys.load(text)
        return module.function(entry)(*args)
    except LabrysError as exc:
        pytest.fail(f"a generated program raised LabrysError (a labrys or generator bug):\n{exc}\n\n"
                    f"{text}\nargs = {args!r}")


@pytest.mark.parametrize("features", FEATURE_SETS)
@PROPERTY
@given(data=st.data())
def test_generated_programs_print_parse_roundtrip(features: str, data: st.DataObject) -> None:
    gp = data.draw(programs(features, result="any"), label="program")
    text = show_program(gp.program)
    note(text)
    parsed = parse_program(text, "<generated>")
    assert parsed == gp.program
    assert show_program(parsed) == text


@pytest.mark.parametrize("features", FEATURE_SETS)
@PROPERTY
@given(data=st.data())
def test_generated_programs_typecheck(features: str, data: st.DataObject) -> None:
    gp = data.draw(programs(features, result="any"), label="program")
    note(show_program(gp.program))
    checked = check_program(gp.program)
    for d in checked.program.decls:
        assert isinstance(d, ir.Def)
        assert d.body.type == d.ret
        assert free_vars(d.body) <= {p.name for p in d.params}
    # the checker accepts its own output and leaves it as it is
    assert check_program(checked.program).program == checked.program


@pytest.mark.parametrize("features", FEATURE_SETS)
@PROPERTY
@given(data=st.data())
def test_generated_programs_run(features: str, data: st.DataObject) -> None:
    gp = data.draw(programs(features, result="any"), label="program")
    text = show_program(gp.program)
    note(text)
    ret = gp.entry_def.ret
    value = _run(text, gp.entry, gp.args)
    assert value_has_type(value, ret), f"{value!r} is not a value of type {ret}"
    assert all_finite(value), f"non-finite result {value!r}"
    # a second call (compiled code cached) gives the same value
    assert _same_value(_run(text, gp.entry, gp.args), value)


@PROPERTY
@given(text_programs("core,vectors,closures,sums,recursion"))
def test_text_programs_load_and_run(tp: tuple[str, str, tuple]) -> None:
    text, entry, args = tp
    note(text)
    value = _run(text, entry, args)
    assert value_has_type(value, FLOAT) and math.isfinite(value)


@PROPERTY
@given(data=st.data())
def test_generated_exprs_print_parse_roundtrip(data: st.DataObject) -> None:
    env = {"x": FLOAT, "y": FLOAT, "w": VEC, "k": INTEGER}
    t = data.draw(st.sampled_from([FLOAT, VEC, TTuple((FLOAT, INTEGER))]), label="type")
    e = data.draw(exprs(t, env, features=ALL_FEATURES, depth=4), label="expr")
    text = show_expr(e)
    note(text)
    assert parse_expr(text, scope=tuple(env)) == e
    assert show_expr(parse_expr(text, scope=tuple(env))) == text


# --- 3. alpha-equivalence, substitution, free variables -------------------------


def rename_bound(e: ir.Expr, fresh: Callable[[str], str], env: dict[str, str] | None = None) -> ir.Expr:
    """Rename every bound variable of ``e`` to a fresh name, consistently."""
    env = env or {}
    match e:
        case ir.Var(name):
            return ir.Var(env.get(name, name))
        case ir.Call(str() as f, arg) if f in env:  # (g x) of a local g, as the parser may leave it
            return ir.Call(env[f], rename_bound(arg, fresh, env))
        case ir.Lam(v, t, body):
            n = fresh(v)
            return ir.Lam(n, t, rename_bound(body, fresh, {**env, v: n}))
        case ir.Let(binder, rhs, body):
            rhs2 = rename_bound(rhs, fresh, env)
            if isinstance(binder, str):
                n = fresh(binder)
                return ir.Let(n, rhs2, rename_bound(body, fresh, {**env, binder: n}))
            ns = tuple(fresh(b) for b in binder)
            return ir.Let(ns, rhs2, rename_bound(body, fresh, {**env, **dict(zip(binder, ns))}))
        case ir.Case(s, lv, lb, rv, rb):
            ln, rn = fresh(lv), fresh(rv)
            return ir.Case(rename_bound(s, fresh, env), ln, rename_bound(lb, fresh, {**env, lv: ln}),
                           rn, rename_bound(rb, fresh, {**env, rv: rn}))
    return rebuild(e, [rename_bound(c, fresh, env) for c, _ in children(e)])


def rename_def(d: ir.Def, fresh: Callable[[str], str]) -> ir.Def:
    names = {p.name: fresh(p.name) for p in d.params}
    params = tuple(ir.Param(names[p.name], p.type) for p in d.params)
    return ir.Def(d.name, d.ret, params, rename_bound(d.body, fresh, names))


def as_lambda(d: ir.Def) -> ir.Expr:
    """A def's parameters as nested lambdas around its body (so they count as binders)."""
    e = d.body
    for p in reversed(d.params):
        e = ir.Lam(p.name, p.type, e)
    return e


def perturb_first_const(e: ir.Expr) -> ir.Expr | None:
    """``e`` with its first literal changed to a different value, or None."""
    done = [False]

    def go(x: ir.Expr) -> ir.Expr:
        if done[0]:
            return x
        if isinstance(x, ir.Const) and isinstance(x.value, (bool, int, float)):
            done[0] = True
            v = x.value
            new = (not v) if isinstance(v, bool) else v + 1 if isinstance(v, int) else float(v) + 1.0
            return ir.Const(new, x.ctype)
        kids = children(x)
        return rebuild(x, [go(c) for c, _ in kids]) if kids else x

    out = go(e)
    return out if done[0] else None


def typed_program(p: ir.Program) -> ir.Program:
    """The checked program: the form passes work on (calls of local functions are App nodes)."""
    return check_program(p).program


def typed_expr(e: ir.Expr, env: dict[str, Type]) -> ir.Expr:
    return check_expr(e, Functions(REGISTRY), env)


@PROPERTY
@given(programs(ALL_FEATURES, result="any"))
def test_consistent_renaming_is_alpha_equal(gp: GenProgram) -> None:
    note(show_program(gp.program))
    program = typed_program(gp.program)
    fresh = FreshNames(set().union(*(all_names(as_lambda(d)) for d in program.decls)))
    renamed = ir.Program(tuple(rename_def(d, fresh) for d in program.decls))
    for a, b in zip(program.decls, renamed.decls):
        assert alpha_equal(as_lambda(a), as_lambda(b))
        assert alpha_equal(as_lambda(b), as_lambda(a))
        assert alpha_equal(a.body, a.body)
    # the renamed program is a program too: it round-trips, checks and computes the same value
    text = show_program(renamed)
    note(text)
    assert typed_program(parse_program(text)) == renamed
    original = _run(show_program(gp.program), gp.entry, gp.args)
    assert _same_value(_run(text, gp.entry, gp.args), original)


@PROPERTY
@given(programs(ALL_FEATURES, result="any"))
def test_alpha_equal_sees_changes(gp: GenProgram) -> None:
    note(show_program(gp.program))
    for d in typed_program(gp.program).decls:
        changed = perturb_first_const(d.body)
        if changed is not None:
            assert not alpha_equal(d.body, changed)
        for p in sorted(free_vars(d.body)):
            other = substitute(d.body, {p: ir.Var(p + "'")})
            assert not alpha_equal(d.body, other)


ALPHA_CASES = [
    # (a, b, scope, alpha-equal?)
    ("(lam (x : Float) x)", "(lam (y : Float) y)", (), True),
    ("(lam (x : Float) y)", "(lam (y : Float) y)", ("y",), False),
    ("(lam (x : Float) (lam (y : Float) x))", "(lam (y : Float) (lam (x : Float) y))", (), True),
    ("(lam (x : Float) (lam (y : Float) x))", "(lam (y : Float) (lam (x : Float) x))", (), False),
    ("(lam (x : Float) (lam (x : Float) x))", "(lam (a : Float) (lam (b : Float) b))", (), True),
    ("(lam (x : Float) (lam (x : Float) x))", "(lam (a : Float) (lam (b : Float) a))", (), False),
    ("(lam (x : Float) 1.0)", "(lam (x : Integer) 1.0)", (), False),
    ("(let ((a b) t) a)", "(let ((c d) t) c)", ("t",), True),
    ("(let ((a b) t) a)", "(let ((c d) t) d)", ("t",), False),
    ("(let ((a b) t) a)", "(let ((b a) t) b)", ("t",), True),
    ("(let ((a b) t) a)", "(let ((b a) t) a)", ("t",), False),
    ("(let (x t) 1.0)", "(let ((x) t) 1.0)", ("t",), False),
    ("(let (x 1.0) (let (y 2.0) (add x y)))", "(let (y 1.0) (let (x 2.0) (add y x)))", (), True),
    ("(let (x 1.0) (let (y 2.0) (add x y)))", "(let (y 1.0) (let (x 2.0) (add x y)))", (), False),
    ("(let (x x) x)", "(let (y x) y)", ("x",), True),
    ("(let (x x) x)", "(let (y x) x)", ("x",), False),
    ("(let (y 1.0) y)", "(let (z 1.0) y)", ("y",), False),
    ("(let ((a b) p) (lam (c : Float) b))", "(let ((a b) p) (lam (b : Float) b))", ("p",), False),
    ("(case s ((inl a) a) ((inr b) 0.0))", "(case s ((inl c) c) ((inr c) 0.0))", ("s",), True),
    ("(case s ((inl a) a) ((inr b) 0.0))", "(case s ((inl c) 1.0) ((inr c) 0.0))", ("s",), False),
    ("(case s ((inl a) x) ((inr b) b))", "(case s ((inl x) x) ((inr b) b))", ("s", "x"), False),
    ("(add x y)", "(add y x)", ("x", "y"), False),
    ("(add x y)", "(add x y)", ("x", "y"), True),
    ("(tuple (lam (x : Float) x) x)", "(tuple (lam (y : Float) y) x)", ("x",), True),
    ("(tuple (lam (x : Float) x) x)", "(tuple (lam (y : Float) y) y)", ("x", "y"), False),
    ("(build n (lam (i : Integer) (index i v)))", "(build n (lam (j : Integer) (index j v)))", ("n", "v"), True),
    ("(let (g (lam (x : Float) x)) (g 1.0))", "(let (h (lam (y : Float) y)) (h 1.0))", (), True),
    ("(let (g (lam (x : Float) x)) (g 1.0))", "(let (h (lam (y : Float) y)) (h 2.0))", (), False),
    ("(lam (g : (Lam Float Float)) (g 1.0))", "(lam (h : (Lam Float Float)) (h 1.0))", (), True),
    ("(lam (g : (Lam Float Float)) (lam (h : (Lam Float Float)) (g 1.0)))",
     "(lam (h : (Lam Float Float)) (lam (g : (Lam Float Float)) (g 1.0)))", (), False),
    ("(f x)", "(g x)", ("x",), False),
    ("(get$1$2 t)", "(get$2$2 t)", ("t",), False),
    ("(inl (Sum Float Integer) 1.0)", "(inr (Sum Float Integer) 1)", (), False),
    ("1.0", "1", (), False),
]


@pytest.mark.parametrize("a, b, scope, expected", ALPHA_CASES)
def test_alpha_equal_cases(a: str, b: str, scope: tuple[str, ...], expected: bool) -> None:
    ea, eb = parse_expr(a, scope=scope), parse_expr(b, scope=scope)
    assert alpha_equal(ea, eb) is expected
    assert alpha_equal(eb, ea) is expected


SUBST_CASES = [
    # (expression, scope, {var: replacement}, expected up to alpha)
    ("(lam (y : Float) (add x y))", ("x", "y"), {"x": "y"}, "(lam (z : Float) (add y z))"),
    ("(let (y 1.0) (add x y))", ("x", "y"), {"x": "y"}, "(let (z 1.0) (add y z))"),
    ("(let ((y q) (tuple 1.0 2.0)) (add x (add y q)))", ("x", "y"), {"x": "y"},
     "(let ((z q) (tuple 1.0 2.0)) (add y (add z q)))"),
    ("(case s ((inl y) (add x y)) ((inr q) x))", ("s", "x", "y"), {"x": "y"},
     "(case s ((inl z) (add y z)) ((inr q) y))"),
    ("(case s ((inl y) (add x y)) ((inr y) (sub x y)))", ("s", "x", "y"), {"x": "y"},
     "(case s ((inl a) (add y a)) ((inr b) (sub y b)))"),
    ("(let (x 2.0) x)", (), {"x": "5.0"}, "(let (x 2.0) x)"),
    ("(let (x x) x)", ("x", "y"), {"x": "y"}, "(let (x y) x)"),
    ("(let (y x) y)", ("x", "y"), {"x": "y"}, "(let (z y) z)"),
    ("(let (x (add x 1.0)) (mul x x))", ("x", "y"), {"x": "y"}, "(let (x (add y 1.0)) (mul x x))"),
    ("(lam (x : Float) x)", ("y",), {"x": "y"}, "(lam (x : Float) x)"),
    ("(let ((x y) t) (add x y))", ("t", "y"), {"x": "y"}, "(let ((x y) t) (add x y))"),
    ("(add x y)", ("x", "y"), {"x": "y", "y": "x"}, "(add y x)"),
    ("(lam (y : Float) (add x y))", ("x", "y", "z"), {"x": "y", "y": "z"}, "(lam (a : Float) (add y a))"),
    ("(lam (y : Float) (lam (y$1 : Float) (add x (add y y$1))))", ("x", "y", "y$1"), {"x": "(add y y$1)"},
     "(lam (a : Float) (lam (b : Float) (add (add y y$1) (add a b))))"),
    ("(build 3 (lam (i : Integer) (add i k)))", ("k", "i"), {"k": "i"}, "(build 3 (lam (j : Integer) (add j i)))"),
    ("(let (g (lam (y : Float) (add y x))) (g 1.0))", ("x", "y"), {"x": "y"},
     "(let (g (lam (z : Float) (add z y))) (g 1.0))"),
    ("(let (y 1.0) (let (y$1 2.0) (add x (add y y$1))))", ("x", "y"), {"x": "y"},
     "(let (a 1.0) (let (b 2.0) (add y (add a b))))"),
    ("(tuple (lam (y : Float) y) (lam (z : Float) (mul x z)))", ("x", "y", "z"), {"x": "(add y z)"},
     "(tuple (lam (a : Float) a) (lam (b : Float) (mul (add y z) b)))"),
    # the replacement calls a local function g: the binder g must not capture it
    ("(lam (g : (Lam Float Float)) (add (g 1.0) x))", ("x", "g"), {"x": "(g 2.0)"},
     "(lam (h : (Lam Float Float)) (add (h 1.0) (g 2.0)))"),
]


@pytest.mark.parametrize("text, scope, sub, expected", SUBST_CASES)
def test_substitution_avoids_capture(text: str, scope: tuple[str, ...], sub: dict[str, str], expected: str) -> None:
    e = parse_expr(text, scope=scope)
    repl = {k: parse_expr(v, scope=scope) for k, v in sub.items()}
    out = substitute(e, repl)
    want = parse_expr(expected, scope=scope)
    assert alpha_equal(out, want), f"{show_expr(out)} is not alpha-equal to {expected}"
    # and the naive, capturing answer would be wrong
    assert free_vars(out) == free_vars(want)


# The cases above that involve calls of local functions, on type-checked IR (where such a
# call is an App whatever the parser makes of it).


@pytest.mark.parametrize("a, b, env, expected", [
    ("(let (g (lam (x : Float) x)) (g 1.0))", "(let (h (lam (y : Float) y)) (h 1.0))", {}, True),
    ("(lam (g : (Lam Float Float)) (g 1.0))", "(lam (h : (Lam Float Float)) (h 1.0))", {}, True),
    ("(lam (g : (Lam Float Float)) (lam (h : (Lam Float Float)) (g 1.0)))",
     "(lam (h : (Lam Float Float)) (lam (g : (Lam Float Float)) (g 1.0)))", {}, False),
    ("(g 1.0)", "(h 1.0)", {"g": TLam(FLOAT, FLOAT), "h": TLam(FLOAT, FLOAT)}, False),
])
def test_alpha_equal_typed_local_calls(a: str, b: str, env: dict[str, Type], expected: bool) -> None:
    ea, eb = typed_expr(parse_expr(a, scope=tuple(env)), env), typed_expr(parse_expr(b, scope=tuple(env)), env)
    assert alpha_equal(ea, eb) is expected


def test_substitution_typed_local_call_is_not_captured() -> None:
    env = {"x": FLOAT, "g": TLam(FLOAT, FLOAT)}
    e = typed_expr(parse_expr("(lam (g : (Lam Float Float)) (add (g 1.0) x))", scope=tuple(env)), env)
    v = typed_expr(parse_expr("(g 2.0)", scope=tuple(env)), env)
    out = substitute(e, {"x": v})
    want = typed_expr(parse_expr("(lam (h : (Lam Float Float)) (add (h 1.0) (g 2.0)))", scope=tuple(env)), env)
    assert alpha_equal(out, want), show_expr(out)
    assert free_vars(out) == {"g"}


def test_substitution_does_not_rename_needlessly() -> None:
    e = parse_expr("(lam (y : Float) (add x y))", scope=("x",))
    out = substitute(e, {"x": parse_expr("2.0")})
    assert out == parse_expr("(lam (y : Float) (add 2.0 y))")


def test_free_vars_cases() -> None:
    scope = ("a", "b", "s", "v", "t")
    cases = {
        "(let (x a) (add x b))": {"a", "b"},
        "(let (a a) a)": {"a"},
        "(let ((x y) t) (add x (add y a)))": {"t", "a"},
        "(lam (x : Float) (add x a))": {"a"},
        "(case s ((inl x) (add x a)) ((inr y) (add y b)))": {"s", "a", "b"},
        "(build 3 (lam (i : Integer) (index i v)))": {"v"},
        "(tuple (lam (a : Float) a) a)": {"a"},
        "(f a b)": {"a", "b"},
        "(fn f)": set(),
    }
    for text, want in cases.items():
        assert free_vars(parse_expr(text, scope=scope)) == want, text


def test_fresh_names() -> None:
    avoid = {"t$1", "t$2", "x", "x$3", "y$1"}
    fresh = FreshNames(avoid)
    made = [fresh("t") for _ in range(20)] + [fresh("x$3") for _ in range(20)] + [fresh("y") for _ in range(5)]
    assert len(set(made)) == len(made)
    assert not set(made) & avoid
    assert all(n.startswith(("t$", "x$", "y$")) for n in made)
    assert all(not n.startswith("x$3$") for n in made)  # "x$3" has the stem "x"
    fresh.avoid({"z$1", "z$2"})
    assert fresh("z") not in {"z$1", "z$2"}


# --- substitution against evaluation, on generated expressions --------------------


SUBST_ENV_TYPES = [FLOAT, INTEGER, VEC, TTuple((FLOAT, VEC))]


@st.composite
def substitution_problems(draw: Callable) -> tuple[ir.Expr, Type, ir.Expr, dict[str, Type]]:
    """``(e, A, v, params)``: ``e : Float`` over x : A and ``params``; ``v : A`` over ``params``."""
    a = draw(st.sampled_from(SUBST_ENV_TYPES), label="type of x")
    params = {"y": FLOAT, "w": VEC}
    e = draw(exprs(FLOAT, {"x": a, **params}, features=ALL_FEATURES, depth=4, nonempty=("w",)), label="e")
    v = draw(exprs(a, params, features=ALL_FEATURES, depth=3, nonempty=("w",), bound=ARG_BOUND), label="v")
    return typed_expr(e, {"x": a, **params}), a, typed_expr(v, params), params


def _def(name: str, params: dict[str, Type], body: ir.Expr) -> ir.Def:
    return ir.Def(name, FLOAT, tuple(ir.Param(n, t) for n, t in params.items()), body)


@PROPERTY
@given(problem=substitution_problems(), data=st.data())
def test_substitution_agrees_with_let(problem: tuple, data: st.DataObject) -> None:
    e, a, v, params = problem
    note(f"e = {show_expr(e)}\nv = {show_expr(v)}")
    substituted = substitute(e, {"x": v})
    note(f"e[x:=v] = {show_expr(substituted)}")
    program = ir.Program((_def("by_subst", params, substituted), _def("by_let", params, ir.Let("x", v, e))))
    # not through text: e[x:=v] may apply a lambda expression directly, which has no concrete syntax
    module = Module(check_program(program))
    env = data.draw(env_values(params), label="args")
    args = [env[n] for n in params]
    want = module.function("by_let")(*args)
    got = module.function("by_subst")(*args)
    assert math.isfinite(want)
    assert _same_value(got, want)


@PROPERTY
@given(problem=substitution_problems())
def test_substitution_free_vars(problem: tuple) -> None:
    e, _, v, _ = problem
    out = substitute(e, {"x": v})
    fv = free_vars(e)
    want = (fv - {"x"}) | (free_vars(v) if "x" in fv else set())
    assert free_vars(out) == want


@PROPERTY
@given(problem=substitution_problems())
def test_substitution_respects_alpha_equivalence(problem: tuple) -> None:
    e, _, v, _ = problem
    fresh = FreshNames(all_names(e) | all_names(v) | {"x", "y", "w"})
    e2 = rename_bound(e, fresh)
    assert alpha_equal(e, e2)
    assert alpha_equal(substitute(e, {"x": v}), substitute(e2, {"x": v}))


@PROPERTY
@given(problem=substitution_problems())
def test_substitution_identities(problem: tuple) -> None:
    e, _, _, _ = problem
    assert alpha_equal(substitute(e, {}), e)
    assert alpha_equal(substitute(e, {"x": ir.Var("x")}), e)
    w = FreshNames(all_names(e))("w")
    there = substitute(e, {"x": ir.Var(w)})
    assert "x" not in free_vars(there)
    assert alpha_equal(substitute(there, {w: ir.Var("x")}), e)


# --- literals and identifiers ------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_literals_roundtrip(x: float) -> None:
    e = parse_expr(show_expr(ir.const(x)))
    assert isinstance(e, ir.Const) and e.ctype == FLOAT
    assert e.value == x and math.copysign(1.0, e.value) == math.copysign(1.0, x)


@pytest.mark.parametrize("x", [math.inf, -math.inf, math.nan])
def test_non_finite_float_constants_print_to_what_they_mean(x: float) -> None:
    """There is no literal for inf/nan; what the printer writes must evaluate to the same value."""
    got = labrys.evaluate(show_expr(ir.const(x)))
    assert (math.isnan(got) and math.isnan(x)) or got == x


@settings(max_examples=200, deadline=None)
@given(st.integers(-2**63, 2**63 - 1))
def test_integer_literals_roundtrip(k: int) -> None:  # Integer is 64-bit (docs/reference.md §2)
    assert parse_expr(show_expr(ir.const(k))) == ir.const(k)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_string_literals_roundtrip(s: str) -> None:
    e = ir.call("print", ir.const(s), ir.const(1.5))
    assert parse_expr(show_expr(e)) == e


def test_negative_zero_is_its_own_literal() -> None:
    a, b = parse_expr("(div 1.0 0.0)"), parse_expr("(div 1.0 -0.0)")
    assert a != b and not alpha_equal(a, b)


_ID_CHARS = "abcxyzXYZ_0123456789'$@!?*+-<>=/.%"
_FUNCTION_NAMES = {f"f{k}" for k in range(1, 10)}


def _is_identifier(name: str) -> bool:
    from labrys.prelude import lookup
    from labrys.syntax.sexpr import _FLOAT, _INT

    return not (_INT.match(name) or _FLOAT.match(name) or name in {"true", "false", ":"}
                or name in {"let", "if", "tuple", "lam", "assert", "inl", "inr", "case", "fn",
                            "def", "edef", "gdef", "rule"}
                or name in _FUNCTION_NAMES or lookup(name) is not None or name.startswith("get$"))


_ODD_NAMES = ["x'", "7of9", "_xs$o1", "D$f", "+5", "-x", ".5x", "1+", "x$1$2", "<=>", "a.b", "?!"]
identifiers = (st.sampled_from(_ODD_NAMES)
               | st.builds(str.__add__, st.sampled_from("abxyzXYZ_'$!?*<>=/%"), st.text(_ID_CHARS, max_size=5))
               ).filter(_is_identifier)


@PROPERTY
@given(gp=programs(ALL_FEATURES, result="any"), data=st.data())
def test_unusual_identifiers_roundtrip(gp: GenProgram, data: st.DataObject) -> None:
    """Every variable renamed to identifiers like x', _a$1, 7of9, +5, <=>: still round-trips and runs."""
    used: set[str] = set()

    def fresh(_: str) -> str:
        name = data.draw(identifiers.filter(lambda n: n not in used), label="identifier")
        used.add(name)
        return name

    renamed = ir.Program(tuple(rename_def(d, fresh) for d in typed_program(gp.program).decls))
    text = show_program(renamed)
    note(text)
    assert typed_program(parse_program(text)) == renamed
    assert _same_value(_run(text, gp.entry, gp.args), _run(show_program(gp.program), gp.entry, gp.args))


# --- a local variable that is not a function does not hide functions ----------------------


def test_local_variable_named_like_a_primitive_does_not_hide_it() -> None:
    """docs/reference.md §4: in ``(f e ...)``, ``f`` is a top-level function, a primitive, or a local
    variable *of Lam type*.  A Float local called ``sum`` leaves ``(sum v)`` a call of the primitive
    (older Knossos programs have no first-class functions, so every such call is a call)."""
    m = labrys.load("(def f Float (v : (Vec Float)) (let (sum 1.0) (add sum (sum v))))")
    assert m.function("f")([1.0, 2.0]) == 4.0


def test_local_variable_named_like_a_def_does_not_hide_it() -> None:
    m = labrys.load("(def g Float (x : Float) (mul x 2.0))\n"
                    "(def f Float (g : Float) (g g))")
    assert m.function("f")(3.0) == 6.0


def test_local_function_named_like_a_primitive_shadows_it() -> None:
    m = labrys.load("(def f Float (x : Float) (let (sin (lam (y : Float) (mul y 2.0))) (sin x)))")
    assert m.function("f")(3.0) == 6.0


def test_printed_call_under_a_same_named_local_keeps_its_meaning() -> None:
    """The IR ``let sin = 1.0 in sin(sin)`` (a call of the primitive) must print to text that
    parses and checks to the same program."""
    body = ir.Let("sin", ir.const(1.0), ir.call("sin", ir.Var("sin")))
    program = ir.Program((ir.Def("f", FLOAT, (ir.Param("x", FLOAT),), body),))
    text = show_program(program)
    assert check_program(parse_program(text)).program == check_program(program).program


# --- the strategy module's own promises ----------------------------------------------


def _nodes(e: ir.Expr):
    """Every node, except inside the (always true) conditions of asserts."""
    yield e
    for k, (c, _) in enumerate(children(e)):
        if not (isinstance(e, ir.Assert) and k == 0):
            yield from _nodes(c)


def _has_float(t: Type) -> bool:
    return t == FLOAT or any(_has_float(x) for x in getattr(t, "elems", ())) or getattr(t, "elem", None) == FLOAT


@PROPERTY
@given(programs("core,vectors,closures,sums", exclude=NONSMOOTH))
def test_excluded_productions_do_not_appear(gp: GenProgram) -> None:
    """With ``exclude=NONSMOOTH`` no branch and no kink depends on a Float."""
    for d in check_program(gp.program).program.decls:
        for e in _nodes(d.body):
            assert not isinstance(e, (ir.If, ir.Case))
            assert not (isinstance(e, ir.Call) and e.func in NONSMOOTH and _has_float(e.arg.type)), e
    assert math.isfinite(_run(show_program(gp.program), gp.entry, gp.args))


@PROPERTY
@given(data=st.data())
def test_tangent_values_match_tangent_types(data: st.DataObject) -> None:
    gp = data.draw(programs("core,vectors", result="any"), label="program")
    d = gp.entry_def
    for p, x in zip(d.params, gp.args):
        dx = data.draw(tangent_values(p.type, x), label=f"d{p.name}")
        from labrys.values import from_python
        from_python(dx, labrys.tangent_type(p.type))  # raises if dx does not fit the tangent type
