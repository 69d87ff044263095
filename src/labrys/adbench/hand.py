"""ADBench hand tracking, simple variant (ADBENCH.md §3): the model folder and
instance readers, the residuals of ``hand.ks``, the dense Jacobian with respect
to θ through labrys's own AD, a finite-difference check and ADBench's output
files.  ``labrys adbench hand FILE --deriv fwd``."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..api import Module
from ..errors import LabrysError
from ..util.deep import run_deep
from ..values import from_python, to_python, zero_tangent_of
from . import algorithm, output_paths, program, read_blocks, timed


@dataclass
class HandModel:
    parents: np.ndarray                 # bones; -1 for the root
    base_relatives: np.ndarray          # bones x 4 x 4
    inverse_base_absolutes: np.ndarray  # bones x 4 x 4
    positions: np.ndarray               # vertices x 3 (rest pose)
    influences: list[list[tuple[int, float]]]  # per vertex: (bone, skinning weight) pairs


@dataclass
class HandInput:
    model: HandModel
    correspondences: np.ndarray  # npts vertex indices
    points: np.ndarray           # npts x 3
    theta: np.ndarray            # 26

    def arguments(self, theta: np.ndarray | None = None) -> tuple:
        """The arguments of hand_objective (θ replaced by ``theta`` if given)."""
        m = self.model
        return (self.theta if theta is None else theta, [int(p) for p in m.parents],
                [list(t) for t in m.base_relatives], [list(t) for t in m.inverse_base_absolutes],
                list(m.positions), m.influences, [int(c) for c in self.correspondences], list(self.points))


def _fields(path: Path) -> list[list[str]]:
    try:
        return [line.split(":") for line in path.read_text().splitlines() if line.strip()]
    except OSError as exc:
        raise LabrysError(f"{path}: cannot read the hand model ({exc.strerror})") from None


def read_hand_model(folder: str | Path) -> HandModel:
    """ADBENCH.md §3.6: bones.txt (name:parent:B row-major:Ĩ row-major) and
    vertices.txt (x:y:z:five unused numbers:k:k pairs bone:weight)."""
    folder = Path(folder)
    bones, vertices = _fields(folder / "bones.txt"), _fields(folder / "vertices.txt")
    try:
        parents = np.array([int(b[1]) for b in bones])
        matrices = np.array([[float(v) for v in b[2:34]] for b in bones]).reshape(len(bones), 2, 4, 4)
        positions = np.array([[float(v) for v in vx[:3]] for vx in vertices])
        influences = [[(int(b), float(w)) for b, w in zip(vx[9::2], vx[10::2], strict=True)] for vx in vertices]
    except (ValueError, IndexError) as exc:
        raise LabrysError(f"{folder}: not an ADBench hand model ({exc})") from None
    if any(not -1 <= p < b for b, p in enumerate(parents)):
        raise LabrysError(f"{folder / 'bones.txt'}: every bone's parent must come before it")
    if any(len(inf) != int(vx[8]) or not all(0 <= b < len(bones) for b, _ in inf)
           for inf, vx in zip(influences, vertices)):
        raise LabrysError(f"{folder / 'vertices.txt'}: a vertex's bone count or bone index is wrong")
    return HandModel(parents, matrices[:, 0], matrices[:, 1], positions, influences)


def read_hand(path: str | Path) -> HandInput:
    """ADBENCH.md §3.6: `npts ntheta`, npts lines `vertex x y z`, ntheta values; the
    model is the folder `model` next to the file."""
    path = Path(path)
    (npts, ntheta), (corr, theta) = read_blocks(path, "hand", "npts ntheta", lambda n, t: [4 * n, t])
    if ntheta != 26:
        raise LabrysError(f"{path}: the simple hand variant has 26 parameters, found ntheta = {ntheta}")
    model = read_hand_model(path.parent / "model")
    corr = corr.reshape(npts, 4)
    vertices = corr[:, 0].astype(int)
    if np.any(vertices != corr[:, 0]) or np.any((vertices < 0) | (vertices >= len(model.positions))):
        raise LabrysError(f"{path}: vertex indices must be integers below {len(model.positions)}")
    return HandInput(model, vertices, corr[:, 1:], theta)


def hand_residuals(module: Module, data: HandInput, theta: np.ndarray | None = None) -> np.ndarray:
    """The 3·npts residuals, ordered e[3i + j]."""
    return np.array(module.hand_objective(*data.arguments(theta)), dtype=float).ravel()


def hand_jacobian(module: Module, data: HandInput, derivation: str = "fwd") -> np.ndarray:
    """J[r][t] = ∂e_r/∂θ_t by labrys's AD of hand_objective.  Forward mode needs
    one sweep per column (26, whatever npts is), reverse mode one per row
    (3·npts), each sweep running the whole kinematic chain at a similar cost
    (hand1_t26_c100: 26 fwd sweeps 6.5 M operations, 300 rev sweeps 90 M), so
    fwd is the default; rev wins only below about 8 points (test.txt: 1.2 M
    against 4.5 M).  A derivation that takes ``wrt`` (activity, docs/activity.md) is asked
    for θ's cotangent only, [rev hand_objective (wrt theta)]: the model's data (the ragged
    skinning weights among it) gets no cotangent code, which is also what lets the
    compiled backend run it whole."""
    alg = algorithm(derivation)
    active = alg.convention.direction != "forward" and getattr(alg, "activity", False)
    derived = module.derive(alg.name, "hand_objective", wrt=("theta",) if active else None)
    args = data.arguments()
    ntheta, nrows = data.theta.size, 3 * data.points.shape[0]
    primal_type = derived.d.arg_type.elems[0]
    zero = to_python(zero_tangent_of(from_python(args, primal_type)))[1:]  # the model's: not differentiated

    def run() -> np.ndarray:
        if alg.convention.direction == "forward":
            columns = [alg.convention.tangent(derived(args, (e,) + zero)) for e in np.eye(ntheta)]
            return np.array([np.ravel(np.array(c, dtype=float)) for c in columns]).T
        rows = [derived(args, list(e.reshape(-1, 3))) for e in np.eye(nrows)]
        rows = rows if active else [r[0] for r in rows]
        return np.array(rows, dtype=float)
    return run_deep(run)


@dataclass
class HandResult:
    residuals: np.ndarray  # 3·npts
    jacobian: np.ndarray   # 3·npts x 26
    fd_max_error: float    # max |J - FD| / max(1, |J|, |FD|) over every entry
    derivation: str
    seconds: dict[str, float]

    @property
    def ok(self) -> bool:
        return self.fd_max_error < 1e-5

    def summary(self) -> list[str]:
        r, jac = self.residuals, self.jacobian
        return [
            f"residuals        {r.size} = 3 x {r.size // 3} points, sum of squares {float(r @ r):.17g}",
            "first residuals  " + " ".join(f"{v:.10g}" for v in r[:6]),
            f"jacobian         {jac.shape[0]} x {jac.shape[1]} (dense), |J|_F = {float(np.linalg.norm(jac)):.10g}"
            f"  ([{self.derivation} hand_objective])",
            "first row        " + " ".join(f"{v:.6g}" for v in jac[0, :8]) + " ...",
            f"finite-difference check of all {jac.size} entries: max relative error {self.fd_max_error:.1e}",
            "time             " + ", ".join(f"{k} {s:.2f} s" for k, s in self.seconds.items()),
        ]

    def write(self, datafile: str | Path, out_dir: str | Path, tool: str = "labrys") -> list[Path]:
        """ADBENCH.md §3.5: residuals one per line; J one row per line, tab-separated."""
        f_file, j_file = output_paths(datafile, out_dir, tool)
        f_file.write_text("".join(f"{v:.17g}\n" for v in self.residuals))
        j_file.write_text("".join("\t".join(f"{v:.17g}" for v in row) + "\n" for row in self.jacobian))
        return [f_file, j_file]


def fd_check(module: Module, data: HandInput, jac: np.ndarray, h: float = 1e-6) -> float:
    """Central differences of the residuals, one θ column at a time (26 columns
    for any npts, so every entry is checked)."""
    worst = 0.0
    for t in range(data.theta.size):
        step = h * max(1.0, abs(data.theta[t]))
        up, down = data.theta.copy(), data.theta.copy()
        up[t] += step
        down[t] -= step
        fd = (hand_residuals(module, data, up) - hand_residuals(module, data, down)) / (2 * step)
        worst = max(worst, float(np.max(np.abs(jac[:, t] - fd) / np.maximum(1.0, np.maximum(abs(jac[:, t]), abs(fd))))))
    return worst


def run_hand(path: str | Path, derivation: str = "fwd", backend: str | None = None) -> HandResult:
    data = read_hand(path)
    m = program("hand", backend)
    seconds: dict[str, float] = {}
    residuals = timed(seconds, "residuals", hand_residuals, m, data)
    jac = timed(seconds, "jacobian", hand_jacobian, m, data, derivation)
    fd = timed(seconds, "fd check", fd_check, m, data, jac)
    return HandResult(residuals, jac, fd, derivation, seconds)
