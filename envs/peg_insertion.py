"""CenicPegInsertion-v0: a Franka Panda inserts a round peg it holds by friction into a tight hole in a fixture.

Scene: the Panda (example-robot-data, fixed base at the origin on the table top z = 0, armature 0.1 kg m²) holds a
cylindrical peg between its finger pads; the fixture on the table is a block with a round hole: eight boxes whose
inner faces form a regular octagon around the hole's axis, inscribed circle of radius r_peg + clearance / 2 (so the
diametral clearance is the true gap between the collision shapes along every wall normal), standing on the table
top, which is the hole's floor. The fixture is welded to the world; its pose is drawn per episode
(:meth:`~cenic_gym.Simulator.set_geometry_pose`: nothing is rebuilt).
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pinocchio as pin
from gymnasium import spaces

from cenic_gym import Box, ContactMaterial, Cylinder, InverseDynamicsPD, JointPD, SceneBuilder
from cenic_gym.env import CenicEnv, ObsLayout, Segment, StateView
from cenic_gym.model import matrix_to_quat_xyzw
from cenic_gym.scenes import panda_ik, tcp_pose_ik
from cenic_gym.sensors import WrenchSensor

from . import panda_constants as pc
from .franka_box import _floats, quat_xyzw

WALLS = 8  # the octagon's sides
SENSOR_FRAME = "panda/panda_hand"  # the flange of the hand: the wrist force/torque sensor sits between the two
TCP_TO_FLANGE = 0.1034  # the TCP is this far from the flange along the hand's z [m] (example-robot-data)
TOOL_GEOMS = ("panda/panda_hand_", pc.LEFT_FINGER_GEOMS, pc.RIGHT_FINGER_GEOMS)  # beyond the sensor


def default_config():
    """Every number of the task (SI units: m, kg, s, rad), overridable by constructor kwargs."""
    return dict(
        control_period=0.05,  # 20 Hz
        action_scale=(0.005, 0.05),  # TCP target change per step at |a| = 1: translation [m], rotation [rad]
        max_lead=(0.01, 0.1),  # the TCP target stays within this of the measured TCP: translation [m], rotation
        # [rad] (bounds the force the arm presses with, about 10-20 N at the default gains)
        arm_kp=1000.0, arm_kd=63.2,  # inverse-dynamics PD, critically damped at ω = 31.6 rad/s (stiffer than
        # the pick-and-place's 400, 40: the search moves the peg by tenths of a millimetre against friction)
        grip_kp=2e4, grip_kd=100.0,  # finger PD on the opening (q_d = 0): saturates at grip_force on the peg
        grip_force=40.0,  # squeeze of each finger [N] (the Franka Hand: 70 N continuous)
        armature=pc.ARMATURE,
        finger_armature=5.0,  # reflected inertia of the hand's finger drive on each finger [kg] (a spindle drive: the
        # coupler that makes the second finger mimic the first is near-rigid, as stiff as this mass allows)
        peg_radius=0.01, peg_length=0.07, peg_mass=0.06,  # an aluminium peg, Ø 20 mm
        grasp_offset=0.055,  # peg tip below the TCP along the hand's z axis, nominal [m] (its top 15 mm above)
        clearance=5e-4,  # diametral clearance [m]: hole diameter − peg diameter (1e-4 … 5e-3)
        hole_depth=0.025,  # fixture height = hole depth [m]
        fixture_wall=0.025,  # radial thickness of the fixture's walls [m]
        fixture_xy=(0.5, 0.0),  # nominal hole axis [m]
        fixture_range=0.015,  # hole axis drawn U(±range) per axis around fixture_xy [m]
        fixture_yaw=math.pi / WALLS,  # octagon yaw drawn U(±fixture_yaw) [rad]
        camera_error=(1e-3, 0.0),  # std of the observed hole position's error, per episode: horizontal, vertical [m]
        grasp_noise=(1e-3, 1e-3, 0.02),  # U(±) of the peg in the fingers: along the pads [m], along its axis [m],
        # tilt about the closing axis [rad]
        start_height=(0.015, 0.03),  # peg tip above the fixture top at the start, U(low, high) [m]
        start_offset=0.02,  # start TCP above the hole axis + U(±offset) per horizontal axis [m]
        grasp_settle=0.3,  # [s] of simulation with the fingers squeezing before the first observation
        insert_depth=0.02,  # success: peg tip this far below the fixture top [m] ...
        success_tilt=math.radians(5.0),  # ... with the peg's axis within this of vertical [rad]
        lost_distance=0.02,  # the peg tip this far from where the grasp holds it ends the episode [m]
        peg_mu=0.3, fixture_mu=0.3, finger_mu=1.0, table_mu=0.5,  # per geometry (pairs: 2 μ1 μ2 / (μ1 + μ2))
        stiffness=1e7, dissipation=10.0,  # peg, fixture, table [N/m], [s/m] per geometry (steel-like)
        finger_stiffness=1e5, finger_dissipation=20.0,  # the pads (rubber)
        force_limit=30.0,  # contact force on the tool above which the force term costs [N]
        reward_scales=dict(approach=1.0, insert=4.0, upright=1.0, success=5.0, force=-0.05, action_rate=-0.01),
        randomization=dict(peg_mu=(0.2, 0.5), fixture_mu=(0.2, 0.5), clearance=(3e-4, 8e-4),
                           arm_kp_scale=(0.8, 1.2), camera_error_scale=(0.5, 1.5)),
    )


def randomize(config, rng):
    """Per-episode physical parameters: the nominal ones, or draws from ``config["randomization"]`` ranges when
    ``domain_randomization`` is on (a dict there overrides some ranges)."""
    dr = config["domain_randomization"]
    ranges = config["randomization"] if dr is True else ({**config["randomization"], **dr} if dr else None)
    keys = ("peg_mu", "fixture_mu", "clearance", "arm_kp_scale", "camera_error_scale")
    if not ranges:
        return dict(peg_mu=config["peg_mu"], fixture_mu=config["fixture_mu"], clearance=config["clearance"],
                    arm_kp_scale=1.0, camera_error_scale=1.0)
    return {k: float(rng.uniform(*ranges[k])) for k in keys}


def rot_z(yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def wall_poses(center, yaw, inner, wall, depth):
    """Poses (position (3,), rotation (3, 3)) of the fixture's eight walls: wall i's inner face at distance
    ``inner`` from the hole axis through ``center`` (x, y), facing it along the direction yaw + i·45°; each wall a box
    ``wall`` thick radially, long enough tangentially to close the octagon's corners, ``depth`` tall on the table."""
    out = []
    for i in range(WALLS):
        a = yaw + 2.0 * math.pi * i / WALLS
        r = inner + 0.5 * wall
        out.append((np.array([center[0] + r * math.cos(a), center[1] + r * math.sin(a), 0.5 * depth]), rot_z(a)))
    return out


def wall_box(inner, wall, depth):
    """The shape of one fixture wall (x radial, y tangential, z up in its own frame)."""
    return Box((wall, 2.0 * (inner + wall) * math.tan(math.pi / WALLS), depth))


# The observation (world frame unless stated, SI units), declared once: space, noise, docstring table, slices.
OBS = ObsLayout(
    Segment("arm_joint_positions", 7, 0.005, "arm joint positions [rad]"),
    Segment("arm_joint_velocities", 7, 0.05, "arm joint velocities [rad/s]"),
    Segment("tcp_position", 3, 0.0005, "TCP position [m]"),
    Segment("tcp_quaternion", 4, 0.002, "TCP orientation quaternion (x, y, z, w), w ≥ 0"),
    Segment("target_minus_tcp", 6, 0.0, "the controller's lead: TCP target position − TCP position [m], rotation "
            "vector of the target's orientation relative to the TCP's, world frame [rad]"),
    Segment("wrench", 6, 0.2, "wrist force [N] and torque [N m] the tool receives, in the sensor (flange) frame"),
    Segment("hole_position", 3, 0.0, "observed hole: top centre of the hole as the camera gives it [m]"),
    Segment("tip_minus_hole", 3, 0.0005, "nominal peg tip (TCP + grasp_offset along the hand's z) − observed "
            "hole [m]"),
    Segment("previous_action", 6, 0.0, "previous action"),
)


class Insertion(NamedTuple):
    """Where the peg is with respect to the hole (true state): ``d_xy`` [m] peg tip → hole axis horizontally,
    ``depth`` [m] tip below the fixture top (< 0 above it), ``tilt`` [rad] of the peg's axis from vertical,
    ``inside``: the tip within the hole's radius (inscribed circle) horizontally, ``inserted``: inside, at least
    ``insert_depth`` deep and tilted less than ``success_tilt``."""

    d_xy: float
    depth: float
    tilt: float
    inside: bool
    inserted: bool


class PegView(StateView):
    """The quantities of one state the task reads (world frame): TCP pose ``p_tcp``, ``R_tcp``; peg pose ``p_peg``,
    ``R_peg`` and its tip ``p_tip`` (the centre of its lower face); the wrist sensor's ``wrench``
    (:class:`~cenic_gym.sensors.Wrench`, sensor frame) and the nominal tip ``p_tip_nominal`` (where the grasp is
    meant to hold it); on first use ``insertion`` (:class:`Insertion`)."""

    def __init__(self, env):
        super().__init__(env)
        sim = env.sim
        self.p_tcp, self.R_tcp = sim.body_pose(pc.TCP)
        self.p_peg, self.R_peg = sim.body_pose("peg")
        self.p_tip = self.p_peg - 0.5 * env.config["peg_length"] * self.R_peg[:, 2]
        self.p_tip_nominal = self.p_tcp + env.config["grasp_offset"] * self.R_tcp[:, 2]
        self.wrench = env.sensor.read(sim)

    @cached_property
    def insertion(self):
        e, c = self.env, self.env.config
        d_xy = float(np.linalg.norm(self.p_tip[:2] - e.hole[:2]))
        depth = float(e.hole[2] - self.p_tip[2])
        tilt = math.acos(min(1.0, max(-1.0, self.R_peg[2, 2])))
        inside = d_xy < e.inner_radius
        return Insertion(d_xy, depth, tilt, inside,
                         bool(inside and depth >= c["insert_depth"] and tilt < c["success_tilt"]))


class PegInsertionEnv(CenicEnv):
    """## Description

    A Franka Panda holds a round aluminium peg (Ø 20 mm, 70 mm long, 60 g) between its finger pads, by friction
    (40 N per finger), a few centimetres above a fixture on the table, and must insert it into the fixture's hole:
    a round hole 25 mm deep whose diametral clearance is 0.5 mm by default (``clearance``, 0.1–5 mm), built from
    eight boxes around an octagon whose inscribed circle is the hole (the clearance is the true gap between the
    collision shapes). The hole's pose is drawn per episode and seen through a camera with a per-episode error of
    1 mm (std), larger than the clearance: the peg has to find the hole by touch, and the wrist force/torque sensor
    (:class:`cenic_gym.sensors.WrenchSensor` between the flange and the hand) is what tells it. The peg can slip and
    tilt in the fingers as on hardware. Physics is CENIC at accuracy ε (default 1e-3): the step size shrinks only
    while contacts change (the peg touching the fixture, entering the hole), and contact forces are those of a
    steel-like pair (5·10⁶ N/m), so the peg cannot pass through a wall at any ε.

    ## Action space

    ``Box(-1, 1, (6,), float32)``: a change of the TCP's target pose, world frame: indices 0–2 translation × 5 mm,
    3–5 rotation vector × 0.05 rad (``action_scale``), applied by differential IK to the joint targets of an
    implicit inverse-dynamics PD on the arm (ω = 20 rad/s); the gripper keeps squeezing. The target stays within
    1 cm and 0.1 rad of the measured TCP pose (``max_lead``: a target that would lead further is pulled back), which
    bounds the force the arm presses with to the controller's stiffness times that lead (about 10–20 N at the
    default gains, the arm's apparent stiffness at the TCP depending on its pose); a zero action holds the target.
    Out-of-range values are clipped; NaN or a wrong shape raise ``ValueError``.

    ## Observation space

    ``Box(-inf, inf, (45,), float32)`` (``peg_insertion.OBS`` declares it):

OBSERVATION_TABLE

    The peg's true pose in the fingers is not observed (a real robot does not know it): ``tip_minus_hole`` is where
    the nominal grasp puts the tip, relative to the hole the camera sees.

    ## Rewards

    reward = Σ scale_k · term_k (``info["reward/<k>"]``; scales in ``reward_scales``), from the true state: with
    d_xy the peg tip's horizontal distance to the hole axis, depth its depth below the fixture top, tilt the peg
    axis' angle from vertical and F the magnitude of the wrist sensor's force:

    - approach (1): 1 − tanh(d_xy / 5 mm), 1 once inserted
    - insert (4): clip(depth / insert_depth, 0, 1) while the tip is inside the hole's radius, else 0
    - upright (1): 1 − tilt / 90°
    - success (5): 1 when inserted (the success test below)
    - force (−0.05): max(0, F − 30 N) [N] (``force_limit``)
    - action_rate (−0.01): ‖a − a_prev‖²

    ## Success

    ``info["is_success"]`` (``evaluate()``): the peg tip inside the hole (horizontally within its inscribed radius),
    at least 20 mm below the fixture top (``insert_depth``, of the 25 mm hole) with the peg's axis within 5° of
    vertical (``success_tilt``). Nothing has to let go: the task is the insertion.

    ## Starting state

    The hole axis at (0.5, 0.0) m + U(±15 mm) per axis, the octagon's yaw U(±22.5°); the camera's error of it
    N(0, 1 mm) per horizontal axis (``camera_error``), fixed for the episode. The TCP hand-down above the hole axis
    + U(±2 cm) per horizontal axis, the nominal peg tip U(15, 30) mm above the fixture top; the peg in the fingers
    at its nominal grasp + U(±1 mm) along the pads, U(±1 mm) along its axis and tilted U(±0.02 rad) about the
    closing axis; the fingers squeeze for 0.3 s (``grasp_settle``, arm targets held) before the first observation.

    With ``domain_randomization``: peg and fixture friction U(0.2, 0.5) each (the pair 2 μ1 μ2 / (μ1 + μ2)),
    clearance U(0.3, 0.8) mm, arm K_p × U(0.8, 1.2) and the camera error's std × U(0.5, 1.5), per episode.

    ## Episode end

    Terminated when the peg is lost: its tip more than 2 cm (``lost_distance``) from where the nominal grasp holds
    it. Truncated after 200 steps (10 s, ``max_episode_steps``) or on a simulator failure (``info["sim_failure"]``).
    ``info`` adds ``depth`` [m], ``tilt`` [rad] and ``force`` [N] (the wrist force's magnitude).

    ## Arguments

    ``gym.make("CenicPegInsertion-v0", **kwargs)``: the common options of :mod:`cenic_gym.env` and every key of
    :func:`default_config`. ``reset(options=...)`` accepts ``hole_xy`` (x, y) [m] and ``tcp_xy`` (x, y) [m] (the
    start TCP's horizontal position).

    ## Version History

    - v0: initial version (cenic-gym 0.1).
    """

    OBS = OBS
    View = PegView
    RESET_OPTIONS = ("hole_xy", "tcp_xy")
    CAMERA = dict(lookat=(0.5, 0.0, 0.09), distance=0.5, azimuth=150.0, elevation=-12.0)  # hand, peg and fixture

    @staticmethod
    def default_config():
        return default_config()

    def _check_config(self, cfg):
        c = cfg["clearance"]
        if not 1e-4 <= c <= 5e-3:
            raise ValueError(f"clearance must be a diametral gap in [1e-4, 5e-3] m, got {c!r}")
        for key in ("peg_radius", "peg_length", "peg_mass", "hole_depth", "fixture_wall", "grasp_offset",
                    "insert_depth", "grip_force", "lost_distance", "grasp_settle"):
            if not cfg[key] > 0:
                raise ValueError(f"{key} must be > 0, got {cfg[key]!r}")
        if cfg["insert_depth"] > cfg["hole_depth"]:
            raise ValueError(f"insert_depth={cfg['insert_depth']!r} must not exceed hole_depth="
                             f"{cfg['hole_depth']!r}")
        if cfg["grasp_offset"] >= cfg["peg_length"]:
            raise ValueError(f"grasp_offset={cfg['grasp_offset']!r} must be less than peg_length="
                             f"{cfg['peg_length']!r} (the tip is below the TCP, the peg's top above it)")
        lo, hi = cfg["randomization"]["clearance"]
        if not 1e-4 <= lo <= hi <= 5e-3:
            raise ValueError(f"randomization['clearance'] must lie in [1e-4, 5e-3] m, got {(lo, hi)!r}")
        for key in ("action_scale", "camera_error", "grasp_noise", "start_height"):
            if not all(math.isfinite(x) and x >= 0 for x in cfg[key]):
                raise ValueError(f"{key} must hold finite numbers >= 0, got {cfg[key]!r}")
        self.action_space = spaces.Box(-1.0, 1.0, (6,), np.float32)
        self.observation_space = OBS.space()

    # -- scene ---------------------------------------------------------------------------------------------------
    def _build(self):
        c = self.config
        steel = lambda mu: ContactMaterial(stiffness=c["stiffness"], dissipation=c["dissipation"],  # noqa: E731
                                           mu_static=mu)
        b = SceneBuilder()
        b.add_ground(steel(c["table_mu"]), name="table")
        b.add_robot("panda", name=pc.ROBOT, material=ContactMaterial(stiffness=c["finger_stiffness"],
                                                                   dissipation=c["finger_dissipation"],
                                                                   mu_static=c["finger_mu"]),
                    q0=np.concatenate([pc.HOME, [pc.FINGER_OPEN, pc.FINGER_OPEN]]),
                    armature={**{j: c["armature"] for j in pc.ARM_JOINTS},
                              **{j: c["finger_armature"] for j in ("panda_finger_joint1", "panda_finger_joint2")}})
        inner = c["peg_radius"] + 0.5 * c["clearance"]
        shape = wall_box(inner, c["fixture_wall"], c["hole_depth"])
        for i, (p, R) in enumerate(wall_poses(c["fixture_xy"], 0.0, inner, c["fixture_wall"], c["hole_depth"])):
            b.add_fixed(f"fixture{i}", shape, position=p, rotation=R, material=steel(c["fixture_mu"]))
        b.add_body("peg", Cylinder(c["peg_radius"], c["peg_length"]), mass=c["peg_mass"],
                   position=(*c["fixture_xy"], 0.2), material=steel(c["peg_mu"]))
        system = b.build()
        self.system = system
        self.arm_v = system.robot_v_indices(pc.ROBOT, pc.ARM_JOINTS)
        self.arm_q = system.robot_q_indices(pc.ROBOT, pc.ARM_JOINTS)
        self.finger_q = system.robot_q_indices(pc.ROBOT)[7:]
        self.finger_v = system.robot_v_indices(pc.ROBOT, pc.FINGER_JOINT)
        self.peg_q = system.q_slice("peg")
        m = system.model
        self.arm_lower, self.arm_upper = m.lowerPositionLimit[self.arm_q], m.upperPositionLimit[self.arm_q]
        self.fixture_geoms = [f"fixture{i}" for i in range(WALLS)]
        self.arm = InverseDynamicsPD(system, self.arm_v, kp=c["arm_kp"], kd=c["arm_kd"], q_d=pc.HOME)
        # the second finger mimics the first (a coupler): the joint's effort is shared by both fingers
        self.grip = JointPD(system, self.finger_v, kp=c["grip_kp"], kd=c["grip_kd"], q_d=0.0,
                            effort_limit=2.0 * c["grip_force"])
        self.sensor = WrenchSensor(system, SENSOR_FRAME, TOOL_GEOMS)
        self._kin = m.createData()  # the policy-side kinematics (differential IK)
        self.tcp = system.frame_id(pc.TCP)
        return system, [self.arm, self.grip]

    # -- episode -------------------------------------------------------------------------------------------------
    def _reset_task(self, options):
        c, rng, sim = self.config, self.np_random, self.sim
        r = c["fixture_range"]
        hole_xy = (_floats(options["hole_xy"], 2, "hole_xy") if "hole_xy" in options
                   else np.asarray(c["fixture_xy"]) + rng.uniform(-r, r, 2))
        yaw = rng.uniform(-c["fixture_yaw"], c["fixture_yaw"])
        params = randomize(c, rng)
        self.params = params
        self.inner_radius = c["peg_radius"] + 0.5 * params["clearance"]
        shape = wall_box(self.inner_radius, c["fixture_wall"], c["hole_depth"])
        for name, (p, R) in zip(self.fixture_geoms, wall_poses(hole_xy, yaw, self.inner_radius, c["fixture_wall"],
                                                               c["hole_depth"])):
            sim.set_geometry_shape(name, shape)
            sim.set_geometry_pose(name, p, R)
        sim.set_geometry_material("peg/0", mu_static=params["peg_mu"], mu_dynamic=params["peg_mu"])
        sim.set_geometry_material(self.fixture_geoms, mu_static=params["fixture_mu"], mu_dynamic=params["fixture_mu"])
        self.arm.set_gains(kp=c["arm_kp"] * params["arm_kp_scale"])
        self.hole = np.array([*hole_xy, c["hole_depth"]])  # top centre of the hole
        sigma_xy, sigma_z = np.asarray(c["camera_error"]) * params["camera_error_scale"]
        self.hole_seen = self.hole + rng.normal(size=3) * np.array([sigma_xy, sigma_xy, sigma_z])
        # the start: TCP hand-down above the hole, the peg in the fingers with the grasp's noise
        so = c["start_offset"]
        tcp_xy = _floats(options["tcp_xy"], 2, "tcp_xy") if "tcp_xy" in options else hole_xy + rng.uniform(-so, so, 2)
        tip_z = self.hole[2] + rng.uniform(*c["start_height"])
        p_tcp = np.array([*tcp_xy, tip_z + c["grasp_offset"]])
        along, axial, tilt = (rng.uniform(-1.0, 1.0, 3) * np.asarray(c["grasp_noise"]))
        R_tcp = pc.HAND_DOWN
        q = panda_ik(self.system, p_tcp, R_tcp, q_init=sim.q, frame=pc.TCP, tol=1e-12)
        # the peg's axis along the hand's z (its own z up), tilted about the closing axis (the hand's y) at the
        # grasp point between the pads, moved along the pads and along its axis
        R_peg = R_tcp @ pin.exp3(np.array([0.0, tilt, 0.0])) @ np.diag([1.0, -1.0, -1.0])
        down = -R_peg[:, 2]
        tip = p_tcp + R_tcp @ np.array([along, 0.0, 0.0]) + (c["grasp_offset"] + axial) * down
        p_peg = tip - 0.5 * c["peg_length"] * down
        q[self.finger_q] = c["peg_radius"] - 2e-4  # both pads on the peg, squeezing from the first step
        q[self.peg_q] = np.concatenate([p_peg, matrix_to_quat_xyzw(R_peg)])
        sim.set_state(q=q, v=np.zeros(self.system.nv))
        self.arm.set_target(q_d=q[self.arm_q], v_d=0.0)
        self.grip.set_target(q_d=0.0)
        sim.advance_to(sim.t + c["grasp_settle"], inputs_changed=True)

    def _apply_action(self, action):
        c, s = self.config, self.view
        dp, drot = action[:3] * c["action_scale"][0], action[3:] * c["action_scale"][1]
        target = self._tcp_target()
        lead, turn = c["max_lead"]
        p = s.p_tcp + _clip_norm(target.translation + dp - s.p_tcp, lead)
        R = pin.exp3(_clip_norm(pin.log3(pin.exp3(drot) @ target.rotation @ s.R_tcp.T), turn)) @ s.R_tcp
        q = self.sim.q
        q[self.arm_q] = np.asarray(self.arm.q_d, dtype=float)
        q_d = tcp_pose_ik(self.system.model, self._kin, q, self.tcp, self.arm_q, self.arm_v, pin.SE3(R, p))
        self.arm.set_target(q_d=np.clip(q_d, self.arm_lower, self.arm_upper))

    def _tcp_target(self):
        """The TCP pose (pin.SE3, world) of the arm's joint targets."""
        q = self.sim.q
        q[self.arm_q] = np.asarray(self.arm.q_d, dtype=float)
        pin.framesForwardKinematics(self.system.model, self._kin, q)
        return self._kin.oMf[self.tcp].copy()

    # -- what the policy sees ------------------------------------------------------------------------------------
    def _observe(self):
        s = self.view
        target = self._tcp_target()
        return OBS.pack(s.q[self.arm_q], s.v[self.arm_v], s.p_tcp, quat_xyzw(s.R_tcp),
                        target.translation - s.p_tcp, pin.log3(target.rotation @ s.R_tcp.T), s.wrench.force,
                        s.wrench.torque, self.hole_seen, s.p_tip_nominal - self.hole_seen, self._prev_action)

    # -- reward, success -----------------------------------------------------------------------------------------
    def _reward_terms(self, action, prev_action, evaluation):
        c = self.config
        ins = self.view.insertion
        terms = dict(
            approach=1.0 if ins.inserted else 1.0 - math.tanh(ins.d_xy / 0.005),
            insert=min(max(ins.depth / c["insert_depth"], 0.0), 1.0) if ins.inside else 0.0,
            upright=1.0 - 2.0 * ins.tilt / math.pi,
            success=float(ins.inserted),
            force=max(0.0, float(np.linalg.norm(self.view.wrench.force)) - c["force_limit"]),
            action_rate=float(np.sum((action - prev_action) ** 2)),
        )
        return {k: c["reward_scales"][k] * v for k, v in terms.items()}

    def evaluate(self):
        ins = self.view.insertion
        return dict(success=ins.inserted, depth=ins.depth, d_xy=ins.d_xy, tilt=ins.tilt, inside=ins.inside)

    def _task_info(self):
        ins = self.view.insertion
        return dict(depth=ins.depth, tilt=ins.tilt, force=float(np.linalg.norm(self.view.wrench.force)))

    def _terminated(self):
        s = self.view
        return bool(np.linalg.norm(s.p_tip - s.p_tip_nominal) > self.config["lost_distance"])

    def _render_markers(self):
        """The hole as the camera sees it: a thin red post on its observed axis."""
        from cenic_gym.render import Marker

        x, y, z = self.hole_seen
        return (Marker("cylinder", (x, y, z + 0.03), (0.001, 0.03), (0.9, 0.2, 0.1, 0.5)),)

    # -- state ---------------------------------------------------------------------------------------------------
    def _task_state(self):
        return dict(hole=self.hole.copy(), hole_seen=self.hole_seen.copy(), params=dict(self.params))

    def _set_task_state(self, state):
        self.hole = state["hole"].copy()
        self.hole_seen = state["hole_seen"].copy()
        self.params = dict(state["params"])
        self.inner_radius = self.config["peg_radius"] + 0.5 * self.params["clearance"]


def _clip_norm(x, limit):
    """x scaled down to norm ``limit`` where it is longer."""
    n = float(np.linalg.norm(x))
    return x * (limit / n) if n > limit else x


class ForceSearchTeacher:
    """A feedback insertion policy that sees what the policy sees (the noise-free observation: TCP pose, the
    controller's lead, the wrist wrench, the hole as the camera gives it; the peg's grasp assumed nominal; its own
    ``obs`` argument is not used), so a network can
    learn it (DAgger): over the hole, down to touch, a search guided by the wrist's moment until the peg drops in,
    then a compliant push to the bottom.

    The camera's error (1 mm) is larger than the clearance, so the peg, held upright and put down on the seen
    hole, lands with its lower face partly over the hole and partly on the fixture's top: it rests on a crescent on
    the side away from the hole's axis. Pressed down with ``PRESS``, that support's moment about the tip,
    M_tip = ρ F (u × z) for a support at distance ρ in the horizontal direction u, points the way: the peg is moved
    by ``STEP`` per step towards −u (its target leads the TCP by at most ``LEAD`` sideways, against the fixture's
    friction) until the tip (estimated from the TCP and the nominal grasp) is ``DROP`` below the top: the peg has
    caught in the hole. In the hole it is pushed in with ``PUSH``, moving sideways with the walls' lateral force and
    turning about its tip with their moment about it (an integral admittance, ``COMPLY``: a remote centre of
    compliance at the tip). Contact directions are force controlled (the target moves by ``ADMIT`` per newton of
    force error each step), free ones position controlled."""

    HOVER = 0.003  # tip above the top surface when moving over it [m]
    DESCEND = 0.0015  # approach speed per step near the surface [m]
    SURFACE = -0.0015  # tip estimate above this depth: still approaching [m]
    DROP = 0.0025  # tip estimate this far below the top: caught in the hole [m]
    STEP = 2e-4  # search step towards the hole [m]
    LEAD = 0.0015  # the search's target leads the TCP by at most this, sideways [m]
    SEARCH = 0.006  # tip estimate this far from the seen axis: lift off and start again over it [m]
    PRESS = 2.0  # on the surface while searching [N]
    PUSH = 8.0  # insertion force [N]
    ADMIT = 1e-4  # target change per newton of force error, per step [m/N]
    COMPLY = (2e-4, 0.05)  # lateral admittance [m/N] and rotational about the tip [rad/(N m)], per step

    def __init__(self, env):
        self.env = env.unwrapped
        c = self.env.config
        self.scale, self.rot_scale = c["action_scale"]
        self.offset = c["grasp_offset"]

    def reset(self):
        """Nothing to reset: the policy is a function of the observation."""

    def __call__(self, obs=None):
        o = self.env._observe()  # the observation, noise-free (what the policy sees at obs_noise=0)
        p_tcp = o[OBS["tcp_position"]]
        x, y, z, w = o[OBS["tcp_quaternion"]]
        R = pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()
        lead, lead_rot = o[OBS["target_minus_tcp"]][:3], o[OBS["target_minus_tcp"]][3:]
        F = R @ o[OBS["wrench"]][:3]  # force on the tool, world frame [N]
        tip = p_tcp + self.offset * R[:, 2]
        M_tip = R @ o[OBS["wrench"]][3:] - np.cross(tip - (p_tcp - TCP_TO_FLANGE * R[:, 2]), F)  # about the tip
        hole = o[OBS["hole_position"]]
        e = tip - hole
        depth = -e[2]
        push = F[2]  # what the fixture pushes up with [N]
        upright = pc.HAND_DOWN
        if depth >= self.DROP:  # in the hole: push in, going with the walls' force, turning with their moment
            turn = self.COMPLY[1] * np.array([M_tip[0], M_tip[1], 0.0])
            move = self.COMPLY[0] * np.array([F[0], F[1], 0.0]) + np.cross(turn, p_tcp - tip)
            move[2] = -self.ADMIT * (self.PUSH - push)
            return self._action(move, pin.exp3(turn) @ R, R, lead_rot)
        r = math.hypot(e[0], e[1])
        if depth < self.SURFACE or r > self.SEARCH:  # above the fixture (or lost): over the seen axis, then down
            if r > 0.001:  # across at the hover height
                dz = max(self.HOVER - (tip[2] - hole[2]), 0.0)
            else:
                dz = -max(self.DESCEND, 0.5 * (tip[2] - hole[2]))
            return self._action(np.array([-e[0], -e[1], dz]) - lead, upright, R, lead_rot)
        # on the fixture: pressed with PRESS, stepping away from the support the moment points at
        u = np.array([-M_tip[1], M_tip[0]])
        norm = float(np.linalg.norm(u))
        xy = -self.STEP * u / norm if norm > 0.002 * max(push, 0.1) else np.zeros(2)  # 2 mm of lever at least
        ahead = float(np.linalg.norm(lead[:2]))
        if ahead > self.LEAD:
            xy = xy - lead[:2] * (1.0 - self.LEAD / ahead)
        move = np.array([*xy, -self.ADMIT * (self.PRESS - push)])
        return self._action(move, upright, R, lead_rot)

    def _action(self, move, goal_R, R, lead_rot):
        """The action that moves the TCP's target by ``move`` and turns the hand's target towards ``goal_R`` (from
        where it leads the hand, ``lead_rot``)."""
        rot = np.clip(pin.log3(goal_R @ R.T) - lead_rot, -self.rot_scale, self.rot_scale)
        return np.concatenate([np.clip(move / self.scale, -1.0, 1.0), rot / self.rot_scale]).astype(np.float32)
