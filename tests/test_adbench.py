"""ADBench GMM in .ks: objective and gradient against an independent NumPy
implementation of ADBENCH.md §1 (the closed-form gradient of §1.4)."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labrys.adbench import read_gmm, read_lstm, run_gmm, run_lstm, write_outputs

DATA = Path(__file__).resolve().parents[1] / "data" / "adbench" / "gmm"


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


def test_gmm_test_instance_matches_adbench_and_reference():
    result = run_gmm(DATA / "test.txt")
    assert result.objective == pytest.approx(8.07380408004975791, rel=1e-8)  # ADBench's expected value
    f, grad = reference(read_gmm(DATA / "test.txt"))
    assert result.objective == pytest.approx(f, rel=1e-12)
    assert result.gradient == pytest.approx(grad, rel=1e-6, abs=1e-9)
    assert result.fd_relative_error < 1e-6


def test_gmm_1k_points_against_the_closed_form():
    result = run_gmm(DATA / "1k" / "gmm_d2_K5.txt")
    f, grad = reference(read_gmm(DATA / "1k" / "gmm_d2_K5.txt"))
    assert result.objective == pytest.approx(f, rel=1e-10)
    assert result.gradient == pytest.approx(grad, rel=1e-6, abs=1e-9)


def test_cli_writes_adbench_output_files(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "labrys.cli.main", "adbench", "gmm", str(DATA / "test.txt"),
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    objective = float((tmp_path / "gmm" / "test_F_labrys.txt").read_text())
    gradient = [float(x) for x in (tmp_path / "gmm" / "test_J_labrys.txt").read_text().split()]
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


# --- LSTM (ADBENCH.md §4) -----------------------------------------------------------

def lstm_loss(main: np.ndarray, extra: np.ndarray, state: np.ndarray, seq: np.ndarray) -> float:
    """An independent NumPy transcription of ADBENCH.md §4.2–4.3."""
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    layers, b = main.shape[0] // 2, seq.shape[1]
    h, s = state[0::2].copy(), state[1::2].copy()
    total = 0.0
    for t in range(seq.shape[0] - 1):
        x = seq[t] * extra[0]
        for i in range(layers):
            W, B = main[2 * i].reshape(4, b), main[2 * i + 1].reshape(4, b)
            f, g_in = sig(x * W[0] + B[0]), sig(h[i] * W[1] + B[1])
            o, cand = sig(x * W[2] + B[2]), np.tanh(h[i] * W[3] + B[3])
            s[i] = s[i] * f + g_in * cand
            h[i] = o * np.tanh(s[i])
            x = h[i]
        y = x * extra[1] + extra[2]
        total += float((seq[t + 1] * (y - np.log(2 + np.exp(y).sum()))).sum())
    return -total / ((seq.shape[0] - 1) * b)


def test_lstm_small_instance_gradient_against_numpy_finite_differences(tmp_path):
    rng = np.random.default_rng(3)
    layers, c, b = 1, 5, 3
    main, extra = rng.uniform(-1, 1, (2 * layers, 4 * b)), rng.uniform(-1, 1, (3, b))
    state, seq = rng.uniform(-1, 1, (2 * layers, b)), rng.integers(0, 2, (c, b)).astype(float)
    path = tmp_path / "lstm_small.txt"
    num = lambda r: " ".join(repr(float(v)) for v in r)  # noqa: E731
    rows = [f"{layers} {c} {b}", ""] + [num(r) for r in main] + [""] \
        + [num(r) for r in extra] + [""] + [num(r) for r in state] + [""] \
        + [" ".join(str(int(v)) for v in r) for r in seq] + [""]
    path.write_text("\n".join(rows))
    result = run_lstm(path)
    assert result.objective == pytest.approx(lstm_loss(main, extra, state, seq), rel=1e-13)
    flat = np.concatenate([main.ravel(), extra.ravel()])
    fd = np.zeros_like(flat)
    for k in range(flat.size):
        e = np.zeros_like(flat)
        e[k] = 1e-6
        up, down = flat + e, flat - e
        fd[k] = (lstm_loss(up[:main.size].reshape(main.shape), up[main.size:].reshape(extra.shape), state, seq)
                 - lstm_loss(down[:main.size].reshape(main.shape), down[main.size:].reshape(extra.shape),
                             state, seq)) / 2e-6
    assert result.gradient == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_lstm_l2_c1024():
    path = DATA.parent / "lstm" / "lstm_l2_c1024.txt"
    data = read_lstm(path)
    result = run_lstm(path)
    assert result.objective == pytest.approx(lstm_loss(data.main, data.extra, data.state, data.sequence), rel=1e-12)
    assert result.fd_relative_error < 1e-6
    b = data.sequence.shape[1]
    never = [j for j in range(b) if not data.sequence[:, j].any()]
    assert never  # ADBENCH.md §4.4: bits 1-6 are never set in this file
    grad_w0 = result.gradient[:4 * b]  # layer 0 weights: forget | input | output | candidate
    assert all(grad_w0[j] == 0.0 and grad_w0[2 * b + j] == 0.0 for j in never)


def test_example_copies_are_the_packaged_programs():
    root = Path(__file__).resolve().parents[1]
    for name in ("gmm", "lstm", "ba", "hand"):
        packaged = (root / "src" / "labrys" / "adbench" / f"{name}.ks").read_text()
        assert (root / "examples" / "adbench" / f"{name}.ks").read_text() == packaged, name


def test_a_gradient_needs_a_reverse_derivation():
    from labrys import LabrysError
    from labrys.adbench import RUNNERS
    with pytest.raises(LabrysError, match=r"--deriv: a gradient needs a reverse derivation \(rev\b.*\), not 'fwd'"):
        RUNNERS["gmm"](DATA / "test.txt", "fwd")


def test_adbench_outputs_of_two_problems_never_overwrite_each_other(tmp_path, capsys):
    from labrys.cli.main import main

    root = Path(__file__).resolve().parents[1] / "data" / "adbench"
    assert main(["adbench", "gmm", str(root / "gmm" / "test.txt"), "--out", str(tmp_path), "--backend", "interp"]) == 0
    gmm_f = (tmp_path / "gmm" / "test_F_labrys.txt").read_text()
    assert main(["adbench", "ba", str(root / "ba" / "test.txt"), "--out", str(tmp_path), "--backend", "interp"]) == 0
    assert (tmp_path / "gmm" / "test_F_labrys.txt").read_text() == gmm_f
    assert (tmp_path / "ba" / "test_F_labrys.txt").exists()
    assert capsys.readouterr().err == ""
