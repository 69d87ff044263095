"""The peers: one objective, written once against a NumPy-like namespace ``xp``,
run by NumPy, JAX (jit), PyTorch (eager, CPU) and HIPS autograd.

Each builder returns an :class:`Impl` whose calls return finished results (JAX's
are blocked on), with the gradient taken with respect to the arguments ``wrt``
(a tuple of argument positions).  ``jacobian=True`` asks for the Jacobian of a
vector-valued objective instead.  A framework that is not installed raises
ImportError, which the harness reports as "not installed".
"""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from labrys.bench.suite import Impl

Objective = Callable[..., Any]  # objective(xp, *args)


def numpy_impl(objective: Objective, args: tuple, gradient: Callable[..., Any] | None = None) -> Impl:
    """Plain NumPy; ``gradient(*args)`` where it is derived by hand."""
    return Impl(lambda: objective(np, *args), (lambda: gradient(*args)) if gradient else None)


def jax_impl(objective: Objective, args: tuple, wrt: tuple[int, ...], jacobian: bool = False) -> Impl:
    """``jax.jit(objective)`` and ``jax.jit(jax.grad(objective))`` on the CPU, in float64."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp

    xs = _arrays(args, wrt, jnp.asarray)
    static = tuple(k for k, a in enumerate(xs) if a is args[k])  # Python constants: part of the trace

    def f(*a: Any) -> Any:
        return objective(jnp, *a)
    value = jax.jit(f, static_argnums=static)
    if jacobian:
        jac = jax.jacrev(f, argnums=wrt)
        derivative = jax.jit(lambda *a: jnp.concatenate(jac(*a), axis=1), static_argnums=static)
    else:
        derivative = jax.jit(jax.grad(f, argnums=wrt), static_argnums=static)
    return Impl(lambda: jax.block_until_ready(value(*xs)), lambda: jax.block_until_ready(derivative(*xs)))


def torch_namespace() -> SimpleNamespace:
    """The part of NumPy's namespace the objectives use, from PyTorch."""
    import torch

    names = ["exp", "log", "sum", "einsum", "zeros_like", "squeeze", "stack", "tanh", "sqrt", "where", "cos", "sin",
             "reshape"]
    return SimpleNamespace(**{n: getattr(torch, n) for n in names}, max=torch.amax, concatenate=torch.cat)


def torch_impl(objective: Objective, args: tuple, wrt: tuple[int, ...], jacobian: bool = False) -> Impl:
    """Eager PyTorch on the CPU, float64: the objective under no_grad, the gradient by
    ``torch.autograd.grad`` (the Jacobian by ``torch.autograd.functional.jacobian``)."""
    import torch

    if os.environ.get("LABRYS_BENCH_THREADS"):
        torch.set_num_threads(int(os.environ["LABRYS_BENCH_THREADS"]))
    xp = torch_namespace()
    xs = _arrays(args, wrt, lambda a: torch.as_tensor(np.asarray(a)))

    def value() -> Any:
        with torch.no_grad():
            return objective(xp, *xs)

    def rest(leaves: tuple) -> tuple:
        full = list(xs)
        for k, leaf in zip(wrt, leaves):
            full[k] = leaf
        return tuple(full)

    def gradient() -> Any:
        leaves = tuple(xs[k].detach().requires_grad_(True) for k in wrt)
        return torch.autograd.grad(objective(xp, *rest(leaves)), leaves)

    def jac() -> Any:
        parts = torch.autograd.functional.jacobian(lambda *leaves: objective(xp, *rest(leaves)),
                                                   tuple(xs[k] for k in wrt))
        return torch.cat(parts, dim=1)
    return Impl(value, jac if jacobian else gradient)


def autograd_impl(objective: Objective, args: tuple, wrt: tuple[int, ...], jacobian: bool = False) -> Impl:
    """HIPS autograd: ``autograd.grad`` (or ``autograd.jacobian``) of the objective on autograd.numpy."""
    import autograd
    import autograd.numpy as anp

    def f(*a: Any) -> Any:
        return objective(anp, *a)
    if jacobian:
        jacs = [autograd.jacobian(f, argnum=k) for k in wrt]
        return Impl(lambda: f(*args), lambda: np.concatenate([j(*args) for j in jacs], axis=1))
    derivative = autograd.grad(f, argnum=wrt)
    return Impl(lambda: f(*args), lambda: derivative(*args))


def _arrays(args: tuple, wrt: tuple[int, ...], convert: Callable[[Any], Any]) -> tuple:
    """The arguments in a framework's array type: arrays and the differentiated ones;
    other scalars stay Python constants (so that JAX does not trace them)."""
    return tuple(convert(a) if k in wrt or isinstance(a, np.ndarray) else a for k, a in enumerate(args))


def peers(objective: Objective, args: tuple, wrt: tuple[int, ...], hand_gradient: Callable[..., Any] | None = None,
          jacobian: bool = False, jax_objective: Objective | None = None) -> dict[str, Callable[[], Impl]]:
    """The four peers of one objective, as factories (nothing is imported until one is called).
    ``jax_objective`` replaces the objective for JAX (e.g. a loop written with lax.scan)."""
    return {
        "NumPy": lambda: numpy_impl(objective, args, hand_gradient),
        "JAX (jit)": lambda: jax_impl(jax_objective or objective, args, wrt, jacobian),
        "PyTorch": lambda: torch_impl(objective, args, wrt, jacobian),
        "autograd": lambda: autograd_impl(objective, args, wrt, jacobian),
    }


def logsumexp(xp: Any, v: Any, axis: int) -> Any:
    """log Σ exp along ``axis``, shifted by the maximum so that it never underflows."""
    top = xp.max(v, axis=axis, keepdims=True)
    return xp.squeeze(top, axis) + xp.log(xp.sum(xp.exp(v - top), axis=axis))
