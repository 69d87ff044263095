"""Split reverse mode of recursive functions on the compiled backend (Note
[Recursive BOGs] in labrys.ad.bog_types): a recursive function's BOG is an
index into a list of per-activation records in the compiled module's heap, so
[sufrev f] of self, mutual, tree and vector recursion compiles (no fallback
note) and runs 10^4 deep.  Expected values: hand-computed closed forms, central
finite differences, Knossos rev on the interpreter."""
from __future__ import annotations

import os

import numpy as np
import pytest

import labrys
from test_examples import ROOT

PROGRAM = (ROOT / "examples" / "recursion.ks").read_text() + """
(def poly Float ((x : Float) (n : Integer))
  (if (eq n 0) 1.0 (add 1.0 (mul x (poly x (sub n 1))))))
(def tree Float ((x : Float) (n : Integer))
  (if (lte n 0) (sin x) (mul (tree x (sub n 1)) (cos (tree (mul 0.5 x) (sub n 2))))))
(def ev Float ((x : Float) (n : Integer)) (if (eq n 0) x (mul x (od (sin x) (sub n 1)))))
(def od Float ((x : Float) (n : Integer)) (if (eq n 0) (cos x) (add x (ev x (sub n 1)))))
(def vrec Float ((v : Vec Float) (n : Integer))
  (if (eq n 0) (sum v)
      (mul (index (imod n (size v)) v)
           (vrec (build (size v) (lam (i : Integer) (sin (index i v)))) (sub n 1)))))
(def user Float ((x : Float) (y : Float)) (add (mul y (power x 5)) (ev y 4)))
"""

# each case is one compiled module, compiled anew in each process (recursive modules skip Numba's
# disk cache, Note [Compiled recursion]), 10-25 s under load: user (examples/recursion.ks's power and
# the mutual recursion ev/od through a non-recursive caller) always, the others with LABRYS_SLOW=1
SLOW = pytest.mark.skipif(not os.environ.get("LABRYS_SLOW"), reason="one more recursive module: LABRYS_SLOW=1")
CASES = [("user", (0.8, 0.3)),
         pytest.param("poly", (0.3, 12), marks=SLOW), pytest.param("tree", (0.6, 6), marks=SLOW),
         pytest.param("vrec", (np.array([0.3, 0.5, -0.2]), 5), marks=SLOW)]


@pytest.fixture(scope="module")
def mc():
    return labrys.load(PROGRAM, backend="compiled")


@pytest.fixture(scope="module")
def mi():
    return labrys.load(PROGRAM, backend="interp")


def fd_gradient(fn, args, h=1e-6):
    """Central differences in every Float argument (vectors element by element)."""
    out = []
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray):
            g = np.zeros_like(a)
            for j in range(a.size):
                up, down = a.copy(), a.copy()
                up[j] += h
                down[j] -= h
                g[j] = (fn(*args[:k], up, *args[k + 1:]) - fn(*args[:k], down, *args[k + 1:])) / (2 * h)
            out.append(g)
        elif isinstance(a, float):
            out.append((fn(*args[:k], a + h, *args[k + 1:]) - fn(*args[:k], a - h, *args[k + 1:])) / (2 * h))
        else:
            out.append(None)
    return out


@pytest.mark.parametrize("name, args", CASES, ids=["user", "poly", "tree", "vrec"])
def test_compiled_sufrev_of_recursion_equals_rev_and_finite_differences(mc, mi, name, args):
    got = mc.derive("sufrev", name)(args, 1.0)
    want = mi.derive("rev", name)(args, 1.0)
    fd = fd_gradient(getattr(mi, name), args)
    for g, w, f in zip(got, want, fd):
        if f is None:
            continue
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w, dtype=float), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g, dtype=float), f, rtol=1e-5, atol=1e-8)
    assert mc.backend.fallbacks == {}, "no note: the recursive BOGs compile"


def test_recursion_10_000_deep_compiled_and_the_default_gradient(mc):
    # poly x n = Σ_{k≤n} x^k: d/dx = Σ k x^(k-1) → 1/(1-x)² = 4 at x = 1/2 (to rounding at n = 10^4)
    assert mc.derive("sufrev", "poly")((0.5, 10_000), 1.0)[0] == pytest.approx(4.0, rel=1e-12)
    assert labrys.default_method(mc.poly).method == "sufrev"
    assert labrys.grad(mc.poly, argnums=0)(0.5, 10_000) == pytest.approx(4.0, rel=1e-12)
    # mutual recursion 10^4 deep: ev/od alternate; against the interpreter's rev at a small depth first
    assert mc.derive("sufrev", "ev")((0.4, 10_000), 1.0)[0] == pytest.approx(
        labrys.load(PROGRAM, backend="python").derive("sufrev", "ev")((0.4, 10_000), 1.0)[0], rel=1e-12)
    assert mc.backend.fallbacks == {}


# a recursive BOG returned to Python and passed back: tests/test_split_boundary.py
