"""dualrevtape's compiled tape at scale (Notes [A tape write without branches], [A pool of
tapes] in labrys.backends.numba_tape_runtime): Table 1's dot product against its hand
gradient, the tape's length counted exactly, and the pool's reuse giving a fresh run."""
from __future__ import annotations

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
    big = (np.empty(rt.POOL_BYTES // 8 + 1),) * 4
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
    """Rows of lengths 2 and 1 have no 2-D array: the call runs on python, with a note."""
    d = table1.derive("dualrevtape", "sum_mat_vec")
    with caplog.at_level("INFO", logger="labrys"):
        gm, gv = d(([np.array([1.0, 2.0]), np.array([3.0])], np.array([5.0, 7.0])), 1.0)
    assert [list(r) for r in gm] == [[5.0, 7.0], [5.0]]  # dot(row, v) reads v[j] for j < len(row)
    assert list(gv) == [4.0, 2.0]                         # v_0 meets 1 and 3, v_1 meets 2
    assert any("ragged" in r.getMessage() for r in caplog.records)
