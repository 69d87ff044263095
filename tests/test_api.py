"""The Python API: load, overload selection, source/str, implement,
evaluate, and the Python <-> `.ks` value conversions."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys import LabrysError
from labrys.values import Inj

PROGRAM = """\
; overloads and a few types
(def f Float (x : Float) (mul x 3.0))
(def f Float (x : Integer) (to_float (add x 1)))
(def f Float ((x : Float) (y : Float)) (sub x y))
(def f Float (v : Vec Float) (sum v))

(def g (Vec Float) ((a : Float) (v : Vec Float)) (mul a v))
(def norm2 Float (v : Vec Float) (sum (mul v v)))
(def rows (Vec (Vec Float)) (m : Vec (Vec Float)) (map (lam (r : Vec Float) (mul 2.0 r)) m))
(def mat (Tensor 2 Float) (m : Tensor 2 Float) (add m m))
(def ints (Vec Integer) (n : Integer) (build n (lam (i : Integer) (mul i i))))
(def flags (Vec Bool) (v : Vec Float) (map (lam (x : Float) (gt x 0.0)) v))
(def pair (Tuple Float (Vec Float)) (v : Vec Float) (tuple (sum v) (neg v)))
(def greet String (s : String) s)
(def both Bool ((a : Bool) (b : Bool)) (and a b))
(def unit (Tuple) () (tuple))
(def choose (Sum Float Integer) (b : Bool) (if b (inl (Sum Float Integer) 1.5) (inr (Sum Float Integer) 2)))
(def twice Float ((h : Lam Float Float) (x : Float)) (h (h x)))
(def main Integer () (print "hi\\n"))
"""


@pytest.fixture(scope="module")
def m():
    return labrys.load(PROGRAM)


# --- load ---------------------------------------------------------------------------

def test_load_from_text(m):
    assert isinstance(m, labrys.Module)
    assert m.f(2.0) == 6.0


def test_load_from_path(tmp_path):
    p = tmp_path / "prog.ks"
    p.write_text(PROGRAM)
    for arg in (p, str(p)):
        mod = labrys.load(arg)
        assert mod.norm2([3.0, 4.0]) == 25.0


def test_load_missing_file_is_a_labrys_error(tmp_path):
    with pytest.raises(LabrysError):
        labrys.load(tmp_path / "nope.ks")
    with pytest.raises(LabrysError):
        labrys.load(str(tmp_path / "nope.ks"))


def test_load_errors_carry_position(tmp_path):
    p = tmp_path / "bad.ks"
    p.write_text("(def f Float (x : Float)\n  (add x 1))\n")
    with pytest.raises(LabrysError) as info:
        labrys.load(p)
    msg = str(info.value)
    assert "bad.ks" in msg and ":2:" in msg
    assert "Traceback" not in msg
    with pytest.raises(LabrysError):
        labrys.load("(def f Float (x : Float) (add x y))")          # unknown variable
    with pytest.raises(LabrysError):
        labrys.load("(def f Float (x : Float) (frobnicate x))")     # unknown function
    with pytest.raises(LabrysError):
        labrys.load("(def f Float (x : Float) (add x 1.0)")         # unbalanced
    with pytest.raises(LabrysError):
        labrys.load("(def f Float (x : Float) (if true 1.0 2))")    # branch types differ


def test_names_and_iteration(m):
    names = set(m.names())
    assert {"f", "g", "norm2", "main"} <= names
    assert set(m) == names


def test_getattr_of_unknown_name(m):
    with pytest.raises(AttributeError):
        _ = m.does_not_exist
    with pytest.raises(LabrysError):
        m["does_not_exist"]


# --- overloads --------------------------------------------------------------------------

def test_overload_selected_by_python_arguments(m):
    assert m.f(2.0) == 6.0
    assert m.f(5.0, 1.5) == 3.5
    assert m.f([1.0, 2.0, 3.0]) == 6.0
    assert m.f(np.array([1.0, 2.0])) == 3.0


def test_overload_selected_explicitly(m):
    assert m["[f Float]"](2.0) == 6.0
    assert m["[f Integer]"](2) == 3.0
    assert m["[f (Tuple Float Float)]"](5.0, 1.5) == 3.5
    assert m["[f (Vec Float)]"]([1.0, 2.0]) == 3.0
    assert m.f["Float"](2.0) == 6.0
    assert m.f["Integer"](2) == 3.0
    assert m.f["(Tuple Float Float)"](5.0, 1.5) == 3.5
    assert m.f["(Vec Float)"]([4.0]) == 4.0
    assert m.function("f")["Float"](1.0) == 3.0


def test_explicit_overload_converts_arguments(m):
    # the Float overload, selected explicitly, accepts a Python int
    assert m.f["Float"](2) == 6.0


def test_no_matching_overload_is_an_error(m):
    with pytest.raises(LabrysError):
        m.f("a string")
    with pytest.raises(LabrysError):
        m.f(True)
    with pytest.raises(LabrysError):
        m.f["Bool"]
    with pytest.raises(LabrysError):
        m["[f Bool]"]
    with pytest.raises(LabrysError):
        m.norm2([[1.0], [2.0]])
    with pytest.raises(LabrysError):
        m.g(1.0)


def test_several_arguments_do_not_become_a_vector(m):
    # several Python arguments are the parameters of a multi-parameter def;
    # they must not be packed into a Vec Float for a one-parameter overload
    with pytest.raises(LabrysError):
        m.f(1.0, 2.0, 3.0)          # f has no 3-parameter overload
    with pytest.raises(LabrysError):
        m.norm2(3.0, 4.0)           # norm2 takes one Vec Float


def test_exact_scalar_type_preferred_by_overloading(m):
    # f has both a Float and an Integer overload: a Python int is an Integer
    assert m.f(2) == 3.0
    assert m.f(np.int64(2)) == 3.0
    assert m.f(2.0) == 6.0


def test_overload_not_found_inside_a_program():
    with pytest.raises(LabrysError):
        labrys.load("(def f Float (x : Float) x)\n(def g Float () (f 1))")
    with pytest.raises(LabrysError):
        labrys.load("(def f Float (x : Float) x)\n(def g Float () (f 1.0 2.0))")
    with pytest.raises(LabrysError):
        labrys.load("(def g Float (v : Vec Float) (index 0.0 v))")


def test_integer_argument_out_of_64_bit_range_is_rejected():
    mod = labrys.load("(def f Integer (x : Integer) (add x 1))")
    assert mod.f(2 ** 62) == 2 ** 62 + 1
    with pytest.raises(LabrysError):
        mod.f(2 ** 70)


# --- source and printing -----------------------------------------------------------------

def test_source_of_one_function(m):
    src = m.source("f")
    assert src.count("(def f") == 4
    assert "norm2" not in src
    again = labrys.load(src)
    assert again.f(2.0) == 6.0 and again.f["Integer"](2) == 3.0 and again.f(5.0, 1.5) == 3.5
    assert "(def norm2" in m.source("norm2")
    with pytest.raises(LabrysError):
        m.source("no_such_function")


def test_source_of_module_and_str(m):
    assert m.source() == str(m)


def test_str_module_reparses_to_same_program(m):
    text = str(m)
    assert labrys.parse_program(text) == labrys.parse_program(PROGRAM)
    again = labrys.load(text)
    assert again.norm2([1.0, 2.0]) == 5.0
    assert str(again) == text


def test_printer_round_trips_tricky_literals():
    src = r"""
    (def s String () "quote \" backslash \\ newline \n tab \t end")
    (def x Float () (add 1.0e-7 (add 0.1 1e20)))
    (def y Float () -0.0)
    (def z Integer () -9223372036854775807)
    """
    m = labrys.load(src)
    again = labrys.load(str(m))
    assert again.s() == m.s() == 'quote " backslash \\ newline \n tab \t end'
    assert again.x() == m.x() == 1e-7 + (0.1 + 1e20)
    assert math.copysign(1.0, again.y()) == -1.0
    assert again.z() == -9223372036854775807


# --- implement -----------------------------------------------------------------------------

def test_implement_edef():
    mod = labrys.load("""
    (edef cube Float (Float))
    (edef hyp Float (Tuple Float Float))
    (edef scale_all (Vec Float) ((Vec Float) Float))
    (def f Float (x : Float) (add (cube x) (hyp x 4.0)))
    (def g (Vec Float) (v : Vec Float) (scale_all v 2.0))
    """)
    mod.implement("cube", lambda x: x ** 3)
    mod.implement("hyp", math.hypot)
    mod.implement("scale_all", lambda v, k: [k * e for e in v])
    assert mod.f(3.0) == 27.0 + 5.0
    r = mod.g([1.0, 2.0])
    assert isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, [2.0, 4.0])
    # edef'd functions are callable from Python too
    assert mod.cube(2.0) == 8.0
    # re-implementing replaces the implementation
    mod.implement("cube", lambda x: -x)
    assert mod.f(3.0) == -3.0 + 5.0


def test_implement_rejects_a_def(m):
    with pytest.raises(LabrysError):
        m.implement("norm2", lambda v: 0.0)


def test_edef_without_implementation():
    mod = labrys.load("(edef ext Float (Float))\n(def f Float (x : Float) (ext x))")
    with pytest.raises(LabrysError):
        mod.f(1.0)


def test_implementation_returning_wrong_type_is_an_error():
    mod = labrys.load("(edef ext Float (Float))\n(def f Float (x : Float) (ext x))")
    mod.implement("ext", lambda x: "not a float")
    with pytest.raises(LabrysError):
        mod.f(1.0)


# --- evaluate -------------------------------------------------------------------------------

def test_evaluate():
    assert labrys.evaluate("(add 1.0 2.0)") == 3.0
    assert labrys.evaluate("(tuple 1 2.5 true)") == (1, 2.5, True)
    r = labrys.evaluate("(build 3 (lam (i : Integer) (to_float i)))")
    assert isinstance(r, np.ndarray)
    np.testing.assert_array_equal(r, [0.0, 1.0, 2.0])
    with pytest.raises(LabrysError):
        labrys.evaluate("(add 1 2.0)")
    with pytest.raises(LabrysError):
        labrys.evaluate("(index 5 (build 3 (lam (i : Integer) 1.0)))")


def test_evaluate_let():
    assert labrys.evaluate("(let (x 1.5) (mul x x))") == 2.25
    assert labrys.evaluate("(let ((x 1) (y (add x 1))) (mul x y))") == 2
    assert labrys.evaluate("(let ((a b) (tuple 1.0 2.0)) (sub a b))") == -1.0


def test_evaluate_case():
    assert labrys.evaluate("(case (inl (Sum Float Integer) 2.0) ((inl x) x) ((inr n) (to_float n)))") == 2.0


def test_evaluate_lambda_and_fold():
    assert labrys.evaluate("(fold (lam (ax : Tuple Float Float) (add (get$1$2 ax) (get$2$2 ax)))"
                           " 0.0 (build 4 (lam (i : Integer) (to_float i))))") == 6.0


def test_evaluate_in_module_scope(m):
    assert labrys.evaluate("(norm2 (build 3 (lam (i : Integer) 2.0)))", m) == 12.0
    assert labrys.evaluate("(f 2)", m) == 3.0


def test_evaluate_results_have_api_types():
    # Vec (Vec Float) -> list of ndarrays; Vec Integer -> list; deltaVec densified
    r = labrys.evaluate("(build 2 (lam (i : Integer) (build 2 (lam (j : Integer) (to_float (add i j))))))")
    assert isinstance(r, list)
    np.testing.assert_array_equal(np.asarray(r, dtype=float), [[0.0, 1.0], [1.0, 2.0]])
    assert list(labrys.evaluate("(build 3 (lam (i : Integer) i))")) == [0, 1, 2]
    d = labrys.evaluate("(deltaVec 3 1 2.0)")
    assert isinstance(d, np.ndarray)
    np.testing.assert_array_equal(d, [0.0, 2.0, 0.0])


# --- values round trip ---------------------------------------------------------------------

def test_vectors_in_lists_or_arrays_out_arrays(m):
    for v in ([1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0]), [1, 2, 3],
              np.array([1, 2, 3], dtype=np.int32), np.array([1.0, 2.0, 3.0], dtype=np.float32)):
        r = m.g(2.0, v)
        assert isinstance(r, np.ndarray) and r.dtype == np.float64 and r.shape == (3,)
        np.testing.assert_array_equal(r, [2.0, 4.0, 6.0])


def test_scalar_types(m):
    r = m.f(2.0)
    assert type(r) is float
    assert type(m.f(np.float64(2.0))) is float
    assert m.f["Integer"](np.int64(2)) == 3.0
    assert m.both(True, False) is False
    assert m.both(True, True) is True
    assert m.greet("héllo") == "héllo"
    assert m.unit() == ()


def test_vec_vec_float_round_trip(m):
    rows = [[1.0, 2.0], [3.0, 4.0, 5.0]]
    r = m.rows(rows)
    assert isinstance(r, list) and len(r) == 2
    assert all(isinstance(x, np.ndarray) and x.dtype == np.float64 for x in r)
    np.testing.assert_array_equal(r[0], [2.0, 4.0])
    np.testing.assert_array_equal(r[1], [6.0, 8.0, 10.0])
    # the output can be passed back in
    r2 = m.rows(r)
    np.testing.assert_array_equal(r2[1], [12.0, 16.0, 20.0])
    # a rectangular 2-D ndarray is accepted as Vec (Vec Float)
    r3 = m.rows(np.ones((2, 3)))
    np.testing.assert_array_equal(np.asarray(r3), 2.0 * np.ones((2, 3)))


def test_tensor2_round_trip(m):
    a = np.arange(6.0).reshape(2, 3)
    r = m.mat(a)
    assert isinstance(r, np.ndarray) and r.dtype == np.float64 and r.shape == (2, 3)
    np.testing.assert_array_equal(r, 2 * a)
    np.testing.assert_array_equal(m.mat([[1.0, 2.0], [3.0, 4.0]]), [[2.0, 4.0], [6.0, 8.0]])
    with pytest.raises(LabrysError):
        m.mat([1.0, 2.0])
    # the input is not modified
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))


def test_other_vectors_are_lists(m):
    r = m.ints(4)
    assert isinstance(r, list) and r == [0, 1, 4, 9]
    assert all(type(x) is int for x in r)
    b = m.flags([1.0, -1.0])
    assert isinstance(b, list) and b == [True, False]


def test_tuple_results(m):
    s, v = m.pair([1.0, 2.0])
    assert s == 3.0
    assert isinstance(v, np.ndarray)
    np.testing.assert_array_equal(v, [-1.0, -2.0])


def test_sum_values(m):
    assert m.choose(True) == Inj(True, 1.5)
    assert m.choose(False) == Inj(False, 2)
    mod = labrys.load("(def un Float (s : Sum Float Integer) (case s ((inl x) x) ((inr n) (to_float n))))")
    assert mod.un(Inj(True, 2.5)) == 2.5
    assert mod.un(Inj(False, 7)) == 7.0
    with pytest.raises(LabrysError):
        mod.un(2.5)


def test_python_callable_as_lambda(m):
    assert m.twice(lambda x: x + 1.0, 1.0) == 3.0


def test_runtime_errors_are_labrys_errors(m):
    mod = labrys.load("(def at Float ((i : Integer) (v : Vec Float)) (index i v))")
    with pytest.raises(LabrysError):
        mod.at(3, [1.0, 2.0])


def test_run_main(m, capsys):
    m.run_main()
    assert capsys.readouterr().out == "hi\n"


def test_demo_file_loads(capsys):
    demo = Path(labrys.__file__).parent / "demo.ks"
    if not demo.exists():
        pytest.skip("no demo.ks")
    mod = labrys.load(demo)
    assert mod.sqnorm([1.0, 2.0, 3.0]) == 14.0
    x, y = 1.5, 2.0
    assert math.isclose(mod.f(x, y), x * y * math.sin(x) + x / y, rel_tol=1e-15)
