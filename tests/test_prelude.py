"""Every primitive of docs/reference.md §5 at every overload it should have.

Expected values come from hand computation, ``math`` or NumPy — never from
labrys itself.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import labrys
from labrys import LabrysError


def ev(text: str):
    """Evaluate a closed `.ks` expression."""
    return labrys.evaluate(text)


def fn(ret: str, params: str, body: str):
    """A one-function module; returns the Python-callable function ``f``."""
    return labrys.load(f"(def f {ret} {params} {body})").f


def close(a, b, tol=1e-12):
    return np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=tol, atol=tol)


def assert_vecs(actual, expected):
    """Compare a list of ndarrays (Vec (Vec Float)) elementwise."""
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(e, dtype=float), rtol=1e-12)


V1 = [1.0, -2.0, 3.5]
V2 = [4.0, 0.5, -1.5]
M1 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
M2 = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -6.0]])
R1 = [[1.0, 2.0], [3.0, 4.0, 5.0]]          # ragged Vec (Vec Float)
R2 = [[0.5, -2.0], [1.0, 2.0, -4.0]]


# --- scalar arithmetic -------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    ("(add 1.5 2.25)", 3.75),
    ("(sub 1.5 2.25)", -0.75),
    ("(mul 1.5 2.25)", 3.375),
    ("(div 1.0 4.0)", 0.25),
    ("(div 7.0 2.0)", 3.5),
    ("(neg 2.5)", -2.5),
    ("(neg -0.5)", 0.5),
])
def test_float_arithmetic(expr, expected):
    r = ev(expr)
    assert isinstance(r, float)
    assert r == expected


@pytest.mark.parametrize("expr, expected", [
    ("(add 3 4)", 7),
    ("(sub 3 10)", -7),
    ("(mul -3 4)", -12),
    ("(neg 5)", -5),
    ("(neg -5)", 5),
    ("(div 7 2)", 3),
    ("(div -7 2)", -3),
    ("(div 7 -2)", -3),
    ("(div -7 -2)", 3),
    ("(div 6 3)", 2),
    ("(div -6 3)", -2),
    ("(div 1 2)", 0),
    ("(div -1 2)", 0),
    ("(div 0 5)", 0),
    ("(add 9223372036854775806 1)", 9223372036854775807),
])
def test_integer_arithmetic(expr, expected):
    r = ev(expr)
    assert type(r) is int
    assert r == expected


def test_integer_division_by_zero_is_an_error():
    with pytest.raises(LabrysError):
        ev("(div 1 0)")


def test_mixed_scalar_types_are_a_type_error():
    with pytest.raises(LabrysError):
        ev("(add 1 2.0)")


# --- elementwise arithmetic on vectors, tensors, tuples ----------------------

OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


@pytest.mark.parametrize("op", sorted(OPS))
def test_elementwise_vec_float(op):
    f = fn("(Vec Float)", "((a : Vec Float) (b : Vec Float))", f"({op} a b)")
    r = f(V1, V2)
    assert isinstance(r, np.ndarray) and r.dtype == np.float64
    np.testing.assert_allclose(r, OPS[op](np.array(V1), np.array(V2)), rtol=1e-15)


@pytest.mark.parametrize("op", sorted(OPS))
def test_elementwise_tensor2_float(op):
    f = fn("(Tensor 2 Float)", "((a : Tensor 2 Float) (b : Tensor 2 Float))", f"({op} a b)")
    r = f(M1, M2)
    assert isinstance(r, np.ndarray) and r.shape == (2, 3)
    np.testing.assert_allclose(r, OPS[op](M1, M2), rtol=1e-15)


@pytest.mark.parametrize("op", sorted(OPS))
def test_elementwise_vec_vec_float(op):
    f = fn("(Vec (Vec Float))", "((a : Vec (Vec Float)) (b : Vec (Vec Float)))", f"({op} a b)")
    r = f(R1, R2)
    assert_vecs(r, [OPS[op](np.array(x), np.array(y)) for x, y in zip(R1, R2)])


@pytest.mark.parametrize("op, expected", [
    ("add", [-6, 5, 10]), ("sub", [-8, 9, 4]), ("mul", [-7, -14, 21]), ("div", [-7, -3, 2]),
])
def test_elementwise_vec_integer(op, expected):
    f = fn("(Vec Integer)", "((a : Vec Integer) (b : Vec Integer))", f"({op} a b)")
    r = f([-7, 7, 7], [1, -2, 3])
    assert [int(x) for x in r] == expected


def test_neg_on_vectors_tensors_and_tuples():
    f = fn("(Vec Float)", "(a : Vec Float)", "(neg a)")
    np.testing.assert_array_equal(f(V1), -np.array(V1))
    f = fn("(Tensor 2 Float)", "(a : Tensor 2 Float)", "(neg a)")
    np.testing.assert_array_equal(f(M1), -M1)
    f = fn("(Vec (Vec Float))", "(a : Vec (Vec Float))", "(neg a)")
    assert_vecs(f(R1), [-np.array(x) for x in R1])
    assert ev("(neg (tuple 1.5 -2 (tuple 3.0)))") == (-1.5, 2, (-3.0,))


@pytest.mark.parametrize("op, expected", [
    ("add", (4.5, 6)), ("sub", (-1.5, -2)), ("mul", (4.5, 8)), ("div", (0.5, 0)),
])
def test_elementwise_tuples(op, expected):
    r = ev(f"({op} (tuple 1.5 2) (tuple 3.0 4))")
    assert r == expected
    assert type(r[1]) is int


def test_elementwise_nested_tuple_with_vector():
    f = fn("(Tuple Float (Vec Float))",
           "((a : Tuple Float (Vec Float)) (b : Tuple Float (Vec Float)))", "(add a b)")
    s, v = f((1.0, V1), (2.0, V2))
    assert s == 3.0
    np.testing.assert_allclose(v, np.array(V1) + np.array(V2))


def test_elementwise_size_mismatch_is_an_error():
    f = fn("(Vec Float)", "((a : Vec Float) (b : Vec Float))", "(add a b)")
    with pytest.raises(LabrysError):
        f([1.0, 2.0], [1.0, 2.0, 3.0])


# --- scaling and matrix-vector product --------------------------------------

def test_scalar_times_vector_both_orders():
    f = fn("(Vec Float)", "((k : Float) (v : Vec Float))", "(mul k v)")
    np.testing.assert_allclose(f(2.5, V1), 2.5 * np.array(V1))
    f = fn("(Vec Float)", "((v : Vec Float) (k : Float))", "(mul v k)")
    np.testing.assert_allclose(f(V1, -3.0), -3.0 * np.array(V1))


def test_scalar_times_tensor2_and_vec_vec():
    f = fn("(Tensor 2 Float)", "((k : Float) (m : Tensor 2 Float))", "(mul k m)")
    np.testing.assert_allclose(f(0.5, M1), 0.5 * M1)
    f = fn("(Tensor 2 Float)", "((m : Tensor 2 Float) (k : Float))", "(mul m k)")
    np.testing.assert_allclose(f(M1, 2.0), 2.0 * M1)
    f = fn("(Vec (Vec Float))", "((k : Float) (m : Vec (Vec Float)))", "(mul k m)")
    assert_vecs(f(3.0, R1), [3.0 * np.array(x) for x in R1])


def test_matrix_vector_tensor2():
    f = fn("(Vec Float)", "((m : Tensor 2 Float) (v : Vec Float))", "(mul m v)")
    v = np.array([1.0, -1.0, 2.0])
    r = f(M1, v)
    assert r.shape == (2,)
    np.testing.assert_allclose(r, M1 @ v)       # [5, 11]
    np.testing.assert_allclose(r, [5.0, 11.0])


def test_matrix_vector_vec_vec():
    f = fn("(Vec Float)", "((m : Vec (Vec Float)) (v : Vec Float))", "(mul m v)")
    rows = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 0.0, 1.0]]
    r = f(rows, [1.0, -1.0, 2.0])
    np.testing.assert_allclose(r, [5.0, 11.0, 2.0])


def test_matrix_vector_size_mismatch_is_an_error():
    f = fn("(Vec Float)", "((m : Tensor 2 Float) (v : Vec Float))", "(mul m v)")
    with pytest.raises(LabrysError):
        f(M1, [1.0, 2.0])


# --- comparisons and logic ---------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    ("(eq 1.0 1.0)", True), ("(eq 1.0 2.0)", False), ("(ne 1.0 2.0)", True), ("(ne 2.0 2.0)", False),
    ("(lt 1.0 2.0)", True), ("(lt 2.0 2.0)", False), ("(gt 3.0 2.0)", True), ("(gt 2.0 2.0)", False),
    ("(lte 2.0 2.0)", True), ("(lte 2.5 2.0)", False), ("(gte 2.0 2.0)", True), ("(gte 1.0 2.0)", False),
    ("(eq 3 3)", True), ("(eq 3 4)", False), ("(ne 3 4)", True), ("(lt -1 0)", True),
    ("(gt -1 0)", False), ("(lte 5 5)", True), ("(gte 4 5)", False),
    ("(eq true true)", True), ("(eq true false)", False), ("(ne true false)", True),
    ('(eq "ab" "ab")', True), ('(eq "ab" "ba")', False),
])
def test_comparisons(expr, expected):
    r = ev(expr)
    assert type(r) is bool
    assert r is expected


@pytest.mark.parametrize("expr, expected", [
    ("(and true true)", True), ("(and true false)", False), ("(and false true)", False),
    ("(and false false)", False), ("(or true false)", True), ("(or false true)", True),
    ("(or false false)", False), ("(or true true)", True), ("(not true)", False), ("(not false)", True),
])
def test_logic(expr, expected):
    assert ev(expr) is expected


# --- maths ---------------------------------------------------------------------

@pytest.mark.parametrize("name, x", [
    ("exp", 0.7), ("log", 2.5), ("sin", 0.3), ("cos", 0.3), ("tan", 0.3), ("tanh", 0.6),
    ("sinh", 0.6), ("cosh", 0.6), ("sqrt", 2.0), ("erf", 0.5), ("lgamma", 4.5), ("lgamma", 0.25),
])
def test_unary_maths(name, x):
    r = ev(f"({name} {x!r})")
    assert isinstance(r, float)
    assert math.isclose(r, getattr(math, name)(x), rel_tol=1e-14)


def test_abs():
    assert ev("(abs -2.5)") == 2.5
    assert ev("(abs 2.5)") == 2.5
    assert ev("(abs -3)") == 3 and type(ev("(abs -3)")) is int


def test_pow():
    assert ev("(pow 2.0 10.0)") == 1024.0
    assert math.isclose(ev("(pow 2.0 0.5)"), math.sqrt(2.0), rel_tol=1e-15)
    assert ev("(pow 4.0 -0.5)") == 0.5


def test_max_min_two_floats():
    assert ev("(max 1.5 -2.0)") == 1.5
    assert ev("(max -3.0 2.0)") == 2.0
    assert ev("(min 1.5 -2.0)") == -2.0
    assert ev("(min -3.0 2.0)") == -3.0


def test_max_min_of_vec_float():
    v = [3.0, -1.0, 7.5, 2.0]
    assert fn("Float", "(v : Vec Float)", "(max v)")(v) == 7.5
    assert fn("Float", "(v : Vec Float)", "(min v)")(v) == -1.0


def test_imax():
    f = fn("Integer", "(v : Vec Float)", "(imax v)")
    assert f([3.0, -1.0, 7.5, 2.0]) == 2
    assert f([9.0, 1.0]) == 0
    assert f([1.0, 4.0, 4.0]) == 1


def test_to_float_bool_to_float_pi():
    r = ev("(to_float 7)")
    assert type(r) is float and r == 7.0
    assert ev("(to_float -3)") == -3.0
    assert ev("(bool_to_float true)") == 1.0
    assert ev("(bool_to_float false)") == 0.0
    assert ev("(pi)") == math.pi


# --- IEEE edge cases -------------------------------------------------------------

def test_ieee_edge_cases():
    assert ev("(log 0.0)") == -math.inf
    assert ev("(exp 1000.0)") == math.inf
    assert ev("(exp -1000.0)") == 0.0
    assert ev("(div 1.0 0.0)") == math.inf
    assert ev("(div -1.0 0.0)") == -math.inf
    assert math.isnan(ev("(div 0.0 0.0)"))
    assert math.isnan(ev("(sqrt -1.0)"))
    assert math.isnan(ev("(log -1.0)"))
    assert ev("(cosh 1000.0)") == math.inf
    assert ev("(sinh 1000.0)") == math.inf


def test_ieee_sinh_overflow_keeps_sign():
    # sinh is odd: sinh(-1000) overflows to -inf (np.sinh(-1000.0) == -inf)
    with np.errstate(all="ignore"):
        expected = float(np.sinh(-1000.0))
    assert expected == -math.inf
    assert ev("(sinh -1000.0)") == -math.inf


def test_ieee_more_edge_cases():
    assert ev("(div 1.0 -0.0)") == -math.inf
    assert ev("(lgamma 0.0)") == math.inf
    assert ev("(pow 0.0 -1.0)") == math.inf
    assert math.isnan(ev("(pow -8.0 0.5)"))
    assert math.isnan(ev("(exp (div 0.0 0.0))"))


def test_ieee_pow_negative_zero_odd_negative_exponent():
    # IEEE-754 / C99 pow(-0, y) for y a negative odd integer is -inf
    with np.errstate(all="ignore"):
        assert float(np.power(-0.0, -1.0)) == -math.inf
    assert ev("(pow -0.0 -1.0)") == -math.inf


def test_ieee_vector_division_by_zero():
    f = fn("(Vec Float)", "((a : Vec Float) (b : Vec Float))", "(div a b)")
    r = f([1.0, -1.0, 0.0], [0.0, 0.0, 0.0])
    assert r[0] == math.inf and r[1] == -math.inf and math.isnan(r[2])


# --- vector helpers ---------------------------------------------------------------

def test_constvec():
    r = ev("(constVec 3 2.5)")
    np.testing.assert_array_equal(np.asarray(r, dtype=float), [2.5, 2.5, 2.5])
    f = fn("(Vec Float)", "((n : Integer) (x : Float))", "(constVec n x)")
    r = f(4, -1.0)
    assert isinstance(r, np.ndarray) and r.dtype == np.float64
    np.testing.assert_array_equal(r, [-1.0] * 4)
    np.testing.assert_array_equal(f(0, 1.0), np.zeros(0))
    f = fn("(Vec (Vec Float))", "((n : Integer) (x : Vec Float))", "(constVec n x)")
    assert_vecs(f(2, [1.0, 2.0]), [[1.0, 2.0], [1.0, 2.0]])


def test_deltavec_dense_value():
    f = fn("(Vec Float)", "((n : Integer) (i : Integer) (x : Float))", "(deltaVec n i x)")
    r = f(5, 2, 3.5)
    assert isinstance(r, np.ndarray) and r.dtype == np.float64
    np.testing.assert_array_equal(r, [0.0, 0.0, 3.5, 0.0, 0.0])


def test_deltavec_operations():
    # index, sum, size, add to a dense vector, accumulate in sumbuild
    f = fn("Float", "(i : Integer)", "(index i (deltaVec 4 1 7.0))")
    assert [f(i) for i in range(4)] == [0.0, 7.0, 0.0, 0.0]
    assert fn("Float", "()", "(sum (deltaVec 4 3 2.5))")() == 2.5
    assert fn("Integer", "()", "(size (deltaVec 6 3 2.5))")() == 6
    f = fn("(Vec Float)", "(v : Vec Float)", "(ts_add v (deltaVec 3 0 10.0))")
    np.testing.assert_array_equal(f([1.0, 2.0, 3.0]), [11.0, 2.0, 3.0])
    f = fn("(Vec Float)", "(v : Vec Float)", "(ts_add (deltaVec 3 2 10.0) v)")
    np.testing.assert_array_equal(f([1.0, 2.0, 3.0]), [1.0, 2.0, 13.0])
    f = fn("(Vec Float)", "(n : Integer)",
           "(sumbuild n (lam (i : Integer) (deltaVec n i (to_float (mul i i)))))")
    np.testing.assert_array_equal(f(6), np.arange(6.0) ** 2)
    f = fn("(Vec Float)", "(v : Vec Float)", "(add v (deltaVec 3 1 1.0))")
    np.testing.assert_array_equal(f([1.0, 2.0, 3.0]), [1.0, 3.0, 3.0])
    f = fn("(Vec Float)", "(v : Vec Float)", "(mul 2.0 (deltaVec 3 1 4.0))")
    np.testing.assert_array_equal(f([0.0]), [0.0, 8.0, 0.0])


def test_deltavec_out_of_range_is_zero_as_in_knossos():
    f = fn("(Vec Float)", "((n : Integer) (i : Integer) (x : Float))", "(deltaVec n i x)")
    np.testing.assert_array_equal(f(3, 3, 1.0), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(f(3, -1, 1.0), [0.0, 0.0, 0.0])
    g = fn("Float", "((v : Vec Float) (i : Integer))", "(index i v)")
    with pytest.raises(LabrysError):   # index outside a tensor stays an error
        g([1.0, 2.0], 2)


def test_ts_add_neg_scale_dot():
    f = fn("(Vec Float)", "((a : Vec Float) (b : Vec Float))", "(ts_add a b)")
    np.testing.assert_allclose(f(V1, V2), np.add(V1, V2))
    assert ev("(ts_add 1.5 2.0)") == 3.5
    assert ev("(ts_add (tuple 1.0 (tuple 2.0)) (tuple 0.5 (tuple -1.0)))") == (1.5, (1.0,))
    assert ev("(ts_neg 2.0)") == -2.0
    assert ev("(ts_neg (tuple 1.0 -2.0))") == (-1.0, 2.0)
    f = fn("(Vec Float)", "(a : Vec Float)", "(ts_neg a)")
    np.testing.assert_array_equal(f(V1), -np.array(V1))
    assert ev("(ts_scale 2.0 3.0)") == 6.0
    assert ev("(ts_scale 2.0 (tuple 1.0 -3.0))") == (2.0, -6.0)
    f = fn("(Vec Float)", "((k : Float) (a : Vec Float))", "(ts_scale k a)")
    np.testing.assert_allclose(f(-2.0, V1), -2.0 * np.array(V1))
    f = fn("Float", "((a : Vec Float) (b : Vec Float))", "(ts_dot a b)")
    assert math.isclose(f(V1, V2), float(np.dot(V1, V2)), rel_tol=1e-15)
    assert ev("(ts_dot 2.0 3.0)") == 6.0
    assert ev("(ts_dot (tuple 1.0 2.0) (tuple 3.0 4.0))") == 11.0
    f = fn("Float", "((a : Vec (Vec Float)) (b : Vec (Vec Float)))", "(ts_dot a b)")
    expected = sum(float(np.dot(x, y)) for x, y in zip(R1, R2))
    assert math.isclose(f(R1, R2), expected, rel_tol=1e-15)


def test_unzip():
    f = fn("(Tuple (Vec Float) (Vec Integer))", "(v : Vec (Tuple Float Integer))", "(unzip v)")
    a, b = f([(1.0, 1), (2.5, -2), (3.0, 7)])
    np.testing.assert_array_equal(np.asarray(a, dtype=float), [1.0, 2.5, 3.0])
    assert [int(x) for x in b] == [1, -2, 7]


def test_dup_and_elim():
    assert ev("(dup 3.5)") == (3.5, 3.5)
    assert ev("(dup (tuple 1 true))") == ((1, True), (1, True))
    assert ev("(elim 3.5)") == ()
    assert fn("(Tuple)", "(v : Vec Float)", "(elim v)")([1.0]) == ()


# --- build, sumbuild, index, size, sum, fold, map -----------------------------------

def test_build_1d():
    f = fn("(Vec Float)", "(n : Integer)", "(build n (lam (i : Integer) (mul 2.0 (to_float i))))")
    r = f(5)
    assert isinstance(r, np.ndarray) and r.dtype == np.float64
    np.testing.assert_array_equal(r, 2.0 * np.arange(5))
    assert f(0).shape == (0,)
    g = fn("(Vec Integer)", "(n : Integer)", "(build n (lam (i : Integer) (mul i i)))")
    assert [int(x) for x in g(4)] == [0, 1, 4, 9]


def test_build_2d():
    f = fn("(Tensor 2 Float)", "((r : Integer) (c : Integer))",
           "(build (tuple r c) (lam (ij : Tuple Integer Integer)"
           " (to_float (add (mul 10 (get$1$2 ij)) (get$2$2 ij)))))")
    r = f(2, 3)
    assert isinstance(r, np.ndarray) and r.shape == (2, 3)
    np.testing.assert_array_equal(r, [[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]])


def test_build_of_vectors():
    f = fn("(Vec (Vec Float))", "(n : Integer)",
           "(build n (lam (i : Integer) (build i (lam (j : Integer) (to_float j)))))")
    assert_vecs(f(4), [np.arange(k, dtype=float) for k in range(4)])


def test_sumbuild():
    f = fn("Float", "(n : Integer)", "(sumbuild n (lam (i : Integer) (to_float (mul i i))))")
    assert f(10) == float(sum(i * i for i in range(10)))
    assert f(0) == 0.0
    g = fn("Integer", "(n : Integer)", "(sumbuild n (lam (i : Integer) i))")
    assert g(101) == 5050
    h = fn("(Vec Float)", "(n : Integer)",
           "(sumbuild n (lam (i : Integer) (constVec 3 (to_float i))))")
    np.testing.assert_array_equal(h(4), [6.0, 6.0, 6.0])
    t = fn("(Tuple Float Integer)", "(n : Integer)",
           "(sumbuild n (lam (i : Integer) (tuple (to_float i) 1)))")
    assert t(5) == (10.0, 5)


def test_sumbuild_does_not_alias_its_first_element():
    # accumulating into a vector must not modify the vector the body returned
    f = fn("(Tuple (Vec Float) (Vec Float))", "(v : Vec Float)",
           "(let (s (sumbuild 3 (lam (i : Integer) v))) (tuple s v))")
    s, v = f([1.0, 2.0])
    np.testing.assert_array_equal(s, [3.0, 6.0])
    np.testing.assert_array_equal(v, [1.0, 2.0])


def test_index_1d_and_2d():
    f = fn("Float", "((i : Integer) (v : Vec Float))", "(index i v)")
    assert [f(i, V1) for i in range(3)] == V1
    with pytest.raises(LabrysError):
        f(3, V1)
    with pytest.raises(LabrysError):
        f(-1, V1)
    g = fn("Float", "((i : Integer) (j : Integer) (m : Tensor 2 Float))", "(index (tuple i j) m)")
    for i in range(2):
        for j in range(3):
            assert g(i, j, M1) == M1[i, j]
    with pytest.raises(LabrysError):
        g(2, 0, M1)
    h = fn("(Vec Float)", "((i : Integer) (m : Vec (Vec Float)))", "(index i m)")
    np.testing.assert_array_equal(h(1, R1), R1[1])


def test_size():
    f = fn("Integer", "(v : Vec Float)", "(size v)")
    assert f(V1) == 3 and f([]) == 0
    g = fn("(Tuple Integer Integer)", "(m : Tensor 2 Float)", "(size m)")
    assert g(M1) == (2, 3)
    h = fn("Integer", "(m : Vec (Vec Float))", "(size m)")
    assert h(R1) == 2


def test_sum_of_floats_vectors_tuples():
    f = fn("Float", "(v : Vec Float)", "(sum v)")
    assert math.isclose(f(V1), sum(V1), rel_tol=1e-15)
    assert f([]) == 0.0
    g = fn("(Vec Float)", "(m : Vec (Vec Float))", "(sum m)")
    np.testing.assert_allclose(g([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), [9.0, 12.0])
    h = fn("(Tuple Float Integer)", "(v : Vec (Tuple Float Integer))", "(sum v)")
    assert h([(1.0, 1), (2.5, 2), (-0.5, 3)]) == (3.0, 6)
    k = fn("Integer", "(v : Vec Integer)", "(sum v)")
    assert k([1, 2, 3, -10]) == -4


def test_sum_does_not_modify_its_argument():
    f = fn("(Tuple (Vec Float) (Vec (Vec Float)))", "(m : Vec (Vec Float))", "(tuple (sum m) m)")
    s, m = f([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(s, [4.0, 6.0])
    assert_vecs(m, [[1.0, 2.0], [3.0, 4.0]])


def test_fold():
    f = fn("Float", "(v : Vec Float)",
           "(fold (lam (acc_x : Tuple Float Float) (add (get$1$2 acc_x) (get$2$2 acc_x))) 0.0 v)")
    assert f([1.0, 2.0, 3.5]) == 6.5
    assert f([]) == 0.0
    # left fold: order matters
    g = fn("Integer", "(v : Vec Integer)",
           "(fold (lam (acc_x : Tuple Integer Integer) (add (mul 10 (get$1$2 acc_x)) (get$2$2 acc_x))) 0 v)")
    assert g([1, 2, 3]) == 123
    h = fn("Float", "(v : Vec Float)",
           "(fold (lam (acc_x : Tuple Float Float) (sub (get$1$2 acc_x) (get$2$2 acc_x))) 100.0 v)")
    assert h([1.0, 2.0, 3.0]) == 94.0


def test_map_1d_and_2d():
    f = fn("(Vec Float)", "(v : Vec Float)", "(map (lam (x : Float) (mul x x)) v)")
    np.testing.assert_array_equal(f(V1), np.square(V1))
    g = fn("(Tensor 2 Float)", "(m : Tensor 2 Float)", "(map (lam (x : Float) (add x 1.0)) m)")
    r = g(M1)
    assert isinstance(r, np.ndarray) and r.shape == (2, 3)
    np.testing.assert_array_equal(r, M1 + 1.0)
    h = fn("(Vec Bool)", "(v : Vec Float)", "(map (lam (x : Float) (gt x 0.0)) v)")
    assert [bool(x) for x in h(V1)] == [True, False, True]
    k = fn("(Vec Float)", "(m : Vec (Vec Float))", "(map (lam (r : Vec Float) (sum r)) m)")
    np.testing.assert_allclose(k(R1), [3.0, 12.0])


def test_assert():
    f = fn("Float", "(x : Float)", "(assert (gt x 0.0) (sqrt x))")
    assert f(4.0) == 2.0
    with pytest.raises(LabrysError):
        f(-4.0)


# --- print ----------------------------------------------------------------------

@pytest.mark.parametrize("expr, out", [
    ("(print 15.0)", "15.0"),
    ("(print 0.1)", "0.1"),
    ("(print -2.5)", "-2.5"),
    ("(print 1.0e-3)", "0.001"),
    ("(print 42)", "42"),
    ("(print -7)", "-7"),
    ("(print true)", "true"),
    ("(print false)", "false"),
    ('(print "hello")', "hello"),
    ('(print "a\\nb\\t\\"c\\"")', 'a\nb\t"c"'),
    # (print (tuple a b)) is the same call as (print a b) (docs/reference.md §3), so a
    # tuple is printed as a value when it is one of several arguments
    ('(print "t=" (tuple 1.0 2))', "t=(1.0, 2)"),
    ('(print (tuple 1.0 2))', "1.02"),
    ('(print "u=" (tuple))', "u=()"),
    ('(print "t=" (tuple true (tuple 0.5 3)))', "t=(true, (0.5, 3))"),
    ('(print "t=" (tuple "s" 1))', 't=("s", 1)'),
    ('(print 1 " " 2.0 "\\n")', "1 2.0\n"),
    ('(print "x = " 3.0 ", b = " true)', "x = 3.0, b = true"),
])
def test_print_format(capsys, expr, out):
    r = ev(expr)
    assert type(r) is int
    assert capsys.readouterr().out == out


def test_print_vectors(capsys):
    f = fn("Integer", "((v : Vec Float) (w : Vec Integer) (m : Tensor 2 Float))", "(print v \" \" w \" \" m)")
    f([1.0, 2.0], [3, -4], np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert capsys.readouterr().out == "[1.0, 2.0] [3, -4] [[1.0, 2.0], [3.0, 4.0]]"
    g = fn("Integer", "(v : Vec (Vec Float))", "(print v)")
    g([[0.1], [0.5, 15.0]])
    assert capsys.readouterr().out == "[[0.1], [0.5, 15.0]]"
    h = fn("Integer", "()", "(print (build 3 (lam (i : Integer) (to_float i))))")
    h()
    assert capsys.readouterr().out == "[0.0, 1.0, 2.0]"


def test_print_float_shortest_round_trip(capsys):
    # every printed Float reads back to the same double
    xs = [0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-7, 123456.789, 5e-324, 1.7976931348623157e308]
    f = fn("Integer", "(x : Float)", "(print x)")
    for x in xs:
        f(x)
        out = capsys.readouterr().out
        assert float(out) == x
        assert len(out) <= len(repr(x)) + 2


# --- $ranhashdoub ------------------------------------------------------------------

def test_ranhashdoub():
    f = fn("Float", "(i : Integer)", "($ranhashdoub i)")
    xs = [f(i) for i in range(200)]
    assert all(isinstance(x, float) and 0.0 <= x < 1.0 for x in xs)
    assert xs == [f(i) for i in range(200)]          # deterministic
    assert len(set(xs)) == 200                        # not constant
    assert 0.3 < sum(xs) / len(xs) < 0.7              # roughly uniform
    assert ev("($ranhashdoub 17)") == f(17)


def test_ranhashdoub_deterministic_across_modules():
    a = labrys.load("(def f Float (i : Integer) ($ranhashdoub i))").f(12345)
    b = labrys.load("(def g Float (i : Integer) ($ranhashdoub i))").g(12345)
    assert a == b


# --- type-suffixed names -----------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    ("(add@ff 1.5 2.0)", 3.5),
    ("(add@ii 2 3)", 5),
    ("(sub@ff 1.5 2.0)", -0.5),
    ("(sub@ii 2 3)", -1),
    ("(mul@ff 1.5 2.0)", 3.0),
    ("(mul@ii 4 3)", 12),
    ("(div@ff 1.0 4.0)", 0.25),
    ("(div@ii -7 2)", -3),
    ("(neg@f 1.5)", -1.5),
    ("(neg@i 2)", -2),
    ("(eq@ii 2 2)", True),
    ("(lt@ff 1.0 2.0)", True),
    ("(gt@ii 1 2)", False),
])
def test_type_suffixed_names(expr, expected):
    r = ev(expr)
    assert r == expected and type(r) is type(expected)


def test_type_suffixed_vector_names():
    f = fn("(Vec Float)", "((k : Float) (v : Vec Float))", "(mul@fv k v)")
    np.testing.assert_allclose(f(2.0, V1), 2.0 * np.array(V1))
    g = fn("(Vec Float)", "((a : Vec Float) (b : Vec Float))", "(add@vv a b)")
    np.testing.assert_allclose(g(V1, V2), np.add(V1, V2))


def test_redeclaring_a_primitive_with_edef_is_allowed():
    m = labrys.load("(edef add Float (Float Float))\n(def f Float (x : Float) (add x 1.0))")
    assert m.f(2.0) == 3.0


def test_sumbuild_2d():
    f = fn("Float", "((r : Integer) (c : Integer))",
           "(sumbuild (tuple r c) (lam (ij : Tuple Integer Integer)"
           " (to_float (mul (get$1$2 ij) (get$2$2 ij)))))")
    assert f(3, 4) == float(sum(i * j for i in range(3) for j in range(4)))


def test_deltavec_of_vectors():
    f = fn("(Vec (Vec Float))", "(v : Vec Float)", "(deltaVec 3 1 v)")
    assert_vecs(f([1.0, 2.0]), [[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]])
    g = fn("(Vec Float)", "(v : Vec Float)",
           "(sum (sumbuild 3 (lam (i : Integer) (deltaVec 3 i (mul (to_float i) v)))))")
    np.testing.assert_allclose(g([1.0, 2.0]), [3.0, 6.0])


@pytest.mark.parametrize("hint", ["$trace", "$inline", "$copydown"])
def test_identity_hints(hint):
    assert ev(f"({hint} 3.5)") == 3.5
    f = fn("(Vec Float)", "(v : Vec Float)", f"({hint} v)")
    np.testing.assert_array_equal(f(V1), V1)


@pytest.mark.parametrize("expr", [
    "(mul 9223372036854775807 2)",
    "(add 9223372036854775807 1)",
    "(sub -9223372036854775807 2)",
    "(neg (sub -9223372036854775807 1))",
    "(abs (sub -9223372036854775807 1))",
])
def test_integer_is_signed_64_bit(expr):
    # Integer is a signed 64-bit integer (docs/reference.md §2): an overflowing
    # result may wrap or be reported, but cannot be a value outside the type
    try:
        r = ev(expr)
    except LabrysError:
        return
    assert -2 ** 63 <= r < 2 ** 63, r
