"""The prelude: every primitive of LANGUAGE.md §5 as one registry entry."""
from . import arith, tangents, maths, vectors, loops, misc, knossos, linear_maps, deltas, dual_io  # noqa: F401  (registration)
from .registry import PRIMITIVES, Primitive, lookup  # noqa: F401
