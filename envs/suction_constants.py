"""Suction gantry constants (``cenic_gym.suction.gripper_urdf(2, 2, yaw=True)``, merged as robot ``"gripper"``).

Names in the simulator's model are ``"gripper/<name in the file>"``. The gantry root is welded at ``ROOT`` (world,
metres); with all joints at 0 the tool frame (centre of the plate's bottom face) is there, and the cup mouths are
``MOUTH_BELOW_TOOL`` below it (bellows gap 5 mm + cup 20 mm). Numbers with their sources:

* Cups: 2 × 2, 4 cm pitch, 15 mm radius, bellows stroke ±5 mm (:mod:`cenic_gym.suction`).
* F_MAX 20 N per cup (≈ 28 kPa on the 15 mm cup, a modest vacuum generator): documented payload f_max / g =
  2.04 kg per sealed cup on a flat level face, 8.2 kg for the four; a cup centred on an edge holds about half
  (its seal fraction, ``SuctionGripper`` docstring).
* GANTRY_KP, GANTRY_KD: x, y, z as the suction benchmark's gantry (2e4 N/m, 600 N s/m); yaw 20 N m/rad, 1 N m s/rad
  (≈ 5e-3 kg m² tool + box: ω ≈ 60 rad/s, overdamped).
"""
import numpy as np

ROBOT = "gripper"
ROOT = np.array([0.0, 0.0, 0.40])  # [m] tool frame at zero joints
GANTRY_JOINTS = ("x", "y", "z", "yaw")
N_CUPS = 4
CUP_JOINTS = tuple(f"cup_{i}" for i in range(N_CUPS))
TOOL = "gripper/tool"
MOUTH_BELOW_TOOL = 0.025  # [m]
F_MAX = 20.0  # [N] per cup
GANTRY_KP = (2.0e4, 2.0e4, 2.0e4, 20.0)  # [N/m] x3, [N m/rad]
GANTRY_KD = (600.0, 600.0, 600.0, 1.0)  # [N s/m] x3, [N m s/rad]
# z: 100 N about the gravity compensation (20.4 N): lifts 80 N (8 kg) net, presses ≤ 120 N (tests/test_suction_env.py);
# at 50 N random actions saturated the axis so often that an env step took twice the substeps
GANTRY_EFFORT_LIMIT = (np.inf, np.inf, 100.0, np.inf)  # [N] x3, [N m]
GANTRY_LOWER = np.array([-0.45, -0.45, -0.39, -np.pi])  # command limits (joint values) [m, rad]
GANTRY_UPPER = np.array([0.45, 0.45, 0.10, np.pi])
