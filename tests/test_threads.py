"""Parallel reverse sums on the compiled backend (Note [Parallel reverse sums] in
labrys.backends.numba_parallel): ``labrys.grad(..., threads=N)`` splits a gradient's
outer reverse sum into N chunks summed on threads.  Expected values: Knossos rev on
the interpreter, and NumPy; the parallel gradient equals them up to float
reassociation.  No timing here (benchmarks/README.md has the measurements)."""
from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

import labrys
from labrys.errors import LabrysError

GMM = str(resources.files("labrys.adbench").joinpath("gmm.ks"))


def _gmm_args(n: int, d: int, k: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    alphas = rng.normal(size=k)
    means = rng.normal(size=(k, d))
    icf = rng.normal(scale=0.3, size=(k, d + d * (d - 1) // 2))
    return x, alphas, means, icf, (1.2, 2)


def _source(m) -> str:
    return "\n".join(m.backend.sources.values())


def test_gmm_gradient_on_threads_equals_knossos_rev_on_the_interpreter():
    args = _gmm_args(37, 3, 4)
    compiled = labrys.load(GMM, backend="compiled")
    expected = labrys.grad(labrys.load(GMM, backend="interp").gmm_objective, argnums=(1, 2, 3), method="rev")(*args)
    for n in (2, 3):  # three chunks on two cores too: the chunks are fixed by n and N, not by the cores
        got = labrys.grad(compiled.gmm_objective, argnums=(1, 2, 3), threads=n)(*args)
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)
    assert "_prange(" in _source(compiled)
    assert not compiled.backend.fallbacks


SQUARES = """
(def rows Float ((x : Vec (Vec Float)) (k : Vec Integer))
  (sumbuild (size k) (lam (i : Integer)
    (let (row (index (index i k) x))
      (sumbuild (size row) (lam (j : Integer)
        (sumbuild (size row) (lam (l : Integer) (mul (index j row) (index l row))))))))))
(def cheap Float (v : Vec Float)
  (sumbuild (size v) (lam (i : Integer) (let (y (index i v)) (mul y (sin y))))))
"""


def _rows_gradient(x, k):
    """d/dx of Σ_i (Σ_j x[k_i, j])²: each use of row r adds 2 Σ_j x[r, j] to every element of row r."""
    g = np.zeros_like(x)
    for r in k:
        g[r] += 2.0 * np.sum(x[r])
    return g


def test_a_parallel_sum_equals_numpy_and_a_failing_chunk_is_an_error_not_a_partial_sum():
    m = labrys.load(SQUARES, backend="compiled")
    x = np.arange(12.0).reshape(6, 2) / 7.0
    k = np.array([0, 3, 3, 5, 1, 2, 2, 4, 0, 5, 5], dtype=np.int64)
    grad = labrys.grad(m.rows, argnums=0, threads=2)
    np.testing.assert_allclose(grad(x, k), _rows_gradient(x, k), rtol=1e-13)
    assert "_prange(" in _source(m)
    # an index out of range in the second chunk only: Numba drops exceptions raised on its
    # threads, so without the guard the result would be the first chunk's sum
    bad = k.copy()
    bad[-1] = 40
    with pytest.raises(LabrysError, match="index"):
        grad(x, bad)
    np.testing.assert_allclose(grad(x, k), _rows_gradient(x, k), rtol=1e-13)  # and it still works afterwards
    assert not m.backend.fallbacks


def test_serial_code_has_no_parallel_loop_and_a_cheap_body_is_not_split():
    m = labrys.load(SQUARES, backend="compiled")
    x = np.arange(12.0).reshape(6, 2) / 7.0
    k = np.array([0, 3, 5, 1], dtype=np.int64)
    np.testing.assert_allclose(labrys.grad(m.rows, argnums=0, threads=1)(x, k), _rows_gradient(x, k), rtol=1e-13)
    v = np.linspace(-1.0, 2.0, 9)
    np.testing.assert_allclose(labrys.grad(m.cheap, threads=2)(v), np.sin(v) + v * np.cos(v), rtol=1e-13)
    assert "_prange(" not in _source(m)  # rows on one thread; cheap's body has no loop nest


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_threads_must_be_a_positive_integer(bad):
    m = labrys.load(SQUARES, backend="interp")
    with pytest.raises(LabrysError, match="threads must be a positive integer"):
        labrys.grad(m.cheap, threads=bad)
    with pytest.raises(LabrysError, match="threads must be a positive integer"):
        labrys.set_threads(bad)


def test_the_cli_takes_threads(tmp_path, capsys):
    from labrys.cli.main import build_parser, main
    from labrys.context import Limits

    bench = build_parser().parse_args(["bench", "--threads", "0"])  # the peers' threads, not labrys's
    assert bench.threads == 0 and bench.labrys_threads is None

    before = Limits.threads
    try:
        assert main(["--threads", "0", "algorithms"]) != 0
        assert "threads must be a positive integer" in capsys.readouterr().err
        assert main(["--threads", "2", "algorithms"]) == 0
        assert Limits.threads == 2
    finally:
        labrys.set_threads(before)
