"""Sim-to-sim: a policy run on the same seeded episodes in cenic-gym and with a second simulator — MuJoCo or
Drake (``peer="mujoco"`` / ``"drake"``) — as the physics (issue 16).

The peer's scene is generated from the env's own MultibodySystem (:mod:`cenic_gym.mujoco_model`,
:mod:`cenic_gym.drake_model`; the joint description both read: :mod:`cenic_gym.peer_map`): joints, bodies,
inertias, armature, limits, collision shapes, the candidate pair set, friction, couplers (Drake also our contact
stiffness and Hunt & Crossley dissipation), with the simulator's *current* parameters (an episode's domain
randomization: shapes, masses, friction, gains). During a peer episode :class:`MujocoPhysics` or
:class:`DrakePhysics` replaces the env's :class:`~cenic_gym.simulator.Simulator` for ``advance_to`` only: every
control period it steps the peer and writes the peer's state, contacts and applied efforts back into the CENIC
simulator (``Simulator.restore``), so the env's own code — action mapping, observations, rewards, ``evaluate()``
(success), termination, observation noise, action delay — reads the peer's world. Nothing of the env is copied.

Control laws are the env's own external systems (:func:`control_plan`): a :class:`~cenic_gym.external.JointPD`
(gains > 0, no feed-forward) becomes the peer's own PD actuators — MuJoCo ``<position>`` actuators (K_p, K_v = K_d,
± effort limit; ctrl = q_d + K_d/K_p v_d; with ``implicitfast`` the damping is implicit, as in CENIC), Drake's
PD-controlled joint actuators (set-points (q_d, v_d), ± effort limit, implicit in SAP and CENIC); any other
external system without internal state (e.g. the Franka's :class:`~cenic_gym.external.InverseDynamicsPD`) is
evaluated with its own ``output(t, z, q, v)`` on the peer's state before every peer step (MuJoCo) or every
``timestep`` (Drake), clamped to its effort limits and applied as a generalized force (explicit). Systems with
internal state (JointPID) are not mapped (:class:`~cenic_gym.peer_map.MappingError`).

Drake's integrator: by default its discrete SAP solver with the lagged contact approximation at 1 ms (see
``DRAKE_INTEGRATORS``: convex, so neither the stiff contacts nor the stiff finger PD limit the step, and the
lagged model is ours, with the same k and d); ``integrator="cenic"`` runs Drake's own error-controlled CENIC at
``accuracy`` — at tight accuracy on both sides the gap is the modeling difference between the two implementations.

Covered envs: CenicFranka-v0 (arm inverse-dynamics PD + finger PD, the finger coupler, convex-mesh fingers) and
CenicQuadruped-v0 (Go1: free base, 12 joint PDs, primitive shapes; flat, slope or tiles terrain). CenicAllegro-v0
(joint PDs, convex meshes) and CenicSuction-v0 (its suction law is a generalized force of q, so it is applied
explicitly like the inverse-dynamics PD) build too but are not measured or tested.

Reported per env, policy and peer (:func:`sim2sim` -> :class:`Sim2SimResult`): success rates in both simulators
and their gap; the final pose and velocity gap of every free body (the Franka's box, the Go1's base); the
closed-loop state divergence per env step (‖pin.difference(q_cenic, q_peer)‖∞, which compounds); and the
one-step divergence (from each CENIC state, one control period of the peer under the same set-points against
CENIC's next state: the per-step model gap without compounding). :func:`free_motion_gaps` checks the mapping
without contact (the gap shrinks as ε tightens).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..cenic import AdvanceStats
from ..errors import SimulationError
from ..external import JointPD, JointPID
from ..drake_model import DrakeModel, PdActuator
from ..mujoco_model import MujocoModel, build_spec, import_mujoco
from ..peer_map import MappingError, scene_joints
from .rollout import EpisodeResult, make_env, run_episode, state_divergence

DEFAULT_TIMESTEP = 1e-3  # [s] MuJoCo's step (MuJoCo's default is 2 ms; 1 ms for the stiff finger PD)
DEFAULT_INTEGRATOR = "implicitfast"
COVERED = ("CenicFranka-v0", "CenicQuadruped-v0")
# Drake: its discrete SAP solver at 1 ms by default — SAP is convex (no step-size limit from the 1e5–1e6 N/m contacts
# or the stiff finger PD, which it treats implicitly, as ours), and its "lagged" approximation is our contact model
# (Hunt & Crossley with our k and d, no substitute parameters); 1 ms as for MuJoCo. "cenic": Drake's own
# error-controlled CENIC integrator at DRAKE_ACCURACY (then the gap at tight accuracy is modeling difference alone).
DRAKE_INTEGRATORS = ("lagged", "similar", "cenic")
DRAKE_ACCURACY = 1e-3


def control_plan(sim, peer):
    """How a peer applies each of ``sim``'s external systems: "pd" (a :class:`~cenic_gym.external.JointPD` with
    gains > 0 and no feed-forward: the peer's own implicit PD actuators) or "explicit" (any other stateless law,
    evaluated with its ``output`` on the peer's state before every peer step and applied as a generalized force);
    :class:`MappingError` for a system with internal state (JointPID) or without ``output``."""
    plan = []
    for s in sim.external:
        if isinstance(s, JointPID) or getattr(s, "nz", 0) or not hasattr(s, "output"):
            raise MappingError(f"external system {type(s).__name__} has no {peer} counterpart (internal state "
                               "or not a joint-space law)")
        pd = isinstance(s, JointPD) and np.all(s.kp > 0) and not callable(s.tau_ff) and not np.any(s.tau_ff)
        plan.append("pd" if pd else "explicit")
    return plan


class _PeerPhysics:
    """What :class:`MujocoPhysics` and :class:`DrakePhysics` share: the peer stands in for ``sim`` (a
    :class:`~cenic_gym.simulator.Simulator`) in :meth:`advance_to` only, which runs the peer and writes its state,
    contacts and efforts back into ``sim``; every other attribute is ``sim``'s own. A subclass sets ``timestep``,
    ``plan`` (:func:`control_plan`) and implements ``_set(q, v)``, ``_get() -> (q, v)``, ``_contacts()`` and
    ``_run(t0, t1) -> (steps, solver iterations, most negative contact distance [m], efforts per system)``."""

    name = "peer"

    def __getattr__(self, name):  # everything but advance_to is the CENIC simulator's (it holds the state)
        if name == "sim":
            raise AttributeError(name)
        return getattr(self.sim, name)

    def _explicit(self, t, q, v):
        """The explicit systems' efforts at time t [s] and our state (q, v), clamped to their effort limits (None
        for the peer's PD actuators)."""
        return [np.clip(s.output(t, np.zeros(0), q, v), -s.effort_limit, s.effort_limit) if kind == "explicit"
                else None for s, kind in zip(self.sim.external, self.plan)]

    def _timed(self):
        """Some set-point is a function of time (then the peer's set-points are refreshed every step)."""
        return any(callable(x) for s in self.sim.external for x in getattr(s, "targets", {}).values())

    def start(self):
        """Copy the CENIC simulator's current state into the peer (done at construction; again after a reset)."""
        self._set(self.sim.q, self.sim.v)

    def advance_to(self, t, on_step=None, inputs_changed=False):
        """Advance the peer to time t [s] and put its state, contacts and efforts into the CENIC simulator; returns
        :class:`~cenic_gym.cenic.AdvanceStats` (peer steps as accepted steps, its solver iterations as Newton
        iterations where it reports them). A diverged peer raises SimulationError (the env truncates the
        episode). ``inputs_changed`` (the CENIC step-size hint of
        :meth:`~cenic_gym.simulator.Simulator.advance_to`) means nothing to the peers."""
        if on_step is not None:
            raise ValueError(f"{type(self).__name__}.advance_to: on_step callbacks are not supported (the peer has "
                             "no CENIC steps to report)")
        sim = self.sim
        t0, w0 = sim.t, time.perf_counter()
        n, iters, min_dist, efforts = self._run(t0, t)
        q, v = self._get()
        sim.restore(replace(sim.get_state(), q=q, v=v, t=float(t), contacts=self._contacts(),
                            efforts=tuple(efforts)))
        h = (float(t) - t0) / max(n, 1)
        return AdvanceStats(n, 0, n, iters, h, h, h, min_dist, float(t) - t0, time.perf_counter() - w0)

    def one_period(self, q, v, t0, t1):
        """The peer's configuration after [t0, t1] from our state (q, v) under the controllers' current
        set-points; the CENIC simulator is not touched (the one-step divergence)."""
        self._set(q, v)
        self._run(t0, t1)
        return self._get()[0]


class MujocoPhysics(_PeerPhysics):
    """MuJoCo in place of ``sim`` (see :class:`_PeerPhysics`). Built from ``sim``'s current state and parameters
    (call it after ``env.reset``); timestep [s]: MuJoCo's step; integrator: MuJoCo's ("implicitfast", "euler",
    "implicit", "rk4"); contact: None (MuJoCo's default solref / solimp) or a callable
    ``(geom_a, geom_b) -> (solref, solimp)`` per pair (:func:`~cenic_gym.mujoco_model.build_spec`)."""

    name = "MuJoCo"

    def __init__(self, sim, timestep=DEFAULT_TIMESTEP, integrator=DEFAULT_INTEGRATOR, contact=None):
        mujoco = import_mujoco()
        self.sim, self.mujoco = sim, mujoco
        self.timestep = float(timestep)
        system = sim.system
        n = len(system.geometries)
        shapes = [sim.geometry_shape(i) for i in range(n)]
        mu = [sim.geometry_material(i)["mu_dynamic"] for i in range(n)]
        names = {int(system.model.idx_vs[j]): system.model.names[j] for j in range(1, system.model.njoints)
                 if system.model.nvs[j] == 1}
        actuators, self.plan, self.ids = [], control_plan(sim, "MuJoCo"), []
        for s, kind in zip(sim.external, self.plan):
            ids = None
            if kind == "pd":
                ids = np.arange(len(actuators), len(actuators) + len(s.dofs))
                actuators += [(names[int(i)], kp, kd, e) for i, kp, kd, e in zip(s.dofs, s.kp, s.kd, s.effort_limit)]
            self.ids.append(ids)
        self.model = MujocoModel(build_spec(system, self.timestep, shapes, mu, integrator=integrator,
                                            actuators=actuators, placements=sim.geometry_placements(),
                                            contact=contact), system)
        self.data = mujoco.MjData(self.model.model)
        self.unstable = False
        self.start()

    def _set(self, q, v):
        self.model.set_state(self.data, q, v)

    def _get(self):
        return self.model.state(self.data)

    def _contacts(self):
        return self.model.contact_results(self.data)

    def _controls(self, t, q, v, explicit_only=False):
        """Set MuJoCo's ctrl (PD systems, unless ``explicit_only``) and qfrc_applied (the others) at time t [s]
        and our state (q, v); returns the explicit efforts per system (None for PD ones)."""
        d, vmap = self.data, self.model.v_from
        d.qfrc_applied[:] = 0.0
        out = self._explicit(t, q, v)
        for s, ids, tau in zip(self.sim.external, self.ids, out):
            if ids is not None:
                if not explicit_only:
                    q_d, v_d, _ = s.setpoints(t)
                    d.ctrl[ids] = q_d + s.kd / s.kp * v_d
            else:
                d.qfrc_applied[vmap[s.dofs]] += tau
        return out

    def _run(self, t0, t1):
        mujoco, m, d = self.mujoco, self.model.model, self.data
        n = max(1, int(round((t1 - t0) / self.timestep)))
        timed = self._timed()
        explicit = "explicit" in self.plan
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
        efforts = [np.array(d.actuator_force[ids]) if ids is not None else e for ids, e in zip(self.ids, efforts)]
        return n, iters, min_dist, efforts


class DrakePhysics(_PeerPhysics):
    """Drake in place of ``sim`` (see :class:`_PeerPhysics`; the scene: :class:`~cenic_gym.drake_model.DrakeModel`
    from ``sim``'s current shapes, materials, inertias and gains). Call it after ``env.reset``.

    integrator: "lagged" (default) or "similar": a discrete plant with ``timestep`` [s] steps solved by SAP with
    that contact approximation; "cenic": a continuous plant and Drake's error-controlled CENIC integrator at
    ``accuracy``, its steps ending at every ``timestep`` where an explicit law must be re-evaluated (else at the
    control period). JointPD systems become Drake's implicit PD actuators (set-points (q_d, v_d) on the desired
    state input, refreshed every step when they depend on time); other laws are evaluated on Drake's state every
    ``timestep`` and held (the applied generalized force input)."""

    name = "Drake"  # (its integrator is ``scheme``: ``integrator`` is the CENIC simulator's own)

    def __init__(self, sim, timestep=DEFAULT_TIMESTEP, integrator="lagged", accuracy=DRAKE_ACCURACY):
        if integrator not in DRAKE_INTEGRATORS:
            raise ValueError(f"integrator={integrator!r} is not one of {DRAKE_INTEGRATORS}")
        if not (isinstance(timestep, (int, float)) and math.isfinite(timestep) and timestep > 0):
            raise ValueError(f"timestep must be a finite number > 0 [s], got {timestep!r}")
        self.sim, self.timestep, self.scheme, self.accuracy = sim, float(timestep), integrator, float(accuracy)
        system = sim.system
        m = system.model
        n = len(system.geometries)
        joint_of = {int(m.idx_vs[j]): j for j in range(1, m.njoints) if m.nvs[j] == 1}
        self.plan = control_plan(sim, "Drake")
        actuators, first = [], []
        for s, kind in zip(sim.external, self.plan):
            first.append(len(actuators))
            if kind == "pd":
                actuators += [PdActuator(joint_of[int(i)], float(kp), float(kd), float(e))
                              for i, kp, kd, e in zip(s.dofs, s.kp, s.kd, s.effort_limit)]
        cenic = integrator == "cenic"
        self.model = DrakeModel(system, 0.0 if cenic else self.timestep,
                                [sim.geometry_shape(i) for i in range(n)],
                                [sim.geometry_material(i) for i in range(n)], actuators,
                                approximation="lagged" if cenic else integrator,
                                placements=sim.geometry_placements())
        self.acts = [None if kind != "pd" else np.array(self.model.pd_actuators[k:k + len(s.dofs)])
                     for s, kind, k in zip(sim.external, self.plan, first)]
        self.drake = self.model.simulator("cenic" if cenic else "discrete", accuracy=self.accuracy,
                                          max_step=max(self.timestep, 0.1))
        self.context = self.drake.get_mutable_context()
        plant, pc = self.model.plant, self.model.plant_context(self.context)
        self._u = plant.get_actuation_input_port().FixValue(pc, np.zeros(plant.num_actuators()))
        self._xd = (plant.get_desired_state_input_port(self.model.instance).FixValue(
            pc, np.zeros(2 * plant.num_actuators())) if actuators else None)
        self._tau = plant.get_applied_generalized_force_input_port().FixValue(pc, np.zeros(plant.num_velocities()))
        self._k = 0  # Drake's clock in steps of timestep (exact multiples: the discrete plant's update times)
        self.unstable = False
        self.start()

    def start(self):
        super().start()
        self._k = 0
        self.context.SetTime(0.0)
        self.drake.Initialize()

    def _set(self, q, v):
        self.model.set_state(self.context, q, v)

    def _get(self):
        return self.model.state(self.context)

    def _contacts(self):
        return self.model.contact_results(self.context)

    def _controls(self, t):
        """Set the desired state of the PD actuators and the explicit laws' generalized force at time t [s] from
        Drake's state; returns the explicit efforts per system (None for PD ones)."""
        q, v = self._get()
        out = self._explicit(t, q, v)
        na = self.model.plant.num_actuators()
        tau = np.zeros(self.sim.system.nv)
        xd = np.zeros(2 * na)
        for s, acts, e in zip(self.sim.external, self.acts, out):
            if acts is None:
                tau[s.dofs] += e
            else:
                q_d, v_d, _ = s.setpoints(t)
                xd[acts], xd[na + acts] = q_d, v_d
        self._tau.GetMutableData().set_value(self.model.force_to_drake(q, tau))
        if self._xd is not None:
            self._xd.GetMutableData().set_value(xd)
        return out

    def _run(self, t0, t1):
        h = self.timestep
        n = max(1, int(round((t1 - t0) / h)))
        every = "explicit" in self.plan or self._timed()
        chunks = [1] * n if every else [n]
        steps0 = self.drake.get_integrator().get_num_steps_taken() if self.scheme == "cenic" else 0
        efforts, k = None, 0
        try:
            for c in chunks:
                efforts = self._controls(t0 + k * h)
                k += c
                self._k += c
                self.drake.AdvanceTo(self._k * h)
        except RuntimeError as e:
            self.unstable = True
            raise SimulationError(f"Drake failed between t = {t0:.4f} and {t1:.4f} s ({self.scheme}, "
                                  f"timestep {h:g} s): {e}") from None
        q, v = self._get()
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            self.unstable = True
            raise SimulationError(f"Drake diverged between t = {t0:.4f} and {t1:.4f} s (a non-finite state; "
                                  f"{self.scheme}, timestep {h:g} s)")
        plant = self.model.plant
        u = plant.get_net_actuation_output_port().Eval(self.model.plant_context(self.context))
        efforts = [np.array(u[acts]) if acts is not None else e for acts, e in zip(self.acts, efforts)]
        steps = n if self.scheme != "cenic" else self.drake.get_integrator().get_num_steps_taken() - steps0
        contacts = self._contacts()
        min_dist = float(contacts.phi.min()) if contacts.n else np.inf
        return steps, 0, min_dist, efforts


PEERS = {"mujoco": MujocoPhysics, "drake": DrakePhysics}


def peer_physics(peer):
    """The physics class of ``peer`` ("mujoco" or "drake"); ValueError naming the choices otherwise."""
    if peer not in PEERS:
        raise ValueError(f"peer={peer!r} is not one of {sorted(PEERS)}")
    return PEERS[peer]


def peer_options(peer, timestep=None, integrator=None, accuracy=None):
    """The peer's options with its defaults filled in: MuJoCo (timestep 1 ms, implicitfast), Drake (timestep
    1 ms, "lagged" SAP; accuracy only with integrator "cenic", default DRAKE_ACCURACY)."""
    peer_physics(peer)
    opts = dict(timestep=DEFAULT_TIMESTEP if timestep is None else timestep)
    if peer == "mujoco":
        if accuracy is not None:
            raise ValueError(f"accuracy={accuracy!r}: MuJoCo has fixed steps (accuracy is for Drake's cenic)")
        opts["integrator"] = DEFAULT_INTEGRATOR if integrator is None else integrator
    else:
        opts["integrator"] = "lagged" if integrator is None else integrator
        if opts["integrator"] == "cenic":
            opts["accuracy"] = DRAKE_ACCURACY if accuracy is None else accuracy
        elif accuracy is not None:
            raise ValueError(f"accuracy={accuracy!r} needs Drake's integrator 'cenic', got {opts['integrator']!r}")
    return opts


class _Trace:
    """A :func:`~cenic_gym.sim2real.rollout.run_episode` hook (the perturbation interface: ``apply`` after the
    reset, ``before_step`` before every step): records q before every step; with ``physics`` options it puts the
    peer's physics (``peer``: "mujoco" or "drake") in place of the env's simulator (``restore`` puts the simulator
    back); with ``one_step`` options it measures the peer's one-period prediction from each of CENIC's states."""

    def __init__(self, peer="mujoco", physics=None, one_step=None):
        self.peer, self.physics, self.one_step = peer, physics, one_step
        self.q, self.v, self.one_step_div = [], [], []
        self.real, self.twin, self._prev = None, None, None

    def apply(self, env):
        u = env.unwrapped
        self.real = u.sim
        cls = peer_physics(self.peer)
        if self.physics is not None:
            self.twin = cls(u.sim, **self.physics)
            u.sim = self.twin
        elif self.one_step is not None:
            self.twin = cls(u.sim, **self.one_step)

    def before_step(self, env, step):
        self.record(env)

    def record(self, env):
        sim = env.unwrapped.sim
        q, v = sim.q.copy(), sim.v.copy()
        if self.one_step is not None and self._prev is not None:
            q0, v0, t0 = self._prev
            q_peer = self.twin.one_period(q0, v0, t0, sim.t)
            self.one_step_div.append(state_divergence(sim.system.model, q, q_peer))
        self._prev = (q, v, sim.t)
        self.q.append(q)
        self.v.append(v)

    def restore(self, env):
        if self.real is not None:
            env.unwrapped.sim = self.real

    def describe(self):
        return {"physics": self.peer, **self.physics} if self.physics is not None else {"physics": "cenic"}


@dataclass
class Sim2SimEpisode:
    """One seed in both simulators. cenic, peer: the :class:`EpisodeResult` of each (peer: MuJoCo or Drake);
    divergence (T,): closed-loop ‖pin.difference(q_cenic, q_peer)‖∞ [m, rad] at every env step both reached (0 at
    the reset); one_step (T−1,): the peer's one-period prediction from CENIC's state k against CENIC's state k + 1
    [m, rad]; bodies: per free body, (final position gap [m], final linear velocity gap [m/s]) between the two
    runs."""

    seed: int
    cenic: EpisodeResult
    peer: EpisodeResult
    divergence: np.ndarray
    one_step: np.ndarray
    bodies: dict = field(default_factory=dict)

    def row(self):
        """JSON-able summary (for logs)."""
        return dict(seed=self.seed, success_cenic=self.cenic.success, success_peer=self.peer.success,
                    return_cenic=self.cenic.ret, return_peer=self.peer.ret, steps_cenic=self.cenic.steps,
                    steps_peer=self.peer.steps, peer_failure=self.peer.sim_failure,
                    max_divergence=float(self.divergence.max()),
                    max_one_step=float(self.one_step.max()) if self.one_step.size else 0.0,
                    bodies={b: [float(p), float(v)] for b, (p, v) in self.bodies.items()})


@dataclass
class Sim2SimResult:
    """All episodes of one policy on one env; ``peer``: "mujoco" or "drake"; ``options``: the peer's timestep and
    integrator (and accuracy for Drake's cenic)."""

    env_id: str
    policy: str
    options: dict
    episodes: list
    peer: str = "mujoco"

    @property
    def peer_name(self):
        """The peer's display name ("MuJoCo", "Drake")."""
        return peer_physics(self.peer).name

    def summary(self):
        """Success rates, their gap (cenic − peer), peer failures, medians / maxima of the gaps."""
        e = self.episodes
        n = len(e)
        sc = sum(x.cenic.success for x in e) / n
        sp = sum(x.peer.success for x in e) / n
        one = np.concatenate([x.one_step for x in e]) if any(x.one_step.size for x in e) else np.zeros(1)
        out = dict(episodes=n, success_cenic=sc, success_peer=sp, success_gap=sc - sp,
                   peer_failures=sum(x.peer.sim_failure is not None for x in e),
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


def compare_episode(env, policy, seed, max_steps=None, timestep=None, integrator=None, peer="mujoco",
                    accuracy=None):
    """Run ``policy`` from ``env.reset(seed=seed)`` in cenic-gym, then with ``peer`` ("mujoco":
    :class:`MujocoPhysics`, "drake": :class:`DrakePhysics`) as the physics, and compare (:class:`Sim2SimEpisode`).
    ``env``: a gym.make'd cenic-gym env (its options apply to both runs); timestep, integrator, accuracy: the
    peer's (:func:`peer_options`; None: its defaults)."""
    opts = peer_options(peer, timestep, integrator, accuracy)
    runs = []
    for hook in (_Trace(peer, one_step=opts), _Trace(peer, physics=opts)):
        try:
            r = run_episode(env, policy, seed, perturbation=hook, max_steps=max_steps)
            hook.record(env)  # the final state (and the last one-step prediction)
        finally:
            hook.restore(env)
        runs.append((r, hook))
    (rc, hc), (rp, hp) = runs
    model = env.unwrapped.sim.system.model
    n = min(len(hc.q), len(hp.q))
    div = np.array([state_divergence(model, hc.q[k], hp.q[k]) for k in range(n)])
    bodies = {name: (float(np.linalg.norm(hc.q[-1][qs][:3] - hp.q[-1][qs][:3])),
                     float(np.linalg.norm(hc.v[-1][vs][:3] - hp.v[-1][vs][:3])))
              for name, qs, vs in free_bodies(env.unwrapped.sim.system)}
    return Sim2SimEpisode(int(seed), rc, rp, div, np.array(hc.one_step_div), bodies)


def sim2sim(env_id, policy, seeds, max_steps=None, timestep=None, integrator=None, env_kwargs=None, progress=None,
            peer="mujoco", accuracy=None):
    """:func:`compare_episode` with ``peer`` ("mujoco" or "drake") for every seed on ``gym.make(env_id,
    **env_kwargs)``; ``progress(seed, episode)`` after each. Returns :class:`Sim2SimResult`."""
    opts = peer_options(peer, timestep, integrator, accuracy)
    env = make_env(env_id, **(env_kwargs or {}))
    episodes = []
    for seed in seeds:
        ep = compare_episode(env, policy, seed, max_steps, peer=peer, **opts)
        episodes.append(ep)
        if progress is not None:
            progress(seed, ep)
    env.close()
    return Sim2SimResult(env_id, policy.name, opts, episodes, peer)


def free_motion_gaps(env_id, accuracies, peer="drake", lift=2.0, action=0.5, seed=0, **options):
    """The mapping and the control laws checked without contact: from ``env.reset(seed)`` with every free body
    raised by ``lift`` [m] (nothing touches for a control period) and the action ``action`` (scalar, every
    component) applied, one control period in cenic-gym at each of ``accuracies`` against the same period in
    ``peer`` (``options``: :func:`peer_options`). Returns the gaps ‖pin.difference(q_cenic, q_peer)‖∞ [m, rad],
    one per accuracy: they shrink as ε tightens down to the peer's own error. Every run starts from the state of
    the first env's reset."""
    opts = peer_options(peer, **options)
    ends, q_peer, model, start = [], None, None, None
    for acc in accuracies:
        env = make_env(env_id, accuracy=acc)
        u = env.unwrapped
        env.reset(seed=seed)
        if start is None:  # the first env's reset state for every ε (a reset may settle the robot at its own ε)
            q = u.sim.q.copy()
            for _, qs, _ in free_bodies(u.sim.system):
                q[qs.start + 2] += lift
            start = (q, u.sim.v.copy(), u.sim.t)
        u.sim.set_state(q=start[0], v=start[1], t=start[2])
        u._apply_action(np.full(env.action_space.shape, action))
        q0, v0, t0 = u.sim.q.copy(), u.sim.v.copy(), u.sim.t
        if q_peer is None:  # the same start state at every ε (same seed, same action)
            q_peer = peer_physics(peer)(u.sim, **opts).one_period(q0, v0, t0, t0 + u.control_period)
        u.sim.advance_to(t0 + u.control_period)
        ends.append(u.sim.q.copy())
        model = u.sim.system.model
        env.close()
    return [state_divergence(model, q_end, q_peer) for q_end in ends]


def describe_options(result):
    """The peer and its options in words, e.g. "MuJoCo 0.001 s, implicitfast" or "Drake CENIC ε = 1e-3"."""
    o = result.options
    if result.peer == "drake" and o["integrator"] == "cenic":
        return f"Drake CENIC ε = {o['accuracy']:g} (explicit laws held {o['timestep']:g} s)"
    if result.peer == "drake":
        return f"Drake SAP ({o['integrator']}) {o['timestep']:g} s"
    return f"MuJoCo {o['timestep']:g} s, {o['integrator']}"


def sim2sim_lines(results):
    """Markdown bullets, one per result: success in both, the median final free-body gaps, the divergences."""
    out = []
    for r in results:
        sm = r.summary()
        gaps = "; ".join(f"{b} {1e3 * g['position_median']:.1f} mm" for b, g in sm["bodies"].items())
        out.append(f"- {r.env_id} vs {describe_options(r)}: success {100 * sm['success_cenic']:.0f} % / "
                   f"{100 * sm['success_peer']:.0f} % (cenic-gym / peer); median final free-body gap {gaps}; "
                   f"one-step divergence median {sm['one_step_median']:.2e}, closed-loop "
                   f"{sm['divergence_median']:.2e}.")
    return out


def sim2sim_table(results):
    """Markdown: one row per (env, policy, peer) result."""
    lines = ["| env | policy | peer | episodes | success cenic-gym | success peer | gap | peer failures | final "
             "free-body gap: position median / max [mm], velocity median / max [m/s] | closed-loop divergence median "
             "/ max [m, rad] | one-step divergence median / max [m, rad] |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r.summary()
        bodies = "; ".join(f"{b}: {1e3 * g['position_median']:.1f} / {1e3 * g['position_max']:.1f} mm, "
                           f"{g['velocity_median']:.3f} / {g['velocity_max']:.3f} m/s" for b, g in s["bodies"].items())
        lines.append(f"| {r.env_id} | {r.policy} | {describe_options(r)} | {s['episodes']} | "
                     f"{100 * s['success_cenic']:.0f} % | {100 * s['success_peer']:.0f} % | "
                     f"{100 * s['success_gap']:+.0f} pts | {s['peer_failures']} | {bodies or '-'} | "
                     f"{s['divergence_median']:.2e} / {s['divergence_max']:.2e} | "
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
