"""Helpers of the code the ``compiled`` backend generates (compiled by Numba
once, cached with the package's other Numba code)."""
from numba import njit as _njit


@_njit(cache=True)
def _idiv(_a, _b):
    if _b == 0:
        raise ZeroDivisionError("Integer division by zero")
    _q = abs(_a) // abs(_b)
    return _q if (_a >= 0) == (_b >= 0) else -_q


@_njit(cache=True)
def _checkindex(_i, _n):
    if _i < 0 or _i >= _n:
        raise IndexError("index out of range")
    return _i


@_njit(cache=True)
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


@_njit(cache=True)
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


@_njit(cache=True)
def _shaped(_x, _like):
    """_x, checked to have _like's shape (NumPy would broadcast a size-1 axis)."""
    if _x.shape != _like.shape:
        raise ValueError("tensor sizes differ")
    return _x
