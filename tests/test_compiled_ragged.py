"""Ragged vectors of vectors of numbers compile (Note [Ragged vectors of numbers] in
labrys.backends.numba_nested): a ``Vec (Vec Float)`` whose rows differ in length, a ragged
result built in compiled code, a three-deep nest and ``Vec (Vec Integer)`` run on the compiled
backend with no note, give hand-computed values, and come back as the python backend's values."""
from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import labrys

ROOT = Path(__file__).resolve().parents[1]

SRC = """
(def row_sums (Vec Float) (m : Vec (Vec Float)) (map (lam (r : Vec Float) (sum r)) m))
(def triangle (Vec (Vec Float)) (n : Integer)
  (build n (lam (i : Integer) (build (add i 1) (lam (j : Integer) (to_float (add (mul 10 i) j)))))))
(def matvec (Vec Float) ((m : Vec (Vec Float)) (v : Vec Float))
  (build (size m) (lam (i : Integer) (let (r (index i m))
    (sumbuild (size r) (lam (j : Integer) (mul (index j r) (index j v))))))))
(def scale3 (Vec (Vec (Vec Float))) ((c : Vec (Vec (Vec Float))) (k : Float))
  (build (size c) (lam (i : Integer) (let (m (index i c)) (build (size m) (lam (j : Integer)
    (let (r (index j m)) (build (size r) (lam (q : Integer) (mul k (index q r)))))))))))
(def isum Integer (m : Vec (Vec Integer))
  (sumbuild (size m) (lam (i : Integer) (let (r (index i m)) (sumbuild (size r) (lam (j : Integer) (index j r)))))))
(def itri (Vec (Vec Integer)) (n : Integer) (build n (lam (i : Integer) (build i (lam (j : Integer) (mul i j))))))
(def addm (Vec (Vec Float)) ((a : Vec (Vec Float)) (b : Vec (Vec Float))) (add a b))
"""

RAGGED = [[1.0], [2.0, 3.0], [], [4.0, 5.0, 6.0]]
CUBE = [[[1.0], [2.0, 3.0]], [], [[4.0, 5.0, 6.0], []]]


@pytest.fixture(scope="module")
def compiled():
    return labrys.load(SRC, backend="compiled")


@pytest.fixture(scope="module")
def python():
    return labrys.load(SRC, backend="python")


def same(got, want) -> None:
    """The same Python value: float arrays equal, object arrays / lists element by element."""
    assert type(got) is type(want)
    if isinstance(want, np.ndarray) and want.dtype != object:
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    elif isinstance(want, (list, tuple, np.ndarray)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    else:
        assert got == want


def quiet(caplog) -> None:
    notes = [r.getMessage() for r in caplog.records if "python backend" in r.getMessage()]
    assert notes == []


def test_ragged_arguments_and_results_compile_without_a_note(compiled, python, caplog):
    with caplog.at_level(logging.INFO, logger="labrys"):
        sums = compiled.row_sums(RAGGED)
        tri = compiled.triangle(3)
        mv = compiled.matvec([[1.0], [2.0, 3.0], [1.0, 1.0]], [1.0, 10.0])
        cube = compiled.scale3(CUBE, 2.0)
        tri_sums = compiled.row_sums(tri)
    quiet(caplog)
    assert compiled.backend.fallbacks == {}
    assert list(sums) == [1.0, 5.0, 0.0, 15.0]                     # hand-computed
    assert [list(r) for r in tri] == [[0.0], [10.0, 11.0], [20.0, 21.0, 22.0]]
    assert list(mv) == [1.0, 32.0, 11.0]
    assert [[list(r) for r in m] for m in cube] == [[[2.0], [4.0, 6.0]], [], [[8.0, 10.0, 12.0], []]]
    assert list(tri_sums) == [0.0, 21.0, 63.0]
    same(sums, python.row_sums(RAGGED))
    same(tri, python.triangle(3))
    same(cube, python.scale3(CUBE, 2.0))
    assert {"row_sums (ragged)", "triangle (ragged)", "scale3 (ragged)"} <= set(compiled.backend.sources)


def test_a_rectangular_argument_keeps_the_array_code(compiled, python):
    square = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert list(compiled.row_sums(square)) == [3.0, 7.0]
    same(compiled.row_sums(square), python.row_sums(square))
    assert "row_sums" in compiled.backend.sources


def test_vectors_of_vectors_of_integers_compile(compiled, python, caplog):
    with caplog.at_level(logging.INFO, logger="labrys"):
        total = compiled.isum([[1, 2], [3], []])
        tri = compiled.itri(4)
    quiet(caplog)
    assert total == 6 and type(total) is int
    assert [list(r) for r in tri] == [[], [0], [0, 2], [0, 3, 6]]
    same(tri, python.itri(4))
    assert "isum (ragged)" in compiled.backend.sources


def test_what_the_ragged_variant_cannot_lower_is_noted_and_right(compiled, python, caplog):
    with caplog.at_level(logging.INFO, logger="labrys"):
        got = compiled.addm(RAGGED, RAGGED)
    assert any("has no array form" in r.getMessage() and "addm" in r.getMessage() for r in caplog.records)
    assert [list(r) for r in got] == [[2.0], [4.0, 6.0], [], [8.0, 10.0, 12.0]]
    same(got, python.addm(RAGGED, RAGGED))


def test_vectors_example_prints_no_note():
    run = subprocess.run([sys.executable, "-m", "labrys", "run", str(ROOT / "examples" / "vectors.ks"),
                          "--backend", "compiled"], capture_output=True, text=True,
                         env={**__import__("os").environ, "LABRYS_VERBOSE": "1"})
    assert run.returncode == 0, run.stderr
    assert "python backend" not in run.stderr   # (a cache note of another process may appear)
    assert "triangle = [[0.0], [10.0, 11.0], [20.0, 21.0, 22.0]], row sums = [0.0, 21.0, 63.0]" in run.stdout


SQ = """
(def sq Float (m : Vec (Vec Float))
  (sumbuild (size m) (lam (i : Integer) (let (r (index i m))
    (sumbuild (size r) (lam (j : Integer) (mul (index j r) (index j r))))))))
"""


def test_the_gradient_of_a_ragged_argument_compiles(caplog):
    """[rev sq] of a ragged m: 2 m, row by row (hand-derived); its ts_sumbuild of row one-hots
    is one flat column added into segment by segment."""
    m = labrys.load(SQ, backend="compiled")
    with caplog.at_level(logging.INFO, logger="labrys"):
        grad = m.derive("rev", "sq")(RAGGED, 1.0)
    quiet(caplog)
    assert [list(r) for r in grad] == [[2.0], [4.0, 6.0], [], [8.0, 10.0, 12.0]]
    same(grad, labrys.load(SQ, backend="python").derive("rev", "sq")(RAGGED, 1.0))
