"""ADBench GMM (ADBENCH.md §1), written from the problem definition: the
objective once for every peer, vectorised over points and components, and the
closed-form gradient of §1.4 for NumPy.  Arguments: (alphas, means, icf, x, γ, m);
the gradient is with respect to (alphas, means, icf)."""
from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import numpy as np

from labrys.adbench import read_gmm
from labrys.bench.suite import Instance, LabrysProgram, Unavailable, Workload

from .frameworks import logsumexp, peers

PROGRAM = Path(str(resources.files("labrys.adbench").joinpath("gmm.ks")))


def lower_pairs(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of L_k's strictly lower triangle in packing order: column by column (§1.2)."""
    pairs = [(r, c) for c in range(d) for r in range(c + 1, d)]
    return np.array([p[0] for p in pairs], dtype=int), np.array([p[1] for p in pairs], dtype=int)


def q_layout(d: int) -> np.ndarray:
    """A d×d array of positions into [exp(q_0..q_{d-1}), l_0.., 0], so that Q_k is one gather."""
    rows, cols = lower_pairs(d)
    layout = np.full((d, d), d + len(rows))
    layout[np.diag_indices(d)] = np.arange(d)
    layout[rows, cols] = d + np.arange(len(rows))
    return layout


def wishart_constant(d: int, gamma: float, m: int) -> float:
    """C of ADBENCH.md §1.3 (the prior's constant, per component)."""
    n = d + m + 1
    log_gamma_d = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(n / 2 + (1 - j) / 2) for j in range(1, d + 1))
    return n * d * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_d


def _forward(xp, alphas, means, icf, x):
    """q, l, Q_k (K d d), z = x_i − μ_k and y = Q_k z (n K d), β (n K)."""
    d = x.shape[1]
    q, lower = icf[:, :d], icf[:, d:]
    padded = xp.concatenate([xp.exp(q), lower, xp.zeros_like(lower[:, :1])], axis=1)
    big_q = padded[:, q_layout(d)]
    z = x[:, None, :] - means[None, :, :]
    y = xp.einsum("krc,nkc->nkr", big_q, z)
    beta = alphas + xp.sum(q, axis=1) - 0.5 * xp.sum(y * y, axis=2)
    return q, lower, big_q, z, y, beta


def objective(xp, alphas, means, icf, x, gamma, m):
    n, d = x.shape
    q, lower, _, _, _, beta = _forward(xp, alphas, means, icf, x)
    prior = (0.5 * gamma * gamma * (xp.sum(xp.exp(q) ** 2) + xp.sum(lower * lower)) - m * xp.sum(q)
             - alphas.shape[0] * wishart_constant(d, gamma, m))
    return (-n * d / 2 * math.log(2 * math.pi) + xp.sum(logsumexp(xp, beta, 1))
            - n * logsumexp(xp, alphas, 0) + prior)


def gradient(alphas, means, icf, x, gamma, m):
    """ADBENCH.md §1.4: responsibilities r, π = softmax(α), y = Q z."""
    n, d = x.shape
    q, lower, big_q, z, y, beta = _forward(np, alphas, means, icf, x)
    r = np.exp(beta - beta.max(axis=1, keepdims=True))
    r /= r.sum(axis=1, keepdims=True)
    pi = np.exp(alphas - alphas.max())
    pi /= pi.sum()
    d_alphas = r.sum(axis=0) - n * pi
    d_means = np.einsum("nk,krc,nkr->kc", r, big_q, y)
    d_q = (r[:, :, None] * (1 - np.exp(q)[None] * z * y)).sum(axis=0) + gamma ** 2 * np.exp(2 * q) - m
    rows, cols = lower_pairs(d)
    d_lower = -np.einsum("nk,nkr,nkc->krc", r, y, z)[:, rows, cols] + gamma ** 2 * lower
    return d_alphas, d_means, np.concatenate([d_q, d_lower], axis=1)


def make(file: str, points: dict[str, int]):
    """The workload of one data file; smaller sizes keep its first ``points[size]`` points."""
    def instance(data: Path, size: str) -> Instance:
        path = data / "gmm" / "1k" / file
        if not path.exists():
            raise Unavailable(f"no data file {path} (ADBench's data is the clone's data/adbench)")
        g = read_gmm(path)
        g.x = g.x[:points.get(size, len(g.x))]
        args = (g.alphas, g.means, g.icf, g.x, g.gamma, g.m)
        k, d = g.means.shape
        program = LabrysProgram(PROGRAM, "gmm_objective", g.arguments(), pick=lambda grad: grad[1:4],
                                wrt=("alphas", "means", "icf"))
        return Instance(f"d = {d}, K = {k}, n = {len(g.x)}", program, peers(objective, args, (0, 1, 2), gradient),
                        work=len(g.x), work_unit="points")
    return instance


WORKLOADS = [
    Workload("gmm_d10_K25", "ADBench GMM, d = 10, K = 25",
             make("gmm_d10_K25.txt", {"quick": 10, "probe": 2}),
             ("adbench", "gmm")),
    Workload("gmm_d64_K10", "ADBench GMM, d = 64, K = 10",
             make("gmm_d64_K10.txt", {"quick": 2, "probe": 1}),
             ("adbench", "gmm")),
]
