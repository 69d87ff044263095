"""dualrevtape's compiled tape at scale (Notes [A tape write without branches], [A pool of
tapes] in labrys.backends.numba_tape_runtime): Table 1's dot product against its hand
gradient, the tape's length counted exactly, and the pool's reuse giving a fresh run."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys.backends import numba_tape_runtime as rt

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def table1() -> labrys.Module:
    return labrys.load(ROOT / "benchmarks" / "table1.ks", backend="compiled")


@pytest.mark.parametrize("alg", ["dualrevtape", "deltarev"])
def test_dot_is_its_hand_gradient_and_the_pool_gives_a_fresh_run(alg, table1):
    """∂(u·v)/∂u = v, ∂/∂v = u; a pooled tape taken again holds nothing of the last call."""
    rng = np.random.default_rng(12)
    d = table1.derive(alg, "dot")
    for n in (50_000, 50_000, 70_000, 3):  # large calls share a pooled tape; a small one a fresh tape
        u, v = rng.standard_normal(n), rng.standard_normal(n)
        gu, gv = d((u, v), 2.5)
        assert np.allclose(gu, 2.5 * v, rtol=1e-13, atol=0) and np.allclose(gv, 2.5 * u, rtol=1e-13, atol=0)
    assert f"[{alg} dot]" not in table1.backend.fallbacks  # (deltarev's [delta dot] returns a Delta: python)
    assert len(rt._POOL) <= rt.POOL_SIZE


def test_dualrev_stages_on_the_pooled_tape_and_stale_contribs_do_not_leak(table1):
    """dualrev's staging array of Contribs is a column of the pooled tape (Note [A pool of tapes]):
    a second large call reuses the very array the first one left non-zero, and still gets the
    hand gradient ∂(u·v)/∂u = v, ∂/∂v = u, scaled by the cotangent."""
    rng = np.random.default_rng(5)
    d = table1.derive("dualrev", "dot")
    rt._POOL.clear()
    staged = []
    for n, dt in ((60_000, 1.0), (50_000, -0.5), (60_000, 3.0)):
        u, v = rng.standard_normal(n), rng.standard_normal(n)
        gu, gv = d((u, v), dt)
        assert np.allclose(gu, dt * v, rtol=1e-13, atol=0) and np.allclose(gv, dt * u, rtol=1e-13, atol=0)
        (tape,) = rt._POOL
        staged.append(tape[4])
        assert np.any(tape[4][:4 * n + 2] != 0)  # the Contribs staged by this call are still in the column
    assert staged[0] is staged[1] is staged[2]
    assert "[dualrev dot]" not in table1.backend.fallbacks


def test_the_compiled_tape_has_one_id_per_real_and_op(table1):
    """Counted on the tape itself (its high-water marks), not timed: dot over n elements takes
    slot 0, 2n input IDs, the literal 0.0 and 2n ops (a product and a sum per element), whose
    entries hold 4n (ID, ∂) pairs — linear in n, with these constants."""
    d = table1.derive("dualrevtape", "dot")
    marks = []
    for n in (40_000, 80_000):
        rt._POOL.clear()
        d((np.ones(n), np.ones(n)), 1.0)
        (tape,) = rt._POOL
        marks.append((int(tape[0][rt.TOP_N]), int(tape[0][rt.TOP_K])))
        assert marks[-1] == (1 + 2 * n + 1 + 2 * n, 4 * n)
    assert marks[1][0] - 2 == 2 * (marks[0][0] - 2)


def test_the_pool_keeps_few_tapes_and_no_huge_one():
    rt._POOL.clear()
    for ids in (40_000, 50_000, 60_000):
        rt._pool_give(rt._drt_new(ids, 2 * ids))
    assert len(rt._POOL) == rt.POOL_SIZE and rt._POOL[0][0].shape[0] > rt._POOL[1][0].shape[0]
    taken = rt._pool_take(45_000, 90_000)  # the smallest that fits
    assert taken[0].shape[0] == rt.S + 50_000 + 2
    rt._POOL.clear()
    big = (np.empty(rt.POOL_BYTES // 8 + 1),) * 5
    rt._pool_give(big)
    assert rt._POOL == []


@pytest.mark.parametrize("alg", ["dualrevtape", "deltarev"])
def test_sum_mat_vec_compiles_and_is_its_hand_gradient(alg, table1, caplog):
    """sum (M v) = Σ_ij M_ij v_j: ∂/∂M = outer(ones(rows), v), ∂/∂v = the column sums of M.
    The dual of the matrix is a struct of arrays of rank 2 (Note [Nested struct of arrays])."""
    rng = np.random.default_rng(3)
    d = table1.derive(alg, "sum_mat_vec")
    with caplog.at_level("INFO", logger="labrys"):
        for rows, cols in ((5, 4), (1, 7), (300, 200)):  # the last one on a pooled tape
            m, v = rng.standard_normal((rows, cols)), rng.standard_normal(cols)
            gm, gv = d((m, v), 1.5)
            assert np.asarray(gm).shape == (rows, cols)
            assert np.allclose(gm, 1.5 * np.outer(np.ones(rows), v), rtol=1e-13, atol=0)
            assert np.allclose(gv, 1.5 * m.sum(axis=0), rtol=1e-12, atol=1e-12)
    assert f"[{alg} sum_mat_vec]" not in table1.backend.fallbacks
    assert not [r for r in caplog.records if "sum_mat_vec" in r.getMessage() and "python" in r.getMessage()
                and r.getMessage().startswith(f"[{alg} sum_mat_vec]")]


def test_a_ragged_matrix_still_gives_the_right_gradient(table1, caplog):
    """Rows of lengths 2 and 1 have no 2-D array: the call runs compiled on flat columns and offsets
    (Note [Ragged vectors of numbers] in labrys.backends.numba_nested), without a note."""
    d = table1.derive("dualrevtape", "sum_mat_vec")
    with caplog.at_level("INFO", logger="labrys"):
        gm, gv = d(([np.array([1.0, 2.0]), np.array([3.0])], np.array([5.0, 7.0])), 1.0)
    assert [list(r) for r in gm] == [[5.0, 7.0], [5.0]]  # dot(row, v) reads v[j] for j < len(row)
    assert list(gv) == [4.0, 2.0]                         # v_0 meets 1 and 3, v_1 meets 2
    assert not [r for r in caplog.records if "python backend" in r.getMessage()], caplog.text
    assert "[dualrevtape sum_mat_vec]" not in table1.backend.fallbacks


NESTED = """
(def cube Float ((x : Vec (Vec Float)) (s : Float))
  (let (qs (build 2 (lam (k : Integer)
             (build (size x) (lam (r : Integer)
               (build (size (index r x)) (lam (c : Integer)
                 (mul (to_float (add k 1)) (mul s (index c (index r x)))))))))))
    (sumbuild 2 (lam (k : Integer)
      (sumbuild (size x) (lam (r : Integer) (sum (index r (index k qs)))))))))
(def tri Float (x : Vec Float)
  (let (rows (build (size x) (lam (r : Integer)
               (build (add r 1) (lam (c : Integer) (mul (index c x) (index r x)))))))
    (sumbuild (size x) (lam (r : Integer) (sum (index r rows))))))
(def dg Float (x : Float) (digamma x))
"""


def test_a_vector_of_matrices_of_dual_numbers_is_built_compiled():
    """qs : Vec (Vec (Vec (Tuple Float Integer))), a struct of arrays of rank 3 built row by row.
    cube = Σ_k (k + 1)·s·Σ x = 3 s Σ x: ∂/∂x = 3s everywhere, ∂/∂s = 3 Σ x."""
    m = labrys.load(NESTED, backend="compiled")
    x, s = np.arange(12.0).reshape(3, 4) - 5.0, 0.75
    gx, gs = m.derive("dualrevtape", "cube")((x, s), 1.0)
    assert np.allclose(gx, np.full((3, 4), 3 * s)) and gs == pytest.approx(3 * x.sum())
    assert "[dualrevtape cube]" not in m.backend.fallbacks


def test_a_ragged_build_of_dual_rows_is_right():
    """tri = Σ_r Σ_{c ≤ r} x_c x_r builds rows of lengths 1 … n: flat columns and offsets hold them
    (Note [Nested struct of arrays]).  ∂/∂x_j = Σ_{r ≥ j} x_r + (Σ_{c ≤ j} x_c)."""
    m = labrys.load(NESTED, backend="compiled")
    x = np.array([1.0, -2.0, 0.5, 3.0])
    got = m.derive("dualrevtape", "tri")(x, 1.0)
    want = [x[j:].sum() + x[:j + 1].sum() for j in range(4)]
    assert np.allclose(got, want)


def test_digamma_compiled_is_its_known_values():
    """ψ(1) = −γ, ψ(1/2) = −γ − 2 ln 2, ψ(x + 1) = ψ(x) + 1/x (here at x = −2.5 and 30), poles NaN."""
    m = labrys.load(NESTED, backend="compiled")
    gamma = 0.5772156649015329
    assert m.dg(1.0) == pytest.approx(-gamma, rel=1e-13)
    assert m.dg(0.5) == pytest.approx(-gamma - 2 * np.log(2), rel=1e-13)
    for x in (-2.5, 30.0):
        assert m.dg(x + 1) == pytest.approx(m.dg(x) + 1 / x, rel=1e-12)
    assert np.isnan(m.dg(0.0)) and np.isnan(m.dg(-3.0))
    assert m.backend.fallbacks == {}


@pytest.mark.skipif(not os.environ.get("LABRYS_EXAMPLES"), reason="ADBench GMM compiles for a minute; LABRYS_EXAMPLES")
def test_gmm_dualrevtape_runs_compiled_and_equals_rev():
    from labrys.adbench import read_gmm
    g = read_gmm(ROOT / "data" / "adbench" / "gmm" / "test.txt")
    m = labrys.load(ROOT / "src" / "labrys" / "adbench" / "gmm.ks", backend="compiled")
    ref = labrys.load(ROOT / "src" / "labrys" / "adbench" / "gmm.ks", backend="python")
    got = m.derive("dualrevtape", "gmm_objective")(g.arguments(), 1.0)
    want = ref.derive("rev", "gmm_objective")(g.arguments(), 1.0)
    for a, b in zip(got[1:4], want[1:4]):
        assert np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-10, atol=1e-12)
    assert "[dualrevtape gmm_objective]" not in m.backend.fallbacks
