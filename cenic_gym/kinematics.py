"""Kinematics kernels (numba): joint and geometry world poses, contact Jacobians.

Contact Jacobian [physics-notes §1]: with Pinocchio's WORLD-frame joint Jacobian (``data.J`` after
``pin.computeJointJacobians``: rows [v_O; ω], v_O the velocity of the body point at the world origin), the velocity
of a body-fixed point at world position p is v_O + ω × p, so its Jacobian column c is J_v[:, c] + J_ω[:, c] × p for
the columns c that support the body's joint (zero elsewhere). The relative-velocity Jacobian of a contact is
J_B(p) − J_A(p); we store it compactly as a 3 x m block over the union of both supports.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .model import JOINT_FIXED, JOINT_ROOT_FREE, quat_to_rot


@njit(cache=True)
def joint_poses_from_q(q, joint_kind, joint_idx_q, R_out, p_out):
    """World poses of the fixed (universe) and root free-flyer joints, straight from q. Other joints untouched."""
    for j in range(joint_kind.shape[0]):
        if joint_kind[j] == JOINT_FIXED:
            R_out[j] = np.eye(3)
            p_out[j] = 0.0
        elif joint_kind[j] == JOINT_ROOT_FREE:
            i = joint_idx_q[j]
            p_out[j, 0] = q[i]
            p_out[j, 1] = q[i + 1]
            p_out[j, 2] = q[i + 2]
            quat_to_rot(q[i + 3], q[i + 4], q[i + 5], q[i + 6], R_out[j])


@njit(cache=True)
def geometry_poses(joint_R, joint_p, geom_joint, geom_R, geom_p, R_out, p_out):
    """World pose of every geometry: X_WG = X_WJ X_JG."""
    for g in range(geom_joint.shape[0]):
        j = geom_joint[g]
        R_out[g] = joint_R[j] @ geom_R[g]
        p_out[g] = joint_R[j] @ geom_p[g] + joint_p[j]


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
        vo = np.zeros(3)
        w = np.zeros(3)
        for k in range(joint_ncols[j]):
            c = joint_cols[j, k]
            for a in range(3):
                vo[a] += Jw[a, c] * v[c]
                w[a] += Jw[3 + a, c] * v[c]
        p = geom_pw[g]
        vc0 = vo[0] + w[1] * p[2] - w[2] * p[1]
        vc1 = vo[1] + w[2] * p[0] - w[0] * p[2]
        vc2 = vo[2] + w[0] * p[1] - w[1] * p[0]
        wn = math.sqrt(w[0] ** 2 + w[1] ** 2 + w[2] ** 2)
        r = geom_bound[g] if math.isfinite(geom_bound[g]) else 0.0
        out[g] = math.sqrt(vc0 * vc0 + vc1 * vc1 + vc2 * vc2) + wn * r
