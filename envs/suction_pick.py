"""CenicSuction-v0: a suction gantry picks the target box out of a small cluster and places it in a tote.

Scene: the 2 × 2 bellows-cup gripper (:mod:`cenic_gym.suction`) on a Cartesian gantry with a yaw joint above a
table (half-space z = 0), ``n_boxes`` boxes of random sizes and masses (box 0 is the target; the others may touch
it), and a tote (a free body: floor plate and four walls) at a random place. CENIC §VII-D1 (Fig. 13) is the
physics showcase: suction is a stiff, attractive force element, integrated inside every convex step.
"""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import pinocchio as pin
from gymnasium import spaces

from cenic_gym import Box, ContactMaterial, JointPD, SceneBuilder
from cenic_gym.env import CenicEnv, ObsLayout, Segment, StateView
from cenic_gym.external import PiecewiseLinear
from cenic_gym.model import matrix_to_quat_xyzw
from cenic_gym.scenes import min_jerk
from cenic_gym.suction import SuctionGripper, add_suction_gripper, cup_springs, gripper_urdf_path

from . import suction_constants as sc


def default_config():
    """Every number of the task (SI units: m, kg, s, rad, N), overridable by constructor kwargs."""
    return dict(
        control_period=0.05,  # 20 Hz
        delta_scale=(0.02, 0.02, 0.02, 0.15),  # gantry target change per step at |a| = 1: x, y, z [m], yaw [rad]
        suction_threshold=0.0,  # action[4] > threshold: suction on
        gantry_kp=sc.GANTRY_KP, gantry_kd=sc.GANTRY_KD,
        # the gantry's force limits (x, y, z [N], yaw [N m]) on the PD with its gravity compensation: the z axis
        # lifts at most z_limit − (stage weight 20.4 N) and presses at most z_limit + 20.4 N (a real axis's
        # current limit); x, y and yaw are unlimited (what they push slides)
        gantry_effort_limit=sc.GANTRY_EFFORT_LIMIT,
        z_lead=0.03,  # the height target stays within this of the measured tool below it [m] (no wind-up)
        spring_kp=1000.0, spring_kd=1.0,  # bellows
        # the suction force law (per cup) and its seal/leak model (cenic_gym.suction)
        f_max=sc.F_MAX, d_sat=5e-3, d_cut=0.05, seal=True, seal_gap=0.5e-3, leak_gap=2e-3, shadow=5e-3,
        n_boxes=3,
        # side lengths x, y, z [m]: at least 8 cm across so the cup array (7 cm) fits on the top face; heights
        # differ by < 2.5 cm (the cup mouths' depth below the 12 cm tool plate) so the plate clears a touching box
        box_size_range=((0.08, 0.12), (0.08, 0.12), (0.04, 0.06)),
        box_mass_range=(0.2, 1.0),  # [kg]
        box_mu=0.6, table_mu=0.5, cup_mu=1.0,
        stiffness=1e5, dissipation=10.0,  # per geometry [N/m], [s/m]
        box_region=((-0.28, -0.02), (-0.22, 0.22)),  # where box centres start [m]
        touch_prob=0.5,  # chance that box 1 starts touching the target's side
        tote_region=((0.16, 0.30), (-0.18, 0.18)),  # tote centre [m]
        tote_inner=(0.22, 0.22), tote_wall=0.01, tote_height=0.05, tote_floor=0.01, tote_mass=3.0,
        table_xy=((-0.45, 0.45), (-0.45, 0.45)),  # a box centre leaving it terminates
        attach_distance=2e-3,  # a cup with its mouth this close to the target (and sealed) holds it [m]
        rest_speed=0.05, rest_spin=0.5,
        lift_height=0.10,
        reward_scales=dict(approach=1.0, seal=1.0, lift=2.0, transport=2.0, place=4.0, release=4.0, time=-0.1),
        randomization=dict(box_mu=(0.4, 0.9), table_mu=(0.3, 0.7), f_max_scale=(0.8, 1.2)),
        explicit_suction=False,  # True: suction evaluated explicitly at each step's start (CENIC Fig. 13b)
    )


def randomize(config, rng):
    """Per-episode physical parameters besides the task's own draws (box sizes and masses): nominal, or from
    ``config["randomization"]`` when ``domain_randomization`` is on (a dict there overrides some ranges)."""
    dr = config["domain_randomization"]
    ranges = config["randomization"] if dr is True else ({**config["randomization"], **dr} if dr else None)
    if not ranges:
        return dict(box_mu=config["box_mu"], table_mu=config["table_mu"], f_max=config["f_max"])
    out = {k: float(rng.uniform(*ranges[k])) for k in ("box_mu", "table_mu")}
    out["f_max"] = config["f_max"] * float(rng.uniform(*ranges["f_max_scale"]))
    return out


def yaw_of(R):
    """Yaw [rad] of a rotation matrix (angle of its x axis in the world x–y plane)."""
    return math.atan2(R[1, 0], R[0, 0])


def _corners(x, y, yaw, lx, ly):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([(x + c * a - s * b, y + s * a + c * b) for a in (-lx / 2, lx / 2) for b in (-ly / 2, ly / 2)])


def _overlap(a, b, clearance):
    """Do two yawed rectangles (x, y, yaw, lx, ly) overlap, grown by ``clearance`` [m]? (separating axes)"""
    ca, cb = _corners(*a), _corners(*b)
    for yaw in (a[2], b[2]):
        for ax in (np.array([math.cos(yaw), math.sin(yaw)]), np.array([-math.sin(yaw), math.cos(yaw)])):
            pa, pb = ca @ ax, cb @ ax
            if pa.max() + clearance <= pb.min() or pb.max() + clearance <= pa.min():
                return False
    return True


# The observation (world frame, SI units), declared once: space, noise scales, docstring table and index slices.
OBS = ObsLayout(
    Segment("tool_position", 3, 0.002, "tool position [m]"),
    Segment("tool_yaw", 2, 0.01, "tool yaw (cos, sin)"),
    Segment("tool_velocity", 3, 0.02, "tool linear velocity [m/s]"),
    Segment("tool_yaw_rate", 1, 0.02, "tool yaw rate [rad/s]"),
    Segment("cup_compressions", 4, 5e-4, "cup compressions (bellows joints) [m]"),
    Segment("mouth_distances", 4, 5e-4, "cup mouth → nearest box surface [m] (≤ 0.05)"),
    Segment("suction_on", 1, 0.0, "suction on (1) / off (0)"),
    Segment("box_position", 3, 0.002, "target box position [m]"),
    Segment("box_quaternion", 4, 0.01, "target box quaternion (x, y, z, w), w ≥ 0"),
    Segment("box_velocity", 6, 0.02, "target box linear [m/s], angular [rad/s] velocity"),
    Segment("box_half_sizes", 3, 0.0, "target box half side lengths [m]"),
    Segment("tote_position", 3, 0.0, "tote centre (floor top) [m]"),
    Segment("box_minus_tool", 3, 0.002, "target box position − tool position [m]"),
    Segment("tote_minus_box", 3, 0.002, "tote centre − target box position [m]"),
    Segment("previous_action", 5, 0.0, "previous action"),
)


class SuctionView(StateView):
    """The quantities of one state the task reads (world frame): tool pose and velocity ``p_tool``, ``R_tool``,
    ``v_tool``, ``w_tool``; the target box's ``p_box``, ``R_box``, ``v_box``, ``w_box``; the tote's position
    ``p_tote`` and the centre of its floor's top ``tote_floor`` [m]; on first use the suction's cup–geometry
    ``suction_pairs`` (:meth:`SuctionGripper.pairs`), shared by the observation, the holding test and the info."""

    def __init__(self, env):
        super().__init__(env)
        sim = env.sim
        self.p_tool, self.R_tool = sim.body_pose(sc.TOOL)
        self.v_tool, self.w_tool = sim.body_velocity(sc.TOOL)
        self.p_box, self.R_box = sim.body_pose(env.box_names[0])
        self.v_box, self.w_box = sim.body_velocity(env.box_names[0])
        self.p_tote = sim.body_pose("tote")[0]
        self.tote_floor = self.p_tote + np.array([0.0, 0.0, env.config["tote_floor"]])

    @cached_property
    def suction_pairs(self):
        return self.env.suction.pairs(self.q)


class SuctionPickEnv(CenicEnv):
    """## Description

    A gantry suction gripper (2 × 2 bellows cups, 4 cm pitch, Cartesian x, y, z and yaw under an implicit PD)
    picks the target box (box 0) from a cluster of ``n_boxes`` boxes of random sizes (8–12 × 8–12 × 4–6 cm) and
    masses (0.2–1 kg) on a table, places it in a tote (22 × 22 cm inside, 5 cm walls) at a random place, and
    releases it. The suction is the CENIC paper's stiff external system (§VII-D1): per cup an inverse-distance
    pull, saturated at ``f_max`` (20 N) when sealed, scaled by the lip's seal fraction (a cup overhanging an edge
    or on a tilted face holds less) — see :class:`cenic_gym.suction.SuctionGripper`. Payload: ``f_max / g`` =
    2.04 kg per sealed cup (8.2 kg for four), about half that for a cup centred on an edge.

    ## Action space

    ``Box(-1, 1, (5,), float32)``; out-of-range values are clipped, NaN or a wrong shape raise ``ValueError``.

    | index | action                                                                                   |
    |-------|------------------------------------------------------------------------------------------|
    | 0–2   | gantry target change x, y, z (world) × 0.02 m; the target ramps linearly over the step     |
    | 3     | yaw target change × 0.15 rad                                                              |
    | 4     | suction: on when > 0 (``suction_threshold``), off otherwise                              |

    Targets are clipped to the gantry's travel (x, y ∈ ±0.45 m, tool height 0.01–0.5 m, yaw ∈ ±π). Like a real
    gantry's axis, the z axis cannot press without bound: its force is limited to ±100 N about the gravity
    compensation of its 2.08 kg stage (``gantry_effort_limit``: it lifts 80 N net and presses at most ~120 N), and
    the height target stays within ``z_lead`` = 3 cm below the measured tool (a following-error limit: no wind-up
    while the tool is blocked). A policy pressing the sealed cups down as hard as it can therefore costs what a
    free move costs: 0.7 mm penetration, 1.0 substep and ~5 Newton iterations per env step (without the limits
    4–6 mm, 3–10 substeps and up to 250 Newton iterations: ``tests/test_suction_env.py``).

    ## Observation space

    ``Box(-inf, inf, (48,), float32)`` (world frame, SI units; ``suction_pick.OBS`` declares it):

OBSERVATION_TABLE

    The two differences (37–42) repeat what 0–2, 18–20 and 34–36 hold, as Gymnasium-Robotics' Fetch tasks do
    (``object_rel_pos``): the millimetre offsets that aligning the cups and placing the box depend on, in the units
    a network sees them in.

    ## Rewards

    reward = Σ scale_k · term_k (``info["reward/<k>"]`` holds each scaled term; scales in ``reward_scales``):

    - approach (1): 1 − tanh(10 d), d = lowest-mouth centre → centre of the target's top face
    - seal (1): fraction of cups holding the target (on, mouth within 2 mm, seal fraction ≥ 0.9)
    - lift (2): attached · clip(Δz / 0.10 m, 0, 1), attached = at least 2 cups hold it, Δz above its start height
    - transport (2): attached · (Δz > 2 cm) · (1 − tanh(5 d_xy)), d_xy = target → tote centre, horizontal
    - place (4): in_tote · (1 − tanh(10 d)), d = target centre → its resting pose on the tote floor
    - release (4): 1 when placed (inside the tote, on its floor) with suction off
    - time (−0.1): 1 per step

    ## Success

    ``info["is_success"]`` (``evaluate()``): the target's centre inside the tote's inner footprint (in the tote
    frame), resting on the tote floor (within 1 cm of its rest height), suction off, at rest (speed < 0.05 m/s, spin
    < 0.5 rad/s), and every other box still on the table footprint.

    ## Starting state

    Gantry at rest with the tool 40 cm above the table, yaw 0, suction off. Box sizes and masses uniform in
    ``box_size_range`` / ``box_mass_range``; the target at a uniform place in ``box_region`` with yaw U(±π/4);
    with probability ``touch_prob`` box 1 starts touching the target's ±x side (same yaw); the other boxes at
    uniform non-overlapping places. Tote centre uniform in ``tote_region``. With ``domain_randomization``:
    box μ U(0.4, 0.9), table μ U(0.3, 0.7), f_max × U(0.8, 1.2).

    ## Episode end

    Terminated when a box centre leaves the table footprint (±0.45 m) or falls below the table; truncated after
    200 steps (10 s, ``max_episode_steps``) or on a simulator failure (``info["sim_failure"]``).

    ## Info

    Besides the common keys: ``suction/force`` (4,) each cup's pull [N], ``suction/on``, ``attached`` (the target
    is held now), ``attach_event`` / ``release_event`` (it became held / was let go during this step).

    ## Arguments

    ``gym.make("CenicSuction-v0", **kwargs)``: the common options of :mod:`cenic_gym.env` (accuracy, max_step,
    fixed_step, control_period, domain_randomization, obs_noise, action_delay, render_mode), every key of
    :func:`default_config`, and ``explicit_suction`` (False: the suction linearized inside the convex step;
    True: evaluated explicitly at the step start, as most simulators do — CENIC Fig. 13b). ``reset(options=...)``
    accepts ``target_pose`` (x, y, yaw) and ``tote_xy`` (x, y).

    Rendering (:mod:`cenic_gym.render`): ``render_mode`` "rgb_array" or "human", ``render_width``,
    ``render_height`` [px], ``camera`` (default: the class's ``CAMERA``), ``viewer``.

    ## Version History

    - v0: initial version (cenic-gym 0.1).
    """

    OBS = OBS  # the module's declaration (the scripted policies read its slices too)
    View = SuctionView

    RESET_OPTIONS = ("target_pose", "tote_xy")

    @staticmethod
    def default_config():
        return default_config()

    CAMERA = dict(lookat=(0.1, 0.15, 0.15), distance=1.1, azimuth=120.0, elevation=-30.0)  # render default

    def _check_config(self, cfg):
        n = cfg["n_boxes"]
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 6:
            raise ValueError(f"n_boxes must be an integer in [1, 6], got {n!r}")
        for key in ("f_max", "d_sat", "d_cut", "seal_gap", "leak_gap", "shadow", "tote_mass", "attach_distance",
                    "z_lead"):
            v = cfg[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise ValueError(f"{key} must be a finite number > 0, got {v!r}")
        if not 0.0 <= cfg["touch_prob"] <= 1.0:
            raise ValueError(f"touch_prob must be in [0, 1], got {cfg['touch_prob']!r}")
        (a, b), (c, d), (e, f) = cfg["box_size_range"]
        if not 0 < a <= b and 0 < c <= d and 0 < e <= f:
            raise ValueError(f"box_size_range must be three (low, high) ranges of positive lengths, got "
                             f"{cfg['box_size_range']!r}")
        self.action_space = spaces.Box(-1.0, 1.0, (5,), np.float32)
        self.observation_space = OBS.space()

    # -- scene ---------------------------------------------------------------------------------------------------
    def _build(self):
        c = self.config
        mat = lambda mu: ContactMaterial(stiffness=c["stiffness"], dissipation=c["dissipation"],  # noqa: E731
                                         mu_static=mu)
        b = SceneBuilder()
        b.add_ground(mat(c["table_mu"]), name="table")
        add_suction_gripper(b, name=sc.ROBOT, position=tuple(sc.ROOT), urdf=gripper_urdf_path(2, 2, yaw=True),
                            material=mat(c["cup_mu"]))
        lo = np.array([r[0] for r in c["box_size_range"]])
        self.box_names = [f"box_{i}" for i in range(c["n_boxes"])]
        for i, name in enumerate(self.box_names):
            b.add_body(name, Box(tuple(lo)), mass=0.5, position=(-0.3 + 0.15 * i, 0.35, 0.5 * lo[2]),
                       material=mat(c["box_mu"]))
        ix, iy = c["tote_inner"]
        t, h, fl = c["tote_wall"], c["tote_height"], c["tote_floor"]
        X = lambda x, y, z: pin.SE3(np.eye(3), np.array([x, y, z]))  # noqa: E731
        tote = [(Box((ix + 2 * t, iy + 2 * t, fl)), X(0, 0, fl / 2)),
                (Box((t, iy + 2 * t, h)), X(ix / 2 + t / 2, 0, fl + h / 2)),
                (Box((t, iy + 2 * t, h)), X(-ix / 2 - t / 2, 0, fl + h / 2)),
                (Box((ix, t, h)), X(0, iy / 2 + t / 2, fl + h / 2)),
                (Box((ix, t, h)), X(0, -iy / 2 - t / 2, fl + h / 2))]
        b.add_body("tote", tote, mass=c["tote_mass"], position=(0.25, 0.0, 0.0), material=mat(c["box_mu"]))
        system = b.build()
        self.system = system
        self.gantry_v = system.robot_v_indices(sc.ROBOT, sc.GANTRY_JOINTS)
        self.gantry_q = system.robot_q_indices(sc.ROBOT, sc.GANTRY_JOINTS)
        self.cup_q = system.robot_q_indices(sc.ROBOT, sc.CUP_JOINTS)
        self.box_q = [system.q_slice(n) for n in self.box_names]
        self.tote_q = system.q_slice("tote")
        names = [g.name for g in system.geometries]
        self.box_geoms = [names.index(f"{n}/0") for n in self.box_names]
        m = system.model
        jz = system.robot_joint_ids(sc.ROBOT, ["z"])[0]
        carried = sum(m.inertias[j].mass for j in range(1, m.njoints) if jz in list(m.supports[j]))
        self.gantry = JointPD(system, self.gantry_v, c["gantry_kp"], c["gantry_kd"], q_d=np.zeros(4),
                              tau_ff=[0.0, 0.0, carried * 9.81, 0.0], effort_limit=c["gantry_effort_limit"])
        self.springs = cup_springs(system, sc.ROBOT, kp=c["spring_kp"], kd=c["spring_kd"])
        self.suction = SuctionGripper(system, sc.ROBOT, self.box_names, f_max=c["f_max"], d_sat=c["d_sat"],
                                      d_cut=c["d_cut"], on=False, implicit=not c["explicit_suction"], seal=c["seal"],
                                      seal_gap=c["seal_gap"], leak_gap=c["leak_gap"], shadow=c["shadow"])
        self.target_geom_local = int(np.flatnonzero(self.suction.geoms == self.box_geoms[0])[0])
        return system, [self.gantry, self.springs, self.suction]

    # -- episode -------------------------------------------------------------------------------------------------
    def _reset_task(self, options):
        c, rng, sim = self.config, self.np_random, self.sim
        n = c["n_boxes"]
        sizes = np.array([[rng.uniform(*r) for r in c["box_size_range"]] for _ in range(n)])
        masses = rng.uniform(*c["box_mass_range"], size=n)
        (x0, x1), (y0, y1) = c["box_region"]
        if "target_pose" in options:
            tx, ty, tyaw = _floats(options["target_pose"], 3, "target_pose")
        else:
            tx, ty, tyaw = rng.uniform(x0, x1), rng.uniform(y0, y1), rng.uniform(-math.pi / 4, math.pi / 4)
        poses = [(tx, ty, tyaw, sizes[0, 0], sizes[0, 1])]
        touch = n > 1 and rng.uniform() < c["touch_prob"]
        side = 1.0 if rng.uniform() < 0.5 else -1.0
        for i in range(1, n):
            if i == 1 and touch:  # against the target's ±x face, same yaw
                off = side * 0.5 * (sizes[0, 0] + sizes[1, 0])
                pose = (tx + off * math.cos(tyaw), ty + off * math.sin(tyaw), tyaw, sizes[1, 0], sizes[1, 1])
            else:
                pose = self._scatter(i, sizes[i, 0], sizes[i, 1], poses)
            poses.append(pose)
        poses, (ux, uy) = self._place_tote(poses, options)
        params = randomize(c, rng)
        q = sim.q
        for i, name in enumerate(self.box_names):
            shape = Box(tuple(sizes[i]))
            sim.set_geometry_shape(f"{name}/0", shape)
            self.suction.set_geometry_shape(f"{name}/0", shape)
            sim.set_body_inertia(name, mass=masses[i], inertia=shape.inertia(masses[i]).inertia)
            x, y, yaw = poses[i][:3]
            quat = matrix_to_quat_xyzw(pin.utils.rpyToMatrix(0.0, 0.0, yaw))
            q[self.box_q[i]] = np.concatenate([[x, y, 0.5 * sizes[i, 2]], quat])
        boxes = [f"{nm}/0" for nm in self.box_names]
        sim.set_geometry_material(boxes, mu_static=params["box_mu"], mu_dynamic=params["box_mu"])
        sim.set_geometry_material("table", mu_static=params["table_mu"], mu_dynamic=params["table_mu"])
        self.suction.f_max = params["f_max"]
        q[self.tote_q] = np.array([ux, uy, 0.0, 0.0, 0.0, 0.0, 1.0])
        q[self.gantry_q] = 0.0
        q[self.cup_q] = 0.0
        sim.set_state(q=q, v=np.zeros(self.system.nv))
        self.cmd = np.zeros(4)
        self.gantry.set_target(q_d=self.cmd.copy(), v_d=np.zeros(4))
        self.suction.on = False
        self.sizes, self.masses, self.params = sizes, masses, params
        self.start_z = 0.5 * sizes[0, 2]
        self.attached = False
        self.events = dict(attach_event=False, release_event=False)

    def _place_tote(self, poses, options):
        """The tote's centre (x, y) [m] clear of every box footprint in ``poses`` (1 cm clearance), and ``poses``
        with any distractor that the tote would overlap moved clear of it. Uniform in ``tote_region`` by rejection
        (only a draw that overlaps a box is redrawn); ``options["tote_xy"]`` places it, and is an error when it
        overlaps the target. Boxes never start inside or under the tote's walls."""
        c, rng = self.config, self.np_random
        (u0, u1), (v0, v1) = c["tote_region"]
        ix, iy = c["tote_inner"]
        lx, ly = ix + 2 * c["tote_wall"], iy + 2 * c["tote_wall"]
        if "tote_xy" in options:
            ux, uy = _floats(options["tote_xy"], 2, "tote_xy")
            if _overlap((ux, uy, 0.0, lx, ly), poses[0], 0.01):
                raise ValueError(f"reset options: tote_xy={(ux, uy)} puts the tote over the target box at "
                                 f"{tuple(round(v, 4) for v in poses[0][:3])} (x, y, yaw)")
        else:
            for _ in range(200):
                ux, uy = rng.uniform(u0, u1), rng.uniform(v0, v1)
                if not any(_overlap((ux, uy, 0.0, lx, ly), p, 0.01) for p in poses):
                    break
            else:  # the target and its neighbours leave no room: keep the last draw, clear the distractors below
                if _overlap((ux, uy, 0.0, lx, ly), poses[0], 0.01):
                    raise RuntimeError(f"no tote place in tote_region={c['tote_region']} clear of the target box")
        tote = (ux, uy, 0.0, lx, ly)
        placed = [poses[0]]
        for i, pose in enumerate(poses[1:], start=1):
            if _overlap(tote, pose, 0.01):
                pose = self._scatter(i, pose[3], pose[4], [*placed, tote])
            placed.append(pose)
        return placed, (ux, uy)

    def _scatter(self, i, lx, ly, obstacles):
        """A place (x, y, yaw, lx, ly) for distractor box ``i`` (footprint lx × ly [m]) clear of the rectangles in
        ``obstacles`` by 1 cm: uniform over ``box_region`` widened 10 cm towards −x, yaw uniform, by rejection
        (200 draws); if there is no room, parked in a corner of the table, out of the way."""
        (x0, x1), (y0, y1) = self.config["box_region"]
        rng = self.np_random
        for _ in range(200):
            cand = (rng.uniform(x0 - 0.1, x1), rng.uniform(y0, y1), rng.uniform(-math.pi, math.pi), lx, ly)
            if not any(_overlap(cand, p, 0.01) for p in obstacles):
                return cand
        return (-0.38, -0.38 + 0.12 * i, 0.0, lx, ly)

    def _apply_action(self, action):
        c = self.config
        t = self.sim.t
        new = np.clip(self.cmd + np.asarray(c["delta_scale"]) * action[:4], sc.GANTRY_LOWER, sc.GANTRY_UPPER)
        new[2] = max(new[2], self.sim.q[self.gantry_q[2]] - c["z_lead"])  # a following-error limit downwards
        T = self.control_period
        self.gantry.set_target(q_d=PiecewiseLinear([t, t + T], [self.cmd, new]), v_d=(new - self.cmd) / T)
        self.cmd = new
        self.suction.on = bool(action[4] > c["suction_threshold"])

    def _after_advance(self):
        was = self.attached
        self.attached = self._holding() >= 2
        self.events = dict(attach_event=self.attached and not was, release_event=was and not self.attached)

    def _task_info(self):
        s = self.view
        force = self.suction.cup_forces(s.q, s.suction_pairs)
        return dict(self.events, attached=self.attached, **{"suction/on": self.suction.on, "suction/force": force})

    # -- what the policy sees ------------------------------------------------------------------------------------
    def _observe(self):
        s = self.view
        q = s.q
        yaw = yaw_of(s.R_tool)
        quat = matrix_to_quat_xyzw(s.R_box)
        quat = -quat if quat[3] < 0 else quat
        mouths = self.suction.mouth_distances(q, s.suction_pairs)
        tote = s.tote_floor
        return OBS.pack(
            s.p_tool, [math.cos(yaw), math.sin(yaw)], s.v_tool, [s.w_tool[2]], q[self.cup_q],
            mouths, [1.0 if self.suction.on else 0.0], s.p_box, quat, np.concatenate([s.v_box, s.w_box]),
            0.5 * self.sizes[0], tote, s.p_box - s.p_tool, tote - s.p_box, self._prev_action)


    # -- contacts, reward, success -------------------------------------------------------------------------------
    def _holding(self):
        """Number of cups holding the target: suction on, mouth within ``attach_distance`` of it, sealed (σ ≥ 0.9)."""
        if not self.suction.on:
            return 0
        pairs = self.view.suction_pairs
        cups = {p.cup for p in pairs if p.geom == self.box_geoms[0] and p.distance < self.config["attach_distance"]
                and p.seal >= 0.9 and p.cos_theta > 0.9}
        return len(cups)

    def _rest_z(self):
        return self.config["tote_floor"] + 0.5 * self.sizes[0, 2]

    def _in_tote(self, s):
        """(centre inside the inner footprint, resting height reached) of the target."""
        c = self.config
        d = s.p_box - s.p_tote
        inside = abs(d[0]) <= 0.5 * c["tote_inner"][0] and abs(d[1]) <= 0.5 * c["tote_inner"][1]
        return inside, abs(d[2] - self._rest_z()) < 0.01

    def _reward_terms(self, action, prev_action, evaluation):
        c = self.config
        s = self.view
        mouth = s.p_tool - np.array([0.0, 0.0, sc.MOUTH_BELOW_TOOL])
        top = s.p_box + s.R_box @ np.array([0.0, 0.0, 0.5 * self.sizes[0, 2]])
        holding = self._holding()
        attached = holding >= 2
        dz = s.p_box[2] - self.start_z
        d_xy = float(np.linalg.norm((s.p_box - s.p_tote)[:2]))
        inside, low = self._in_tote(s)
        rest = s.p_tote + np.array([0.0, 0.0, self._rest_z()])
        terms = dict(
            approach=1.0 - math.tanh(10.0 * np.linalg.norm(top - mouth)),
            seal=holding / sc.N_CUPS,
            lift=float(attached) * min(max(dz / c["lift_height"], 0.0), 1.0),
            transport=float(attached and dz > 0.02) * (1.0 - math.tanh(5.0 * d_xy)),
            place=float(inside) * (1.0 - math.tanh(10.0 * np.linalg.norm(s.p_box - rest))),
            release=float(inside and low and not self.suction.on),
            time=1.0,
        )
        return {k: c["reward_scales"][k] * v for k, v in terms.items()}

    def _others_on_table(self):
        (x0, x1), (y0, y1) = self.config["table_xy"]
        for name in self.box_names[1:]:
            p = self.sim.body_pose(name)[0]
            if not (x0 <= p[0] <= x1 and y0 <= p[1] <= y1 and p[2] > 0.0):
                return False
        return True

    def evaluate(self):
        """Success and its parts (kept apart from the reward)."""
        c = self.config
        s = self.view
        inside, low = self._in_tote(s)
        still = np.linalg.norm(s.v_box) < c["rest_speed"] and np.linalg.norm(s.w_box) < c["rest_spin"]
        released = not self.suction.on
        others = self._others_on_table()
        return dict(success=bool(inside and low and still and released and others), inside=bool(inside),
                    on_floor=bool(low), at_rest=bool(still), released=released, others_on_table=others)

    def _terminated(self):
        (x0, x1), (y0, y1) = self.config["table_xy"]
        for name in self.box_names:
            p = self.sim.body_pose(name)[0]
            if not (x0 <= p[0] <= x1 and y0 <= p[1] <= y1) or p[2] < 0.0:
                return True
        return False

    # -- state ---------------------------------------------------------------------------------------------------
    def _task_state(self):
        return dict(cmd=self.cmd.copy(), sizes=self.sizes.copy(), masses=self.masses.copy(), params=dict(self.params),
                    start_z=self.start_z, attached=self.attached, events=dict(self.events))

    def _set_task_state(self, state):
        self.cmd = state["cmd"].copy()
        self.sizes = state["sizes"].copy()
        self.masses = state["masses"].copy()
        self.params = dict(state["params"])
        self.start_z = state["start_z"]
        self.attached = state["attached"]
        self.events = dict(state["events"])


def _floats(value, n, name):
    x = np.asarray(value, dtype=float).reshape(-1)
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        raise ValueError(f"reset option {name} must be {n} finite numbers, got {value!r}")
    return x


class ScriptedPicker:
    """A scripted pick-and-place policy (no learning) in the env's action space: it proves the task solvable.
    Waypoints of the gantry target (x, y, z, yaw): above the target with the yaw matched to the box (modulo a
    quarter turn), descend to 4 mm above its top, suction on and settle onto it, lift, carry above the tote, lower
    until the box is 5 mm above the tote floor, suction off, retreat. Each leg follows a minimum-jerk path; the
    action is the normalized change of the gantry target."""

    CLEAR = 0.03  # [m] box bottom above the tote walls while carrying

    def __init__(self, env):
        self.env = env.unwrapped
        self.plan = None

    def reset(self):
        e = self.env
        s = e.view
        c = e.config
        below = sc.MOUTH_BELOW_TOOL
        h = e.sizes[0, 2]
        top = s.p_box[2] + 0.5 * h  # box top (upright start)
        yaw = yaw_of(s.R_box)
        yaw = (yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4  # the cup array is symmetric under a quarter turn
        z = lambda tool_z: tool_z - sc.ROOT[2]  # noqa: E731  (joint value of a tool height)
        bx, by = s.p_box[:2] - sc.ROOT[:2]
        tx, ty = s.tote_floor[:2] - sc.ROOT[:2]
        carry = c["tote_floor"] + c["tote_height"] + self.CLEAR + h + below  # tool height: box bottom clears walls
        place = s.tote_floor[2] + 0.005 + h + below
        p = lambda x, y, zz: np.array([x, y, z(zz), yaw])  # noqa: E731
        above = p(bx, by, max(top + below + 0.06, carry))
        # (name, duration [s], suction, gantry target)
        self.plan = [("approach", 1.6, False, above), ("descend", 1.0, False, p(bx, by, top + below + 0.004)),
                     ("grip", 0.5, True, p(bx, by, top + below - 0.001)), ("lift", 1.0, True, p(bx, by, carry)),
                     ("carry", 2.0, True, p(tx, ty, carry)), ("lower", 1.2, True, p(tx, ty, place)),
                     ("release", 0.8, False, p(tx, ty, place)), ("retreat", 1.0, False, p(tx, ty, carry))]
        self.t0 = e.sim.t
        self.start = e.cmd.copy()
        self.phase = 0

    def __call__(self, obs=None):
        e = self.env
        if self.plan is None:
            self.reset()
        t = e.sim.t + e.control_period - self.t0  # where the target should be at the end of this step
        while self.phase < len(self.plan) - 1 and t > self.plan[self.phase][1]:
            t -= self.plan[self.phase][1]
            self.t0 += self.plan[self.phase][1]
            self.start = self.plan[self.phase][3]
            self.phase += 1
        _, duration, on, goal = self.plan[self.phase]
        target = self.start + min_jerk(t / duration)[0] * (goal - self.start)
        delta = (target - e.cmd) / np.asarray(e.config["delta_scale"])
        return np.concatenate([np.clip(delta, -1.0, 1.0), [1.0 if on else -1.0]]).astype(np.float32)


class SuctionExpert:
    """A feedback pick-and-place policy in the env's action space: each call reads the current state and returns
    the action that moves the tool toward the sub-goal of the stage that state is in, so it acts from any state,
    not only along its own path (what DAgger needs of a teacher: it labels the states a learner visits). Its
    sub-goals vary continuously with the state wherever they can (funnels, not switches): a network that imitates
    it cannot settle between two labels that point apart.

    Stages, decided from the state alone:

    - the target held (at least two cups sealed on it): rise until its bottom clears the tote's walls by ``CLEAR``
      while moving over the tote's centre (horizontal speed growing as the box clears the walls), lower it along a
      funnel (its bottom at most ``FUNNEL`` × its horizontal distance beyond ``OVER_XY`` above ``DROP`` over the
      floor), let go once lowered to ``DROP``;
    - not held and in the tote: suction off, retreat ``CLEAR`` above the tote's walls and hold still;
    - otherwise: suction off, tool over the target with the yaw matched to the box (modulo a quarter turn: the cup
      array's symmetry), the mouths' height above the box's highest point following the funnel ``FUNNEL`` ×
      (horizontal error beyond ``ALIGN_XY`` + ``YAW_FUNNEL`` × yaw error beyond ``ALIGN_YAW``), at most ``ABOVE``,
      down to ``PRESS`` into it; suction on when the mouths are within ``SEAL_AT`` of the box top.

    The motion action is ``GAIN`` · (sub-goal − measured tool) / ``delta_scale``, clipped to ±1 (±``CARRY_SPEED``
    while holding the box): a function of the state alone, not smoothed against the previous action (a network
    that imitates a smoothed teacher learns to repeat its previous action, which its observation holds).
    Measured: 100/100 default episodes (seeds 10 000…), 30/30 with ``action_delay=1``, 20/20 after 1 s of random
    actions."""

    ABOVE = 0.06  # highest approach of the cup mouths over the box top [m]
    FUNNEL = 2.0  # height of the approach (and of the carried box) per metre of horizontal error
    YAW_FUNNEL = 0.1  # metres of equivalent horizontal error per radian of yaw error
    CLEAR = 0.03  # carried box bottom above the tote walls, and the retreat height above them [m]
    DROP = 0.005  # carried box bottom above the tote floor where it is let go [m]
    ALIGN_XY = 0.002  # horizontal error the funnel tolerates at the bottom [m]
    ALIGN_YAW = 0.02  # yaw error the funnel tolerates at the bottom [rad]
    OVER_XY = 0.005  # box-to-tote-centre (horizontal) error the lowering funnel tolerates at the bottom [m]
    SEAL_AT = 0.004  # mouth-to-box-top distance at which the suction turns on [m]
    PRESS = 0.001  # how far the mouths are commanded into the box top while sealing [m]
    CARRY_SPEED = 0.6  # motion action bound while holding the box (a fraction of delta_scale)
    GAIN = 0.5  # fraction of the tool's error to a sub-goal commanded per step (stable with one period of delay)

    def __init__(self, env):
        self.env = env.unwrapped
        if not isinstance(self.env, SuctionPickEnv):
            raise ValueError(f"SuctionExpert drives CenicSuction-v0, got {type(self.env).__name__}")

    def reset(self):
        """Nothing to reset: the policy is a function of the state."""

    def __call__(self, obs=None):
        e = self.env
        c = e.config
        s = e.view
        p_tool, below = s.p_tool, sc.MOUTH_BELOW_TOOL
        extent = float(np.abs(s.R_box[2]) @ (0.5 * e.sizes[0]))  # half the box's height in the world
        top, bottom = s.p_box[2] + extent, s.p_box[2] - extent
        floor = s.tote_floor
        walls = floor[2] + c["tote_height"]
        tool_yaw = yaw_of(s.R_tool)
        yaw, bound, on = tool_yaw, 1.0, False
        inside, low = e._in_tote(s)
        if e._holding() >= 2:  # held: over the walls, over the tote's centre, down the funnel, let go
            bound, on = self.CARRY_SPEED, True
            d_xy = float(np.linalg.norm((s.p_box - floor)[:2]))
            carry = walls + self.CLEAR - floor[2] - self.DROP  # the carried bottom's height over the drop height
            height = min(carry, self.FUNNEL * max(0.0, d_xy - self.OVER_XY))
            clear = walls + self.CLEAR - bottom  # how far the box must still rise to clear the walls
            # horizontal motion as the box clears the walls, or when it is over the tote's centre already
            go = min(max(1.0 - clear / 0.02, (0.04 - d_xy) / 0.02, 0.0), 1.0)
            xy = p_tool[:2] + go * (floor - s.p_box)[:2]
            goal = np.array([*xy, p_tool[2] + floor[2] + self.DROP + height - bottom])
            on = not (height == 0.0 and bottom - floor[2] < self.DROP + 0.002)  # lowered to DROP: let go
        elif inside and (low or bottom < walls):  # in the tote: let go (it is), retreat above the walls
            goal = np.array([*p_tool[:2], max(p_tool[2], walls + self.CLEAR + below)])
        else:  # over the box along the funnel, down onto it, seal
            yaw_error = (yaw_of(s.R_box) - tool_yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4
            yaw = tool_yaw + yaw_error
            off = float(np.linalg.norm((s.p_box - p_tool)[:2]))
            error = max(0.0, off - self.ALIGN_XY) + self.YAW_FUNNEL * max(0.0, abs(yaw_error) - self.ALIGN_YAW)
            goal = np.array([*s.p_box[:2], top + below - self.PRESS + min(self.ABOVE, self.FUNNEL * error)])
            on = p_tool[2] - below - top < self.SEAL_AT
        scale = np.asarray(c["delta_scale"])
        move = np.clip(self.GAIN * (goal - p_tool) / scale[:3], -bound, bound)
        turn = np.clip(self.GAIN * (yaw - tool_yaw) / scale[3], -1.0, 1.0)
        return np.array([*move, turn, 1.0 if on else -1.0], dtype=np.float32)
