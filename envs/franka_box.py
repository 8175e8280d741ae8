"""CenicFranka-v0: a Franka Panda picks a box from a start region and places it upright in a target region.

Scene: the Panda (example-robot-data, fixed base at the origin on the table top z = 0, armature 0.1 kg m² on the
arm) and a box on the table. The table top is a half-space (μ 0.5); its footprint (``table_xy``) bounds the episode.
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pinocchio as pin
from gymnasium import spaces

from cenic_gym import Box, ContactMaterial, InverseDynamicsPD, JointPD, SceneBuilder
from cenic_gym.env import CenicEnv, ObsLayout, Segment, StateView
from cenic_gym.model import matrix_to_quat_xyzw
from cenic_gym.scenes import min_jerk, panda_ik, tcp_pose_ik

from . import panda_constants as pc


def default_config():
    """Every number of the task (SI units: m, kg, s, rad), overridable by constructor kwargs."""
    return dict(
        control_period=0.05,  # 20 Hz
        action_type="joint_delta",  # or "ee_delta" (6-D end-effector delta by differential IK)
        joint_delta_scale=0.05,  # arm target change [rad] per step at |a| = 1 (1 rad/s)
        ee_delta_scale=(0.02, 0.15),  # TCP target change [m], [rad] per step at |a| = 1
        ee_delta_origin="target",  # or "measured": the translation delta moves the measured TCP, not the target
        arm_kp=pc.ARM_KP, arm_kd=pc.ARM_KD, grip_kp=pc.GRIP_KP, grip_kd=pc.GRIP_KD, grip_force=pc.GRIP_FORCE,
        armature=pc.ARMATURE,
        box_size=(0.16, 0.06, 0.21),  # (x, y, z) side lengths in the box frame; grasped across y (6 cm)
        box_mass=0.4,
        box_mu=1.0,  # cardboard on rubber pads; the box/table pair combines to 2·1·0.5/1.5 = 0.67
        table_mu=0.5,
        finger_mu=1.0,
        stiffness=1e5, dissipation=20.0,  # per geometry [N/m], [s/m] (pairs in series: 5e4 N/m)
        start_xy=((0.45, 0.60), (-0.30, -0.10)),  # box start region x, y ranges [m]
        start_yaw=(-0.6, 0.6),  # box start yaw range [rad]
        target_xy=((0.45, 0.60), (0.10, 0.30)),  # target region [m]
        home_noise=0.02,  # uniform noise on the arm's start joints [rad]
        table_xy=((-0.3, 0.9), (-0.6, 0.6)),  # table footprint: the box leaving it terminates
        success_radius=0.025, success_tilt=math.radians(15.0), rest_speed=0.05, rest_spin=0.5,
        lift_height=0.10,
        place_zone=0.05,  # horizontal distance box -> target [m] within which the box may be lowered at no cost
        place_height=0.5,  # the place term falls linearly to 0 at this height of the box above its rest [m]
        reward_scales=dict(reach=1.0, grasp=1.0, lift=2.0, transport=2.0, place=4.0, release=8.0,
                           action_rate=-0.01, table_collision=-1.0),
        randomization=dict(box_mass=(0.25, 0.6), box_mu=(0.6, 1.2), table_mu=(0.35, 0.7), arm_kp_scale=(0.8, 1.2),
                           box_size_scale=(0.85, 1.15)),  # each side length scaled independently
        goal_conditioned=False,  # True: the goal-conditioned form, FrankaBoxGoalEnv (dict observations for HER:
        # observation / achieved_goal / desired_goal, and the GoalEnv API compute_reward / compute_terminated / ...)
        task="pick_place",  # or "reach" (goal-conditioned curriculum rung: bring the TCP to the goal)
        reward_type="dense",  # "sparse" for the goal-conditioned form
        goal_threshold=0.025,
        reach_goal_range=None,  # task="reach": None (goal 10 cm above a target_xy draw) or a half-width [m]:
        # goal = start TCP + U(-r, r) per axis (FetchReach's target_range)
        grasped_start=0.0,  # probability that an episode starts with the box already grasped (a TRAINING aid, the
        # HER paper's trick; evaluate with 0): the arm is put at the grasp point and the gripper closed for
        # grasp_settle seconds of simulation before the first observation
        placed_start=0.0,  # probability that an episode starts with the box grasped AND standing on the target (a
        # TRAINING aid, reverse curriculum: the last stage, letting go, is met from the first update); evaluate with 0
        grasp_settle=0.4,  # [s]
    )


def randomize(config, rng):
    """Per-episode physical parameters: the nominal ones, or draws from ``config["randomization"]`` ranges when
    ``domain_randomization`` is on (a dict there overrides some ranges)."""
    dr = config["domain_randomization"]
    ranges = config["randomization"] if dr is True else ({**config["randomization"], **dr} if dr else None)
    size = np.asarray(config["box_size"], dtype=float)
    if not ranges:
        return dict(box_mass=config["box_mass"], box_mu=config["box_mu"], table_mu=config["table_mu"],
                    arm_kp_scale=1.0, box_size=tuple(size))
    out = {k: float(rng.uniform(*ranges[k])) for k in ("box_mass", "box_mu", "table_mu", "arm_kp_scale")}
    out["box_size"] = tuple(size * rng.uniform(*ranges["box_size_scale"], size=3))
    return out


def quat_xyzw(R):
    """Unit quaternion (x, y, z, w) of a rotation matrix, with w ≥ 0 (one of the two signs, for observations)."""
    q = matrix_to_quat_xyzw(R)
    return -q if q[3] < 0 else q


def tilt(R):
    """Angle [rad] between a body's z axis and the world z axis."""
    return math.acos(min(1.0, max(-1.0, R[2, 2])))


# The observation (world frame, SI units), declared once: space, noise scales, docstring table and index slices.
OBS = ObsLayout(
    Segment("arm_joint_positions", 7, 0.005, "arm joint positions [rad]"),
    Segment("arm_joint_velocities", 7, 0.05, "arm joint velocities [rad/s]"),
    Segment("gripper_opening", 1, 0.001, "gripper opening (both fingers) [m]"),
    Segment("tcp_position", 3, 0.005, "TCP position [m]"),
    Segment("tcp_quaternion", 4, 0.01, "TCP orientation quaternion (x, y, z, w), w ≥ 0"),
    Segment("box_position", 3, 0.005, "box position [m]"),
    Segment("box_quaternion", 4, 0.01, "box orientation quaternion (x, y, z, w)"),
    Segment("box_velocity", 6, 0.02, "box linear [m/s], angular [rad/s] velocity"),
    Segment("box_minus_tcp", 3, 0.005, "box position − TCP position [m]"),
    Segment("target", 3, 0.0, "target: box centre at rest there [m]"),
    Segment("previous_action", 8, 0.0, "previous action"),
)


class Placement(NamedTuple):
    """Where the box is with respect to its target: ``d_xy`` [m] box centre → target horizontally, ``tilt`` [rad]
    of its z axis from vertical, ``dz`` [m] box height above its rest height, ``placed``: within
    ``success_radius``, tilted less than ``success_tilt`` and at rest height (|Δz| < 1 cm)."""

    d_xy: float
    tilt: float
    dz: float
    placed: bool


class FingerContacts(NamedTuple):
    """Contacts of the last accepted step: left finger–box, right finger–box, hand or finger–table."""

    left: bool
    right: bool
    table: bool


class FrankaView(StateView):
    """The quantities of one state the task reads (world frame): TCP pose ``p_tcp``, ``R_tcp``; box pose ``p_box``,
    ``R_box`` and velocity ``v_box``, ``w_box``; on first use the finger ``contacts`` (:class:`FingerContacts`) and
    the box's ``placement`` (:class:`Placement`), shared by the reward's stages, ``evaluate()`` and the teachers."""

    def __init__(self, env):
        super().__init__(env)
        sim = env.sim
        self.p_tcp, self.R_tcp = sim.body_pose(pc.TCP)
        self.p_box, self.R_box = sim.body_pose("box")
        self.v_box, self.w_box = sim.body_velocity("box")

    @cached_property
    def contacts(self):
        e = self.env
        cr = e.sim.contact_results()
        pairs = set(zip(cr.geom_a.tolist(), cr.geom_b.tolist()))
        pairs |= {(b, a) for a, b in pairs}
        touching = {a for a, b in pairs if b == e.box_geom}
        on_table = {a for a, b in pairs if b == e.table_geom}
        return FingerContacts(bool(touching & e.left_geoms), bool(touching & e.right_geoms),
                              bool(on_table & e.hand_geoms))

    @cached_property
    def placement(self):
        e = self.env
        c = e.config
        d_xy = float(np.linalg.norm((self.p_box - e.target)[:2]))
        tilt_box = tilt(self.R_box)
        dz = self.p_box[2] - e.rest_z
        return Placement(d_xy, tilt_box, dz,
                         bool(d_xy < c["success_radius"] and tilt_box < c["success_tilt"] and abs(dz) < 0.01))


class FrankaBoxEnv(CenicEnv):
    """## Description

    A Franka Panda on a table picks a box (default 16 × 6 × 21 cm, 0.4 kg, standing upright) from a random pose
    in a start region and places it upright in a target region drawn per episode, then lets go. Physics is CENIC
    at accuracy ε (default 1e-3): each 0.05 s step advances the simulator under an implicit inverse-dynamics PD
    on the arm and a force-limited PD on the fingers (both integrated inside every convex contact step).

    ## Action space

    ``Box(-1, 1, (8,), float32)``; out-of-range values are clipped, NaN or a wrong shape raise ``ValueError``.

    | index | action_type="joint_delta" (default)                 | action_type="ee_delta"                      |
    |-------|------------------------------------------------------|---------------------------------------------|
    | 0–6   | arm joint target change, × 0.05 rad (joint limits)    | 0–2: TCP target translation × 0.02 m (world) |
    |       |                                                      | 3–5: TCP target rotation × 0.15 rad (world)  |
    |       |                                                      | 6: unused                                    |
    | 7     | gripper: opening target (a + 1)/2 × 4 cm per finger; the fingers squeeze with at most 20 N        |

    ee_delta scales are ``ee_delta_scale`` (m, rad). By default (``ee_delta_origin="target"``) each delta moves
    the arm's previous target, which the PD (ω = 20 rad/s) follows with a lag: at |a| = 1 and 2 cm per step the
    target leads the TCP by ~4 cm and the TCP coasts on after the actions stop. With ``"measured"`` (FetchReach's
    convention: its mocap is reset to the gripper before each delta) the new target is the measured TCP position
    plus the delta, so the target never leads the TCP by more than one delta (the TCP stops within a step).

    ## Observation space

    ``Box(-inf, inf, (49,), float32)`` (world frame, SI units; ``franka_box.OBS`` declares it):

OBSERVATION_TABLE

    The goal-conditioned form is the subclass :class:`FrankaBoxGoalEnv` (``CenicFrankaGoal-v0``;
    ``goal_conditioned=True`` given to this class, e.g. ``gym.make("CenicFranka-v0", goal_conditioned=True)``, builds
    it too): its observation is a dict, ``observation`` (the 49 above), ``achieved_goal`` (box position; the TCP
    position for ``task="reach"``) and ``desired_goal`` (the target), as Gymnasium-Robotics defines them, and only it
    has the GoalEnv API: ``compute_reward`` / ``compute_terminated`` / ``compute_truncated``, vectorized over leading
    axes. This class (Box observations) has no goal API, so SB3 (``check_env``, HER) takes it for the plain env it
    is. ``gym.make("CenicFrankaGoal-v0")`` also exposes the three methods on the returned wrapper
    (:class:`cenic_gym.env.GoalEnvAPI`: Gymnasium 1.x wrappers forward no attributes).

    ## Rewards

    reward = Σ scale_k · term_k (``info["reward/<k>"]`` holds each scaled term; scales in ``reward_scales``). The
    terms are staged: once the box is placed every earlier stage pays in full, so no later stage pays less than an
    earlier one (lowering the grasped box above the target keeps lift and transport; opening the gripper on a
    placed box loses nothing). With grasp = both fingers touch the box, Δz = box height above its resting height,
    d_xy = box → target horizontally, near = d_xy < ``place_zone`` (5 cm), placed = d_xy < 2.5 cm, tilt < 15°,
    |Δz| < 1 cm, and opening = the commanded finger opening / 4 cm ∈ [0, 1]:

    - reach (1): 1 when grasp or placed, else 1 − tanh(10 d), d = distance TCP → grasp point (3 cm below the
      box top)
    - grasp (1): 1 when placed, else grasp
    - lift (2): 1 when placed, else grasp · (1 if near else clip(Δz / 0.10 m, 0, 1))
    - transport (2): 1 when placed, else grasp · [Δz > 2 cm or near] · (1 − tanh(5 d_xy))
    - place (4): max(0, 1 − tilt / 90°) · (1 − tanh(10 d_xy)) · max(0, 1 − |Δz| / 0.5 m) (linear in height,
      so a box carried high above the target is drawn down)
    - release (8): placed · (opening + [no finger touches the box]) / 2 (the commanded opening pays at once, before
      the fingers leave the box)
    - action_rate (−0.01): ‖a − a_prev‖²
    - table_collision (−1): 1 when the hand or a finger touches the table

    The goal-conditioned form's reward is its ``compute_reward(achieved_goal, desired_goal, info)`` of the
    observation's goals (one term, ``goal``): with ``reward_type="sparse"`` −1 until the goal is met (distance <
    ``goal_threshold``, 2.5 cm; for ``task="reach"``: the TCP within it of the goal), then 0; with "dense" −distance.

    ## Success

    ``info["is_success"]`` (``evaluate()``): the box centre within 2.5 cm (horizontally) of the target, resting on
    the table, tilted less than 15°, released (no finger contact) and at rest (speed < 0.05 m/s, spin < 0.5
    rad/s). For ``task="reach"``: the TCP within ``goal_threshold`` of the goal.

    ## Starting state

    Arm at the SRDF home pose plus U(±0.02) rad per joint, fingers open (4 cm each). Box upright, resting on the
    table at x ∈ [0.45, 0.60], y ∈ [−0.30, −0.10] m, yaw ∈ [−0.6, 0.6] rad; target at x ∈ [0.45, 0.60],
    y ∈ [0.10, 0.30] m. For ``task="reach"`` the goal is 10 cm above that target (z = box rest height + 0.1 m),
    or, with ``reach_goal_range`` = r [m], the start TCP position + U(−r, r) per axis (FetchReach: r = 0.15 m).
    With ``domain_randomization``: box mass U(0.25, 0.6) kg, box μ U(0.6, 1.2), table μ
    U(0.35, 0.7), arm K_p × U(0.8, 1.2), each box side × U(0.85, 1.15) (inertia follows) per episode (setters:
    nothing is rebuilt).

    ## Episode end

    Terminated when the box centre leaves the table footprint (x ∈ [−0.3, 0.9], y ∈ [−0.6, 0.6] m) or falls below
    it; truncated after 200 steps (10 s, ``max_episode_steps``) or on a simulator failure (``info["sim_failure"]``).

    ## Arguments

    With ``grasped_start`` = p > 0 (a training aid, default 0: Andrychowicz et al. 2017, "Hindsight Experience
    Replay", start half of the training episodes with the box in the gripper), an episode starts with the box
    grasped with probability p: after the draw above, the arm is moved (IK) so that the TCP is at the grasp point
    with the start pose's hand orientation, fingers open 5 mm clear of the box, then the gripper closes for
    ``grasp_settle`` seconds of simulation (arm targets held) and the episode starts from that state (``sim.t`` =
    grasp_settle). With ``placed_start`` = p' > 0 (default 0; p + p' ≤ 1) an episode starts, with probability p',
    in the same way but with the box standing on the target (x, y = the target's, same yaw): the state of a placed,
    still held box, from which only letting go is left (a reverse curriculum, Florensa et al. 2017, "Reverse
    Curriculum Generation for Reinforcement Learning"). One uniform draw u per episode picks the start (grasped for
    u < p, placed for p ≤ u < p + p'); it uses the episode's generator only when p or p' > 0, so episodes with
    both 0 are unchanged.

    ``gym.make("CenicFranka-v0", **kwargs)``: the common options of :mod:`cenic_gym.env` (accuracy, max_step,
    fixed_step, control_period, domain_randomization, obs_noise, action_delay, render_mode) and every key of
    :func:`default_config`. ``reset(options=...)`` accepts ``box_pose`` (x, y, yaw) and ``target_xy`` (x, y).

    Rendering (:mod:`cenic_gym.render`): ``render_mode`` "rgb_array" or "human", ``render_width``,
    ``render_height`` [px], ``camera`` (default: the class's ``CAMERA``), ``viewer``.

    ## Version History

    - v0: initial version (cenic-gym 0.1).
    """

    OBS = OBS  # the module's declaration (the scripted policies read its slices too)
    View = FrankaView

    RESET_OPTIONS = ("box_pose", "target_xy")

    @staticmethod
    def default_config():
        return default_config()

    CAMERA = dict(lookat=(0.3, -0.1, 0.25), distance=1.4, azimuth=215.0, elevation=-25.0)  # render default

    def __new__(cls, *args, **kwargs):
        """``FrankaBoxEnv(goal_conditioned=True, ...)`` (what ``gym.make("CenicFranka-v0", goal_conditioned=True)``
        calls) builds a :class:`FrankaBoxGoalEnv`: the goal API exists only on the goal-conditioned form."""
        if cls is FrankaBoxEnv and kwargs.get("goal_conditioned"):
            cls = FrankaBoxGoalEnv
        return super().__new__(cls)

    def _check_config(self, cfg):
        if cfg["goal_conditioned"] and not isinstance(self, FrankaBoxGoalEnv):
            raise ValueError(f"goal_conditioned=True is the goal-conditioned form: make it with "
                             f"gym.make('CenicFrankaGoal-v0') or FrankaBoxGoalEnv, not {type(self).__name__}")
        if cfg["action_type"] not in ("joint_delta", "ee_delta"):
            raise ValueError(f"action_type must be 'joint_delta' or 'ee_delta', got {cfg['action_type']!r}")
        if cfg["task"] not in ("pick_place", "reach"):
            raise ValueError(f"task must be 'pick_place' or 'reach', got {cfg['task']!r}")
        if cfg["reward_type"] not in ("dense", "sparse"):
            raise ValueError(f"reward_type must be 'dense' or 'sparse', got {cfg['reward_type']!r}")
        if cfg["ee_delta_origin"] not in ("target", "measured"):
            raise ValueError(f"ee_delta_origin must be 'target' or 'measured', got {cfg['ee_delta_origin']!r}")
        g, settle = cfg["grasped_start"], cfg["grasp_settle"]
        for key in ("grasped_start", "placed_start"):
            p = cfg[key]
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
                raise ValueError(f"{key} must be a probability in [0, 1], got {p!r}")
        if g + cfg["placed_start"] > 1.0:
            raise ValueError(f"grasped_start + placed_start must be at most 1, got {g!r} + {cfg['placed_start']!r}")
        if isinstance(settle, bool) or not isinstance(settle, (int, float)) or not 0.0 < settle < math.inf:
            raise ValueError(f"grasp_settle must be a duration > 0 [s], got {settle!r}")
        r = cfg["reach_goal_range"]
        if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or r < 0):
            raise ValueError(f"reach_goal_range must be None or a finite half-width >= 0 [m], got {r!r}")
        self.action_space = spaces.Box(-1.0, 1.0, (8,), np.float32)
        self.observation_space = OBS.space()

    # -- scene ---------------------------------------------------------------------------------------------------
    def _build(self):
        c = self.config
        mat = lambda mu: ContactMaterial(stiffness=c["stiffness"], dissipation=c["dissipation"],  # noqa: E731
                                         mu_static=mu)
        b = SceneBuilder()
        b.add_ground(mat(c["table_mu"]), name="table")
        b.add_robot("panda", name=pc.ROBOT, material=mat(c["finger_mu"]),
                    q0=np.concatenate([pc.HOME, [pc.FINGER_OPEN, pc.FINGER_OPEN]]),
                    armature={j: c["armature"] for j in pc.ARM_JOINTS})
        lx, ly, lz = c["box_size"]
        b.add_body("box", Box((lx, ly, lz)), mass=c["box_mass"], position=(0.5, -0.2, 0.5 * lz),
                   material=mat(c["box_mu"]))
        system = b.build()
        self.system = system
        self.arm_v = system.robot_v_indices(pc.ROBOT, pc.ARM_JOINTS)
        self.arm_q = system.robot_q_indices(pc.ROBOT, pc.ARM_JOINTS)
        self.finger_v = system.robot_v_indices(pc.ROBOT, pc.FINGER_JOINT)
        self.finger_q = system.robot_q_indices(pc.ROBOT, pc.FINGER_JOINT)
        self.box_q, self.box_v = system.q_slice("box"), system.v_slice("box")
        m = system.model
        self.arm_lower, self.arm_upper = m.lowerPositionLimit[self.arm_q], m.upperPositionLimit[self.arm_q]
        names = [g.name for g in system.geometries]
        self.box_geom = names.index("box/0")
        self.table_geom = names.index("table")
        self.left_geoms = {i for i, n in enumerate(names) if n.startswith(pc.LEFT_FINGER_GEOMS)}
        self.right_geoms = {i for i, n in enumerate(names) if n.startswith(pc.RIGHT_FINGER_GEOMS)}
        self.hand_geoms = self.left_geoms | self.right_geoms | {names.index("panda/panda_hand_0")}
        self.arm = InverseDynamicsPD(system, self.arm_v, kp=c["arm_kp"], kd=c["arm_kd"], q_d=pc.HOME)
        self.grip = JointPD(system, self.finger_v, kp=c["grip_kp"], kd=c["grip_kd"], q_d=pc.FINGER_OPEN,
                            effort_limit=c["grip_force"])
        self._kin = m.createData()  # the policy-side kinematics (differential IK, grasp point)
        self.tcp = system.frame_id(pc.TCP)
        return system, [self.arm, self.grip]

    # -- episode -------------------------------------------------------------------------------------------------
    def _reset_task(self, options):
        c, rng, sim = self.config, self.np_random, self.sim
        (x0, x1), (y0, y1) = c["start_xy"]
        if "box_pose" in options:
            bx, by, yaw = _floats(options["box_pose"], 3, "box_pose")
        else:
            bx, by, yaw = rng.uniform(x0, x1), rng.uniform(y0, y1), rng.uniform(*c["start_yaw"])
        (tx0, tx1), (ty0, ty1) = c["target_xy"]
        if "target_xy" in options:
            tx, ty = _floats(options["target_xy"], 2, "target_xy")
        else:
            tx, ty = rng.uniform(tx0, tx1), rng.uniform(ty0, ty1)
        params = randomize(c, rng)
        self.box_dims = np.array(params["box_size"])
        self.rest_z = 0.5 * self.box_dims[2]  # box centre height at rest (the sag, m g / (4 k), is < 0.1 mm)
        shape = Box(tuple(self.box_dims))
        sim.set_geometry_shape("box/0", shape)
        sim.set_body_inertia("box", mass=params["box_mass"], inertia=shape.inertia(params["box_mass"]).inertia)
        sim.set_geometry_material("box/0", mu_static=params["box_mu"], mu_dynamic=params["box_mu"])
        sim.set_geometry_material("table", mu_static=params["table_mu"], mu_dynamic=params["table_mu"])
        self.arm.set_gains(kp=c["arm_kp"] * params["arm_kp_scale"])
        self.params = params
        self.target = np.array([tx, ty, self.rest_z])
        q = sim.q
        q[self.arm_q] = np.clip(pc.HOME + rng.uniform(-c["home_noise"], c["home_noise"], 7), self.arm_lower,
                                self.arm_upper)
        quat = matrix_to_quat_xyzw(pin.utils.rpyToMatrix(0.0, 0.0, yaw))
        q[self.box_q] = np.concatenate([[bx, by, self.rest_z], quat])
        sim.set_state(q=q, v=np.zeros(self.system.nv))
        self.arm.set_target(q_d=q[self.arm_q], v_d=0.0)
        self.grip.set_target(q_d=pc.FINGER_OPEN)
        if c["task"] == "reach" and c["reach_goal_range"] is None:  # the goal: a TCP position above the table
            self.target = np.array([tx, ty, self.rest_z + 0.1])
        elif c["task"] == "reach":  # FetchReach's goal: a box of half-width r around the start TCP
            r = c["reach_goal_range"]
            self.target = sim.body_pose(pc.TCP)[0] + rng.uniform(-r, r, 3)
        g, p = c["grasped_start"], c["placed_start"]
        if g > 0.0 or p > 0.0:  # one draw per episode, made only when a training aid is on
            u = rng.uniform()
            if u < g + p:
                if u >= g:  # placed start: the box stands on the target, in the gripper
                    q[self.box_q][:2] = self.target[:2]
                    sim.set_state(q=q, v=np.zeros(self.system.nv))
                self._close_on_box(yaw)

    def _close_on_box(self, yaw):
        """Start grasped: the TCP at the grasp point with the start pose's hand orientation (IK), each finger
        5 mm clear of the box's extent along the closing axis, then the gripper closes for ``grasp_settle`` [s]."""
        sim = self.sim
        s = self.View(self)  # the start state drawn so far
        rel = yaw - math.atan2(s.R_tcp[1, 0], s.R_tcp[0, 0])  # box yaw relative to the hand [rad]
        lx, ly = self.box_dims[:2]
        across = min(ly / max(abs(math.cos(rel)), 1e-9), lx / max(abs(math.sin(rel)), 1e-9))  # box width [m]
        q = sim.q
        q[self.system.robot_q_indices(pc.ROBOT)[7:]] = min(0.5 * across + 0.005, pc.FINGER_OPEN)  # both fingers
        q = panda_ik(self.system, self._grasp_point(s), s.R_tcp, q_init=q, frame=pc.TCP, tol=1e-8)
        sim.set_state(q=q, v=np.zeros(self.system.nv))
        self.arm.set_target(q_d=q[self.arm_q], v_d=0.0)
        self.grip.set_target(q_d=0.0)
        sim.advance_to(sim.t + self.config["grasp_settle"], inputs_changed=True)

    def _apply_action(self, action):
        c = self.config
        q_d = np.asarray(self.arm.q_d, dtype=float)
        if c["action_type"] == "joint_delta":
            q_d = q_d + c["joint_delta_scale"] * action[:7]
        else:
            origin = self.sim.body_pose(pc.TCP)[0] if c["ee_delta_origin"] == "measured" else None
            q_d = self._ik_delta(q_d, action[:3] * c["ee_delta_scale"][0], action[3:6] * c["ee_delta_scale"][1],
                                 origin)
        self.arm.set_target(q_d=np.clip(q_d, self.arm_lower, self.arm_upper))
        self.grip.set_target(q_d=0.5 * (action[7] + 1.0) * pc.FINGER_OPEN)

    def _ik_delta(self, q_d, dp, drot, origin=None, iterations=3, damping=1e-4):
        """Arm targets whose TCP pose is the current target's rotated by drot [rad] and moved by dp [m] (world
        frame) from ``origin`` [m] (the target's TCP position when None; the measured one for
        ``ee_delta_origin="measured"``): damped least squares on the TCP Jacobian (LOCAL_WORLD_ALIGNED), a few
        iterations from q_d."""
        m, d = self.system.model, self._kin
        q = self.sim.q
        q[self.arm_q] = q_d
        pin.framesForwardKinematics(m, d, q)
        X = d.oMf[self.tcp]
        goal = pin.SE3(pin.exp3(drot) @ X.rotation, (X.translation if origin is None else origin) + dp)
        return tcp_pose_ik(m, d, q, self.tcp, self.arm_q, self.arm_v, goal, iterations, damping)

    # -- what the policy sees ------------------------------------------------------------------------------------
    def _observe(self):
        s = self.view
        return OBS.pack(s.q[self.arm_q], s.v[self.arm_v], [2.0 * s.q[self.finger_q][0]], s.p_tcp,
                        quat_xyzw(s.R_tcp), s.p_box, quat_xyzw(s.R_box),
                        np.concatenate([s.v_box, s.w_box]), s.p_box - s.p_tcp, self.target,
                        self._prev_action)


    # -- contacts, reward, success -------------------------------------------------------------------------------
    def _grasp_point(self, s):
        """3 cm below the box top, on the box axis (world)."""
        return s.p_box + s.R_box @ np.array([0.0, 0.0, 0.5 * self.box_dims[2] - 0.03])

    def _reward_terms(self, action, prev_action, evaluation):
        c = self.config
        s = self.view
        left, right, table = s.contacts
        grasp = float(left and right)
        d_xy, tilt_box, dz, placed = s.placement
        near = d_xy < c["place_zone"]  # above the target: lowering the box costs no lift or transport credit
        opening = min(max(float(np.asarray(self.grip.q_d)[0]) / pc.FINGER_OPEN, 0.0), 1.0)  # commanded, 0 … 1
        terms = dict(  # placed: every earlier stage is paid in full, however the fingers hold the box
            reach=1.0 if grasp or placed else 1.0 - math.tanh(10.0 * np.linalg.norm(self._grasp_point(s) - s.p_tcp)),
            grasp=1.0 if placed else grasp,
            lift=1.0 if placed else grasp * (1.0 if near else min(max(dz / c["lift_height"], 0.0), 1.0)),
            transport=1.0 if placed else grasp * float(dz > 0.02 or near) * (1.0 - math.tanh(5.0 * d_xy)),
            place=max(0.0, 1.0 - 2.0 * tilt_box / math.pi) * (1.0 - math.tanh(10.0 * d_xy))
            * max(0.0, 1.0 - abs(dz) / c["place_height"]),
            release=float(placed) * 0.5 * (opening + float(not (left or right))),
            action_rate=float(np.sum((action - prev_action) ** 2)),
            table_collision=float(table),
        )
        return {k: c["reward_scales"][k] * v for k, v in terms.items()}

    def evaluate(self):
        """Success and its parts (kept apart from the reward)."""
        c = self.config
        s = self.view
        if c["task"] == "reach":
            d = float(np.linalg.norm(s.p_tcp - self.target))
            return dict(success=d < c["goal_threshold"], distance=d)
        left, right, _ = s.contacts
        d_xy, tilt_box, _, placed = s.placement
        still = np.linalg.norm(s.v_box) < c["rest_speed"] and np.linalg.norm(s.w_box) < c["rest_spin"]
        released = not (left or right)
        return dict(success=bool(placed and still and released), distance_xy=d_xy, tilt=tilt_box, released=released,
                    at_rest=bool(still))

    def _terminated(self):
        (x0, x1), (y0, y1) = self.config["table_xy"]
        p = self.view.p_box
        return not (x0 <= p[0] <= x1 and y0 <= p[1] <= y1) or p[2] < 0.0

    def _render_markers(self):
        """The target region in rgb_array frames: a green disc of ``success_radius`` on the table where the box's
        centre must come to rest, and a thin translucent post above it (visible behind the arm)."""
        from cenic_gym.render import Marker

        x, y = self.target[:2]
        r = self.config["success_radius"]
        return (Marker("cylinder", (x, y, 0.001), (r, 0.001), (0.1, 0.8, 0.2, 0.8)),
                Marker("cylinder", (x, y, 0.2), (0.004, 0.2), (0.1, 0.8, 0.2, 0.3)))

    # -- state ---------------------------------------------------------------------------------------------------
    def _task_state(self):
        return dict(target=self.target.copy(), params=dict(self.params))

    def _set_task_state(self, state):
        self.target = state["target"].copy()
        self.params = dict(state["params"])
        self.box_dims = np.array(self.params["box_size"])
        self.rest_z = 0.5 * self.box_dims[2]


class FrankaBoxGoalEnv(FrankaBoxEnv):
    """The goal-conditioned form of :class:`FrankaBoxEnv` (``CenicFrankaGoal-v0``; the spec is FrankaBoxEnv's):
    dict observations ``observation`` / ``achieved_goal`` / ``desired_goal`` and the Gymnasium-Robotics GoalEnv API
    (``compute_reward`` / ``compute_terminated`` / ``compute_truncated``, vectorized) that HER relabels with. Every
    option of FrankaBoxEnv applies; ``goal_conditioned`` is True (False raises ValueError)."""

    def __init__(self, **kwargs):
        if not kwargs.get("goal_conditioned", True):
            raise ValueError("FrankaBoxGoalEnv is the goal-conditioned form (goal_conditioned=True); the plain "
                             "(Box observation) form is FrankaBoxEnv, CenicFranka-v0")
        super().__init__(**{**kwargs, "goal_conditioned": True})
        goal = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.observation_space = spaces.Dict(observation=self.observation_space, achieved_goal=goal,
                                             desired_goal=goal)

    def _achieved_goal(self):
        s = self.view
        return s.p_tcp if self.config["task"] == "reach" else s.p_box

    def _observe(self):
        return dict(observation=super()._observe(), achieved_goal=self._achieved_goal().copy(),
                    desired_goal=self.target.copy())

    def _reward_terms(self, action, prev_action, evaluation):
        # the goals as the observation holds them (float32): HER's relabelled rewards match the step's
        r = self.compute_reward(np.asarray(self._achieved_goal(), np.float32), np.asarray(self.target, np.float32), {})
        return {"goal": float(r)}

    # -- goal-conditioned API (Gymnasium-Robotics GoalEnv) ------------------------------------------------------
    def compute_reward(self, achieved_goal, desired_goal, info):
        """Vectorized over leading axes: sparse −1/0 at ``goal_threshold``, or −distance for reward_type="dense"."""
        d = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        if self.config["reward_type"] == "sparse":
            return -(d >= self.config["goal_threshold"]).astype(np.float64)
        return -d

    def compute_terminated(self, achieved_goal, desired_goal, info):
        return np.zeros(np.shape(achieved_goal)[:-1], dtype=bool) if np.ndim(achieved_goal) > 1 else False

    def compute_truncated(self, achieved_goal, desired_goal, info):
        return np.zeros(np.shape(achieved_goal)[:-1], dtype=bool) if np.ndim(achieved_goal) > 1 else False


def _floats(value, n, name):
    x = np.asarray(value, dtype=float).reshape(-1)
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        raise ValueError(f"reset option {name} must be {n} finite numbers, got {value!r}")
    return x


class ScriptedExpert:
    """A scripted pick-and-place policy (no learning) in the env's own action space: it proves the task is
    physically solvable. Waypoints of the TCP (approach above the grasp point with the hand's yaw matched to the
    box, descend, close, lift, carry above the target, lower, open, retreat), each reached along a minimum-jerk
    path by Pinocchio IK (:func:`cenic_gym.scenes.panda_ik`), turned into normalized joint-delta actions."""

    # (name, duration [s], gripper action, TCP goal)
    LIFT = 0.15  # carrying height of the box bottom above the table [m]

    def __init__(self, env):
        self.env = env.unwrapped
        if self.env.config["action_type"] != "joint_delta" or self.env.config["task"] != "pick_place":
            raise ValueError("ScriptedExpert drives action_type='joint_delta', task='pick_place'")
        self.plan = None

    def reset(self):
        e = self.env
        s = e.view
        grasp = e._grasp_point(s)
        yaw = math.atan2(s.R_box[1, 0], s.R_box[0, 0])
        yaw = (yaw + math.pi / 2) % math.pi - math.pi / 2  # the box is symmetric under a half turn
        R = pin.utils.rpyToMatrix(0.0, 0.0, yaw) @ pc.HAND_DOWN
        place = e.target + (grasp - s.p_box) + np.array([0.0, 0.0, 0.004])  # grasp point when placed
        up = np.array([0.0, 0.0, self.LIFT])
        above = grasp + np.array([0.0, 0.0, 0.12])
        self.plan = [("approach", 1.6, 1.0, above), ("descend", 1.0, 1.0, grasp), ("close", 0.6, -1.0, grasp),
                     ("lift", 1.0, -1.0, grasp + up), ("carry", 2.0, -1.0, place + up),
                     ("lower", 1.2, -1.0, place), ("open", 0.6, 1.0, place), ("retreat", 1.0, 1.0, place + up)]
        self.R = R
        self.t0 = e.sim.t
        self.start = s.p_tcp
        self.phase = 0
        self.q = e.sim.q

    def __call__(self, obs=None):
        e = self.env
        if self.plan is None:
            self.reset()
        t = e.sim.t + e.control_period - self.t0  # where the targets should be at the end of this step
        while self.phase < len(self.plan) - 1 and t > self.plan[self.phase][1]:
            t -= self.plan[self.phase][1]
            self.t0 += self.plan[self.phase][1]
            self.start = self.plan[self.phase][3]
            self.phase += 1
        name, duration, grip, goal = self.plan[self.phase]
        s = min_jerk(t / duration)[0]
        p = self.start + s * (goal - self.start)
        self.q = panda_ik(e.system, p, self.R, q_init=self.q, frame=pc.TCP, tol=1e-8)
        dq = (self.q[e.arm_q] - np.asarray(e.arm.q_d)) / e.config["joint_delta_scale"]
        return np.concatenate([np.clip(dq, -1.0, 1.0), [grip]]).astype(np.float32)


class CartesianExpert:
    """A feedback pick-and-place policy for ``action_type="ee_delta"`` (TCP translation and rotation deltas, the
    gripper): each call reads the current state and returns the action that moves the TCP toward the
    sub-goal of the stage that state is in, so it can act from any state, not only along its own path (what
    DAgger needs of a teacher: it labels the states a learner visits).

    Stages, decided from the state alone (the previous action's gripper command included, which the observation
    holds): not holding the box → above the grasp point (8 cm over it; straight up first when lower and off to the
    side), down to the grasp point, close (both fingers touching = held); held → lift the box to ``LIFT`` above the
    table, carry it over the target, lower it until it stands on the table; placed (within ``PLACE_XY`` of the
    target, resting, upright) → open, then retreat ``RETREAT`` above the box top and hold still. The translation
    action is ``GAIN`` · (sub-goal − TCP) / ``ee_delta_scale[0]``, clipped to ±1 (±``CARRY_SPEED`` while holding the
    box) and changing by at most ``JERK`` per step; the rotation action turns the hand toward "hand down" at the yaw
    it holds (the box's while reaching for it), ``GAIN`` · error / ``ee_delta_scale[1]``. Stable with a control
    delay of one period (``action_delay=1``), not two."""

    LIFT = 0.10  # box bottom above the table while carrying [m]
    ABOVE = 0.08  # approach height of the TCP over the grasp point [m]
    RETREAT = 0.10  # TCP above the placed box's top after letting go [m]
    ALIGN_XY = 0.008  # TCP-to-grasp-point (horizontal) within which the hand descends [m]
    CLOSE_AT = 0.008  # TCP-to-grasp-point distance at which the fingers close [m]
    LOWER_XY = 0.008  # box-to-target (horizontal) within which the carried box is lowered [m]
    PLACE_XY = 0.015  # box-to-target within which a box resting on the table is let go [m]
    CARRY_SPEED = 0.5  # translation action bound while holding the box (a fraction of ee_delta_scale)
    MAX_TILT = 0.08  # the carried box is lowered only when tilted less than this [rad]
    JERK = 0.25  # largest change of a translation action per step (smooth starts and stops: the box swings)
    GAIN = 0.5  # fraction of the TCP's error to a sub-goal (and of the hand's yaw error) commanded per step: with 1,
    # a delay of one control period makes the loop oscillate without end (z² − z + 1 = 0); with 0.5 it settles
    ALIGN_YAW = 0.05  # hand-to-box yaw error within which the hand descends [rad]

    def __init__(self, env):
        self.env = env.unwrapped
        c = self.env.config
        if c["action_type"] != "ee_delta" or c["task"] != "pick_place":
            raise ValueError("CartesianExpert drives action_type='ee_delta', task='pick_place'; got "
                             f"action_type={c['action_type']!r}, task={c['task']!r}")
        self.scale, self.rot_scale = c["ee_delta_scale"]
        if self.rot_scale <= 0.0:
            raise ValueError("CartesianExpert turns the hand to the box's yaw: ee_delta_scale[1] must be > 0, got "
                             f"{self.rot_scale!r}")

    def reset(self):
        """Nothing to reset: the policy is a function of the state."""

    def __call__(self, obs=None):
        e = self.env
        s = e.view
        left, right, _ = s.contacts
        d_xy, tilt_box, dz, _ = s.placement
        p_tcp, grasp = s.p_tcp, e._grasp_point(s)
        top = s.p_box[2] + 0.5 * e.box_dims[2]
        closing = e._prev_action[7] < 0.0
        bound = 1.0
        hand_yaw = math.atan2(s.R_tcp[1, 0], s.R_tcp[0, 0])
        yaw = hand_yaw  # the hand's yaw to hold; while reaching for the box: the box's, the closer of its two
        box_yaw = math.atan2(s.R_box[1, 0], s.R_box[0, 0])
        yaw_error = (box_yaw - hand_yaw + 0.5 * math.pi) % math.pi - 0.5 * math.pi  # both are half-turn symmetric
        resting = abs(dz) < 0.004 and tilt_box < 0.2
        if resting and d_xy < self.PLACE_XY:  # placed: let go, then retreat above it
            grip = 1.0
            goal = p_tcp.copy()
            if not (left or right):
                goal[2] = top + self.RETREAT
        elif left and right:  # held: lift, carry over the target, lower onto the table
            grip, bound = -1.0, self.CARRY_SPEED
            over = e.target[:2]  # the TCP over the target: the grasp point is on the box's axis
            carry_z = p_tcp[2] + (self.LIFT - dz)
            if d_xy > self.LOWER_XY or tilt_box > self.MAX_TILT:
                xy = over if dz > self.LIFT - 0.03 or d_xy < 0.05 else p_tcp[:2]
                goal = np.array([*xy, carry_z])
            else:
                goal = np.array([*over, p_tcp[2] - dz - 0.002])  # down until the box stands on the table
        else:  # not holding it: approach, descend, close
            d = float(np.linalg.norm(grasp - p_tcp))
            off = float(np.linalg.norm((grasp - p_tcp)[:2]))
            if closing and d < 2.0 * self.CLOSE_AT:
                grip, goal = -1.0, grasp  # keep closing until both fingers touch
            elif d < self.CLOSE_AT:
                grip, goal = -1.0, grasp
            elif off < self.ALIGN_XY and abs(yaw_error) < self.ALIGN_YAW:
                grip, goal, yaw = 1.0, grasp, hand_yaw + yaw_error
            else:
                grip, yaw = 1.0, hand_yaw + yaw_error
                above = grasp + np.array([0.0, 0.0, self.ABOVE])
                goal = above if p_tcp[2] > grasp[2] + 0.5 * self.ABOVE else np.array([*p_tcp[:2], above[2]])
        prev = e._prev_action[:3]
        move = np.clip(np.clip(self.GAIN * (goal - p_tcp) / self.scale, -bound, bound), prev - self.JERK,
                       prev + self.JERK)
        R_goal = pin.utils.rpyToMatrix(0.0, 0.0, yaw) @ pc.HAND_DOWN  # hand down at that yaw
        turn = np.clip(self.GAIN * pin.log3(R_goal @ s.R_tcp.T) / self.rot_scale, -1.0, 1.0)
        return np.array([*move, *turn, 0.0, grip], dtype=np.float32)
