"""CenicAllegro-v0: a Wonik Allegro right hand, palm up, reorients a cube resting on its palm to a goal orientation.

Scene: the Allegro hand (example-robot-data: 16 revolute joints, boxes per link and fingertip spheres) welded to the
world with its palm facing up, and a free cube on the palm; every finger joint under an implicit, effort-limited
joint PD integrated inside each convex CENIC step. No ground: a cube that leaves the hand falls and ends the episode.
Shape after MuJoCo Playground's ``manipulation/leap_hand/reorient.py`` (goal resampling on success, consecutive
success count) and Isaac Lab's Allegro in-hand task (reward terms); constants in :mod:`allegro_constants`.

Frames: world z is up and equals the palm normal; the fingers point along world +x, the thumb lies on the −y side.
The palm face is the plane z = 0.0111 m; the palm box spans x ∈ [−0.095, 0] m, y ∈ ±0.0565 m.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
from gymnasium import spaces

from cenic_gym import Box, ContactMaterial, JointPD, SceneBuilder
from cenic_gym.env import CenicEnv, ObsLayout, Segment
from cenic_gym.model import quat_xyzw_to_matrix

from . import allegro_constants as ac

# palm link orientation in the world: palm normal (palm x) -> world z, fingers (palm z) -> world x
PALM_ROTATION = np.array([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [1.0, 0.0, 0.0]])
PALM_FACE_Z = ac.PALM_SURFACE_X  # world height of the palm face [m]
# the hand's "open cup" pose [rad], joint-name order: fingers raised into a wall in front of the cube (base 0,
# proximal 1.0, middle 0.9, distal 0.6), thumb lying open on the −y side (0.3, 0.2, 0.2, 0.2)
NOMINAL = np.array([0.0, 1.0, 0.9, 0.6] * 3 + [0.3, 0.2, 0.2, 0.2])
# the world mirrored across its xz-plane (y -> -y): a point, a quaternion (x, y, z, w) (M R M), the fingers' roles
# (index and ring are mirror images of each other about the middle finger; the thumb is not mirrored) and the
# joint order that puts each finger's joints in the slot of the finger whose role it plays
MIRROR = np.array([1.0, -1.0, 1.0])
MIRROR_QUAT = np.array([-1.0, 1.0, -1.0, 1.0])
MIRROR_FINGER = (2, 1, 0, 3)
MIRROR_JOINTS = np.r_[8:12, 4:8, 0:4, 12:16]


def default_config():
    """Every number of the task (SI units: m, kg, s, rad), overridable by constructor kwargs."""
    return dict(
        control_period=0.05,  # 20 Hz (Playground's LeapCubeReorient ctrl_dt)
        action_scale=0.1,  # joint target change per step [rad] at |a| = 1 (2 rad/s at 20 Hz)
        kp=ac.KP, kd=ac.KD, effort_limit=ac.EFFORT_LIMIT,  # finger PD [N m/rad], [N m s/rad], [N m]
        armature=ac.ARMATURE,  # reflected rotor inertia of every joint [kg m²]
        # Contact: hand and cube share k, d (pair k/2 = 5e4 N/m: the resting 0.1 kg cube sags 5 µm on its four
        # corners, a 5 N fingertip push 0.1 mm); Hunt-Crossley dissipation 20 s/m (as CenicFranka's pads)
        stiffness=1e5, dissipation=20.0,
        hand_friction=1.0,  # μ of the hand's links (rubber-coated fingertips and palm pad)
        cube_friction=1.0,  # μ of the cube (pairs combine harmonically: 1.0 with the hand's 1.0)
        cube_size=ac.CUBE_SIZE, cube_mass=ac.CUBE_MASS,  # [m], [kg]
        cube_start=(-0.045, 0.0),  # cube centre (x, y) at reset [m]: over the palm centre (palm box z −0.0475)
        start_position_noise=0.005,  # uniform ± on the start (x, y) [m]
        start_yaw=(-math.pi, math.pi),  # cube yaw about the palm normal at reset, uniform [rad]
        # the cube is released this far above the palm face [m]: the thumb's base box stands up to 3 mm proud of
        # the face under a yawed cube's corner; 4 mm of fall lands at 0.28 m/s (0.2 mm transient sag)
        spawn_clearance=0.004,
        goal="so3",  # "so3": goals uniform over all orientations (Playground); "z": a uniform yaw about the palm
        #              normal (world z) applied to the cube's orientation when the goal is drawn
        success_threshold=0.1,  # orientation error [rad] that counts as reaching the goal (a new one is drawn)
        success_threshold_wide=0.2,  # second, wider threshold only counted, for published comparisons [rad]
        drop_height=0.0,  # the cube is dropped when its centre is this far above the palm face or lower [m]
        # reward = Σ scale · term, per step (info["reward/<k>"] holds each scaled term)
        reward_scales=dict(orientation=1.0, position=-10.0, success=10.0, drop=-20.0, hand_pose=-0.1,
                           action_rate=-0.01, energy=-0.01),
        # domain randomization (ours; the ranges the issue asks for), drawn per episode when enabled
        randomization=dict(cube_size=(0.06, 0.07), cube_mass=(0.07, 0.13), cube_friction=(0.7, 1.2),
                           kp_scale=(0.9, 1.1), kd_scale=(0.9, 1.1)),
        privileged_obs=False,  # True: Dict observation {"policy": (59,), "critic": (108,)}
    )


def randomize(config, rng):
    """Per-episode physical parameters: nominal, or uniform draws from ``config["randomization"]`` when
    ``domain_randomization`` is on (a dict there overrides some ranges)."""
    dr = config["domain_randomization"]
    ranges = config["randomization"] if dr is True else ({**config["randomization"], **dr} if dr else None)
    if not ranges:
        return dict(cube_size=config["cube_size"], cube_mass=config["cube_mass"],
                    cube_friction=config["cube_friction"], kp_scale=1.0, kd_scale=1.0)
    return {k: float(rng.uniform(*ranges[k])) for k in ("cube_size", "cube_mass", "cube_friction", "kp_scale",
                                                          "kd_scale")}


def cube_inertia(mass, size):
    """Rotational inertia (3, 3) [kg m²] of a solid cube of ``mass`` [kg] and edge ``size`` [m] about its centre."""
    return np.eye(3) * mass * size * size / 6.0


def allegro_scene(config=None, nominal=NOMINAL):
    """The palm-up Allegro hand at ``nominal`` and the cube resting on the palm at ``cube_start``, with the finger PD
    holding ``nominal``: (MultibodySystem, JointPD). The cube is body ``"cube"`` with geometry ``"cube/0"``."""
    c = {**default_config(), **(config or {})}
    hand = ContactMaterial(stiffness=c["stiffness"], dissipation=c["dissipation"], mu_static=c["hand_friction"])
    cube = ContactMaterial(stiffness=c["stiffness"], dissipation=c["dissipation"], mu_static=c["cube_friction"])
    b = SceneBuilder()
    b.add_robot("allegro", name=ac.ROBOT, rotation=PALM_ROTATION, material=hand,
                q0=dict(zip(ac.JOINTS, np.asarray(nominal, dtype=float))), armature=c["armature"],
                damping=ac.PASSIVE_DAMPING)
    s = c["cube_size"]
    b.add_body("cube", Box((s, s, s)), mass=c["cube_mass"],
               position=(c["cube_start"][0], c["cube_start"][1], PALM_FACE_Z + 0.5 * s), material=cube)
    system = b.build()
    pd = JointPD(system, system.robot_v_indices(ac.ROBOT, ac.JOINTS), kp=c["kp"], kd=c["kd"], q_d=nominal,
                 effort_limit=c["effort_limit"])
    return system, pd


# -- quaternions (x, y, z, w), as Pinocchio stores them --------------------------------------------------------
def quat_multiply(a, b):
    """Hamilton product a ⊗ b of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def quat_conjugate(q):
    return np.array([-q[0], -q[1], -q[2], q[3]])


def rotation_to_goal(q_cube, q_goal):
    """The rotation q_goal ⊗ q_cube⁻¹ (world frame) taking the cube to the goal, sign fixed to w ≥ 0."""
    d = quat_multiply(q_goal, quat_conjugate(q_cube))
    return -d if d[3] < 0 else d


def rotation_angle(q):
    """Angle [rad] in [0, π] of the rotation of a unit quaternion (x, y, z, w)."""
    return 2.0 * math.atan2(float(np.linalg.norm(q[:3])), abs(float(q[3])))


def yaw_quaternion(angle):
    """Rotation by ``angle`` [rad] about world z as a quaternion (x, y, z, w)."""
    return np.array([0.0, 0.0, math.sin(0.5 * angle), math.cos(0.5 * angle)])


def uniform_quaternion(rng):
    """A uniformly distributed rotation (normalized 4-D Gaussian), w ≥ 0."""
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q


# The policy's observation (world frame, z = palm normal, x along the fingers), declared once: space, noise scales,
# docstring table and the index slices the scripted rotator reads.
OBS = ObsLayout(
    Segment("joint_positions", 16, 0.01, "joint positions [rad]"),
    Segment("target_minus_joints", 16, 0.01, "joint targets − joint positions [rad]"),
    Segment("cube_position", 3, 0.002, "cube centre − palm centre (0, −0.0475 m along x, on the palm face) [m]"),
    Segment("cube_orientation", 4, 0.01, "cube orientation quaternion (x, y, z, w), w ≥ 0"),
    Segment("rotation_to_goal", 4, 0.01, "rotation from cube to goal, quaternion q_goal ⊗ q_cube⁻¹ (x, y, z, w), "
                                          "w ≥ 0"),
    Segment("applied", 16, 0.0, "last applied action (= the previous action, unless ``action_delay`` > 0)"),
)


class AllegroCubeEnv(CenicEnv):
    """## Description

    A Wonik Allegro right hand (16 actuated joints, 4 fingers), fixed with its palm facing up, holds a 6.5 cm,
    0.1 kg cube resting on its palm and must turn it to a goal orientation. Each episode draws a goal; when the
    cube is within 0.1 rad of it (and still in the hand) a new goal is drawn and the episode goes on, so the score
    is the number of consecutive goals reached (``info["successes"]``; ``info["successes_wide"]`` counts the goals
    on which the error came within 0.2 rad, for comparison with MuJoCo Playground's LeapCubeReorient and Isaac
    Lab's Allegro cube numbers). Physics is CENIC at accuracy ε (default 1e-3): each 0.05 s step (20 Hz) moves the
    joint targets, then the simulator advances under an implicit, effort-limited joint PD (3 N m/rad,
    0.1 N m s/rad, 0.5 N m; :mod:`allegro_constants` gives the sources) integrated inside every convex contact
    step, with as many adaptive substeps as the accuracy needs. Every link and fingertip collides with the cube and
    with the other fingers.

    ## Action space

    ``Box(-1, 1, (16,), float32)``; out-of-range values are clipped, NaN or a wrong shape raise ``ValueError``.
    Delta joint targets: q_d ← clip(q_d + 0.1 rad × a, joint limits) (``action_scale``); q_d starts at NOMINAL.
    Joint order: index 0–3, middle 4–7, ring 8–11 (each: base rotation, proximal, middle, distal flexion), thumb
    12–15 (``joint_<k>.0`` of the URDF).

    ## Observation space

    ``Box(-inf, inf, (59,), float32)``, world frame (z = palm normal, x along the fingers; ``allegro_cube.OBS``
    declares it):

OBSERVATION_TABLE

    The cube's pose (position and orientation) is observed as a real hand's object tracker gives it, and as the
    anchors' policies see it (Gymnasium-Robotics' HandManipulateBlock, IsaacGymEnvs' AllegroHand full state): the
    rotation to the goal alone leaves the cube's edges, which the fingers push, unobserved (the goal's own yaw is
    drawn at random; docs/performance.md, "Task definitions that measurements changed").

    With ``privileged_obs=True`` the observation is ``Dict(policy=Box((59,)), critic=Box((108,)))`` (asymmetric
    actor-critic; noise only on "policy"). critic: 0–58 the policy observation without noise; 59–74 joint
    velocities [rad/s]; 75–77 cube linear velocity [m/s]; 78–80 cube angular velocity [rad/s]; 81–92 fingertip
    sphere centres − palm centre (index, middle, ring, thumb) [m]; 93–104 contact force on the cube from each
    fingertip [N]; 105 cube size [m]; 106 cube mass [kg]; 107 cube friction μ. ``privileged_obs=False``
    (default) keeps the flat Box that plain SB3 policies take.

    ## Rewards

    reward = Σ_k scale_k · term_k per step (``info["reward/<k>"]`` holds each scaled term; ``reward_scales``):

    - orientation (1.0): 1 − θ/π ∈ [0, 1], θ the angle of q_goal ⊗ q_cube⁻¹ [rad] (before a reached goal is
      replaced). Positive while the cube is in hand, so ending an episode by a drop never pays: with a cost −θ
      per step (this env's first version) PPO learned to drop the cube early (docs/performance.md,
      "Task definitions that measurements changed"), the reward-hacking a termination invites when every step in hand is negative.
    - position (−10.0): ‖cube centre − its start position over the palm‖ [m]
    - success (10.0): 1 on a step that reaches the goal (θ < 0.1 rad, cube in hand)
    - drop (−20.0): 1 on the step the cube is dropped
    - hand_pose (−0.1): ‖q − NOMINAL‖² [rad²]
    - action_rate (−0.01): ‖a − a_prev‖²
    - energy (−0.01): Σ_j |τ_j q̇_j| [W], τ the PD's applied torques (``Simulator.applied_effort``)

    ## Success

    ``info["is_success"]`` (``evaluate()``): this step reached the current goal (θ < ``success_threshold``) with
    the cube in hand; the next goal is then drawn and the observation shows it. ``info["successes"]``: goals
    reached so far in the episode (consecutive: a drop ends the episode); ``info["successes_wide"]``: goals on
    which θ came below ``success_threshold_wide``; ``info["rotation_error"]``: θ [rad] before resampling.

    ## Starting state

    The hand at NOMINAL (fingers raised as a wall in front of the cube, thumb open), PD targets at NOMINAL. The cube
    is released 4 mm above the palm face (``spawn_clearance``; the thumb's base box stands proud of the face under
    some yaws) with its centre at (−0.045, 0) m ± U(0.005) m per axis and yaw about the palm normal U(−π, π), and
    falls onto the palm in the first step. Goal: uniform over SO(3) (``goal="so3"``), or (``goal="z"``) the cube's
    orientation laid flat (:func:`level_quaternion`: the start orientation for the first goal, the one that reached
    the last goal for the next) turned about the palm normal by U(−π, π); ``reset(options={"goal": (x, y, z, w)})``
    fixes the first goal. With ``domain_randomization``: cube edge U(0.06, 0.07) m, mass U(0.07, 0.13) kg, friction
    μ U(0.7, 1.2), K_p and K_d × U(0.9, 1.1) each, per episode (setters: nothing is rebuilt).

    ## Episode end

    Terminated when the cube is dropped: its centre at or below the palm face (``drop_height``); truncated after
    400 steps (20 s, ``max_episode_steps``) or on a simulator failure (``info["sim_failure"]``).

    ## Arguments

    ``gym.make("CenicAllegro-v0", **kwargs)``: the common options of :mod:`cenic_gym.env` (accuracy, max_step,
    fixed_step, control_period, domain_randomization, obs_noise, action_delay, render_mode) and every key of
    :func:`default_config`, among them:

    | kwarg                 | default      | meaning                                                        |
    |-----------------------|--------------|----------------------------------------------------------------|
    | action_scale          | 0.1          | joint target change per step [rad] at \\|a\\| = 1                |
    | kp, kd, effort_limit  | 3, 0.1, 0.5  | finger PD [N m/rad], [N m s/rad], torque limit [N m]           |
    | cube_size, cube_mass  | 0.065, 0.1   | cube edge [m], mass [kg]                                       |
    | goal                  | "so3"        | goal distribution: "so3" or "z" (yaw about the palm normal)    |
    | success_threshold     | 0.1          | orientation error of success [rad]                             |
    | reward_scales         | above        | weights of the reward terms                                    |
    | randomization         | above        | ranges of domain randomization                                 |
    | privileged_obs        | False        | Dict observation with a critic part                            |

    Rendering (:mod:`cenic_gym.render`): ``render_mode`` "rgb_array" or "human", ``render_width``,
    ``render_height`` [px], ``camera`` (default: the class's ``CAMERA``), ``viewer``.

    ## Version History

    - v0: initial version (cenic-gym 0.1).
    """

    OBS = OBS  # the module's declaration (the scripted policies read its slices too)

    RESET_OPTIONS = ("goal",)
    N_POLICY_OBS, N_CRITIC_OBS = OBS.size, 108

    @staticmethod
    def default_config():
        return default_config()

    CAMERA = dict(lookat=(-0.05, 0.0, 0.05), distance=0.55, azimuth=150.0, elevation=-35.0)  # render default

    def _check_config(self, cfg):
        for key in ("action_scale", "cube_size", "cube_mass", "stiffness", "success_threshold",
                    "success_threshold_wide", "effort_limit"):
            v = cfg[key]
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not v > 0:
                raise ValueError(f"{key} must be > 0, got {v!r}")
        for key in ("kp", "kd", "dissipation", "hand_friction", "cube_friction", "armature", "start_position_noise",
                    "spawn_clearance"):
            v = cfg[key]
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not v >= 0:
                raise ValueError(f"{key} must be >= 0, got {v!r}")
        if cfg["goal"] not in ("so3", "z"):
            raise ValueError(f"goal must be 'so3' or 'z', got {cfg['goal']!r}")
        self.action_space = spaces.Box(-1.0, 1.0, (16,), np.float32)
        policy = OBS.space()
        if cfg.get("privileged_obs") is True:
            self.observation_space = spaces.Dict(
                policy=policy, critic=spaces.Box(-np.inf, np.inf, (self.N_CRITIC_OBS,), np.float32))
        else:
            self.observation_space = policy
        lo, hi = cfg["start_yaw"]
        if not lo <= hi:
            raise ValueError(f"start_yaw must be a range (low, high) with low <= high, got {cfg['start_yaw']!r}")

    # -- scene ---------------------------------------------------------------------------------------------------
    def _build(self):
        system, pd = allegro_scene(self.config)
        self.system, self.pd = system, pd
        m = system.model
        self.hand_q = system.robot_q_indices(ac.ROBOT, ac.JOINTS)
        self.hand_v = system.robot_v_indices(ac.ROBOT, ac.JOINTS)
        self.cube_q, self.cube_v = system.q_slice("cube"), system.v_slice("cube")
        self.q_lower, self.q_upper = m.lowerPositionLimit[self.hand_q], m.upperPositionLimit[self.hand_q]
        names = [g.name for g in system.geometries]
        self.hand_geoms = [n for n in names if n.startswith(ac.ROBOT + "/")]
        self._cube_geom = names.index("cube/0")
        self._tip_of = {names.index(g): k for k, g in enumerate(ac.TIP_GEOMS)}
        self.palm_centre = np.array([ac.PALM_CENTRE_Z, 0.0, PALM_FACE_Z])
        return system, [pd]

    # -- episode -------------------------------------------------------------------------------------------------
    def _reset_task(self, options):
        c, rng, sim = self.config, self.np_random, self.sim
        fixed = None
        if "goal" in options:
            fixed = np.asarray(options["goal"], dtype=float).reshape(-1)
            norm = float(np.linalg.norm(fixed)) if fixed.shape == (4,) and np.all(np.isfinite(fixed)) else 0.0
            if not norm > 1e-9:
                raise ValueError(f"reset option goal must be a quaternion of 4 finite numbers (x, y, z, w), not all "
                                 f"zero, got {options['goal']!r}")
            fixed = fixed / norm
        params = randomize(c, rng)
        self._apply_params(params)
        size = params["cube_size"]
        xy = np.asarray(c["cube_start"], dtype=float) + rng.uniform(-1.0, 1.0, 2) * c["start_position_noise"]
        yaw = rng.uniform(*c["start_yaw"])
        q = sim.q
        q[self.hand_q] = NOMINAL
        z = PALM_FACE_Z + 0.5 * size + c["spawn_clearance"]
        q[self.cube_q] = np.concatenate([[xy[0], xy[1], z], yaw_quaternion(yaw)])
        sim.set_state(q=q, v=np.zeros(self.system.nv))
        self.q_target = NOMINAL.copy()
        self.pd.set_target(q_d=self.q_target)
        self.home = q[self.cube_q][:3].copy()
        self.params = params
        self.applied = np.zeros(16)
        self.successes, self.successes_wide = 0, 0
        self.goal = fixed if fixed is not None else self._sample_goal(q[self.cube_q][3:7])
        self.wide_reached = False  # the current goal came within success_threshold_wide
        self.reached = False  # the last step reached its goal
        self.dropped = False
        self.rot_error = rotation_angle(rotation_to_goal(q[self.cube_q][3:7], self.goal))

    def _sample_goal(self, q_cube):
        rng = self.np_random
        if self.config["goal"] == "so3":
            return uniform_quaternion(rng)
        g = quat_multiply(yaw_quaternion(rng.uniform(-math.pi, math.pi)), level_quaternion(q_cube))
        return -g if g[3] < 0 else g

    def _apply_params(self, p):
        """Domain randomization by setters (nothing rebuilt): cube size, mass, friction, PD gains."""
        if not self.config["domain_randomization"]:
            return  # reset restored the nominal parameters
        sim, c = self.sim, self.config
        s, m = p["cube_size"], p["cube_mass"]
        sim.set_geometry_shape("cube/0", Box((s, s, s)))
        sim.set_body_inertia("cube", mass=m, com=np.zeros(3), inertia=cube_inertia(m, s))
        sim.set_geometry_material(["cube/0"], mu_static=p["cube_friction"], mu_dynamic=p["cube_friction"])
        self.pd.set_gains(kp=c["kp"] * p["kp_scale"], kd=c["kd"] * p["kd_scale"])

    def _apply_action(self, action):
        self.applied = np.asarray(action, dtype=float).copy()
        self.q_target = np.clip(self.q_target + self.config["action_scale"] * self.applied, self.q_lower,
                                self.q_upper)
        self.pd.set_target(q_d=self.q_target)

    # -- per-step bookkeeping (once after each advance: goal reached, drop, next goal) ---------------------------
    def _after_advance(self):
        c = self.config
        q_cube = self.view.q[self.cube_q]
        self.rot_error = rotation_angle(rotation_to_goal(q_cube[3:7], self.goal))
        self.dropped = bool(q_cube[2] - PALM_FACE_Z <= c["drop_height"])
        if not self.dropped and self.rot_error < c["success_threshold_wide"] and not self.wide_reached:
            self.wide_reached = True
            self.successes_wide += 1
        self.reached = bool(not self.dropped and self.rot_error < c["success_threshold"])
        if self.reached:
            self.successes += 1
            self.goal = self._sample_goal(q_cube[3:7])
            self.wide_reached = False

    # -- what the policy sees ------------------------------------------------------------------------------------
    def _observe(self):
        q, v = self.view.q, self.view.v
        qh = q[self.hand_q]
        q_cube = q[self.cube_q]
        q_c = q_cube[3:7]
        obs = OBS.pack(qh, self.q_target - qh, q_cube[:3] - self.palm_centre, -q_c if q_c[3] < 0 else q_c,
                       rotation_to_goal(q_c, self.goal), self.applied)
        if not self.config["privileged_obs"]:
            return obs
        p = self.params
        tips = np.concatenate([self.sim.body_pose(f)[0] - self.palm_centre for f in ac.TIP_FRAMES])
        critic = np.concatenate([obs, v[self.hand_v], v[self.cube_v], tips, self.tip_forces().ravel(),
                                 [p["cube_size"], p["cube_mass"], p["cube_friction"]]])
        return dict(policy=obs, critic=critic)

    def tip_forces(self):
        """(4, 3) contact force [N] (world frame) each fingertip sphere (index, middle, ring, thumb) exerted on the
        cube in the last accepted step."""
        out = np.zeros((4, 3))
        if self.sim.t == 0.0:
            return out
        cr = self.sim.contact_results()
        cube, tip_of = self._cube_geom, self._tip_of
        for i, (a, b) in enumerate(zip(cr.geom_a.tolist(), cr.geom_b.tolist())):
            if b == cube and a in tip_of:
                out[tip_of[a]] += cr.force[i]  # force acts on B (the cube)
            elif a == cube and b in tip_of:
                out[tip_of[b]] -= cr.force[i]
        return out

    def _noisy(self, obs):
        if isinstance(obs, dict):  # noise on the policy's part only; the critic sees the truth
            return dict(policy=super()._noisy(obs["policy"]), critic=np.asarray(obs["critic"], dtype=np.float32))
        return super()._noisy(obs)


    # -- reward, success, termination ----------------------------------------------------------------------------
    def _reward_terms(self, action, prev_action, evaluation):
        c = self.config
        q, v = self.view.q, self.view.v
        tau = self.sim.applied_effort(self.pd)
        terms = dict(
            orientation=1.0 - self.rot_error / math.pi,
            position=float(np.linalg.norm(q[self.cube_q][:3] - self.home)),
            success=float(evaluation["success"]),
            drop=float(self.dropped),
            hand_pose=float(np.sum((q[self.hand_q] - NOMINAL) ** 2)),
            action_rate=float(np.sum((action - prev_action) ** 2)),
            energy=float(np.sum(np.abs(tau * v[self.hand_v]))),
        )
        return {k: c["reward_scales"][k] * val for k, val in terms.items()}

    def evaluate(self):
        """Success and its parts (kept apart from the reward): the goal reached on this step, the error before a
        reached goal was replaced, the counts of the episode, the drop."""
        return dict(success=self.reached, rotation_error=self.rot_error, successes=self.successes,
                    successes_wide=self.successes_wide, dropped=self.dropped)

    def _terminated(self):
        return self.dropped

    def _task_info(self):
        return dict(successes=self.successes, successes_wide=self.successes_wide, rotation_error=self.rot_error)

    # -- state ---------------------------------------------------------------------------------------------------
    _TASK_KEYS = ("q_target", "home", "params", "applied", "successes", "successes_wide", "goal", "wide_reached",
                  "reached", "dropped", "rot_error")

    def _task_state(self):
        return {k: getattr(self, k) for k in self._TASK_KEYS}

    def _set_task_state(self, state):
        for k in self._TASK_KEYS:
            setattr(self, k, state[k])
        self.pd.set_target(q_d=self.q_target)


def finger_joints(obs, finger):
    """The 4 joint positions [rad] of finger ``finger`` (0 index, 1 middle, 2 ring, 3 thumb) in an observation."""
    return np.asarray(obs[OBS["joint_positions"]][4 * finger:4 * finger + 4], dtype=float)


# -- scripted feasibility controller ----------------------------------------------------------------------------
def cube_yaw(R):
    """Yaw [rad] in [−π/4, π/4] of a cube of orientation ``R`` (3×3 rotation matrix) about world z, modulo its
    quarter-turn symmetry: the heading in the palm plane of the cube axis that follows (cyclically) its most vertical
    axis. Independent of which face the cube rests on."""
    up = int(np.argmax(np.abs(R[2])))
    axis = R[:, (up + 1) % 3]
    return math.remainder(math.atan2(axis[1], axis[0]), 0.5 * math.pi)


def cube_tilt(R):
    """Tilt [rad] of a cube of orientation ``R`` (3×3 rotation matrix): the angle of its most vertical axis from
    world z (0 when it lies flat on any face)."""
    return math.acos(min(1.0, float(np.max(np.abs(R[2])))))


def level_quaternion(q):
    """The orientation (x, y, z, w) of a cube of orientation ``q`` laid flat on the face it leans towards: ``q``
    turned by the smallest rotation that takes its most vertical axis onto world +z (the tilt of :func:`cube_tilt`
    removed, the yaw about the palm normal kept). A flat cube's ``q`` comes back unchanged, bit for bit."""
    q = np.asarray(q, dtype=float)
    R = quat_xyzw_to_matrix(q)
    up = int(np.argmax(np.abs(R[2])))
    axis = R[:, up] * math.copysign(1.0, R[2, up])
    if axis[0] == 0.0 and axis[1] == 0.0:
        return q.copy()
    out = quat_multiply(pin.Quaternion.FromTwoVectors(axis, np.array([0.0, 0.0, 1.0])).coeffs(), q)
    return out / np.linalg.norm(out)


def yaw_increment(q_prev, q_next):
    """Rotation [rad] about world z (the palm normal) from orientation ``q_prev`` to ``q_next`` (x, y, z, w): the
    twist angle of q_next ⊗ q_prev⁻¹ about z, in (−π, π]. Summed over control periods it gives the rotation
    about the palm normal (steps must stay below π)."""
    d = quat_multiply(q_next, quat_conjugate(q_prev))
    return 2.0 * math.atan2(d[2], d[3]) if d[3] >= 0 else 2.0 * math.atan2(-d[2], -d[3])


class ScriptedRotator:
    """A scripted feedback policy (no learning) that turns the cube about the palm normal, clockwise seen from
    above, by ``target`` [rad], then lifts the fingers off it: evidence that in-hand rotation is physically
    feasible in this simulator (issue 12; ``benchmarks/allegro_scripted.py`` gives its success rate).

    The palm carries the cube's weight; the index, middle and ring fingers push its vertical edges like a relay.
    Each control period the policy reads the cube's position and orientation from the observation
    (``OBS["cube_position"]`` + the palm centre; orientation (q_goal ⊗ q_cube⁻¹)⁻¹ ⊗ q_goal) and places the four vertical
    edges at angles φ = yaw + 45° + k·90° about the cube centre. Each finger has a *zone* of edge angles it can
    reach at the cube's mid-height (``ZONES`` unless ``zones`` is given; read off the fingertips' workspace:
    index −40°…−110°, pushing the −y edge towards −x; middle 25°…−25°, the front edge towards −y; ring 85°…30°,
    the +y edge towards +x; together they cover every yaw modulo 90°; an edge is pushed by one finger at most).
    A finger whose zone holds an edge that has just entered it (within ``window`` of the zone start; an edge deeper
    in the zone is awkward to reach and is left for the next one) goes through three phases: *clear* (fingertip
    sphere ``clearance`` outside the edge, at mid-height ``z_push``), *approach* (touching the edge from behind,
    along the tangent of the edge's circle about the centre), *push* (the point the edge would reach after a further
    ``lead`` of rotation, ``depth`` inside it, so the effort-limited PD presses the edge tangentially). When its
    edge leaves the zone a pushing finger first *retreats* ``retreat`` [m] radially away from the cube centre at its
    current height for ``retreat_steps`` periods (lifting straight away dragged the cube up by its top edge and
    tipped it), then lifts to a waiting point above its zone start (height ``z_wait``). Fingertip
    targets become joint targets by damped least squares on each finger's 4 joints (Pinocchio); the action is the
    normalized joint-target change, clipped to ±1 (±``action_scale`` per step). Thumb wall: the thumb stands for the
    whole episode with its fingertip as near as its joint limits allow to ``thumb_wall`` (world, m; default beside
    the palm's −y edge at the cube's mid-height: damped least squares reaches (−0.048, −0.057, 0.054)), a post on
    the thumb side that the pushes' −y drift runs into (None: the thumb stays at NOMINAL, lying open). Over seeds
    0–59 and 100–119 it turns the cube 68 times in 80 without a drop, against 57 with 4 drops for the open thumb
    (``docs/performance.md``, "The scripted Allegro rotator"). The
    rotation so far is the sum of the yaw increments between observations (:func:`yaw_increment`). Stall rescue:
    after ``stall_steps`` control periods in which the rotation moved less than 1°, every zone is widened by
    ``stall_widen`` at both ends and edges deep in a zone may be approached, until the cube turns again; every
    ``regrip`` periods of such a stall the pushing fingers let go and clear, approach and push their edge again
    (a finger that slid onto a face pushes it along its normal and only translates the cube). Heel guard: while
    the cube centre lies behind world x = ``heel`` [m] (palm centre −0.0475 m, heel edge −0.095 m), no finger
    pushes an edge whose clockwise tangent (sin φ, −cos φ) points towards the heel (sin φ < −``heel_sin``: the
    index finger, and the middle finger at φ < −6°); the ring finger's pushes carry the cube forward again.
    Reach gating (opt-in, ``reach_tol`` [m], default None = off): a finger takes an edge only if damped least
    squares puts its fingertip within ``reach_tol`` of the approach point and of the point touching the edge after
    a further ``lead`` of rotation, at the cube's *current* position (:meth:`_reaches`); every zone's end is
    extended by ``reach_widen`` [rad], so a pushing finger goes on while it reaches its edge and an edge out of
    one finger's reach is left to the next (a drifted cube's front edge: in the middle finger's zone, reached by
    the ring). Over 80 seeds (measured with the thumb open) it drops the cube less (1 vs 4) but turns it no more
    often (74 % vs 71 %) and more slowly (``docs/performance.md``, "The scripted Allegro rotator"):
    the stalls it meets are cubes behind the heel line whose every edge is out of all fingertips' reach or
    heel-guarded.

    Re-centring pinch (opt-in, ``recentre`` [m], default None = off): when the cube centre passes behind world
    x = ``recentre`` with its yaw within ``pinch_yaw`` of a face pair facing ±y, and damped least squares puts the
    index fingertip on the −y face and the ring (or, for a cube drifted to the thumb side, the middle) fingertip
    on the +y face within ``pinch_tol`` (:meth:`_pinch_fingers`; points on the faces' front halves,
    :meth:`_pinch_points`), the relay stops and the two fingers *back* off radially (``retreat``), *open*
    (``clearance`` outside the faces, ``pinch_open_steps``), *squeeze* (``squeeze`` inside them), *drag*
    (targets ``drag_lead`` ahead along the faces until the centre is at x = ``recentre_goal`` or ``drag_steps``
    periods), *release* radially and the relay resumes (at most once per ``recentre_cooldown`` periods).
    ``pinch_touch`` [N]: drag only if both fingertips press their faces with at least this force after the
    squeeze (``AllegroCubeEnv.tip_forces``), else release; ``pinch_on_stall``: pinch only while the relay is
    stalled (``stall_steps``), never interrupting a turning cube. It
    carries a drifted cube 10–15 mm forward when both fingertips land, but over seeds 0–59 and 100–119 (thumb
    open) it turns the cube no more often than the relay alone (56/80 with touch and stall gating, 41/80 without,
    against 57/80: ``docs/performance.md``, "The scripted Allegro rotator"): most failing cubes are
    2–3 cm on the thumb side or yawed > 25° when they cross the line, where no pair of fingertips reaches both
    faces, and a pinch that lands on one face first pushes the cube back.

    Known failure: a push at an edge turns the cube about a point near the opposite side (the palm carries it on
    its bottom face), so the centre drifts with the pushes (several cm over a quarter turn), mostly towards the
    heel and the thumb side (every reachable edge is on the front half, so every clockwise push has a −y or a −x
    part). The thumb wall stops the −y part (with the thumb open, cubes ended up to 6 cm on the thumb side, out of
    every fingertip's reach). No finger reaches behind the cube (fingertips reach x ≥ −0.053 m at mid-height), so
    the drift towards the heel cannot be pulled back: once the edges in the fingers' zones are out of their reach
    (or blocked by the heel guard), the rotation stalls short of the target (the failures of
    ``benchmarks/allegro_scripted.py`` with the wall: stalls short of 90°, the cube centre behind x ≈ −0.06 m,
    mostly on the +y side, y ≈ +0.03 … +0.045 m, seeds 9, 15, 22, 50).

    ``mirror``: turn counter-clockwise instead, the same relay run in the world mirrored across its xz-plane (the
    index and ring fingers swap roles; the thumb keeps its wall on the −y side, so the cube drifts to the +y side
    unchecked: 2 quarter turns in seeds 0–19, against 18). ``observed_targets``: start each period's joint targets
    from the ones the observation shows (joint positions + targets − positions) instead of the relay's own.
    ``tilt_guard`` [rad] (default None = off): while the cube is tilted by more than this (:func:`cube_tilt`: a
    push that lifts an edge, a cube riding up a finger), no finger pushes: pushing fingers retreat and the others
    wait, until it lies flat again (the cubes it drops are mostly first lifted on one edge by a push, then thrown
    off the heel as they fall back: :class:`GoalRotator` numbers). ``flatten_tilted``: while the guard holds, the
    index, middle and ring fingers stretch flat (all joint targets 0) and the thumb opens (NOMINAL), every finger
    free: a cube that slid forward and came to rest wedged between the thumb's wall and a raised proximal link
    stays tilted for good under the guard alone (the relay waiting, the action 0, for the rest of the episode).

    Use: ``policy = ScriptedRotator(env); obs, _ = env.reset(seed=s); policy.reset(); a = policy(obs)``.
    """

    R_TIP = ac.FINGERTIP_RADIUS  # [m]
    # finger index (0 index, 1 middle, 2 ring) -> (zone start, zone end) of the pushed edge's angle about the
    # cube centre [rad], measured from world +x; the edges move clockwise, from start to end
    ZONES = {0: (math.radians(-40.0), math.radians(-110.0)), 1: (math.radians(25.0), math.radians(-25.0)),
             2: (math.radians(85.0), math.radians(30.0))}

    def __init__(self, env, target=math.radians(100.0), lead=math.radians(15.0), depth=0.004, clearance=0.015,
                 window=math.radians(35.0), z_push=0.045, z_wait=0.10,
                 clear_steps=6, approach_steps=3, zones=None, stall_steps=10,
                 stall_widen=math.radians(15.0), retreat=0.02, retreat_steps=3, regrip=20, heel=-0.060,
                 heel_sin=0.1, reach_tol=None, reach_widen=math.radians(20.0), recentre=None,
                 recentre_goal=-0.040, recentre_y=None, squeeze=0.008, drag_lead=0.01, drag_steps=12,
                 recentre_cooldown=10, pinch_yaw=math.radians(25.0), pinch_tol=0.006, drag_lateral=False,
                 pinch_open_steps=6, pinch_touch=None, pinch_on_stall=False, thumb_wall=(-0.050, -0.065, 0.045),
                 mirror=False, observed_targets=False, tilt_guard=None, flatten_tilted=False):
        self.env = env.unwrapped
        self.mirror = False  # the thumb's wall is placed in the world as it is
        if not isinstance(self.env, AllegroCubeEnv):
            raise ValueError(f"ScriptedRotator drives CenicAllegro-v0, got {type(self.env).__name__}")
        if self.env.config["privileged_obs"]:
            raise ValueError("ScriptedRotator reads the flat policy observation: use privileged_obs=False")
        if not target > 0:
            raise ValueError(f"target must be a rotation > 0 [rad], got {target!r}")
        self.target, self.lead, self.depth, self.clearance = target, lead, depth, clearance
        self.window, self.stall_steps, self.stall_widen = window, stall_steps, stall_widen
        for name, v in (("retreat_steps", retreat_steps), ("regrip", regrip), ("drag_steps", drag_steps),
                        ("recentre_cooldown", recentre_cooldown), ("pinch_open_steps", pinch_open_steps)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name} must be a whole number of control periods >= 0, got {v!r}")
        self.retreat, self.retreat_steps, self.regrip = retreat, retreat_steps, regrip
        self.heel, self.heel_sin = heel, heel_sin
        if reach_tol is not None and not reach_tol > 0:
            raise ValueError(f"reach_tol must be a distance > 0 [m] or None, got {reach_tol!r}")
        self.reach_tol, self.reach_widen = reach_tol, reach_widen
        if recentre is not None and not -0.095 < recentre < 0.0:
            raise ValueError(f"recentre must be a cube-centre x on the palm, in (-0.095, 0) [m], or None, got "
                             f"{recentre!r}")
        self.recentre, self.recentre_goal, self.recentre_y = recentre, recentre_goal, recentre_y
        self.squeeze, self.drag_lead, self.drag_steps = squeeze, drag_lead, drag_steps
        self.recentre_cooldown, self.pinch_yaw = recentre_cooldown, pinch_yaw
        self.pinch_tol, self.drag_lateral, self.pinch_open_steps = pinch_tol, drag_lateral, pinch_open_steps
        self.pinch_touch, self.pinch_on_stall = pinch_touch, pinch_on_stall
        self.zones = dict(self.ZONES if zones is None else zones)
        self.z_push, self.z_wait = z_push, z_wait
        self.clear_steps, self.approach_steps = clear_steps, approach_steps
        m = self.env.system.model
        self._model, self._data = m, m.createData()
        self._tips = [m.getFrameId(f) for f in ac.TIP_FRAMES]
        self._thumb_q = NOMINAL[12:16].copy()  # the thumb's joint targets for the whole episode
        if thumb_wall is not None:
            wall = np.asarray(thumb_wall, dtype=float)
            if wall.shape != (3,) or not np.all(np.isfinite(wall)):
                raise ValueError(f"thumb_wall must be a fingertip point (x, y, z) [m] or None, got {thumb_wall!r}")
            self._thumb_q = self.finger_ik(3, wall, self._thumb_q)
        self.thumb_wall = thumb_wall
        self.mirror = bool(mirror)
        self.observed_targets = bool(observed_targets)
        if tilt_guard is not None and not 0.0 < tilt_guard < 0.5 * math.pi:
            raise ValueError(f"tilt_guard must be an angle in (0, pi/2) [rad] or None, got {tilt_guard!r}")
        self.tilt_guard = tilt_guard
        self.flatten_tilted = bool(flatten_tilted)
        self.reset()

    def reset(self):
        """Start of an episode: fingers free, joint targets at NOMINAL (the thumb at its wall), rotation count zero."""
        self._free_fingers()
        self.q_des = NOMINAL.copy()
        self.q_des[12:16] = self._thumb_q
        self._retreat = {f: None for f in self.ZONES}
        self.rotation = 0.0  # rotation about the palm normal since reset [rad], counter-clockwise positive
        self._q_prev = None
        self._still, self._anchor = 0, 0.0  # control periods without progress, and the rotation then
        self._pinch, self._pinch_count, self._since_pinch = None, 0, 10 ** 9  # re-centring phase, its periods
        self._pinch_out = None  # release targets (2, 3) [m] of the two pinching fingertips
        self._pinch_with = (0, 2)  # the pinching fingers: index and ring (or middle)
        self.recentres = 0  # re-centring pinches started this episode

    def _free_fingers(self):
        """Every relay finger free: no phase, no period count, no edge (``_phi``: the angle [rad] of the edge each
        finger was given last period)."""
        self.phase = {f: "free" for f in self.ZONES}
        self.count = {f: 0 for f in self.ZONES}
        self._phi = {f: None for f in self.ZONES}

    def cube_pose(self, obs):
        """Cube centre (3,) [m] (world) and orientation (x, y, z, w) from the flat observation and the env's goal."""
        e = self.env
        obs = np.asarray(obs, dtype=float)
        d = obs[OBS["rotation_to_goal"]]
        d = d / np.linalg.norm(d)
        centre, q_cube = obs[OBS["cube_position"]] + e.palm_centre, quat_multiply(quat_conjugate(d), e.goal)
        if self.mirror:
            return centre * MIRROR, q_cube * MIRROR_QUAT
        return centre, q_cube

    def _real(self, finger):
        """The hand's finger that plays ``finger`` (index and ring swap places in the mirrored world)."""
        return MIRROR_FINGER[finger] if self.mirror else finger

    def _edges_in_zone(self, yaw, finger, widen=0.0, extend=0.0):
        """The edge angles φ [rad] in ``finger``'s zone widened by ``widen`` [rad] at both ends and ``extend`` [rad]
        more at its end, in the order of the edges k = 0…3 (φ = yaw + 45° + k·90°)."""
        start, end = self.zones[finger][0] + widen, self.zones[finger][1] - widen - extend
        phis = [math.remainder(yaw + 0.25 * math.pi + 0.5 * k * math.pi - end, 2.0 * math.pi) + end for k in range(4)]
        return [phi for phi in phis if end <= phi <= start]

    def _reaches(self, finger, centre, phi, q_finger):
        """Whether ``finger``'s fingertip can follow the edge at angle ``phi`` [rad] of a cube centred at ``centre``:
        damped least squares from ``q_finger`` puts the fingertip sphere within ``reach_tol`` [m] of both the
        approach point (just behind the edge) and the point touching the edge after a further ``lead`` of
        rotation, at the cube's current position."""
        for target in (self._edge_target(centre, phi, self.R_TIP + 0.003),
                       self._edge_target(centre, phi - self.lead, self.R_TIP)):
            tip = self._tip_position(finger, self.finger_ik(finger, target, q_finger))
            if np.linalg.norm(tip - target) > self.reach_tol:
                return False
        return True

    def _edge_target(self, centre, phi, behind, outward=0.0):
        """Fingertip centre (3,) [m] at mid-height ``behind`` [m] back along the clockwise tangent from the edge at
        angle ``phi`` [rad] of a cube centred at ``centre``, plus ``outward`` [m] radially."""
        radial = np.array([math.cos(phi), math.sin(phi)])
        tangent = np.array([math.sin(phi), -math.cos(phi)])
        half_diag = 0.5 * math.sqrt(2.0) * self.env.params["cube_size"]
        p = centre[:2] + (half_diag + outward) * radial - behind * tangent
        return np.array([p[0], p[1], self.z_push])

    def _tip_position(self, finger, q_finger):
        """Fingertip sphere centre (3,) [m] (world) of ``finger`` at joint angles ``q_finger``, the others at
        NOMINAL."""
        e, m, d = self.env, self._model, self._data
        finger = self._real(finger)
        q = np.array(e.system.q0, dtype=float)
        q[e.hand_q] = NOMINAL
        q[e.hand_q[4 * finger:4 * finger + 4]] = q_finger
        pin.framesForwardKinematics(m, d, q)
        tip = d.oMf[self._tips[finger]].translation.copy()
        return tip * MIRROR if self.mirror else tip

    def finger_ik(self, finger, target, q_finger, iters=30, damping=1e-4):
        """Joint angles (4,) [rad] of ``finger`` (0 index … 3 thumb) putting its fingertip sphere centre at
        ``target`` (world, m), or as near as its joint limits allow: damped least squares from ``q_finger``, the
        other joints at NOMINAL."""
        e, m, d = self.env, self._model, self._data
        if self.mirror:
            finger, target = MIRROR_FINGER[finger], np.asarray(target) * MIRROR
        js = slice(4 * finger, 4 * finger + 4)
        q = np.array(e.system.q0, dtype=float)
        q[e.hand_q] = NOMINAL
        q[e.hand_q[js]] = q_finger
        lo, hi = e.q_lower[js], e.q_upper[js]
        for _ in range(iters):
            pin.computeJointJacobians(m, d, q)
            pin.updateFramePlacements(m, d)
            err = target - d.oMf[self._tips[finger]].translation
            J = pin.getFrameJacobian(m, d, self._tips[finger], pin.LOCAL_WORLD_ALIGNED)[:3, e.hand_v[js]]
            q[e.hand_q[js]] = np.clip(q[e.hand_q[js]] + J.T @ np.linalg.solve(J @ J.T + damping * np.eye(3), err),
                                      lo, hi)
        return q[e.hand_q[js]]

    def _retreat_point(self, finger, obs, centre):
        """Fingertip target (3,) [m]: ``retreat`` radially away from the cube centre ``centre`` (in the palm plane)
        from where ``finger``'s fingertip is now (joint angles in ``obs``), at its current height."""
        tip = self._tip_position(finger, finger_joints(obs, self._real(finger)))
        out = tip[:2] - centre[:2]
        out = out / max(float(np.linalg.norm(out)), 1e-9)
        return np.array([*(tip[:2] + self.retreat * out), tip[2]])

    def _pinch_points(self, centre, yaw, inset):
        """Fingertip centres (2, 3) [m] (index, ring) pinching the cube centred at ``centre`` with yaw ``yaw`` [rad]
        (|yaw| ≤ 45°) on its two side faces (normals ±n, n = (−sin yaw, cos yaw): the pair facing ±y), ``inset``
        [m] inside the faces (< 0: outside), at mid-height ``z_push``. Each contact lies on the face's front half,
        at least 8 mm ahead of the centre along the face and, where the face allows, ahead of the centre in x
        (a yawed cube's far face is set back: the fingertips reach x ≥ −0.05 m only)."""
        a = np.array([math.cos(yaw), math.sin(yaw)])
        n = np.array([-math.sin(yaw), math.cos(yaw)])
        half = 0.5 * self.env.params["cube_size"]
        h = half + self.R_TIP - inset
        out = []
        for side in (-1.0, 1.0):  # index on the −y face, ring on the +y face
            t = min(max(0.008, -side * half * n[0] / max(a[0], 1e-6)), half - 0.008)
            p = centre[:2] + side * h * n + t * a
            out.append(np.array([p[0], p[1], self.z_push]))
        return out, n

    def _pinch_fingers(self, centre, yaw, q_des):
        """The two fingers that can pinch the cube where it now lies, (0, f): the index on the −y face and the ring
        (f = 2) or, when only it reaches, the middle finger (f = 1; a cube drifted to the thumb side brings the +y
        face in front of the middle finger) on the +y face; or None. A finger reaches when damped least squares
        from ``q_des`` puts its fingertip within ``pinch_tol`` [m] of its squeezing pinch point
        (:meth:`_pinch_points`)."""
        lo, hi = self._pinch_points(centre, yaw, self.squeeze)[0]

        def miss(f, target):
            return float(np.linalg.norm(self._tip_position(f, self.finger_ik(f, target, q_des[4 * f:4 * f + 4]))
                                        - target))

        if self.pinch_tol is None:
            return 0, 2
        if miss(0, lo) > self.pinch_tol:
            return None
        for f in (2, 1):
            if miss(f, hi) <= self.pinch_tol:
                return 0, f
        return None

    def _recentre(self, centre, yaw, obs, q_des):
        """One control period of the re-centring pinch: fills ``q_des`` (16,) for the index, middle and ring
        fingers. Phases: *open* (index and ring fingertips ``clearance`` outside the side faces, the middle finger
        lifted to its waiting point), *squeeze* (``squeeze`` inside the faces: the effort-limited PD presses the
        cube between them), *drag* (both targets ``drag_lead`` [m] ahead of the pinch points towards
        ``recentre_goal``, following the cube: the pinch's friction carries it over the palm), *release*
        (radially out along ±n by ``retreat``), then the relay resumes with every finger free."""
        self._pinch_count += 1
        if self._pinch == "release":
            targets = self._pinch_out
            if self._pinch_count >= max(self.retreat_steps, 1):
                self._pinch, self._since_pinch = None, 0
                self._free_fingers()
        elif self._pinch == "back":  # let go of the relay's edges first: radially out at the current height
            targets = self._pinch_out
            if self._pinch_count >= max(self.retreat_steps, 1):
                self._pinch, self._pinch_count = "open", 0
        else:
            lost = self._pinch in ("squeeze", "drag") and abs(yaw) > self.pinch_yaw + math.radians(10.0)
            if lost or (self._pinch == "drag" and (centre[0] >= self.recentre_goal
                                                   or self._pinch_count > self.drag_steps)):
                self._pinch, self._pinch_count = "release", 1
                tips, n = [self._tip_position(f, finger_joints(obs, self._real(f))) for f in self._pinch_with], \
                    self._pinch_points(centre, yaw, 0.0)[1]
                self._pinch_out = [np.array([*(tip[:2] + side * self.retreat * n), tip[2]])
                                   for tip, side in zip(tips, (-1.0, 1.0))]
                targets = self._pinch_out
            elif self._pinch == "open":
                targets = self._pinch_points(centre, yaw, -self.clearance)[0]
                if self._pinch_count > self.pinch_open_steps:
                    self._pinch, self._pinch_count = "squeeze", 0
            else:
                targets = self._pinch_points(centre, yaw, self.squeeze)[0]
                if self._pinch == "drag":
                    if self.drag_lateral:  # towards (recentre_goal, 0)
                        d = np.array([self.recentre_goal - centre[0], -centre[1]])
                        shift = self.drag_lead * d / max(float(np.linalg.norm(d)), 1e-9)
                    else:
                        shift = self.drag_lead * np.array([math.cos(yaw), math.sin(yaw)])  # along the faces, forward
                    targets = [np.array([t[0] + shift[0], t[1] + shift[1], t[2]]) for t in targets]
                elif self._pinch_count > self.approach_steps:
                    self._pinch, self._pinch_count = "drag", 0
                    if self.pinch_touch is not None:  # both fingertips must press their faces, else let go
                        force = self.env.tip_forces()
                        touch = min(float(np.linalg.norm(force[self._real(f)])) for f in self._pinch_with)
                        if touch < self.pinch_touch:
                            self._pinch_count = self.drag_steps + 1
        for f, target in zip(self._pinch_with, targets):
            q_des[4 * f:4 * f + 4] = self.finger_ik(f, target, q_des[4 * f:4 * f + 4])
        idle = 3 - self._pinch_with[1]  # the finger of the middle and ring that does not pinch lifts out of the way
        wait = self._edge_target(centre, self.zones[idle][0] + math.radians(10.0), 0.0, self.R_TIP + self.clearance)
        wait[2] = self.z_wait
        q_des[4 * idle:4 * idle + 4] = self.finger_ik(idle, wait, q_des[4 * idle:4 * idle + 4])

    def __call__(self, obs):
        centre, q_cube = self.cube_pose(obs)
        if self._q_prev is not None:
            self.rotation += yaw_increment(self._q_prev, q_cube)
        self._q_prev = q_cube
        R = quat_xyzw_to_matrix(q_cube)
        yaw = cube_yaw(R)
        tilted = self.tilt_guard is not None and cube_tilt(R) > self.tilt_guard
        done = -self.rotation >= self.target or tilted  # a tilted cube: no finger pushes until it settles
        if abs(self.rotation - self._anchor) > math.radians(1.0):
            self._still, self._anchor = 0, self.rotation
        else:
            self._still += 1
        stalled = self.stall_steps is not None and self._still >= self.stall_steps
        if self.regrip and stalled and (self._still - self.stall_steps) % self.regrip == 0:
            for f in self.zones:  # a push that turns nothing: clear the edge and approach it again
                if self.phase[f] == "push":
                    self.phase[f], self.count[f] = "free", 0
        q_des = self._observed_targets(obs) if self.observed_targets else self.q_des.copy()
        self._since_pinch += 1
        if (self.recentre is not None and self._pinch is None and not done
                and self._since_pinch > self.recentre_cooldown and abs(yaw) <= self.pinch_yaw
                and (stalled or not self.pinch_on_stall)
                and (centre[0] < self.recentre or (self.recentre_y is not None and abs(centre[1]) > self.recentre_y))):
            fingers = self._pinch_fingers(centre, yaw, q_des)
            if fingers is not None:
                self._pinch_with = fingers
                self._pinch, self._pinch_count = "back", 0
                self._pinch_out = [self._retreat_point(f, obs, centre) for f in fingers]
                self.recentres += 1
        if self._pinch is not None:
            self._recentre(centre, yaw, obs, q_des)
            self._still = 0
            self.q_des = q_des
            return self._action(q_des)
        if tilted and self.flatten_tilted:  # nothing may prop the cube up: the fingers stretch flat, the thumb opens
            q_des[:12] = 0.0
            q_des[12:16] = NOMINAL[12:16]
            self._free_fingers()
            self.q_des = q_des
            return self._action(q_des)
        claimed = []  # edges (angles) already pushed by a finger this period
        for f in sorted(self.zones, key=lambda f: self.phase[f] == "free"):
            start = self.zones[f][0]
            phi = None
            if not done and self.phase[f] != "retreat":  # a retreating finger finishes backing off first
                cands = self._edges_in_zone(yaw, f, self.stall_widen if stalled else 0.0,
                                            0.0 if self.reach_tol is None else self.reach_widen)
                if self.reach_tol is None:
                    cands = cands[:1]  # fixed zones: the first edge found
                else:  # the edge that entered last first; a finger at work keeps its edge
                    cands.sort(reverse=True)
                    if self.phase[f] != "free" and self._phi[f] is not None:
                        cands = [p for p in cands if abs(math.remainder(p - self._phi[f], 2.0 * math.pi)) < 0.25 * math.pi]
                for p in cands:
                    if any(abs(math.remainder(p - c, 2.0 * math.pi)) < 0.25 * math.pi for c in claimed):
                        continue  # another finger has this edge
                    if self.phase[f] == "free" and p < start - self.window and not stalled:
                        continue  # deep in the zone: wait for the next edge
                    if self.heel is not None and centre[0] < self.heel and math.sin(p) < -self.heel_sin:
                        continue  # heel guard: this push (tangent (sin φ, −cos φ)) would carry the cube off the heel
                    if self.reach_tol is not None and not self._reaches(f, centre, p, q_des[4 * f:4 * f + 4]):
                        continue  # out of this fingertip's reach where the cube now lies: left to another finger
                    phi = p
                    break
            self._phi[f] = phi
            if phi is not None:
                claimed.append(phi)
            if phi is None and self.phase[f] in ("push", "retreat") and self.retreat_steps:
                if self.phase[f] == "push":
                    self.phase[f], self.count[f] = "retreat", 0
                    self._retreat[f] = self._retreat_point(f, obs, centre)
                self.count[f] += 1
                target = self._retreat[f]
                if self.count[f] >= self.retreat_steps:
                    self.phase[f], self.count[f] = "free", 0
            elif phi is None:
                self.phase[f], self.count[f] = "free", 0
                wait = start + math.radians(10.0)
                target = self._edge_target(centre, wait, 0.0, self.R_TIP + self.clearance)
                target[2] = self.z_wait
            elif self.phase[f] == "push":
                target = self._edge_target(centre, phi - self.lead, self.R_TIP - self.depth)
            elif self.phase[f] == "approach":
                target = self._edge_target(centre, phi, self.R_TIP + 0.003)
                self.count[f] += 1
                if self.count[f] > self.approach_steps:
                    self.phase[f] = "push"
            else:  # free -> clear: outside the edge at mid-height
                target = self._edge_target(centre, phi, self.R_TIP + 0.01, self.clearance)
                self.count[f] += 1
                if self.count[f] > self.clear_steps:
                    self.phase[f], self.count[f] = "approach", 0
            q_des[4 * f:4 * f + 4] = self.finger_ik(f, target, q_des[4 * f:4 * f + 4])
        self.q_des = q_des
        return self._action(q_des)

    def _observed_targets(self, obs):
        """The env's joint targets as the observation shows them (joint positions + targets − positions), in the
        fingers' roles, the thumb at its wall."""
        obs = np.asarray(obs, dtype=float)
        q = obs[OBS["joint_positions"]] + obs[OBS["target_minus_joints"]]
        q = q[MIRROR_JOINTS] if self.mirror else q
        q[12:16] = self._thumb_q
        return q

    def _action(self, q_des):
        """The normalized joint-target change (16,) towards ``q_des`` (in the fingers' roles), clipped to ±1."""
        e = self.env
        q_hand = q_des[MIRROR_JOINTS] if self.mirror else q_des
        return np.clip((q_hand - e.q_target) / e.config["action_scale"], -1.0, 1.0).astype(np.float32)


class GoalRotator(ScriptedRotator):
    """The scripted policy of the goal task ``goal="z"``: the finger relay of :class:`ScriptedRotator` turned towards
    each goal. Every control period it reads from the observation the angle about the palm normal still to turn,
    twist ∈ (−π, π] the angle about z of ``rotation_to_goal``: ρ = (−twist) mod 2π clockwise, 2π − ρ
    counter-clockwise. It turns counter-clockwise (the relay in the mirrored world, ``mirror``) while the goal lies
    less than ``ccw_within`` [rad] that way, clockwise otherwise (back to clockwise once it lies more than 0.3 rad
    beyond; at a switch the fingers let go and start over), and sets the relay's stop angle so that it stops pushing
    once the remaining angle is no more than the turn of the last control period (the cube coasts the rest; a relay
    that pushes on through the goal tilts the cube as it passes and misses the 0.1 rad test). A goal passed by less
    than ``passed`` [rad] counts as reached: the relay stops. When the goal is reached the env draws the next one
    and the relay turns on. Clockwise is the relay's strong direction (the thumb stands as a wall against the −y
    drift of its pushes; mirrored, the cube drifts to the +y side with nothing there: 2 quarter turns in 20 seeds
    against 18), so only goals up to ``ccw_within`` are turned to counter-clockwise. With ``observed_targets`` (the
    default here) each period starts from the joint targets the observation shows instead of the relay's own (the
    IK's warm start and the unmoved fingers' targets): the action is a function of the observation and of the
    fingers' phases alone, which a network copying it can follow. ``tilt_guard`` (default 10°): no finger pushes a
    cube tilted by more than that, and with ``flatten_tilted`` (default on) the fingers stretch flat and the thumb
    opens meanwhile (:class:`ScriptedRotator`). Its heel guard is looser than the relay's (``heel`` −0.075 m,
    ``heel_sin`` 0.3 against −0.06 m and 0.1): behind the relay's line the one finger it allowed to push seldom
    reached its edge, and cubes stalled there for most of an episode. Over 400-step episodes, at least one goal /
    goals per episode / drops: seeds 0–99 0.89 / 1.62 / 11 (the relay's heel guard: 0.83 / 1.50 / 8; before goals
    were laid flat and steps stretched to the end of a control period, :func:`level_quaternion` and
    ``cenic.attempt_step_size``: 0.80 / 1.35 / 8, and, all at that time, the tilt guard without flattening
    0.68 / 0.94 / 8, its waits ending only when the cube settles, and some never do: a cube wedged between the
    thumb and a raised finger link; without the tilt guard 0.71 / 1.14 / 21; own targets: 0.69 / 0.99; clockwise
    only, own targets: 0.57 / 0.77); the learning benchmark's held-out seeds 10000–10049: 0.76 / 1.50 (the relay's
    heel guard: 0.70 / 1.32; before: 0.66 / 1.14; the tilt guard without flattening 0.68 / 0.96 / 6, without it
    0.52 / 0.76 / 12). The drops the tilt guard prevents are cubes lifted on one edge by a push and thrown off the
    heel as they fall back.

    Without an argument it reads the env's noiseless observation: it is the DAgger teacher of the Allegro recipe
    (``cenic_gym.train.configs``), called after each step on the training env.
    """

    HYSTERESIS = 0.3  # [rad]

    def __init__(self, env, passed=0.1, ccw_within=math.radians(100.0), observed_targets=True,
                 tilt_guard=math.radians(10.0), flatten_tilted=True, heel=-0.075, heel_sin=0.3, **kwargs):
        super().__init__(env, target=2.0 * math.pi, observed_targets=observed_targets, tilt_guard=tilt_guard,
                         flatten_tilted=flatten_tilted, heel=heel, heel_sin=heel_sin, **kwargs)
        if self.env.config["goal"] != "z":
            raise ValueError(f"GoalRotator turns the cube about the palm normal: use goal='z', got "
                             f"{self.env.config['goal']!r}")
        if not 0.0 <= ccw_within <= math.pi:
            raise ValueError(f"ccw_within must be an angle in [0, pi] [rad], got {ccw_within!r}")
        self.passed, self.ccw_within = passed, ccw_within

    def reset(self):
        super().reset()
        self.mirror = False

    def _turn_other_way(self):
        """Switch the relay's world (mirrored or not): the joint targets and the rotation count carried over into
        the other world's finger roles and sense, every finger free."""
        self.q_des = self.q_des[MIRROR_JOINTS].copy()
        self.mirror = not self.mirror
        self._free_fingers()
        self.rotation = -self.rotation
        if self._q_prev is not None:
            self._q_prev = self._q_prev * MIRROR_QUAT
        self._still, self._anchor = 0, self.rotation

    def __call__(self, obs=None):
        if obs is None:
            obs = self.env._observe()
        d = np.asarray(obs[OBS["rotation_to_goal"]], dtype=float)
        twist = 2.0 * math.atan2(d[2], d[3])  # w >= 0: in (−π, π]; > 0: the goal lies counter-clockwise
        ccw = twist % (2.0 * math.pi)
        if not self.mirror and ccw < self.ccw_within:
            self._turn_other_way()
        elif self.mirror and self.ccw_within + self.HYSTERESIS < ccw < 2.0 * math.pi - self.passed:
            self._turn_other_way()
        rho = (twist if self.mirror else -twist) % (2.0 * math.pi)  # still to turn, the relay's way
        if rho > 2.0 * math.pi - self.passed:
            rho = 0.0
        self.target = -self.rotation + rho
        return super().__call__(obs)


def rotation_episode(env, policy, seed, steps=160):
    """One seeded episode of ``policy`` (e.g. :class:`ScriptedRotator`) on ``env`` for up to ``steps`` control
    periods, measured on the simulator's true cube state: dict(rotation [rad] about the palm normal at the end
    (counter-clockwise positive, summed :func:`yaw_increment` per step), max_rotation [rad] (largest |rotation|
    reached), steps_to_quarter (first step with |rotation| ≥ π/2, or None), dropped (the episode terminated),
    sim_failure (truncated by the simulator), tilt [rad] (angle of the cube's most vertical axis from world z at
    the end), steps)."""
    e = env.unwrapped
    obs, _ = env.reset(seed=seed)
    policy.reset()
    q_prev = e.sim.q[e.cube_q][3:7].copy()
    rotation, max_rotation, quarter, out = 0.0, 0.0, None, dict(dropped=False, sim_failure=False)
    k = 0
    for k in range(1, steps + 1):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        q = e.sim.q[e.cube_q][3:7].copy()
        rotation += yaw_increment(q_prev, q)
        q_prev = q
        max_rotation = max(max_rotation, abs(rotation))
        if quarter is None and max_rotation >= 0.5 * math.pi:
            quarter = k
        if terminated or truncated:
            out.update(dropped=bool(terminated), sim_failure="sim_failure" in info)
            break
    return dict(rotation=rotation, max_rotation=max_rotation, steps_to_quarter=quarter,
                tilt=cube_tilt(e.sim.body_pose("cube")[1]), steps=k, **out)
