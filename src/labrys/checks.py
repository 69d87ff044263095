"""The numerics of checking a derivative: finite differences with an error
estimate, comparisons whose tolerance knows about cancellation, and the rule
that a non-finite number is never a pass (docs/verification.md).

Note [Tolerances that know about cancellation]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A fixed relative tolerance is wrong both ways.  When a derivative is the
difference of two large terms (``cos p - 1`` at p = 1e-5 is -5e-11 computed
from terms of size 1), double precision leaves it with a relative error of
1e-6, and a 1e-9 check cries wolf; when the function is tiny and its
rounding noise is not, central differences are all noise, and a fixed
tolerance passes anything.  So every comparison states the error the
arithmetic allows on that very point, and the check is
``|a - b| <= tol * max(|a|, |b|) + allowed``:

- finite differences are taken at two steps h and h/2; the extrapolation
  (4 D(h/2) - D(h)) / 3 is the estimate, and its error bound is
  |D(h) - D(h/2)| (truncation, plus the rounding noise that differs between
  the two steps) plus the rounding error of f over h: 8 eps max|f| / h, and
  6 / h times f's measured scatter (the largest residual of a quartic fitted
  to f at nine points of the step), which is what shows when f is small
  because it cancels;
- the dot-product test and the agreement between two algorithms compare
  sums: <rev(x, dy), dx> = sum_i rev_i dx_i against <dy, fwd(x, dx)> =
  sum_j dy_j fwd_j; the sums are held to tol times ‖rev‖‖dx‖ + ‖dy‖‖fwd‖
  (which bound sum_i |rev_i dx_i| and sum_j |dy_j fwd_j|, and also cover a
  tangent whose parts differ by 10^170, the small one lost in rounding
  inside the derivative), and each side's own rounding noise is measured by
  linearity (plus 64 eps ‖dx‖‖dy‖, the rounding of unit-size intermediate
  terms that cancel without a trace); a derivative is linear in its (co)tangent, so
  ``fwd(x, s dx) / s - fwd(x, dx)`` (s = 1/3, not a power of two) is pure
  rounding error, which shows the cancellation inside the derivative itself.
  That the derivative is linear is checked first, exactly: scaling by 4
  commutes with rounding, so ``fwd(x, 4 dx) / 4`` must equal ``fwd(x, dx)``.

Note [Differences that a finer step contradicts]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Two steps that agree can both be wrong: at x = 1e4 the step h·|x| = 0.1
turns sin (x²) through 2 000 radians, and D(h), D(h/2) alias to nearby,
equally wrong slopes.  So when a derivative disagrees with the differences,
they are taken again at a 10 times finer step (100, 1000, 10^4 times, until
one gives a verdict: at 1e4, steps 10 and 100 times finer are still
"rough").  If the finer differences contradict the first ones, the point
says nothing about the derivative: it is skipped ("finite differences
unreliable at x") and another is drawn.  If they confirm them, or no finer
step gives a verdict, the failure stands: a wrong derivative is wrong at
every step, so it cannot hide behind this.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .values import Inj, Sparse

EPS = float(np.finfo(float).eps)
STEP = 1e-5          # the first finite-difference step (relative to each Float's size, at least 1)
PROBE = 1.0 / 3.0    # the (co)tangent scale of the rounding probe (not a power of two)
NOISE_FACTOR = 32.0  # how many measured rounding errors a comparison allows
FD_FACTOR = 4.0      # how many estimated finite-difference errors a comparison allows
TINY = 1e-290        # below this, numbers are compared absolutely (x + h·dx underflows for a subnormal dx)


def floats(v: Any) -> np.ndarray:
    """The Float parts of a (tangent) value, flattened in a fixed order."""
    out: list[float] = []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, Sparse):
            x = x.dense()
        if isinstance(x, (bool, int, str, np.bool_, np.integer)):
            continue
        if isinstance(x, (float, np.floating)):
            out.append(float(x))
        elif isinstance(x, Inj):
            stack.append(x.value)
        elif isinstance(x, np.ndarray) and x.dtype != object:
            out.extend(float(e) for e in x.ravel())
        else:
            seq = list(x.ravel()) if isinstance(x, np.ndarray) else list(x)
            stack.extend(reversed(seq))
    return np.array(out, dtype=float)


def axpy(x: Any, h: float, d: Any) -> Any:
    """x + h·d for a primal x and a tangent d (Integer parts unchanged)."""
    if isinstance(x, (float, np.floating)):
        return float(x + h * d)
    if isinstance(x, (bool, int, str, np.bool_, np.integer)):
        return x
    if isinstance(x, tuple):
        return tuple(axpy(a, h, b) for a, b in zip(x, d))
    if isinstance(x, np.ndarray) and x.dtype != object:
        return x + h * np.asarray(d, dtype=float)
    if isinstance(x, Inj):
        return Inj(x.left, axpy(x.value, h, d.value))
    return [axpy(a, h, b) for a, b in zip(x, d)]


def scale_tangent(d: Any, x: Any) -> Any:
    """d with each Float part multiplied by the size of x's part (|x_i|, or 1 at 0),
    so that a step h·d moves every Float by the same relative amount."""
    if isinstance(x, (float, np.floating)):
        return float(d) * (abs(float(x)) or 1.0)
    if isinstance(x, (bool, int, str, np.bool_, np.integer)):
        return d
    if isinstance(x, tuple):
        return tuple(scale_tangent(a, b) for a, b in zip(d, x))
    if isinstance(x, np.ndarray) and x.dtype != object:
        return np.asarray(d, dtype=float) * np.where(x == 0, 1.0, np.abs(x))
    if isinstance(x, Inj):
        return Inj(x.left, scale_tangent(d.value, x.value))
    return [scale_tangent(a, b) for a, b in zip(d, x)]


def scale(d: Any, s: float) -> Any:
    """s·d for a tangent d."""
    if isinstance(d, (float, np.floating)):
        return float(d) * s
    if isinstance(d, (bool, int, str)):
        return d
    if isinstance(d, tuple):
        return tuple(scale(a, s) for a in d)
    if isinstance(d, np.ndarray) and d.dtype != object:
        return d * s
    if isinstance(d, Inj):
        return Inj(d.left, scale(d.value, s))
    return [scale(a, s) for a in d]


def finite(a: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(a)))


def non_finite(a: np.ndarray) -> str:
    """'nan' or 'inf' (the first non-finite number in a)."""
    bad = a[~np.isfinite(a)]
    return "nan" if np.isnan(bad[0]) else ("inf" if bad[0] > 0 else "-inf")


@dataclass
class Differences:
    """Central differences of f at x along d: the extrapolated estimate of
    J·d per Float of the result, and a bound on its error."""

    value: np.ndarray
    error: np.ndarray
    step: float
    noise: np.ndarray  # the rounding part of error


def finite_differences(f: Callable[[Any], Any], x: Any, d: Any, fx: np.ndarray,
                       step: float = STEP) -> Differences | str:
    """Differences at steps h and h/2 (Note [Tolerances that know about cancellation]),
    or why there are none: the function is not finite or not defined next to x
    ("finite differences undefined at x"), or has a kink at x (its one-sided
    slopes differ by the same amount at both steps).  When the two steps
    disagree by more than 1% (h is beyond the scale on which f is smooth, as
    for sin at 1e8), h shrinks a hundredfold, up to three times; if they
    never agree, there are none ("do not converge")."""
    coarser: Differences | None = None
    for k in range(4):
        got = _differences(f, x, d, fx, step * 100.0 ** -k)
        if isinstance(got, str):
            return got
        if got is None:  # smaller steps only make rounding worse
            return "finite differences undefined (f is rough at the scale of the step: rounding or oscillation)"
        if coarser is not None and not np.all(np.abs(got.value - coarser.value) <= 4 * (got.error + coarser.error)):
            # a smaller step that contradicts the larger one is rounding, not resolution
            # (1 + p² at p = 1e-8 rounds to 1 and f looks flat): no verdict here
            return "finite differences do not converge at x (a smaller step contradicts the larger one)"
        if bool(np.all(np.abs(got.error) <= 0.01 * np.abs(got.value) + 16 * got.noise)):
            return got
        coarser = got
    return "finite differences do not converge at x (f varies faster than any step resolves)"


def unconfirmed(f: Callable[[Any], Any], x: Any, d: Any, fx: np.ndarray, diffs: Differences) -> str:
    """Why ``diffs`` cannot be trusted, or "" (Note [Differences that a finer step contradicts]):
    the differences at the first of a 10, 100, 1000 or 10^4 times finer step that gives
    a verdict contradict them."""
    for k in (10.0, 100.0, 1e3, 1e4):
        finer = finite_differences(f, x, d, fx, diffs.step / k)
        if isinstance(finer, str):
            continue
        agree = np.abs(finer.value - diffs.value) <= FD_FACTOR * (finer.error + diffs.error) \
            + 1e-6 * np.maximum(np.abs(finer.value), np.abs(diffs.value)) + TINY
        return "" if bool(np.all(agree)) else \
            f"finite differences unreliable at x (a {k:g} times finer step contradicts them: f oscillates or rounds)"
    return ""


def _differences(f: Callable[[Any], Any], x: Any, d: Any, fx: np.ndarray, step: float) -> Differences | str | None:
    from .errors import LabrysError

    ks = (1.0, -1.0, 0.5, -0.5, 0.75, -0.75, 0.25, -0.25)
    try:
        ys = {k: floats(f(axpy(x, k * step, d))) for k in ks}
    except LabrysError as exc:
        return f"finite differences undefined (f fails next to x: {exc.message})"
    if any(y.shape != fx.shape for y in ys.values()):
        return "finite differences undefined (the result's size changes next to x)"
    if not all(finite(y) for y in ys.values()):
        return "finite differences undefined (f is not finite next to x)"
    d1 = (ys[1.0] - ys[-1.0]) / (2 * step)
    d2 = (ys[0.5] - ys[-0.5]) / step
    value = (4 * d2 - d1) / 3
    size = np.max(np.abs(np.stack([fx, *ys.values()])), axis=0) if fx.size else fx
    smooth_error = np.abs(d1 - d2) + 8 * EPS * size / step
    jump1 = (ys[1.0] - 2 * fx + ys[-1.0]) / step
    jump2 = (ys[0.5] - 2 * fx + ys[-0.5]) / (step / 2)
    kink = (np.abs(jump2) > 0.75 * np.abs(jump1)) & (np.abs(jump2) > 64 * smooth_error + 1e-8 * np.abs(value))
    if fx.size and bool(np.any(kink)):
        return "not differentiable at x (the one-sided slopes differ)"
    jitter = _rounding_noise(ks, ys, fx)
    change = np.maximum(np.abs(ys[1.0] - fx), np.abs(ys[-1.0] - fx))
    if not np.all(jitter <= 1e-3 * change + TINY):
        return None  # f is as rough within the step as it changes over it: h resolves nothing
    noise = 8 * EPS * size / step + 6 * jitter / step
    error = np.abs(d1 - d2) + noise
    if not finite(value) or not finite(error):
        return "finite differences undefined (they overflow at x)"
    return Differences(value, error, step, noise)


def _rounding_noise(ks: tuple, ys: dict, fx: np.ndarray) -> np.ndarray:
    """How much f's values scatter from rounding over the step: the largest
    residual of a least-squares quartic through f at the nine points of the
    step (a smooth f is a quartic there to 1e-25; what is left is rounding).
    When f is small because it cancels (sin p - p, log (1 + p²)), its
    rounding error is that of the terms, not eps·|f|, and only shows this way."""
    if not fx.size:
        return fx
    t = np.array((0.0, *ks))
    values = np.stack([fx, *(ys[k] for k in ks)]) - fx  # a constant f scatters by exactly 0
    coeffs, *_ = np.linalg.lstsq(np.vander(t, 5), values, rcond=None)
    return np.max(np.abs(values - np.vander(t, 5) @ coeffs), axis=0)


def linear(out: np.ndarray, scaled_back: np.ndarray) -> bool:
    """A derivative is linear in its (co)tangent, and scaling by a power of two
    commutes with every rounding: d(x, 4 v) / 4 equals d(x, v) exactly for
    derivative code; 1e-9 relative (the agreement tolerance) is allowed so that
    a derivation that is itself numerical (central differences, as the toy of
    tests/test_registry.py) passes.  A derivative that is not linear (a rule
    that divides by the cotangent) would otherwise pass off its nonlinearity
    as rounding noise in the 1/3 probe."""
    if out.shape != scaled_back.shape:
        return False
    if not finite(scaled_back):
        return True  # 4 v overflowed: no evidence either way
    scale = float(np.max(np.maximum(np.abs(out), np.abs(scaled_back)), initial=0.0))
    return bool(np.all(np.abs(out - scaled_back) <= 1e-9 * scale + TINY))


@dataclass
class Comparison:
    """The worst of a set of compared numbers: |a - b| and what was allowed."""

    error: float = 0.0
    allowed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error <= self.allowed

    @property
    def ratio(self) -> float:
        return self.error / self.allowed if self.allowed > 0 else (0.0 if self.error == 0 else math.inf)


def compare(a: np.ndarray, b: np.ndarray, tol: float, allowed: np.ndarray | float = 0.0) -> Comparison:
    """a against b elementwise: |a - b| <= tol·max(|a|, |b|) + allowed (+ TINY); the worst element."""
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    if a.size == 0:
        return Comparison()
    err = np.abs(a - b)
    bound = tol * np.maximum(np.abs(a), np.abs(b)) + np.broadcast_to(allowed, a.shape) + TINY
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1.0), np.where(err > 0, np.inf, 0.0))
    k = int(np.argmax(ratio))
    return Comparison(float(err[k]), float(bound[k]))


@dataclass
class Pairing:
    """One side of a dot-product or agreement test: the sum, the sum of the
    absolute values of its terms, and its measured rounding noise."""

    value: float
    magnitude: float
    noise: float


def pairing(u: np.ndarray, v: np.ndarray, probe_u: np.ndarray | None = None) -> Pairing:
    """<u, v>, its magnitude ‖u‖·‖v‖ (which bounds Σ|u_i v_i|, and also sees
    the parts of v that a derivative adds to much larger ones and loses: a
    tangent (1e-172, 1.5)), and the noise measured by the rounding probe
    (u computed from a scaled (co)tangent and scaled back)."""
    value = float(np.dot(u, v)) if u.size else 0.0
    noise = abs(float(np.dot(probe_u, v)) - value) if probe_u is not None and u.size else 0.0
    return Pairing(value, _norm(u) * _norm(v), noise)


def _norm(u: np.ndarray) -> float:
    """‖u‖₂ without underflow or overflow in the squares (parts of 1e-256 happen)."""
    top = float(np.max(np.abs(u), initial=0.0))
    return top * float(np.linalg.norm(u / top)) if top > 0 and math.isfinite(top) else top


def unit_rounding(dx: np.ndarray, dy: np.ndarray) -> float:
    """64 eps ‖dx‖‖dy‖: the rounding of intermediate terms of unit size, which
    the result cannot show when they cancel (sinh (p - p) at p = 1e-9: the
    derivative 1e-9 is what is left of 1 + 1e-9 - 1)."""
    return 64 * EPS * _norm(dx) * _norm(dy)


def compare_pairings(a: Pairing, b: Pairing, tol: float, floor: float = 0.0) -> Comparison:
    """The dot-product / agreement test: |a - b| <= tol·(‖a‖ + ‖b‖) + 32·(noise_a + noise_b) + floor (+ TINY)."""
    allowed = tol * (a.magnitude + b.magnitude) + NOISE_FACTOR * (a.noise + b.noise) + floor + TINY
    return Comparison(abs(a.value - b.value), allowed)
