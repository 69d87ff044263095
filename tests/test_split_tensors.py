"""Split reverse mode (BOG AD) on loops over tensors of rank > 1: ``build`` and
``sumbuild`` whose size is a tuple of Integers keep one BOG per index tuple
(a tensor of (result, BOG) pairs of the same rank); the reverse pass is a
``ts_sumbuild`` over the same index tuples.

Expected values are NumPy expressions written by hand, central differences and
Knossos ``rev`` (already on main)."""
from __future__ import annotations

import numpy as np
import pytest

import labrys
from labrys.cli.main import main

T = """
(def square Float (x : Float) (mul x x))
(def squaretensor (Tensor 2 Float) (t : Tensor 2 Float)
  (map (lam (x : Float) (square x)) t))
(def outer (Tensor 2 Float) ((u : Vec Float) (v : Vec Float))
  (build (tuple (size u) (size v))
    (lam (ij : Tuple Integer Integer)
      (let ((i j) ij) (mul (index i u) (sin (index j v)))))))
(def weighted Float ((t : Tensor 2 Float) (a : Float))
  (sumbuild (size t) (lam (ij : Tuple Integer Integer)
    (let ((i j) ij) (mul a (mul (index ij t) (to_float (add i (mul 2 j)))))))))
(def cube3 Float (t : Tensor 3 Float)
  (sumbuild (size t) (lam (ijk : Tuple Integer Integer Integer)
    (let (x (index ijk t)) (mul x (mul x x))))))
(def powi Float ((x : Float) (n : Integer))
  (if (eq n 0) 1.0 (mul x (powi x (sub n 1)))))
(def powgrid Float (t : Tensor 2 Float)
  (sumbuild (size t) (lam (ij : Tuple Integer Integer)
    (let ((i j) ij) (powi (index ij t) (add i j))))))
(def sq2 Float (t : Tensor 2 Float) (sum (squaretensor t)))
"""

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module", params=["interp", "python"])
def m(request):
    return labrys.load(T, backend=request.param)


def sufrev(m, name, x, dt):
    return m.derive("sufrev", name)(x, dt)


def test_map_over_a_matrix(m):
    t = RNG.normal(size=(3, 4))
    dt = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(sufrev(m, "squaretensor", t, dt), 2 * t * dt, rtol=1e-14)
    np.testing.assert_allclose(sufrev(m, "sq2", t, 1.0), 2 * t, rtol=1e-14)


def test_build_of_an_outer_product(m):
    u, v = RNG.normal(size=3), RNG.normal(size=5)
    dt = RNG.normal(size=(3, 5))
    du, dv = sufrev(m, "outer", (u, v), dt)
    # t_ij = u_i sin v_j: du_i = Σ_j dt_ij sin v_j, dv_j = cos v_j Σ_i dt_ij u_i
    np.testing.assert_allclose(du, dt @ np.sin(v), rtol=1e-12)
    np.testing.assert_allclose(dv, np.cos(v) * (u @ dt), rtol=1e-12)
    rdu, rdv = m.derive("rev", "outer")((u, v), dt)
    np.testing.assert_allclose(du, rdu, rtol=1e-12)
    np.testing.assert_allclose(dv, rdv, rtol=1e-12)


def test_sumbuild_with_a_captured_scalar_and_index_tuples(m):
    t = RNG.normal(size=(4, 3))
    i, j = np.indices(t.shape)
    w = i + 2 * j
    dtt, da = sufrev(m, "weighted", (t, 0.5), 2.0)
    np.testing.assert_allclose(dtt, 2.0 * 0.5 * w, rtol=1e-14)
    assert da == pytest.approx(2.0 * (t * w).sum(), rel=1e-12)


def test_rank_three(m):
    t = RNG.normal(size=(2, 3, 4))
    np.testing.assert_allclose(sufrev(m, "cube3", t, 1.0), 3 * t ** 2, rtol=1e-14)


def test_recursive_callee_in_a_rank_two_loop_against_finite_differences(m):
    t = RNG.uniform(0.5, 1.5, size=(3, 3))
    g = sufrev(m, "powgrid", t, 1.0)
    h = 1e-6
    fd = np.zeros_like(t)
    for idx in np.ndindex(t.shape):
        e = np.zeros_like(t)
        e[idx] = h
        fd[idx] = (m.powgrid(t + e) - m.powgrid(t - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(g, m.derive("rev", "powgrid")(t, 1.0), rtol=1e-12)


def test_empty_matrix(m):
    t = np.zeros((0, 3))
    assert np.asarray(sufrev(m, "squaretensor", t, np.zeros((0, 3)))).shape == (0, 3)
    assert np.asarray(sufrev(m, "sq2", t, 1.0)).shape == (0, 3)


def test_show_prints_the_rank_two_bog(tmp_path, capsys):
    path = tmp_path / "t.ks"
    path.write_text(T)
    assert main(["show", str(path), "weighted", "--deriv", "sufrevpass"]) == 0
    out = capsys.readouterr().out
    assert "(Tensor 2 (Tuple Float" in out and "ts_sumbuild" in out


def test_a_rank_two_loop_costs_a_constant_times_the_primal():
    mi = labrys.load(T, backend="interp")
    ratios = []
    for n in (4, 16, 64):
        t = np.full((n, n), 0.5)
        before = labrys.METER.ops
        mi.weighted(t, 0.5)
        primal = labrys.METER.ops - before
        before = labrys.METER.ops
        mi.derive("sufrev", "weighted")((t, 0.5), 1.0)
        ratios.append((labrys.METER.ops - before) / primal)
    assert max(ratios) / min(ratios) < 1.1, ratios
