"""ADBench workloads in `.ks` (ADBENCH.md): readers for the data files, the
objective and its derivative through any reverse derivation, and ADBench's
output files.  ``labrys adbench gmm FILE --deriv rev``."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from ..api import Module, load
from ..errors import LabrysError

PROBLEMS = ("gmm", "lstm")


@dataclass
class GmmInput:
    alphas: np.ndarray  # K
    means: np.ndarray   # K x d
    icf: np.ndarray     # K x d(d+1)/2
    x: np.ndarray       # n x d
    gamma: float
    m: int

    def arguments(self) -> tuple:
        """The arguments of gmm_objective: (x, alphas, means, icf, (gamma, m))."""
        return (list(self.x), self.alphas, list(self.means), list(self.icf), (self.gamma, self.m))


def read_blocks(path: str | Path, problem: str, header: str, sizes) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """An ADBench file: three integers (named by ``header``), then numbers in blocks
    whose lengths ``sizes(*integers)`` gives (line structure carries no information)."""
    try:
        tokens = Path(path).read_text().split()
        ints = tuple(int(t) for t in tokens[:3])
        nums = np.array(tokens[3:], dtype=float)
    except (OSError, ValueError) as exc:
        raise LabrysError(f"{path}: not an ADBench {problem} file ({exc})") from None
    lengths = sizes(*ints)
    if len(nums) != sum(lengths):
        raise LabrysError(f"{path}: expected {sum(lengths)} numbers after '{header}', found {len(nums)}")
    return ints, np.split(nums, np.cumsum(lengths)[:-1])


def read_gmm(path: str | Path) -> GmmInput:
    """ADBENCH.md §1.5 (full files: replicate_point = false)."""
    (d, k, n), parts = read_blocks(path, "GMM", "d K n",
                                   lambda d, k, n: [k, k * d, k * d * (d + 1) // 2, n * d, 2])
    return GmmInput(parts[0], parts[1].reshape(k, d), parts[2].reshape(k, -1), parts[3].reshape(n, d),
                    float(parts[4][0]), int(parts[4][1]))


def program(problem: str, backend: str | None = None) -> Module:
    if problem not in PROBLEMS:
        raise LabrysError(f"unknown ADBench problem '{problem}'; available: {', '.join(PROBLEMS)}")
    text = resources.files("labrys.adbench").joinpath(f"{problem}.ks").read_text(encoding="utf-8")
    return load(text, name=f"{problem}.ks", backend=backend)


@dataclass
class GmmResult:  # the result of every problem: objective, gradient (ADBench layout), FD check
    objective: float
    gradient: np.ndarray  # ADBench layout: alphas, means (row-major), icf (row-major)
    fd_relative_error: float


def run_gmm(path: str | Path, derivation: str = "rev", seed: int = 0, backend: str | None = None) -> GmmResult:
    data = read_gmm(path)
    m = program("gmm", backend)
    args = data.arguments()
    objective = m.gmm_objective(*args)
    back = m.derive(derivation, "gmm_objective")
    _, d_alphas, d_means, d_icf, _ = back(args, 1.0)
    gradient = np.concatenate([np.ravel(d_alphas), np.ravel(np.array(d_means)), np.ravel(np.array(d_icf))])
    sizes = np.cumsum([data.alphas.size, data.means.size])

    def at(t: float, v: np.ndarray) -> float:
        a, mu, q = np.split(v * t, sizes)
        moved = GmmInput(data.alphas + a, data.means + mu.reshape(data.means.shape),
                         data.icf + q.reshape(data.icf.shape), data.x, data.gamma, data.m)
        return m.gmm_objective(*moved.arguments())
    return GmmResult(objective, gradient, _directional_check(at, gradient, seed))


def write_outputs(path: str | Path, result: GmmResult, out_dir: str | Path, tool: str = "labrys") -> list[Path]:
    """ADBench's files: <basename>_F_<tool>.txt (objective) and _J_ (gradient), 17 digits."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    base = Path(path).stem
    f_file, j_file = out_dir / f"{base}_F_{tool}.txt", out_dir / f"{base}_J_{tool}.txt"
    f_file.write_text(f"{result.objective:.17g}\n")
    j_file.write_text("".join(f"{g:.17g}\n" for g in result.gradient))
    return [f_file, j_file]


@dataclass
class LstmInput:
    main: np.ndarray      # 2l x 4b
    extra: np.ndarray     # 3 x b
    state: np.ndarray     # 2l x b
    sequence: np.ndarray  # c x b

    def arguments(self) -> tuple:
        return tuple(list(a) for a in (self.main, self.extra, self.state, self.sequence))


def read_lstm(path: str | Path) -> LstmInput:
    """ADBENCH.md §4.5."""
    (l, c, b), (main, extra, state, seq) = read_blocks(path, "LSTM", "l c b",
                                                       lambda l, c, b: [8 * l * b, 3 * b, 2 * l * b, c * b])
    return LstmInput(main.reshape(2 * l, 4 * b), extra.reshape(3, b), state.reshape(2 * l, b), seq.reshape(c, b))


def run_lstm(path: str | Path, derivation: str = "rev", seed: int = 0, backend: str | None = None) -> GmmResult:
    data = read_lstm(path)
    m = program("lstm", backend)
    args = data.arguments()
    objective = m.lstm_objective(*args)
    d_main, d_extra, _, _ = m.derive(derivation, "lstm_objective")(args, 1.0)
    gradient = np.concatenate([np.ravel(np.array(d_main)), np.ravel(np.array(d_extra))])

    def at(t: float, v: np.ndarray) -> float:
        dm, de = np.split(v * t, [data.main.size])
        moved = LstmInput(data.main + dm.reshape(data.main.shape), data.extra + de.reshape(data.extra.shape),
                          data.state, data.sequence)
        return m.lstm_objective(*moved.arguments())
    return GmmResult(objective, gradient, _directional_check(at, gradient, seed))


def _directional_check(at, gradient: np.ndarray, seed: int, h: float = 1e-6) -> float:
    """Relative error of gradient·v against central differences (at(t, v) = f(x + t v))."""
    v = np.random.default_rng(seed).uniform(-1, 1, gradient.size)
    fd = (at(h, v) - at(-h, v)) / (2 * h)
    ad = float(gradient @ v)
    return abs(fd - ad) / max(abs(fd), abs(ad), 1e-12)


RUNNERS = {"gmm": run_gmm, "lstm": run_lstm}
