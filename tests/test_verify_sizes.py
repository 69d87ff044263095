"""labrys verify finds sizes a function accepts from its own errors (an index out
of range, a size mismatch), with no ``main`` to copy them from; a function defined
at no size it tries is a finding, not a silent pass (docs/verification.md, "Sizes
the function accepts").  The expected sizes are the smallest the indices written
in each program allow, worked out by hand."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import labrys
from labrys.errors import LabrysError
from labrys.verify import passed, verify
from labrys.verify_sizes import CAP, describe, grow, slots

ROOT = Path(__file__).resolve().parent.parent

INDEXING = """
(def g7 Float ((v : Vec Float) (w : Float))
  (mul (index 7 v) (sin (mul w (index 2 v)))))
(def g12 Float ((a : Vec Float) (b : Vec Float))
  (add (mul (index 12 a) (index 0 b)) (mul (index 3 b) (cos (index 5 a)))))
(def rows Float (m : Vec (Vec Float))
  (mul (index 7 (index 4 m)) (index 1 (index 0 m))))
(def grid Float (t : Tensor 2 Float)
  (mul (index (tuple 6 1) t) (exp (index (tuple 0 4) t))))
(def matched Float ((v : Vec Float) (u : Vec Float))
  (sum (mul (build 5 (lam (i : Integer) (index i v))) u)))
"""

# [rev g7] written by hand, with ∂/∂w doubled: verify must catch it at the grown sizes
WRONG_REV = """
(def [rev g7] (Tuple (Vec Float) Float) ((x : Tuple (Vec Float) Float) (dr : Float))
  (let (((v w) x)
        (c (cos (mul w (index 2 v)))))
    (tuple (build (size v) (lam (i : Integer)
             (if (eq i 7) (mul dr (sin (mul w (index 2 v))))
                 (if (eq i 2) (mul dr (mul (index 7 v) (mul c w))) 0.0))))
           (mul 2.0 (mul dr (mul (index 7 v) (mul c (index 2 v))))))))
"""


def run(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labrys", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_sizes_grow_to_what_the_indices_need():
    rows = {r.function: r for r in verify(labrys.load(INDEXING, backend="interp"), points=1)}
    expected = {"g7": "v 8",                 # index 7
                "g12": "a 13, b 4",          # index 12 of a, index 3 of b: each grown alone
                "rows": "m 5×8",             # row 4, element 7
                "grid": "t 7×5",             # (6, 1) and (0, 4)
                "matched": "v 5, u 5"}       # build 5 reads v; mul needs u of the same size
    for name, sizes in expected.items():
        row = rows[name]
        assert row.shapes == f"grown from the errors: {sizes}", (name, row.shapes)
        assert row.ok and not row.finding, (name, {n: c.detail for n, c in row.cells.items() if not c.ok})
        for alg in ("fwd", "rev", "dualfwd", "deltarev", "chadrev"):
            assert row.cells[alg].ok and row.cells[alg].checked >= 1, (name, alg, row.cells[alg].detail)
    assert passed(list(rows.values()))


def test_a_wrong_derivative_is_caught_at_the_grown_sizes():
    (row,) = verify(labrys.load(INDEXING + WRONG_REV, backend="interp"), "g7", points=1)
    assert row.shapes == "grown from the errors: v 8"
    assert row.cells["fwd"].ok and row.cells["fwd"].checked >= 1
    assert row.cells["rev"].ok is False and "vs finite differences" in row.cells["rev"].detail
    assert not passed([row])
    # the same program with the factor right passes: the failure is the factor 2
    right = WRONG_REV.replace("(mul 2.0 (mul dr", "(mul 1.0 (mul dr")
    (ok,) = verify(labrys.load(INDEXING + right, backend="interp"), "g7", points=1)
    assert ok.cells["rev"].ok and ok.cells["rev"].checked >= 1


def test_a_function_defined_at_no_size_is_a_failure_and_does_not_hang(tmp_path):
    path = tmp_path / "never.ks"
    path.write_text("(def far Float (v : Vec Float) (mul 2.0 (index 100000 v)))\n"
                    "(def chase Float (v : Vec Float) (index (size v) v))\n"
                    "(def sq Float (x : Float) (mul x x))\n")
    proc = run(["verify", str(path), "--backend", "interp", "--points", "1"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    far = next(line for line in proc.stdout.splitlines() if line.startswith("far "))
    assert "✗ no point where f is defined: f fails at x (index 100000 out of range" in far
    assert f"the sizes that could fix it pass {CAP} per vector" in far
    chase = next(line for line in proc.stdout.splitlines() if line.startswith("chase "))
    assert "✗ no point where f is defined" in chase and f"index {CAP} out of range for a tensor of size {CAP}" in chase
    assert "Traceback" not in proc.stderr
    rows = {r.function: r for r in verify(labrys.load(path, backend="interp"), points=1)}
    assert not rows["far"].ok and rows["far"].cells["rev"].ok is False and rows["sq"].ok
    assert not passed(list(rows.values()))


def test_every_def_of_the_adbench_bundle_adjustment_is_checked():
    """ba.ks has no main; cameras hold 11 parameters.  Every def is checked at a point."""
    proc = run(["verify", "src/labrys/adbench/ba.ks", "--backend", "interp", "--points", "1", "--json",
                "--algorithms", "rev,dualfwd"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    rows = {r["function"]: r for r in json.loads(proc.stdout)}
    text = (ROOT / "src" / "labrys" / "adbench" / "ba.ks").read_text()
    defs = {line.split()[1] for line in text.splitlines() if line.startswith("(def ")}
    assert set(rows) == defs
    for name, row in rows.items():
        assert row["ok"] and any(p["status"] == "checked" for p in row["points"]), name
        assert set(row) - {"function", "ok", "shapes", "points"} <= {"rev", "dualfwd", "agree"}, name
        assert row["rev"]["ok"] and row["rev"]["checked"] >= 1, name
    assert rows["reproj_err"]["shapes"] == "grown from the errors: cam 11, X 3, feat 3"
    assert rows["ba_objective"]["shapes"].startswith("grown from the errors: cams 3×11")


def test_the_search_is_deterministic_and_reads_only_size_errors():
    m = labrys.load(INDEXING + "(def tell Float (v : Vec Float) (assert (gt (size v) 5) (index 0 v)))\n",
                    backend="interp")
    g12 = m.function("g12")
    t = m.checked.functions.resolve("g12", m.program.decls[1].arg_type).arg
    first, again = grow(g12, t, 7), grow(g12, t, 7)
    assert first.sizes == again.sizes and np.array_equal(first.value[0], again.value[0])
    assert describe(t, ["a", "b"], first.sizes) == "a 13, b 4" and len(slots(t)) == 2
    tell = m.function("tell")
    found = grow(tell, m.checked.functions.resolve("tell", m.program.decls[-1].arg_type).arg, 0)
    assert found.value is None and "assertion failed; no change of the sizes moves it" in found.why
    try:
        tell(np.ones(3))
    except LabrysError as exc:
        assert exc.span is not None  # the search compares errors by message and position


def test_verify_checks_only_the_derivations_named():
    (row,) = verify(labrys.load(INDEXING, backend="interp"), "g12", points=1, only=["fwd", "rev"])
    assert set(row.cells) == {"fwd", "rev", "agree"} and row.ok and row.cells["agree"].checked >= 1
    try:
        verify(labrys.load(INDEXING, backend="interp"), "g12", only=["rev", "nope"])
    except LabrysError as exc:
        assert "verify has no derivation nope; it checks fwd, rev" in exc.message
    else:
        raise AssertionError("an unknown derivation must be an error")
