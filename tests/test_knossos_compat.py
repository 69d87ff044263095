"""Knossos compatibility (docs/language.md, "Programs written for the Knossos
compiler"): the forms and primitives that the Knossos compiler's own test
programs use, each checked on small programs written here, with expected values
computed by hand or with NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import labrys
from labrys.errors import LabrysError

BACKENDS = ["interp", "python", "compiled"]


def load(text: str, backend: str = "interp", tmp_path=None):
    if tmp_path is None:
        return labrys.load(text, backend=backend)
    path = tmp_path / "prog.ks"
    path.write_text(text)
    return labrys.load(path, backend=backend)


# --- deltaVec outside its size is all zeros ---------------------------------------

DELTA = """
(def pick Float ((n : Integer) (i : Integer) (x : Float))
  (sum (deltaVec n i (mul x x))))
(def outside (Vec Float) (i : Integer) (deltaVec 3 i 2.5))
(def outside2 (Tensor 2 Float) (ij : Tuple Integer Integer) (deltaVec (tuple 2 3) ij 1.5))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_delta_vec_outside_its_size_is_zero(backend):
    m = load(DELTA, backend)
    assert list(m.outside(1)) == [0.0, 2.5, 0.0]
    for i in (3, 7, -1):
        assert list(m.outside(i)) == [0.0, 0.0, 0.0]
    assert np.array_equal(m.outside2((1, 2)), [[0, 0, 0], [0, 0, 1.5]])
    for ij in ((2, 0), (0, 3), (-1, 1)):
        assert np.array_equal(m.outside2(ij), np.zeros((2, 3)))
    assert m.pick(4, 2, 3.0) == 9.0 and m.pick(4, 4, 3.0) == 0.0


@pytest.mark.parametrize("method", ["rev", "fwd"])
def test_the_derivative_of_delta_vec_outside_its_size_is_zero(method):
    d = load(DELTA).derive(method, "pick")
    if method == "rev":
        inside, outside = d((4, 2, 3.0), 1.0)[2], d((4, 9, 3.0), 1.0)[2]
    else:
        inside, outside = d((4, 2, 3.0), ((), (), 1.0)), d((4, 9, 3.0), ((), (), 1.0))
    assert inside == 6.0 and outside == 0.0    # d(x²)/dx = 2x inside; nothing depends on x outside


# --- ($dummy T) ---------------------------------------------------------------------

def test_dummy_is_a_value_of_its_type_that_the_program_ignores():
    m = load("""
(def f Float (x : Float)
  (let ((d ($dummy (Vec Integer)))
        (e ($dummy (Tuple Float (Tensor 2 Float) Bool String))))
    (mul x x)))
(def g (Tuple Float (Vec Integer) Bool) () ($dummy (Tuple Float (Vec Integer) Bool)))
""")
    assert m.f(3.0) == 9.0 and labrys.grad(m.f)(3.0) == 6.0
    value = m.g()
    assert value[0] == 0.0 and len(value[1]) == 0 and value[2] is False


def test_dummy_of_a_function_type_is_a_positioned_error(tmp_path):
    with pytest.raises(LabrysError, match=r"prog.ks:1:34: error: \(\$dummy T\) needs a data type"):
        load("(def f Float (x : Float) (let (d ($dummy (Lam Float Float))) x))", tmp_path=tmp_path)


# --- [shape f] declared with the size type -------------------------------------------

def test_a_shape_declared_as_a_size(capsys):
    load("""
(def twice (Vec Float) (v : Vec Float) (build (mul 2 (size v)) (lam (i : Integer) 1.0)))
(def [shape twice] Integer (v : Vec Float) (shape (twice v)))
(def grid (Tensor 2 Float) (v : Vec Float) (build (tuple 3 (size v)) (lam (ij : Tuple Integer Integer) 0.0)))
(def [shape grid] (Tuple Integer Integer) (v : Vec Float) (shape (grid v)))
(def main Integer () (print ([shape twice] (Vec_init 1.0 2.0 3.0)) " " ([shape grid] (Vec_init 1.0 2.0))))
""").function("main")()
    assert capsys.readouterr().out == "6 (3, 2)"


def test_a_shape_with_another_wrong_type_is_still_an_error():
    with pytest.raises(LabrysError, match="is declared to return Float"):
        labrys.load("(def f (Vec Float) (v : Vec Float) v)\n"
                    "(def [shape f] Float (v : Vec Float) (shape (f v)))")


# --- buildFromSparse / buildFromSparseTupled ---------------------------------------------

SPARSE = """
(def scatter (Vec Float) (pairs : Vec (Tuple Integer Float))
  (buildFromSparse (constVec 4 (tuple)) (size pairs) (lam (k : Integer) (index k pairs))))
(def scatter2 (Tensor 2 Float) (pairs : Vec (Tuple (Tuple Integer Integer) Float))
  (buildFromSparse (constVec (tuple 2 2) (tuple)) (size pairs) (lam (k : Integer) (index k pairs))))
(def ragged (Vec (Vec Float)) (pairs : Vec (Tuple Integer (Vec Float)))
  (buildFromSparse (Vec_init (constVec 1 (tuple)) (constVec 2 (tuple))) (size pairs)
                   (lam (k : Integer) (index k pairs))))
(def both (Tuple (Vec Float) (Vec Float)) (n : Integer)
  (buildFromSparseTupled (tuple (constVec 3 (tuple)) (constVec 2 (tuple))) n
    (lam (k : Integer) (tuple (tuple (sub 2 k) (to_float k)) (tuple 1 1.0)))))
(def grid Float (m : Integer)
  (sum (buildFromSparse (constVec 4 (tuple)) (tuple m 2)
         (lam (ij : Tuple Integer Integer) (tuple (get$1$2 ij) (to_float (get$2$2 ij)))))))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_from_sparse(backend):
    m = load(SPARSE, backend)
    # pairs land where they say; two at one index add up; others are zero
    assert list(m.scatter([(2, 1.5), (0, 4.0), (2, 0.25)])) == [4.0, 0.0, 1.75, 0.0]
    assert list(m.scatter([])) == [0.0, 0.0, 0.0, 0.0]
    assert np.array_equal(m.scatter2([((1, 0), 3.0), ((0, 1), 2.0), ((1, 0), 1.0)]), [[0, 2], [4, 0]])
    rows = m.ragged([(1, [1.0, 2.0]), (0, [5.0]), (1, [0.5, 0.5])])
    assert [list(r) for r in rows] == [[5.0], [1.5, 2.5]]
    a, b = m.both(3)   # k = 0, 1, 2 put k at 2 - k; each puts 1.0 at 1
    assert list(a) == [2.0, 1.0, 0.0] and list(b) == [0.0, 3.0]
    assert m.grid(4) == 4 * (0.0 + 1.0)   # a 4 x 2 range of pairs, values j


def test_build_from_sparse_outside_the_shape_is_a_positioned_error(tmp_path):
    m = load(SPARSE, tmp_path=tmp_path)
    with pytest.raises(LabrysError, match=r"prog.ks:3:3: error: buildFromSparse: index 4 outside"):
        m.scatter([(4, 1.0)])


def test_build_from_sparse_with_a_row_of_the_wrong_length_is_an_error():
    m = load(SPARSE)
    with pytest.raises(LabrysError, match="a value of shape 2 at index 0, where the result's shape has 1"):
        m.ragged([(1, [1.0, 2.0]), (0, [5.0, 1.0])])


def test_build_from_sparse_has_no_derivative_yet_and_says_where(tmp_path):
    m = load(SPARSE + "(def total Float (p : Vec (Tuple Integer Float))  (sum (scatter p)))\n", tmp_path=tmp_path)
    with pytest.raises(LabrysError, match=r"prog.ks:3:3: error: .*buildFromSparse"):
        m.derive("rev", "total")


# --- map2 ----------------------------------------------------------------------------------

MAP2 = """
(def f (Vec Float) ((u : Vec Float) (v : Vec Float))
  (map2 (lam (xy : Tuple Float Float) (let ((x y) xy) (mul x (sin y)))) u v))
(def g Float ((u : Vec Float) (v : Vec Float)) (sum (f u v)))
(def h Float (t : Tensor 2 Float)
  (sum (map2 (lam (ab : Tuple Float Float) (mul (get$1$2 ab) (get$2$2 ab))) t t)))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_map2_values_and_derivatives(backend):
    m = load(MAP2, backend)
    u, v = np.array([1.0, 2.0, -0.5]), np.array([0.5, 1.5, 2.0])
    assert np.allclose(m.f(u, v), u * np.sin(v))
    du, dv = m.derive("rev", "g")((u, v), 1.0)
    assert np.allclose(du, np.sin(v)) and np.allclose(dv, u * np.cos(v))
    tangent = m.derive("fwd", "g")((u, v), (np.ones(3), np.zeros(3)))
    assert tangent == pytest.approx(np.sin(v).sum())
    t = np.array([[1.0, 2.0], [3.0, -1.0]])
    assert np.allclose(m.derive("rev", "h")(t, 1.0), 2 * t)


def test_map2_of_different_sizes_is_an_error():
    m = load(MAP2)
    with pytest.raises(LabrysError, match="different sizes"):
        m.f([1.0, 2.0], [1.0])


# --- Knossos AD of build over a Tensor N ----------------------------------------------------

TENSOR = """
(def sq (Tensor 2 Float) (t : Tensor 2 Float)
  (build (size t) (lam (ij : Tuple Integer Integer) (let (x (index ij t)) (mul x x)))))
(def total Float (t : Tensor 2 Float) (sum (sq t)))
(def weighted Float (t : Tensor 2 Float)
  (sumbuild (size t) (lam (ij : Tuple Integer Integer)
    (mul (to_float (add (get$1$2 ij) 1)) (sin (index ij t))))))
(def cubes (Tensor 3 Float) (x : Float) (build (tuple 2 1 2) (lam (ijk : Tuple Integer Integer Integer) (mul x x))))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_knossos_ad_of_build_over_a_tensor(backend):
    m = load(TENSOR, backend)
    t = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 1.5]])
    assert np.allclose(m.derive("rev", "total")(t, 1.0), 2 * t)
    assert m.derive("fwd", "total")(t, np.ones_like(t)) == pytest.approx(2 * t.sum())
    rows = np.array([[1.0], [2.0]])
    assert np.allclose(m.derive("rev", "weighted")(t, 1.0), rows * np.cos(t))
    assert np.allclose(m.derive("rev", "sq")(t, np.ones_like(t)), 2 * t)
    assert np.allclose(m.derive("fwd", "cubes")(1.5, 1.0), np.full((2, 1, 2), 3.0))
    assert m.derive("rev", "cubes")(1.5, np.ones((2, 1, 2))) == pytest.approx(4 * 3.0)


def test_knossos_linear_maps_of_tensor_builds_print():
    m = load(TENSOR)
    assert "lmBuild" in m.derive("D", "total").source


# --- spellings of older Knossos programs -----------------------------------------------------

def test_symbolic_operators():
    m = load("""
(def f Float ((n : Integer) (x : Float))
  (if (== n 0) 1.0 (* x (f (- n 1) x))))
(def g Bool ((a : Integer) (b : Integer)) (and (< a b) (and (<= a a) (and (> b a) (>= b b)))))
(def h Float (x : Float) (/ (+ x (- x)) (- 2.0 x)))
""")
    assert m.f(5, 1.5) == pytest.approx(1.5 ** 5)
    assert m.derive("rev", "f")((5, 1.5), 1.0)[1] == pytest.approx(5 * 1.5 ** 4)
    assert m.g(1, 2) is True and m.g(2, 1) is False
    assert m.h(1.0) == 0.0


def test_sized_vector_types_bind_their_sizes():
    m = load("""
(def len Integer (x : Vec D Float) D)
(def sqnorm Float (v : Vec n Float) (sum (build n (lam (i : Integer) (mul (index i v) (index i v))))))
(def rows Integer (m : Vec r (Vec c Float)) (mul r c))
(def mk (Vec n Float) (n : Integer) (constVec n 1.0))
""")
    assert m.len([1.0, 2.0, 3.0]) == 3 and m.sqnorm([3.0, 4.0]) == 25.0
    assert m.rows([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]) == 6 and list(m.mk(2)) == [1.0, 1.0]
    assert list(m.derive("rev", "sqnorm")([3.0, 4.0], 1.0)) == [6.0, 8.0]


def test_type_applications_name_an_overload():
    m = load("""
(def f Float (x : Float) (mul 2.0 x))
(def f Float (v : Vec Float) (sum v))
(def main Float () (add (f @ Float 1.5) (f @ (Vec Float) (Vec_init 1.0 2.0))))
(def d Float () (fwd$f @ Float 1.5 1.0))
""")
    assert m.main() == 6.0 and m.d() == 2.0


def test_check_accepts_one_tuples_for_a_one_argument_function():
    m = load("""
(def f Float (x : Float) (mul x (sin x)))
(def main Float () ($check f rev$f (tuple 1.1) (tuple 0.00001) 0.3))
""")
    assert 0 <= m.main() < 1e-4


def test_runtime_names_dotv_and_mul_mat_vec():
    m = load("""
(edef dotv Float ((Vec Float) (Vec Float)))
(edef mul$Mat$Vec (Vec Float) ((Vec (Vec Float)) (Vec Float)))
(def f Float ((a : Vec (Vec Float)) (x : Vec Float))
  (let (y (mul$Mat$Vec a x)) (dotv y y)))
""")
    a, x = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]]), np.array([0.3, -0.7])
    assert m.f(a, x) == pytest.approx(float((a @ x) @ (a @ x)))
    da, dx = m.derive("rev", "f")((a, x), 1.0)
    assert np.allclose(np.array([list(r) for r in da]), 2 * np.outer(a @ x, x))
    assert np.allclose(dx, 2 * a.T @ (a @ x))


def test_print_of_a_knossos_style_main(capsys):
    labrys.load("""
(def main Integer ()
  (print (deltaVec 3 5 1.0) " " (map2 (lam (p : Tuple Float Float) (add (get$1$2 p) (get$2$2 p)))
                                      (Vec_init 1.0 2.0) (Vec_init 10.0 20.0))))""").function("main")()
    assert capsys.readouterr().out == "[0.0, 0.0, 0.0] [11.0, 22.0]"


# --- ifold: every reverse algorithm differentiates it (a fold over the indices) ---

IFOLD = """
(def powsum Float ((x : Float) (n : Integer))
  (ifold n (lam (acc_i : (Tuple Float Integer))
             (add (mul (get$1$2 acc_i) x) (to_float (get$2$2 acc_i))))
         1.0))
"""


@pytest.mark.parametrize("method", ["rev", "sufrev", "deltarev", "dualrev", "chadrev"])
def test_ifold_is_differentiated_by_every_reverse_algorithm(method):
    # acc_{k+1} = acc_k·x + k from acc_0 = 1, n = 3: x³ + x + 2, derivative 3x² + 1
    m = load(IFOLD)
    assert m.powsum(2.0, 3) == 12.0
    dx, dn = m.derive(method, "powsum")((2.0, 3), 1.0)
    assert dx == pytest.approx(13.0) and dn == ()


# --- '#' comment lines and the Lambda spelling (lambda.ks) ----------------------------

def test_a_hash_line_is_a_comment_and_lambda_spells_lam(tmp_path):
    m = load("""# a comment line, as in shell scripts
  #\tindented, and an empty one:
#
(def make (Lambda Float Float) (a : Float) (lam (t : Float) (mul a t)))
(def g Float ((a : Float) (x : Float)) (let (f (make a)) (f (mul x x))))
""", tmp_path=tmp_path)
    assert m.g(3.0, 2.0) == 12.0
    assert m.derive("deltarev", "g")((3.0, 2.0), 1.0) == (4.0, 12.0)    # d(a x²) = (x², 2 a x)


def test_a_hash_after_code_is_not_a_comment(tmp_path):
    with pytest.raises(LabrysError, match=r"prog.ks:1:29: error: expected a top-level declaration"):
        load("(def f Float (x : Float) x) # not a comment\n", tmp_path=tmp_path)


# --- a later def at the same type replaces an earlier one, with a warning -----------

def test_a_redefinition_replaces_the_earlier_def_and_warns(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="labrys.check"):
        m = load("""
(def f Float ((x : Float) (y : Float)) (add y x))
(def g Float (x : Float) (f x 1.0))
(def f Float ((x : Float) (y : Float)) (add x (mul y x)))
""", tmp_path=tmp_path)
    assert m.f(2.0, 3.0) == 8.0 and m.g(2.0) == 4.0          # the later f everywhere
    assert m.derive("rev", "f")((2.0, 3.0), 1.0) == (4.0, 2.0)
    assert "prog.ks:2:1: warning: f is defined again" in caplog.text and "prog.ks:4:1" in caplog.text


def test_a_redefinition_with_another_result_type_is_an_error(tmp_path):
    with pytest.raises(LabrysError, match=r"prog.ks:2:1: error: f is already defined"):
        load("(def f Float (x : Float) x)\n(def f Integer (x : Float) 1)\n", tmp_path=tmp_path)


# --- the linear-types experiment: revl$f, untuple, forRange, indexL ------------------

LINEAR = """
(def h Float ((x : Float) (y : Float)) (mul (mul x x) y))
(def sumsq (Tuple (Vec Float) Float) (v : Vec Float)
  (forRange (size v) (tuple v 0.0) (lam (i_acc : Tuple Integer (Tuple (Vec Float) Float))
    (untuple (i v_acc) i_acc
    (untuple (w acc) v_acc
    (untuple (vi w2) (indexL i w)
      (tuple w2 (add acc (mul vi vi)))))))))
(def total Float (v : Vec Float) (get$2$2 (sumsq v)))
(def main Integer ()
  (let (v (Vec_init 1.0 2.0 -3.0))
    (print (revl$h 2.0 5.0 1.0) " " (get$2$2 (sumsq v)) " "
           (revl$sumsq v (tuple (constVec 3 0.0) 1.0)))))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_linear_types_experiment_runs(backend, capsys):
    labrys.load(LINEAR, backend=backend).function("main")()
    # d(x² y) = (2 x y, x²) = (20, 4); Σ v² = 14, gradient 2 v
    assert capsys.readouterr().out == "(20.0, 4.0) 14.0 [2.0, 4.0, -6.0]"


@pytest.mark.parametrize("method", ["rev", "sufrev", "deltarev", "chadrev"])
def test_for_range_and_index_l_are_differentiated(method):
    dv = load(LINEAR).derive(method, "total")(np.array([1.0, 2.0, -3.0]), 1.0)
    assert list(dv) == [2.0, 4.0, -6.0]


def test_index_l_gives_the_element_then_the_vector():
    m = load("(def f (Tuple Float (Vec Float)) ((i : Integer) (v : Vec Float)) (indexL i v))")
    x, v = m.f(1, np.array([5.0, 7.0]))
    assert x == 7.0 and list(v) == [5.0, 7.0]


def test_a_malformed_for_range_is_a_positioned_error(tmp_path):
    with pytest.raises(LabrysError, match=r"prog.ks:1:28: error: malformed 'forRange'"):
        load("(def f Float (n : Integer) (forRange n 0.0 (fn g)))", tmp_path=tmp_path)
    with pytest.raises(LabrysError, match=r"the loop body takes \(Tuple Integer A\)"):
        load("(def f Float (n : Integer) (forRange n 0.0 (lam (a : Float) a)))", tmp_path=tmp_path)


VPROD = """
(edef indexL (Tuple (Vec Float) Float) ((Tuple Integer (Vec Float))))
(edef [suffwdpass indexL] (Tuple (Tuple (Vec Float) Float) Integer) ((Tuple Integer (Vec Float))))
(edef [sufrevpass [indexL (Tuple Integer (Vec Float))]] (Tuple (Tuple) (Vec Float))
      ((Tuple (Tuple (Vec Float) Float) Integer)))
(def prod Float (v : Vec Float)
  (let ((w r) (ifold (size v) (lam (acc_i : Tuple (Tuple (Vec Float) Float) Integer)
                      (let (((w acc) (get$1$2 acc_i)) (i (get$2$2 acc_i)))
                        (let ((w2 x) (indexL i w)) (tuple w2 (mul acc x)))))
                    (tuple v 1.0)))
    r))
(gdef sufrev [prod (Vec Float)])
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_edef_of_the_run_times_index_l_has_its_meaning(backend):
    # vprod.ks's indexL returns the vector first; product 2·3·4, gradient (12, 8, 6)
    m = load(VPROD, backend)
    v = np.array([2.0, 3.0, 4.0])
    assert m.prod(v) == 24.0
    assert list(m.derive("sufrev", "prod")(v, 1.0)) == [12.0, 8.0, 6.0]
    assert list(m.derive("rev", "prod")(v, 1.0)) == [12.0, 8.0, 6.0]


# --- destination-passing style (dps.ks) ----------------------------------------------

DPS = """
(def dps$scale (Vec Float) ((dest : Allocator) (v_k : Tuple (Vec Float) Float))
  (let ((v k) v_k)
    (dps$build dest (tuple (size v) (lam (dest_i : Tuple Allocator Integer)
      (mul k (index (get$2$2 dest_i) v)))))))
(def f Float ((v : Vec Float) (k : Float))
  (sum ($allocateAndEmplace 64 (lam (dest : Allocator) (dps$scale dest (tuple v k))))))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_destination_passing_style(backend):
    m = load(DPS, backend)
    v = np.array([1.0, 2.0, 4.0])
    assert m.f(v, 3.0) == 21.0
    dv, dk = m.derive("rev", "f")((v, 3.0), 1.0)
    assert list(dv) == [3.0, 3.0, 3.0] and dk == 7.0


def test_a_malformed_dps_build_is_a_positioned_error(tmp_path):
    with pytest.raises(LabrysError, match=r"prog.ks:1:36: error: malformed 'dps\$build'"):
        load("(def f (Vec Float) (d : Allocator) (dps$build d (fn g)))", tmp_path=tmp_path)


# --- polymorphic defs (poly1.ks) -------------------------------------------------------

POLY = """
(def id [a] a (x : a) x)
(def pair [a b] (Tuple b a) ((x : a) (y : b)) (tuple y x))
(def sq [a] a (x : a) (mul x x))
(def f Float (x : Float) (id (sq x)))
(def g Float (v : Vec Float) (sum (sq (id v))))
(def h (Tuple Bool Integer) () (pair 1 true))
(def zero Float () (id 0.0))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_polymorphic_def_is_instantiated_at_each_call(backend):
    m = load(POLY, backend)
    assert m.f(3.0) == 9.0 and m.g(np.array([1.0, 2.0])) == 5.0 and m.zero() == 0.0
    assert m.h() == (True, 1)
    assert m.derive("rev", "f")(3.0, 1.0) == 6.0
    assert list(m.derive("rev", "g")(np.array([1.0, 2.0]), 1.0)) == [2.0, 4.0]


def test_a_type_variable_only_in_the_result_is_an_error(tmp_path):
    with pytest.raises(LabrysError, match=r"prog.ks:1:1: error: type variable a of bad does not occur"):
        load("(def bad [a] a (x : Float) x)", tmp_path=tmp_path)


def test_an_instance_that_does_not_type_is_an_error_naming_it(tmp_path):
    with pytest.raises(LabrysError, match=r"prog.ks:1:23: error: no overload of 'mul'") as exc:
        load('(def sq [a] a (x : a) (mul x x))\n(def s String () (sq "s"))', tmp_path=tmp_path)
    assert "in the instance of the polymorphic def sq at argument type String" in str(exc.value)


# --- the aten prelude (squirrel-ts2ks.ks) ----------------------------------------------

ATEN = """
(def sq Float (x : Tensor 2 Float)
  (let ((t (if (aten::Bool (aten::lt (aten::mean x (tuple)) 0.0))
               (aten::mul x -0.5)
               (aten::pow x 3)))
        (s (aten::mul (aten::sin t) t)))
    (aten::mean s (tuple))))
(gdef sufrev [sq (Tensor 2 Float)])
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_aten_functions_come_from_the_aten_prelude(backend):
    m = load(ATEN, backend)
    for x in (np.array([[1.0, -0.5], [0.25, 2.0]]), np.array([[-1.0, -0.5], [0.25, -2.0]])):
        t = x * -0.5 if x.mean() < 0 else x ** 3
        dt = np.full_like(x, -0.5) if x.mean() < 0 else 3 * x ** 2
        assert m.sq(x) == pytest.approx(np.mean(np.sin(t) * t))
        want = (np.cos(t) * t + np.sin(t)) * dt / x.size
        for method in ("rev", "sufrev", "chadrev"):   # chadrev: constVec over a Tensor 2 in aten::pow
            assert np.allclose(m.derive(method, "sq")(x, 1.0), want)


def test_aten_pow_of_a_negative_power_and_a_programs_own_aten_def():
    m = load("""
(def aten::sin (Tensor 2 Float) (x : Tensor 2 Float) (mul x 2.0))
(def p (Tensor 2 Float) (x : Tensor 2 Float) (aten::sin (aten::pow x -2)))
""")
    x = np.array([[1.0, 2.0], [4.0, 0.5]])
    assert np.allclose(m.p(x), 2.0 / x ** 2)          # the program's own aten::sin is used


def test_a_gdef_instantiates_a_polymorphic_def(capsys):
    labrys.load("""
(def sq [a] a (x : a) (mul x x))
(gdef rev [sq Float])
(gdef fwd [sq (Vec Float)])
(def main Integer () (print ([rev sq] 3.0 1.0) " " ([fwd sq] (Vec_init 1.0 2.0) (Vec_init 1.0 1.0))))
""").function("main")()
    assert capsys.readouterr().out == "6.0 [2.0, 4.0]"     # d(x²) = 2x; 2 x ⊙ dx
