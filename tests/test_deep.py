"""Deep and large programs: 10^4 nested lets / calls / ifs, 10^4-deep (and
10^5-deep) recursion, 10^6-element vectors.  Every stage — parse, check,
print, re-parse, run, IR utilities — must work without RecursionError."""
from __future__ import annotations

import numpy as np
import pytest

import labrys
from labrys.ir import nodes as ir
from labrys.ir.traverse import alpha_equal, free_vars, size, substitute
from labrys.ir.types import FLOAT

N = 10_000


def nested_lets(n: int, x: str = "x", y: str | None = None, step: str = "1.0") -> str:
    """(let (x1 (add x0 1.0)) (let (x2 (add x1 1.0)) ... xn)); binders named ``y`` if given."""
    b = y or x
    parts = [f"(let ({b}1 (add {x}0 {step})) "]
    parts += [f"(let ({b}{i} (add {b}{i - 1} {step})) " for i in range(2, n + 1)]
    return "".join(parts) + f"{b}{n}" + ")" * n


def multi_let(n: int) -> str:
    binds = " ".join(f"(x{i} (add x{i - 1} 1.0))" for i in range(1, n + 1))
    return f"(let ({binds}) x{n})"


def nested_calls(n: int) -> str:
    return "(inc " * n + "x" + ")" * n


def nested_ifs(n: int) -> str:
    # f(k) = k + 1 for 0 <= k < n, else 0
    return "".join(f"(if (lt k {i}) {i} " for i in range(1, n + 1)) + "0" + ")" * n


def round_trip(text_or_program, *, typed_print: bool = False, hashed: bool = False) -> labrys.Module:
    """Parse, check, print, re-parse (must be equal); returns the runnable module."""
    p = (labrys.parse_program(text_or_program) if isinstance(text_or_program, str)
         else text_or_program)
    checked = labrys.check_program(p)
    shown = labrys.show_program(p)
    assert isinstance(shown, str) and shown
    p2 = labrys.parse_program(shown)
    # plain `==` and `hash` on the caller's thread (no deep-stack worker)
    assert p2 == p
    if hashed:
        assert hash(p2) == hash(p)
    if typed_print:  # printing the checked (typed) program gives the same text
        assert labrys.show_program(checked.program) == shown
    return labrys.Module(checked)


# --- 10^4 nested lets ------------------------------------------------------------

@pytest.fixture(scope="module")
def lets_program():
    return labrys.parse_program(f"(def f Float (x0 : Float) {nested_lets(N)})")


def test_nested_lets(lets_program):
    m = round_trip(lets_program, typed_print=True, hashed=True)
    assert m.f(0.0) == float(N)
    assert m.f(0.5) == N + 0.5


def test_multi_let_10k_bindings(lets_program):
    text = f"(def f Float (x0 : Float) {multi_let(N)})"
    p = labrys.parse_program(text)
    # a multi-binding let is sequential: the same program as the nested lets
    assert p == lets_program
    # so checking, printing and running it are test_nested_lets


# --- 10^4 nested calls -----------------------------------------------------------

def test_nested_calls():
    text = f"(def inc Float (x : Float) (add x 1.0))\n(def f Float (x : Float) {nested_calls(N)})"
    m = round_trip(text)
    assert m.f(2.0) == N + 2.0


# --- deep recursion --------------------------------------------------------------

REC = """
(def rec Integer (n : Integer) (if (eq n 0) 0 (add 1 (rec (sub n 1)))))
(def sumto Float (n : Integer) (if (eq n 0) 0.0 (add (to_float n) (sumto (sub n 1)))))
(def is_even Bool (n : Integer) (if (eq n 0) true (is_odd (sub n 1))))
(def is_odd Bool (n : Integer) (if (eq n 0) false (is_even (sub n 1))))
"""


def test_recursion_10k():
    m = round_trip(REC)
    assert m.rec(N) == N
    assert m.sumto(N) == N * (N + 1) / 2
    assert m.is_even(N) is True
    assert m.is_odd(N + 1) is True


def test_recursion_100k():
    m = labrys.load(REC)
    assert m.rec(10 * N) == 10 * N
    assert m.sumto(10 * N) == 10 * N * (10 * N + 1) / 2


def test_recursion_through_lambda():
    text = """
    (def applyn Float ((f : Lam Float Float) (n : Integer) (x : Float))
      (if (eq n 0) x (f (applyn f (sub n 1) x))))
    (def g Float (n : Integer) (applyn (lam (y : Float) (add y 2.0)) n 0.0))
    """
    m = labrys.load(text)
    assert m.g(N) == 2.0 * N


# --- 10^4 nested ifs -------------------------------------------------------------

def test_nested_ifs():
    text = f"(def f Integer (k : Integer) {nested_ifs(N)})"
    m = round_trip(text)
    assert m.f(0) == 1
    assert m.f(N - 1) == N
    assert m.f(N) == 0
    assert m.f(4321) == 4322


# --- 10^6-element vectors ---------------------------------------------------------

BIG = """
(def sumsq Float (v : Vec Float) (sum (mul v v)))
(def dot Float ((a : Vec Float) (b : Vec Float)) (sum (mul a b)))
(def ramp (Vec Float) (n : Integer) (build n (lam (i : Integer) (mul 0.5 (to_float i)))))
(def affine (Vec Float) ((a : Float) (v : Vec Float) (b : Vec Float)) (add (mul a v) b))
(def sumbuild_sq Float (v : Vec Float)
  (sumbuild (size v) (lam (i : Integer) (let (x (index i v)) (mul x x)))))
"""


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(1)
    return labrys.load(BIG), rng.normal(size=10 ** 6), rng.normal(size=10 ** 6)


def test_million_sum_of_squares(big):
    m, v, _ = big
    got = m.sumsq(v)
    assert got == pytest.approx(float(np.dot(v, v)), rel=1e-10)


def test_million_dot_and_affine(big):
    m, v, w = big
    assert m.dot(v, w) == pytest.approx(float(np.dot(v, w)), rel=1e-9, abs=1e-6)
    r = m.affine(2.5, v, w)
    assert r.shape == (10 ** 6,)
    np.testing.assert_allclose(r, 2.5 * v + w, rtol=1e-15)


def test_million_build(big):
    m, _, _ = big
    r = m.ramp(10 ** 6)
    assert isinstance(r, np.ndarray) and r.dtype == np.float64 and r.shape == (10 ** 6,)
    np.testing.assert_array_equal(r, 0.5 * np.arange(10 ** 6, dtype=np.float64))


# --- IR utilities on a 10^4-deep expression ---------------------------------------

def body_of(program: ir.Program) -> ir.Expr:
    return program.decls[0].body


def test_ir_free_vars_and_size(lets_program):
    e = body_of(lets_program)
    assert free_vars(e) == {"x0"}
    # each level is Let + Call + Tuple + Var + Const; plus the final Var
    assert size(e) == 5 * N + 1


def chain(n: int, free: str = "x0", binder: str = "x", step_at: dict[int, float] | None = None) -> ir.Expr:
    """The IR of ``nested_lets`` built directly (no parser): binders ``binder1..n``,
    free variable ``free``, constant 1.0 except where ``step_at`` says otherwise."""
    step_at = step_at or {}
    e: ir.Expr = ir.Var(f"{binder}{n}")
    for i in range(n, 0, -1):
        prev = ir.Var(free if i == 1 else f"{binder}{i - 1}")
        e = ir.Let(f"{binder}{i}", ir.call("add", prev, ir.const(step_at.get(i, 1.0))), e)
    return e


def test_ir_chain_builder_matches_parser(lets_program):
    assert chain(N) == body_of(lets_program)


def test_ir_alpha_equal(lets_program):
    e = body_of(lets_program)
    renamed = chain(N, binder="y")
    assert renamed != e
    assert alpha_equal(e, renamed)
    assert alpha_equal(e, e)
    # a different constant deep inside
    assert not alpha_equal(e, chain(N, step_at={9000: 2.0}))
    # a different free variable
    other = chain(N, free="z0")
    assert free_vars(other) == {"z0"}
    assert not alpha_equal(e, other)


def test_ir_substitute_constant(lets_program):
    e = body_of(lets_program)
    s = substitute(e, {"x0": ir.const(5.0)})
    assert free_vars(s) == set()
    assert size(s) == size(e)
    # run it as the body of a zero-argument function (without re-parsing)
    prog = ir.Program((ir.Def("g", FLOAT, (), s),))
    assert labrys.Module(labrys.check_program(prog)).g() == 5.0 + N


def test_ir_substitute_avoids_capture(lets_program):
    e = body_of(lets_program)
    # x1 is bound at the top of e: substituting x0 := x1 must rename that binder
    s = substitute(e, {"x0": ir.Var("x1")})
    assert free_vars(s) == {"x1"}
    assert size(s) == size(e)
    assert alpha_equal(s, chain(N, free="x1", binder="y"))
    assert not alpha_equal(s, e)
    # substituting a variable that is not free changes nothing
    assert alpha_equal(substitute(e, {"x5": ir.const(0.0)}), e)
