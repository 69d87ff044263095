"""The prelude: every primitive of LANGUAGE.md §5 as one registry entry."""
from . import arith, maths, vectors, misc, knossos, linear_maps  # noqa: F401  (registration)
from .registry import PRIMITIVES, Primitive, lookup  # noqa: F401
