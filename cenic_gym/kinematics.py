"""Kinematics kernels (numba): joint and geometry world poses, contact Jacobians.

Contact Jacobian [docs/physics.md §1]: with Pinocchio's WORLD-frame joint Jacobian (``data.J`` after
``pin.computeJointJacobians``: rows [v_O; ω], v_O the velocity of the body point at the world origin), the velocity
of a body-fixed point at world position p is v_O + ω × p, so its Jacobian column c is J_v[:, c] + J_ω[:, c] × p for
the columns c that support the body's joint (zero elsewhere). The relative-velocity Jacobian of a contact is
J_B(p) − J_A(p); we store it compactly as a 3 x m block over the union of both supports.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .model import (JOINT_FIXED, JOINT_PRISMATIC_AXIS, JOINT_PRISMATIC_X, JOINT_REVOLUTE_AXIS, JOINT_REVOLUTE_X,
                    JOINT_ROOT_FREE, quat_to_rot)


@njit(cache=True)
def _dot3(a0, a1, a2, b0, b1, b2, row):
    """a·b in the summation order of the fixed-size 3 x 3 products of this Pinocchio build (Eigen: rows 0 and 1 of a
    product as one SIMD packet, ((a0 b0 + a1 b1) + a2 b2); row 2 as a scalar reduction, a0 b0 + (a1 b1 + a2 b2)),
    so that the poses of :func:`joint_poses_from_q` equal Pinocchio's ``data.oMi`` bit for bit."""
    if row < 2:
        return (a0 * b0 + a1 * b1) + a2 * b2
    return a0 * b0 + (a1 * b1 + a2 * b2)


@njit(cache=True, inline="always")
def _compose(Ra, pa, a, Rb, pb, b, R_out, p_out, o):
    """(R_out[o], p_out[o]) = (Ra[a], pa[a]) (Rb[b], pb[b]) = (Ra Rb, pa + Ra pb), as Pinocchio's SE3 product, on
    stacks of poses (n, 3, 3) and (n, 3) by index (outputs must not alias): no array view is made per pose, so
    numba counts no references in the loops that call it."""
    for i in range(3):
        for j in range(3):
            R_out[o, i, j] = _dot3(Ra[a, i, 0], Ra[a, i, 1], Ra[a, i, 2], Rb[b, 0, j], Rb[b, 1, j], Rb[b, 2, j], i)
        p_out[o, i] = pa[a, i] + _dot3(Ra[a, i, 0], Ra[a, i, 1], Ra[a, i, 2], pb[b, 0], pb[b, 1], pb[b, 2], i)


@njit(cache=True)
def _revolute_placement(kind, x, place_R, place_p, j, R, p):
    """(R[0], p[0]) = X_PJ0 M(x) for an axis-aligned revolute joint j (``JOINT_REVOLUTE_X`` … ``_Z``) at angle x [rad]:
    Pinocchio's ``data.liMi``, X_PJ0 = (place_R[j], place_p[j]) the joint placement, in Pinocchio's arithmetic: the
    rotated column pair (c col_a + s col_b) and a cross product (``TransformRevolute::se3action``). Every argument
    is read on the one path through, so numba's reference counts of them are pruned (docs/performance.md)."""
    c, s = math.cos(x), math.sin(x)
    a = kind - JOINT_REVOLUTE_X
    b, d = (a + 1) % 3, (a + 2) % 3  # R_new[:, b] = c R[:, b] + s R[:, d]; R_new[:, d] = R_new[:, a] x R_new[:, b]
    for i in range(3):
        R[0, i, a] = place_R[j, i, a]
        R[0, i, b] = c * place_R[j, i, b] + s * place_R[j, i, d]
        p[0, i] = place_p[j, i]
    R[0, 0, d] = R[0, 1, a] * R[0, 2, b] - R[0, 2, a] * R[0, 1, b]
    R[0, 1, d] = R[0, 2, a] * R[0, 0, b] - R[0, 0, a] * R[0, 2, b]
    R[0, 2, d] = R[0, 0, a] * R[0, 1, b] - R[0, 1, a] * R[0, 0, b]


@njit(cache=True)
def _joint_placement_times_motion(kind, x, axis, place_R, place_p, j, M, t, R, p):
    """(R[0], p[0]) = X_PJ0 M(x) for the other 1-DOF joints j: a rotation by x about ``axis[j]`` or a translation by
    x along e_x / e_y / e_z / ``axis[j]``, as the SE3 product (:func:`_compose`) with M as a plain transform
    (Rodrigues as pinocchio/math/rotation.hpp; M (1, 3, 3) and t (1, 3) are the caller's workspaces). The
    axis-aligned revolute joints: :func:`_revolute_placement`."""
    for i in range(3):
        t[0, i] = 0.0
        for k in range(3):
            M[0, i, k] = 0.0
    if kind == JOINT_REVOLUTE_AXIS:
        c, s = math.cos(x), math.sin(x)
        ux, uy, uz = axis[j, 0], axis[j, 1], axis[j, 2]
        sx, sy, sz = s * ux, s * uy, s * uz
        cx, cy, cz = (1.0 - c) * ux, (1.0 - c) * uy, (1.0 - c) * uz
        w = cx * uy
        M[0, 0, 1] = w - sz
        M[0, 1, 0] = w + sz
        w = cx * uz
        M[0, 0, 2] = w + sy
        M[0, 2, 0] = w - sy
        w = cy * uz
        M[0, 1, 2] = w - sx
        M[0, 2, 1] = w + sx
        M[0, 0, 0] = cx * ux + c
        M[0, 1, 1] = cy * uy + c
        M[0, 2, 2] = cz * uz + c
    else:
        for i in range(3):
            M[0, i, i] = 1.0
        if kind < JOINT_PRISMATIC_AXIS:
            t[0, kind - JOINT_PRISMATIC_X] = x
        else:
            for i in range(3):
                t[0, i] = axis[j, i] * x
    _compose(place_R, place_p, j, M, t, 0, R, p, 0)


@njit(cache=True)
def joint_poses_from_q(q, joint_kind, joint_idx_q, joint_parent, joint_axis, place_R, place_p, R_out, p_out):
    """World poses of the fixed (universe) and root free-body joints, straight from q, and of the 1-DOF joints
    (revolute, prismatic: ``model.JOINT_REVOLUTE_X`` …), in model order, as Pinocchio's forward kinematics does:
    X_WJ = X_WP (X_PJ0 M(q_j)) (:func:`_revolute_placement`, :func:`_joint_placement_times_motion`).
    Other joints (JOINT_GENERAL) are left untouched: their poses are copied from Pinocchio beforehand, and 1-DOF
    children read them here. The parent pose of a child of a root free body is rebuilt from the raw quaternion as
    Pinocchio does (no normalisation) so that the result equals ``data.oMi`` bit for bit."""
    L_R = np.empty((1, 3, 3))  # X_PJ of the joint at hand
    L_p = np.empty((1, 3))
    P_R = np.empty((1, 3, 3))  # a root free body's pose, its rotation from the raw quaternion
    P_p = np.empty((1, 3))
    M = np.empty((1, 3, 3))  # the workspaces of _joint_placement_times_motion
    t = np.empty((1, 3))
    for j in range(joint_kind.shape[0]):
        kind = joint_kind[j]
        if kind == JOINT_FIXED:
            for i in range(3):
                p_out[j, i] = 0.0
                for k in range(3):
                    R_out[j, i, k] = 1.0 if i == k else 0.0
        elif kind == JOINT_ROOT_FREE:
            i = joint_idx_q[j]
            p_out[j, 0] = q[i]
            p_out[j, 1] = q[i + 1]
            p_out[j, 2] = q[i + 2]
            quat_to_rot(q[i + 3], q[i + 4], q[i + 5], q[i + 6], R_out[j])
        elif kind >= JOINT_REVOLUTE_X:
            if kind < JOINT_REVOLUTE_AXIS:
                _revolute_placement(kind, q[joint_idx_q[j]], place_R, place_p, j, L_R, L_p)
            else:
                _joint_placement_times_motion(kind, q[joint_idx_q[j]], joint_axis, place_R, place_p, j, M, t, L_R,
                                              L_p)
            par = joint_parent[j]
            if par == 0:
                for i in range(3):
                    p_out[j, i] = L_p[0, i]
                    for k in range(3):
                        R_out[j, i, k] = L_R[0, i, k]
            elif joint_kind[par] == JOINT_ROOT_FREE:
                i = joint_idx_q[par]
                quat_to_rot(q[i + 3], q[i + 4], q[i + 5], q[i + 6], P_R[0], False)
                for k in range(3):
                    P_p[0, k] = p_out[par, k]
                _compose(P_R, P_p, 0, L_R, L_p, 0, R_out, p_out, j)
            else:
                _compose(R_out, p_out, par, L_R, L_p, 0, R_out, p_out, j)


@njit(cache=True)
def geometry_poses(joint_R, joint_p, geom_joint, geom_R, geom_p, R_out, p_out):
    """World pose of every geometry: X_WG = X_WJ X_JG (the SE3 product of :func:`_compose`, as Pinocchio's
    ``oMi * placement``; no small-matrix BLAS call per geometry)."""
    for g in range(geom_joint.shape[0]):
        _compose(joint_R, joint_p, geom_joint[g], geom_R, geom_p, g, R_out, p_out, g)


@njit(cache=True)
def contact_jacobians(Jw, joint_cols, joint_ncols, joint_a, joint_b, points, nc, Jc, cols, ncols):
    """Compact relative-velocity Jacobians v_c = v_B(p) − v_A(p) of ``nc`` contacts (world frame).

    Jw: (6, nv) world Jacobian of all joints. joint_cols/joint_ncols: each joint's support columns (sorted).
    Writes Jc (nc, 3, m), cols (nc, m) and ncols (nc,)."""
    for i in range(nc):
        ja = joint_a[i]
        jb = joint_b[i]
        na = joint_ncols[ja]
        nb = joint_ncols[jb]
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        ia = 0
        ib = 0
        m = 0
        while ia < na or ib < nb:
            ca = joint_cols[ja, ia] if ia < na else 1 << 62
            cb = joint_cols[jb, ib] if ib < nb else 1 << 62
            col = min(ca, cb)
            # point velocity column: v + ω × p
            wx, wy, wz = Jw[3, col], Jw[4, col], Jw[5, col]
            jx = Jw[0, col] + wy * pz - wz * py
            jy = Jw[1, col] + wz * px - wx * pz
            jz = Jw[2, col] + wx * py - wy * px
            sign = 0.0
            if cb == col:
                sign += 1.0
                ib += 1
            if ca == col:
                sign -= 1.0
                ia += 1
            cols[i, m] = col
            Jc[i, 0, m] = sign * jx
            Jc[i, 1, m] = sign * jy
            Jc[i, 2, m] = sign * jz
            m += 1
        ncols[i] = m


@njit(cache=True)
def geometry_speeds(Jw, v, joint_cols, joint_ncols, geom_joint, geom_pw, geom_bound, out):
    """Upper bound of the speed [m/s] of any point of each geometry: |v_center| + |ω| r_bound (world frame)."""
    for g in range(geom_joint.shape[0]):
        j = geom_joint[g]
        vo0 = vo1 = vo2 = w0 = w1 = w2 = 0.0
        for k in range(joint_ncols[j]):
            c = joint_cols[j, k]
            vc = v[c]
            vo0 += Jw[0, c] * vc
            vo1 += Jw[1, c] * vc
            vo2 += Jw[2, c] * vc
            w0 += Jw[3, c] * vc
            w1 += Jw[4, c] * vc
            w2 += Jw[5, c] * vc
        p = geom_pw[g]
        vc0 = vo0 + w1 * p[2] - w2 * p[1]
        vc1 = vo1 + w2 * p[0] - w0 * p[2]
        vc2 = vo2 + w0 * p[1] - w1 * p[0]
        wn = math.sqrt(w0 ** 2 + w1 ** 2 + w2 ** 2)
        r = geom_bound[g] if math.isfinite(geom_bound[g]) else 0.0
        out[g] = math.sqrt(vc0 * vc0 + vc1 * vc1 + vc2 * vc2) + wn * r
