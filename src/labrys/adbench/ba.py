"""ADBench bundle adjustment (ADBENCH.md §2): the reader with its replication
convention, the 3p residuals of ``ba.ks``, the sparse Jacobian through labrys's
own AD of the per-observation residual, a finite-difference check and
ADBench's output files.  ``labrys adbench ba FILE --deriv rev``."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..api import Module
from ..errors import LabrysError
from ..util.deep import run_deep
from . import algorithm, output_paths, program, read_blocks, timed

CAM, POINT = 11, 3       # parameters of a camera, of a point
BLOCK = CAM + POINT + 1  # stored entries of a reprojection row: camera, point, weight


@dataclass
class BaInput:
    cams: np.ndarray      # n x 11
    points: np.ndarray    # m x 3
    weights: np.ndarray   # p
    features: np.ndarray  # p x 2
    obs: np.ndarray       # p x 2: (camera, point) of each observation

    @property
    def ncols(self) -> int:  # unknowns: cameras, points, weights (§2.5)
        return self.cams.size + self.points.size + self.weights.size

    def arguments(self) -> tuple:
        """The arguments of ba_objective: (cams, points, weights, features, obs)."""
        return (list(self.cams), list(self.points), self.weights, list(self.features),
                [(int(c), int(j)) for c, j in self.obs])

    def observation(self, i: int) -> tuple:
        """The arguments of reproj_err for observation i: (cam, X, w, feature)."""
        c, j = self.obs[i]
        return self.cams[c], self.points[j], float(self.weights[i]), self.features[i]

    def flat(self) -> np.ndarray:
        """The unknowns in Jacobian column order."""
        return np.concatenate([self.cams.ravel(), self.points.ravel(), self.weights])

    def with_flat(self, x: np.ndarray) -> "BaInput":
        cams, points, weights = np.split(x, [self.cams.size, self.cams.size + self.points.size])
        return BaInput(cams.reshape(self.cams.shape), points.reshape(self.points.shape), weights,
                       self.features, self.obs)


def read_ba(path: str | Path) -> BaInput:
    """ADBENCH.md §2.6: the file holds one camera, point, weight and feature; the
    reader replicates them, and observation i uses camera i mod n and point i mod m."""
    (n, m, p), (cam, point, weight, feature) = read_blocks(path, "BA", "n m p", lambda n, m, p: [CAM, POINT, 1, 2])
    if min(n, m, p) < 1:
        raise LabrysError(f"{path}: n, m and p must be positive, found {n} {m} {p}")
    i = np.arange(p)
    return BaInput(np.tile(cam, (n, 1)), np.tile(point, (m, 1)), np.full(p, weight[0]), np.tile(feature, (p, 1)),
                   np.stack([i % n, i % m], axis=1))


@dataclass
class SparseJacobian:
    """Compressed sparse rows in ADBench's layout (§2.5): ``rows[r]`` is where row r
    starts in ``cols``/``vals``; structural zeros inside a block are stored."""
    shape: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape)
        for r in range(self.shape[0]):
            span = slice(self.rows[r], self.rows[r + 1])
            out[r, self.cols[span]] = self.vals[span]
        return out


def ba_sparsity(data: BaInput) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` and ``cols`` of the Jacobian: rows 2i, 2i+1 hold camera cam_i (11),
    point pt_i (3) and weight i; row 2p+i holds weight i."""
    (n, _), (m, _), p = data.cams.shape, data.points.shape, data.weights.size
    weight_col = CAM * n + POINT * m + np.arange(p)
    block = np.hstack([CAM * data.obs[:, :1] + np.arange(CAM),
                       CAM * n + POINT * data.obs[:, 1:] + np.arange(POINT),
                       weight_col[:, None]])
    cols = np.concatenate([np.repeat(block, 2, axis=0).ravel(), weight_col])
    rows = np.concatenate([np.arange(0, 2 * BLOCK * p + 1, BLOCK), 2 * BLOCK * p + np.arange(1, p + 1)])
    return rows, cols


def ba_jacobian(module: Module, data: BaInput, derivation: str = "rev") -> SparseJacobian:
    """Each observation's 2 x 15 block by labrys's AD of reproj_err, and its weight
    row by AD of w_err.  Reverse mode needs one sweep per residual (2 per
    observation), forward mode one per unknown (15); a sweep costs a small
    multiple of reproj_err either way (measured: rev 410 operations per sweep,
    fwd 349, reproj_err 89), so rev is the cheaper default."""
    alg = algorithm(derivation)
    if alg.name == "rev" and {"reproj_err_jacobian", "w_err_jacobian"} <= set(module.names()):
        return _rev_jacobian(module, data)
    reproj = module.derive(alg.name, "reproj_err")
    weight = module.derive(alg.name, "w_err")
    p = data.weights.size
    vals = np.empty(2 * BLOCK * p + p)
    blocks = vals[:2 * BLOCK * p].reshape(p, 2, BLOCK)
    if alg.convention.direction == "reverse":
        def block(args: tuple) -> np.ndarray:
            return np.array([np.hstack(reproj(args, ct)[:3]) for ct in ((1.0, 0.0), (0.0, 1.0))])

        def weight_row(w: float) -> float:
            return weight(w, 1.0)
    else:
        no_feature = np.zeros(2)
        basis = np.eye(BLOCK)

        def block(args: tuple) -> np.ndarray:
            return np.array([alg.convention.tangent(reproj(args, (e[:CAM], e[CAM:CAM + POINT], e[-1], no_feature)))
                             for e in basis]).T

        def weight_row(w: float) -> float:
            return alg.convention.tangent(weight(w, 1.0))

    def fill() -> None:  # on the deep-stack worker once, not once per call
        for i in range(p):
            args = data.observation(i)
            blocks[i] = block(args)
            vals[2 * BLOCK * p + i] = weight_row(args[2])
    run_deep(fill)
    rows, cols = ba_sparsity(data)
    return SparseJacobian((3 * p, data.ncols), rows, cols, vals)


def _rev_jacobian(module: Module, data: BaInput) -> SparseJacobian:
    """The Jacobian by ``rev`` with every observation's block in one call: ba.ks's
    ``reproj_err_jacobian`` and ``w_err_jacobian`` loop over the observations calling
    [rev reproj_err] and [rev w_err] inside compiled code (one Python call each, not two
    per observation: 3.3 s became about 27 ms of CPU on ba1)."""
    p = data.weights.size
    cams, points = data.cams[data.obs[:, 0]], data.points[data.obs[:, 1]]
    blocks = np.asarray(module.reproj_err_jacobian(cams, points, data.weights, data.features), dtype=float)
    weights = np.asarray(module.w_err_jacobian(data.weights), dtype=float)
    rows, cols = ba_sparsity(data)
    return SparseJacobian((3 * p, data.ncols), rows, cols, np.concatenate([blocks.reshape(-1), weights.reshape(-1)]))


def ba_residuals(module: Module, data: BaInput) -> tuple[np.ndarray, np.ndarray]:
    """(p x 2 reprojection residuals, p weight residuals) from ba_objective."""
    reproj, weight = module.ba_objective(*data.arguments())
    return np.array(reproj, dtype=float).reshape(-1, 2), np.asarray(weight, dtype=float)


@dataclass
class FdCheck:
    entries: int        # stored Jacobian entries compared
    observations: int   # of how many observations
    max_error: float    # max |J - FD| / max(1, |J|, |FD|)


def fd_check(module: Module, data: BaInput, jac: SparseJacobian, sample: int = 20, h: float = 1e-6) -> FdCheck:
    """Central differences of the residuals of (a sample of) observations, one per
    stored entry: the unknown named by the entry's column is moved in the full
    parameter vector, so the column layout is checked along with the value."""
    p = data.weights.size
    chosen = np.unique(np.linspace(0, p - 1, min(p, sample)).astype(int))
    x = data.flat()

    def residual_rows(moved: BaInput, i: int) -> np.ndarray:  # rows 2i, 2i+1, 2p+i
        e = module.reproj_err(*moved.observation(i))
        return np.array([e[0], e[1], module.w_err(float(moved.weights[i]))])

    def run() -> FdCheck:
        worst, entries = 0.0, 0
        for i in chosen:
            row_ids = [2 * i, 2 * i + 1, 2 * p + i]
            stored = {r: dict(zip(jac.cols[jac.rows[r]:jac.rows[r + 1]], jac.vals[jac.rows[r]:jac.rows[r + 1]]))
                      for r in row_ids}
            for c in sorted(set().union(*stored.values())):
                step = h * max(1.0, abs(x[c]))
                up, down = x.copy(), x.copy()
                up[c] += step
                down[c] -= step
                fd = (residual_rows(data.with_flat(up), i) - residual_rows(data.with_flat(down), i)) / (2 * step)
                for r, f in zip(row_ids, fd):
                    a = stored[r].get(c, 0.0)
                    worst = max(worst, abs(a - f) / max(1.0, abs(a), abs(f)))
                    entries += c in stored[r]
        return FdCheck(entries, len(chosen), worst)
    return run_deep(run)


@dataclass
class BaResult:
    reprojection: np.ndarray  # p x 2
    weight: np.ndarray        # p
    jacobian: SparseJacobian
    fd: FdCheck
    derivation: str
    seconds: dict[str, float]

    @property
    def ok(self) -> bool:
        return self.fd.max_error < 1e-5

    def summary(self) -> list[str]:
        p, jac = self.weight.size, self.jacobian
        residuals = np.concatenate([self.reprojection.ravel(), self.weight])
        return [
            f"residuals        {residuals.size} = 2p reprojection + p weight (p = {p}), "
            f"sum of squares {float(residuals @ residuals):.17g}",
            "first residuals  " + " ".join(f"{v:.10g}" for v in self.reprojection[0]) + f" | {self.weight[0]:.10g}",
            f"jacobian         {jac.shape[0]} x {jac.shape[1]}, {jac.vals.size} stored entries, "
            f"|J|_F = {float(np.sqrt(jac.vals @ jac.vals)):.10g}  "
            f"([{self.derivation} reproj_err], [{self.derivation} w_err])",
            "first row        " + " ".join(f"{v:.6g}" for v in jac.vals[:BLOCK]),
            f"finite-difference check of {self.fd.entries} entries ({self.fd.observations} observations): "
            f"max relative error {self.fd.max_error:.1e}",
            "time             " + ", ".join(f"{k} {s:.2f} s" for k, s in self.seconds.items()),
        ]

    def write(self, datafile: str | Path, out_dir: str | Path, tool: str = "labrys") -> list[Path]:
        """ADBENCH.md §2.7, numbers with 17 significant digits."""
        f_file, j_file = output_paths(datafile, out_dir, tool)
        lines = lambda values: "".join(f"{v:.17g}\n" for v in values)  # noqa: E731
        f_file.write_text("Reprojection error:\n" + lines(self.reprojection.ravel())
                          + "Zach weight error:\n" + lines(self.weight))
        jac = self.jacobian
        j_file.write_text(f"{jac.shape[0]} {jac.shape[1]}\n{jac.rows.size}\n" + " ".join(map(str, jac.rows))
                          + f"\n{jac.cols.size}\n" + " ".join(map(str, jac.cols)) + "\n"
                          + " ".join(f"{v:.17g}" for v in jac.vals) + "\n")
        return [f_file, j_file]


def run_ba(path: str | Path, derivation: str = "rev", backend: str | None = None) -> BaResult:
    data = read_ba(path)
    m = program("ba", backend)
    seconds: dict[str, float] = {}
    reprojection, weight = timed(seconds, "residuals", ba_residuals, m, data)
    jac = timed(seconds, "jacobian", ba_jacobian, m, data, derivation)
    fd = timed(seconds, "fd check", fd_check, m, data, jac)
    return BaResult(reprojection, weight, jac, fd, derivation, seconds)
