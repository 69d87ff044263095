"""ADBench bundle adjustment in .ks: residuals and the sparse Jacobian against an
independent NumPy transcription of ADBENCH.md §2, differentiated exactly by the
complex-step method (Im f(x + i h) / h, no cancellation), and finite differences."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labrys import LabrysError
from labrys.adbench import RUNNERS, read_ba, run_ba

DATA = Path(__file__).resolve().parents[1] / "data" / "adbench" / "ba"


# --- the NumPy transcription (works on complex numbers for the complex step) ---------

def cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def rotate(r, Y):
    theta_sq = r @ r
    if theta_sq == 0:
        return Y + cross(r, Y)
    theta = np.sqrt(theta_sq)
    w = r / theta
    return Y * np.cos(theta) + cross(w, Y) * np.sin(theta) + w * (w @ Y) * (1 - np.cos(theta))


def reprojection(cam, X, w, z):
    P = rotate(cam[0:3], X - cam[3:6])
    p = P[:2] / P[2]
    s = p @ p
    L = 1 + cam[9] * s + cam[10] * s * s
    return w * (cam[6] * L * p + cam[7:9] - z)


def numpy_problem(path: Path):
    """ADBENCH.md §2.6, read from the tokens: (n, m, p, unknowns, feature)."""
    tok = path.read_text().split()
    n, m, p = (int(t) for t in tok[:3])
    num = [float(t) for t in tok[3:]]
    cam, X, w, z = np.array(num[0:11]), np.array(num[11:14]), num[14], np.array(num[15:17])
    return n, m, p, np.concatenate([np.tile(cam, n), np.tile(X, m), np.full(p, w)]), z


def numpy_residuals(n, m, p, x, z):
    cams, pts, ws = x[:11 * n].reshape(n, 11), x[11 * n:11 * n + 3 * m].reshape(m, 3), x[11 * n + 3 * m:]
    e = [reprojection(cams[i % n], pts[i % m], ws[i], z) for i in range(p)]
    return np.concatenate([np.concatenate(e), 1 - ws * ws])


def numpy_jacobian(n, m, p, x, z):
    J = np.zeros((3 * p, x.size))
    for c in range(x.size):
        step = x.astype(complex)
        step[c] += 1e-30j
        J[:, c] = numpy_residuals(n, m, p, step, z).imag / 1e-30
    return J


def write_ba(path: Path, n: int, m: int, p: int, cam, X=(4.173048, 5.586898, 1.403869), w=0.417022,
             z=(-525.672849, 161.811929)) -> Path:
    path.write_text(f"{n} {m} {p}\n" + " ".join(map(repr, cam)) + "\n" + " ".join(map(repr, X))
                    + f"\n{w!r}\n" + " ".join(map(repr, z)) + "\n")
    return path


CAM = [1.797201, 0.590697, -0.635786, 90.859550, 29.361415, 28.777534, 211.628116, -0.284531, -14.762924,
       0.058931, 0.069976]


# --- tests ---------------------------------------------------------------------------

def test_reader_replicates_one_camera_point_weight_and_feature():
    data = read_ba(DATA / "test.txt")
    assert data.cams.shape == (2, 11) and data.points.shape == (10, 3) and data.weights.shape == (10,)
    assert np.all(data.cams == data.cams[0]) and np.all(data.points == [4.173048, 5.586898, 1.403869])
    assert np.all(data.features == [-525.672849, 161.811929]) and np.all(data.weights == 0.417022)
    assert [tuple(o) for o in data.obs] == [(i % 2, i % 10) for i in range(10)]


def test_test_instance_residuals_and_jacobian_match_numpy():
    n, m, p, x, z = numpy_problem(DATA / "test.txt")
    result = run_ba(DATA / "test.txt")
    residuals = np.concatenate([result.reprojection.ravel(), result.weight])
    assert residuals == pytest.approx(numpy_residuals(n, m, p, x, z), rel=1e-8, abs=1e-12)
    jac = result.jacobian
    assert jac.shape == (30, 62) and jac.vals.size == 310
    assert list(jac.rows) == list(range(0, 301, 15)) + list(range(301, 311))
    expected = numpy_jacobian(n, m, p, x, z)
    assert jac.dense() == pytest.approx(expected, rel=1e-6, abs=1e-9)
    # observation 3 uses camera 1 and point 3: row 6 is camera 1, point 3, weight 3, in column order
    assert list(jac.cols[6 * 15:7 * 15]) == list(range(11, 22)) + [22 + 9, 22 + 10, 22 + 11, 52 + 3]
    assert jac.vals[8] == 0.0 and jac.vals[15 + 7] == 0.0  # structural zeros stored: de_x/dv0, de_y/du0
    w = x[-1]
    assert jac.vals[14] == pytest.approx(residuals[0] / w, rel=1e-12)  # de/dw = proj - z
    assert jac.vals[300:] == pytest.approx(np.full(10, -2 * w), rel=1e-15)
    assert result.fd.entries == 310 and result.fd.max_error < 1e-6


@pytest.mark.parametrize("derivation", ["fwd", "fwdt", "dualfwd", "deltarev"])
def test_other_derivations_give_the_same_jacobian(derivation):
    rev, fwd = run_ba(DATA / "test.txt"), run_ba(DATA / "test.txt", derivation)
    assert fwd.jacobian.vals == pytest.approx(rev.jacobian.vals, rel=1e-12, abs=1e-12)


def test_zero_rotation_takes_the_first_order_branch(tmp_path):
    cam = [0.0, 0.0, 0.0] + CAM[3:]
    path = write_ba(tmp_path / "ba_zero.txt", 1, 2, 3, cam)
    n, m, p, x, z = numpy_problem(path)
    result = run_ba(path)
    assert result.jacobian.dense() == pytest.approx(numpy_jacobian(n, m, p, x, z), rel=1e-6, abs=1e-9)
    # at r = 0, d(R(r) Y)/dr is d(r x Y)/dr: FD through the sqrt branch agrees
    assert result.fd.max_error < 1e-6


def test_many_observations_check_a_sample_of_entries(tmp_path):
    path = write_ba(tmp_path / "ba_n3_m5_p40.txt", 3, 5, 40, CAM)
    n, m, p, x, z = numpy_problem(path)
    result = run_ba(path)
    assert result.fd.observations == 20 and result.fd.entries == 20 * 31 and result.fd.max_error < 1e-6
    assert result.jacobian.dense() == pytest.approx(numpy_jacobian(n, m, p, x, z), rel=1e-6, abs=1e-9)


def test_cli_writes_adbench_output_files(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "adbench", "ba", str(DATA / "test.txt"),
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "310 stored entries" in proc.stdout and "finite-difference check of 310 entries" in proc.stdout
    n, m, p, x, z = numpy_problem(DATA / "test.txt")
    lines = (tmp_path / "ba" / "test_F_labrys.txt").read_text().splitlines()
    assert lines[0] == "Reprojection error:" and lines[21] == "Zach weight error:" and len(lines) == 32
    values = [float(v) for v in lines[1:21] + lines[22:]]
    assert values == pytest.approx(list(numpy_residuals(n, m, p, x, z)), rel=1e-8, abs=1e-12)
    shape, nrows, rows, ncols, cols, vals = (tmp_path / "ba" / "test_J_labrys.txt").read_text().splitlines()
    assert shape == "30 62" and nrows == "31" and ncols == "310"
    dense = np.zeros((30, 62))
    r_at, c_at, v_at = [int(v) for v in rows.split()], [int(v) for v in cols.split()], [float(v) for v in vals.split()]
    for r in range(30):
        for k in range(r_at[r], r_at[r + 1]):
            dense[r, c_at[k]] = v_at[k]
    assert dense == pytest.approx(numpy_jacobian(n, m, p, x, z), rel=1e-6, abs=1e-9)


def test_malformed_file_and_unknown_derivation_are_user_errors(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("2 10 10\n1.0 2.0\n")
    with pytest.raises(LabrysError, match="expected 17 numbers after 'n m p', found 2"):
        read_ba(short)
    good = write_ba(tmp_path / "ok.txt", 1, 1, 1, CAM)
    with pytest.raises(LabrysError, match="--deriv"):
        RUNNERS["ba"](good, "D")
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "adbench", "ba", str(short)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "expected 17 numbers" in proc.stderr and "Traceback" not in proc.stderr


def test_rev_jacobian_in_one_compiled_call_is_the_per_observation_one():
    """ba.ks's reproj_err_jacobian / w_err_jacobian (every block in one call) against
    [rev reproj_err] and [rev w_err] called observation by observation."""
    from labrys.adbench import program
    from labrys.adbench.ba import ba_jacobian
    data = read_ba(DATA / "test.txt")
    rng = np.random.default_rng(3)
    data.cams[:, :3] += rng.normal(scale=0.1, size=(data.cams.shape[0], 3))
    data.points += rng.normal(size=data.points.shape)
    m = program("ba", backend="compiled")
    vals = ba_jacobian(m, data).vals
    reproj, weight = m.derive("rev", "reproj_err"), m.derive("rev", "w_err")
    p = data.weights.size
    for i in range(p):
        for r, ct in enumerate(((1.0, 0.0), (0.0, 1.0))):
            dcam, dx, dw, _ = reproj(data.observation(i), ct)
            want = np.concatenate([dcam, dx, [dw]])
            np.testing.assert_allclose(vals[(2 * i + r) * 15:(2 * i + r + 1) * 15], want, rtol=1e-15, atol=0)
    np.testing.assert_allclose(vals[30 * p:], [weight(w, 1.0) for w in data.weights], rtol=1e-15)
