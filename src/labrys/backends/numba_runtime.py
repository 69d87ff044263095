"""Helpers of the code the ``compiled`` backend generates.  They are compiled
as an entry of labrys's cache (Note [Compile cache]), checked like the
generated modules, and given to each of them as globals: never through a
Numba cache in the package's own folder, which may be read-only or damaged."""
import inspect


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


def _shaped(_x, _like):
    """_x, checked to have _like's shape (NumPy would broadcast a size-1 axis)."""
    if _x.shape != _like.shape:
        raise ValueError("tensor sizes differ")
    return _x


NAMES = ("_idiv", "_checkindex", "_extremum", "_argextremum", "_shaped")


def source() -> str:
    """The helpers as the module the cache compiles once per cache folder (Note [Compile cache])."""
    return "from numba import njit as _njit\n" + "".join(
        f"\n\n@_njit(cache=_cache)\n{inspect.getsource(globals()[name])}" for name in NAMES)
