"""The Go1's leg kinematics and a trot trajectory generator: what ``CenicQuadruped-v0``'s ``action_type="gait"``
turns its actions into.

Policies that modulate a trajectory generator (PMTG, Iscen et al. 2018) learn speed-controlled walking from far
fewer samples than joint-space policies: the generator walks, the policy adjusts it. Here the generator is a trot
whose feet follow, in the base frame, the relative motion a body moving at a chosen velocity (v_x, v_y, ω_z) asks
of them: during stance (half of each cycle) a foot slides backward along the ground by the distance the body
covers, during swing it returns along a raised-cosine arc of height ``lift``. Diagonal pairs alternate (FL + RR,
FR + RL). Analytic inverse kinematics turns the four foot targets into the 12 joint targets; the policy adds
bounded residual joint offsets.

Leg geometry (from the model, not typed in): hip abduction joint at ``hip`` in the base frame, thigh joint
``l1`` along the hip's y axis (+ for left legs), knee ``l2`` below the thigh joint, foot centre ``l3`` below the
knee; abduction about x, thigh and knee about y (a positive thigh angle swings the foot backward).
"""
from __future__ import annotations

import math

import numpy as np

from . import go1_constants as gc

TROT_PHASE = np.array([0.0, math.pi, math.pi, 0.0])  # FL, FR, RL, RR: diagonal pairs in phase


class LegKinematics:
    """Forward and inverse kinematics of the four legs in the base frame (vectorized over legs), from the
    Pinocchio model of a system holding the Go1 as robot ``gc.ROBOT``."""

    def __init__(self, model):
        hip, l1, l2, l3 = [], [], [], []
        for leg in gc.LEGS:
            j_hip, j_thigh, j_calf = (model.getJointId(f"{gc.ROBOT}/{leg}_{part}_joint")
                                      for part in ("hip", "thigh", "calf"))
            foot = model.frames[model.getFrameId(f"{gc.ROBOT}/{leg}_foot")]
            hip.append(model.jointPlacements[j_hip].translation.copy())
            l1.append(model.jointPlacements[j_thigh].translation[1])
            l2.append(-model.jointPlacements[j_calf].translation[2])
            l3.append(-foot.placement.translation[2])
        self.hip = np.array(hip)  # (4, 3) [m]
        self.l1, self.l2, self.l3 = np.array(l1), np.array(l2), np.array(l3)  # (4,) [m]

    def forward(self, q):
        """Foot centres (4, 3) in the base frame for leg joint angles q (12,) [rad] (legs FL, FR, RL, RR)."""
        q = np.asarray(q, dtype=float).reshape(4, 3)
        a, t, k = q[:, 0], q[:, 1], q[:, 2]
        x = -self.l2 * np.sin(t) - self.l3 * np.sin(t + k)
        r = self.l2 * np.cos(t) + self.l3 * np.cos(t + k)  # distance below the thigh axis, in the leg plane
        ca, sa = np.cos(a), np.sin(a)
        y = self.l1 * ca + r * sa
        z = self.l1 * sa - r * ca
        return self.hip + np.stack([x, y, z], axis=1)

    def inverse(self, feet):
        """Joint angles (12,) [rad] that put the foot centres at ``feet`` (4, 3), base frame; targets out of reach
        are pulled onto the reachable shell (the knee stays bent backward)."""
        p = np.asarray(feet, dtype=float) - self.hip
        x, y, z = p[:, 0], p[:, 1], p[:, 2]
        r = np.sqrt(np.maximum(y * y + z * z - self.l1 * self.l1, 1e-8))
        abduction = np.arctan2(z, y) - np.arctan2(-r, self.l1)
        reach = np.clip(np.hypot(x, r), np.abs(self.l2 - self.l3) + 1e-3, self.l2 + self.l3 - 1e-3)
        cos_knee = (reach * reach - self.l2 ** 2 - self.l3 ** 2) / (2.0 * self.l2 * self.l3)
        knee = -np.arccos(np.clip(cos_knee, -1.0, 1.0))
        thigh = np.arctan2(-x, r) - np.arctan2(self.l3 * np.sin(knee), self.l2 + self.l3 * np.cos(knee))
        return np.stack([abduction, thigh, knee], axis=1).ravel()


def trot_feet(phase, velocity, frequency, lift, nominal, lift_delay=0.0):
    """Foot targets (4, 3), base frame, of the trot at gait ``phase`` [rad] for a body moving at ``velocity`` =
    (v_x, v_y, ω_z) [m/s, rad/s] (base frame) with ``frequency`` [Hz] steps of ``lift`` [m] around the ``nominal``
    foot positions (4, 3). Leg i's phase is ``phase`` + TROT_PHASE[i]: stance in its first half cycle (the foot
    moves from half a stride ahead to half a stride behind its nominal position, at the ground's velocity relative
    to the base, −(v + ω × p)), swing in the second (back along a raised cosine, up by ``lift`` sin)."""
    v_x, v_y, w_z = velocity
    stride_time = 0.5 / frequency  # stance lasts half a cycle
    # displacement over one stance of the ground under each foot, in the base frame: (v + ω × p) T
    d = np.stack([v_x - w_z * nominal[:, 1], v_y + w_z * nominal[:, 0]], axis=1) * stride_time
    phi = phase + TROT_PHASE
    feet = nominal.copy()
    feet[:, :2] += 0.5 * np.cos(phi)[:, None] * d  # ahead at touchdown (φ = 0), behind at lift-off (φ = π)
    feet[:, 2] += lift * np.maximum(0.0, -np.sin(phi - lift_delay))  # swing: φ in (π + delay, 2π + delay)
    return feet
