"""Which LLVM floating-point flags a function of the ``compiled`` backend's generated module
(:mod:`.numba_source`) is compiled with.

    Γ ⊢ def f … ↦ @njit(…)                                  (the default: IEEE order, as the interpreter)
    Γ ⊢ def f … ↦ @njit(…, fastmath={reassoc, nsz, contract})   (fast math allowed, or a parallel sum's chunk)

Note [Reassociation on one thread]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A dot product ``Σ_c row[c] · z[c]`` is a loop-carried floating-point sum.
Without permission to reassociate, LLVM must add the terms one after the
other, in the interpreter's order, and emits scalar code (one ``vfmadd``/
``vaddsd`` per term, each waiting for the previous one); allowed to
reassociate, it keeps several partial sums in vector registers (4 doubles
per AVX2 register, several registers) and adds them at the end.  On GMM d64
K10 that is most of the gradient's time.  Two ways were considered:

- make inner reductions vectorisable without reassociation, by writing
  several accumulators in a fixed order into the generated code: results
  would not depend on a flag, but they would differ from the interpreter's
  just the same (it is a reassociation, fixed once), the generator would
  have to recognise which loops are pure reductions, and whether LLVM's SLP
  vectoriser then packs the unrolled accumulators depends on its cost model;
- let the user say that reassociation is allowed, and then give LLVM the
  flags that say so.

labrys does the second: ``labrys.grad(..., fast_math=True)``,
``m.derive(..., fast_math=True)``, :func:`labrys.set_fast_math`, the
CLI's ``--fast-math`` or ``LABRYS_FAST_MATH=1`` compile *every* function of
the generated module with ``reassoc`` (sums in any order), ``nsz`` (the
sign of a zero may differ) and ``contract`` (fused multiply-adds).  Never
``nnan``/``ninf``: NaN and infinities keep their IEEE meaning, a NaN in
the data still gives a NaN gradient, and ``max``/comparisons still see
them, so no answer changes beyond rounding.  The code is deterministic:
the order LLVM picks is fixed in the machine code, so the same inputs give
the same bits on every call (and on every thread count 1).  The default
stays off because the results then equal the interpreter's bit for bit,
which tests and users comparing backends rely on; a user who asks for
threads already allows reassociation in the threaded sum's chunks (Note
[Parallel reverse sums]).  The setting is part of the generated text, so
the compile cache keeps the two versions apart.
"""
from __future__ import annotations

from ..context import fast_math

FASTMATH = '{"reassoc", "nsz", "contract"}'  # LLVM's flags: no assumption of no NaN / no Inf


def decorator_flags(name: str, parallel: set[str], reassociated: set[str]) -> str:
    """The arguments after ``cache=…, error_model=…`` of function ``name``'s ``@njit``."""
    flags = ", parallel=True" if name in parallel else ""
    if fast_math() or name in reassociated:
        flags += f", fastmath={FASTMATH}"
    return flags + ")"
