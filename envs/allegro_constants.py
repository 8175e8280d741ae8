"""Wonik Allegro right hand (v4) constants (example-robot-data's ``allegro_hand_description`` URDF, merged as robot
``"allegro"``; preset ``"allegro"`` of :mod:`cenic_gym.robots`).

Names in the simulator's model are ``"allegro/<name in the file>"``. Pinocchio orders the fingers as the URDF's tree
(index, thumb, middle, ring); here every per-joint array is in joint-name order (index 0–3, middle 4–7, ring 8–11,
thumb 12–15), mapped through ``MultibodySystem.robot_v_indices``. Palm frame (``palm_link``): x is the palm normal
(out of the palm, the side the fingers flex towards), y points from the ring finger to the index finger, z along the
fingers; the palm box spans x ∈ [−0.0297, 0.0111] m, y ∈ ±0.0565 m, z ∈ [−0.095, 0] m.
Numbers with their sources:

* KP 3 N m/rad, KD 0.1 N m s/rad, EFFORT_LIMIT 0.5 N m: the implicit actuator of Isaac Lab's ``ALLEGRO_HAND_CFG``
  (``isaaclab_assets/robots/allegro.py`` of the ``omni.isaac.lab`` releases: stiffness 3.0, damping 0.1, effort
  limit 0.5, the gains its Allegro cube-reorientation task was trained with; the LEAP-hand configs copied from it
  keep them; the current file has stiffness 1.0, same damping and limit). MuJoCo Menagerie's ``wonik_allegro`` is
  of the same order (position kp 1, joint damping 0.1). 0.5 N m at a 0.1 m lever is 5 N at a fingertip.
* PASSIVE_DAMPING 0: the URDF's joint damping (3–10 N m s/rad) and friction (5–12 N m) are 30–100× the
  0.1 N m s/rad above and 10–20× the motor's torque (tuned for another simulator's drives: the fingers would barely
  move); the damping the fingers see is the PD's K_d, implicit in every convex step like the file's damping would be. The
  file's Coulomb joint friction is not simulated by the engine at all.
* ARMATURE 1e-4 kg m²: Isaac Lab's current ``ALLEGRO_HAND_CFG`` (armature=1e-4), the reflected rotor inertia of the
  hand's small geared motors; it also keeps the lightest links (9.6 g distal phalanges) from being stiff-light.
* FINGERTIP_RADIUS 0.012 m: the URDF's fingertip spheres.
* CUBE_SIZE 0.065 m, CUBE_MASS 0.1 kg: the issue's cube (the Shadow/Allegro benchmark cube of OpenAI and
  IsaacGymEnvs is 6.5 cm; 0.1 kg ≈ a 6.5 cm cube of 360 kg/m³ foam/wood).
"""
import numpy as np

ROBOT = "allegro"
FINGERS = ("index", "middle", "ring", "thumb")
JOINTS = tuple(f"joint_{i}.0" for i in range(16))  # index 0–3, middle 4–7, ring 8–11, thumb 12–15
PALM_LINK = "allegro/palm_link"
PALM_GEOM = "allegro/palm_link_0"
TIP_FRAMES = tuple(f"allegro/link_{i}.0_tip" for i in (3, 7, 11, 15))  # index, middle, ring, thumb
TIP_GEOMS = tuple(f"allegro/link_{i}.0_tip_0" for i in (3, 7, 11, 15))
FINGERTIP_RADIUS = 0.012  # [m]
PALM_SURFACE_X = 0.0111  # palm-frame x of the palm's contact face [m] (box centre −0.0093 + half thickness 0.0204)
PALM_CENTRE_Z = -0.0475  # palm-frame z of the palm box centre [m]

KP, KD = 3.0, 0.1  # [N m/rad], [N m s/rad]
EFFORT_LIMIT = 0.5  # [N m]
PASSIVE_DAMPING = 0.0  # [N m s/rad]
ARMATURE = 1e-4  # [kg m²]

CUBE_SIZE = 0.065  # [m]
CUBE_MASS = 0.1  # [kg]
