"""The optimiser inlines small generated derivatives of leaf functions, and only those."""
from __future__ import annotations

import math

import pytest

import labrys

SRC = """
(def h Float (x : Float) (mul x (exp (neg x))))
(def g Float ((a : Float) (b : Float)) (add (mul a b) (h a)))
(def r Float ((n : Integer) (x : Float)) (if (eq n 0) x (h (r (sub n 1) x))))
(def f Float ((x : Float) (y : Float)) (let (u (g x y)) (mul u (g y (h u)))))
"""


def h(x):
    return x * math.exp(-x)


def dh(x):
    return math.exp(-x) * (1 - x)


def test_leaf_callees_are_inlined_others_stay_calls():
    m = labrys.load(SRC)
    rev_f = m.derive("rev", "f").source
    assert "[rev h]" not in rev_f  # h calls only primitives: inlined
    assert "[rev g]" in rev_f       # g calls h: compositional call kept
    rev_r = m.derive("rev", "r").source
    assert "[rev r]" in rev_r       # recursion is never inlined


def test_inlined_derivatives_are_correct():
    m = labrys.load(SRC)
    x, y = 0.6, 1.9
    u = x * y + h(x)
    v = y * h(u) + h(y)
    # f = u * g(y, h(u)); df/dx = du/dx * (v + u * dg/db * h'(u)), dg/db(y, b) = y
    du_dx, du_dy = y + dh(x), x
    dv_du = y * dh(u)
    dv_dy = h(u) + dh(y)
    expected = (du_dx * (v + u * dv_du), du_dy * (v + u * dv_du) + u * dv_dy)
    assert m["[rev f]"]((x, y), 1.0) == pytest.approx(expected, rel=1e-12)
    n, x = 3, 0.4
    grad = m["[rev r]"]((n, x), 1.0)[1]
    t, d = x, 1.0
    for _ in range(n):
        d *= dh(t)
        t = h(t)
    assert grad == pytest.approx(d, rel=1e-12)
