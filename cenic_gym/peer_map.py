"""What every peer simulator's scene mapping (MuJoCo: :mod:`cenic_gym.mujoco_model`, Drake:
:mod:`cenic_gym.drake_model`) reads from a :class:`~cenic_gym.model.MultibodySystem` the same way: its joints with the
rigid bodies they carry (:func:`scene_joints`, :class:`JointInfo`), body names, our pair friction rule, and the one
error for a part no peer mapping covers (:class:`MappingError`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .model import is_free_body_joint

_AXES = {"X": np.array([1.0, 0.0, 0.0]), "Y": np.array([0.0, 1.0, 0.0]), "Z": np.array([0.0, 0.0, 1.0])}


class MappingError(NotImplementedError):
    """A part of the system has no counterpart in a peer simulator's mapping (the message names the part)."""


def body_name(system, joint):
    """The peer body (and joint) name of Pinocchio joint ``joint`` ("world" for 0): the Pinocchio joint name."""
    return "world" if joint == 0 else system.model.names[joint]


@dataclass
class JointInfo:
    """One Pinocchio joint of a system with the rigid body it carries (the body frame is the joint frame).

    kind: "free" (:func:`cenic_gym.model.free_body_joint` on the world: q = [p, quaternion x y z w], v = [world
    linear velocity, body angular velocity]), "revolute" or "prismatic" (1 DOF about / along ``axis`` in the joint
    frame). X_pj: joint frame in the parent joint's frame at q = 0; iq, iv: first q and v index; lower, upper:
    position limits [rad or m] (±inf for none); damping [N m s/rad], armature [kg m²]; mass [kg]; com (3,) and
    inertia (3, 3) about the com, in the body frame."""

    joint: int
    name: str
    kind: str
    parent: int
    X_pj: pin.SE3
    axis: np.ndarray
    iq: int
    iv: int
    lower: float
    upper: float
    damping: float
    armature: float
    mass: float
    com: np.ndarray
    inertia: np.ndarray


def scene_joints(system):
    """All joints of ``system``, parents before children (Pinocchio's order); :class:`MappingError` for a joint
    type the peers' revolute (hinge) / prismatic (slide) / free joints do not cover (or a free joint below another body)."""
    m = system.model
    out = []
    for j in range(1, m.njoints):
        jm = m.joints[j]
        short = jm.shortname()
        iq, iv = m.idx_qs[j], m.idx_vs[j]
        if is_free_body_joint(jm):
            if m.parents[j] != 0:
                raise MappingError(f"joint {m.names[j]!r}: a free joint below another body is not mapped")
            kind, axis = "free", np.zeros(3)
        elif short in ("JointModelRX", "JointModelRY", "JointModelRZ"):
            kind, axis = "revolute", _AXES[short[-1]]
        elif short in ("JointModelPX", "JointModelPY", "JointModelPZ"):
            kind, axis = "prismatic", _AXES[short[-1]]
        elif short == "JointModelRevoluteUnaligned":
            kind, axis = "revolute", np.array(jm.extract().axis, dtype=float)
        elif short == "JointModelPrismaticUnaligned":
            kind, axis = "prismatic", np.array(jm.extract().axis, dtype=float)
        else:
            raise MappingError(f"joint {m.names[j]!r} of type {short} has no counterpart in the peer mappings (revolute, prismatic, free)")
        one = kind != "free"
        Y = m.inertias[j]
        out.append(JointInfo(
            j, m.names[j], kind, int(m.parents[j]), m.jointPlacements[j], axis, iq, iv,
            float(m.lowerPositionLimit[iq]) if one else -math.inf, float(m.upperPositionLimit[iq]) if one else math.inf,
            float(m.damping[iv]) if one else 0.0, float(m.armature[iv]) if one else 0.0,
            float(Y.mass), np.array(Y.lever), np.array(Y.inertia)))
    return out


def pair_friction(mu_a, mu_b):
    """Our pair rule for friction coefficients: 2 μ_a μ_b / (μ_a + μ_b) (0 if both are 0)."""
    return 2.0 * mu_a * mu_b / (mu_a + mu_b) if mu_a + mu_b > 0.0 else 0.0
