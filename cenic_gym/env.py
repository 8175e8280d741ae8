"""CenicEnv: the Gymnasium base every cenic-gym task stands on (a thin layer over :class:`~cenic_gym.Simulator`).

One ``step`` is one control period: the normalized action (clipped to [−1, 1], optionally delayed) is mapped to
controller set-points by the task, then ``Simulator.advance_to(t + control_period)`` lets CENIC take as many
adaptive substeps as the accuracy needs, with the controllers integrated implicitly inside every convex step.

A task subclass defines::

    default_config()            every number of the task (and the common options below), overridable by kwargs
    _check_config(config)       validate the merged config once; set action_space and observation_space
    _build()                    -> (MultibodySystem, [external systems])   once per env
    _reset_task(options)        draw the episode (start state, goal, randomization) with self.np_random
    _after_reset()              the task's bookkeeping of the start state (reads self.view)
    _apply_action(action)       action (n,) in [−1, 1] -> controller set-points
    View                        the task's :class:`StateView`: the named quantities of one state
    _observe()                  -> observation (noise-free; a dict for goal-conditioned tasks)
    _after_advance()            the task's bookkeeping once per env step, after advance_to, before the
                                observation (goal reached and redrawn, contact and air-time counters)
    _task_info()                -> the task's own keys of a step's info (counters, events)
    evaluate()                  -> {"success": bool, ...} (success kept apart from reward, as ManiSkill does)
    _reward_terms(action, prev, evaluation) -> {name: scaled value}; the reward is their sum
    _terminated()               -> bool
    _task_state() / _set_task_state(state)   the task's own episode variables (goal, flags)

A step: set-points from the action, ``advance_to``, a new ``self.view`` of the reached state, ``_after_advance()``,
the observation, ``evaluation = evaluate()`` once, then the reward terms (given ``evaluation``), termination and info.
Everything after ``_after_advance`` only reads.

Common options (constructor kwargs, all validated; task options come from ``default_config()`` too):

=====================  =========  ==========================================================================
option                 default    meaning
=====================  =========  ==========================================================================
accuracy               1e-3       CENIC ε, position error per step [m, rad], in (0, 1]
max_step               None       largest CENIC step [s] (None: the control period)
fixed_step             None       None: error control; a step [s]: plain fixed-step ICF (for comparisons)
control_period         task       seconds per env step (``metadata["render_fps"]`` = 1 / control_period)
domain_randomization   False      True: the task's ranges; a dict: its task keys override some ranges (the
                                  others keep the task's), its physical parameters (:mod:`cenic_gym.parameters`
                                  names: ``"kd_scale": (0.9, 1.1)``) are drawn U(low, high) after the task's
                                  draws — a dict of physical parameters alone leaves the task's nominal; a name
                                  that is also a task key (the Go1's ``friction``) is the task's; False: nominal
physics                None       {physical parameter name: value} set after every reset, before any draw of
                                  ``domain_randomization`` (a fitted robot: :mod:`cenic_gym.sim2real.fit`)
obs_noise              0.0        multiplier of the task's per-element observation noise scales
action_delay           0          control periods between a policy's action and its application
render_mode            None       None (nothing is built), "rgb_array" (``render()`` returns an RGB image, offscreen,
                                  no GPU or display needed) or "human" (a live viewer, updated every step)
render_width           640        image width [px] (rgb_array; 1..4096)
render_height          480        image height [px]
camera                 task       dict: lookat [m, world], distance [m], azimuth [deg], elevation [deg], track
                                  (a joint/body the camera follows, "" for none); given keys override the task's
viewer                 "auto"     human mode: "mujoco" (window), "meshcat" (browser) or "auto" (window if a display)
=====================  =========  ==========================================================================

Rendering (:mod:`cenic_gym.render`) draws a MuJoCo visual twin of the system: the robots' visual meshes and our
collision shapes, posed from the simulator's state. Nothing of it is imported or built while ``render_mode`` is None.

Every ``info`` holds ``is_success``, ``sim`` (a plain dict of the step's integrator numbers: ``substeps``,
``rejected``, ``newton_iters``, ``min_dt`` [s], ``max_penetration`` [m]; a Gymnasium vector env gathers it into
arrays, ``infos["sim"]["substeps"]``) and ``wall`` (:class:`WallClock`: ``sim_s``, ``realtime_factor``); a step's
info adds ``reward/<term>`` for each reward term. Solver trouble (accuracy not reachable above the minimum step, a
failed solve) ends the episode with ``truncated=True``, ``info["sim_failure"]`` and the last valid observation; the
env then needs a ``reset``.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from . import parameters
from .errors import SimulationError
from .external import JointController, JointFriction
from .parameters import is_parameter_name, needs_friction
from .simulator import SimState, Simulator

COMMON_DEFAULTS = dict(accuracy=1e-3, max_step=None, fixed_step=None, control_period=0.05,
                       domain_randomization=False, physics=None, obs_noise=0.0, action_delay=0, render_mode=None,
                       render_width=640, render_height=480, viewer="auto")
RENDER_MODES = ("human", "rgb_array")


def merge_config(defaults, overrides, env_name):
    """``defaults`` updated with ``overrides``; an unknown key or a value of the wrong kind raises ValueError naming
    it. Numbers stay numbers (finite), sequences keep their length, dicts merge one level deep (ranges)."""
    config = copy.deepcopy(defaults)
    for key, value in overrides.items():
        if key not in defaults:
            raise ValueError(f"unknown option {key!r} for {env_name}; options: {sorted(defaults)}")
        default = defaults[key]
        if isinstance(default, bool) and key != "domain_randomization":
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"option {key}={value!r} must be a bool")
            value = bool(value)
        elif isinstance(default, (int, float)) and not isinstance(default, bool):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(value):
                raise ValueError(f"option {key}={value!r} must be a finite number")
            if isinstance(default, int) and not float(value).is_integer():
                raise ValueError(f"option {key}={value!r} must be an integer")
            value = type(default)(value)
        elif isinstance(default, (tuple, list)):
            if not isinstance(value, (tuple, list, np.ndarray)) or len(value) != len(default):
                raise ValueError(f"option {key}={value!r} must be a sequence of {len(default)} values")
            value = tuple(value)
        elif isinstance(default, dict) and isinstance(value, dict):
            unknown = set(value) - set(default)
            if unknown:
                raise ValueError(f"option {key} has unknown keys {sorted(unknown)}; known: {sorted(default)}")
            value = {**default, **value}
        elif isinstance(default, str) and not isinstance(value, str):
            raise ValueError(f"option {key}={value!r} must be a str")
        config[key] = value
    return config


class StateView:
    """What a task reads of one simulator state: built by the env once per state (after ``reset``, after each
    ``advance_to``, after ``set_state``) and never changed, so the observation, the reward, the success test, the
    termination and scripted teachers share every quantity, each computed once; nothing has to detect whether the
    state changed. ``q``, ``v`` (copies) and ``t`` of the state; a task subclasses it (its ``View``) with its named
    quantities, computed in ``__init__`` or, where not every step needs them, as ``functools.cached_property`` (on
    first use). Readers must not modify what it holds."""

    def __init__(self, env):
        sim = env.sim
        self.env = env
        self.q, self.v, self.t = sim.q, sim.v, sim.t


@dataclass(frozen=True)
class Segment:
    """One named part of a flat observation: ``size`` numbers, Gaussian noise of standard deviation ``noise`` at
    ``obs_noise=1`` on each, ``text`` its description (unit included)."""

    name: str
    size: int
    noise: float = 0.0
    text: str = ""


class ObsLayout:
    """A flat observation declared once, as named :class:`Segment` s in order: its space, its noise scales, the
    index slices that scripted policies read it by (``layout["cube_position"]``) and its docstring table are all
    derived from the declaration, and :meth:`pack` assembles an observation in the declared order."""

    def __init__(self, *segments):
        self.segments = segments
        self.slices, start = {}, 0
        for seg in segments:
            if seg.name in self.slices:
                raise ValueError(f"observation segment {seg.name!r} declared twice")
            self.slices[seg.name] = slice(start, start + seg.size)
            start += seg.size
        self.size = start
        self.noise_scale = np.concatenate([np.full(s.size, float(s.noise)) for s in segments])

    def __getitem__(self, name):
        return self.slices[name]

    def space(self):
        return gym.spaces.Box(-np.inf, np.inf, (self.size,), np.float32)

    def pack(self, *values):
        """The observation (float64) from one value per segment, in the declared order."""
        obs = np.concatenate(values)
        if obs.shape != (self.size,):
            raise ValueError(f"observation of {obs.shape[0]} numbers, the layout declares {self.size}: "
                             + ", ".join(f"{s.name} {s.size}" for s in self.segments))
        return obs

    def table(self, indent="    "):
        """The docstring's observation table (Markdown), one row per segment."""
        rows = ["| index | observation | noise std at obs_noise=1 |", "|---|---|---|"]
        for seg in self.segments:
            sl = self.slices[seg.name]
            index = str(sl.start) if seg.size == 1 else f"{sl.start}–{sl.stop - 1}"
            rows.append(f"| {index} | {seg.text} | {seg.noise:g} |")
        return "\n".join(indent + r for r in rows)


@dataclass(frozen=True)
class EnvState:
    """Everything that continues an episode exactly: the simulator's :class:`~cenic_gym.simulator.SimState`, the
    env's random generator state, step counter, previous action, pending delayed actions and the task's state."""

    sim: SimState
    rng: dict
    steps: int
    prev_action: np.ndarray
    pending: tuple
    task: dict


class CenicEnv(gym.Env):
    """Base class of the cenic-gym tasks (see the module docstring for the contract)."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 20}
    OBS: ObsLayout | None = None  # the task's flat observation, declared once (see ObsLayout)
    View: type = StateView  # what the task reads of one state (see StateView)

    def __init_subclass__(cls, **kwargs):
        """A task's docstring shows its declared observation: the line ``OBSERVATION_TABLE`` becomes ``OBS.table()``."""
        super().__init_subclass__(**kwargs)
        if cls.OBS is not None and cls.__doc__ and "OBSERVATION_TABLE" in cls.__doc__:
            cls.__doc__ = cls.__doc__.replace("OBSERVATION_TABLE", cls.OBS.table())
    CAMERA: dict = {}  # the task's default camera (keys of cenic_gym.render.Camera)

    def __init__(self, **kwargs):
        name = type(self).__name__
        camera = {"lookat": (0.0, 0.0, 0.0), "distance": 2.0, "azimuth": 90.0, "elevation": -25.0, "track": "",
                  **self.CAMERA}
        self.config = merge_config({**COMMON_DEFAULTS, "camera": camera, **self.default_config()}, kwargs, name)
        c = self.config
        self._check_config(c)
        if c["render_mode"] is not None and c["render_mode"] not in RENDER_MODES:
            raise ValueError(f"render_mode={c['render_mode']!r} is not one of {[None, *RENDER_MODES]}")
        self.render_mode = c["render_mode"]
        self._check_render_options()
        self._viewer = None  # the offscreen twin or live viewer, built on the first render()
        self.control_period = _positive("control_period", c["control_period"])
        if not (isinstance(c["action_delay"], int) and c["action_delay"] >= 0):
            raise ValueError(f"action_delay must be an integer >= 0, got {c['action_delay']!r}")
        if c["obs_noise"] < 0:
            raise ValueError(f"obs_noise must be >= 0, got {c['obs_noise']!r}")
        _check_randomization(c["domain_randomization"], c.get("randomization", {}))
        physics = _check_physics(c["physics"])
        dr = c["domain_randomization"]
        drawn = {}
        if isinstance(dr, dict):  # physical parameters are drawn here; the task sees its own keys only (or False)
            own = c.get("randomization", {})  # a task's own key (the Go1's "friction", "kp_scale") is the task's
            drawn = {k: tuple(float(x) for x in r) for k, r in sorted(dr.items()) if k not in own}
            c["domain_randomization"] = {k: r for k, r in dr.items() if k in own} or False
        self.metadata = {**self.metadata, "render_fps": 1.0 / self.control_period}
        system, external = self._build()
        if needs_friction([*physics, *drawn]):  # joint friction acts through its own external system
            dofs = [iv for s in external if isinstance(s, JointController) for iv in s.dofs]
            external = [*external, JointFriction(system, dofs, 0.0)]
        self.sim = Simulator(system, accuracy=c["accuracy"],
                             max_step=self.control_period if c["max_step"] is None else c["max_step"],
                             fixed_step=c["fixed_step"], external=external)
        self._initial = self.sim.get_state()  # every reset starts from here: nothing is rebuilt
        self._physics = [(parameters.resolve(self.sim, k), v) for k, v in physics.items()]
        for p, v in self._physics:
            p.check(v)
        self._drawn = [(parameters.resolve(self.sim, k), r) for k, r in drawn.items()]
        for p, (lo, hi) in self._drawn:
            p.check(lo), p.check(hi)
        n = self.action_space.shape[0]
        self._prev_action = np.zeros(n)
        self._pending = []
        self._steps = 0
        self._last_obs = None
        self.view = None  # the current state's View, from the first reset on

    # -- to be defined by tasks ----------------------------------------------------------------------------------
    @staticmethod
    def default_config():
        return {}

    def _check_config(self, config):
        """Validate the task's options of the merged ``config`` (a ValueError naming the value) and set
        ``action_space`` / ``observation_space``; called once, before anything is built."""
        raise NotImplementedError

    def _build(self):
        raise NotImplementedError

    def _reset_task(self, options):
        raise NotImplementedError

    def _apply_action(self, action):
        raise NotImplementedError

    def _observe(self):
        raise NotImplementedError

    def _obs_noise_scale(self):
        """Per-element standard deviations of the observation noise at ``obs_noise=1``: the declared layout's
        (``OBS``), else none."""
        return 0.0 if self.OBS is None else self.OBS.noise_scale

    def _after_reset(self):
        """The task's bookkeeping of the start state, once after ``_reset_task`` with ``self.view`` built (filters
        started from the start state; default: nothing)."""

    def _after_advance(self):
        """The task's per-step bookkeeping, once after each ``advance_to`` and before the observation: the one
        place a step changes the episode's own variables (a goal reached and redrawn, contact counters), so that
        observing, rewarding and evaluating are free of side effects (default: nothing)."""

    def evaluate(self):
        """-> {"success": bool, ...} of the current state (reads ``self.view``; no side effects)."""
        raise NotImplementedError

    def _reward_terms(self, action, prev_action, evaluation):
        """-> {term: scaled value} of the step that applied ``action`` after ``prev_action`` and reached the current
        state, whose :meth:`evaluate` is ``evaluation``."""
        raise NotImplementedError

    def _terminated(self):
        return False

    def _task_info(self):
        """The task's own keys of a completed step's info (default none)."""
        return {}

    def _task_state(self):
        return {}

    def _set_task_state(self, state):
        pass

    RESET_OPTIONS: tuple = ()

    # -- Gymnasium API -------------------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        if options is not None:
            if not isinstance(options, dict):
                raise ValueError(f"options must be a dict or None, got {options!r}")
            unknown = set(options) - set(self.RESET_OPTIONS)
            if unknown:
                raise ValueError(f"unknown reset options {sorted(unknown)}; known: {sorted(self.RESET_OPTIONS)}")
        super().reset(seed=seed)
        self.sim.restore(self._initial)
        self._reset_task(options or {})
        for p, value in self._physics:
            p.set(self.sim, value)
        for p, (lo, hi) in self._drawn:  # after the task's draws: its episodes stay those of the same seed
            p.set(self.sim, float(self.np_random.uniform(lo, hi)))
        self.view = self.View(self)
        self._after_reset()
        self._prev_action = np.zeros(self.action_space.shape[0])
        self._pending = [self._prev_action.copy() for _ in range(self.config["action_delay"])]
        self._steps = 0
        obs = self._noisy(self._observe())
        self._last_obs = obs
        if self.render_mode == "human":
            self.render()
        return obs, {"is_success": False, **_integrator_info(None)}

    def step(self, action):
        action = self._check_action(action)
        if self._last_obs is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        self._pending.append(action)
        applied = self._pending.pop(0)
        prev = self._prev_action
        try:
            self._apply_action(applied)
            stats = self.sim.advance_to(self.sim.t + self.control_period, inputs_changed=True)
            self.view = self.View(self)
            self._after_advance()
            obs = self._observe()
            _check_finite(obs)
        except (SimulationError, FloatingPointError) as e:
            info = {"is_success": False, "sim_failure": f"{type(e).__name__}: {e}", **_integrator_info(None)}
            return copy.deepcopy(self._last_obs), 0.0, False, True, info
        self._steps += 1
        self._prev_action = action
        evaluation = self.evaluate()
        terms = self._reward_terms(action, prev, evaluation)
        reward = float(sum(terms.values()))
        obs = self._noisy(obs)
        self._last_obs = obs
        info = {"is_success": bool(evaluation["success"]), **_integrator_info(stats),
                **{f"reward/{k}": float(v) for k, v in terms.items()}, **self._task_info()}
        if self.render_mode == "human":
            self.render()
        return obs, reward, bool(self._terminated()), False, info

    def _check_action(self, action):
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"action must be an array of shape {self.action_space.shape}, got {action!r}") from None
        if a.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got shape {a.shape}: {action!r}")
        if not np.isfinite(a).all():
            raise ValueError(f"action must be finite, got {a!r}")
        return a.clip(-1.0, 1.0)

    def _noisy(self, obs):
        """Float32 observation with Gaussian noise of std ``obs_noise`` × the task's scales (drawn from np_random)."""
        level = self.config["obs_noise"]
        if isinstance(obs, dict):
            return {k: self._noisy(v) if k == "observation" else np.asarray(v, dtype=np.float32)
                    for k, v in obs.items()}
        obs = np.asarray(obs, dtype=np.float64)
        if level > 0:
            obs = obs + level * np.asarray(self._obs_noise_scale()) * self.np_random.normal(size=obs.shape)
        return obs.astype(np.float32)

    # -- rendering -----------------------------------------------------------------------------------------------
    def _check_render_options(self):
        """Validate render_width/height, camera and viewer without importing a renderer (ValueError naming them)."""
        from .render import VIEWERS, Camera, check_size

        c = self.config
        check_size(c["render_width"], c["render_height"])
        Camera.from_config(c["camera"])
        if c["viewer"] not in VIEWERS:
            raise ValueError(f"viewer={c['viewer']!r} is not one of {VIEWERS}")

    def render(self):
        """render_mode "rgb_array": the current scene as a (render_height, render_width, 3) uint8 RGB array;
        "human": update the live viewer (returns None); None: a warning, returns None (Gymnasium's convention)."""
        if self.render_mode is None:
            gym.logger.warn(f"{type(self).__name__}.render() called with render_mode=None; pass render_mode="
                            "'rgb_array' or 'human' to gymnasium.make")
            return None
        from . import render as rd

        c = self.config
        if self._viewer is None:
            if self.render_mode == "rgb_array":
                self._viewer = rd.VisualTwin(self.sim.system, c["render_width"], c["render_height"],
                                             rd.Camera.from_config(c["camera"]))
            else:
                self._viewer = rd.make_viewer(self.sim.system, c["viewer"], rd.Camera.from_config(c["camera"]))
        shapes = [self.sim.geometry_shape(i) for i in range(len(self.sim.system.geometries))]
        placements = self.sim.geometry_placements()
        if self.render_mode == "rgb_array":
            return self._viewer.render(self.sim.q, shapes, self._render_markers(), placements)
        self._viewer.show(self.sim.q, shapes, placements)
        return None

    def _render_markers(self):
        """The task's markers for rgb_array frames (:class:`cenic_gym.render.Marker`: goal regions and the like;
        drawn, not simulated); none by default."""
        return ()

    def close(self):
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
        super().close()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_viewer"] = None  # GL contexts and viewer connections stay in their process; rebuilt on demand
        return state

    # -- state ---------------------------------------------------------------------------------------------------
    def get_state(self) -> EnvState:
        """Everything needed to continue this episode exactly (see :class:`EnvState`)."""
        return EnvState(self.sim.get_state(), copy.deepcopy(self.np_random.bit_generator.state), self._steps,
                        self._prev_action.copy(), tuple(a.copy() for a in self._pending),
                        copy.deepcopy(self._task_state()))

    def set_state(self, state: EnvState):
        """Continue from :meth:`get_state` (of this env or another of the same id and options)."""
        if not isinstance(state, EnvState):
            raise TypeError(f"set_state needs an EnvState (from get_state()), got {state!r}")
        self.sim.restore(state.sim)
        self.np_random.bit_generator.state = copy.deepcopy(state.rng)
        self._steps = state.steps
        self._prev_action = state.prev_action.copy()
        self._pending = [a.copy() for a in state.pending]
        self._set_task_state(copy.deepcopy(state.task))
        self.view = self.View(self)
        obs = self._observe()  # the observation to repeat after a failure (noise-free: no draw from the RNG)
        self._last_obs = {k: np.asarray(v, np.float32) for k, v in obs.items()} if isinstance(obs, dict) \
            else np.asarray(obs, np.float32)


class GoalEnvAPI(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Puts a goal-conditioned env's GoalEnv API (``compute_reward`` / ``compute_terminated`` /
    ``compute_truncated``, Gymnasium-Robotics) on the wrapper ``gym.make`` returns: Gymnasium 1.x wrappers forward no
    attributes, and callers such as SB3's ``check_env`` call ``env.compute_reward`` on the env they are given.
    Registered as an additional wrapper of the goal-conditioned ids (``CenicFrankaGoal-v0``); changes nothing else."""

    def __init__(self, env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        if not callable(getattr(env.unwrapped, "compute_reward", None)):
            raise TypeError(f"GoalEnvAPI wraps goal-conditioned envs (with compute_reward), got {env.unwrapped!r}")

    def compute_reward(self, achieved_goal, desired_goal, info):
        return self.env.get_wrapper_attr("compute_reward")(achieved_goal, desired_goal, info)

    def compute_terminated(self, achieved_goal, desired_goal, info):
        return self.env.get_wrapper_attr("compute_terminated")(achieved_goal, desired_goal, info)

    def compute_truncated(self, achieved_goal, desired_goal, info):
        return self.env.get_wrapper_attr("compute_truncated")(achieved_goal, desired_goal, info)


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _check_randomization(dr, ranges):
    """``domain_randomization``: a bool, or a dict overriding some of the task's ``randomization`` ranges
    (name -> (low, high) with low <= high)."""
    if isinstance(dr, (bool, np.bool_)):
        return
    if not isinstance(dr, dict):
        raise ValueError(f"domain_randomization must be a bool or a dict of ranges, got {dr!r}")
    for key, value in dr.items():
        if key not in ranges and not is_parameter_name(key):
            raise ValueError(f"domain_randomization has an unknown key {key!r}; known: {sorted(ranges)} and the "
                             f"physical parameters of cenic_gym.parameters ({', '.join(parameters.KINDS)})")
        lo_hi = np.asarray(value, dtype=float) if isinstance(value, (tuple, list, np.ndarray)) else None
        if lo_hi is None or lo_hi.shape != (2,) or not np.all(np.isfinite(lo_hi)) or lo_hi[0] > lo_hi[1]:
            raise ValueError(f"domain_randomization[{key!r}] must be a (low, high) range, got {value!r}")


def _check_physics(physics):
    """``physics``: None or a dict {physical parameter name: number} (resolved against the built simulator later)."""
    if physics is None:
        return {}
    if not isinstance(physics, dict):
        raise ValueError(f"physics must be None or a dict {{parameter name: value}}, got {physics!r}")
    for key, value in physics.items():
        if not is_parameter_name(key):
            parameters.resolve(None, key)  # raises, naming the kinds
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"physics[{key!r}] must be a number, got {value!r}")
    return dict(physics)


def episode_success(last_info, goals=None) -> bool:
    """Whether an episode succeeded. A task that counts the goals it reaches (``info["successes"]``: CenicAllegro-v0
    draws a new goal on each) succeeds with at least one goal (``goals``: the last count its steps reported);
    any other with ``info["is_success"]`` of its last step (the task done at the end). Every evaluation
    (``cenic-gym eval``, training's periodic evaluations, :mod:`cenic_gym.sim2real`) counts success this way."""
    if goals is not None:
        return goals >= 1
    return bool(last_info.get("is_success", False))


def _check_finite(obs):
    parts = obs.values() if isinstance(obs, dict) else (obs,)
    for p in parts:
        if not np.isfinite(p).all():
            raise FloatingPointError(f"non-finite observation {p!r}")


class WallClock(Mapping):
    """``info["wall"]``: wall-clock figures of one env step's simulation, read like a dict: ``sim_s`` [s] (the wall
    time of the ``advance_to`` inside the step) and ``realtime_factor`` (simulated / wall time; nan before the
    first step). They differ from run to run, so two are equal whatever they hold: Gymnasium's determinism check
    compares the infos of identical runs, and the simulation's own numbers are in ``info["sim"]``."""

    def __init__(self, sim_s, realtime_factor):
        self._values = dict(sim_s=sim_s, realtime_factor=realtime_factor)

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __eq__(self, other):
        return isinstance(other, WallClock)

    __hash__ = None

    def __repr__(self):
        return f"WallClock({self._values!r})"


def _integrator_info(stats):
    """``{"sim": ..., "wall": ...}`` of one env step (zeros before the first). ``info["sim"]`` is a plain dict, so a
    Gymnasium vector env gathers it into arrays: ``substeps`` (accepted CENIC steps), ``rejected``,
    ``newton_iters``, ``min_dt`` [s] (the smallest accepted step; +inf when none was taken) and ``max_penetration``
    [m] (the deepest contact over the step's accepted states, 0 without contact)."""
    if stats is None:
        return dict(sim=dict(substeps=0, rejected=0, newton_iters=0, min_dt=math.inf, max_penetration=0.0),
                    wall=WallClock(0.0, math.nan))
    sim = dict(substeps=stats.accepted, rejected=stats.rejected, newton_iters=stats.newton_iters,
               min_dt=stats.min_dt if stats.accepted else math.inf,
               max_penetration=max(0.0, -stats.min_signed_distance))
    return dict(sim=sim, wall=WallClock(stats.wall_time, stats.realtime_factor))