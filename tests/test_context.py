"""The run-time context (Note [Run-time context]): the op meter and the Delta
tapes belong to a run, so nested derivative calls, re-entrant calls from
Python and two threads differentiating at once are all correct."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import labrys
from labrys.ad.deltas import last_tape

F = """(def f Float (x : Float) (let ((a (mul x x)) (b (sin a))) (mul a b)))
(def g Float ((x : Float) (y : Float)) (add (mul x (exp y)) (mul y y)))
(edef h Float (Float))
(def [rev h] Float ((x : Float) (d : Float)) (mul d (hprime x)))
(edef hprime Float (Float))
(def uses_h Float (x : Float) (mul (h x) (cos x)))
"""


def df(x: float) -> float:  # d/dx x² sin x²
    return 2 * x * math.sin(x * x) + x * x * math.cos(x * x) * 2 * x


def dg(x: float, y: float) -> tuple[float, float]:
    return math.exp(y), x * math.exp(y) + 2 * y


def test_a_derivative_run_inside_another_keeps_both_tapes_apart():
    """h's implementation (Python) runs [deltarev g] while [deltarev uses_h] is recording
    its own tape: with one global tape the outer gradient would be corrupted."""
    m = labrys.load(F)
    grad_g = labrys.grad(m.g, method="deltarev")

    def h(x: float) -> float:
        return grad_g(x, 0.5)[0] * x  # = exp(0.5) x, computed by a nested deltarev run

    m.implement("h", h)
    m.implement("hprime", lambda x: grad_g(x, 0.5)[0])
    x = 0.8
    expected = math.exp(0.5) * (math.cos(x) - x * math.sin(x))
    assert labrys.grad(m.uses_h, method="deltarev")(x) == pytest.approx(expected, rel=1e-12)
    assert labrys.grad(m.uses_h, method="rev")(x) == pytest.approx(expected, rel=1e-12)


def test_a_failed_run_leaves_no_tape_behind():
    m = labrys.load("(def f Float (x : Float) (assert (gt x 0.0) (log x)))")
    grad = labrys.grad(m.f, method="deltarev")
    with pytest.raises(labrys.LabrysError, match="assertion failed"):
        grad(-1.0)
    assert grad(2.0) == pytest.approx(0.5)
    from labrys.context import current
    assert current().tapes == []


def test_the_last_tape_is_this_threads():
    m = labrys.load(F)
    labrys.grad(m.f, method="deltarev")(0.3)
    mine = last_tape()
    seen = []
    other = threading.Thread(target=lambda: seen.append(last_tape()))
    other.start()
    other.join()
    assert mine is not None and len(mine.rhs) > 0 and seen == [None]


def _in_threads(work, n: int = 2) -> list:
    results: list = [None] * n
    errors: list = []
    barrier = threading.Barrier(n)

    def run(k: int) -> None:
        try:
            barrier.wait()
            results[k] = work(k)
        except BaseException as exc:  # reported below
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def test_two_threads_differentiating_at_once_get_their_own_gradients():
    m = labrys.load(F)

    def work(k: int) -> list:
        out = []
        for i in range(30):
            if k == 0:
                out.append(labrys.grad(m.f, method="deltarev")(0.1 + 0.01 * i))
            else:
                out.append(labrys.grad(m.g, method="deltarev")(0.2 + 0.01 * i, 0.3))
        return out
    first, second = _in_threads(work)
    assert first == pytest.approx([df(0.1 + 0.01 * i) for i in range(30)], rel=1e-12)
    assert np.allclose(second, [dg(0.2 + 0.01 * i, 0.3) for i in range(30)], rtol=1e-12)


def test_each_thread_meters_its_own_operations():
    m = labrys.load("(def f Float (v : Vec Float) (sum (mul v v)))")
    v = np.ones(100)
    before = labrys.METER.ops
    m.f(v)
    alone = labrys.METER.ops - before  # the cost of one call

    def work(k: int) -> int:
        start = labrys.METER.ops
        for _ in range(20):
            m.f(v)
        return labrys.METER.ops - start
    assert _in_threads(work) == [20 * alone, 20 * alone]
