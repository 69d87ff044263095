"""Forms that programs written for the Knossos compiler use (older and newer styles)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import labrys


def run_main(text: str, capsys) -> str:
    labrys.load(text).function("main")()
    return capsys.readouterr().out


def test_old_style_derivative_names_and_flattened_arguments(capsys):
    out = run_main("""
(def f Float ((x : Float) (y : Float)) (mul x (sin y)))
(def main Integer ()
  (print (fwd$f 1.0 2.0 1.0 0.0) "," (get$2$2 (rev$f 1.0 2.0 1.0)) ","
         (lmApply (D$f 1.0 2.0) (tuple 0.0 1.0))))""", capsys)
    fwd, rev_y, d = map(float, out.split(","))
    assert fwd == pytest.approx(math.sin(2.0)) and rev_y == pytest.approx(math.cos(2.0))
    assert d == pytest.approx(math.cos(2.0))


def test_parenthesised_atoms_and_list_style_edefs(capsys):
    out = run_main("""
(edef add@ff Float (Float Float))
(edef neg Float (Float))
(def zero Float () (0.0))
(def g Float (x : Float) (add@ff (x) (neg (zero))))
(def main Integer () (print (g 2.5)))""", capsys)
    assert out == "2.5"


def test_trace_with_a_bare_function_and_ifold(capsys):
    out = run_main("""
(def main Integer ()
  (let ((a ($trace mul@ff 3.0 4.0))
        (p (ifold 4 (lam (acc_i : Tuple Float Integer)
                      (let ((acc i) acc_i) (add acc (to_float i)))) 0.0))
        (v (Vec_init 1.0 2.0 3.0)))
    (print a " " p " " (sum v))))""", capsys)
    assert out == "12.0 6.0 6.0"


def test_check_of_a_reverse_derivative_is_small(capsys):
    out = run_main("""
(def f Float ((x : Float) (y : Float)) (mul (exp x) y))
(def main Integer ()
  (print ($check (lam (t : Tuple Float Float) (f t))
                 (lam (t : Tuple (Tuple Float Float) Float) ([rev f] t))
                 (tuple 0.3 0.7) (tuple 0.3 0.7) (tuple 0.00001 0.00002) 1.0)))""", capsys)
    assert 0 <= float(out) < 1e-4


def _ranhash(v: int) -> int:
    """The Knossos runtime hash, written here with NumPy's wrapping uint64."""
    with np.errstate(over="ignore"):
        v = np.uint64(v % 2 ** 64)
        v = v * np.uint64(3935559000370003845)
        v = v + np.uint64(2691343689449507681)
        v ^= v >> np.uint64(21)
        v ^= v << np.uint64(37)
        v ^= v >> np.uint64(4)
        v = v * np.uint64(4768777513237032717)
        v ^= v << np.uint64(20)
        v ^= v >> np.uint64(41)
        v ^= v << np.uint64(5)
    return int(v)


@pytest.mark.parametrize("seed", [0, 1, 2, 12345, -1, -7])
def test_ranhashdoub_matches_the_knossos_runtime(seed):
    expected = 5.42101086242752217e-20 * float(_ranhash(seed))
    assert labrys.evaluate(f"($ranhashdoub {seed})") == expected
