"""labrys verify: derivations against finite differences and each other."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import labrys
from labrys.verify import verify

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
    assert all(c.ok for r in rows for c in r.cells.values())


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
    for row in rows:
        assert all(c.ok for name, c in row.cells.items()), {k: c.text() for k, c in row.cells.items()}
