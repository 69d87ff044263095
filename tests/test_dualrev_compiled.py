"""Smeding & Vákár's ``dualrev`` (§9.1–9.2: Contrib data, a staging array in the reverse
pass) and Krawiec et al.'s naive ``deltarev2`` (eval₂, a tree walk) on the compiled
backend (Notes [Contribs on the tape], [Naive eval₂ on the tape]).  Every gradient is
checked against central finite differences, Knossos ``rev`` and the Python run time of
the same algorithm, and nothing falls back to python."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys.values import Inj
from test_compiled_tape import CASES, PROGRAMS, call, finite_differences, flat

ROOT = Path(__file__).resolve().parent.parent
COMPILED = ["dualrev", "deltarev2", "deltarev1"]
D1_TYPES = {"pairs", "sumin", "outer"}  # deltarev1 compiled: Float, Integer, Bool, tuples, Vec Float in and out only
RUNS = [(alg, c) for alg in COMPILED for c in CASES if alg != "deltarev1" or c[0] not in D1_TYPES]

MORE = """
(def chainv Float ((x : Float) (n : Integer))
  (if (eq n 0) x (let (y (chainv x (sub n 1))) (add (mul 0.5 y) (mul y 0.5)))))
(def closures Float ((x : Float) (y : Float))
  (let (f (lam (z : Float) (mul z (mul x y))))
    (add (f (sin x)) (f y))))
(def mapped (Vec Float) ((v : Vec Float) (c : Float))
  (map (lam (a : Float) (mul c (exp a))) v))
"""


@pytest.fixture(scope="module")
def compiled() -> labrys.Module:
    return labrys.load(PROGRAMS + MORE, backend="compiled")


@pytest.fixture(scope="module")
def python() -> labrys.Module:
    return labrys.load(PROGRAMS + MORE, backend="python")


@pytest.mark.parametrize("alg, case", RUNS, ids=[f"{a}-{c[0]}-{k}" for k, (a, c) in enumerate(RUNS)])
def test_compiled_gradient_is_finite_differences_and_the_python_run_time(alg, case, compiled, python):
    name, x, dt = case
    got = call(compiled, alg, name, x, dt)
    assert compiled.backend.fallbacks == {}, compiled.backend.fallbacks
    assert np.allclose(flat(got), finite_differences(python, name, x, dt), rtol=1e-5, atol=1e-6)
    assert np.allclose(flat(got), flat(call(python, alg, name, x, dt)), rtol=1e-12, atol=1e-12)
    if isinstance(x[0], Inj):
        assert got[0].left == x[0].left


@pytest.mark.parametrize("alg", COMPILED)
@pytest.mark.parametrize("name, x, dt", [
    ("chainv", (1.3, 12), 1.0),                               # a shared chain: y used twice per step
    ("closures", (0.4, -1.1), 1.0),                           # a closure over both inputs, called twice
    ("mapped", (np.array([0.1, -0.5, 0.9]), 1.7), np.array([1.0, -2.0, 0.5])),  # a vector result
    ("fibc", (0.5, 1.5, 12), 1.0)])
def test_compiled_equals_knossos_rev_and_finite_differences(alg, name, x, dt, compiled, python):
    got = call(compiled, alg, name, x, dt)
    assert not any(k.endswith(f" {name}]") for k in compiled.backend.fallbacks), compiled.backend.fallbacks
    ref = "deltarev" if name == "closures" else "rev"  # Knossos rev has no rule for a let-bound lambda
    assert np.allclose(flat(got), flat(call(python, ref, name, x, dt)), rtol=1e-12, atol=1e-12)
    assert np.allclose(flat(got), finite_differences(python, name, x, dt), rtol=1e-5, atol=1e-6)


def test_deltarev1_on_a_vector_of_tuples_falls_back_with_a_note():
    m = labrys.load(PROGRAMS, backend="compiled")
    x = [(1.0, 0.1), (2.0, -0.3)]
    assert flat(m.derive("deltarev1", "pairs")(x, 1.0)) == pytest.approx(flat(m.derive("rev", "pairs")(x, 1.0)))
    assert "Vec (Tuple Float Float)" in m.backend.fallbacks["[deltarev1 pairs]"]


MATRICES = """
(def mv Float ((m : Vec (Vec Float)) (v : Vec Float))
  (sum (build (size m) (lam (i : Integer)
    (let (row (index i m)) (mul 2.0 (sum (build (size row) (lam (j : Integer) (mul (index j row) (index j v)))))))))))
(def cube Float ((m : Vec (Vec Float)) (c : Float))
  (let (q (build 3 (lam (k : Integer) (build (size m) (lam (i : Integer)
             (build 2 (lam (j : Integer) (mul c (mul (to_float k) (index j (index i m)))))))))))
    (sum (build 3 (lam (k : Integer) (sum (build (size m) (lam (i : Integer) (sum (index i (index k q)))))))))))
(def carry Float ((m : Vec (Vec Float)) (n : Integer))
  (let (r (fold (lam (acc_t : Tuple (Vec (Vec Float)) Integer)
                  (let ((acc t) acc_t) (build (size acc) (lam (i : Integer) (mul (index i acc) (index i m))))))
                m (build n (lam (t : Integer) t))))
    (sum (build (size r) (lam (i : Integer) (sum (index i r)))))))
"""


@pytest.mark.parametrize("name, x", [
    ("mv", (list(np.arange(6.0).reshape(3, 2) - 2.0), np.array([1.0, -2.0]))),
    ("cube", (list(np.arange(6.0).reshape(3, 2) / 3.0), 1.5)),     # a vector of matrices of dual numbers
    ("carry", ([np.array([1.1, 0.9]), np.array([0.5, -1.2])], 3))])  # a fold carrying a matrix of them
def test_matrices_of_dual_numbers_compile(name, x):
    """dualrev's dual of a matrix is a nested struct of arrays whose (ID, Contrib) are columns of their own."""
    m = labrys.load(MATRICES, backend="compiled")
    ref = labrys.load(MATRICES, backend="python")
    want = call(ref, "rev", name, x, 1.0)
    for alg in ("dualrev", "dualrevtape"):
        assert np.allclose(flat(call(m, alg, name, x, 1.0)), flat(want), rtol=1e-12, atol=1e-12)
    assert np.allclose(flat(want), finite_differences(ref, name, x, 1.0), rtol=1e-5, atol=1e-6)
    assert m.backend.fallbacks == {}


def test_the_examples_run_compiled_without_a_note():
    m = labrys.load(ROOT / "examples" / "dualrev.ks", backend="compiled")
    assert flat(m.derive("dualrev", "fibc")((1.0, 1.0, 10), 1.0)) == [34.0, 55.0]  # Fib(9), Fib(10)
    d = labrys.load(ROOT / "examples" / "delta_chain.ks", backend="compiled")
    assert d.derive("deltarev2", "chain")((1.5, 10), 1.0)[0] == 1024.0               # 2^10
    assert list(d.derive("deltarev1", "sumsq")(np.array([1.0, 2.0, 3.0]), 1.0)) == [2.0, 4.0, 6.0]
    assert m.backend.fallbacks == {} and d.backend.fallbacks == {}


@pytest.mark.skipif(not os.environ.get("LABRYS_EXAMPLES"), reason="ADBench GMM compiles for a minute; LABRYS_EXAMPLES")
def test_gmm_dualrev_runs_compiled_and_equals_rev_and_finite_differences():
    from labrys.adbench import read_gmm
    g = read_gmm(ROOT / "data" / "adbench" / "gmm" / "test.txt")
    path = ROOT / "src" / "labrys" / "adbench" / "gmm.ks"
    m, ref = labrys.load(path, backend="compiled"), labrys.load(path, backend="python")
    x = g.arguments()
    got = m.derive("dualrev", "gmm_objective")(x, 1.0)
    want = ref.derive("rev", "gmm_objective")(x, 1.0)
    for a, b in zip(got[:3], want[:3]):
        assert np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(0)  # along a random direction in (alphas, means, icf)
    dirs = [rng.standard_normal(np.shape(a)) for a in x[:3]]
    h = 1e-6
    f = [m.gmm_objective(*(tuple(np.asarray(a) + s * h * d for a, d in zip(x[:3], dirs)) + tuple(x[3:])))
         for s in (1, -1)]
    slope = sum(float(np.sum(np.asarray(a, dtype=float) * d)) for a, d in zip(got[:3], dirs))
    assert (f[0] - f[1]) / (2 * h) == pytest.approx(slope, rel=1e-5)
    assert m.backend.fallbacks == {}, m.backend.fallbacks
