"""The reference interpreter on programs exercising every construct of
docs/reference.md §4 and §7; expected values are hand-computed or from NumPy."""
from __future__ import annotations

import math

import numpy as np
import pytest

import labrys
from labrys import LabrysError
from labrys.values import Inj


def load(text: str):
    return labrys.load(text)


# --- let ------------------------------------------------------------------------

def test_let_single():
    m = load("(def f Float (x : Float) (let (y (mul x x)) (add y 1.0)))")
    assert m.f(3.0) == 10.0


def test_let_multi_is_sequential():
    m = load("""
    (def f Float (x : Float)
      (let ((a (add x 1.0))
            (b (mul a 2.0))
            (c (sub b a)))
        (tuple a b c)))
    """.replace("(def f Float", "(def f (Tuple Float Float Float)"))
    assert m.f(1.0) == (2.0, 4.0, 2.0)


def test_let_tuple_pattern():
    m = load("""
    (def f Float (t : Tuple Float Integer Bool)
      (let ((a n b) t)
        (if b (mul a (to_float n)) 0.0)))
    """)
    assert m.f((1.5, 4, True)) == 6.0
    assert m.f((1.5, 4, False)) == 0.0


def test_let_mixed_binding_list():
    m = load("""
    (def f Float ((v : Vec Float) (w : Tuple Float Float))
      (let ((p (size v))
            ((g h) w)
            (q (add g h)))
        (mul (to_float p) q)))
    """)
    assert m.f([1.0, 2.0, 3.0], (0.5, 1.5)) == 6.0


def test_let_disambiguation_destructures_size():
    # (let ((r c) (size m)) b) destructures; (let ((x 1) (y 2)) b) binds two
    m = load("""
    (def f Integer (m : Tensor 2 Float)
      (let ((r c) (size m)) (sub (mul 10 r) c)))
    (def g Integer ()
      (let ((x 1) (y 2)) (add x (mul 10 y))))
    """)
    assert m.f(np.zeros((3, 5))) == 25
    assert m.g() == 21


def test_let_nested_tuple_values():
    m = load("""
    (def f Float (p : Tuple (Tuple Float Float) Float)
      (let (((ab c) p) ((a b) ab)) (sub (mul a b) c)))
    """)
    assert m.f(((2.0, 3.0), 1.0)) == 5.0


# --- if -------------------------------------------------------------------------

def test_if_picks_branch():
    m = load("(def f Float (x : Float) (if (gt x 0.0) x (neg x)))")
    assert m.f(2.0) == 2.0
    assert m.f(-3.0) == 3.0


def test_if_evaluates_only_chosen_branch():
    m = load("""
    (def f Float (x : Float)
      (if (gt x 0.0) (sqrt x) (assert false 0.0)))
    (def g Integer (n : Integer)
      (if (eq n 0) 0 (div 100 n)))
    (def h Float (v : Vec Float)
      (if (gt (size v) 0) (index 0 v) -1.0))
    """)
    assert m.f(4.0) == 2.0
    assert m.g(0) == 0
    assert m.g(-7) == -14
    assert m.h([]) == -1.0
    assert m.h([5.0]) == 5.0
    with pytest.raises(LabrysError):
        m.f(-1.0)


def test_if_does_not_evaluate_untaken_print(capsys):
    m = load('(def f Integer (b : Bool) (if b (print "yes") (print "no")))')
    m.f(True)
    assert capsys.readouterr().out == "yes"
    m.f(False)
    assert capsys.readouterr().out == "no"


# --- shadowing ------------------------------------------------------------------

def test_shadowing():
    m = load("""
    (def f Float (x : Float)
      (let (x (add x 1.0))
        (let (x (mul x 10.0))
          x)))
    (def g Integer (x : Integer)
      (let ((x (add x 1)) (x (mul x 2))) x))
    (def h Float (x : Float)
      (add (let (x 100.0) x) x))
    (def k Float (x : Float)
      (let (f (lam (x : Float) (mul x 2.0))) (add (f 5.0) x)))
    (def s Integer (x : Integer)
      (let ((x y) (tuple (add x 1) x)) (sub x y)))
    """)
    assert m.f(1.0) == 20.0
    assert m.g(3) == 8
    assert m.h(1.0) == 101.0
    assert m.k(1.0) == 11.0
    assert m.s(5) == 1


def test_shadowing_a_function_name_with_a_local():
    m = load("""
    (def sq Float (x : Float) (mul x x))
    (def f Float (x : Float)
      (let (sq (lam (y : Float) (add y 1.0))) (sq x)))
    """)
    assert m.f(3.0) == 4.0


# --- tuples and get ---------------------------------------------------------------

def test_tuples_and_get():
    m = load("""
    (def f (Tuple Float Integer Bool) (x : Float)
      (let (t (tuple x 2 true))
        (tuple (mul (get$1$3 t) 2.0) (add (get$2$3 t) 1) (not (get$3$3 t)))))
    (def g Float (t : Tuple (Tuple Float Float) Float)
      (add (get$2$2 (get$1$2 t)) (get$2$2 t)))
    (def u (Tuple) () (tuple))
    """)
    assert m.f(1.5) == (3.0, 3, False)
    assert m.g(((1.0, 2.0), 3.0)) == 5.0
    assert m.u() == ()


# --- lambdas, closures, higher-order ----------------------------------------------

def test_lambda_let_bound_and_called():
    m = load("(def f Float (x : Float) (let (sq (lam (y : Float) (mul y y))) (add (sq x) (sq 2.0))))")
    assert m.f(3.0) == 13.0


def test_closure_captures_locals():
    m = load("""
    (def f Float ((x : Float) (k : Float))
      (let ((a (mul k 2.0))
            (g (lam (y : Float) (add (mul a y) k))))
        (g x)))
    """)
    assert m.f(3.0, 0.5) == 3.5


def test_closure_captures_value_not_later_rebinding():
    m = load("""
    (def f Float (x : Float)
      (let ((k 1.0)
            (g (lam (y : Float) (add y k)))
            (k 100.0))
        (add (g x) k)))
    """)
    assert m.f(1.0) == 102.0


def test_closure_returned_from_function():
    m = load("""
    (def adder (Lam Float Float) (k : Float) (lam (x : Float) (add x k)))
    (def compose (Lam Float Float) ((f : Lam Float Float) (g : Lam Float Float))
      (lam (x : Float) (f (g x))))
    (def f Float (x : Float)
      (let ((a1 (adder 1.0)) (a10 (adder 10.0)) (h (compose a1 a10)))
        (add (a1 x) (h x))))
    """)
    assert m.f(2.0) == 3.0 + 13.0


def test_closures_stored_in_tuples():
    m = load("""
    (def scale (Lam Float Float) (k : Float) (lam (x : Float) (mul x k)))
    (def pair (Tuple (Lam Float Float) (Lam Float Float)) (k : Float)
      (tuple (scale k) (lam (x : Float) (sub x k))))
    (def f Float (x : Float)
      (let ((p (pair 3.0)) (g (get$1$2 p)) (h (get$2$2 p)))
        (tuple (g x) (h x))))
    """.replace("(def f Float", "(def f (Tuple Float Float)"))
    assert m.f(2.0) == (6.0, -1.0)


def test_lambda_in_build_captures_loop_variable():
    m = load("""
    (def f (Vec Float) (n : Integer)
      (let (fs (build n (lam (i : Integer) (lam (x : Float) (mul x (to_float i))))))
        (build n (lam (j : Integer) (let (g (index j fs)) (g 2.0))))))
    """)
    np.testing.assert_array_equal(m.f(4), [0.0, 2.0, 4.0, 6.0])


def test_fn_references_and_higher_order():
    m = load("""
    (def sq Float (x : Float) (mul x x))
    (def g Float (x : Float) (add x 1.0))
    (def g Float (x : Integer) (to_float (mul x 100)))
    (def twice Float ((f : Lam Float Float) (x : Float)) (f (f x)))
    (def apply_vec (Vec Float) ((f : Lam Float Float) (v : Vec Float)) (map f v))
    (def a Float (x : Float) (twice (fn sq) x))
    (def b Float (x : Float) (twice (fn [g Float]) x))
    (def c (Vec Float) (v : Vec Float) (apply_vec (fn sq) v))
    (def d Float (n : Integer) (let (h (fn [g Integer])) (h n)))
    (def e Float (x : Float) (twice (lam (y : Float) (mul y 3.0)) x))
    """)
    assert m.a(3.0) == 81.0
    assert m.b(3.0) == 5.0
    np.testing.assert_array_equal(m.c([1.0, -2.0, 3.0]), [1.0, 4.0, 9.0])
    assert m.d(7) == 700.0
    assert m.e(2.0) == 18.0


def test_fn_of_multi_argument_function():
    m = load("""
    (def plus Float ((x : Float) (y : Float)) (add x y))
    (def f Float (v : Vec Float)
      (fold (fn plus) 0.0 v))
    (def g Float ((x : Float) (y : Float))
      (let (h (fn [plus (Tuple Float Float)])) (h x y)))
    """)
    assert m.f([1.0, 2.0, 4.0]) == 7.0
    assert m.g(1.5, 2.0) == 3.5


def test_lambda_with_tuple_argument():
    m = load("""
    (def f Float ((x : Float) (y : Float))
      (let (h (lam (p : Tuple Float Float) (sub (get$1$2 p) (get$2$2 p))))
        (add (h x y) (h (tuple y x)))))
    """)
    assert m.f(5.0, 2.0) == 0.0


# --- sums -----------------------------------------------------------------------------

SUMS = """
(def classify (Sum Float Integer) (x : Float)
  (if (gt x 0.0) (inl (Sum Float Integer) (sqrt x)) (inr (Sum Float Integer) 7)))
(def use Float (s : Sum Float Integer)
  (case s ((inl a) (mul a 10.0)) ((inr n) (to_float (neg n)))))
(def f Float (x : Float) (use (classify x)))

(def three (Sum Float (Sum Integer Bool)) (k : Integer)
  (if (eq k 0) (inl (Sum Float (Sum Integer Bool)) 1.5)
    (if (eq k 1) (inr (Sum Float (Sum Integer Bool)) (inl (Sum Integer Bool) 42))
                 (inr (Sum Float (Sum Integer Bool)) (inr (Sum Integer Bool) true)))))
(def show3 Integer (s : Sum Float (Sum Integer Bool))
  (case s
    ((inl x) 1)
    ((inr r) (case r ((inl n) (add n 1000)) ((inr b) (if b 3 4))))))
(def g Integer (k : Integer) (show3 (three k)))

(def safe_div (Sum Float String) ((a : Float) (b : Float))
  (if (eq b 0.0) (inr (Sum Float String) "division by zero") (inl (Sum Float String) (div a b))))
"""


def test_sums_inl_inr_case():
    m = load(SUMS)
    assert m.f(4.0) == 20.0
    assert m.f(-1.0) == -7.0
    assert m.classify(4.0) == Inj(True, 2.0)
    assert m.classify(-4.0) == Inj(False, 7)
    assert m.use(Inj(True, 0.5)) == 5.0
    assert m.use(Inj(False, 3)) == -3.0


def test_nested_sums():
    m = load(SUMS)
    assert [m.g(k) for k in range(3)] == [1, 1042, 3]
    assert m.three(1) == Inj(False, Inj(True, 42))
    assert m.three(2) == Inj(False, Inj(False, True))
    assert m.show3(Inj(False, Inj(False, False))) == 4
    assert m.safe_div(1.0, 0.0) == Inj(False, "division by zero")
    assert m.safe_div(1.0, 4.0) == Inj(True, 0.25)


def test_case_evaluates_only_chosen_branch():
    m = load("""
    (def f Integer (s : Sum Integer Integer)
      (case s ((inl n) (div 10 n)) ((inr n) (assert (gt n 0) n))))
    """)
    assert m.f(Inj(True, 2)) == 5
    assert m.f(Inj(False, 3)) == 3
    with pytest.raises(LabrysError):
        m.f(Inj(True, 0))


def test_sum_in_vector_and_case_variable_shadowing():
    m = load("""
    (def f Float (v : Vec Float)
      (let (xs (map (lam (x : Float)
                  (if (gt x 0.0) (inl (Sum Float Float) x) (inr (Sum Float Float) x))) v))
        (sumbuild (size xs) (lam (i : Integer)
          (case (index i xs) ((inl x) x) ((inr x) (mul x 100.0)))))))
    """)
    assert m.f([1.0, -1.0, 2.0]) == 1.0 - 100.0 + 2.0


# --- recursion ------------------------------------------------------------------------

def test_recursion():
    m = load("""
    (def fact Integer (n : Integer) (if (eq n 0) 1 (mul n (fact (sub n 1)))))
    (def fib Integer (n : Integer) (if (lt n 2) n (add (fib (sub n 1)) (fib (sub n 2)))))
    (def pw Float ((x : Float) (n : Integer))
      (if (eq n 0) 1.0 (mul x (pw x (sub n 1)))))
    """)
    assert m.fact(10) == math.factorial(10)
    assert m.fact(20) == math.factorial(20)
    assert m.fib(15) == 610
    assert m.pw(2.0, 10) == 1024.0


def test_mutual_recursion_any_order():
    m = load("""
    (def is_even Bool (n : Integer) (if (eq n 0) true (is_odd (sub n 1))))
    (def is_odd Bool (n : Integer) (if (eq n 0) false (is_even (sub n 1))))
    (def f Integer (n : Integer) (g n))
    (def g Integer (n : Integer) (if (lte n 0) 0 (add n (f (sub n 1)))))
    """)
    assert [m.is_even(n) for n in range(6)] == [True, False, True, False, True, False]
    assert m.is_odd(101) is True
    assert m.f(100) == 5050


# --- overloading ---------------------------------------------------------------------

def test_overloading_by_argument_type():
    m = load("""
    (def h Float (x : Float) (mul x 2.0))
    (def h Float (x : Integer) (to_float (add x 1000)))
    (def h Float (v : Vec Float) (sum v))
    (def h Float ((x : Float) (y : Float)) (sub x y))
    (def h Float () 42.0)
    (def use (Tuple Float Float Float Float Float) (x : Float)
      (tuple (h x) (h 5) (h (build 3 (lam (i : Integer) (to_float i)))) (h x 1.0) (h)))
    (def dot Float ((a : Vec Float) (b : Vec Float)) (sum (mul a b)))
    (def dot Float ((a : Vec (Vec Float)) (b : Vec (Vec Float)))
      (sumbuild (size a) (lam (i : Integer) (dot (index i a) (index i b)))))
    """)
    assert m.use(1.5) == (3.0, 1005.0, 3.0, 0.5, 42.0)
    assert m["[h Float]"](2.0) == 4.0
    assert m["[h Integer]"](2) == 1002.0
    assert m.h["(Tuple Float Float)"](2.0, 0.5) == 1.5
    assert m.h["(Tuple)"]() == 42.0
    a = [[1.0, 2.0], [3.0]]
    b = [[4.0, 5.0], [6.0]]
    assert m.dot["(Tuple (Vec (Vec Float)) (Vec (Vec Float)))"](a, b) == 4.0 + 10.0 + 18.0
    assert m.dot["(Tuple (Vec Float) (Vec Float))"]([1.0, 2.0], [3.0, 4.0]) == 11.0


def test_call_with_explicit_tuple_is_same_call():
    m = load("""
    (def f Float ((x : Float) (y : Float)) (sub x y))
    (def g Float (x : Float) (add (f x 1.0) (f (tuple x 1.0))))
    (def h Float (p : Tuple Float Float) (f p))
    (def z Float () 3.0)
    (def w Float () (add (z) (z (tuple))))
    """)
    assert m.g(3.0) == 4.0
    assert m.h((5.0, 1.0)) == 4.0
    assert m.w() == 6.0


# --- edef, implement, gdef -------------------------------------------------------------

def test_edef_and_implement():
    m = load("""
    (edef myhypot Float (Float Float))
    (edef twice_v (Vec Float) (Vec Float))
    (def f Float ((x : Float) (y : Float)) (add (myhypot x y) 1.0))
    (def g Float (v : Vec Float) (sum (twice_v v)))
    """)
    m.implement("myhypot", lambda x, y: math.hypot(x, y))
    m.implement("twice_v", lambda v: 2.0 * np.asarray(v))
    assert m.f(3.0, 4.0) == 6.0
    assert m.g([1.0, 2.0, 3.0]) == 12.0


def test_edef_without_implementation_is_an_error_only_when_called():
    m = load("""
    (edef ext Float (Float))
    (def f Float (x : Float) (if (gt x 0.0) x (ext x)))
    """)
    assert m.f(1.0) == 1.0
    with pytest.raises(LabrysError):
        m.f(-1.0)
    m.implement("ext", lambda x: -10.0 * x)
    assert m.f(-1.0) == 10.0


def test_gdef_lines_are_accepted():
    m = load("""
    (def f Float ((x : Float) (y : Float)) (mul x (sin y)))
    (def sumsq Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (let (x (index i v)) (mul x x)))))
    (gdef fwd [f (Tuple Float Float)])
    (gdef rev [f (Tuple Float Float)])
    (gdef D [f (Tuple Float Float)])
    (gdef rev [sumsq (Vec Float)])
    """)
    assert m.f(2.0, 0.5) == 2.0 * math.sin(0.5)
    assert m.sumsq([1.0, 2.0]) == 5.0


def test_gdef_of_a_registered_but_unimplemented_derivation_is_a_check_time_error():
    from labrys.ad import REGISTRY
    from labrys.ad.derivation import ELLIS, FIRST_ORDER, SAME_TYPE, Derivation

    REGISTRY.register(Derivation("planned", "a planned derivation", "Tests", ELLIS, "§0", SAME_TYPE, FIRST_ORDER,
                                 lambda s, t: (s, t)))
    try:
        text = "(def f Float ((x : Float) (y : Float)) (mul x (sin y)))\n(gdef planned [f (Tuple Float Float)])\n"
        with pytest.raises(LabrysError) as err:
            load(text)
    finally:
        REGISTRY.unregister("planned")
    assert "<string>:2:1: error: gdef planned: derivation 'planned'" in str(err.value)
    assert "not implemented yet" in str(err.value)


def test_gdef_of_an_unknown_derivation_names_the_known_ones():
    with pytest.raises(LabrysError) as err:
        load("(def f Float (x : Float) x)\n(gdef frobnicate [f Float])\n")
    assert "<string>:2:1: error: gdef frobnicate: unknown derivation 'frobnicate'" in str(err.value)
    assert "rev" in str(err.value) and "deltarev" in str(err.value)


def test_rule_lines_are_accepted():
    m = load("""
    (rule "mul2.add" (x : Float) (mul x 2.0) (add x x))
    (def f Float (x : Float) (mul x 2.0))
    """)
    assert m.f(1.5) == 3.0


def test_comments():
    m = load("""
    ; a line comment
    #| a block comment #| nested |# still comment (def bad) |#
    (def f Float (x : Float) ; trailing
      (add x #| inline |# 1.0))
    """)
    assert m.f(1.0) == 2.0


def test_main_and_print(capsys):
    m = load("""
    (def main Integer ()
      (let (v (build 3 (lam (i : Integer) (to_float (add i 1)))))
        (print "sum " (sum v) "\\n")))
    """)
    m.main()
    assert capsys.readouterr().out == "sum 6.0\n"


def test_evaluation_is_left_to_right(capsys):
    m = load("""
    (def f Integer ()
      (add (print "a") (add (print "b") (print "c"))))
    (def g (Tuple Integer Integer) ()
      (tuple (print "x") (print "y")))
    """)
    m.f()
    assert capsys.readouterr().out == "abc"
    m.g()
    assert capsys.readouterr().out == "xy"


# --- runtime errors ------------------------------------------------------------------------

def test_runtime_errors_are_labrys_errors():
    m = load("""
    (def f Float ((i : Integer) (v : Vec Float)) (index i v))
    (def g Float (x : Float) (assert (gt x 0.0) x))
    (def h Integer (n : Integer) (div 1 n))
    """)
    for call in (lambda: m.f(5, [1.0]), lambda: m.g(-1.0), lambda: m.h(0)):
        with pytest.raises(LabrysError) as info:
            call()
        assert "Traceback" not in str(info.value)


# --- GMM objective -------------------------------------------------------------------

GMM = """
(def logsumexp Float (v : Vec Float)
  (let (mx (max v))
    (add mx (log (sum (map (lam (a : Float) (exp (sub a mx))) v))))))

(def sqnorm Float (v : Vec Float) (sum (mul v v)))

; diagonal-covariance GMM: Q_k = diag(exp(qs_k))
(def gmm_objective Float
     ((x : Vec (Vec Float))
      (alphas : Vec Float)
      (means : Vec (Vec Float))
      (qs : Vec (Vec Float))
      (wishart_gamma : Float))
  (let ((n (size x))
        (K (size alphas))
        (d (size (index 0 x)))
        (main_term
          (sumbuild n (lam (i : Integer)
            (logsumexp (build K (lam (k : Integer)
              (let ((q (index k qs))
                    (diff (sub (index i x) (index k means)))
                    (qdiff (mul (map (lam (t : Float) (exp t)) q) diff)))
                (sub (add (index k alphas) (sum q))
                     (mul 0.5 (sqnorm qdiff))))))))))
        (prior
          (sumbuild K (lam (k : Integer)
            (let (q (index k qs))
              (sub (mul (mul 0.5 (mul wishart_gamma wishart_gamma))
                        (sqnorm (map (lam (t : Float) (exp t)) q)))
                   (sum q)))))))
    (add (sub main_term (mul (to_float n) (logsumexp alphas)))
         (add prior (mul (to_float (mul n d)) (mul -0.5 (log (mul 2.0 (pi)))))))))
"""


def _logsumexp(v):
    mx = np.max(v)
    return mx + np.log(np.sum(np.exp(v - mx)))


def gmm_reference(x, alphas, means, qs, gamma):
    x, alphas, means, qs = map(np.asarray, (x, alphas, means, qs))
    n, d = x.shape
    main = 0.0
    for i in range(n):
        terms = [alphas[k] + qs[k].sum() - 0.5 * np.sum((np.exp(qs[k]) * (x[i] - means[k])) ** 2)
                 for k in range(len(alphas))]
        main += _logsumexp(np.array(terms))
    prior = sum(0.5 * gamma ** 2 * np.sum(np.exp(qs[k]) ** 2) - qs[k].sum() for k in range(len(alphas)))
    return main - n * _logsumexp(alphas) + prior - 0.5 * n * d * math.log(2 * math.pi)


def test_gmm_objective_against_numpy():
    rng = np.random.default_rng(0)
    n, K, d = 20, 4, 3
    x = rng.normal(size=(n, d))
    alphas = rng.normal(size=K)
    means = rng.normal(size=(K, d))
    qs = 0.3 * rng.normal(size=(K, d))
    m = load(GMM)
    got = m.gmm_objective([list(r) for r in x], alphas, [list(r) for r in means], list(qs), 0.7)
    want = gmm_reference(x, alphas, means, qs, 0.7)
    assert math.isclose(got, want, rel_tol=1e-11), (got, want)


# --- op-count meter --------------------------------------------------------------------

SUMSQ = """
(def sumsq Float (v : Vec Float)
  (sumbuild (size v) (lam (i : Integer) (let (x (index i v)) (mul x x)))))
(def idx Float ((i : Integer) (v : Vec Float)) (index i v))
(def idx2 Float ((i : Integer) (j : Integer) (m : Tensor 2 Float)) (index (tuple i j) m))
"""


def ops_of(f, *args):
    before = labrys.METER.ops
    result = f(*args)
    return labrys.METER.ops - before, result


def test_meter_sum_of_squares_is_linear():
    m = load(SUMSQ)
    c10, r10 = ops_of(m.sumsq, np.arange(10.0))
    c1000, r1000 = ops_of(m.sumsq, np.arange(1000.0))
    assert r10 == float(np.sum(np.arange(10.0) ** 2))
    assert r1000 == float(np.sum(np.arange(1000.0) ** 2))
    assert c10 > 0
    assert 90 <= c1000 / c10 <= 110, (c10, c1000)
    # at least one op per element for index, mul and the addition
    assert c1000 >= 3 * 1000 - 1


def test_meter_is_deterministic():
    m = load(SUMSQ)
    c1, _ = ops_of(m.sumsq, np.ones(50))
    c2, _ = ops_of(m.sumsq, np.ones(50))
    assert c1 == c2


def test_meter_index_counts_one():
    m = load(SUMSQ)
    big = np.arange(10_000.0)
    c, r = ops_of(m.idx, 1234, big)
    assert r == 1234.0
    assert c == 1
    c, r = ops_of(m.idx2, 1, 2, np.arange(12.0).reshape(3, 4))
    assert r == 6.0
    assert c == 1
