"""dualrevtape (Smeding & Vákár §9.3) and deltarev (Krawiec et al. §7) on the compiled
backend: the tape as arrays and the reverse sweep as one compiled loop (Notes [The tape
as arrays], [The tape in generated code], [Deltas on the tape]).  Every gradient is
checked against central finite differences and against Knossos ``rev`` (or the Python
run time of the same algorithm where ``rev`` has no rule), and nothing falls back."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys import METER
from labrys.ad.dualrev_runtime import last_run
from labrys.values import Inj

ROOT = Path(__file__).resolve().parent.parent
TAPED = ["dualrevtape", "deltarev"]

PROGRAMS = """
(def scal Float ((x : Float) (y : Float))
  (let (z (mul x y)) (add (sin z) (div (exp x) (add 1.0 (mul y y))))))
(def dotv Float ((a : Vec Float) (b : Vec Float))
  (sum (build (size a) (lam (i : Integer) (mul (index i a) (index i b))))))
(def tbad Float ((x : Float) (n : Integer))
  (if (eq n 0) x (let (y (tbad x (sub n 1))) (mul y y))))
(def fibc Float ((x0 : Float) (x1 : Float) (n : Integer))
  (if (lte n 1) x1 (fibc x1 (add x0 x1) (sub n 1))))
(def loopf Float ((v : Vec Float) (c : Float))
  (fold (lam (acc_x : Tuple Float Float) (let ((acc x) acc_x) (add (mul acc c) (sin x)))) 0.0 v))
(def mixed Float ((x : Float) (k : Integer) (b : Bool))
  (if b (mul x (to_float k)) (sub 0.0 (mul x x))))
(def vout (Vec Float) ((v : Vec Float) (s : Float))
  (build (size v) (lam (i : Integer) (mul s (mul (index i v) (index i v))))))
(def pairs Float (p : Vec (Tuple Float Float))
  (sum (build (size p) (lam (i : Integer) (let ((a b) (index i p)) (mul a (exp b)))))))
(def scaled Float ((x : Float) (n : Integer))
  (if (eq n 0) x (scaled (mul 1.0001 x) (sub n 1))))
(def outer (Vec (Vec Float)) ((u : Vec Float) (w : Vec Float))
  (build (size u) (lam (i : Integer) (build (size w) (lam (j : Integer) (mul (index i u) (sin (index j w))))))))
(def sumin Float ((s : Sum Float (Vec Float)) (c : Float))
  (case s ((inl x) (mul c (mul x x))) ((inr v) (mul c (sum v)))))
"""

# (function, argument, output cotangent)
CASES = [
    ("scal", (0.7, -1.3), 1.0),
    ("dotv", (np.array([1.0, 2.0, 3.0]), np.array([4.0, -5.0, 6.5])), 1.0),
    ("tbad", (1.1, 4), 1.0),
    ("fibc", (0.5, 1.5, 9), 2.0),
    ("loopf", (np.array([0.3, -1.2, 2.0, 0.8]), 0.9), 1.0),
    ("mixed", (1.5, 3, True), 1.0),
    ("mixed", (1.5, 3, False), -2.0),
    ("vout", (np.array([1.0, -2.0, 3.0]), 0.5), np.array([1.0, 0.5, -1.0])),
    ("pairs", ([(1.0, 0.1), (2.0, -0.3), (-1.5, 0.7)],), 1.0),
    ("outer", (np.array([1.0, -2.0, 3.0]), np.array([0.5, 1.5])), np.array([[1.0, 2.0], [-1.0, 0.5], [3.0, 0.25]])),
    ("sumin", (Inj(True, 1.5), 2.0), 1.0),
    ("sumin", (Inj(False, np.array([1.0, 2.0, 3.0])), 2.0), 1.0),
]
IDS = [f"{c[0]}-{k}" for k, c in enumerate(CASES)]


@pytest.fixture(scope="module")
def compiled() -> labrys.Module:
    return labrys.load(PROGRAMS, backend="compiled")


@pytest.fixture(scope="module")
def python() -> labrys.Module:
    return labrys.load(PROGRAMS, backend="python")


def flat(v) -> list[float]:
    """The reals of a value (gradient or argument), in order; units and Integers skipped."""
    if isinstance(v, Inj):
        return flat(v.value)
    if isinstance(v, (bool, int, np.integer)):
        return []
    if isinstance(v, (float, np.floating)):
        return [float(v)]
    return [x for e in (v.tolist() if hasattr(v, "tolist") else v) for x in flat(e)]


def finite_differences(m: labrys.Module, name: str, x: tuple, dt) -> list[float]:
    """Central differences of ⟨dt, f(x)⟩ for every real of x, by rebuilding x with one real moved."""
    f = getattr(m, name)
    base = flat(x)

    def rebuild(v, it):
        if isinstance(v, Inj):
            return Inj(v.left, rebuild(v.value, it))
        if isinstance(v, (bool, int, np.integer)):
            return v
        if isinstance(v, (float, np.floating)):
            return next(it)
        if isinstance(v, np.ndarray):
            return np.array([next(it) for _ in range(v.size)])
        return type(v)(rebuild(e, it) for e in v) if isinstance(v, tuple) else [rebuild(e, it) for e in v]

    out = []
    for k in range(len(base)):
        vals = []
        for h in (1e-6, -1e-6):
            moved = list(base)
            moved[k] += h
            y = f(*rebuild(x, iter(moved)))
            vals.append(float(np.dot(np.ravel(flat(y)), np.ravel(flat(dt)))))
        out.append((vals[0] - vals[1]) / 2e-6)
    return out


def call(m: labrys.Module, alg: str, name: str, x: tuple, dt):
    return m.derive(alg, name)(x if len(x) > 1 else x[0], dt)


@pytest.mark.parametrize("alg", TAPED)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compiled_gradient_is_finite_differences_and_the_python_run_time(alg, case, compiled, python):
    name, x, dt = case
    got = call(compiled, alg, name, x, dt)
    assert compiled.backend.fallbacks == {}, compiled.backend.fallbacks
    assert np.allclose(flat(got), finite_differences(python, name, x, dt), rtol=1e-5, atol=1e-6)
    assert np.allclose(flat(got), flat(call(python, alg, name, x, dt)), rtol=1e-12, atol=1e-12)
    if isinstance(x[0], Inj):  # the gradient of a sum input is the same alternative
        assert got[0].left == x[0].left


@pytest.mark.parametrize("alg", TAPED)
@pytest.mark.parametrize("name", ["scal", "dotv", "loopf", "vout"])
def test_compiled_gradient_is_knossos_rev(alg, name, compiled):
    _, x, dt = next(c for c in CASES if c[0] == name)
    want = call(compiled, "rev", name, x, dt)
    assert np.allclose(flat(call(compiled, alg, name, x, dt)), flat(want), rtol=1e-12, atol=1e-12)


def test_a_fresh_tape_per_call_and_repeated_calls_agree(compiled):
    d = compiled.derive("dualrevtape", "fibc")
    first = d((0.5, 1.5, 30), 1.0)
    assert first == d((0.5, 1.5, 30), 1.0)
    assert d((0.5, 1.5, 2), 1.0) == (1.0, 1.0, ())  # fibc(x0, x1, 2) = x0 + x1


def test_a_hundred_thousand_element_input(compiled):
    n = 100_000
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    for alg in TAPED:  # the first run overflows the 1024-slot tape: one more run on a tape of its size
        ga, gb = compiled.derive(alg, "dotv")((a, b), 1.0)
        assert np.allclose(ga, b) and np.allclose(gb, a)
        gv, gs = compiled.derive(alg, "vout")((a, 0.5), np.ones(n))
        assert np.allclose(gv, a) and np.isclose(gs, np.dot(a, a))
    assert compiled.backend.fallbacks == {}


def test_deep_recursion_on_the_tape(compiled):
    # 5000 nested calls, one op each: neither the tape nor the sweep recurses
    for alg in TAPED:
        g, _ = compiled.derive(alg, "scaled")((2.0, 5000), 1.0)
        assert g == pytest.approx(1.0001 ** 5000, rel=1e-9)
    assert compiled.backend.fallbacks == {}


def test_the_examples_run_dualrevtape_compiled():
    m = labrys.load(ROOT / "examples" / "dualrev.ks", backend="compiled")
    want = {"fig1": ((2.0, 3.0), (7.0, 2.0)), "tex": (((2.0, 3.0),), (8.0, 3.0)),
            "tbad": ((1.0, 10), (1024.0, ())), "fibc": ((1.0, 1.0, 10), (34.0, 55.0, ())),
            "sumv": ((np.array([1.0, 2.0, 3.0]),), [1.0, 1.0, 1.0])}
    for name, (x, g) in want.items():
        got = m.derive("dualrevtape", name)(x if len(x) > 1 else x[0], 1.0)
        assert flat(got) == flat(g), name
    assert m.backend.fallbacks == {}


@pytest.mark.parametrize("path", ["delta_chain.ks", "rotate_vec_by_quat.ks"])
def test_the_examples_run_deltarev_compiled(path):
    m = labrys.load(ROOT / "examples" / path, backend="compiled")
    ref = labrys.load(ROOT / "examples" / path, backend="interp")
    name = "chain" if path == "delta_chain.ks" else "rotx"
    x = (1.0, 10) if name == "chain" else ((0.1, 0.2, 0.3, 0.9), (1.0, 2.0, 3.0))
    got = m.derive("deltarev", name)(x, 1.0)
    assert np.allclose(flat(got), flat(ref.derive("rev", name)(x, 1.0)), rtol=1e-12)
    assert m.backend.fallbacks == {}


def test_the_staged_deltarev_versions_compile_too():  # tests/test_dualrev_compiled.py checks them in full
    m = labrys.load(PROGRAMS, backend="compiled")
    for alg in ("deltarev2", "deltarev1"):
        assert m.derive(alg, "scal")((0.7, -1.3), 1.0) == pytest.approx(
            m.derive("deltarev", "scal")((0.7, -1.3), 1.0))
    assert m.backend.fallbacks == {}


def test_calling_the_translation_from_outside_is_a_positioned_error():
    m = labrys.load(PROGRAMS, backend="compiled")
    with pytest.raises(labrys.LabrysError, match="outside a run"):
        m.function("[drtape scal]")((0.7, 1), (1.3, 2))


@pytest.mark.parametrize("alg", TAPED)
def test_the_sweep_is_linear_and_the_tape_has_one_entry_per_op(alg):
    """On the op meter (interp) and on the tape itself: Σ v over n and 2n elements."""
    m = labrys.load(PROGRAMS, backend="interp")
    d = m.derive(alg, "dotv")
    with warnings.catch_warnings():  # other tests' calls ran on compiled, uncounted
        warnings.simplefilter("ignore")
        _ = METER.ops
    costs = []
    for n in (200, 400):
        before = METER.ops
        d((np.ones(n), np.ones(n)), 1.0)
        costs.append(METER.ops - before)
    assert 1.9 < costs[1] / costs[0] < 2.1
    if alg == "dualrevtape":  # slot 0, 2n inputs, n products, n sums and the literal 0.0
        d((np.ones(300), np.ones(300)), 1.0)
        assert len(last_run().tape) == 1 + 2 * 300 + 300 + 300 + 1
