"""Sim-to-sim: a policy run on the same seeded episodes in cenic-gym and with MuJoCo as the physics (issue 16).

MuJoCo stands in for a second simulator of the same task: its scene is generated from the env's own
MultibodySystem by :mod:`cenic_gym.mujoco_model` (joints, bodies, inertias, armature, limits, collision shapes,
the candidate pair set, our pair friction, couplers), with the simulator's *current* parameters (an episode's
domain randomization: shapes, masses, friction, gains). During a MuJoCo episode :class:`MujocoPhysics` replaces
the env's :class:`~cenic_gym.simulator.Simulator` for ``advance_to`` only: every control period it steps MuJoCo and
writes MuJoCo's state, contacts and applied efforts back into the CENIC simulator (``Simulator.restore``), so the
env's own code — action mapping, observations, rewards, ``evaluate()`` (success), termination, observation noise,
action delay — reads MuJoCo's world. Nothing of the env is copied.

Control laws are the env's own external systems: a :class:`~cenic_gym.external.JointPD` (gains > 0, no
feed-forward) becomes MuJoCo ``<position>`` actuators (K_p, K_v = K_d, ± effort limit; ctrl = q_d + K_d/K_p v_d;
with the ``implicitfast`` integrator the damping is implicit, as in CENIC); any other external system without
internal state (e.g. the Franka's :class:`~cenic_gym.external.InverseDynamicsPD`) is evaluated with its own
``output(t, z, q, v)`` on MuJoCo's state before every MuJoCo step, clamped to its effort limits and applied as
``qfrc_applied`` (explicit). Systems with internal state (JointPID) are not mapped
(:class:`~cenic_gym.mujoco_model.MappingError`).

Covered envs: CenicFranka-v0 (arm inverse-dynamics PD + finger PD, the finger coupler, convex-mesh fingers) and
CenicQuadruped-v0 (Go1: free base, 12 joint PDs, primitive shapes; flat, slope or tiles terrain). CenicAllegro-v0
(joint PDs, convex meshes) and CenicSuction-v0 (its suction law is a generalized force of q, so it is applied
explicitly like the inverse-dynamics PD) build too but are not measured or tested. Drake as a second peer is not
done.

Reported per env and policy (:func:`sim2sim` -> :class:`Sim2SimResult`): success rates in both simulators and
their gap; the final pose and velocity gap of every free body (the Franka's box, the Go1's base); the
closed-loop state divergence per env step (‖pin.difference(q_cenic, q_mujoco)‖∞, which compounds); and the
one-step divergence (from each CENIC state, one control period of MuJoCo under the same set-points against
CENIC's next state: the per-step model gap without compounding).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..cenic import AdvanceStats
from ..errors import SimulationError
from ..external import JointPD, JointPID
from ..mujoco_model import MappingError, MujocoModel, build_spec, import_mujoco, scene_joints
from .rollout import EpisodeResult, make_env, run_episode, state_divergence

DEFAULT_TIMESTEP = 1e-3  # [s] MuJoCo's step (MuJoCo's default is 2 ms; 1 ms for the stiff finger PD)
DEFAULT_INTEGRATOR = "implicitfast"
COVERED = ("CenicFranka-v0", "CenicQuadruped-v0")


class MujocoPhysics:
    """MuJoCo in place of ``sim`` (a :class:`~cenic_gym.simulator.Simulator`): :meth:`advance_to` runs MuJoCo and
    writes its state, contacts and efforts back into ``sim``; every other attribute is ``sim``'s own.

    Built from ``sim``'s current state and parameters (call it after ``env.reset``); timestep [s]: MuJoCo's step;
    integrator: MuJoCo's ("implicitfast", "euler", "implicit", "rk4")."""

    def __init__(self, sim, timestep=DEFAULT_TIMESTEP, integrator=DEFAULT_INTEGRATOR):
        mujoco = import_mujoco()
        self.sim, self.mujoco = sim, mujoco
        self.timestep = float(timestep)
        system = sim.system
        n = len(system.geometries)
        shapes = [sim.geometry_shape(i) for i in range(n)]
        mu = [sim.geometry_material(i)["mu_dynamic"] for i in range(n)]
        names = {int(system.model.idx_vs[j]): system.model.names[j] for j in range(1, system.model.njoints)
                 if system.model.nvs[j] == 1}
        actuators, self.plan = [], []  # plan: per external system ("act", actuator ids) or ("explicit", None)
        for s in sim.external:
            if isinstance(s, JointPID) or getattr(s, "nz", 0) or not hasattr(s, "output"):
                raise MappingError(f"external system {type(s).__name__} has no MuJoCo counterpart (internal state "
                                   "or not a joint-space law)")
            if isinstance(s, JointPD) and np.all(s.kp > 0) and not callable(s.tau_ff) and not np.any(s.tau_ff):
                ids = list(range(len(actuators), len(actuators) + len(s.dofs)))
                actuators += [(names[int(i)], kp, kd, e) for i, kp, kd, e in zip(s.dofs, s.kp, s.kd, s.effort_limit)]
                self.plan.append(("act", np.array(ids)))
            else:
                self.plan.append(("explicit", None))
        self.model = MujocoModel(build_spec(system, self.timestep, shapes, mu, integrator=integrator,
                                            actuators=actuators), system)
        self.data = mujoco.MjData(self.model.model)
        self.unstable = False
        self.start()

    def __getattr__(self, name):  # everything but advance_to is the CENIC simulator's (it holds the state)
        if name == "sim":
            raise AttributeError(name)
        return getattr(self.sim, name)

    def _controls(self, t, q, v, explicit_only=False):
        """Set MuJoCo's ctrl (actuated systems, unless ``explicit_only``) and qfrc_applied (the others) at time t
        [s] and our state (q, v); returns the explicit efforts per system (None for actuated ones)."""
        d, vmap = self.data, self.model.v_from
        d.qfrc_applied[:] = 0.0
        out = []
        for s, (kind, ids) in zip(self.sim.external, self.plan):
            if kind == "act":
                if not explicit_only:
                    q_d, v_d, _ = s.setpoints(t)
                    d.ctrl[ids] = q_d + s.kd / s.kp * v_d
                out.append(None)
            else:
                tau = np.clip(s.output(t, np.zeros(0), q, v), -s.effort_limit, s.effort_limit)
                d.qfrc_applied[vmap[s.dofs]] += tau
                out.append(tau)
        return out

    def _run(self, t0, t1):
        """Step MuJoCo's data from time t0 to t1 [s] (a whole number of steps) with the controllers' set-points;
        returns (steps, Newton iterations, most negative contact distance [m], efforts per external system)."""
        mujoco, m, d = self.mujoco, self.model.model, self.data
        n = max(1, int(round((t1 - t0) / self.timestep)))
        timed = any(callable(x) for s in self.sim.external for x in getattr(s, "targets", {}).values())
        explicit = any(kind == "explicit" for kind, _ in self.plan)
        efforts = self._controls(t0, *self.model.state(d))
        iters, min_dist = 0, np.inf
        for k in range(n):
            if k and (explicit or timed):
                efforts = self._controls(t0 + k * self.timestep, *self.model.state(d), explicit_only=not timed)
            mujoco.mj_step(m, d)
            iters += int(d.solver_niter[0])
            if d.ncon:
                min_dist = min(min_dist, float(np.min(d.contact.dist[:d.ncon])))
        if self.model.unstable(d):
            self.unstable = True
            raise SimulationError(f"MuJoCo diverged between t = {t0:.4f} and {t1:.4f} s (mjWARN_BADQACC or a "
                                  f"non-finite state) at timestep {self.timestep:g} s")
        efforts = [np.array(d.actuator_force[ids]) if kind == "act" else e
                   for (kind, ids), e in zip(self.plan, efforts)]
        return n, iters, min_dist, efforts

    def start(self):
        """Copy the CENIC simulator's current state into MuJoCo (done at construction; again after a reset)."""
        self.model.set_state(self.data, self.sim.q, self.sim.v)

    def advance_to(self, t, on_step=None, inputs_changed=False):
        """Advance MuJoCo to time t [s] and put its state, contacts and efforts into the CENIC simulator; returns
        :class:`~cenic_gym.cenic.AdvanceStats` (MuJoCo steps as accepted steps, solver iterations as Newton
        iterations). A diverged MuJoCo raises SimulationError (the env truncates the episode). ``inputs_changed``
        (the CENIC step-size hint of :meth:`~cenic_gym.simulator.Simulator.advance_to`) means nothing to MuJoCo's
        fixed steps."""
        if on_step is not None:
            raise ValueError("MujocoPhysics.advance_to: on_step callbacks are not supported (MuJoCo has no CENIC "
                             "steps to report)")
        sim = self.sim
        t0, w0 = sim.t, time.perf_counter()
        n, iters, min_dist, efforts = self._run(t0, t)
        q, v = self.model.state(self.data)
        state = sim.get_state()
        sim.restore(replace(state, q=q, v=v, t=float(t), contacts=self.model.contact_results(self.data),
                            efforts=tuple(efforts)))
        h = self.timestep
        return AdvanceStats(n, 0, n, iters, h, h, h, min_dist, float(t) - t0, time.perf_counter() - w0)

    def one_period(self, q, v, t0, t1):
        """MuJoCo's configuration after [t0, t1] from our state (q, v) under the controllers' current set-points;
        the CENIC simulator is not touched (the one-step divergence)."""
        self.model.set_state(self.data, q, v)
        self._run(t0, t1)
        return self.model.state(self.data)[0]


class _Trace:
    """A :func:`~cenic_gym.sim2real.rollout.run_episode` hook (the perturbation interface: ``apply`` after the
    reset, ``before_step`` before every step): records q before every step; with ``physics`` options it puts
    :class:`MujocoPhysics` in place of the env's simulator (``restore`` puts the simulator back); with
    ``one_step`` it measures MuJoCo's one-period prediction from each of CENIC's states."""

    def __init__(self, physics=None, one_step=None):
        self.physics, self.one_step = physics, one_step
        self.q, self.v, self.one_step_div = [], [], []
        self.real, self.twin, self._prev = None, None, None

    def apply(self, env):
        u = env.unwrapped
        self.real = u.sim
        if self.physics is not None:
            self.twin = MujocoPhysics(u.sim, **self.physics)
            u.sim = self.twin
        elif self.one_step is not None:
            self.twin = MujocoPhysics(u.sim, **self.one_step)

    def before_step(self, env, step):
        self.record(env)

    def record(self, env):
        sim = env.unwrapped.sim
        q, v = sim.q.copy(), sim.v.copy()
        if self.one_step is not None and self._prev is not None:
            q0, v0, t0 = self._prev
            q_mj = self.twin.one_period(q0, v0, t0, sim.t)
            self.one_step_div.append(state_divergence(sim.system.model, q, q_mj))
        self._prev = (q, v, sim.t)
        self.q.append(q)
        self.v.append(v)

    def restore(self, env):
        if self.real is not None:
            env.unwrapped.sim = self.real

    def describe(self):
        return {"physics": "mujoco", **self.physics} if self.physics is not None else {"physics": "cenic"}


@dataclass
class Sim2SimEpisode:
    """One seed in both simulators. cenic, mujoco: the :class:`EpisodeResult` of each; divergence (T,): closed-loop
    ‖pin.difference(q_cenic, q_mujoco)‖∞ [m, rad] at every env step both reached (0 at the reset); one_step (T−1,):
    MuJoCo's one-period prediction from CENIC's state k against CENIC's state k + 1 [m, rad]; bodies: per free
    body, (final position gap [m], final linear velocity gap [m/s]) between the two runs."""

    seed: int
    cenic: EpisodeResult
    mujoco: EpisodeResult
    divergence: np.ndarray
    one_step: np.ndarray
    bodies: dict = field(default_factory=dict)

    def row(self):
        """JSON-able summary (for logs)."""
        return dict(seed=self.seed, success_cenic=self.cenic.success, success_mujoco=self.mujoco.success,
                    return_cenic=self.cenic.ret, return_mujoco=self.mujoco.ret, steps_cenic=self.cenic.steps,
                    steps_mujoco=self.mujoco.steps, mujoco_failure=self.mujoco.sim_failure,
                    max_divergence=float(self.divergence.max()),
                    max_one_step=float(self.one_step.max()) if self.one_step.size else 0.0,
                    bodies={b: [float(p), float(v)] for b, (p, v) in self.bodies.items()})


@dataclass
class Sim2SimResult:
    """All episodes of one policy on one env; ``options``: MuJoCo's timestep and integrator."""

    env_id: str
    policy: str
    options: dict
    episodes: list

    def summary(self):
        """Success rates, their gap (cenic − MuJoCo), MuJoCo failures, medians / maxima of the gaps."""
        e = self.episodes
        n = len(e)
        sc = sum(x.cenic.success for x in e) / n
        sm = sum(x.mujoco.success for x in e) / n
        one = np.concatenate([x.one_step for x in e]) if any(x.one_step.size for x in e) else np.zeros(1)
        out = dict(episodes=n, success_cenic=sc, success_mujoco=sm, success_gap=sc - sm,
                   mujoco_failures=sum(x.mujoco.sim_failure is not None for x in e),
                   divergence_median=float(np.median([x.divergence.max() for x in e])),
                   divergence_max=float(max(x.divergence.max() for x in e)),
                   one_step_median=float(np.median(one)), one_step_max=float(one.max()), bodies={})
        for b in e[0].bodies:
            p = [x.bodies[b][0] for x in e]
            v = [x.bodies[b][1] for x in e]
            out["bodies"][b] = dict(position_median=float(np.median(p)), position_max=float(np.max(p)),
                                    velocity_median=float(np.median(v)), velocity_max=float(np.max(v)))
        return out


def free_bodies(system):
    """Names and (q, v) slices of the free bodies of a system (the Franka's box, the Go1's base)."""
    return [(ji.name, slice(ji.iq, ji.iq + 7), slice(ji.iv, ji.iv + 6)) for ji in scene_joints(system)
            if ji.kind == "free"]


def compare_episode(env, policy, seed, max_steps=None, timestep=DEFAULT_TIMESTEP, integrator=DEFAULT_INTEGRATOR):
    """Run ``policy`` from ``env.reset(seed=seed)`` in cenic-gym, then in MuJoCo (:class:`MujocoPhysics`), and
    compare (:class:`Sim2SimEpisode`). ``env``: a gym.make'd cenic-gym env (its options apply to both runs)."""
    opts = dict(timestep=timestep, integrator=integrator)
    runs = []
    for hook in (_Trace(one_step=opts), _Trace(physics=opts)):
        try:
            r = run_episode(env, policy, seed, perturbation=hook, max_steps=max_steps)
            hook.record(env)  # the final state (and the last one-step prediction)
        finally:
            hook.restore(env)
        runs.append((r, hook))
    (rc, hc), (rm, hm) = runs
    model = env.unwrapped.sim.system.model
    n = min(len(hc.q), len(hm.q))
    div = np.array([state_divergence(model, hc.q[k], hm.q[k]) for k in range(n)])
    bodies = {name: (float(np.linalg.norm(hc.q[-1][qs][:3] - hm.q[-1][qs][:3])),
                     float(np.linalg.norm(hc.v[-1][vs][:3] - hm.v[-1][vs][:3])))
              for name, qs, vs in free_bodies(env.unwrapped.sim.system)}
    return Sim2SimEpisode(int(seed), rc, rm, div, np.array(hc.one_step_div), bodies)


def sim2sim(env_id, policy, seeds, max_steps=None, timestep=DEFAULT_TIMESTEP, integrator=DEFAULT_INTEGRATOR,
            env_kwargs=None, progress=None):
    """:func:`compare_episode` for every seed on ``gym.make(env_id, **env_kwargs)``; ``progress(seed, episode)``
    after each. Returns :class:`Sim2SimResult`."""
    env = make_env(env_id, **(env_kwargs or {}))
    episodes = []
    for seed in seeds:
        ep = compare_episode(env, policy, seed, max_steps, timestep, integrator)
        episodes.append(ep)
        if progress is not None:
            progress(seed, ep)
    env.close()
    return Sim2SimResult(env_id, policy.name, dict(timestep=timestep, integrator=integrator), episodes)


def sim2sim_table(results):
    """Markdown: one row per (env, policy) result."""
    lines = ["| env | policy | episodes | success cenic-gym | success MuJoCo | gap | MuJoCo failures | final free-body "
             "gap: position median / max [mm], velocity median / max [m/s] | closed-loop divergence median / max "
             "[m, rad] | one-step divergence median / max [m, rad] |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r.summary()
        bodies = "; ".join(f"{b}: {1e3 * g['position_median']:.1f} / {1e3 * g['position_max']:.1f} mm, "
                           f"{g['velocity_median']:.3f} / {g['velocity_max']:.3f} m/s" for b, g in s["bodies"].items())
        lines.append(f"| {r.env_id} | {r.policy} | {s['episodes']} | {100 * s['success_cenic']:.0f} % | "
                     f"{100 * s['success_mujoco']:.0f} % | {100 * s['success_gap']:+.0f} pts | {s['mujoco_failures']} "
                     f"| {bodies or '-'} | {s['divergence_median']:.2e} / {s['divergence_max']:.2e} | "
                     f"{s['one_step_median']:.2e} / {s['one_step_max']:.2e} |")
    return "\n".join(lines)


def scene_xml(env_id, env_kwargs=None, seed=0, timestep=DEFAULT_TIMESTEP, integrator=DEFAULT_INTEGRATOR):
    """The generated MuJoCo scene (MJCF text) of ``env_id`` after ``reset(seed=seed)``, with the env's controllers
    as actuators where they map to them (explicit laws are not in the file: they are applied from Python)."""
    env = make_env(env_id, **(env_kwargs or {}))
    env.reset(seed=seed)
    physics = MujocoPhysics(env.unwrapped.sim, timestep, integrator)
    env.close()
    return physics.model.spec.to_xml()
