"""Sparse cotangents of vectors whose elements are not reals, for CHAD's run time
(Vákár & Smeding, CHAD, §9's lowering): with dense ones a gather
``build n (λi. index i xs)`` would cost a one-hot per element, O(n²).

Note [Sparse one-hots of any element type]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``index``'s transpose makes a one-hot, ``chadOneHot xs i w``.  For a vector of
reals it is the shared :class:`~labrys.values.DeltaVec` (Note [Sparse
cotangents]).  For a vector of anything else — the rows of a matrix
``Vec (Vec Float)``, a vector of tuples — it used to be a dense vector of n
symbolic zeros with w at i, so each ``(index i x)`` in a loop over the n rows
made an n-element cotangent and its ``+`` walked all n: O(n²) for a loop that
reads every row once.  That was the super-linear part of ``chadrev`` on
ADBench's GMM (its ``(index i x)`` per data point): the ratio to the primal
grew from 4.7 to 6.4 between n = 16 and 128.

Here such a one-hot is a leaf of an append tree, :class:`OneHots`: adding two of
them, or one to a dense vector, is O(1) (a new node), and the tree is
materialised once, with an explicit stack, when something needs the values
(``chadIndex``, ``chadSumVec``, ``chadDense``, a dense ``+``): every entry is
added at its index with the element type's own ``+`` — so the elements may be
the symbolic zero, copowers or sparse themselves.  Like ``DeltaVec`` it is a
:class:`~labrys.values.Sparse`, so ``dense()`` everywhere understands it and
the op meter charges its ``+`` 1.  Materialising is O(n + entries) and, as for
``DeltaVec`` sums, not metered; it happens once per read of the values (GMM reads
the data's cotangent once, in ``chadDense``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..values import Sparse, dense, make_vec


class OneHots(Sparse):
    """A vector shaped like ``shape`` that is the sum of its leaves (index, value) and of
    its dense parts; ``left``/``right`` are OneHots, dense vectors, or None for a leaf."""

    __slots__ = ("_shape", "index", "value", "left", "right", "elem", "zero", "plus", "_dense")

    def __init__(self, shape: tuple[int, ...], elem, zero: Any, plus: Callable[[Any, Any], Any],
                 index: Any = None, value: Any = None, left: Any = None, right: Any = None) -> None:
        self._shape, self.elem, self.zero, self.plus = shape, elem, zero, plus
        self.index, self.value, self.left, self.right = index, value, left, right
        self._dense = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    def cat(self, other: Any) -> "OneHots":
        """self + other in O(1) (other a OneHots or a dense vector of the same shape)."""
        return OneHots(self._shape, self.elem, self.zero, self.plus, left=self, right=other)

    def dense(self) -> Any:
        if self._dense is None:
            n = 1
            for k in self._shape:
                n *= k
            out = make_vec(self.elem, [self.zero] * n, self._shape)
            stack: list[Any] = [self]
            while stack:  # no host recursion however deep the tree
                x = stack.pop()
                if isinstance(x, OneHots) and x._dense is not None:
                    x = x._dense
                if isinstance(x, OneHots):
                    if x.left is None:
                        out[x.index] = self.plus(out[x.index], x.value)
                    else:
                        stack.append(x.right)
                        stack.append(x.left)
                else:
                    for idx, v in zip(_indices(self._shape), dense(x).flat):
                        out[idx] = self.plus(out[idx], v)
            self._dense = out
        return self._dense


def _indices(shape: tuple[int, ...]):
    if len(shape) == 1:
        return range(shape[0])
    return np.ndindex(*shape)
