"""The prelude: every primitive of LANGUAGE.md §5 as one entry of the primitive
table (:mod:`labrys.types.primitives`)."""
from . import arith, tangents, maths, vectors, loops, misc, knossos, linear_maps  # noqa: F401  (registration)
from ..types.primitives import PRIMITIVES, Primitive, lookup  # noqa: F401
