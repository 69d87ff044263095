"""Fast math on the compiled backend (Note [Reassociation on one thread] in
labrys.backends.numba_fastmath): ``labrys.grad(..., fast_math=True)``,
``m.derive(..., fast_math=True)``, ``labrys.set_fast_math``, ``labrys --fast-math`` and
``LABRYS_FAST_MATH=1`` let LLVM reassociate sums (vector reductions) and fuse
multiply-adds, never assuming that there is no NaN or infinity.  Expected values: Knossos
``rev`` on the interpreter, NumPy, and IEEE arithmetic by hand; no timing here."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import labrys
from labrys.bench.report import markdown
from labrys.bench.run import Options
from labrys.context import Limits, fast_math, fast_math_for
from labrys.errors import LabrysError
from test_threads import GMM, _gmm_args, _source

DOT = """
(def dot Float ((a : Vec Float) (b : Vec Float))
  (sumbuild (size a) (lam (i : Integer) (mul (index i a) (index i b)))))
(def biggest Float (v : Vec Float) (max v))
"""


def test_gmm_gradient_with_fast_math_equals_knossos_rev_on_the_interpreter():
    args = _gmm_args(29, 9, 4, seed=5)  # d = 9: vector loops and their scalar remainders both run
    compiled = labrys.load(GMM, backend="compiled")
    expected = labrys.grad(labrys.load(GMM, backend="interp").gmm_objective, argnums=(1, 2, 3), method="rev")(*args)
    got = labrys.grad(compiled.gmm_objective, argnums=(1, 2, 3), threads=1, fast_math=True)(*args)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert 'fastmath={"reassoc", "nsz", "contract"}' in _source(compiled)
    assert "nnan" not in _source(compiled) and "ninf" not in _source(compiled)
    assert not compiled.backend.fallbacks


def test_default_is_the_interpreters_order_bit_for_bit():
    """Without fast math the compiled dot product adds in the interpreter's order: the same
    bits, on data where another order gives other bits."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=1001) * 10.0 ** rng.integers(-8, 8, size=1001), rng.normal(size=1001)
    assert fast_math() is False
    exact = labrys.load(DOT, backend="interp").dot(a, b)
    compiled = labrys.load(DOT, backend="compiled")
    assert compiled.dot(a, b) == exact
    assert "fastmath" not in _source(compiled)
    with fast_math_for(True):
        fast = labrys.load(DOT, backend="compiled")
        got = fast.dot(a, b)
    assert got == pytest.approx(exact, rel=1e-12, abs=1e-12 * float(np.sum(np.abs(a * b))))
    assert "fastmath" in _source(fast)


def test_fast_math_keeps_nan_and_infinities():
    """Never ``nnan``/``ninf``: a NaN or an infinity in the data gives what IEEE arithmetic gives."""
    with fast_math_for(True):
        m = labrys.load(DOT, backend="compiled")
        ones = np.ones(40)
        with_nan, with_inf = ones.copy(), ones.copy()
        with_nan[17], with_inf[33] = np.nan, np.inf
        assert np.isnan(m.dot(with_nan, ones))
        assert m.dot(with_inf, ones) == np.inf
        both = with_inf.copy()
        both[5] = -np.inf
        assert np.isnan(m.dot(both, ones))  # inf + (-inf): NaN
        assert m.biggest(with_inf) == np.inf
        grad = labrys.grad(m.dot, fast_math=True, threads=1)(with_nan, ones)
    np.testing.assert_array_equal(grad[0], ones)  # d/da = b
    assert np.isnan(grad[1][17]) and np.sum(np.isnan(grad[1])) == 1  # d/db = a


def test_derive_with_fast_math_matches_numpy():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=64), rng.normal(size=64)
    m = labrys.load(DOT, backend="compiled")
    d = m.derive("rev", "dot", fast_math=True)
    ga, gb = d((a, b), 1.5)
    np.testing.assert_allclose(ga, 1.5 * b, rtol=1e-14)
    np.testing.assert_allclose(gb, 1.5 * a, rtol=1e-14)
    assert "fastmath" in _source(m)


@pytest.mark.skipif(not re.match(r"x86_64|AMD64|aarch64|arm64", __import__("platform").machine()),
                    reason="a target with double-precision SIMD")
def test_fast_math_dot_product_is_a_vector_reduction(tmp_path, monkeypatch):
    """The point of the option (Note [Reassociation on one thread]): with it LLVM adds the dot
    product's terms in vector registers; without, in scalar order.  (Numba inspects only code it
    compiled in this process: a fresh cache folder, a program no other test generates.)"""
    from labrys.backends import cache

    monkeypatch.setenv("LABRYS_CACHE_DIR", str(tmp_path))
    program = """
(def inner Float ((u_vec : Vec Float) (w_vec : Vec Float))
  (sumbuild (size u_vec) (lam (i : Integer) (mul (index i u_vec) (index i w_vec)))))
"""

    def vector_adds(flag: bool) -> list[str]:
        before = set(cache._loaded)
        with fast_math_for(flag):
            m = labrys.load(program, backend="compiled")
            assert m.inner(np.ones(8), np.arange(8.0)) == 28.0
        found = []
        for key in set(cache._loaded) - before:
            module = cache._loaded[key][0]
            for name in dir(module):
                fn = getattr(module, name)
                if name.startswith("_fn") and hasattr(fn, "inspect_llvm"):
                    for ir in fn.inspect_llvm().values():
                        found += re.findall(r"fadd [a-z ]*<\d+ x double>", ir)
        return found

    assert any("reassoc" in x for x in vector_adds(True))
    assert vector_adds(False) == []


def test_fast_math_must_be_a_bool():
    m = labrys.load(DOT, backend="compiled")
    with pytest.raises(LabrysError, match="fast_math must be True or False"):
        labrys.grad(m.dot, fast_math="yes")
    with pytest.raises(LabrysError, match="fast_math must be True or False"):
        m.derive("rev", "dot", fast_math=1)
    with pytest.raises(LabrysError, match="fast_math must be True or False"):
        labrys.set_fast_math(None)
    assert Limits.fast_math is False


def test_cli_fast_math_and_environment(tmp_path):
    prog = tmp_path / "dot.ks"
    prog.write_text(DOT)
    for extra, env in ((["--fast-math"], {}), ([], {"LABRYS_FAST_MATH": "1"}), ([], {})):
        cmd = [sys.executable, "-m", "labrys", *extra, "run", str(prog), "dot", "[1, 2, 3]", "[4, 5, 6]"]
        out = subprocess.run(cmd, capture_output=True, text=True, env={**__import__("os").environ, **env}, timeout=600)
        assert out.returncode == 0, out.stderr
        assert float(out.stdout.strip()) == 32.0


def test_bench_says_which_arithmetic_labrys_used():
    assert Options().fast_math is True  # the bench's default: the fastest setting that keeps NaN and Inf
    assert "fast math (the default" in markdown([], Options(), "labrys bench")
    assert "--no-fast-math" in markdown([], Options(fast_math=False), "labrys bench")
