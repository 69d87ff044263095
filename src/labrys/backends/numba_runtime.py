"""Helpers of the code the ``compiled`` backend generates.  They are compiled
as an entry of labrys's cache (Note [Compile cache]), checked like the
generated modules, and given to each of them as globals: never through a
Numba cache in the package's own folder, which may be read-only or damaged."""
import inspect

import numpy as _np

from . import numba_contrib_runtime as _contrib  # dualrev's Contribs and deltarev2's eval₂ on that tape
from . import numba_dualrev_runtime as _staged  # the stages D¹–D⁵ (Note [Staged maps in compiled code])
from . import numba_tape_runtime as _tape  # dualrevtape's tape (Note [The tape as arrays]), compiled with these


def _idiv(_a, _b):
    if _b == 0:
        raise ZeroDivisionError("Integer division by zero")
    _q = abs(_a) // abs(_b)
    return _q if (_a >= 0) == (_b >= 0) else -_q


def _checkindex(_i, _n):
    if _i < 0 or _i >= _n:
        raise IndexError("index out of range")
    return _i


def _extremum(_v, _largest):
    """The largest (or smallest) element of a Vec Float; NaN wins, as in the interpreter."""
    if _v.shape[0] == 0:
        raise ValueError("max or min of an empty vector")
    _m = _v[0]
    for _k in range(1, _v.shape[0]):
        _x = _v[_k]
        if (_x > _m if _largest else _x < _m) or _x != _x:
            _m = _x
    return _m


def _argextremum(_v, _largest):
    """The index of the first largest (or smallest) element; of the first NaN if any (NumPy's argmax)."""
    if _v.shape[0] == 0:
        raise ValueError("imax or imin of an empty vector")
    _best = 0
    for _k in range(_v.shape[0]):
        _x = _v[_k]
        if _x != _x:
            return _k
        if _x > _v[_best] if _largest else _x < _v[_best]:
            _best = _k
    return _best


def _ranhashdoub(_seed):
    """The Knossos runtime's hash of an Integer scaled to [0, 1), bit for bit as
    ``labrys.prelude.misc.ranhashdoub`` (unsigned 64-bit arithmetic wraps)."""
    _v = _np.uint64(_seed & 0x7FFFFFFFFFFFFFFF) | (_np.uint64(0x8000000000000000) if _seed < 0 else _np.uint64(0))
    _v = _v * _np.uint64(3935559000370003845)
    _v = _v + _np.uint64(2691343689449507681)
    _v ^= _v >> _np.uint64(21)
    _v ^= _v << _np.uint64(37)
    _v ^= _v >> _np.uint64(4)
    _v = _v * _np.uint64(4768777513237032717)
    _v ^= _v << _np.uint64(20)
    _v ^= _v >> _np.uint64(41)
    _v ^= _v << _np.uint64(5)
    return 5.42101086242752217e-20 * float(_v)


def _shaped(_x, _like):
    """_x, checked to have _like's shape (NumPy would broadcast a size-1 axis)."""
    if _x.shape != _like.shape:
        raise ValueError("tensor sizes differ")
    return _x


def _digamma(_x):
    """ψ(x), as labrys.prelude.maths.digamma: reflection for x < 0, the recurrence up to
    x ≥ 10, then the asymptotic series (CHAD's tangent of lgamma calls it)."""
    if _x != _x or _x == -_np.inf or (_x <= 0.0 and _x == _np.floor(_x)):
        return _np.nan
    _acc = 0.0
    if _x < 0.0:  # ψ(x) = ψ(1-x) - π cot(πx)
        _acc = -_np.pi / _np.tan(_np.pi * _x)
        _x = 1.0 - _x
    while _x < 10.0:
        _acc -= 1.0 / _x
        _x += 1.0
    _f = 1.0 / (_x * _x)
    _series = _f * (1 / 12 - _f * (1 / 120 - _f * (1 / 252 - _f * (1 / 240 - _f * (1 / 132)))))
    return _acc + _np.log(_x) - 0.5 / _x - _series


def _matvec(_m, _v):
    """M v for a float64 matrix (Tensor 2 Float, or a rectangular Vec (Vec Float)) and vector, as
    labrys.prelude.arith's mul; a size mismatch raises (the python backend then reports it)."""
    if _m.shape[1] != _v.shape[0]:
        raise ValueError("mul: matrix and vector sizes differ")
    _out = _np.zeros(_m.shape[0])
    for _i in range(_m.shape[0]):
        _acc = 0.0
        for _j in range(_m.shape[1]):
            _acc += _m[_i, _j] * _v[_j]
        _out[_i] = _acc
    return _out


def _matvec_t(_m, _r):
    """Mᵀ r (matvec_T: the reverse of mul of a matrix and a vector)."""
    if _m.shape[0] != _r.shape[0]:
        raise ValueError("matvec_T: matrix and vector sizes differ")
    _out = _np.zeros(_m.shape[1])
    for _i in range(_m.shape[0]):
        for _j in range(_m.shape[1]):
            _out[_j] += _m[_i, _j] * _r[_i]
    return _out


def _outer(_u, _v):
    """u vᵀ as a Tensor 2 Float (outer)."""
    _out = _np.empty((_u.shape[0], _v.shape[0]))
    for _i in range(_u.shape[0]):
        for _j in range(_v.shape[0]):
            _out[_i, _j] = _u[_i] * _v[_j]
    return _out


def _constrows(_n, _v):
    """constVec n v of a Vec Float v: an (n, len v) array of copies (labrys.prelude.vectors)."""
    if _n < 0:
        raise ValueError("constVec of a negative size")
    _out = _np.empty((_n, _v.shape[0]))
    for _i in range(_n):
        _out[_i, :] = _v
    return _out


def _grow(_a, _used, _need, _hint):
    """_a, or a larger copy of its first _used entries with room for _need (at least _hint
    entries, or twice _a's): Note [Nested struct of arrays] in numba_nested.py."""
    if _need <= _a.shape[0]:
        return _a
    _b = _np.empty(max(2 * _a.shape[0], _need, _hint), _a.dtype)
    _b[:_used] = _a[:_used]
    return _b


NAMES = ("_idiv", "_checkindex", "_extremum", "_argextremum", "_ranhashdoub", "_shaped", "_digamma",
         "_grow", "_matvec", "_matvec_t", "_outer", "_constrows") + _tape.NAMES + _contrib.NAMES + _staged.NAMES


def source() -> str:
    """The helpers as the module the cache compiles once per cache folder (Note [Compile cache])."""
    preamble = "import numpy as _np\nfrom numba import njit as _njit\n" + _tape.CONSTANTS + _tape.IMPORTS
    return preamble + _staged.PREAMBLE + "".join(
        f"\n\n@_njit(cache=_cache)\n{inspect.getsource(_helper(name))}" for name in NAMES)


def _helper(name: str):
    return globals().get(name) or getattr(_tape, name, None) or getattr(_contrib, name, None) or getattr(_staged, name)
