"""CenicQuadruped-v0: a Unitree Go1 tracks a velocity command (v_x, v_y, ω_z) on flat ground.

Scene: the Go1 (example-robot-data: free base, 12 revolute joints, primitive collision shapes for every link, the
9 sensor boxes dropped) on a half-space; every leg joint under an implicit effort-limited joint PD integrated inside
each convex CENIC step. Robot and ground share one contact material (pair stiffness k/2, pair friction μ).
Shape after MuJoCo Playground's ``locomotion/go1/joystick.py`` (rewards, command sampling, pushes) and
``randomize.py`` (domain randomization); constants in :mod:`go1_constants`.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
from gymnasium import spaces

from cenic_gym import Box, ContactMaterial, JointPD, SceneBuilder, Simulator
from cenic_gym.env import CenicEnv, ObsLayout, Segment, StateView
from cenic_gym.model import matrix_to_quat_xyzw, quat_xyzw_to_matrix

from . import go1_constants as gc
from .go1_gait import LegKinematics, TrotGenerator


def default_config():
    """Every number of the task (SI units: m, kg, s, rad), overridable by constructor kwargs."""
    return dict(
        control_period=0.02,  # 50 Hz (Playground's ctrl_dt)
        # "joint": 12 joint-target offsets from NOMINAL; "gait": the trot generator's stance velocity (3), step
        # offset (3), posture (2) and 12 residual joint offsets (go1_gait; the gait phase is observed)
        action_type="joint",
        action_scale=0.3,  # joint target offset from NOMINAL [rad] at |a| = 1 (action_type="joint")
        # action_type="gait" (go1_gait.TrotGenerator): step frequency [Hz], swing height [m], lead of the joint
        # targets [s], how far a foot may land from its nominal position [m]; at |a| = 1: stance velocity (v_x, v_y
        # [m/s], ω_z [rad/s]), step offset [m], posture slope, residual joint offset [rad]
        gait=dict(frequency=4.5, lift=0.07, lead_time=0.01, reach=0.10, velocity_scale=(2.0, 1.0, 2.0),
                  step_scale=(0.15, 0.15, 0.5), posture_scale=0.5, residual_scale=0.1),
        kp=gc.KP, kd=gc.KD,  # joint PD [N m/rad], [N m s/rad]
        armature=(gc.HIP_ARMATURE, gc.KNEE_ARMATURE),  # reflected rotor inertia (hip & thigh, knee) [kg m²]
        # Contact: robot and ground share k, d, μ, so a pair has k/2 = 5e5 N/m and μ: a standing foot sags
        # 13 kg · 9.81 / 4 / 5e5 = 0.06 mm. Chosen for the 2 mm penetration bound of random actions (falls on
        # thighs and trunk): 1e5 per geometry (scenes.go1_on_ground) gives 2-3 mm, 2e5 up to 2.1 mm, 1e6 < 1 mm,
        # at the same number of CENIC steps. Dissipation 10 s/m (Hunt-Crossley): scenes.go1_on_ground.
        stiffness=1e6, dissipation=10.0,
        friction=1.0,  # μ_static = μ_dynamic of robot and ground (rubber feet; scenes.go1_on_ground)
        spawn_height=0.30,  # base height [m] the robot is dropped from once, at construction, to find its stance
        settle_time=3.0,  # simulated seconds of that drop: every episode starts from the settled stance
        start_yaw=(-math.pi, math.pi),  # uniform base yaw at reset (Playground)
        # uniform ± half-widths of the start velocity: base linear (world x, y, z) [m/s], angular (base) [rad/s]
        # (Playground draws all six in ±0.5; vertical ±0.1 here: ±0.5 m/s down is a landing, not a start)
        start_velocity=(0.5, 0.5, 0.1, 0.5, 0.5, 0.5),
        command_range=(1.5, 0.8, 1.2),  # |v_x| [m/s], |v_y| [m/s], |ω_z| [rad/s] maxima (Playground's `a`)
        command_nonzero_prob=(0.9, 0.25, 0.5),  # each component is U(±range) with this probability, else 0 (`b`)
        command_resample_mean=5.0,  # command held for Exp(mean) seconds, then redrawn (Playground: Exp · 5 s)
        tracking_sigma=0.25,  # σ of the exp(−e²/σ) tracking rewards [(m/s)², (rad/s)²]
        air_time_target=0.1,  # feet_air_time rewards swing phases longer than this [s] (Playground)
        contact_force=1.0,  # a foot is in contact when its normal force exceeds this [N]
        flip_tilt=math.pi / 2,  # terminate when the base z axis tilts more than this from vertical [rad]
        tracking_window=0.5,  # time constant [s] of the velocity average evaluate() compares with the command
        success_lin_vel=0.25, success_ang_vel=0.5,  # success: averaged tracking errors below these [m/s, rad/s]
        # reward = Σ scale · term · control_period (Playground's weights per second)
        reward_scales=dict(tracking_lin_vel=1.0, tracking_ang_vel=0.5, lin_vel_z=-0.5, ang_vel_xy=-0.05,
                           orientation=-5.0, torques=-0.0002, action_rate=-0.01, feet_air_time=0.1,
                           foot_slip=-0.1, termination=-1.0),
        # domain randomization (Playground's randomize.py unless noted), drawn per episode when enabled
        randomization=dict(friction=(0.4, 1.0),  # robot and ground μ (so the pair's μ)
                           link_mass_scale=(0.9, 1.1),  # every rigid body's mass and inertia, independently
                           base_mass_add=(-1.0, 1.0),  # [kg] added to the base (after scaling)
                           base_com_offset=(-0.05, 0.05),  # [m] per axis, base centre of mass
                           kp_scale=(0.9, 1.1), kd_scale=(0.9, 1.1)),  # motor gains, all joints alike (ours)
        pushes=False,  # velocity kicks of the base at random times
        push_interval=(1.0, 3.0),  # seconds between kicks, uniform (Playground's kick_wait_times)
        push_velocity=(0.0, 1.0),  # horizontal Δv [m/s], uniform magnitude, uniform direction (Playground's
        #                            kick of up to 3 m/s over a half-sine force profile is a Δv of 3/π ≈ 1 m/s)
        privileged_obs=False,  # True: Dict observation {"policy": (48,), "critic": (88,)} (gait: 58, 98)
        # terrain (blind locomotion: the policy observation has no height scan):
        #   "flat"; "tiles": a square grid of level tiles (boxes welded to the world) with uniform random top
        #   heights in [0, max_height], laid out once per env from `seed` (Isaac Lab's random-grid terrain);
        #   "slope": the whole ground tilted by `slope` [rad] about the world y axis (rising towards +x)
        terrain="flat",
        terrain_tiles=dict(tile=0.5, extent=6.0, max_height=0.04, seed=0),  # [m], [m], [m], int
        # [rad] for terrain="slope" (5.7°). Facing up or down the slope the nominal-pose PD stands; across it the
        # soft stance (35 N m/rad) rolls over downhill in ~1.5 s: the policy has to compensate, as on hardware
        slope=0.1,
    )

TERRAINS = ("flat", "tiles", "slope")
TILE_THICKNESS = 0.2  # [m] of every tile box: its top is at the drawn height, the rest lies below the ground


def randomize(config, rng):
    """Per-episode physical parameters: nominal, or draws from ``config["randomization"]`` when
    ``domain_randomization`` is on (a dict there overrides some ranges). ``link_mass_scale`` is one scale per rigid
    body of the robot (13: base and 12 leg links), in model order."""
    dr = config["domain_randomization"]
    ranges = config["randomization"] if dr is True else ({**config["randomization"], **dr} if dr else None)
    if not ranges:
        return dict(friction=config["friction"], link_mass_scale=tuple(np.ones(13)), base_mass_add=0.0,
                    base_com_offset=(0.0, 0.0, 0.0), kp_scale=1.0, kd_scale=1.0)
    return dict(friction=float(rng.uniform(*ranges["friction"])),
                link_mass_scale=tuple(rng.uniform(*ranges["link_mass_scale"], size=13)),
                base_mass_add=float(rng.uniform(*ranges["base_mass_add"])),
                base_com_offset=tuple(rng.uniform(*ranges["base_com_offset"], size=3)),
                kp_scale=float(rng.uniform(*ranges["kp_scale"])), kd_scale=float(rng.uniform(*ranges["kd_scale"])))


def go1_scene(config=None, height=None):
    """The Go1 at its nominal pose with its base ``height`` [m] (default ``spawn_height``) above a flat ground, and
    the leg PD (effort limits from the URDF) holding that pose: (MultibodySystem, JointPD). The ground geometry is
    named ``"ground"``."""
    c = {**default_config(), **(config or {})}
    mat = ContactMaterial(stiffness=c["stiffness"], dissipation=c["dissipation"], mu_static=c["friction"],
                          mu_dynamic=c["friction"])
    b = SceneBuilder()
    add_terrain(b, c, mat)
    b.add_robot("go1", name=gc.ROBOT, position=(0.0, 0.0, c["spawn_height"] if height is None else height),
                material=mat, q0=gc.NOMINAL, armature=gc.armature(*c["armature"]))
    system = b.build()
    pd = JointPD(system, system.robot_v_indices(gc.ROBOT, gc.JOINTS), kp=c["kp"], kd=c["kd"], q_d=gc.NOMINAL)
    return system, pd


def tile_heights(tiles):
    """Top heights [m] of the ``terrain="tiles"`` grid, (n, n) with n = round(extent / tile), row i along x:
    uniform in [0, max_height], drawn from ``seed`` (the layout is part of the env's configuration, not of an
    episode)."""
    n = int(round(tiles["extent"] / tiles["tile"]))
    return np.random.default_rng(tiles["seed"]).uniform(0.0, tiles["max_height"], (n, n))


def add_terrain(builder, config, material):
    """The ground of ``config["terrain"]``: a half-space named ``"ground"``, tilted for "slope"; for "tiles" also
    the tile boxes ``"terrain/i_j"`` centred on the origin (world frame, z up)."""
    kind = config["terrain"]
    if kind == "slope":
        s = config["slope"]
        builder.add_ground(material, normal=(-math.sin(s), 0.0, math.cos(s)), name="ground")
        return
    builder.add_ground(material, name="ground")
    if kind == "tiles":
        t = config["terrain_tiles"]
        h = tile_heights(t)
        n = h.shape[0]
        for i in range(n):
            for j in range(n):
                centre = ((i - (n - 1) / 2) * t["tile"], (j - (n - 1) / 2) * t["tile"], h[i, j] - TILE_THICKNESS / 2)
                builder.add_fixed(f"terrain/{i}_{j}", Box((t["tile"], t["tile"], TILE_THICKNESS)), position=centre,
                                  material=material)


# The policy's observation (base frame, x forward, z up, unless noted), declared once: space, noise scales
# (Playground's), docstring table and index slices.
OBS = ObsLayout(
    Segment("base_linear_velocity", 3, 0.1, "base linear velocity [m/s]"),
    Segment("base_angular_velocity", 3, 0.2, "base angular velocity [rad/s]"),
    Segment("projected_gravity", 3, 0.05, "projected gravity Rᵀ(0, 0, −1)"),
    Segment("joint_positions", 12, 0.03, "joint positions − NOMINAL [rad]"),
    Segment("joint_velocities", 12, 1.5, "joint velocities [rad/s]"),
    Segment("applied", 12, 0.0, "last applied action (= the previous action, unless ``action_delay`` > 0)"),
    Segment("command", 3, 0.0, "command (v_x, v_y, ω_z) [m/s, rad/s]"),
)
ACTION_TYPES = ("joint", "gait")
GAIT_ACTIONS = 20  # stance velocity 3, step offset 3, posture 2, residuals 12
# action_type="gait": the same, with the 20 numbers of its action and the generator's phase
OBS_GAIT = ObsLayout(*OBS.segments[:5],
                     Segment("applied", GAIT_ACTIONS, 0.0,
                             "last applied action (stance velocity 3, step offset 3, posture 2, residuals 12)"),
                     OBS.segments[6],
                     Segment("gait_phase", 2, 0.0, "(sin φ, cos φ) of the trot generator's phase φ"))


class QuadrupedView(StateView):
    """The quantities of one state the task reads: base rotation ``R`` (world ← base), base linear velocity in the
    world frame ``v_world`` and in the base frame ``v_base`` (Rᵀ v_world) [m/s], base angular velocity ``omega``
    (base frame) [rad/s]."""

    def __init__(self, env):
        super().__init__(env)
        vb = self.v[env.base_v]
        self.R = quat_xyzw_to_matrix(self.q[env.base_q][3:7])
        self.v_world = vb[:3].copy()
        self.omega = vb[3:].copy()
        self.v_base = self.R.T @ self.v_world


class QuadrupedEnv(CenicEnv):
    """## Description

    A Unitree Go1 (12 actuated joints, 13 kg) on flat ground tracks a velocity command: forward and lateral speed
    and yaw rate in its own frame, redrawn at random times. Physics is CENIC at accuracy ε (default 1e-3): each
    0.02 s step (50 Hz) sets new joint targets, then the simulator advances under an implicit, effort-limited joint
    PD (35 N m/rad, 0.5 N m s/rad; 23.7 / 35.55 N m limits from the URDF) integrated inside every convex contact
    step, with as many adaptive substeps as the accuracy needs. Every link collides with the ground (primitive
    shapes), so a fall is a fall: knees, thighs and trunk touch down.

    ## Action space

    ``Box(-1, 1, (12,), float32)``; out-of-range values are clipped, NaN or a wrong shape raise ``ValueError``.
    Joint targets q_d = NOMINAL + 0.3 rad × a (``action_scale``), clipped to the joint limits; order FL, FR, RL, RR,
    each (hip abduction, thigh, calf). NOMINAL = (∓0.1, 0.9, −1.8) rad per leg (left legs −0.1).

    ``action_type="gait"`` (a policy modulating a trajectory generator, :mod:`go1_gait`): ``Box(-1, 1, (20,))``.
    A trot generator (diagonal pairs alternate at ``gait["frequency"]`` = 4.5 Hz, swings ``gait["lift"]`` = 7 cm
    high; its phase φ advances by 2π f Δt every step, from 0 at reset) plans the feet in the base frame from
    a[0:3], the stance velocity (v_x, v_y, ω_z) × ``velocity_scale`` (2 m/s, 1 m/s, 2 rad/s): stance feet move
    with the ground relative to a body moving so; a[3:6], the step offset (x, y, ψ) × ``step_scale`` (0.15 m,
    0.15 m, 0.5 rad): where a swinging foot lands relative to the neutral point of that velocity (within
    ``reach`` = 10 cm of its nominal position), which is what balances a trot (Raibert's foot placement);
    a[6:8], the posture (pitch and roll slopes × ``posture_scale``); a[8:20], residual joint offsets
    × ``residual_scale`` (0.1 rad) added after the legs' inverse kinematics. The generator adds the stance legs'
    weight deflection (Jᵀ f / K_p) and leads the plan by ``lead_time`` (10 ms); targets are clipped to the joint
    limits. The observation then holds the 20 applied numbers at 33–52, the command at 53–55 and (sin φ, cos φ)
    at 56–57 (58 numbers, ``quadruped.OBS_GAIT``). ``GaitTeacher`` drives it from the observation alone.

    ## Observation space

    ``Box(-inf, inf, (48,), float32)``, base frame (x forward, z up) unless noted (``quadruped.OBS`` declares it):

OBSERVATION_TABLE

    With ``privileged_obs=True`` the observation is ``Dict(policy=Box((48,)), critic=Box((88,)))`` (asymmetric
    actor-critic; noise only on "policy"). critic: 0–47 the policy observation without noise; 48 base height [m];
    49–52 foot contacts (0/1; FL, FR, RL, RR); 53–64 foot contact forces on the feet, world frame [N] (3 per foot);
    65–76 foot velocities, world frame [m/s]; 77–80 feet air times [s]; 81 friction μ; 82 K_p scale; 83 K_d
    scale; 84 base mass [kg]; 85–87 base centre of mass in the base frame [m] (with ``action_type="gait"`` the
    policy part is 58 long and every critic index after it 10 higher). ``privileged_obs=False`` (default) keeps the
    flat Box that plain SB3 policies take.

    ## Rewards

    reward = Σ_k scale_k · term_k · Δt, Δt = 0.02 s (``info["reward/<k>"]`` holds each scaled term; weights per
    second in ``reward_scales``, Playground's joystick). v, ω: base frame unless noted; c: the command the step was
    acting on; σ = 0.25.

    - tracking_lin_vel (1.0): exp(−‖c_xy − v_xy‖² / σ)
    - tracking_ang_vel (0.5): exp(−(c_ωz − ω_z)² / σ)
    - lin_vel_z (−0.5): v_z² (world)
    - ang_vel_xy (−0.05): ω_x² + ω_y² (world)
    - orientation (−5.0): g_x² + g_y² of the projected gravity (sin² of the tilt)
    - torques (−0.0002): ‖τ‖₂ + ‖τ‖₁, τ the 12 joint torques the PD applied (``Simulator.applied_effort``) [N m]
    - action_rate (−0.01): ‖a − a_prev‖²
    - feet_air_time (0.1): Σ_feet (t_air − 0.1 s) at each touchdown, when ‖c‖ > 0.01
    - foot_slip (−0.1): Σ_feet in contact (slip speed at the foot–ground contact)² [(m/s)²] (the contact solver's)
    - termination (−1.0): 1 on the step the episode terminates

    ## Success

    ``info["is_success"]`` (``evaluate()``): not fallen, and the base velocity averaged over 0.5 s (exponential
    window) tracks the command within 0.25 m/s (v_x, v_y) and 0.5 rad/s (ω_z).

    ## Starting state

    Built once: the robot is dropped from a base height of 0.30 m at NOMINAL under the PD and settles for 3 s; every
    episode starts from that stance (base ≈ 0.26 m) at the origin, yaw U(−π, π), base velocity U(±0.5, ±0.5, ±0.1)
    m/s (world) and U(±0.5) rad/s (base frame), PD targets at NOMINAL. Command: each of (v_x, v_y, ω_z) is
    U(±(1.5, 0.8, 1.2)) with probability (0.9, 0.25, 0.5), else 0; it is redrawn after Exp(5 s) (rounded to
    steps, at least one) — ``reset(options={"command": (v_x, v_y, ω_z)})`` fixes it for the episode instead.
    With ``domain_randomization``: friction μ U(0.4, 1.0) (robot and ground), each rigid body's mass and inertia
    × U(0.9, 1.1), base mass + U(−1, 1) kg, base centre of mass + U(±0.05) m per axis, K_p × U(0.9, 1.1),
    K_d × U(0.9, 1.1), per episode (setters: nothing is rebuilt). With ``pushes=True``: every U(1, 3) s the
    base's horizontal velocity gets a kick of U(0, 1) m/s in a uniform direction (``Simulator.set_state(v=...)``).

    ## Episode end

    Terminated when the base flips (its z axis tilts more than 90°) or the trunk (base body: trunk box and hip
    rotors) touches the ground; truncated after 1000 steps (20 s, ``max_episode_steps``) or on a simulator
    failure (``info["sim_failure"]``).

    ## Arguments

    ``gym.make("CenicQuadruped-v0", **kwargs)``: the common options of :mod:`cenic_gym.env` (accuracy, max_step,
    fixed_step, control_period, domain_randomization, obs_noise, action_delay, render_mode) and every key of
    :func:`default_config`, among them:

    | kwarg                | default | meaning                                                              |
    |----------------------|---------|----------------------------------------------------------------------|
    | action_type          | "joint" | "joint" (12 joint-target offsets) or "gait" (trot generator + residuals) |
    | action_scale         | 0.3     | joint target offset [rad] at \\|a\\| = 1                               |
    | gait                 | above   | trot generator and action scales (action_type="gait", go1_gait)              |
    | kp, kd               | 35, 0.5 | joint PD gains [N m/rad], [N m s/rad]                                |
    | stiffness, dissipation, friction | 1e6, 10, 1.0 | contact material of robot and ground [N/m], [s/m], μ     |
    | command_range        | (1.5, 0.8, 1.2) | command maxima (v_x, v_y [m/s], ω_z [rad/s])                 |
    | reward_scales        | above   | weights per second of the reward terms                               |
    | randomization        | above   | ranges of domain randomization                                       |
    | pushes               | False   | velocity kicks; ``push_interval`` [s], ``push_velocity`` [m/s]        |
    | privileged_obs       | False   | Dict observation with a critic part                                  |

    | terrain              | "flat"  | "flat", "tiles" (grid of level tiles, random heights up to 4 cm), "slope" (tilted ground) |
    | terrain_tiles, slope | above   | tile size, extent, max height, layout seed [m]; slope angle [rad]   |

    Terrain is blind: the observation has no height scan (add one with a wrapper if the policy needs it).

    Rendering (:mod:`cenic_gym.render`): ``render_mode`` "rgb_array" or "human", ``render_width``,
    ``render_height`` [px], ``camera`` (default: the class's ``CAMERA``), ``viewer``.

    ## Version History

    - v0: initial version (cenic-gym 0.1).
    """

    OBS = OBS  # the module's declaration (the scripted policies read its slices too)
    View = QuadrupedView

    RESET_OPTIONS = ("command",)
    N_PRIVILEGED = 40  # what the critic observes beyond the policy's observation

    @staticmethod
    def default_config():
        return default_config()

    # render default: follows the base
    CAMERA = dict(lookat=(0.0, 0.0, 0.0), distance=1.6, azimuth=130.0, elevation=-20.0, track=gc.BASE_JOINT)

    def _check_config(self, cfg):
        for key in ("action_scale", "settle_time", "spawn_height", "command_resample_mean", "tracking_sigma",
                    "tracking_window", "stiffness"):
            v = cfg[key]
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not v > 0:
                raise ValueError(f"{key} must be > 0, got {v!r}")
        if cfg["terrain"] not in TERRAINS:
            raise ValueError(f"terrain must be one of {TERRAINS}, got {cfg['terrain']!r}")
        t = cfg["terrain_tiles"]
        if (not isinstance(t, dict) or set(t) != set(default_config()["terrain_tiles"])
                or not (t["tile"] > 0 and t["extent"] >= t["tile"] and t["max_height"] >= 0)):
            raise ValueError(f"terrain_tiles must be dict(tile > 0, extent >= tile, max_height >= 0, seed), got {t!r}")
        if not 0 <= cfg["slope"] < math.atan(cfg["friction"]):
            raise ValueError(f"slope must be in [0, atan(friction)) rad (the stance must hold), got {cfg['slope']!r}")
        for key in ("kp", "kd", "dissipation", "friction"):
            v = cfg[key]
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not v >= 0:
                raise ValueError(f"{key} must be >= 0, got {v!r}")
        if cfg["action_type"] not in ACTION_TYPES:
            raise ValueError(f"action_type must be one of {ACTION_TYPES}, got {cfg['action_type']!r}")
        g = cfg["gait"]
        lengths = ("lift", "lead_time", "reach")
        scales = ("posture_scale", "residual_scale")
        triples = ("velocity_scale", "step_scale")
        if (set(g) != {"frequency", *lengths, *scales, *triples}
                or not all(isinstance(g[k], (int, float)) for k in ("frequency", *lengths, *scales))
                or not all(g[k] >= 0 for k in lengths) or not all(g[k] > 0 for k in ("frequency", *scales))
                or not all(len(g[k]) == 3 and all(x > 0 for x in g[k]) for k in triples)):
            raise ValueError(f"gait must have {', '.join(lengths)} >= 0, frequency and {', '.join(scales)} > 0, 3 "
                             f"values > 0 for {' and '.join(triples)}, and no other keys; got {g!r}")
        gait = cfg["action_type"] == "gait"
        self.OBS = OBS_GAIT if gait else OBS
        self.action_space = spaces.Box(-1.0, 1.0, (GAIT_ACTIONS if gait else 12,), np.float32)
        policy = self.OBS.space()
        if cfg.get("privileged_obs") is True:
            self.observation_space = spaces.Dict(
                policy=policy, critic=spaces.Box(-np.inf, np.inf, (self.OBS.size + self.N_PRIVILEGED,), np.float32))
        else:
            self.observation_space = policy
        for key in ("push_interval", "push_velocity", "start_yaw"):
            lo, hi = cfg[key]
            if not lo <= hi or (key != "start_yaw" and lo < 0):
                bound = "low <= high" if key == "start_yaw" else "0 <= low <= high"
                raise ValueError(f"{key} must be a range (low, high) with {bound}, got {cfg[key]!r}")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        c = self.config
        sim = self.sim
        self._nominal_inertia = [sim.body_inertia(j) for j in self._body_joints]
        # the stance every episode starts from: the robot dropped at NOMINAL, settled (a throwaway simulator)
        max_step = self.control_period if c["max_step"] is None else c["max_step"]
        # on tiles the stance is settled on flat ground (it is lifted by max_height at reset): dropped at NOMINAL onto
        # the tiles under the origin the robot tips over (converged answer, ε = 1e-5; issue 10: the Lagged friction
        # bound's grip on landing had held it up at ε ≥ 1e-4)
        system = go1_scene({**c, "terrain": "flat"})[0] if c["terrain"] == "tiles" else self.system
        settle = Simulator(system, accuracy=c["accuracy"], max_step=max_step, fixed_step=c["fixed_step"],
                           external=[JointPD(system, self.leg_v, kp=c["kp"], kd=c["kd"], q_d=gc.NOMINAL)])
        settle.advance_to(c["settle_time"])
        self.stance_q = settle.q

    # -- scene ---------------------------------------------------------------------------------------------------
    def _build(self):
        c = self.config
        system, pd = go1_scene(c)
        self.system, self.pd = system, pd
        m = system.model
        self.leg_q = system.robot_q_indices(gc.ROBOT, gc.JOINTS)
        g = c["gait"]
        self.gait = TrotGenerator(LegKinematics(m), gc.NOMINAL, mass=pin.computeTotalMass(m), kp=c["kp"],
                                  frequency=g["frequency"], lift=g["lift"], lead_time=g["lead_time"],
                                  reach=g["reach"], control_period=c["control_period"])
        # action_type="gait": what |a| = 1 means for each of the 20 numbers (stance velocity, step offset, posture,
        # residuals), in the generator's units
        self.gait_scale = np.concatenate([g["velocity_scale"], g["step_scale"], [g["posture_scale"]] * 2,
                                          [g["residual_scale"]] * 12])
        self.leg_v = system.robot_v_indices(gc.ROBOT, gc.JOINTS)
        self.base_q, self.base_v = system.q_slice(gc.BASE_JOINT), system.v_slice(gc.BASE_JOINT)
        self.q_lower, self.q_upper = m.lowerPositionLimit[self.leg_q], m.upperPositionLimit[self.leg_q]
        names = [g.name for g in system.geometries]
        base_joint = m.getJointId(gc.BASE_JOINT)
        self.robot_geoms = [n for n in names if n.startswith(gc.ROBOT + "/")]
        self.terrain_geoms = [g.name for g in system.geometries if g.joint == 0]  # ground and tiles
        # per geometry index: fixed to the world (ground), on the base body (trunk box, hip rotors), foot 0-3 or -1
        self._is_world_list = [g.joint == 0 for g in system.geometries]
        self._is_base_list = [g.joint == base_joint for g in system.geometries]
        self._foot_of_list = [gc.FOOT_GEOMS.index(n) if n in gc.FOOT_GEOMS else -1 for n in names]
        self._body_joints = [gc.BASE_JOINT] + [f"{gc.ROBOT}/{j}" for j in gc.JOINTS]  # the 13 rigid bodies
        return system, [pd]

    # -- episode -------------------------------------------------------------------------------------------------
    def _reset_task(self, options):
        c, rng, sim = self.config, self.np_random, self.sim
        fixed = None
        if "command" in options:
            fixed = np.asarray(options["command"], dtype=float).reshape(-1)
            if fixed.shape != (3,) or not np.all(np.isfinite(fixed)):
                raise ValueError(f"reset option command must be 3 finite numbers (v_x, v_y, ω_z), got "
                                 f"{options['command']!r}")
        params = randomize(c, rng)
        self._apply_params(params)
        yaw = rng.uniform(*c["start_yaw"])
        vel = rng.uniform(-1.0, 1.0, 6) * np.asarray(c["start_velocity"])
        q = self._start_pose(yaw)
        v = np.zeros(self.system.nv)
        v[self.base_v] = vel
        sim.set_state(q=q, v=v)
        self.pd.set_target(q_d=gc.NOMINAL)
        self.fixed_command = fixed is not None
        self.command = fixed.copy() if fixed is not None else self._sample_command()
        self.reward_command = self.command.copy()
        self.command_countdown = self._sample_command_steps()
        self.push_countdown = self._sample_push_steps() if c["pushes"] else 0
        self.applied = np.zeros(self.action_space.shape[0])
        self.gait_plan = self.gait.start()
        self.air_time = np.zeros(4)
        self.contact = np.ones(4, dtype=bool)
        self.first_contact = np.zeros(4, dtype=bool)
        self.touchdown_air = np.zeros(4)
        self.foot_force = np.zeros((4, 3))
        self.foot_slip = np.zeros(4)
        self.base_contact = False
        self.params = params

    def _after_reset(self):
        self.vel_avg = self._tracked_velocity()

    def _start_pose(self, yaw):
        """The settled stance turned by ``yaw`` [rad] about the ground normal: on flat ground and tiles about the
        world z axis with the base over the origin, on tiles lifted by ``max_height`` (no foot starts inside a
        tile: it lands from at most that height); on the slope about the slope's normal through the origin, which
        keeps the feet on the plane."""
        c = self.config
        q = self.stance_q.copy()
        qb = q[self.base_q]
        if c["terrain"] == "slope":
            n = np.array([-math.sin(c["slope"]), 0.0, math.cos(c["slope"])])
            Rn = pin.exp3(yaw * n)
            qb[:3] = Rn @ qb[:3]
        else:
            Rn = pin.utils.rpyToMatrix(0.0, 0.0, yaw)
            qb[:2] = 0.0
            if c["terrain"] == "tiles":
                qb[2] += c["terrain_tiles"]["max_height"]
        qb[3:7] = matrix_to_quat_xyzw(Rn @ quat_xyzw_to_matrix(qb[3:7]))
        q[self.base_q] = qb
        return q

    def _apply_params(self, p):
        """Domain randomization by setters (nothing rebuilt): friction, masses, base COM, PD gains."""
        if not self.config["domain_randomization"]:
            return  # reset restored the nominal parameters
        sim = self.sim
        sim.set_geometry_material(self.terrain_geoms + self.robot_geoms, mu_static=p["friction"], mu_dynamic=p["friction"])
        for k, (body, (m, com, inertia)) in enumerate(zip(self._body_joints, self._nominal_inertia)):
            scale = p["link_mass_scale"][k]
            new_m = m * scale + (p["base_mass_add"] if k == 0 else 0.0)
            new_com = com + np.asarray(p["base_com_offset"]) if k == 0 else com
            sim.set_body_inertia(body, mass=new_m, com=new_com, inertia=inertia * (new_m / m))
        self.pd.set_gains(kp=self.config["kp"] * p["kp_scale"], kd=self.config["kd"] * p["kd_scale"])

    def _sample_command(self):
        c, rng = self.config, self.np_random
        value = rng.uniform(-1.0, 1.0, 3) * np.asarray(c["command_range"])
        keep = rng.uniform(size=3) < np.asarray(c["command_nonzero_prob"])
        return np.where(keep, value, 0.0)

    def _advance_command(self):
        """One control period of the command process: the countdown, and a new command when it runs out."""
        if not self.fixed_command:
            self.command_countdown -= 1
            if self.command_countdown <= 0:
                self.command = self._sample_command()
                self.command_countdown = self._sample_command_steps()

    def _sample_command_steps(self):
        return max(1, int(round(self.np_random.exponential(self.config["command_resample_mean"])
                                / self.control_period)))

    def _sample_push_steps(self):
        return max(1, int(round(self.np_random.uniform(*self.config["push_interval"]) / self.control_period)))

    def _apply_action(self, action):
        c, sim = self.config, self.sim
        # the step acts on the command the policy saw; the next observation may show a new one
        self.reward_command = self.command.copy()
        self._advance_command()
        if c["pushes"]:
            self.push_countdown -= 1
            if self.push_countdown <= 0:
                rng = self.np_random
                angle = rng.uniform(0.0, 2.0 * math.pi)
                dv = rng.uniform(*c["push_velocity"])
                v = sim.v
                v[self.base_v.start:self.base_v.start + 2] += dv * np.array([math.cos(angle), math.sin(angle)])
                sim.set_state(v=v)
                self.push_countdown = self._sample_push_steps()
        self.applied = np.asarray(action, dtype=float).copy()
        if c["action_type"] == "gait":
            q_d = self._gait_targets(self.applied)
        else:
            q_d = gc.NOMINAL + c["action_scale"] * self.applied
        self.pd.set_target(q_d=q_d.clip(self.q_lower, self.q_upper))

    def _gait_targets(self, action):
        """Joint targets of ``action_type="gait"``: the trot generator one control period on, driven by the
        action's stance velocity, step offset, posture and residuals (each × its scale in ``gait``)."""
        u = action * self.gait_scale
        self.gait_plan = self.gait.step(self.gait_plan, u[0:3], step_offset=u[3:6], posture=u[6:8], residual=u[8:])
        return self.gait_plan.q

    # -- per-step bookkeeping (once after each advance: contacts, air times, velocity average) -------------------
    def _after_advance(self):
        c, sim = self.config, self.sim
        cr = sim.contact_results()
        force, fn_foot, slip = [0.0] * 12, [0.0] * 4, [0.0] * 4  # force: 4 feet x (x, y, z) [N], world frame
        base_contact = False
        threshold = c["contact_force"]
        is_world, foot_of, is_base = self._is_world_list, self._foot_of_list, self._is_base_list
        # a handful of contacts: plain floats beat numpy's per-call overhead (same operations, same bits)
        forces, normals, slips, phis = cr.force.tolist(), cr.normal.tolist(), cr.slip_speed.tolist(), cr.phi.tolist()
        for i, (a, b) in enumerate(zip(cr.geom_a.tolist(), cr.geom_b.tolist())):
            if is_world[a] == is_world[b]:
                continue  # robot self-contact (or world-world)
            other, sign = (b, 1.0) if is_world[a] else (a, -1.0)  # cr.force acts on B
            k = foot_of[other]
            if k >= 0:
                fx, fy, fz = forces[i]
                nx, ny, nz = normals[i]
                force[3 * k] += sign * fx
                force[3 * k + 1] += sign * fy
                force[3 * k + 2] += sign * fz
                fn = fx * nx + fy * ny + fz * nz
                fn_foot[k] += fn
                if fn > threshold:
                    slip[k] = max(slip[k], slips[i])
            elif is_base[other] and phis[i] < 0.0:
                base_contact = True
        force = np.array(force).reshape(4, 3)
        self.foot_force, self.foot_slip, self.base_contact = force, np.array(slip), base_contact
        fn_foot = np.array(fn_foot)
        contact = fn_foot > c["contact_force"]
        self.first_contact = (self.air_time > 0.0) & contact
        self.air_time = self.air_time + self.control_period
        self.touchdown_air = np.where(self.first_contact, self.air_time, 0.0)
        self.air_time = np.where(contact, 0.0, self.air_time)
        self.contact = contact
        alpha = min(1.0, self.control_period / c["tracking_window"])
        self.vel_avg = self.vel_avg + alpha * (self._tracked_velocity() - self.vel_avg)

    # -- what the policy sees ------------------------------------------------------------------------------------
    def _tracked_velocity(self):
        """(v_x, v_y, ω_z) of the base in its own frame [m/s, rad/s]: what the command asks for."""
        s = self.view
        return np.array([s.v_base[0], s.v_base[1], s.omega[2]])

    def _observe(self):
        s = self.view
        q, v = s.q, s.v
        parts = [s.v_base, s.omega, -s.R[2, :], q[self.leg_q] - gc.NOMINAL, v[self.leg_v], self.applied, self.command]
        if self.config["action_type"] == "gait":
            phase = self.gait_plan.phase
            parts.append([math.sin(phase), math.cos(phase)])
        obs = self.OBS.pack(*parts)
        if not self.config["privileged_obs"]:
            return obs
        sim, p = self.sim, self.params
        foot_vel = np.concatenate([sim.body_velocity(f)[0] for f in gc.FOOT_FRAMES])
        mass, com, _ = sim.body_inertia(gc.BASE_JOINT)
        critic = np.concatenate([obs, [q[self.base_q][2]], self.contact.astype(float), self.foot_force.ravel(),
                                 foot_vel, self.air_time, [p["friction"], p["kp_scale"], p["kd_scale"], mass], com])
        return dict(policy=obs, critic=critic)

    def _noisy(self, obs):
        if isinstance(obs, dict):  # noise on the policy's part only; the critic sees the truth
            return dict(policy=super()._noisy(obs["policy"]), critic=np.asarray(obs["critic"], dtype=np.float32))
        return super()._noisy(obs)


    # -- reward, success, termination ----------------------------------------------------------------------------
    def _fallen(self):
        R = self.view.R
        return bool(R[2, 2] < math.cos(self.config["flip_tilt"]) or self.base_contact)

    def _reward_terms(self, action, prev_action, evaluation):
        c = self.config
        s = self.view
        R, v_world, omega, v = s.R, s.v_world, s.omega, s.v_base
        vx, vy, _ = v.tolist()  # base frame
        wx, wy, _ = (R @ omega).tolist()  # world frame
        wz, vz, r20, r21 = float(omega[2]), float(v_world[2]), float(R[2, 0]), float(R[2, 1])
        cmd = self.reward_command
        cx, cy, cz = cmd.tolist()
        sigma = c["tracking_sigma"]
        tau = self.sim.applied_effort(self.pd)
        moving = float(cmd @ cmd > 1e-4)  # ‖c‖ > 0.01
        ex, ey, ez = cx - vx, cy - vy, cz - wz
        terms = dict(
            tracking_lin_vel=math.exp(-(ex * ex + ey * ey) / sigma),
            tracking_ang_vel=math.exp(-(ez ** 2) / sigma),
            lin_vel_z=vz ** 2,
            ang_vel_xy=wx ** 2 + wy ** 2,
            orientation=r20 ** 2 + r21 ** 2,
            torques=math.sqrt(float(tau @ tau)) + float(np.abs(tau).sum()),
            action_rate=float(((action - prev_action) ** 2).sum()),
            feet_air_time=moving * float(((self.touchdown_air - c["air_time_target"]) * self.first_contact).sum()),
            foot_slip=float((self.foot_slip ** 2).sum()),
            termination=float(evaluation["fallen"]),
        )
        dt, scales = self.control_period, c["reward_scales"]
        return {k: scales[k] * v * dt for k, v in terms.items()}

    def evaluate(self):
        """Success and its parts (kept apart from the reward): tracking errors of the averaged base velocity."""
        c = self.config
        err = self.vel_avg - self.command
        lin, ang = float(np.linalg.norm(err[:2])), float(abs(err[2]))
        fallen = self._fallen()
        return dict(success=bool(not fallen and lin < c["success_lin_vel"] and ang < c["success_ang_vel"]),
                    lin_vel_error=lin, ang_vel_error=ang, fallen=fallen)

    def _terminated(self):
        return self._fallen()

    # -- state ---------------------------------------------------------------------------------------------------
    _TASK_KEYS = ("command", "reward_command", "fixed_command", "command_countdown", "push_countdown", "applied",
                  "gait_plan",
                  "air_time", "contact", "first_contact", "touchdown_air", "foot_force", "foot_slip", "base_contact",
                  "vel_avg", "params")

    def _task_state(self):
        return {k: getattr(self, k) for k in self._TASK_KEYS}

    def _set_task_state(self, state):
        for k in self._TASK_KEYS:
            setattr(self, k, state[k])


class TrotGait:
    """An open-loop trot (no feedback, no learning) in the env's own action space: it shows that contact gives
    traction. Diagonal leg pairs (FL + RR, FR + RL) alternate with phase φ = 2π f t (+π for the second pair):
    thigh target NOMINAL + A_t sin φ (the foot moves backward while cos φ > 0: stance) and calf target
    NOMINAL − A_c max(0, −cos(φ − δ)) (the knee folds, lifting the foot, in the other half: swing; δ = 0.5 rad
    delays the lift behind the soft PD's lagging thigh, which doubles the speed over δ = 0); amplitudes ramp up
    over the first ``ramp`` seconds. Turned into normalized actions by ``action_scale``. Defaults: 2 Hz,
    A_t = A_c = 0.3 rad: about 0.27 m/s forward (``benchmarks/quadruped_trot.py``)."""

    PHASE = np.array([0.0, math.pi, math.pi, 0.0])  # FL, FR, RL, RR

    def __init__(self, env, frequency=2.0, thigh=0.3, calf=0.3, lift_delay=0.5, ramp=0.5):
        self.env = env.unwrapped
        self.frequency, self.thigh, self.calf, self.lift_delay, self.ramp = frequency, thigh, calf, lift_delay, ramp
        self.t0 = None

    def reset(self):
        self.t0 = self.env.sim.t

    def __call__(self, obs=None):
        e = self.env
        if self.t0 is None:
            self.reset()
        t = e.sim.t + e.control_period - self.t0  # where the targets should be at the end of this step
        return np.clip(self.offset(t) / e.config["action_scale"], -1.0, 1.0).astype(np.float32)

    def offset(self, t):
        """Joint-target offsets from NOMINAL [rad] (12, leg order FL, FR, RL, RR × hip, thigh, calf) at ``t`` [s]
        after the gait's start: a pure function of time (also drives the MuJoCo side by side in benchmarks)."""
        phase = 2.0 * math.pi * self.frequency * t + self.PHASE
        s = min(1.0, t / self.ramp) if self.ramp > 0 else 1.0
        offset = np.zeros(12)
        offset[1::3] = s * self.thigh * np.sin(phase)
        offset[2::3] = -s * self.calf * np.maximum(0.0, -np.cos(phase - self.lift_delay))
        return offset


class GaitTeacher:
    """A feedback policy for ``action_type="gait"`` (no learning; the DAgger teacher of the locomotion recipe), a
    function of what the policy observes (base velocity, projected gravity, command):

    - stance velocity: the command (its forward part × ``FORWARD``: forward strides fall short of the stance sweep,
      backward ones do not), limited to ``ACCEL`` of the measured (v_x, v_y) (a step change of the command is walked
      into, not jumped at), plus ``GAIN`` times the remaining tracking error of (v_x, v_y, ω_z);
    - step offset: Raibert's foot placement, (T_stance / 2 + ``RAIBERT``) (v − v_stance): a foot lands ahead of the
      neutral point when the body is faster than the stance velocity, which slows it, and behind when slower;
    - posture: the stance feet lowered on the side the body leans towards (projected gravity × ``LEVEL``);
    - residuals: the push that accelerates the body towards the stance velocity, a horizontal force
      f = m ``PUSH`` (v_stance − v) shared by the legs on the ground in the coming period, as the joint offsets
      whose PD torques exert it (−Jᵀ f / K_p). Soft servos otherwise lag the stance sweep instead of pushing:
      without it a step of the command from 0 to 1.2 m/s forward is not tracked within 3 s; with it, in 1.1 s.
    Its constants (and the generator's frequency, lift, lead and reach) come from searches on training seeds."""

    # how far the stance velocity may lead the measured (v_x, v_y) [m/s]; the yaw rate is not limited (limiting it
    # to the measured one lets a spin feed itself: the stance turns with the body)
    ACCEL = np.array([0.45, 0.27, np.inf])
    GAIN = np.array([1.25, 0.57, 1.6])
    FORWARD = 1.05
    RAIBERT = 0.04  # [s]
    LEVEL = 0.2
    PUSH = np.array([6.7, 2.5])  # [1/s] along x, y

    def __init__(self, env):
        self.env = env.unwrapped
        if self.env.config["action_type"] != "gait":
            raise ValueError("GaitTeacher drives action_type='gait'")

    def reset(self):
        """Nothing to reset: the policy is a function of the state."""

    def __call__(self, obs=None):
        e, s, gen = self.env, self.env.view, self.env.gait
        v = np.array([s.v_base[0], s.v_base[1], s.omega[2]])
        command = e.command * np.array([self.FORWARD if e.command[0] > 0.0 else 1.0, 1.0, 1.0])
        v_stance = np.clip(command, v - self.ACCEL, v + self.ACCEL)
        limit = e.gait_scale[0:3]
        v_stance = np.clip(v_stance + self.GAIN * (v_stance - v), -limit, limit)
        u = np.zeros(GAIT_ACTIONS)  # in the generator's units; the action is u / gait_scale
        u[0:3] = v_stance
        u[3:6] = (0.5 * gen.stance_time + self.RAIBERT) * (v - v_stance)
        u[6:8] = self.LEVEL * -s.R[2, :2]  # projected gravity (x, y), base frame
        stance = gen.stance(gen.advance(e.gait_plan.phase))
        if stance.any():
            push = np.zeros(3)
            push[:2] = gen.mass * self.PUSH * (v_stance[:2] - v[:2]) / stance.sum()
            J = gen.legs.jacobian(s.q[e.leg_q])
            u[8:] = -np.where(stance[:, None], J.transpose(0, 2, 1) @ push, 0.0).ravel() / e.config["kp"]
        return np.clip(u / e.gait_scale, -1.0, 1.0).astype(np.float32)
