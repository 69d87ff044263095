"""What the compiled backend compiles instead of handing to ``python``
(docs/backends.md, Notes [Compiled recursion], [Orchestration], [Compiled
sums], [Struct of arrays]): each construct gives hand-computed values on all
three backends, and compiled code runs it without a fallback note."""
from __future__ import annotations

import contextlib
import io
import random

import numpy as np
import pytest

import labrys
from labrys.context import Limits
from labrys.prelude.misc import ranhashdoub
from labrys.values import Inj
from test_examples import ROOT, same_output

BACKENDS = ["interp", "python", "compiled"]
backends = pytest.mark.parametrize("backend", BACKENDS)


def load(src: str, backend: str) -> labrys.Module:
    m = labrys.load(src, backend=backend)
    return m


def compiled_whole(m: labrys.Module) -> None:
    """Nothing ran on python behind compiled's back."""
    if m.backend.name == "compiled":
        assert m.backend.fallbacks == {}


# --- self- and mutual recursion -------------------------------------------------------

RECURSION = """
(def fact Integer (n : Integer) (if (eq n 0) 1 (mul n (fact (sub n 1)))))
(def fib Integer (n : Integer) (if (lt n 2) n (add (fib (sub n 1)) (fib (sub n 2)))))
(def is_even Bool (n : Integer) (if (eq n 0) true (is_odd (sub n 1))))
(def is_odd Bool (n : Integer) (if (eq n 0) false (is_even (sub n 1))))
(def hof_f Integer (n : Integer) (if (eq n 0) 1 (sub n (hof_m (hof_f (sub n 1))))))
(def hof_m Integer (n : Integer) (if (eq n 0) 0 (sub n (hof_f (hof_m (sub n 1))))))
(def fib_pair (Tuple Integer Integer) (n : Integer)
  (if (eq n 0) (tuple 0 1) (let ((a b) (fib_pair (sub n 1))) (tuple b (add a b)))))
(def vsum Float ((i : Integer) (v : Vec Float) (acc : Float))
  (if (eq i (size v)) acc (vsum (add i 1) v (add acc (index i v)))))
(def forever Float (x : Float) (add 1.0 (forever x)))
(def hofs (Vec Integer) (n : Integer) (build n (lam (i : Integer) (hof_f i))))
"""


@backends
def test_self_and_mutual_recursion(backend: str) -> None:
    m = load(RECURSION, backend)
    assert m.fact(10) == 3628800 and m.fact(20) == 2432902008176640000
    assert m.fib(20) == 6765
    assert (m.is_even(10), m.is_odd(10), m.is_even(7)) == (True, False, False)
    assert list(m.hofs(10)) == [1, 1, 2, 2, 3, 3, 4, 5, 5, 6]  # Hofstadter's F (OEIS A005378)
    assert m.fib_pair(50) == (12586269025, 20365011074)
    assert m.vsum(0, np.array([1.0, 2.5, 4.0]), 0.0) == 7.5
    compiled_whole(m)


@pytest.mark.parametrize("backend", ["python", "compiled"])
def test_recursion_past_the_limit_is_the_interpreters_error(backend: str) -> None:
    saved = Limits.max_depth
    labrys.set_max_depth(300)
    try:
        with pytest.raises(labrys.LabrysError) as want:
            load(RECURSION, "interp").forever(1.0)
        with pytest.raises(labrys.LabrysError) as got:
            load(RECURSION, backend).forever(1.0)
    finally:
        labrys.set_max_depth(saved)
    assert str(got.value) == str(want.value) and "recursion deeper than 300 in forever" in str(got.value)


# --- Strings, printing, $ranhashdoub --------------------------------------------------------

STRINGS = """
(def describe String (n : Integer) (if (lt n 0) "negative" (if (eq n 0) "zero" "positive")))
(def same Bool ((a : String) (b : String)) (eq a b))
(def tagged (Tuple Integer String) (n : Integer) (tuple (mul 2 n) (describe n)))
(def seeded Float (n : Integer) (sumbuild n (lam (i : Integer) ($ranhashdoub (sub (mul 7919 i) 50)))))
"""


@backends
def test_strings_and_ranhashdoub(backend: str) -> None:
    m = load(STRINGS, backend)
    assert [m.describe(k) for k in (-5, 0, 5)] == ["negative", "zero", "positive"]
    assert m.same("a\"b", "a\"b") is True and m.same("x", "y") is False
    assert m.tagged(-2) == (-4, "negative")
    want = 0.0
    for i in range(40):
        want += ranhashdoub(7919 * i - 50)
    assert m.seeded(40) == want
    compiled_whole(m)


def test_ranhashdoub_compiled_is_the_knossos_hash_bit_for_bit() -> None:
    m = load("(def h Float (n : Integer) ($ranhashdoub n))", "compiled")
    rng = random.Random(15)
    seeds = [0, 1, -1, 2**63 - 1, -2**63, 42] + [rng.randrange(-2**63, 2**63) for _ in range(100)]
    assert [m.h(s) for s in seeds] == [ranhashdoub(s) for s in seeds]
    compiled_whole(m)


def run_verbose(path) -> tuple[str, str]:
    from labrys.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["--verbose", "run", str(path), "--backend", "compiled"]) == 0
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", ["recursion", "strings_and_asserts", "vectors", "fold", "sums"])
def test_examples_print_from_python_and_compile_the_rest(name: str) -> None:
    """main prints (orchestration, Note [Orchestration]): no note; everything it calls is
    compiled."""
    out, err = run_verbose(ROOT / "examples" / f"{name}.ks")
    assert same_output(out, (ROOT / "examples" / "expected" / f"{name}.out").read_text())
    notes = [line for line in err.splitlines() if "runs on the python backend" in line]
    assert notes == [], notes  # sums.ks's sums of functions too (Note [Defunctionalisation])
    assert "main runs" not in err


# --- sums -------------------------------------------------------------------------------------

SUMS = """
(def safe_div (Sum Float String) ((x : Float) (y : Float))
  (if (eq y 0.0) (inr (Sum Float String) "division by zero") (inl (Sum Float String) (div x y))))
(def or_default Float ((r : Sum Float String) (d : Float)) (case r ((inl v) v) ((inr m) d)))
(def classify (Sum Integer (Sum Float String)) (n : Integer)
  (if (gte n 100) (inr (Sum Integer (Sum Float String)) (inr (Sum Float String) "too big"))
      (if (eq (sub n (mul 2 (div n 2))) 0) (inl (Sum Integer (Sum Float String)) (div n 2))
          (inr (Sum Integer (Sum Float String)) (inl (Sum Float String) (mul 0.5 (to_float n)))))))
(def first_negative (Sum Integer (Tuple)) ((v : Vec Float) (i : Integer))
  (if (eq i (size v)) (inr (Sum Integer (Tuple)) (tuple))
      (if (lt (index i v) 0.0) (inl (Sum Integer (Tuple)) i) (first_negative v (add i 1)))))
(def area Float (s : Sum (Tuple Float Float) (Vec Float))
  (case s ((inl wh) (mul (get$1$2 wh) (get$2$2 wh))) ((inr v) (sum v))))
(def total Float (n : Integer)
  (sumbuild n (lam (i : Integer) (or_default (safe_div 1.0 (to_float (sub i 2))) 100.0))))
"""


@backends
def test_sum_types(backend: str) -> None:
    m = load(SUMS, backend)
    assert m.safe_div(1.0, 4.0) == Inj(True, 0.25)
    assert m.safe_div(1.0, 0.0) == Inj(False, "division by zero")
    assert m.or_default(Inj(False, "no"), 3.0) == 3.0 and m.or_default(Inj(True, 2.0), 3.0) == 2.0
    assert [m.classify(k) for k in (4, 7, 100)] == [Inj(True, 2), Inj(False, Inj(True, 3.5)),
                                                    Inj(False, Inj(False, "too big"))]
    assert m.first_negative(np.array([1.0, -2.0, -3.0]), 0) == Inj(True, 1)
    assert m.first_negative(np.array([1.0]), 0) == Inj(False, ())
    assert m.area(Inj(True, (2.0, 3.0))) == 6.0 and m.area(Inj(False, np.array([1.0, 2.0]))) == 3.0
    assert m.total(4) == -0.5 + -1.0 + 100.0 + 1.0  # 1/(i-2) for i = 0, 1, 3; the default at i = 2
    compiled_whole(m)


# --- arithmetic on tuples, vectors of tuples ---------------------------------------------------

TUPLES = """
(def axpy (Tuple Float (Tuple Float Float)) ((a : Float) (x : Tuple Float (Tuple Float Float))
                                             (y : Tuple Float (Tuple Float Float)))
  (add (mul a x) (sub y (tuple 1.0 (tuple 1.0 1.0)))))
(def zip (Vec (Tuple Float Integer)) ((a : Vec Float) (b : Vec Integer))
  (build (size a) (lam (i : Integer) (tuple (index i a) (index i b)))))
(def dot_pairs Float (v : Vec (Tuple Float Integer))
  (fold (lam (acc_p : Tuple Float (Tuple Float Integer))
          (let ((acc p) acc_p) (add acc (mul (get$1$2 p) (to_float (get$2$2 p))))))
        0.0 v))
(def second (Tuple Integer (Tuple Float Float)) ((v : Vec (Tuple Integer (Tuple Float Float))) (i : Integer))
  (index i v))
(def nested (Vec (Tuple Integer (Tuple Float Float))) (n : Integer)
  (build n (lam (i : Integer) (tuple (mul i i) (tuple (to_float i) (neg (to_float i)))))))
(def units Integer (n : Integer) (size (build n (lam (i : Integer) (tuple)))))
(def rows (Vec (Tuple Float (Vec Float))) (v : Vec (Tuple Float (Vec Float))) v)
"""


@backends
def test_tuple_arithmetic_and_vectors_of_tuples(backend: str) -> None:
    m = load(TUPLES, backend)
    assert m.axpy(2.0, (1.0, (2.0, 3.0)), (10.0, (20.0, 30.0))) == (11.0, (23.0, 35.0))
    pairs = m.zip(np.array([0.5, 1.5, 2.5]), [2, 4, 6])
    assert [tuple(p) for p in pairs] == [(0.5, 2), (1.5, 4), (2.5, 6)]
    assert m.dot_pairs(pairs) == 0.5 * 2 + 1.5 * 4 + 2.5 * 6
    assert m.second(m.nested(4), 3) == (9, (3.0, -3.0))
    assert m.units(5) == 5
    back = m.rows([(1.0, np.array([1.0, 2.0])), (2.0, np.array([3.0, 4.0]))])
    assert back[1][0] == 2.0 and list(back[1][1]) == [3.0, 4.0]
    compiled_whole(m)


@pytest.mark.parametrize("backend", ["python", "compiled"])
def test_index_of_a_vector_of_tuples_out_of_range_is_the_interpreters_error(backend: str) -> None:
    with pytest.raises(labrys.LabrysError) as want:
        load(TUPLES, "interp").second(load(TUPLES, "interp").nested(2), 5)
    with pytest.raises(labrys.LabrysError) as got:
        load(TUPLES, backend).second(load(TUPLES, "interp").nested(2), 5)
    assert str(got.value) == str(want.value)


def test_adbench_ba_objective_and_jacobian_compile_whole() -> None:
    from labrys.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["--verbose", "adbench", "ba", str(ROOT / "data" / "adbench" / "ba" / "test.txt"),
                     "--backend", "compiled"]) == 0
    assert "runs on the python backend" not in err.getvalue(), err.getvalue()
    assert "max relative error" in out.getvalue()


# --- derivative code: rfold, the tangent of a Vec Integer ------------------------------------

REVERSE = """
(def fprod Float (v : Vec Float)
  (fold (lam (acc_x : Tuple Float Float) (mul (get$1$2 acc_x) (get$2$2 acc_x))) 1.0 v))
(def fdot Float (v : Vec (Tuple Float Float))
  (fold (lam (acc_p : Tuple Float (Tuple Float Float))
          (let ((acc p) acc_p) (add acc (mul (get$1$2 p) (get$2$2 p))))) 0.0 v))
(def gather Float ((v : Vec Float) (ix : Vec Integer))
  (sumbuild (size ix) (lam (k : Integer) (mul 3.0 (index (index k ix) v)))))
"""


@backends
def test_reverse_mode_of_folds_and_integer_vectors(backend: str) -> None:
    m = load(REVERSE, backend)
    v = np.array([2.0, 3.0, 5.0])
    np.testing.assert_allclose(m.derive("rev", "fprod")(v, 1.0), [15.0, 10.0, 6.0], rtol=1e-15)
    pairs = [(1.0, 2.0), (3.0, 4.0)]
    got = m.derive("rev", "fdot")(pairs, 2.0)
    assert [tuple(p) for p in got] == [(4.0, 2.0), (8.0, 6.0)]  # 2 · (b, a) for each pair (a, b)
    dv, dix = m.derive("rev", "gather")((np.zeros(4), [1, 1, 3]), 1.0)
    np.testing.assert_array_equal(dv, [0.0, 6.0, 0.0, 3.0])
    assert len(dix) == 3 and all(x == () for x in dix)
    compiled_whole(m)


def test_adbench_lstm_gradient_compiles_whole() -> None:
    from labrys.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["--verbose", "adbench", "lstm", str(ROOT / "data" / "adbench" / "lstm" / "lstm_l2_c1024.txt"),
                     "--backend", "compiled"]) == 0
    assert "runs on the python backend" not in err.getvalue(), err.getvalue()
    assert "relative error" in out.getvalue()


def test_tangent_primitives_of_a_literal_tuple_compile() -> None:
    """``(ts_zero (tuple x v))`` was read as two arguments (a literal tuple is spread
    for calls of several arguments): "internal error: StopIteration"."""
    m = labrys.load("""
(def z (Tuple Float (Vec Float)) ((x : Float) (v : Vec Float)) (ts_zero (tuple x v)))
(def n (Tuple Float (Vec Float)) ((x : Float) (v : Vec Float)) (ts_neg (tuple x v)))
""", backend="compiled")
    zx, zv = m.z(2.0, np.array([1.0, 2.0]))
    nx, nv = m.n(2.0, np.array([1.0, 2.0]))
    assert (zx, list(zv), nx, list(nv)) == (0.0, [0.0, 0.0], -2.0, [-1.0, -2.0])
    assert m.backend.fallbacks == {}
