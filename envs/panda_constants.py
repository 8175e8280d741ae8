"""Franka Emika Panda constants (example-robot-data's ``panda`` URDF + SRDF, merged as robot ``"panda"``).

Names in the simulator's model are ``"panda/<name in the file>"``. Numbers with their sources:

* ARMATURE 0.1 kg m²: reflected rotor inertia of the arm joints (MuJoCo Menagerie's ``franka_emika_panda``;
  example-robot-data's URDF has none). It keeps the implicit inverse-dynamics PD stable at high gains
  (``cenic_gym.external.InverseDynamicsPD``; ``benchmarks/stiff_control.py``).
* ARM_KP 400 1/s², ARM_KD 40 1/s: inverse-dynamics PD gains (critically damped at ω = 20 rad/s), the grasp
  test's (``tests/test_grasp.py``: 0.94 mm slip over a 3 s carry).
* Effort limits: the URDF's (87 N m joints 1–4, 12 N m joints 5–7; Franka's datasheet).
* GRIP_FORCE 20 N per finger: below the Franka Hand's 70 N continuous force; with μ = 1 pads it holds
  2 μ F / g = 4 kg, ten times the default box.
* FINGER_OPEN 0.04 m per finger (the URDF's limit: 8 cm between the pads).
"""
import numpy as np

ROBOT = "panda"
ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGER_JOINT = "panda_finger_joint1"  # panda_finger_joint2 mimics it (a coupler)
TCP = "panda/panda_hand_tcp"  # between the finger pads
HAND_LINKS = ("panda/panda_hand", "panda/panda_leftfinger", "panda/panda_rightfinger")
LEFT_FINGER_GEOMS = "panda/panda_leftfinger_"
RIGHT_FINGER_GEOMS = "panda/panda_rightfinger_"
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])  # the SRDF's "ready" pose [rad]
HAND_DOWN = np.diag([1.0, -1.0, -1.0])  # hand z down, fingers closing along world y, at yaw 0
ARMATURE = 0.1
ARM_KP, ARM_KD = 400.0, 40.0
GRIP_KP, GRIP_KD = 2000.0, 100.0
GRIP_FORCE = 20.0
FINGER_OPEN = 0.04
