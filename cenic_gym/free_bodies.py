"""Dynamics of systems made only of free bodies, in closed form (numba): no Pinocchio call per state.

A system qualifies (:func:`free_body_joints`) when every joint is a root free body
(:func:`~cenic_gym.model.free_body_joint` attached to the world with an identity placement): drops, stacks, clutter.
For such a system the integrator runs its whole step loop in one compiled call
(:func:`cenic_gym.cenic.advance_free_bodies`), where Pinocchio would otherwise be called twice per attempted step.

Body j, with q = [p (m, world), quaternion (x, y, z, w)], v = [ṗ (m/s, world), ω (rad/s, body frame)], mass m [kg],
centre of mass c (m, body frame) and rotational inertia I_c (kg m², about the centre of mass, body frame), R the
rotation of its quaternion, [a]× the cross-product matrix and g the gravity vector (m/s², world):

* world Jacobian (Pinocchio's ``data.J``: rows [v_O; ω] with v_O the velocity of the body point at the world
  origin): J = [[1, [p]× R], [0, R]];
* mass matrix: M = [[m 1, −m R [c]×], [m [c]× Rᵀ, I_O]] with I_O = I_c − m [c]×[c]× (the inertia about the body
  origin), plus the joints' armature on the diagonal;
* bias k(q, v) (Pinocchio's ``nonLinearEffects``, Newton–Euler about the body origin with q̈ = 0):
  k_p = m R (ω × (ω × c)) − m g,  k_ω = ω × (I_O ω) − m c × (Rᵀ g).

Equal to Pinocchio's ``crba`` (WORLD convention), ``nonLinearEffects`` and joint Jacobians to round-off
(tests/test_free_bodies.py).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .model import JOINT_ROOT_FREE, quat_to_rot
from .narrowphase import numba_supports


def free_body_joints(system):
    """True when every joint of ``system`` (a :class:`~cenic_gym.model.MultibodySystem`) is a root free body and every
    candidate geometry pair is one the numba narrow phase handles (no coal call per query): the systems whose step
    loop can run compiled (:func:`cenic_gym.cenic.advance_free_bodies`)."""
    kinds = system.joint_kind[1:]
    if kinds.shape[0] == 0 or not np.all(kinds == JOINT_ROOT_FREE):
        return False
    t = system.geom_type
    return all(numba_supports(int(t[a]), int(t[b])) for a, b in system.pairs)


def free_body_parameters(model):
    """The inertial parameters of a free-body system's Pinocchio ``model`` as the arrays :func:`free_body_dynamics`
    reads: (q index (n,), v index (n,), mass (n,) [kg], centre of mass (n, 3) [m, body frame], rotational inertia
    about it (n, 3, 3) [kg m², body frame], armature (nv,), gravity (3,) [m/s², world])."""
    joints = range(1, model.njoints)
    inertias = [model.inertias[j] for j in joints]
    return (np.array([model.idx_qs[j] for j in joints], dtype=np.int64),
            np.array([model.idx_vs[j] for j in joints], dtype=np.int64),
            np.array([I.mass for I in inertias], dtype=float),
            np.array([I.lever for I in inertias], dtype=float).reshape(-1, 3),
            np.array([I.inertia for I in inertias], dtype=float).reshape(-1, 3, 3),
            np.array(model.armature, dtype=float),
            np.array(model.gravity.linear, dtype=float))


@njit(cache=True)
def free_body_dynamics(q, v, params, Jw, M, bias):
    """World Jacobians Jw (6, nv), mass matrix M (nv, nv) and bias k(q, v) (nv,) [N, N m] of a free-body system at
    (q, v), from ``params`` (:func:`free_body_parameters`), in the formulas of the module docstring. Writes the 6 x 6
    diagonal blocks of M (the caller keeps the rest zero) and every entry of Jw's bodies' columns and of bias."""
    idx_q, idx_v, mass, com, inertia, armature, g = params
    R = np.empty((3, 3))
    IO = np.empty((3, 3))
    for j in range(idx_q.shape[0]):
        a, b = idx_q[j], idx_v[j]
        # the rotation Pinocchio builds from the raw quaternion (no normalisation)
        quat_to_rot(q[a + 3], q[a + 4], q[a + 5], q[a + 6], R, False)
        px, py, pz = q[a], q[a + 1], q[a + 2]
        m = mass[j]
        cx, cy, cz = com[j, 0], com[j, 1], com[j, 2]
        # Jacobian: [[1, [p]x R], [0, R]]
        for i in range(3):
            for k in range(3):
                Jw[i, b + k] = 1.0 if i == k else 0.0
                Jw[3 + i, b + k] = 0.0
                Jw[3 + i, b + 3 + k] = R[i, k]
        for k in range(3):
            Jw[0, b + 3 + k] = py * R[2, k] - pz * R[1, k]
            Jw[1, b + 3 + k] = pz * R[0, k] - px * R[2, k]
            Jw[2, b + 3 + k] = px * R[1, k] - py * R[0, k]
        # I_O = I_c - m [c]x[c]x = I_c + m (|c|^2 1 - c c^T)
        cc = cx * cx + cy * cy + cz * cz
        c = (cx, cy, cz)
        for i in range(3):
            for k in range(3):
                IO[i, k] = inertia[j, i, k] + m * ((cc if i == k else 0.0) - c[i] * c[k])
        # M: translation block m 1, coupling -m R [c]x (its transpose below the diagonal), rotation block I_O
        for i in range(3):
            # row i of R [c]x
            rcx0 = R[i, 1] * cz - R[i, 2] * cy
            rcx1 = R[i, 2] * cx - R[i, 0] * cz
            rcx2 = R[i, 0] * cy - R[i, 1] * cx
            for k in range(3):
                M[b + i, b + k] = m if i == k else 0.0
                M[b + 3 + i, b + 3 + k] = IO[i, k]
            M[b + i, b + 3] = -m * rcx0
            M[b + i, b + 4] = -m * rcx1
            M[b + i, b + 5] = -m * rcx2
            M[b + 3, b + i] = -m * rcx0
            M[b + 4, b + i] = -m * rcx1
            M[b + 5, b + i] = -m * rcx2
        for k in range(6):
            M[b + k, b + k] += armature[b + k]
        # bias: k_p = m R (w x (w x c)) - m g;  k_w = w x (I_O w) - m c x (R^T g)
        wx, wy, wz = v[b + 3], v[b + 4], v[b + 5]
        ux = wy * cz - wz * cy
        uy = wz * cx - wx * cz
        uz = wx * cy - wy * cx
        ax = wy * uz - wz * uy
        ay = wz * ux - wx * uz
        az = wx * uy - wy * ux
        for i in range(3):
            bias[b + i] = m * (R[i, 0] * ax + R[i, 1] * ay + R[i, 2] * az) - m * g[i]
        hx = IO[0, 0] * wx + IO[0, 1] * wy + IO[0, 2] * wz
        hy = IO[1, 0] * wx + IO[1, 1] * wy + IO[1, 2] * wz
        hz = IO[2, 0] * wx + IO[2, 1] * wy + IO[2, 2] * wz
        gx = R[0, 0] * g[0] + R[1, 0] * g[1] + R[2, 0] * g[2]
        gy = R[0, 1] * g[0] + R[1, 1] * g[1] + R[2, 1] * g[2]
        gz = R[0, 2] * g[0] + R[1, 2] * g[1] + R[2, 2] * g[2]
        bias[b + 3] = wy * hz - wz * hy - m * (cy * gz - cz * gy)
        bias[b + 4] = wz * hx - wx * hz - m * (cz * gx - cx * gz)
        bias[b + 5] = wx * hy - wy * hx - m * (cx * gy - cy * gx)
