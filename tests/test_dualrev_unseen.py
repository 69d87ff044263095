"""Every one of Smeding & Vákár's seven versions (dualrev1 … dualrev5, dualrev, dualrevtape)
on programs written for this test and found nowhere else in the repository — the
paper's Fig. 1 / Fig. 15a example, a chain of shared lets, closures over both inputs,
mutual recursion through ``if``, vector and matrix inputs, a vector result, a tuple of
a vector and a scalar — on ``interp``, ``python`` and ``compiled``.  Expectations are
independent of the code under test: Fig. 1's gradient by hand, central finite
differences, and Krawiec et al.'s ``deltarev`` (another algorithm of the registry).

On ``compiled`` (tests/test_dualrev_stages_compiled.py) each stage compiles one
module of a compact program covering the same constructs with vectors in and out;
with ``LABRYS_EXAMPLES`` set, these programs too.
"""
from __future__ import annotations

import numpy as np
import pytest

import labrys

STAGES = ["dualrev1", "dualrev2", "dualrev3", "dualrev4", "dualrev5", "dualrev", "dualrevtape"]

PROGRAMS = """
; Fig. 1 / Fig. 15a of the paper: \\(x, y). let z = x + y in x * z
(def paperfig Float ((u : Float) (w : Float)) (let (s (add u w)) (mul u s)))
; a chain of shared lets: every link uses the one before it twice
(def links Float ((p : Float) (q : Float))
  (let ((l1 (mul p q))
        (l2 (add l1 (mul l1 l1)))
        (l3 (mul l2 (cos l2)))
        (l4 (div l3 (add 3.0 (mul l3 l3))))
        (l5 (sub (mul l4 l4) (mul l4 p))))
    (add l5 (mul l5 q))))
; closures over both inputs, one calling the other, applied to values of both
(def closing Float ((p : Float) (q : Float))
  (let ((f (lam (t : Float) (add (mul p t) (exp (mul q (mul t 0.5))))))
        (g (lam (t : Float) (f (mul t (f q))))))
    (add (g p) (mul (f (g 0.25)) q))))
; mutual recursion through if, each side changing its argument differently
(def ping Float ((t : Float) (k : Integer))
  (if (lte k 0) (mul t t) (add (pong (sin (mul t 1.5)) (sub k 1)) t)))
(def pong Float ((t : Float) (k : Integer))
  (if (lte k 0) (exp t) (mul (ping (add (mul t 0.7) 0.1) (sub k 1)) (cos t))))
; a vector result: a closure over the scalar, mapped, and a reversal
(def spread (Vec Float) ((v : Vec Float) (c : Float))
  (let (h (lam (t : Float) (mul c (mul t t))))
    (build (size v) (lam (i : Integer)
      (add (h (index i v)) (mul (index (sub (sub (size v) 1) i) v) c))))))
; a tuple of a vector and a scalar
(def both (Tuple (Vec Float) Float) ((v : Vec Float) (c : Float))
  (tuple (map (lam (t : Float) (sin (mul t c))) v) (sumbuild (size v) (lam (i : Integer) (mul (index i v) c)))))
; a matrix input
(def rows Float ((m : Vec (Vec Float)) (c : Float))
  (sum (map (lam (r : Vec Float) (mul c (mul (sum r) (index 0 r)))) m)))
; all of them at once: one derivation per stage on compiled (LABRYS_EXAMPLES)
(def everything (Tuple (Vec Float) Float) ((v : Vec Float) (p : Float) (q : Float) (k : Integer))
  (let (b (both v q))
    (tuple (spread v p)
           (add (add (add (paperfig p q) (links p q)) (add (closing p q) (ping p k)))
                (add (get$2$2 b) (sum (get$1$2 b)))))))
"""

V = np.array([0.3, -0.8, 1.1, 0.45])
M = np.array([[0.5, -1.0, 0.25], [1.5, 0.2, -0.3]])
CASES = {  # function -> (arguments, output cotangent)
    "paperfig": ((2.0, 3.0), 1.0),
    "links": ((0.7, -0.4), 1.0),
    "closing": ((0.3, 0.6), 1.0),
    "ping": ((0.4, 5), 1.0),
    "spread": ((V, 0.9), np.array([1.0, -2.0, 0.5, 3.0])),
    "both": ((V, 0.7), (np.array([0.5, 1.0, -1.0, 2.0]), 1.5)),
    "rows": ((M, 1.3), 1.0),
    "everything": ((V, 0.35, -0.6, 4), (np.array([1.0, 0.5, -0.25, 2.0]), 1.0)),
}


def reals(v) -> list[float]:
    """The reals of a value (gradient or argument) in order, Integers and units skipped."""
    if isinstance(v, (bool, int, np.integer)):
        return []
    if isinstance(v, (float, np.floating)):
        return [float(v)]
    if isinstance(v, np.ndarray):
        return [float(x) for x in v.ravel()]
    return [x for e in v for x in reals(e)]


def refill(v, it):
    """v with its reals taken from it, in the order of ``reals``."""
    if isinstance(v, (bool, int, np.integer)):
        return v
    if isinstance(v, (float, np.floating)):
        return next(it)
    if isinstance(v, np.ndarray):
        return np.array([next(it) for _ in range(v.size)]).reshape(v.shape)
    return tuple(refill(e, it) for e in v)


def finite_differences(m: labrys.Module, name: str, x: tuple, dt) -> list[float]:
    f, base, out = m.function(name), reals(x), []
    for k in range(len(base)):
        sides = []
        for h in (1e-6, -1e-6):
            moved = list(base)
            moved[k] += h
            sides.append(float(np.dot(reals(f(*refill(x, iter(moved)))), reals(dt))))
        out.append((sides[0] - sides[1]) / 2e-6)
    return out


@pytest.fixture(scope="module")
def modules():
    return {b: labrys.load(PROGRAMS, backend=b) for b in ("interp", "python")}


@pytest.fixture(scope="module")
def expected(modules):
    """Per case: (central differences, deltarev's gradient), both on python."""
    py = modules["python"]
    return {name: (finite_differences(py, name, x, dt), reals(py.derive("deltarev", name)(x, dt)))
            for name, (x, dt) in CASES.items()}


def check(got, want) -> None:
    fd, delta = want
    assert np.allclose(reals(got), delta, rtol=1e-10, atol=1e-12)
    assert np.allclose(reals(got), fd, rtol=1e-5, atol=1e-6)


def test_fig1_by_hand(modules):
    """x·(x + y) at (2, 3): gradient (2x + y, x) = (7, 2) (Smeding & Vákár Fig. 1, Fig. 15a)."""
    for m in modules.values():
        for alg in STAGES:
            assert m.derive(alg, "paperfig")((2.0, 3.0), 1.0) == (7.0, 2.0)


CLOSING_INLINED = """
(def closing_inlined Float ((p : Float) (q : Float))
  (let ((fq (add (mul p q) (exp (mul q (mul q 0.5)))))
        (a (mul p fq)) (gp (add (mul p a) (exp (mul q (mul a 0.5)))))
        (b (mul 0.25 fq)) (g25 (add (mul p b) (exp (mul q (mul b 0.5)))))
        (fg (add (mul p g25) (exp (mul q (mul g25 0.5))))))
    (add gp (mul fg q))))
"""


def test_closures_over_both_inputs_are_knossos_rev_of_the_inlined_program(modules):
    """Knossos ``rev`` has no rule for a lambda: it differentiates ``closing`` inlined by hand."""
    want = labrys.load(CLOSING_INLINED, backend="python").derive("rev", "closing_inlined")((0.3, 0.6), 1.0)
    for m in modules.values():
        for alg in STAGES:
            assert np.allclose(m.derive(alg, "closing")((0.3, 0.6), 1.0), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", ["interp", "python"])
@pytest.mark.parametrize("alg", STAGES)
def test_every_stage_on_unseen_programs(alg, backend, modules, expected):
    m = modules[backend]
    for name, (x, dt) in CASES.items():
        if name == "everything":
            continue
        check(m.derive(alg, name)(x, dt), expected[name])


# --- op counts (labrys.METER on interp): the blow-up of D¹ and the linear final versions ------------

def ops(fn, *args) -> int:
    before = labrys.METER.ops
    fn(*args)
    return labrys.METER.ops - before


def shared_chain(n: int) -> str:
    """n shared lets, each link the square of the one before: x_k = x_{k-1}·x_{k-1}."""
    lets = " ".join(f"(c{k} (mul c{k - 1} c{k - 1}))" for k in range(1, n + 1))
    return f"(def chain{n} Float (c0 : Float) (let ({lets}) c{n}))"


@pytest.mark.filterwarnings("ignore:labrys.METER counts")
def test_dualrev1_doubles_its_work_with_every_link_of_a_shared_chain():
    """D¹ re-runs a backpropagator once per use: each link used twice doubles the work
    (Smeding & Vákár §5.4); dualrev's work grows by a constant per link."""
    sizes = range(8, 13)
    m = labrys.load("\n".join(shared_chain(n) for n in sizes), backend="interp")
    x = 1.0001
    for alg, low, high in (("dualrev1", 1.8, 2.2), ("dualrev", 1.0, 1.2), ("dualrevtape", 1.0, 1.2)):
        counts = [ops(m.derive(alg, f"chain{n}"), x, 1.0) for n in sizes]
        ratios = [b / a for a, b in zip(counts, counts[1:])]
        assert all(low < r < high for r in ratios), (alg, counts)
    for n in sizes:  # d/dx x^(2^n) = 2^n x^(2^n - 1)
        assert m.derive("dualrev1", f"chain{n}")(x, 1.0) == pytest.approx(2 ** n * x ** (2 ** n - 1), rel=1e-9)
    assert ops(m.derive("dualrev1", "chain12"), x, 1.0) > 50 * ops(m.derive("dualrev", "chain12"), x, 1.0)


LOOPS = """
(def viabuild Float ((v : Vec Float) (s : Float))
  (sum (build (size v) (lam (i : Integer) (mul s (mul (index i v) (index i v)))))))
(def viasumbuild Float ((v : Vec Float) (s : Float))
  (sumbuild (size v) (lam (i : Integer) (sin (mul (index i v) s)))))
(def viafold Float ((v : Vec Float) (s : Float))
  (fold (lam (a_t : Tuple Float Float) (add (mul (get$1$2 a_t) s) (get$2$2 a_t))) 0.0 v))
(def viaclosure (Vec Float) ((v : Vec Float) (s : Float))
  (let ((k (lam (t : Float) (add (mul s t) (mul t t))))
        (h (lam (t : Float) (k (mul (k t) s)))))
    (map h v)))
"""


@pytest.mark.parametrize("alg", ["dualrev", "dualrevtape", "dualrev5"])
@pytest.mark.parametrize("name", ["viabuild", "viasumbuild", "viafold", "viaclosure"])
@pytest.mark.filterwarnings("ignore:labrys.METER counts")
def test_the_final_versions_are_linear_on_loops_and_mapped_closures(alg, name):
    """Doubling the vector doubles the work (×2 ± 10 %), and the gradient costs a bounded
    multiple of the primal's ops (Smeding & Vákár §8–§9)."""
    m = labrys.load(LOOPS, backend="interp")
    d, f = m.derive(alg, name), m.function(name)
    dt = (lambda n: np.ones(n)) if name == "viaclosure" else (lambda n: 1.0)
    counts = [ops(d, (np.linspace(-1, 1, n), 0.8), dt(n)) for n in (100, 200, 400)]
    assert all(1.8 < b / a < 2.2 for a, b in zip(counts, counts[1:])), counts
    assert counts[-1] < 60 * ops(f, np.linspace(-1, 1, 400), 0.8), counts
    py = labrys.load(LOOPS, backend="python")
    x = (np.linspace(-1, 1, 5), 0.8)
    assert np.allclose(reals(d(x, dt(5))), finite_differences(py, name, x, dt(5)), rtol=1e-5, atol=1e-6)
