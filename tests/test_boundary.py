"""The compiled backend's fast boundary (Note [Cheap boundaries] in
labrys.backends.boundary): semantics only — shapes, types, no copy, the
general path for everything else.  No timings."""
from __future__ import annotations

import numpy as np
import pytest

import labrys
from labrys import LabrysError

SRC = """
(def f Float ((x : Float) (y : Float)) (mul x (sin y)))
(def first_row (Vec Float) (m : Vec (Vec Float)) (index 0 m))
(def scale2 (Vec (Vec Float)) ((a : Float) (m : Vec (Vec Float)))
  (build (size m) (lam (i : Integer) (mul a (index i m)))))
(def rowsums (Vec Float) (m : Vec (Vec Float))
  (build (size m) (lam (i : Integer) (sum (index i m)))))
(def count Integer (v : Vec Float) (size v))
(def pick Float ((v : Vec Float) (i : Integer)) (index i v))
"""


@pytest.fixture(scope="module")
def m():
    return labrys.load(SRC, backend="compiled")


def test_a_2d_array_is_passed_without_copying(m):
    a = np.arange(12.0).reshape(3, 4)
    row = m.first_row(a)
    assert isinstance(row, np.ndarray) and row.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert np.shares_memory(row, a)          # the argument reached the compiled code as it was


def test_nested_vec_results_are_ndarrays_shaped_like_the_input(m):
    a = np.arange(6.0).reshape(2, 3)
    for _ in range(2):                        # the first call (which compiles) returns what later ones do
        out = m.scale2(2.0, a)
        assert isinstance(out, np.ndarray) and out.shape == (2, 3)
        np.testing.assert_array_equal(out, 2.0 * a)
    assert not np.shares_memory(out, a)


def test_other_layouts_and_lists_are_accepted(m):
    a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(m.rowsums(a), [3.0, 12.0])
    np.testing.assert_array_equal(m.rowsums([[1, 2], [3, 4]]), [3.0, 7.0])    # ints and lists
    np.testing.assert_array_equal(m.rowsums(np.arange(6, dtype=np.int32).reshape(3, 2)), [1.0, 5.0, 9.0])
    assert m.f(2, 0.0) == 0.0 and isinstance(m.f(1.5, 2.0), float)
    assert m.count(np.ones(5)) == 5 and isinstance(m.count(np.ones(5)), int)


def test_what_the_fast_path_refuses_is_reported_as_before(m):
    assert list(m.rowsums([[1.0, 2.0], [3.0]])) == [3.0, 3.0]   # ragged rows: the general path takes them
    with pytest.raises(LabrysError, match="expected a value of type"):
        m.f("1.0", 2.0)
    with pytest.raises(LabrysError, match="expected a value of type"):
        m.f(True, 2.0)
    with pytest.raises(LabrysError) as err:       # a run-time error: positioned, from the general path
        m.pick(np.ones(3), 7)
    assert err.value.span is not None


def test_derivatives_take_the_fast_path_too(m):
    a = np.arange(6.0).reshape(2, 3)
    rev = m.derive("rev", "scale2")
    da, dm = rev((2.0, a), np.ones((2, 3)))
    assert da == pytest.approx(a.sum()) and isinstance(dm, np.ndarray) and dm.shape == (2, 3)
    np.testing.assert_array_equal(dm, np.full((2, 3), 2.0))
    g = labrys.grad(m.f)
    assert g(1.5, 2.0) == pytest.approx((np.sin(2.0), 1.5 * np.cos(2.0)))
    assert labrys.grad(m.f)(1.5, 2.0) == pytest.approx((np.sin(2.0), 1.5 * np.cos(2.0)))


def test_the_interpreter_keeps_its_representation():
    mi = labrys.load(SRC, backend="interp")
    out = mi.scale2(2.0, np.ones((2, 2)))
    assert [list(r) for r in out] == [[2.0, 2.0], [2.0, 2.0]]
