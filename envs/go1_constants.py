"""Unitree Go1 constants (example-robot-data's ``go1_description`` URDF + SRDF, merged as robot ``"go1"``).

Names in the simulator's model are ``"go1/<name in the file>"``; the free base is ``"go1/root_joint"`` (q: position,
quaternion (x, y, z, w); v: world-frame linear velocity, base-frame angular velocity). Pinocchio orders the legs as
the URDF does: FL, FR, RL, RR, each (hip abduction, thigh, calf). Numbers with their sources:

* NOMINAL: the "home" keyframe of MuJoCo Playground's ``locomotion/go1`` scenes and mjlab's ``unitree_go1``
  (hip ∓0.1 rad, thigh 0.9 rad, calf −1.8 rad; the hips tuck each foot 2.6 cm towards the body). The SRDF's
  ``standing`` state (0, 0.8, −1.853) puts the feet 3 cm ahead of the hips; under the soft gains below the rear
  legs then fold until the rear calves touch the ground, which the home pose avoids.
* KP 35 N m/rad, KD 0.5 N m s/rad: the joint PD of Playground's ``go1/joystick.py`` and mjlab's Go1 actuators
  (the policies trained there run on the real robot).
* Effort limits: the URDF's (23.7 N m hip and thigh, 35.55 N m knee; Unitree's datasheet); JointPD reads them.
* HIP_ARMATURE, KNEE_ARMATURE: reflected rotor inertia I_rotor N² with I_rotor = 0.000111842 kg m² (the URDF's
  rotor links, spin axis) and gear ratios N = 6 (hip, thigh) and 9 (knee), as mjlab's ``go1_constants.py``.
  The URDF has no armature; its rotor links add only their own (unreflected) inertia.
* FOOT_RADIUS 0.02 m: the URDF's foot spheres (centres 0.213 m below the knee).
"""
import numpy as np

ROBOT = "go1"
LEGS = ("FL", "FR", "RL", "RR")
JOINTS = tuple(f"{leg}_{part}_joint" for leg in LEGS for part in ("hip", "thigh", "calf"))
BASE_JOINT = "go1/root_joint"
BASE_LINK = "go1/trunk"  # coincides with the root joint frame
FOOT_FRAMES = tuple(f"go1/{leg}_foot" for leg in LEGS)
FOOT_GEOMS = tuple(f"go1/{leg}_foot_0" for leg in LEGS)
FOOT_RADIUS = 0.02

NOMINAL = np.array([-0.1, 0.9, -1.8,   # FL
                    0.1, 0.9, -1.8,    # FR
                    -0.1, 0.9, -1.8,   # RL
                    0.1, 0.9, -1.8])   # RR  [rad]
KP, KD = 35.0, 0.5
ROTOR_INERTIA = 0.000111842  # [kg m²]
HIP_GEAR, KNEE_GEAR = 6.0, 9.0
HIP_ARMATURE = ROTOR_INERTIA * HIP_GEAR**2  # 0.0040 kg m² (hip abduction and thigh joints)
KNEE_ARMATURE = ROTOR_INERTIA * KNEE_GEAR**2  # 0.0091 kg m²


def armature(hip=HIP_ARMATURE, knee=KNEE_ARMATURE):
    """{joint name: armature [kg m²]} for ``SceneBuilder.add_robot(..., armature=...)``."""
    return {j: (knee if j.endswith("calf_joint") else hip) for j in JOINTS}
