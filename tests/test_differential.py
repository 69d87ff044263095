"""One semantics on every backend (docs/reference.md §5, "Numbers"): Integers
are signed 64-bit and wrap around (add, sub, mul, neg, sum, sumbuild, fold),
Float maths is IEEE (sin inf = nan, log 0 = -inf, never a Python exception),
a size too large to allocate is a positioned error.  The expectations are
hand-computed (two's complement by hand, IEEE by NumPy); then random programs
run on interp, python and compiled and must agree: Integers bitwise, Floats
to 4 ulps.  Each random program is a fresh compiled module (~10–30 s of Numba
compilation on a loaded machine), so the default budget is 3 programs;
``LABRYS_EXAMPLES=N`` runs N (the full sweep: ``LABRYS_EXAMPLES=50 pytest
tests/test_differential.py``).  (Every example's output and every corpus program, primal and
derivatives, are compared across backends in test_backends.py.)"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import labrys
from labrys import LabrysError
from strategies import ALL_FEATURES, programs

BACKENDS = ("interp", "python", "compiled")
MAX = 9223372036854775807
MIN = -MAX - 1

SEMANTICS = """
(def big Integer () 9223372036854775807)
(def inf Float () (div 1.0 0.0))
(def int_ops (Tuple Integer Integer Integer Integer Integer) (k : Integer)
  (tuple (add (big) k) (sub (neg (big)) (add k 1)) (mul (big) k) (neg (sub (neg (big)) 1))
         (div (sub (neg (big)) 1) -1)))
(def int_sums (Tuple Integer Integer Integer Integer) (n : Integer)
  (tuple (sumbuild n (lam (i : Integer) (big)))
         (sum (build n (lam (i : Integer) (big))))
         (fold (lam (acc_x : Tuple Integer Integer) (add (get$1$2 acc_x) (get$2$2 acc_x)))
               0 (build n (lam (i : Integer) (big))))
         (sumbuild n (lam (i : Integer) (mul i 1000000000000000000)))))
(def float_ops (Tuple Float Float Float Float Float Float Float Float Float Float Float Float) (x : Float)
  (tuple (sin (mul x (inf))) (cos (mul x (inf))) (tan (mul x (inf))) (log (sub x x)) (log (neg x))
         (sqrt (neg x)) (exp (mul x 1000.0)) (sinh (mul x 1000.0)) (cosh (mul x 1000.0))
         (pow 10.0 (mul x 400.0)) (lgamma (sub x x)) (div (sub x x) (sub x x))))
(def float_vec_ops (Vec Float) (x : Float)
  (build 3 (lam (i : Integer) (sin (mul (to_float i) (mul x (inf)))))))
(def lit_mul Integer () (mul 9223372036854775807 2))
(def lit_add Integer () (add 9223372036854775807 1))
(def lit_pair (Tuple Float Integer) () (tuple 1.0 (sub -9223372036854775807 2)))
(def lit_square Integer () (mul 4611686018427387904 -4611686018427387904))
(def too_big Float (n : Integer) (sum (build n (lam (i : Integer) 1.0))))
(def too_big2 Float (n : Integer) (sum (build (tuple n n) (lam (ij : Tuple Integer Integer) 0.0))))
"""


def wrap(k: int) -> int:
    """Two's complement at 64 bits, by hand."""
    return (k + 2 ** 63) % 2 ** 64 - 2 ** 63


def run(backend: str, name: str, *args):
    try:
        return labrys.load(SEMANTICS, backend=backend).function(name)(*args)
    except LabrysError as exc:
        return exc


@pytest.mark.parametrize("backend", BACKENDS)
def test_integers_wrap_at_64_bits(backend):
    assert run(backend, "int_ops", 3) == (wrap(MAX + 3), wrap(-MAX - 4), wrap(MAX * 3), MIN, MIN)
    n = 5
    want = (wrap(n * MAX), wrap(n * MAX), wrap(n * MAX), wrap(sum(i * 10 ** 18 for i in range(n))))
    got = run(backend, "int_sums", n)
    assert got == want and all(type(k) is int for k in got)


@pytest.mark.parametrize("backend", BACKENDS)
def test_arithmetic_on_literals_wraps_too(backend):
    """Only literals: CPython would fold 9223372036854775807 * 2 in the compiled backend's
    source to a big int, which Numba types as uint64 (it printed 18446744073709551614)."""
    got = (run(backend, "lit_mul"), run(backend, "lit_add"), run(backend, "lit_pair"), run(backend, "lit_square"))
    assert got == (wrap(2 * MAX), wrap(MAX + 1), (1.0, wrap(-MAX - 2)), wrap(-2 ** 124)) == (-2, MIN, (1.0, MAX), 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_maths_is_ieee(backend):
    with np.errstate(all="ignore"):
        x = np.float64(1.0)
        inf = np.float64(np.inf)
        want = (np.sin(x * inf), np.cos(x * inf), np.tan(x * inf), np.log(x - x), np.log(-x), np.sqrt(-x),
                np.exp(x * 1000), np.sinh(x * 1000), np.cosh(x * 1000), np.power(10.0, x * 400), np.inf,
                (x - x) / (x - x))
    got = run(backend, "float_ops", 1.0)
    assert not isinstance(got, Exception), got
    assert [repr(float(v)) for v in got] == [repr(float(v)) for v in want]
    vec = run(backend, "float_vec_ops", 1.0)
    assert math.isnan(vec[0]) and math.isnan(vec[1]) and math.isnan(vec[2])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,n", [("too_big", 2 ** 62), ("too_big2", 2 ** 40)])
def test_a_size_too_large_to_allocate_is_a_positioned_error(backend, name, n):
    err = run(backend, name, n)
    assert isinstance(err, LabrysError), err
    assert "too large to allocate" in str(err) and err.span is not None


def ulps_apart(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if a == b:
        return 0.0
    if math.isinf(a) or math.isinf(b):
        return math.inf
    return abs(a - b) / math.ulp(max(abs(a), abs(b)))


def assert_same(got, want, where: str) -> None:
    """Integers, Bools and Strings bitwise (and of the same Python type); Floats to 4 ulps."""
    if isinstance(want, (tuple, list)) or (isinstance(want, np.ndarray) and want.dtype == object):
        assert len(got) == len(want), where
        for g, w in zip(got, want):
            assert_same(g, w, where)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.shape == want.shape, where
        for g, w in zip(got.ravel(), want.ravel()):
            assert ulps_apart(float(g), float(w)) <= 4, f"{where}: {got!r} vs {want!r}"
    elif isinstance(want, float):
        assert isinstance(got, float) and ulps_apart(got, want) <= 4, f"{where}: {got!r} vs {want!r}"
    elif isinstance(got, np.ndarray):  # an empty vector: interp's list vs an array
        assert len(got) == len(want) == 0, f"{where}: {got!r} vs {want!r}"
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r} vs {want!r}"


def outcome(text: str, entry: str, args: tuple, backend: str):
    """The result, or the error message (without the backend's name)."""
    try:
        return labrys.load(text, backend=backend).function(entry)(*args)
    except LabrysError as exc:
        return ("error", str(exc))


@settings(max_examples=int(os.environ.get("LABRYS_EXAMPLES", 3)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(gen=programs(ALL_FEATURES, result="any"))
def test_random_programs_agree_on_every_backend(gen):
    text = gen.text
    results = {b: outcome(text, gen.entry, gen.args, b) for b in BACKENDS}
    want = results["interp"]
    assume(not (isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], str) and want[0] == "error"
                and "recursion" in want[1]))
    for backend in ("python", "compiled"):
        assert_same(results[backend], want, f"{backend} vs interp on\n{text}\nargs {gen.args!r}")
