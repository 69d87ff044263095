"""The prelude: every primitive of docs/reference.md §5 as one entry of the primitive
table (:mod:`labrys.types.primitives`)."""
from ..types.primitives import PRIMITIVES, Primitive, lookup  # noqa: F401
from . import arith, knossos, knossos_linear, linear_maps, loops, maths, misc, sparse_build, tangents, vectors  # noqa: F401  (registration)
