"""grad / jvp / vjp follow each registered derivation's calling convention: every
forward and reverse method gives the same (hand-computed) derivatives, a tupled
method's value is not mistaken for its tangent, and a method or function of
the wrong kind is a clear LabrysError naming what fits."""
from __future__ import annotations

import math

import numpy as np
import pytest

import labrys
from labrys import LabrysError
from labrys.ad import REGISTRY
from labrys.ad.proc import LANGUAGE as PROC_LANGUAGE

SOURCE = """(def sq Float (x : Float) (mul x x))
(def f Float ((x : Float) (y : Float)) (mul (sin x) (exp y)))
(def norm2 Float (v : Vec Float) (sum (mul v v)))
(def pair (Tuple Float Float) (x : Float) (tuple (mul x x) (sin x)))
"""
FORWARD, REVERSE = REGISTRY.names("forward"), REGISTRY.names("reverse")


@pytest.fixture(scope="module")
def m():
    return labrys.load(SOURCE)


@pytest.mark.parametrize("method", FORWARD)
def test_jvp_returns_the_value_and_the_tangent(m, method):
    value, tangent = labrys.jvp(m.sq, (3.0,), (1.0,), method=method)
    assert value == 9.0 and tangent == pytest.approx(6.0, rel=1e-12)
    value, tangent = labrys.jvp(m.pair, (0.5,), (2.0,), method=method)
    assert value == pytest.approx((0.25, math.sin(0.5)))
    assert tangent == pytest.approx((2.0, 2 * math.cos(0.5)), rel=1e-12)


@pytest.mark.parametrize("method", FORWARD + REVERSE)
def test_grad_by_every_method(m, method):
    assert labrys.grad(m.sq, method=method)(3.0) == pytest.approx(6.0, rel=1e-12)
    dx, dy = labrys.grad(m.f, method=method)(0.5, 0.25)  # two arguments: forward methods go by columns
    assert dx == pytest.approx(math.cos(0.5) * math.exp(0.25), rel=1e-12)
    assert dy == pytest.approx(math.sin(0.5) * math.exp(0.25), rel=1e-12)
    if REGISTRY.get(method).language == PROC_LANGUAGE:  # Fig. 20 has no vectors: a positioned refusal
        with pytest.raises(LabrysError, match="no vectors"):
            labrys.grad(m.norm2, method=method)(np.array([1.0, -2.0, 3.0]))
        return
    g = labrys.grad(m.norm2, method=method)(np.array([1.0, -2.0, 3.0]))
    assert np.allclose(g, [2.0, -4.0, 6.0], rtol=1e-12)


@pytest.mark.parametrize("method", REVERSE)
def test_vjp_pulls_back_a_cotangent(m, method):
    value, back = labrys.vjp(m.pair, 0.5, method=method)
    assert value == pytest.approx((0.25, math.sin(0.5)))
    assert back((1.0, 3.0)) == pytest.approx(2 * 0.5 + 3 * math.cos(0.5), rel=1e-12)


def test_a_method_of_the_wrong_kind_names_the_methods_that_fit(m):
    with pytest.raises(LabrysError, match="jvp cannot use 'rev'.*methods that fit: fwd"):
        labrys.jvp(m.sq, (1.0,), (1.0,), method="rev")
    with pytest.raises(LabrysError, match="vjp cannot use 'fwd'.*methods that fit: rev"):
        labrys.vjp(m.sq, 1.0, method="fwd")
    with pytest.raises(LabrysError, match=r"grad cannot use 'D': \[D f\] is called S → LM dS dT"):
        labrys.grad(m.sq, method="D")
    with pytest.raises(LabrysError, match="unknown derivation 'nope'"):
        labrys.grad(m.sq, method="nope")
    with pytest.raises(LabrysError, match=r"grad cannot use 'CL': \[CL f\] is called S → T"):
        labrys.grad(m.sq, method="CL")


def test_something_that_is_not_a_labrys_function_is_a_clear_error():
    with pytest.raises(LabrysError, match="grad takes a labrys function"):
        labrys.grad(lambda x: x)
    with pytest.raises(LabrysError, match="jvp takes a labrys function"):
        labrys.jvp(math.sin, (1.0,), (1.0,))


def test_every_error_labrys_raises_is_a_labrys_error(m):
    from labrys.values import PrimError

    assert issubclass(PrimError, LabrysError)
    with pytest.raises(LabrysError):
        m.norm2([1.0, "two"])
    with pytest.raises(LabrysError, match="Float result"):
        labrys.grad(m.pair)(1.0)
