"""ADBench hand tracking (simple variant) in .ks: residuals and the dense Jacobian
against an independent NumPy transcription of ADBENCH.md §3, differentiated
exactly by the complex-step method, and finite differences."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from labrys import LabrysError
from labrys.adbench import program, read_hand, run_hand
from labrys.adbench.hand import hand_jacobian, hand_residuals

DATA = Path(__file__).resolve().parents[1] / "data" / "adbench" / "hand"


# --- the NumPy transcription (works on complex θ for the complex step) ----------------

def numpy_model(folder: Path):
    bones = [line.split(":") for line in (folder / "bones.txt").read_text().splitlines() if line]
    parents = [int(b[1]) for b in bones]
    base = [np.array(b[2:18], dtype=float).reshape(4, 4) for b in bones]
    inverse = [np.array(b[18:34], dtype=float).reshape(4, 4) for b in bones]
    positions, weights = [], []
    for line in (folder / "vertices.txt").read_text().splitlines():
        f = line.split(":")
        positions.append(np.array(f[:3], dtype=float))
        row = np.zeros(len(bones))
        for k in range(int(f[8])):
            row[int(f[9 + 2 * k])] = float(f[10 + 2 * k])
        weights.append(row)
    return parents, base, inverse, np.array(positions), np.array(weights)


def numpy_instance(path: Path):
    tok = path.read_text().split()
    npts, ntheta = int(tok[0]), int(tok[1])
    rows = np.array(tok[2:2 + 4 * npts], dtype=float).reshape(npts, 4)
    return rows[:, 0].astype(int), rows[:, 1:], np.array(tok[2 + 4 * npts:2 + 4 * npts + ntheta], dtype=float)


def Rx(t):
    return np.array([[1, 0, 0], [0, np.cos(t), -np.sin(t)], [0, np.sin(t), np.cos(t)]])


def Ry(t):
    return np.array([[np.cos(t), 0, np.sin(t)], [0, 1, 0], [-np.sin(t), 0, np.cos(t)]])


def Rz(t):
    return np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])


def numpy_residuals(model, corr, points, theta):
    parents, base, inverse, positions, weights = model
    angles = np.zeros((len(parents), 3), dtype=theta.dtype)  # (ax, az, ay) per bone
    for f in range(5):
        angles[2 + 4 * f, :2] = theta[6 + 4 * f:8 + 4 * f]
        angles[3 + 4 * f, 0] = theta[8 + 4 * f]
        angles[4 + 4 * f, 0] = theta[9 + 4 * f]
    absolute, transforms = [], []
    for b, parent in enumerate(parents):
        H = np.eye(4, dtype=theta.dtype)
        H[:3, :3] = Rz(angles[b, 1]) @ Ry(angles[b, 2]) @ Rx(angles[b, 0])
        rel = base[b] @ H
        absolute.append(rel if parent == -1 else absolute[parent] @ rel)
        transforms.append(absolute[b] @ inverse[b])
    a = theta[:3]
    t = np.sqrt(a @ a)
    if abs(t.real) < 1e-4:
        G = np.eye(3)
    else:
        x, y, z = a / t
        c, s = np.cos(t), np.sin(t)
        G = np.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                      [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                      [x * z * (1 - c) - y * s, y * z * (1 - c) + x * s, z * z + (1 - z * z) * c]])
    e = []
    for v, y_i in zip(corr, points):
        s_v = sum(weights[v, b] * (transforms[b] @ np.append(positions[v], 1))[:3] for b in range(len(parents)))
        e.append(y_i - (G @ s_v + theta[3:6]))
    return np.concatenate(e)


def numpy_jacobian(model, corr, points, theta):
    columns = []
    for t in range(theta.size):
        step = theta.astype(complex)
        step[t] += 1e-30j
        columns.append(numpy_residuals(model, corr, points, step).imag / 1e-30)
    return np.array(columns).T


@pytest.fixture(scope="module")
def model():
    return numpy_model(DATA / "model")


# --- tests ---------------------------------------------------------------------------

def test_model_reader():
    data = read_hand(DATA / "test.txt")
    m = data.model
    assert m.base_relatives.shape == (22, 4, 4) and m.positions.shape == (544, 3)
    assert [m.parents[b] for b in (0, 1, 5, 9, 13, 17, 21)] == [-1, 0, 0, 0, 0, 0, 0]
    assert all(m.parents[b] == b - 1 for f in range(5) for b in range(2 + 4 * f, 5 + 4 * f))
    assert all(len(inf) <= 4 and sum(w for _, w in inf) == pytest.approx(1.0) for inf in m.influences)
    assert list(data.correspondences) == [309, 387] and data.theta.size == 26


def test_test_instance_residuals_and_jacobian_match_numpy(model):
    corr, points, theta = numpy_instance(DATA / "test.txt")
    result = run_hand(DATA / "test.txt")  # [fwd hand_objective], one sweep per θ column
    assert result.residuals == pytest.approx(numpy_residuals(model, corr, points, theta), rel=1e-8, abs=1e-12)
    expected = numpy_jacobian(model, corr, points, theta)
    assert result.jacobian == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert np.all(result.jacobian[:, 3:6] == np.tile(-np.eye(3), (2, 1)))  # ∂e/∂translation = -I
    assert result.fd_max_error < 1e-6


def test_small_global_rotation_has_zero_derivative_and_rev_agrees(model):
    corr, points, theta = numpy_instance(DATA / "test.txt")
    theta[:3] = [3e-5, -2e-5, 1e-5]  # |a| < 1e-4: G is the identity
    data = replace(read_hand(DATA / "test.txt"), theta=theta)
    m = program("hand")
    assert hand_residuals(m, data) == pytest.approx(numpy_residuals(model, corr, points, theta), rel=1e-8)
    jac = hand_jacobian(m, data, "rev")  # one sweep per residual
    assert np.all(jac[:, :3] == 0.0)
    assert jac == pytest.approx(numpy_jacobian(model, corr, points, theta), rel=1e-6, abs=1e-9)


def test_cli_writes_adbench_output_files(model, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "adbench", "hand", str(DATA / "test.txt"),
                           "--deriv", "rev", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "6 x 26 (dense)" in proc.stdout and "finite-difference check of all 156 entries" in proc.stdout
    corr, points, theta = numpy_instance(DATA / "test.txt")
    residuals = [float(v) for v in (tmp_path / "hand" / "test_F_labrys.txt").read_text().split()]
    assert residuals == pytest.approx(list(numpy_residuals(model, corr, points, theta)), rel=1e-8, abs=1e-12)
    rows = (tmp_path / "hand" / "test_J_labrys.txt").read_text().splitlines()
    jac = np.array([[float(v) for v in row.split("\t")] for row in rows])
    assert jac.shape == (6, 26)
    assert jac == pytest.approx(numpy_jacobian(model, corr, points, theta), rel=1e-6, abs=1e-9)


def test_bad_instance_and_missing_model_are_user_errors(tmp_path):
    bad = tmp_path / "hand_bad.txt"
    bad.write_text("1 26\n9999 0.1 0.2 0.3\n" + "0.0\n" * 26)
    (tmp_path / "model").symlink_to(DATA / "model")
    with pytest.raises(LabrysError, match="vertex indices must be integers below 544"):
        read_hand(bad)
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    (alone / "hand.txt").write_text("1 26\n0 0.1 0.2 0.3\n" + "0.0\n" * 26)
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "adbench", "hand", str(alone / "hand.txt")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "cannot read the hand model" in proc.stderr and "Traceback" not in proc.stderr
