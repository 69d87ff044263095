"""ADBench GMM in .ks: objective and gradient against an independent NumPy
implementation of ADBENCH.md §1 (the closed-form gradient of §1.4)."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labrys.adbench import read_gmm, run_gmm, write_outputs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "adbench" / "gmm"
needs_data = pytest.mark.skipif(not DATA.exists(), reason="ADBench data not beside the repository")


def Q_of(icf_row: np.ndarray, d: int) -> np.ndarray:
    Q = np.diag(np.exp(icf_row[:d]))
    k = d
    for c in range(d):          # column by column
        for r in range(c + 1, d):
            Q[r, c] = icf_row[k]
            k += 1
    return Q


def logsumexp(v: np.ndarray) -> float:
    m = v.max()
    return float(m + np.log(np.exp(v - m).sum()))


def reference(g) -> tuple[float, np.ndarray]:
    """f and its gradient (ADBENCH.md §1.3 and the closed form of §1.4)."""
    K, d = g.means.shape
    n = g.x.shape[0]
    Qs = [Q_of(g.icf[k], d) for k in range(K)]
    z = g.x[:, None, :] - g.means[None, :, :]                        # n K d
    y = np.einsum("krc,nkc->nkr", np.array(Qs), z)                     # Q_k z_ik
    beta = g.alphas[None, :] + g.icf[:, :d].sum(1)[None, :] - 0.5 * (y ** 2).sum(2)
    N = d + g.m + 1
    log_gamma_d = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(N / 2 + (1 - j) / 2) for j in range(1, d + 1))
    C = N * d * (math.log(g.gamma) - 0.5 * math.log(2)) - log_gamma_d
    frob = sum((np.exp(g.icf[k, :d]) ** 2).sum() + (g.icf[k, d:] ** 2).sum() for k in range(K))
    P = g.gamma ** 2 / 2 * frob - g.m * g.icf[:, :d].sum() - K * C
    f = -(n * d / 2) * math.log(2 * math.pi) + sum(logsumexp(b) for b in beta) - n * logsumexp(g.alphas) + P
    r = np.exp(beta - beta.max(1, keepdims=True))
    r /= r.sum(1, keepdims=True)
    pi = np.exp(g.alphas - g.alphas.max())
    pi /= pi.sum()
    d_alpha = r.sum(0) - n * pi
    d_means = np.array([(r[:, k, None] * (y[:, k, :] @ Qs[k])).sum(0) for k in range(K)])
    d_icf = np.zeros_like(g.icf)
    for k in range(K):
        q = g.icf[k, :d]
        d_icf[k, :d] = (r[:, k, None] * (1 - np.exp(q)[None, :] * z[:, k, :] * y[:, k, :])).sum(0) \
            + g.gamma ** 2 * np.exp(2 * q) - g.m
        p = d
        for c in range(d):
            for row in range(c + 1, d):
                d_icf[k, p] = -(r[:, k] * y[:, k, row] * z[:, k, c]).sum() + g.gamma ** 2 * g.icf[k, p]
                p += 1
    return f, np.concatenate([d_alpha, d_means.ravel(), d_icf.ravel()])


@needs_data
def test_gmm_test_instance_matches_adbench_and_reference():
    result = run_gmm(DATA / "test.txt")
    assert result.objective == pytest.approx(8.07380408004975791, rel=1e-8)  # ADBench's expected value
    f, grad = reference(read_gmm(DATA / "test.txt"))
    assert result.objective == pytest.approx(f, rel=1e-12)
    assert result.gradient == pytest.approx(grad, rel=1e-6, abs=1e-9)
    assert result.fd_relative_error < 1e-6


@needs_data
def test_gmm_1k_points_against_the_closed_form():
    result = run_gmm(DATA / "1k" / "gmm_d2_K5.txt")
    f, grad = reference(read_gmm(DATA / "1k" / "gmm_d2_K5.txt"))
    assert result.objective == pytest.approx(f, rel=1e-10)
    assert result.gradient == pytest.approx(grad, rel=1e-6, abs=1e-9)


@needs_data
def test_cli_writes_adbench_output_files(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "adbench", "gmm", str(DATA / "test.txt"),
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    objective = float((tmp_path / "test_F_labrys.txt").read_text())
    gradient = [float(x) for x in (tmp_path / "test_J_labrys.txt").read_text().split()]
    f, grad = reference(read_gmm(DATA / "test.txt"))
    assert objective == pytest.approx(f, rel=1e-12) and gradient == pytest.approx(list(grad), rel=1e-6, abs=1e-9)


def test_reader_rejects_a_malformed_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3 1\n0.5\n")
    from labrys import LabrysError
    with pytest.raises(LabrysError, match="expected"):
        read_gmm(bad)


def test_write_outputs_layout(tmp_path):
    from labrys.adbench import GmmResult
    paths = write_outputs("some/gmm_d2_K5.txt", GmmResult(1.5, np.array([0.25, -2.0]), 0.0), tmp_path)
    assert [p.name for p in paths] == ["gmm_d2_K5_F_labrys.txt", "gmm_d2_K5_J_labrys.txt"]
    assert paths[1].read_text().split() == ["0.25", "-2"]
