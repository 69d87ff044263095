"""labrys verify's points: shapes the function accepts (GMM's size assertion),
finite differences that a finer step contradicts (sin (x²) at 10⁴), and no
NumPy warning on stderr when a derivative is NaN (docs/verification.md)."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

import labrys
from labrys import checks
from labrys.verify import passed, verify
from labrys.verify_points import map_floats, random_like, tangent_like, with_floats

ROOT = Path(__file__).resolve().parent.parent


def test_gmm_is_checked_at_the_shapes_of_mains_call():
    """Vectors of 3 break GMM's assertion (icf rows hold d (d + 1) / 2 Floats): verify
    takes the sizes of main's call (d = 2, K = 3, n = 1) and checks every algorithm."""
    rows = verify(labrys.load(ROOT / "examples" / "gmm.ks", backend="interp"), "gmm_objective", points=1)
    row = rows[0]
    assert row.shapes == "the shapes of main's call"
    assert passed(rows)
    for name in ("fwd", "rev", "dualfwd", "deltarev", "chadrev"):
        assert row.cells[name].ok and row.cells[name].checked >= 1, (name, row.cells[name].detail)
    checked = [p.x for p in row.points if p.status == "checked"]
    assert checked and all("array([" in x for x in checked)


def test_other_uniform_sizes_are_tried_without_main():
    text = ("(def f Float (v : Vec Float)\n"
            "  (assert (eq (size v) 2) (mul (index 0 v) (sin (index 1 v)))))\n")
    rows = verify(labrys.load(text, backend="interp"), points=2)
    assert rows[0].shapes == "vectors of 2" and passed(rows)
    # a program whose sizes nothing satisfies checks nothing, and fails: f is defined at no point tried
    never = verify(labrys.load(text.replace("(eq (size v) 2)", "(eq (size v) 5)"), backend="interp"), points=1)
    assert not passed(never) and not never[0].ok
    assert never[0].finding.startswith("no point where f is defined: f fails at x (assertion failed)")
    assert "vectors of 3; grown from the errors (stopped: assertion failed" in never[0].finding
    assert never[0].cells["rev"].ok is False and never[0].cells["rev"].detail == never[0].finding


def test_a_wrong_derivative_is_caught_at_the_shapes_of_mains_call():
    text = ("(def f Float ((v : Vec Float) (w : Vec Float))\n"
            "  (assert (eq (size w) (add (size v) 2))\n"
            "    (mul (sum v) (sum w))))\n"
            "(def [rev f] (Tuple (Vec Float) (Vec Float)) ((x : Tuple (Vec Float) (Vec Float)) (dr : Float))\n"
            "  (let (((v w) x))\n"
            "    (tuple (build (size v) (lam (i : Integer) (mul dr (sum w))))\n"
            "           (build (size w) (lam (i : Integer) (mul 2.0 (mul dr (sum v))))))))\n"
            "(def main Float () (f (build 2 (lam (i : Integer) 1.0)) (build 4 (lam (i : Integer) 2.0))))\n")
    rows = verify(labrys.load(text, backend="interp"), "f", points=1)
    assert rows[0].shapes == "the shapes of main's call"
    assert rows[0].cells["fwd"].ok and rows[0].cells["rev"].ok is False  # the hand-written rev doubles ∂/∂w


def test_differences_a_finer_step_contradicts_are_no_verdict():
    """sin (x²) at x = 10⁴ (tests/corpus/knossos/build_capture.ks): steps h and h/2
    alias; the point is skipped as unreliable, not a ✗ for every algorithm."""
    m = labrys.load(ROOT / "tests" / "corpus" / "knossos" / "build_capture.ks", backend="interp")
    rows = {r.function: r for r in verify(m, points=2)}
    f = rows["f"]
    assert all(c.ok is not False for c in f.cells.values()), {n: c.detail for n, c in f.cells.items()}
    assert any(p.status.startswith("finite differences unreliable") and "10000" in p.x for p in f.points)

    fn = m.function("f")
    g = lambda z: fn(*z)  # noqa: E731
    x = (np.full(3, 1e4), 1e4)
    dx = checks.scale_tangent((np.array([0.3, -0.5, 0.9]), 0.3), x)
    fx = checks.floats(g(x))
    diffs = checks.finite_differences(g, x, dx, fx)
    assert not isinstance(diffs, str) and checks.unconfirmed(g, x, dx, fx, diffs)
    smooth = (np.array([0.6, 0.8, 1.1]), 0.7)  # where the differences are right, a finer step confirms them
    fs = checks.floats(g(smooth))
    ds = checks.scale_tangent((np.array([0.3, -0.5, 0.9]), 0.3), smooth)
    d2 = checks.finite_differences(g, smooth, ds, fs)
    assert not isinstance(d2, str) and checks.unconfirmed(g, smooth, ds, fs, d2) == ""


def test_a_wrong_derivative_of_an_oscillating_function_still_fails():
    text = ("(def g Float (x : Float) (sin (mul x x)))\n"
            "(def [fwd g] Float ((x : Float) (dx : Float)) (mul 2.02 (mul x (mul (cos (mul x x)) dx))))\n")
    rows = verify(labrys.load(text, backend="interp"), points=2)
    assert rows[0].cells["fwd"].ok is False and "finite differences" in rows[0].cells["fwd"].detail


def test_no_numpy_warning_when_a_derivative_is_nan(tmp_path):
    text = "(def g Float (x : Float) (add x (sqrt (sub x x))))\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would raise here
        rows = verify(labrys.load(text, backend="interp"), points=1)
    assert not passed(rows) and "nan" in rows[0].cells["deltarev"].detail
    path = tmp_path / "nan.ks"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "verify", str(path), "--backend", "interp",
                           "--points", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "nan in" in proc.stdout
    assert proc.stderr == "", proc.stderr


def test_one_map_over_float_parts():
    rng = np.random.default_rng(0)
    v = (1.5, 2, [np.array([1.0, 2.0]), np.array([3.0])], "s")
    assert with_floats(v, 0.0)[0] == 0.0 and with_floats(v, 0.0)[1] == 2
    assert [a.shape for a in random_like(v, rng)[2]] == [(2,), (1,)]
    t = tangent_like(v, rng)
    assert t[1] == () and t[3] == () and -1 <= t[0] <= 1
    assert map_floats(v, lambda shape: 7.0 if shape is None else np.zeros(shape))[2][1].tolist() == [0.0]
