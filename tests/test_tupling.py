"""K2: tupled derivatives (seed 000 Figs. 7-8): same results, less duplicated work."""
from __future__ import annotations

import math

import pytest

import labrys
from labrys.syntax.printer import show_decl
from labrys import METER

CHAIN = """
(def k Float (x : Float) (exp x))
(def g Float (x : Float) (mul (sin x) (k x)))
(def f Float (x : Float)
  (let ((a (g x)) (b (g a)) (c (g b)))
    (mul a (add b c))))
(gdef fwdt [f Float])
"""


def g(x):
    return math.sin(x) * math.exp(x)


def f(x):
    a = g(x)
    b = g(a)
    c = g(b)
    return a * (b + c)


def fd(fn, x, h=1e-6):
    return (fn(x + h) - fn(x - h)) / (2 * h)


@pytest.fixture(scope="module")
def m():
    return labrys.load(CHAIN)


def ops(fn, *args):
    before = METER.ops
    fn(*args)
    return METER.ops - before


def test_both_strategies_agree_with_finite_differences(m):
    for strategy in ("tupled", "plain"):
        d = m.derive("fwd", "f", strategy=strategy)
        assert d(0.3, 1.0) == pytest.approx(fd(f, 0.3), rel=1e-7), strategy


def test_tupled_forward_calls_each_callee_once(m):
    # g calls k, so g's derivatives stay calls (only leaf callees are inlined)
    tupled, plain = m.derive("fwd", "f", strategy="tupled"), m.derive("fwd", "f", strategy="plain")
    tupled_f, plain_f = show_decl(tupled.d), show_decl(plain.d)  # [fwd f] itself, not the callees it calls
    assert tupled_f.count("[fwdt g]") == 3 and "(g " not in tupled_f
    assert plain_f.count("[fwd g]") == 3 and plain_f.count("(g ") == 3
    assert ops(tupled, 0.3, 1.0) < ops(plain, 0.3, 1.0)  # the callee's primal is not computed twice


def test_fwdt_returns_value_and_tangent(m):
    value, tangent = m["[fwdt f]"](0.3, 1.0)  # declared by the gdef in the file
    assert value == pytest.approx(f(0.3), rel=1e-14)
    assert tangent == pytest.approx(fd(f, 0.3), rel=1e-7)


def test_dt_returns_value_and_jacobian(m):
    value, jac = m["[Dt f]"](0.3)
    assert value == pytest.approx(f(0.3), rel=1e-14)
    assert jac.apply(2.0) == pytest.approx(2 * fd(f, 0.3), rel=1e-7)
    assert jac.apply_r(1.0) == pytest.approx(fd(f, 0.3), rel=1e-7)


def test_tupling_through_branches_and_loops():
    m = labrys.load("""
(def h Float (x : Float) (mul x x))
(def f Float (v : Vec Float)
  (if (gt (index 0 v) 0.0)
      (sumbuild (size v) (lam (i : Integer) (h (index i v))))
      (h (index 1 v))))""")
    for v, expected in (([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]), ([-1.0, 2.0], [0.0, 4.0])):
        dv = [1.0] * len(v)
        value, tangent = m["[fwdt f]"](v, dv)
        assert tangent == pytest.approx(sum(expected))
        assert value == pytest.approx(sum(x * x for x in v) if v[0] > 0 else v[1] ** 2)


def test_unknown_strategy_is_an_error(m):
    with pytest.raises(labrys.LabrysError, match="strategy"):
        m.derive("fwd", "f", strategy="fastest")
