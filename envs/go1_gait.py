"""The Go1's leg kinematics and a trot trajectory generator: what ``CenicQuadruped-v0``'s ``action_type="gait"``
turns its actions into.

Policies that modulate a trajectory generator (PMTG, Iscen et al. 2018) learn speed-controlled walking from far
fewer samples than joint-space policies: the generator walks, the policy adjusts it. Here the generator is a trot
(diagonal pairs FL + RR and FR + RL alternate, each leg half a cycle on the ground) whose feet are planned in the
base frame from four inputs the policy sets every control period:

- the **stance velocity** (v_x, v_y, ω_z): a foot on the ground moves at the ground's velocity relative to a body
  moving so, −(v + ω × p);
- the **step offset** (x, y, ψ): where a swinging foot lands, relative to the neutral point of that velocity
  (nominal position + half a stance of travel): shifted by (x, y) and turned by ψ about the base's z axis. Raibert's
  foot placement, Δ = k (v_measured − v_stance) for each of v_x, v_y, ω_z, is what a policy puts here: it is how a
  trot balances, accelerates and turns;
- the **posture** (two slopes): stance feet lowered by s_x x + s_y y, i.e. the body pitched and rolled;
- **residual** joint offsets, added after the inverse kinematics.

Two feed-forward terms make soft joint servos (35 N m/rad) follow the plan: each stance leg's joint targets are
offset by Jᵀ f / k_p, the deflection its share of the weight f = m g / 2 would otherwise cause (without it the knees
sag 0.2 rad and the feet drift ahead of the centre of mass), and the targets lead the plan by ``lead_time``
(extrapolated along it), which is what the PD's damping and the zero-order hold of each control period lag behind.

Leg geometry (from the model, not typed in): hip abduction joint at ``hip`` in the base frame, thigh joint
``l1`` along the hip's y axis (+ for left legs), knee ``l2`` below the thigh joint, foot centre ``l3`` below the
knee; abduction about x, thigh and knee about y (a positive thigh angle swings the foot backward).
"""
from __future__ import annotations

import math
from typing import NamedTuple

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

    def jacobian(self, q):
        """∂(foot centre)/∂(joint angles) (4, 3, 3) of each leg, base frame, at q (12,) [rad]."""
        q = np.asarray(q, dtype=float).reshape(4, 3)
        a, t, k = q[:, 0], q[:, 1], q[:, 2]
        ca, sa = np.cos(a), np.sin(a)
        r = self.l2 * np.cos(t) + self.l3 * np.cos(t + k)
        x_t = -self.l2 * np.cos(t) - self.l3 * np.cos(t + k)
        x_k = -self.l3 * np.cos(t + k)
        r_t = -self.l2 * np.sin(t) - self.l3 * np.sin(t + k)
        r_k = -self.l3 * np.sin(t + k)
        J = np.zeros((4, 3, 3))
        J[:, 1, 0], J[:, 2, 0] = -self.l1 * sa + r * ca, self.l1 * ca + r * sa
        J[:, 0, 1], J[:, 1, 1], J[:, 2, 1] = x_t, r_t * sa, -r_t * ca
        J[:, 0, 2], J[:, 1, 2], J[:, 2, 2] = x_k, r_k * sa, -r_k * ca
        return J


class TrotPlan(NamedTuple):
    """One control period of the trot generator: the phase, the planned foot centres (4, 3) [m, base frame], where
    each foot left the ground (4, 2) [m] and the joint targets (12,) [rad]."""

    phase: float
    feet: np.ndarray
    liftoff: np.ndarray
    q: np.ndarray


class TrotGenerator:
    """The trot of the module docstring. Stateless: what it remembers between periods (phase, planned feet, lift-off
    points) is passed in and returned (``TrotPlan``), so the env keeps it with its state."""

    def __init__(self, legs: LegKinematics, nominal_q, mass, kp, frequency, lift, lead_time, reach, control_period):
        self.legs = legs
        self.nominal = legs.forward(nominal_q)  # (4, 3) base frame [m]
        self.mass, self.weight = mass, mass * 9.81  # [kg], [N]
        self.kp, self.frequency, self.lift, self.lead_time = kp, frequency, lift, lead_time
        self.reach, self.dt = reach, control_period
        self.stance_time = 0.5 / frequency  # [s]: half a cycle

    def start(self):
        """The plan a standing robot is in: phase 0, every foot at its nominal position."""
        return TrotPlan(0.0, self.nominal.copy(), self.nominal[:, :2].copy(), self.legs.inverse(self.nominal))

    def advance(self, phase):
        """The generator's phase one control period after ``phase``."""
        return (phase + 2.0 * math.pi * self.frequency * self.dt) % (2.0 * math.pi)

    @staticmethod
    def leg_phase(phase):
        """(4,) each leg's phase in [0, 2π) at generator phase ``phase``: on the ground in its first half cycle."""
        return (phase + TROT_PHASE) % (2.0 * math.pi)

    @classmethod
    def stance(cls, phase):
        """(4,) bool: which legs are on the ground at generator phase ``phase``."""
        return cls.leg_phase(phase) < math.pi

    def ground_velocity(self, velocity):
        """(4, 2) velocity [m/s] of the ground under each nominal foot relative to a body moving at ``velocity`` =
        (v_x, v_y, ω_z), base frame: −(v + ω × p)."""
        v_x, v_y, w_z = velocity
        p = self.nominal
        return -np.stack([v_x - w_z * p[:, 1], v_y + w_z * p[:, 0]], axis=1)

    def step(self, plan: TrotPlan, velocity, step_offset, posture, residual) -> TrotPlan:
        """The plan one control period after ``plan`` for stance ``velocity`` (3,), swing-foot ``step_offset``
        (x, y [m], ψ [rad]), ``posture`` slopes (2,) and ``residual`` joint offsets (12,) [rad]."""
        phase = self.advance(plan.phase)
        leg_phase = self.leg_phase(phase)
        swing = leg_phase >= math.pi
        was_swing = ~self.stance(plan.phase)
        ground = self.ground_velocity(velocity)
        nominal = self.nominal
        liftoff = np.where((swing & ~was_swing)[:, None], plan.feet[:, :2], plan.liftoff)
        # swing: from the lift-off point to the neutral point of the stance velocity + the step offset, on an arc
        dx, dy, dpsi = step_offset
        touchdown = nominal[:, :2] - 0.5 * self.stance_time * ground
        touchdown[:, 0] += dx - dpsi * nominal[:, 1]
        touchdown[:, 1] += dy + dpsi * nominal[:, 0]
        touchdown = np.clip(touchdown, nominal[:, :2] - self.reach, nominal[:, :2] + self.reach)
        u = np.where(swing, (leg_phase - math.pi) / math.pi, 0.0)
        s = 0.5 - 0.5 * np.cos(math.pi * u)
        feet = nominal.copy()
        feet[:, :2] = np.where(swing[:, None], liftoff + s[:, None] * (touchdown - liftoff),
                               plan.feet[:, :2] + self.dt * ground)  # stance: the foot moves with the ground
        feet[:, 2] += np.where(swing, self.lift * np.sin(math.pi * u), 0.0)
        feet[:, 2] -= posture[0] * nominal[:, 0] + posture[1] * nominal[:, 1]
        # joint targets: the plan led by lead_time, through the inverse kinematics, with the stance legs'
        # weight deflection added (a stance leg pushes down with its share of the weight: q − Jᵀ f / k_p)
        led = feet + (self.lead_time / self.dt) * (feet - plan.feet)
        q = self.legs.inverse(led)
        stance = ~swing
        if stance.any():
            f_z = self.weight / stance.sum()
            J = self.legs.jacobian(q)
            q = q - (f_z / self.kp) * np.where(stance[:, None], J[:, 2, :], 0.0).ravel()
        return TrotPlan(phase, feet, liftoff, q + np.asarray(residual))
