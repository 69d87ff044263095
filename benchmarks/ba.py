"""ADBench bundle adjustment (ADBENCH.md §2), written from the problem definition.

The "gradient" is the sparse Jacobian's stored values in ADBench's order
(§2.5): per observation its two rows over [camera (11), point (3), weight],
then the p weight rows (−2 w_i).  The peers get each observation's block rows
from two reverse passes over all observations at once: the residuals are
computed from per-observation copies of the camera, point and weight, so the
gradient of Σ_i e_i,x with respect to the copies is exactly row 2i of every
block (and likewise for y).  labrys runs `labrys adbench ba`'s Jacobian: two
reverse passes of [rev reproj_err] per observation.  NumPy has no hand Jacobian.
"""
from __future__ import annotations

import importlib
from importlib import resources
from pathlib import Path

import numpy as np

from labrys.bench.suite import Impl, Instance, LabrysProgram, Unavailable, Workload

from .frameworks import peers

OBSERVATIONS = {"quick": 20, "probe": 5}  # smaller sizes keep the first observations


def cross(xp, a, b):
    return xp.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], 1)


def rotate(xp, r, y):
    """R(r)·Y by Rodrigues (§2.2), rows at once; θ² = 0 takes the first-order branch
    (θ is computed from a safe value there, so that no gradient meets √0)."""
    theta_sq = xp.sum(r * r, axis=1)
    zero = theta_sq == 0
    theta = xp.sqrt(xp.where(zero, 1.0, theta_sq))[:, None]
    w = r / theta
    cos = xp.cos(theta)
    full = y * cos + cross(xp, w, y) * xp.sin(theta) + w * (xp.sum(w * y, axis=1)[:, None] * (1 - cos))
    return xp.where(zero[:, None], y + cross(xp, r, y), full)


def reprojection(xp, cam, x, w, feature):
    """e_i (§2.3, §2.4) for rows of cameras (p×11), points (p×3), weights (p), features (p×2)."""
    p = rotate(xp, cam[:, 0:3], x - cam[:, 3:6])
    p = p[:, :2] / p[:, 2:3]
    s = xp.sum(p * p, axis=1)
    distortion = 1.0 + cam[:, 9] * s + cam[:, 10] * s * s
    return w[:, None] * ((cam[:, 6] * distortion)[:, None] * p + cam[:, 7:9] - feature)


def residuals(xp, cam, x, w, feature):
    """All 3p residuals: e_0,x e_0,y … then y_i = 1 − w_i²."""
    return xp.concatenate([xp.reshape(reprojection(xp, cam, x, w, feature), (-1,)), 1.0 - w * w])


def row_sum(k: int):
    def objective(xp, cam, x, w, feature):
        return xp.sum(reprojection(xp, cam, x, w, feature)[:, k])
    return objective


def _jacobian_peers(args: tuple) -> dict:
    """Each peer's objective (the residuals) and Jacobian values (two reverse passes)."""
    value = peers(residuals, args, (0, 1, 2))
    rows = [peers(row_sum(k), args, (0, 1, 2)) for k in (0, 1)]
    w = args[2]

    def combine(name: str):
        def make() -> Impl:
            impl, by_row = value[name](), [r[name]() for r in rows]
            if by_row[0].gradient is None:
                return Impl(impl.objective)

            def jacobian():
                blocks = [np.hstack([_numpy(g) for g in r.gradient()]) for r in by_row]  # p × 15 each
                return np.concatenate([np.stack(blocks, axis=1).ravel(), -2.0 * w])
            return Impl(impl.objective, jacobian)
        return make
    return {name: combine(name) for name in value}


def _numpy(a) -> np.ndarray:
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    return a.reshape(a.shape[0], -1)


def make(file: str):
    def instance(data: Path, size: str) -> Instance:
        try:
            ba = importlib.import_module("labrys.adbench.ba")
        except ImportError:
            raise Unavailable("not available: labrys has no ADBench BA yet (labrys.adbench.ba)") from None
        path = data / "ba" / file
        if not path.exists():
            raise Unavailable(f"no data file {path} (ADBench's data is the clone's data/adbench)")
        d = ba.read_ba(path)
        keep = OBSERVATIONS.get(size, d.weights.size)
        d = ba.BaInput(d.cams, d.points, d.weights[:keep], d.features[:keep], d.obs[:keep])
        args = (d.cams[d.obs[:, 0]], d.points[d.obs[:, 1]], d.weights, d.features)
        def jacobian(module, derivation: str, pick):
            module.derive(derivation, "reproj_err")  # a derivation that rejects the program says so now
            return lambda: ba.ba_jacobian(module, d, derivation).vals
        program = LabrysProgram(Path(str(resources.files("labrys.adbench").joinpath("ba.ks"))), "ba_objective",
                                d.arguments(), derivative=jacobian)
        n, m, p = d.cams.shape[0], d.points.shape[0], d.weights.size
        return Instance(f"n = {n}, m = {m}, p = {p}; the {31 * p} stored Jacobian entries", program,
                        _jacobian_peers(args), work=p, work_unit="observations")
    return instance


WORKLOADS = [Workload("ba1", "ADBench BA, ba1", make("ba1_n49_m7776_p31843.txt"), ("adbench", "ba"))]
