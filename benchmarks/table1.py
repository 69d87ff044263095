"""The four programs of Table 1 of Smeding & Vákár, "Efficient dual-numbers reverse AD via well-known
program transformations" (§11): objectives
for the peers, hand-derived gradients for NumPy, and the paper's inputs
((3, 4); [1..n]·[3, 5, 7, …]; a √n×√n matrix of
1, 2, 3, … row by row with the vector [3, 5, …]; v = (1, 2, 3), q = (4, 5, 6, 7)).

The paper reports time per unit of n: per gradient for scalar multiplication
and rotate_vec_by_quat (the full 3×7 Jacobian: one reverse pass per output),
per element for the dot product, per matrix entry for sum-mat-vec.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from labrys.bench.suite import Instance, LabrysProgram, Workload

from .frameworks import peers

PROGRAM = Path(__file__).with_name("table1.ks")
DOT_N = {"full": 10_000, "quick": 100, "probe": 100}
SIDE = {"full": 100, "quick": 10, "probe": 10}  # sum-mat-vec: a SIDE×SIDE matrix, n = SIDE²


def scalar_mult(xp, x, y):
    return x * y


def dot(xp, u, v):
    return xp.sum(u * v)


def sum_mat_vec(xp, m, v):
    return xp.sum(m @ v)


def cross(xp, a, b):
    return xp.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def rotate_vec_by_quat(xp, v, q):
    """2 (u·v) u + (s² − u·u) v + 2 s (u × v), with u = q[0:3], s = q[3]."""
    u, s = q[:3], q[3]
    return 2.0 * xp.sum(u * v) * u + (s * s - xp.sum(u * u)) * v + 2.0 * s * cross(xp, u, v)


def rotate_jacobian(v, q):
    """The 3×7 Jacobian of rotate_vec_by_quat by hand: columns v (3), then q (4)."""
    u, s = q[:3], q[3]

    def skew(a):  # skew(a) @ b = a × b
        return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    d_v = 2 * np.outer(u, u) + (s * s - u @ u) * np.eye(3) + 2 * s * skew(u)
    d_u = 2 * (u @ v) * np.eye(3) + 2 * np.outer(u, v) - 2 * np.outer(v, u) - 2 * s * skew(v)
    d_s = 2 * s * v + 2 * np.cross(u, v)
    return np.hstack([d_v, d_u, d_s[:, None]])


def _instance(function: str, args: tuple, labrys_args: tuple, objective, hand_gradient, description: str,
              per_unit: tuple[int, str], jacobian: bool = False) -> Instance:
    cotangents = tuple(tuple(float(i == j) for j in range(3)) for i in range(3)) if jacobian else (1.0,)
    return Instance(description, LabrysProgram(PROGRAM, function, labrys_args, cotangents=cotangents),
                    peers(objective, args, tuple(range(len(args))), hand_gradient, jacobian), per_unit[0],
                    per_unit[1] + "s", per_unit)


def make_scalar_mult(data: Path, size: str) -> Instance:
    return _instance("scalar_mult", (3.0, 4.0), (3.0, 4.0), scalar_mult, lambda x, y: (y, x),
                     "x = 3, y = 4", (1, "gradient"))


def make_dot(data: Path, size: str) -> Instance:
    n = DOT_N[size]
    u, v = np.arange(1.0, n + 1), np.arange(3.0, 2 * n + 3, 2)
    return _instance("dot", (u, v), (u, v), dot, lambda u, v: (v, u), f"n = {n}", (n, "element"))


def make_sum_mat_vec(data: Path, size: str) -> Instance:
    k = SIDE[size]
    m, v = np.arange(1.0, k * k + 1).reshape(k, k), np.arange(3.0, 2 * k + 3, 2)
    return _instance("sum_mat_vec", (m, v), (list(m), v), sum_mat_vec,
                     lambda m, v: (np.broadcast_to(v, m.shape), m.sum(axis=0)),
                     f"{k}×{k} matrix, n = {k * k}", (k * k, "matrix entry"))


def make_rotate(data: Path, size: str) -> Instance:
    v, q = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0, 7.0])
    return _instance("rotate_vec_by_quat", (v, q), (tuple(v), tuple(q)), rotate_vec_by_quat, rotate_jacobian,
                     "v = (1, 2, 3), q = (4, 5, 6, 7); the 3×7 Jacobian", (1, "Jacobian"), jacobian=True)


# Table 1's published times per unit of n (µs): the paper's implementation (TH) and Kmett's ad library
WORKLOADS = [
    Workload("scalar_mult", "Scalar multiplication (Table 1)", make_scalar_mult, ("table1",),
             {"TH": 0.146, "ad": 0.536}),
    Workload("dot", "Dot product (Table 1)", make_dot, ("table1",), {"TH": 2.21, "ad": 2.07}),
    Workload("sum_mat_vec", "Sum of a matrix–vector product (Table 1)", make_sum_mat_vec, ("table1",),
             {"TH": 2.05, "ad": 1.32}),
    Workload("rotate_vec_by_quat", "rotate_vec_by_quat (Table 1)", make_rotate, ("table1",),
             {"TH": 8.77, "ad": 6.13}),
]
