"""labrys verify: derivations against finite differences and each other."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import labrys
from labrys.verify import translations, verify

ROOT = Path(__file__).resolve().parent.parent

GOOD = """
(def f Float ((x : Float) (y : Float)) (mul (sin x) (exp y)))
(def s Float (v : Vec Float) (sumbuild (size v) (lam (i : Integer) (let (a (index i v)) (mul a a)))))
(def n Integer (k : Integer) (add k 1))
"""

# the hand-written [rev g] doubles the true derivative: every check must catch it
WRONG = """
(def g Float (x : Float) (mul x x))
(def [rev g] Float ((x : Float) (dr : Float)) (mul 4.0 (mul x dr)))
(def [fwd g] Float ((x : Float) (dx : Float)) (mul 4.0 (mul x dx)))
(def f Float (x : Float) (g (sin x)))
"""

UNSUPPORTED = """
(def f Float (x : Float)
  (let (k (lam (y : Float) (mul x y)))
    (k 2.0)))
"""


def run(text: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "p.ks"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "labrys.cli.main", "verify", str(path), *extra],
                          capture_output=True, text=True, timeout=120)


def test_correct_derivatives_pass_and_non_differentiable_functions_are_skipped():
    rows = verify(labrys.load(GOOD))
    assert [r.function for r in rows] == ["f", "s"]  # n has no Float in or out
    assert all(c.ok for r in rows for c in r.cells.values() if c.ok is not None)
    unsupported = {(r.function, k) for r in rows for k, c in r.cells.items() if c.ok is None}
    assert unsupported == {("s", "proc"), ("s", "procrev")}  # the procedure language has no vectors


def test_a_wrong_derivative_is_caught(tmp_path):
    rows = {r.function: r for r in verify(labrys.load(WRONG))}
    assert not rows["g"].cells["fwd"].ok and not rows["g"].cells["rev"].ok  # the user's own [rev g]
    assert rows["g"].cells["fwdt"].ok  # labrys's [fwdt g] is right, so the algorithms disagree
    assert not rows["g"].cells["agree"].ok
    f_row = rows["f"]  # f calls the user's wrong [rev g] / [fwd g]
    assert not f_row.cells["fwd"].ok and not f_row.cells["rev"].ok
    proc = run(WRONG, tmp_path)
    assert proc.returncode == 1 and "✗" in proc.stdout


def test_unsupported_construct_names_its_position(tmp_path):
    proc = run(UNSUPPORTED, tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["rev"]["ok"] is None
    assert "lambda" in row["rev"]["detail"] and "p.ks:3:" in row["rev"]["detail"]


def test_verify_one_function_and_the_demo(tmp_path):
    proc = run(GOOD, tmp_path, "s", "--json")
    assert [r["function"] for r in json.loads(proc.stdout)] == ["s"]
    demo = subprocess.run([sys.executable, "-m", "labrys.cli.main", "verify", str(ROOT / "src/labrys/demo.ks")],
                          capture_output=True, text=True, timeout=120)
    assert demo.returncode == 0 and demo.stdout.count("✓") >= 12


def test_hand_written_derivative_of_another_overload_is_not_used():
    """[rev dot] is written for the Vec Float overload only; verifying the Vec (Vec Float)
    overload must generate its own derivatives, not call the other overload's."""
    m = labrys.load("""
(def dot Float ((a : Vec Float) (b : Vec Float)) (sumbuild (size a) (lam (i : Integer) (mul (index i a) (index i b)))))
(def [rev dot] (Tuple (Vec Float) (Vec Float)) ((ab : Tuple (Vec Float) (Vec Float)) (dr : Float))
  (let ((a b) ab) (tuple (mul dr b) (mul dr a))))
(def dot Float ((a : Vec (Vec Float)) (b : Vec (Vec Float)))
  (sum (build (size a) (lam (i : Integer) (dot (index i a) (index i b))))))
""")
    rows = labrys.verify(m)
    assert [r.function for r in rows] == ["dot", "[rev dot]", "dot"]
    for row in rows:  # (the procedure language, which has no vectors, says so: ok is None)
        assert all(c.ok is not False for c in row.cells.values()), {k: c.text() for k, c in row.cells.items()}
        assert all(c.ok for name, c in row.cells.items() if name not in ("proc", "procrev")), \
            {k: c.text() for k, c in row.cells.items()}


# --- issue 18: NaN never passes, tolerances that know about cancellation, reports ------------

NAN_DERIVATIVES = """
(def sq Float (x : Float) (mul x x))
(def [rev sq] Float ((x : Float) (d : Float)) (div 0.0 0.0))
(def g Float (x : Float) (add x (sqrt (sub x x))))
"""

# the false alarm: at p = 1e-5 (and at the edge point 1e-8) cos p - 1 cancels
CANCELLING = """
(def c Float (p : Float) (add (sub (sin p) p) (mul p 0.0)))
"""


def test_a_nan_derivative_fails_with_the_reason(tmp_path):
    rows = {r.function: r for r in verify(labrys.load(NAN_DERIVATIVES), name=None)}
    rev = rows["sq"].cells["rev"]
    assert rev.ok is False and "nan" in rev.detail and "x = " in rev.detail
    assert rows["sq"].cells["fwd"].ok  # labrys's own [fwd sq] is right
    same_type = {t.name for t in translations()}  # [CL g] computes g: it is right
    for name, cell in rows["g"].cells.items():  # g = x, but every algorithm's derivative is NaN
        assert cell.ok is (name in same_type), (name, cell.text())
    proc = run(NAN_DERIVATIVES, tmp_path)
    assert proc.returncode == 1 and "✗ nan" in proc.stdout


def test_cancellation_is_no_false_alarm_and_tolerances_are_reported(tmp_path):
    proc = run(CANCELLING, tmp_path, "c", "--json", "--points", "5")
    assert proc.returncode == 0, proc.stdout
    for row in json.loads(proc.stdout):
        assert row["ok"]
        for name, cell in row.items():
            if isinstance(cell, dict):
                assert cell["ok"] and cell["checked"] >= 5 and 0 <= cell["max_error"] <= cell["tolerance"], (name, cell)


def test_a_small_error_is_still_caught():
    """A derivative off by one part in 10^4 (far below the old 1e-3 floors) fails."""
    m = labrys.load("""
(def g Float (x : Float) (mul x x))
(def [fwd g] Float ((x : Float) (dx : Float)) (mul 2.0001 (mul x dx)))
(def [rev g] Float ((x : Float) (dr : Float)) (mul 2.0001 (mul x dr)))
""")
    (row,) = [r for r in verify(m) if r.function == "g"]
    assert not row.cells["fwd"].ok and not row.cells["rev"].ok and not row.cells["agree"].ok
    assert row.cells["fwdt"].ok and row.cells["dualfwd"].ok


def test_a_derivative_that_is_not_linear_fails():
    """[rev g] divides by the cotangent: its nonlinearity must not pass as rounding noise."""
    m = labrys.load("""
(def g Float (x : Float) (mul x x))
(def [rev g] Float ((x : Float) (dr : Float)) (div (mul 2.0 x) dr))
""")
    (row,) = [r for r in verify(m) if r.function == "g"]
    assert row.cells["rev"].ok is False and "not linear" in row.cells["rev"].detail


def test_nothing_checked_is_a_failure(tmp_path):
    proc = run("(def n Integer (k : Integer) (add k 1))\n", tmp_path)
    assert proc.returncode == 1 and "nothing checked" in proc.stdout
    everywhere_nan = "(def f Float (x : Float) (div (sub x x) (sub x x)))\n"
    (row,) = verify(labrys.load(everywhere_nan))
    assert all(c.ok is False and "nothing checked" in c.detail for c in row.cells.values())
    assert run(everywhere_nan, tmp_path).returncode == 1


def test_points_are_reproducible_and_include_edge_points(tmp_path):
    text = "(def f Float ((x : Float) (y : Float)) (mul (log x) (exp y)))\n"
    first = json.loads(run(text, tmp_path, "--json", "--seed", "7", "--points", "4").stdout)[0]
    again = json.loads(run(text, tmp_path, "--json", "--seed", "7", "--points", "4").stdout)[0]
    other = json.loads(run(text, tmp_path, "--json", "--seed", "8", "--points", "4").stdout)[0]
    assert first["points"] == again["points"] and first["points"] != other["points"]
    checked = [p["x"] for p in first["points"] if p["status"] == "checked"]
    skipped = {p["x"]: p["status"] for p in first["points"] if p["status"] != "checked"}
    assert "(0.0, 0.0)" in skipped and "-inf" in skipped["(0.0, 0.0)"]  # log 0: f not finite there
    assert "(-1.0, -1.0)" in skipped  # log of a negative number: nan
    assert {"(1.0, 1.0)", "(1e-08, 1e-08)"} <= set(checked)
    assert len(checked) == 2 + 4 and all(p["step"] > 0 for p in first["points"] if p["status"] == "checked")
    assert first["fwd"]["checked"] == 6


def test_finite_differences_estimate_their_error_and_see_kinks():
    from labrys import checks

    def f(x):
        return np.array([np.sin(3 * x), x ** 3])

    x = 0.7
    d = checks.finite_differences(f, x, 1.0, f(x))
    exact = np.array([3 * np.cos(3 * x), 3 * x ** 2])
    assert np.all(np.abs(d.value - exact) <= d.error) and np.all(d.error < 1e-8)
    assert "not differentiable" in checks.finite_differences(abs, 0.0, 1.0, np.array([0.0]))
    assert "undefined" in checks.finite_differences(lambda x: np.sqrt(x), 0.0, 1.0, np.array([0.0]))


def test_the_false_alarms_of_the_long_sweep_stay_fixed():
    """Cases the 2,000-example sweeps found; expectations by hand."""
    from labrys import checks

    # log (1 + 4p²) at p = 6e-8: f ~ 1e-14 from terms of size 1; d/dp = 8p / (1 + 4p²)
    p = 5.960464477539063e-08
    f = labrys.load("(def f Float (p : Float) (log (add 1.0 (mul (add p p) (add p p)))))").f
    d = checks.finite_differences(f, p, 0.25, checks.floats(f(p)))
    exact = 8 * p / (1 + 4 * p * p) * 0.25
    assert isinstance(d, checks.Differences) and abs(d.value[0] - exact) <= checks.FD_FACTOR * d.error[0]
    # a tangent (-7e-172, 1.499) whose small part fwd loses adding it to 1.499: rev·dx = 8.4e-172, fwd = 0
    rev = checks.pairing(np.array([1.2, 0.0]), np.array([-7e-172, 1.499]))
    fwd = checks.pairing(np.array([0.0]), np.array([1.0]))
    assert checks.compare_pairings(rev, fwd, 1e-9).ok
    assert not checks.compare_pairings(rev, checks.pairing(np.array([1.0]), np.array([1.0])), 1e-9).ok
    # parts of 1e-256: the norm does not underflow to 0
    assert checks.pairing(np.array([1.4e-256]), np.array([1.0])).magnitude == 1.4e-256
    # 1 + p² rounds to 1 at a smaller step: no verdict rather than a wrong one
    g = labrys.load("(def g Float (p : Float) (lgamma (add 1.0 (mul p p))))").g
    got = checks.finite_differences(g, 1e-8, 0.0625, checks.floats(g(1e-8)))
    assert isinstance(got, str) or abs(got.value[0] - (-0.5772156649 * 2e-8 * 0.0625)) <= 4 * got.error[0] + 1e-16
