"""labrys cost: derivative cost against primal cost as the input grows."""
from __future__ import annotations

import json
import subprocess
import sys

import labrys
from labrys.cost import measure

LINEAR = """
(def ss Float (v : Vec Float)
  (sum (build (size v) (lam (i : Integer) (mul (index i v) (index i v))))))
"""

# Non-tail recursion whose result is needed: reverse mode without split passes
# recomputes the callee's primal at every level, n + (n-1) + ... = O(n^2).
QUADRATIC = """
(def p Float ((n : Integer) (x : Float))
  (if (eq n 0) x (mul x (p (sub n 1) x))))
"""


def test_reverse_of_sum_of_squares_is_linear_with_a_known_ratio():
    report = measure(labrys.load(LINEAR), "ss", ["rev"], [10, 100, 1000])
    (rev,) = report.derived
    # reverse does the primal's work once more plus O(1) per element: between 1x and 3x
    assert report.primal.ops[0] < rev.ops[0] < 3 * report.primal.ops[0]
    assert abs(report.slope(rev) - 1.0) < 0.05 and report.verdict(rev).startswith("linear")


def test_the_quadratic_case_is_called_super_linear():
    report = measure(labrys.load(QUADRATIC), "p", ["rev"], [10, 40, 160])
    (rev,) = report.derived
    assert report.slope(rev) > 1.5 and report.verdict(rev) == "super-linear"


def test_cli_json_and_plot(tmp_path):
    path = tmp_path / "ss.ks"
    path.write_text(LINEAR)
    png = tmp_path / "cost.png"
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "cost", str(path), "ss", "--deriv", "rev",
                           "--deriv", "fwd", "--sizes", "10,100", "--json", "--plot", str(png)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["sizes"] == [10, 100] and set(data) >= {"primal", "rev", "fwd"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_sizes_are_a_clear_error(tmp_path):
    path = tmp_path / "ss.ks"
    path.write_text(LINEAR)
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "cost", str(path), "ss", "--sizes", "ten"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "--sizes" in proc.stderr and "Traceback" not in proc.stderr
