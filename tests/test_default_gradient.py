"""The default gradient (labrys.grad with no method, labrys adbench): rev or sufrev
as ad/default_gradient.py's rule says (Note [The default gradient]).

Cost claims are op-count ratios on the interpreter; values are hand-computed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys.cli.main import main
from labrys.errors import LabrysError

ROOT = Path(__file__).resolve().parent.parent

P = """
(def poly Float ((x : Float) (n : Integer))
  (if (eq n 0) 1.0 (mul (add x 1.0) (poly x (sub n 1)))))
(def acc Float ((x : Float) (n : Integer) (s : Float))
  (if (eq n 0) s (acc x (sub n 1) (add s (mul x x)))))
(def even Float ((x : Float) (n : Integer)) (if (eq n 0) x (mul x (odd x (sub n 1)))))
(def odd Float ((x : Float) (n : Integer)) (if (eq n 0) 1.0 (add 1.0 (even x (sub n 1)))))
(def sq Float (x : Float) (mul x x))
(def twice Float (x : Float) (add (sq x) (sq (sin x))))
(def f0 Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (sin (index i v)))))
(def f1 Float (v : Vec Float) (mul (f0 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f2 Float (v : Vec Float) (mul (f1 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f3 Float (v : Vec Float) (mul (f2 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f4 Float (v : Vec Float) (mul (f3 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f5 Float (v : Vec Float) (mul (f4 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
(def f6 Float (v : Vec Float) (mul (f5 v) (sumbuild (size v) (lam (i : Integer) (cos (index i v))))))
"""


@pytest.fixture(scope="module")
def m():
    return labrys.load(P, backend="interp")


@pytest.mark.parametrize("name, method", [("poly", "sufrev"), ("even", "sufrev"), ("acc", "rev"), ("sq", "rev"),
                                          ("twice", "rev"), ("f3", "rev"), ("f4", "sufrev"), ("f6", "sufrev")])
def test_the_rule(m, name, method):
    choice = labrys.default_method(getattr(m, name))
    assert choice.method == method, choice.reason


def test_reasons_name_what_decided(m):
    assert "non-tail recursion (poly calls itself" in labrys.default_method(m.poly).reason
    assert "even calls odd" in labrys.default_method(m.even).reason or \
        "odd calls even" in labrys.default_method(m.even).reason
    assert "f4 → f3 → f2 → f1 → f0" in labrys.default_method(m.f4).reason


def _ops(fn, *args) -> int:
    before = labrys.METER.ops
    fn(*args)
    return labrys.METER.ops - before


def test_default_gradient_on_non_tail_recursion_is_linear(m):
    ratios = []
    for n in (10, 100, 1000, 10_000):
        primal = _ops(m.poly, 0.001, n)
        g = labrys.grad(m.poly, argnums=0)
        ratios.append(_ops(g, 0.001, n) / primal)
        assert g(0.001, n) == pytest.approx(n * 1.001 ** (n - 1), rel=1e-9)   # d/dx (x+1)^n
    assert max(ratios) / min(ratios) < 1.05, ratios
    rev = [_ops(labrys.grad(m.poly, argnums=0, method="rev"), 0.001, n) / _ops(m.poly, 0.001, n) for n in (10, 100)]
    assert rev[1] / rev[0] > 5   # what the default avoids: rev is quadratic here


def test_default_is_the_cheaper_of_the_two_on_a_chain_of_calls(m):
    """Note [The default gradient]: rev's cost grows with the call depth, sufrev's does
    not; the default picks the cheaper away from the crossover, and at depth 3, next to
    it (the threshold is 4: LSTM, 3 deep, is 6× faster by rev on compiled), costs at most
    10% more than the cheaper."""
    v = np.linspace(0.0, 1.0, 50)
    for name, slack in (("f1", 1.0), ("f3", 1.1), ("f4", 1.0), ("f6", 1.0)):
        f = getattr(m, name)
        costs = {method: _ops(labrys.grad(f, method=method), v) for method in ("rev", "sufrev")}
        assert _ops(labrys.grad(f), v) <= slack * min(costs.values()), (name, costs)


def test_default_gradient_values(m):
    # even(x, 2) = x · odd(x, 1) = x (1 + even(x, 0)) = x (1 + x) = x + x²; d/dx = 1 + 2x
    assert labrys.grad(m.even, argnums=0)(0.3, 2) == pytest.approx(1.6)
    assert labrys.grad(m.acc, argnums=0)(0.5, 3, 0.0) == pytest.approx(3.0)   # 3x², d/dx = 6x
    value, back = labrys.vjp(m.poly, 0.5, 2)
    assert value == pytest.approx(2.25) and back(1.0)[0] == pytest.approx(3.0)


def test_split_refusal_falls_back_to_rev(m, monkeypatch):
    mm = labrys.load(P, backend="interp")
    real = mm.derivations.derive

    def refuse(name, sig, *rest, **kw):
        if name == "sufrev":
            raise LabrysError("no BOG today")
        return real(name, sig, *rest, **kw)
    monkeypatch.setattr(mm.derivations, "derive", refuse)
    choice = labrys.default_method(mm.poly)
    assert choice.method == "rev" and "split mode refuses poly: no BOG today" in choice.reason


def test_overloads_need_arguments():
    mm = labrys.load("(def h Float (x : Float) (mul x x))\n(def h Float (v : Vec Float) (sum v))", backend="interp")
    with pytest.raises(LabrysError, match="overloaded"):
        labrys.default_method(mm.h)
    assert labrys.default_method(mm.h, 2.0).method == "rev"
    assert labrys.grad(mm.h)(2.0) == 4.0


def test_show_says_which_and_why(tmp_path, capsys):
    path = tmp_path / "p.ks"
    path.write_text(P)
    assert main(["show", str(path), "poly"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("; the default gradient (labrys.grad, labrys adbench) is sufrev: non-tail recursion")
    assert "(def [sufrevpass poly]" in out
    assert main(["show", str(path), "twice"]) == 0
    out = capsys.readouterr().out
    assert "is rev:" in out and "(def [rev twice]" in out
    labrys.parse_program(out)   # the choice is a comment: the output is still .ks


def test_adbench_says_which_gradient(capsys):
    assert main(["adbench", "gmm", str(ROOT / "data" / "adbench" / "gmm" / "test.txt")]) == 0
    out = capsys.readouterr().out
    assert "gradient by      rev (the default gradient: gmm_objective has no non-tail recursion" in out
