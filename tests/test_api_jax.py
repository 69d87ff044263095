"""The API a JAX user expects: value_and_grad, grad with argnums and has_aux,
jacfwd/jacrev/jacobian, hessian and hvp (by differentiating derived functions,
[fwd [rev f]]), results shaped like the inputs — all against hand-computed
derivatives."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import labrys
from labrys import LabrysError
from labrys.cli.main import main

SOURCE = """(def f Float ((x : Float) (y : Float)) (mul (sin x) (mul y y)))
(def cube Float (v : Vec Float) (sum (mul v (mul v v))))
(def vf (Vec Float) (v : Vec Float) (mul v (sum v)))
(def n2 Float (m : Vec (Vec Float)) (sum (build (size m) (lam (i : Integer) (sum (mul (index i m) (index i m)))))))
(def with_aux (Tuple Float Integer) (x : Float) (tuple (mul x (exp x)) 7))
(def rosen Float ((a : Float) (b : Float))
  (add (mul (sub 1.0 a) (sub 1.0 a)) (mul 100.0 (mul (sub b (mul a a)) (sub b (mul a a))))))
"""
X, Y = 0.5, 2.0


@pytest.fixture(scope="module")
def m():
    return labrys.load(SOURCE)


def df(x, y):
    return math.cos(x) * y * y, 2 * y * math.sin(x)


def hess_f(x, y):
    return [[-math.sin(x) * y * y, 2 * y * math.cos(x)], [2 * y * math.cos(x), 2 * math.sin(x)]]


def test_value_and_grad_and_argnums(m):
    value, g = labrys.value_and_grad(m.f)(X, Y)
    assert value == pytest.approx(math.sin(X) * Y * Y) and g == pytest.approx(df(X, Y))
    assert labrys.grad(m.f, argnums=0)(X, Y) == pytest.approx(df(X, Y)[0])
    assert labrys.grad(m.f, argnums=(1,))(X, Y) == pytest.approx((df(X, Y)[1],))
    assert labrys.grad(m.f, argnums=1, method="fwd")(X, Y) == pytest.approx(df(X, Y)[1])
    with pytest.raises(LabrysError, match="argnums 2"):
        labrys.grad(m.f, argnums=2)(X, Y)


@pytest.mark.parametrize("method", ["rev", "fwd", "deltarev"])
def test_has_aux(m, method):
    g, aux = labrys.grad(m.with_aux, has_aux=True, method=method)(1.5)
    assert g == pytest.approx((1 + 1.5) * math.exp(1.5)) and aux == 7
    (value, aux), g = labrys.value_and_grad(m.with_aux, has_aux=True)(1.5)
    assert value == pytest.approx(1.5 * math.exp(1.5)) and aux == 7
    with pytest.raises(LabrysError, match="has_aux needs"):
        labrys.grad(m.f, has_aux=True)(X, Y)


def test_gradients_are_shaped_like_the_arguments(m):
    a = np.arange(6.0).reshape(2, 3)
    g = labrys.grad(m.n2)(a)
    assert isinstance(g, np.ndarray) and g.shape == (2, 3) and np.allclose(g, 2 * a)
    _, back = labrys.vjp(m.n2, a)
    assert back(1.0).shape == (2, 3)


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev", "jacobian"])
def test_jacobians(m, jac):
    v = np.array([1.0, 2.0, 4.0])
    expected = np.diag([v.sum()] * 3) + np.outer(v, np.ones(3))  # d(v_i Σv)/dv_j = Σv δij + v_i
    got = getattr(labrys, jac)(m.vf)(v)
    assert got.shape == (3, 3) and np.allclose(got, expected)
    assert getattr(labrys, jac)(m.f)(X, Y) == pytest.approx(df(X, Y))   # a Float result: one row per argument
    assert getattr(labrys, jac)(m.f, argnums=0)(X, Y) == pytest.approx(df(X, Y)[0])


@pytest.mark.parametrize("method,inner", [("rev", "fwd"), ("fwd", "rev"), ("deltarev", "fwd"), ("dualfwd", "rev")])
def test_hessian_of_a_loop_by_every_order(method, inner):
    """[fwd [rev f]] of a loop differentiates the ts_sumbuild of [rev f] (it gave 0 when
    ts_sumbuild was marked as having no derivative): against finite differences of grad."""
    m = labrys.load("""(def loss Float ((w : Float) (xs : Vec Float))
  (sumbuild (size xs) (lam (i : Integer) (let (e (sub (log (add 1.0 (exp (mul w (index i xs))))) 1.0)) (mul e e)))))""")
    xs = np.array([0.5, 1.0, 2.0])
    g = labrys.grad(m.loss, argnums=0)
    fd = (g(0.3 + 1e-5, xs) - g(0.3 - 1e-5, xs)) / 2e-5
    assert labrys.hessian(m.loss, argnums=0, method=method, inner=inner)(0.3, xs) == pytest.approx(fd, rel=1e-6)


def test_a_hessian_needs_one_forward_and_one_reverse_method(m):
    with pytest.raises(LabrysError, match="forward method over a reverse one"):
        labrys.hessian(m.cube, method="rev", inner="rev")


def test_hessian_and_hvp(m):
    h = labrys.hessian(m.f)(X, Y)
    assert np.allclose(np.array(h, dtype=float), hess_f(X, Y))
    v = np.array([1.0, -2.0, 3.0])
    hc = labrys.hessian(m.cube)(v)
    assert hc.shape == (3, 3) and np.allclose(hc, np.diag(6 * v))
    assert np.allclose(labrys.hvp(m.cube, (v,), (np.ones(3),)), 6 * v)
    a, b = 1.2, 0.7  # Rosenbrock: the classic second derivatives
    expected = [[2 - 400 * (b - a * a) + 800 * a * a, -400 * a], [-400 * a, 200.0]]
    assert np.allclose(np.array(labrys.hessian(m.rosen)(a, b), dtype=float), expected)
    assert labrys.hvp(m.rosen, (a, b), (1.0, 0.0)) == pytest.approx((expected[0][0], expected[1][0]))


def _expected_second(outer: str, inner: str) -> list[float]:
    """The printed result of [outer [inner f]] below, worked by hand from f = sin x · y²."""
    (h00, h01), _ = hess_f(X, Y)
    fx, fy = df(X, Y)
    if inner == "rev" and outer in ("fwd", "dualfwd"):  # d/dx of (f_x, f_y)
        return [h00, h01]
    if inner == "rev":  # [rev [rev f]] with cotangent (1, 0) of (f_x, f_y): ((f_xx, f_xy), f_x)
        return [h00, h01, fx]
    return [h00, h01, fx, fy]  # [rev [fwd f]] at dx = (1, 0): ((f_xx, f_xy), (f_x, f_y))


@pytest.mark.parametrize("outer,inner", [("fwd", "rev"), ("dualfwd", "rev"), ("rev", "rev"), ("rev", "fwd"),
                                         ("deltarev", "fwd")])
def test_derived_functions_of_derived_functions_in_ks(tmp_path, capsys, outer, inner):
    """(gdef fwd [rev [f T]]) and friends, called from .ks and printed by show."""
    point = f"(tuple {X} {Y})"
    inner_arg = f"(tuple {point} 1.0)" if inner == "rev" else f"(tuple {point} (tuple 1.0 0.0))"
    if outer in ("fwd", "dualfwd"):
        direction = "(tuple (tuple 1.0 0.0) 0.0)"  # d/dx, holding the cotangent
    else:
        direction = "(tuple 1.0 0.0)" if inner == "rev" else "1.0"  # a cotangent of [inner f]'s result
    path = tmp_path / "nested.ks"
    path.write_text(SOURCE + f"""(gdef {inner} [f (Tuple Float Float)])
(gdef {outer} [{inner} [f (Tuple Float Float)]])
(def main Integer () (print ([{outer} [{inner} f]] {inner_arg} {direction}) "\n"))
""")
    assert main(["run", str(path), "--backend", "interp"]) == 0
    printed = [float(v) for v in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", capsys.readouterr().out)]
    assert printed == pytest.approx(_expected_second(outer, inner), rel=1e-12)
    assert main(["show", str(path), f"[{inner} f]", "--deriv", outer]) == 0
    assert f"(def [{outer} [{inner} f]]" in capsys.readouterr().out


def test_module_repr_and_meter_on_another_backend():
    m = labrys.load(SOURCE, backend="python", name="api.ks")
    assert repr(m).startswith("<labrys module api.ks: ") and "python backend" in repr(m)
    _ = labrys.METER.ops
    m.cube(np.ones(3))
    with pytest.warns(UserWarning, match="interp backend only"):
        _ = labrys.METER.ops
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _ = labrys.METER.ops  # nothing ran since: no warning


def test_a_method_name_in_the_argnums_place_is_a_clear_error(m):
    with pytest.raises(LabrysError, match="method=..."):
        labrys.grad(m.f, "deltarev")
