"""Reference scenes with known answers (docs/physics.md §5.6), shared by the tests, the demo and the benchmarks.

Every function returns a :class:`~cenic_gym.model.MultibodySystem`; all numbers are SI. Where a scene's
material is stated, both the ground and the bodies get it, so the combined pair material (springs in series,
harmonic-mean friction, docs/physics.md §2.2) has stiffness k/2 and the stated μ.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from .builder import SceneBuilder
from .model import Box, ContactMaterial, Sphere


def free_fall(mass=1.0, height=1.0):
    """A sphere in free fall (no ground)."""
    b = SceneBuilder()
    b.add_body("ball", Sphere(0.05), mass=mass, position=(0, 0, height))
    return b.build()


def sphere_drop(height=1.0, radius=0.05, mass=0.1, stiffness=1e3, dissipation=0.0, mu=0.5):
    """CENIC Fig. 8: a ball dropped on the ground; its lowest point starts ``height`` above the ground.
    ``stiffness`` is the combined pair stiffness [N/m]."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    b.add_body("ball", Sphere(radius), mass=mass, position=(0, 0, height + radius), material=mat)
    return b.build()


def incline(angle_deg=20.0, mu=0.5, mu_dynamic=None, mass=1.0, side=0.1, stiffness=1e5, dissipation=10.0):
    """Box of side ``side`` resting on a half-space tilted by ``angle_deg`` about the world y axis; the slope
    rises towards +x (descends towards −x). The box starts at its static equilibrium penetration. ``stiffness`` per pair point."""
    th = math.radians(angle_deg)
    n = np.array([-math.sin(th), 0.0, math.cos(th)])  # outward normal; the slope goes down towards −x
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu,
                          mu_dynamic=mu if mu_dynamic is None else mu_dynamic)
    b = SceneBuilder()
    b.add_ground(mat, normal=n)
    R = _rot_y(-th)
    sag = mass * 9.81 * math.cos(th) / (4 * stiffness)  # 4 corners
    pos = (0.5 * side - sag) * n
    b.add_body("box", Box((side, side, side)), mass=mass, position=pos, rotation=R, material=mat)
    return b.build()


def _rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def sliding_box(v0=1.0, mu=0.5, mu_dynamic=None, mass=1.0, side=0.1, stiffness=1e5, dissipation=10.0):
    """A box resting on flat ground (at its static sag) with initial horizontal speed v0 along +x."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu,
                          mu_dynamic=mu if mu_dynamic is None else mu_dynamic)
    b = SceneBuilder()
    b.add_ground(mat)
    sag = mass * 9.81 / (4 * stiffness)
    b.add_body("box", Box((side, side, side)), mass=mass, position=(0, 0, 0.5 * side - sag),
               velocity=(v0, 0, 0), material=mat)
    return b.build()


def rolling_sphere(U0=2.0, mu=0.5, radius=0.025, mass=0.5, stiffness=1e5, dissipation=10.0):
    """ICF §XI-B: a sphere launched along the ground at U0 without spin; slides, then rolls after 2U0/(7μg)."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    sag = mass * 9.81 / stiffness
    b.add_body("ball", Sphere(radius), mass=mass, position=(0, 0, radius - sag), velocity=(U0, 0, 0), material=mat)
    return b.build()


def falling_sphere(height=0.05, U0=2.0, mu=0.5, radius=0.025, mass=0.5, stiffness=1e7, dissipation=500.0):
    """ICF §XI-B, Fig. 5 as the paper runs it: a 0.5 kg, 5 cm steel sphere released with its lowest point ``height``
    above the ground, horizontal speed U0 and no spin; it lands, slides and rolls from 2U0/(7μg) after release
    (tests/test_impact_friction.py derives it). ``stiffness`` is the combined pair stiffness [N/m]."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    b.add_body("ball", Sphere(radius), mass=mass, position=(0, 0, radius + height), velocity=(U0, 0, 0),
               material=mat)
    return b.build()


def clutter(n_objects=20, stiffness=1e5, dissipation=50.0, mu=0.5, seed=0, bin_inner=0.5, wall=0.05,
            wall_height=0.5, drop_height=0.1, spheres_only=False):
    """CENIC hard clutter: alternating 10 cm boxes (1 kg) and 10 cm spheres (0.524 kg) dropped into an open bin
    (floor = ground half-space, four fixed box walls), a 3 x 3 grid per layer, layers 14 cm apart, poses jittered
    with ``seed`` (no initial overlaps). ``stiffness`` is the combined pair stiffness [N/m]. ``spheres_only``: the
    boxes become spheres (same positions and random stream, bodies named ``sphere<i>``)."""
    rng = np.random.default_rng(seed)
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    half = 0.5 * bin_inner
    for i, (x, y, lx, ly) in enumerate([(half + wall / 2, 0, wall, bin_inner + 2 * wall),
                                        (-half - wall / 2, 0, wall, bin_inner + 2 * wall),
                                        (0, half + wall / 2, bin_inner, wall),
                                        (0, -half - wall / 2, bin_inner, wall)]):
        b.add_fixed(f"wall{i}", Box((lx, ly, wall_height)), position=(x, y, wall_height / 2), material=mat)
    per_side = max(1, int((bin_inner - 0.02) // 0.15))  # 3 x 3 per layer in a 0.5 m bin
    per_layer = per_side * per_side
    spacing = 0.15
    for i in range(n_objects):
        layer, k = divmod(i, per_layer)
        x = (k % per_side - 0.5 * (per_side - 1)) * spacing + rng.uniform(-0.005, 0.005)
        y = (k // per_side - 0.5 * (per_side - 1)) * spacing + rng.uniform(-0.005, 0.005)
        z = drop_height + 0.14 * layer
        rot = rng.uniform(-0.15, 0.15, size=3)
        if (k + layer) % 2 == 0 and not spheres_only:  # checkerboard: columns alternate boxes and spheres
            b.add_body(f"box{i}", Box((0.1, 0.1, 0.1)), mass=1.0, position=(x, y, z), rotation=rot, material=mat)
        else:
            b.add_body(f"sphere{i}", Sphere(0.05), mass=0.524, position=(x, y, z), material=mat)
    return b.build()


def go1_on_ground(height=0.30, stiffness=1e5, dissipation=10.0, mu=1.0):
    """The Go1 (example-robot-data, SRDF standing pose) with its base ``height`` [m] above the ground; robot and
    ground share one material (pair stiffness k/2)."""
    mat = ContactMaterial(stiffness=stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    b.add_robot("go1", name="go1", position=(0, 0, height), material=mat)
    return b.build()


# --------------------------------------------------------------------------------------------------------------
# Panda grasping a box (CENIC §VII-D1, Fig. 6c / 12): shared by tests/test_grasp.py and benchmarks/stiff_control.py
# --------------------------------------------------------------------------------------------------------------

PANDA_TCP = "panda/panda_hand_tcp"  # between the finger pads, 10.34 cm below the hand flange along its z axis
HAND_DOWN = np.diag([1.0, -1.0, -1.0])  # hand z down, fingers closing along world y (the Panda's ready pose)


def min_jerk(s):
    """Minimum-jerk blend on s ∈ [0, 1] (clipped): position 10s³ − 15s⁴ + 6s⁵ and its first two derivatives in s."""
    s = min(max(float(s), 0.0), 1.0)
    return (s**3 * (10 - 15 * s + 6 * s * s), 30 * s * s * (1 - s) ** 2, 60 * s * (1 - s) * (1 - 2 * s))


def panda_ik(system, position, rotation=HAND_DOWN, q_init=None, frame=PANDA_TCP, robot="panda", tol=1e-10,
             max_iters=200, damping=1e-6):
    """Damped least-squares inverse kinematics of the Panda's 7 arm joints for a frame pose (world).

    position [m], rotation (3x3): target pose of ``frame``. Iterates Δq = Jᵀ(J Jᵀ + λI)⁻¹ e with the 6-D error
    e = log(oMf⁻¹ oMd) in the frame (Pinocchio LOCAL Jacobian), clipped to the joint limits; the fingers keep their
    values from ``q_init`` (default ``system.q0``). Returns the full q (nq,); raises RuntimeError if the pose is
    not reached to ``tol`` (squared error norm)."""
    m = system.model
    d = m.createData()
    fid = system.frame_id(frame)
    arm_q = system.robot_q_indices(robot)[:7]
    arm_v = system.robot_v_indices(robot)[:7]
    q = np.array(system.q0 if q_init is None else q_init, dtype=float)
    target = pin.SE3(np.asarray(rotation, dtype=float), np.asarray(position, dtype=float))
    lo, hi = m.lowerPositionLimit[arm_q], m.upperPositionLimit[arm_q]
    for _ in range(max_iters):
        pin.framesForwardKinematics(m, d, q)
        err = pin.log6(d.oMf[fid].actInv(target)).vector
        if err @ err < tol:
            return q
        J = pin.computeFrameJacobian(m, d, q, fid, pin.LOCAL)[:, arm_v]
        J = pin.Jlog6(d.oMf[fid].actInv(target)) @ J
        dq = J.T @ np.linalg.solve(J @ J.T + damping * np.eye(6), err)
        q[arm_q] = np.clip(q[arm_q] + dq, lo, hi)
    raise RuntimeError(f"panda_ik: pose not reached (|e|² = {err @ err:.3g}) for position {position}")


def tcp_pose_ik(model, data, q, frame, arm_q, arm_v, goal, iterations=3, damping=1e-4):
    """Arm joints q[arm_q] moved toward the pose ``goal`` (pin.SE3, world) of frame id ``frame``: ``iterations``
    damped least-squares steps on the frame's LOCAL_WORLD_ALIGNED Jacobian from q (nq,), written into q; returns
    q[arm_q]. The differential IK of the end-effector-delta actions (a few steps from the previous target)."""
    for _ in range(iterations):
        pin.framesForwardKinematics(model, data, q)
        X = data.oMf[frame]
        err = np.concatenate([goal.translation - X.translation, pin.log3(goal.rotation @ X.rotation.T)])
        J = pin.computeFrameJacobian(model, data, q, frame, pin.LOCAL_WORLD_ALIGNED)[:, arm_v]
        q[arm_q] += J.T @ np.linalg.solve(J @ J.T + damping * np.eye(6), err)
    return q[arm_q]


def panda_box_grasp(box_xy=(0.5, -0.15), box_size=(0.16, 0.06, 0.21), box_mass=0.4, grasp_depth=0.02,
                    finger_gap=0.005, lifted=0.0, armature=0.1, robot_material=None, box_material=None,
                    ground_material=None):
    """The Panda (fixed base at the origin) with its hand around the top of a box that stands on the ground.

    box_size: (x, y, z) side lengths [m]; the fingers close along y (default: a 16 x 6 x 21 cm cereal box, 0.4 kg,
    gripped across its 6 cm side). The tool frame :data:`PANDA_TCP` (the middle of the finger pads) is placed
    ``grasp_depth`` below the box top, hand pointing down (:data:`HAND_DOWN`), arm joints by :func:`panda_ik`
    from the SRDF ready pose. The fingers start ``finger_gap`` [m] clear of the box on each side (0: touching).
    lifted: the box (and hand) start this far above the ground [m] (held in the air; use with finger_gap=0).
    armature: reflected rotor inertia of the 7 arm joints [kg m²] (example-robot-data's URDF has none; MuJoCo
    Menagerie's Panda uses 0.1). It matters for stiff joint-space control: the implicit treatment keeps only
    diag(∂τ/∂v) of an inverse-dynamics controller, which is stable at high gains only if the Jacobi iteration
    of the mass matrix converges, ρ(diag(M)⁻¹ offdiag(M)) < 1 — about 1.2 for the bare Panda, < 0.96 with 0.1.

    Materials (per geometry; pairs combine in series, docs/physics.md §2.2): robot k = 1e5 N/m, d = 20 s/m, μ = 1
    (rubber-like pads); box k = 1e5 N/m, d = 20 s/m, μ = 1; ground k = 1e5 N/m, d = 20 s/m, μ = 0.5. Finger/box
    pairs: k = 5e4 N/m per contact point, μ = 1. Returns the system; ``system.q0`` is the initial state."""
    robot_material = robot_material or ContactMaterial(stiffness=1e5, dissipation=20.0, mu_static=1.0)
    box_material = box_material or ContactMaterial(stiffness=1e5, dissipation=20.0, mu_static=1.0)
    ground_material = ground_material or ContactMaterial(stiffness=1e5, dissipation=20.0, mu_static=0.5)
    lx, ly, lz = map(float, box_size)
    bx, by = map(float, box_xy)
    # static sag of the box on the ground: 4 corner points, pair stiffness in series
    k_pair = box_material.stiffness * ground_material.stiffness / (box_material.stiffness + ground_material.stiffness)
    zc = 0.5 * lz + float(lifted) - (box_mass * 9.81 / (4 * k_pair) if lifted == 0.0 else 0.0)
    opening = min(0.5 * ly + float(finger_gap), 0.04)  # each finger's joint position (limit 4 cm)

    def build(q_robot):
        b = SceneBuilder()
        b.add_ground(ground_material)
        b.add_robot("panda", name="panda", material=robot_material, q0=q_robot,
                    armature={f"panda_joint{i}": float(armature) for i in range(1, 8)})
        b.add_body("box", Box((lx, ly, lz)), mass=box_mass, position=(bx, by, zc), material=box_material)
        return b.build()

    sys0 = build(None)
    q = sys0.q0.copy()
    fq = sys0.robot_q_indices("panda")[7:]
    q[fq] = opening
    q = panda_ik(sys0, (bx, by, zc + 0.5 * lz - grasp_depth), q_init=q)
    return build(q[sys0.robot_q_indices("panda")])


# --------------------------------------------------------------------------------------------------------------
# A peg in two-point contact in a channel (Whitney 1982): shared by tests/test_peg_physics.py and the creep study
# --------------------------------------------------------------------------------------------------------------


class TwoPointContact(NamedTuple):
    """Where a tilted peg of width ``width`` touches a channel of width ``width + clearance`` at insertion depth
    ``depth`` (the length of its left face below the left wall's top edge): the tilt ``theta`` [rad] (its tip leaning
    towards +x) solving depth·sin θ + width·cos θ = width + clearance, the tip centre ``tip`` (3,), the peg axis
    ``down`` (3,) (unit, from its top to its tip), ``normal`` (3,) (unit, the peg's right face normal) and the two
    contact points: ``corner`` (its lower right edge on the right wall) and ``edge`` (the left wall's top edge on
    its left face), world frame, the channel's top at z = 0 and centred on x = 0."""

    theta: float
    tip: np.ndarray
    down: np.ndarray
    normal: np.ndarray
    corner: np.ndarray
    edge: np.ndarray


def two_point_contact(width, clearance, depth):
    """The :class:`TwoPointContact` geometry of a peg in a channel."""
    D = width + clearance
    theta = math.asin(D / math.hypot(depth, width)) - math.atan2(width, depth)
    down = np.array([math.sin(theta), 0.0, -math.cos(theta)])
    normal = np.array([math.cos(theta), 0.0, math.sin(theta)])
    edge = np.array([-0.5 * D, 0.0, 0.0])
    tip = edge + 0.5 * width * normal + depth * down
    return TwoPointContact(theta, tip, down, normal, tip + 0.5 * width * normal, edge)


def peg_in_channel(width=0.02, clearance=4e-4, depth=0.01, length=0.08, thickness=0.02, mass=0.1, mu=0.3,
                   stiffness=1e7, dissipation=10.0, wall_depth=0.2):
    """A box peg (``width`` in x, ``thickness`` in y, ``length``) tilted in two-point contact
    (:func:`two_point_contact`) between two fixed walls (a channel of width ``width + clearance``, its top at z = 0,
    ``wall_depth`` deep, no floor), no gravity: what is left is the wrench a test applies. Both contacts start
    exactly touching. Returns (system, TwoPointContact)."""
    g = two_point_contact(width, clearance, depth)
    mat = ContactMaterial(stiffness=stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder(gravity=(0.0, 0.0, 0.0))
    D = width + clearance
    for name, x in (("left", -0.5 * D - 0.05), ("right", 0.5 * D + 0.05)):
        b.add_fixed(name, Box((0.1, 4 * thickness, wall_depth)), position=(x, 0.0, -0.5 * wall_depth), material=mat)
    b.add_body("peg", Box((width, thickness, length)), mass=mass, position=g.tip - 0.5 * length * g.down,
               rotation=_rot_y(-g.theta), material=mat)
    return b.build(), g
