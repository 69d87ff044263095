"""ADBench workloads in `.ks` (ADBENCH.md): readers for the data files, the
objective and its derivative through any reverse derivation, and ADBench's
output files.  ``labrys adbench gmm FILE --deriv rev``."""
from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from ..ad import REGISTRY
from ..ad.default_gradient import default_gradient
from ..ad.derivation import Derivation
from ..api import Module, load
from ..errors import LabrysError

PROBLEMS = ("gmm", "lstm", "ba", "hand")


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
    """An ADBench file: integers named by ``header`` ("d K n"), then numbers in blocks
    whose lengths ``sizes(*integers)`` gives (line structure carries no information)."""
    count = len(header.split())
    try:
        tokens = Path(path).read_text().split()
        if len(tokens) < count:
            raise ValueError(f"no '{header}' line")
        ints = tuple(int(t) for t in tokens[:count])
        nums = np.array(tokens[count:], dtype=float)
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


def timed(seconds: dict[str, float], name: str, fn, *args):
    """``fn(*args)``, recording its wall-clock time as ``seconds[name]``."""
    clock = time.perf_counter()
    value = fn(*args)
    seconds[name] = time.perf_counter() - clock
    return value


def algorithm(derivation: str, directions: tuple[str, ...] = ("forward", "reverse")) -> Derivation:
    """The registered derivation --deriv NAME: a Jacobian takes forward- or reverse-like
    derivations, a gradient (directions=("reverse",)) only reverse-like ones."""
    known = [n for d in directions for n in REGISTRY.names(d)]
    if derivation in known:
        return REGISTRY.get(derivation)
    what = "a gradient needs a reverse derivation" if directions == ("reverse",) else \
        "a Jacobian needs a forward or reverse derivation"
    raise LabrysError(f"--deriv: {what} ({', '.join(known)}), not '{derivation}'")


def program(problem: str, backend: str | None = None) -> Module:
    if problem not in PROBLEMS:
        raise LabrysError(f"unknown ADBench problem '{problem}'; available: {', '.join(PROBLEMS)}")
    text = resources.files("labrys.adbench").joinpath(f"{problem}.ks").read_text(encoding="utf-8")
    return load(text, name=f"{problem}.ks", backend=backend)


@dataclass
class GmmResult:  # the result of a scalar objective (GMM, LSTM): objective, gradient, FD check
    objective: float
    gradient: np.ndarray  # ADBench layout: alphas, means (row-major), icf (row-major)
    fd_relative_error: float
    method: str = ""      # the reverse derivation that made the gradient, and why (the default's reason)
    why: str = ""

    @property
    def ok(self) -> bool:
        return self.fd_relative_error < 1e-5

    def summary(self) -> list[str]:
        by = [f"gradient by      {self.method}" + (f" (the default gradient: {self.why})" if self.why else "")]
        return [f"objective        {self.objective:.17g}", *(by if self.method else []),
                f"gradient         {len(self.gradient)} entries, |g| = {float((self.gradient ** 2).sum()) ** 0.5:.10g}",
                "first entries    " + " ".join(f"{g:.10g}" for g in self.gradient[:6]),
                "finite-difference check along a random direction: "
                f"relative error {self.fd_relative_error:.1e}"]

    def write(self, path: str | Path, out_dir: str | Path) -> list[Path]:
        return write_outputs(path, self, out_dir)


GMM_ACTIVE, LSTM_ACTIVE = ("alphas", "means", "icf"), ("main_params", "extra_params")


def gradient_method(m: Module, fn: str, derivation: str | None, wrt: bool = False) -> tuple[str, str]:
    """The reverse derivation --deriv names, or the default gradient of fn and why
    (Note [The default gradient]); with ``wrt`` (a ``rev`` option), ``rev``."""
    if derivation is not None or wrt:
        return algorithm(derivation or "rev", ("reverse",)).name, ""
    choice = default_gradient(m.derivations, m.function(fn).sigs[0])
    return choice.method, choice.reason


def run_gmm(path: str | Path, derivation: str | None = None, seed: int = 0, backend: str | None = None,
            wrt: bool = False) -> GmmResult:
    """``wrt``: the derivative with respect to the parameters only, [rev gmm_objective (wrt alphas means icf)]."""
    data = read_gmm(path)
    m = program("gmm", backend)
    args = data.arguments()
    objective = m.gmm_objective(*args)
    method, why = gradient_method(m, "gmm_objective", derivation, wrt)
    back = m.derive(method, "gmm_objective", wrt=GMM_ACTIVE if wrt else None)
    d_alphas, d_means, d_icf = back(args, 1.0) if wrt else back(args, 1.0)[1:4]
    gradient = np.concatenate([np.ravel(d_alphas), np.ravel(np.array(d_means)), np.ravel(np.array(d_icf))])
    sizes = np.cumsum([data.alphas.size, data.means.size])

    def at(t: float, v: np.ndarray) -> float:
        a, mu, q = np.split(v * t, sizes)
        moved = GmmInput(data.alphas + a, data.means + mu.reshape(data.means.shape),
                         data.icf + q.reshape(data.icf.shape), data.x, data.gamma, data.m)
        return m.gmm_objective(*moved.arguments())
    return GmmResult(objective, gradient, _directional_check(at, gradient, seed), method, why)


def output_paths(path: str | Path, out_dir: str | Path, tool: str = "labrys") -> tuple[Path, Path]:
    """ADBench's file names (§5): <basename>_F_<tool>.txt (objective) and _J_ (derivative)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    base = Path(path).stem
    return out_dir / f"{base}_F_{tool}.txt", out_dir / f"{base}_J_{tool}.txt"


def write_outputs(path: str | Path, result: GmmResult, out_dir: str | Path, tool: str = "labrys") -> list[Path]:
    """ADBench's files for a scalar objective: the value and the gradient, 17 digits."""
    f_file, j_file = output_paths(path, out_dir, tool)
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
    (layers, c, b), (main, extra, state, seq) = read_blocks(
        path, "LSTM", "l c b", lambda layers, c, b: [8 * layers * b, 3 * b, 2 * layers * b, c * b])
    return LstmInput(main.reshape(2 * layers, 4 * b), extra.reshape(3, b), state.reshape(2 * layers, b),
                     seq.reshape(c, b))


def run_lstm(path: str | Path, derivation: str | None = None, seed: int = 0, backend: str | None = None,
             wrt: bool = False) -> GmmResult:
    """``wrt``: with respect to the parameters only, [rev lstm_objective (wrt main_params extra_params)]."""
    data = read_lstm(path)
    m = program("lstm", backend)
    args = data.arguments()
    objective = m.lstm_objective(*args)
    method, why = gradient_method(m, "lstm_objective", derivation, wrt)
    back = m.derive(method, "lstm_objective", wrt=LSTM_ACTIVE if wrt else None)
    d_main, d_extra = back(args, 1.0) if wrt else back(args, 1.0)[:2]
    gradient = np.concatenate([np.ravel(np.array(d_main)), np.ravel(np.array(d_extra))])

    def at(t: float, v: np.ndarray) -> float:
        dm, de = np.split(v * t, [data.main.size])
        moved = LstmInput(data.main + dm.reshape(data.main.shape), data.extra + de.reshape(data.extra.shape),
                          data.state, data.sequence)
        return m.lstm_objective(*moved.arguments())
    return GmmResult(objective, gradient, _directional_check(at, gradient, seed), method, why)


def _directional_check(at, gradient: np.ndarray, seed: int, h: float = 1e-6) -> float:
    """Relative error of gradient·v against central differences (at(t, v) = f(x + t v))."""
    v = np.random.default_rng(seed).uniform(-1, 1, gradient.size)
    fd = (at(h, v) - at(-h, v)) / (2 * h)
    ad = float(gradient @ v)
    return abs(fd - ad) / max(abs(fd), abs(ad), 1e-12)


from .ba import read_ba, run_ba  # noqa: E402  (ba.py and hand.py use the helpers above)
from .hand import read_hand, run_hand  # noqa: E402

# problem -> (path, derivation or None for the problem's default, backend) -> result
RUNNERS = {"gmm": lambda path, deriv=None, backend=None, wrt=False: run_gmm(path, deriv, backend=backend, wrt=wrt),
           "lstm": lambda path, deriv=None, backend=None, wrt=False: run_lstm(path, deriv, backend=backend, wrt=wrt),
           "ba": lambda path, deriv=None, backend=None: run_ba(path, deriv or "rev", backend=backend),
           "hand": lambda path, deriv=None, backend=None: run_hand(path, deriv or "fwd", backend=backend)}
__all__ = ["read_ba", "read_gmm", "read_hand", "read_lstm", "run_ba", "run_gmm", "run_hand", "run_lstm",
           "write_outputs", "RUNNERS"]
