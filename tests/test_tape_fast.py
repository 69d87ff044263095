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
