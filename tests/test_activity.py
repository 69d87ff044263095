"""Activity analysis: derivatives with respect to chosen parameters only
(labrys.ad.activity, docs/activity.md).  Expectations are independent: the
full gradient's components, ADBench's closed form (tests/test_adbench.py),
finite differences and hand-computed values; savings by the op meter."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import labrys
from labrys import METER, LabrysError
from labrys.adbench import read_gmm, run_gmm

ROOT = Path(__file__).resolve().parents[1]
GMM = ROOT / "src" / "labrys" / "adbench" / "gmm.ks"
DATA = ROOT / "data" / "adbench" / "gmm"

SMALL = """
(def f Float ((x : Vec Float) (a : Float) (b : Float))
  (let (s (sumbuild (size x) (lam (i : Integer) (mul (index i x) (index i x)))))
    (add (mul s a) (mul a b))))
(gdef rev [f (Tuple (Vec Float) Float Float)] (wrt b a))
(def g (Tuple Float Float) ((a : Float) (b : Float))
  ([rev f (wrt b a)] (tuple (build 2 (lam (i : Integer) (to_float (add i 1)))) a b) 1.0))
"""


def test_wrt_in_a_gdef_names_the_derivative_and_orders_the_cotangents():
    m = labrys.load(SMALL, backend="interp")
    # f = a |x|^2 + a b: df/db = a, df/da = |x|^2 + b   (hand-computed)
    out = m["[rev f (wrt b a)]"](([1.0, 2.0], 3.0, 4.0), 1.0)
    assert out == pytest.approx((3.0, 9.0))
    assert "[rev f (wrt b a)]" in m.names()
    assert m.g(3.0, 4.0) == pytest.approx((3.0, 9.0))   # called by its name from .ks code


def test_a_wrt_name_prints_and_parses_back():
    m = labrys.load(SMALL, backend="interp")
    text = str(m)
    assert "(gdef rev [f (Tuple (Vec Float) Float Float)] (wrt b a))" in text
    again = labrys.load(text, backend="interp")
    assert again["[rev f (wrt b a)]"](([1.0, 2.0], 3.0, 4.0), 1.0) == pytest.approx((3.0, 9.0))


def test_inactive_parameters_get_no_cotangent_code():
    m = labrys.load(SMALL, backend="interp")
    src = m.derive("rev", "f", wrt="a").source
    assert "ts_delta" not in src and "ts_zero" not in src   # nothing accumulated into x
    full = m.derive("rev", "f").source
    assert "ts_delta" in full


@pytest.mark.parametrize("backend", ["interp", "compiled"])
def test_grad_argnums_is_the_restricted_derivative(backend):
    m = labrys.load(SMALL, backend=backend)
    x = np.array([1.0, 2.0])
    full = labrys.grad(m.f)(x, 3.0, 4.0)
    assert labrys.grad(m.f, argnums=(2, 1))(x, 3.0, 4.0) == pytest.approx((full[2], full[1]))
    assert labrys.grad(m.f, argnums=1)(x, 3.0, 4.0) == pytest.approx(full[1])
    one = labrys.grad(m.f, argnums=(0,))(x, 3.0, 4.0)
    assert isinstance(one, tuple) and np.asarray(one[0]) == pytest.approx(full[0])
    assert labrys.grad(m.f, argnums=-1)(x, 3.0, 4.0) == pytest.approx(full[2])


def test_an_inactive_vector_costs_nothing_in_reverse():
    """f(x, a) = a Σ sin(x_i)²: with respect to a, no per-element cotangent work is left
    (op meter: the restricted gradient costs about what f does, the full one several times more)."""
    m = labrys.load("""
(def h Float ((x : Vec Float) (a : Float))
  (mul a (sumbuild (size x) (lam (i : Integer) (let (s (sin (index i x))) (mul s s))))))""", backend="interp")
    x = np.linspace(0.0, 1.0, 400)
    full, part = m.derive("rev", "h"), m.derive("rev", "h", wrt="a")
    with warnings.catch_warnings():   # earlier tests' calls on other backends: not ours to report
        warnings.simplefilter("ignore")
        _ = METER.ops
    counts = []
    for fn, arg in ((m.h, (x, 2.0)), (full, ((x, 2.0), 1.0)), (part, ((x, 2.0), 1.0))):
        before = METER.ops
        out = fn(*arg)
        counts.append(METER.ops - before)
    f_ops, full_ops, part_ops = counts
    assert out == pytest.approx(float(np.sum(np.sin(x) ** 2)))
    assert part_ops <= 1.5 * f_ops and full_ops >= 2.5 * part_ops, counts


def test_wrt_errors_are_positioned_and_name_the_parameters():
    bad = SMALL.replace("(wrt b a)", "(wrt c)", 1)
    with pytest.raises(LabrysError) as err:
        labrys.load(bad)
    assert "c" in err.value.message and "parameters are x, a, b" in err.value.message
    assert err.value.span is not None
    with pytest.raises(LabrysError, match="does not take"):
        labrys.load(SMALL.replace("(gdef rev", "(gdef fwd", 1))
    with pytest.raises(LabrysError, match="appears twice"):
        labrys.load(SMALL.replace("(wrt b a)", "(wrt a a)", 1))
    m = labrys.load(SMALL, backend="interp")
    with pytest.raises(LabrysError, match="not a parameter"):
        m.derive("rev", "f", wrt="y")


def _gmm_args(path):
    return read_gmm(path).arguments()


def test_gmm_gradient_wrt_parameters_equals_the_full_one_and_costs_fewer_ops():
    """GMM's gradient w.r.t. (alphas, means, icf): no cotangent of the data points x."""
    m = labrys.load(GMM, backend="interp")
    args = _gmm_args(DATA / "test.txt")
    full = m.derive("rev", "gmm_objective")
    part = m.derive("rev", "gmm_objective", wrt=("alphas", "means", "icf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _ = METER.ops
    before = METER.ops
    g_full = full(args, 1.0)
    full_ops = METER.ops - before
    before = METER.ops
    g_part = part(args, 1.0)
    part_ops = METER.ops - before
    for got, want in zip(g_part, g_full[1:4]):
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=1e-12)
    # x's cotangent is the sum over components of z's (which means needs anyway):
    # dropping it saves at least one operation per real of x
    assert full_ops - part_ops >= np.asarray(args[0]).size, (part_ops, full_ops)
    # central differences along alphas
    h, e = 1e-6, np.zeros_like(args[1])
    e[0] = 1.0
    fd = (m.gmm_objective(args[0], args[1] + h * e, *args[2:]) -
          m.gmm_objective(args[0], args[1] - h * e, *args[2:])) / (2 * h)
    assert g_part[0][0] == pytest.approx(fd, rel=1e-6)


def test_adbench_wrt_agrees_with_the_full_gradient_on_the_compiled_backend():
    full, part = run_gmm(DATA / "test.txt"), run_gmm(DATA / "test.txt", wrt=True)
    np.testing.assert_allclose(part.gradient, full.gradient, rtol=1e-12)
    assert part.fd_relative_error < 1e-6


def test_cli_show_and_adbench_take_wrt():
    run = lambda *a: subprocess.run([sys.executable, "-m", "labrys", *a], capture_output=True, text=True, cwd=ROOT)
    shown = run("show", str(GMM), "gmm_objective", "--wrt", "alphas,means,icf")
    assert shown.returncode == 0, shown.stderr
    assert "(def [rev gmm_objective (wrt alphas means icf)]" in shown.stdout
    out = run("adbench", "gmm", str(DATA / "test.txt"), "--wrt")
    assert out.returncode == 0 and "objective        8.07380408" in out.stdout, out.stderr
    bad = run("adbench", "ba", str(ROOT / "data" / "adbench" / "ba" / "test.txt"), "--wrt")
    assert bad.returncode == 1 and "--wrt applies to gmm and lstm" in bad.stderr
