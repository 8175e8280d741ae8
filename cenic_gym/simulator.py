"""User-facing simulator: validated arguments, complete state, per-advance statistics, what envs read, domain
randomization.

    sim = Simulator(system, accuracy=1e-3, external=[pd])
    stats = sim.advance_to(1.0)                   # AdvanceStats of this call (a value)
    sim.q, sim.v, sim.t, sim.stats                # state; cumulative IntegratorStats
    sim.body_pose("box"), sim.body_velocity("panda/panda_hand")   # any body, link or frame, world frame
    sim.contact_results(), sim.applied_effort(pd) # contacts and controller efforts of the last step
    snap = sim.get_state(); sim.restore(snap)     # exact continuation (also pickle.dumps(sim), copy.deepcopy(sim))
    x = sim.get_state_vector(); sim.set_state_vector(x)
    sim.set_geometry_material("box/0", mu_static=0.8); sim.set_body_inertia("box", mass=0.5)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ._numba_cache import announce_compile
from .cenic import AdvanceStats, CenicIntegrator, ContactResults, IntegratorStats  # noqa: F401  (re-exported)
from .contact import DEFAULT_MARGIN
from .errors import SimulationError  # noqa: F401  (re-exported)
from .external import ExternalSystem
from .model import MultibodySystem, _rotation, _vec3

MAX_ACCURACY = 1.0  # [m, rad]: ε above this is no error control at all (quaternion components differ by ≤ 2)


@dataclass(frozen=True)
class SimState:
    """Everything that determines a simulation's future, and the results of its last step.

    q (nq,), v (nv,): generalized positions and velocities; t [s]; dt [s]: the integrator's next step size;
    period_dt [s]: the first step of its next control period (:func:`~cenic_gym.cenic.period_start_step`; None in
    snapshots made without it: no memory, = dt); dt and period_dt are the error control's only memory; z: the
    external systems' states (e.g. PID integrators); external: each external system's
    :meth:`~cenic_gym.external.ExternalSystem.get_params` (set-points, gains, effort limits, suction on);
    params: the model parameters domain randomization changes (per-geometry ``stiffness``, ``dissipation``,
    ``mu_static``, ``mu_dynamic``, ``shapes`` and ``placements``, (R (ng, 3, 3), p (ng, 3)) in the joints'
    frames; per joint (the rigid body it carries) ``mass`` [kg], ``com`` (3,) [m] and ``inertia`` (3, 3) [kg m²]
    about the COM, in the joint frame);
    contacts, efforts: :meth:`Simulator.contact_results` and :meth:`Simulator.applied_efforts` of the last step."""

    q: np.ndarray
    v: np.ndarray
    t: float
    dt: float
    z: np.ndarray
    external: tuple = ()
    params: dict = field(default_factory=dict)
    contacts: ContactResults = None
    efforts: tuple = ()
    period_dt: float = None


def _same_shape(a, b):
    return a is b or (type(a) is type(b) and np.array_equal(a.size(), b.size())
                      and np.array_equal(getattr(a, "vertices", None), getattr(b, "vertices", None)))


def _positive(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not (math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def _finite_vector(name, value, n):
    try:
        x = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of {n} numbers, got {value!r}") from None
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}: {value!r}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x


class Simulator:
    """CENIC simulation of a :class:`~cenic_gym.model.MultibodySystem`.

    accuracy:   ε_acc in (0, 1], position error per step [m, rad] (default 1e-3, as Drake). The global error then
                falls like ε^½ (first-order method, δt ∝ ε^½). ε = 1 is the loosest: larger values would switch
                error control off (use ``fixed_step`` for that); ``max_step`` then bounds the step.
    error_per_unit_step: if True, ε_acc bounds the error per unit of simulated time instead [m/s, rad/s]:
                a step of size δt must have error ≤ ε δt / (1 s). Steps shrink like ε and the global error falls
                linearly in ε, at the cost of more steps at a given ε (not in the CENIC paper; off by default).
    max_step:   largest step δt_max [s] (default 0.1 s, as Drake).
    fixed_step: None (error control) or a step δt [s] for plain discrete ICF.
    min_step:   smallest step [s]; below it the simulator raises AccuracyNotMetError instead of looping.
    contact_margin: speculative contact distance [m].
    hessian_reuse: reuse Cholesky factors inside a Newton solve (CENIC eq. 35).
    generalized_force: optional explicit force callable (t, q, v) -> (nv,).
    gains: optional implicit effort-limited linear control laws, callable (t, q, v, dt) -> (idx, c, b, e).
    external: list of :class:`~cenic_gym.external.ExternalSystem` — controllers (JointPD, JointPID,
                InverseDynamicsPD) and force elements integrated implicitly inside each convex step. Their
                set-points and gains (``set_target``, ``set_gains``) may change between ``advance_to`` calls.
    record: keep the (t, δt, accepted, error) history of every attempted step in ``sim.history``.
    impact_friction: under error control (default True), bound each contact's friction by the step's own normal
                impulse (:func:`~cenic_gym.solver.solve_coulomb`, issue 10), so a landing body does not grip beyond
                μ; False keeps ICF's Lagged bound μ δt f_n(x^n) (eq. 18), which is cheaper on scenes with many
                simultaneous impacts (sphere clutter: ~2× fewer solves) but grips on landing until ε ≈ 1e-7
                (benchmarks/RESULTS.md "Coulomb's law at impacts"). Fixed steps always use the Lagged bound.

    A simulator pickles and deep-copies (Ray ships it to workers); the copy continues bit-identically. Callables
    passed as ``generalized_force`` or ``gains`` must themselves be picklable for that (module-level functions).
    """

    def __init__(self, system, accuracy=1e-3, max_step=0.1, fixed_step=None, min_step=1e-9,
                 contact_margin=DEFAULT_MARGIN, hessian_reuse=False, generalized_force=None, gains=None, record=False,
                 error_per_unit_step=False, external=None, impact_friction=True):
        if not isinstance(system, MultibodySystem):
            raise TypeError(f"system must be a MultibodySystem (SceneBuilder(...).build()), got {system!r}")
        announce_compile()
        accuracy = _positive("accuracy", accuracy)
        if accuracy > MAX_ACCURACY:
            raise ValueError(f"accuracy={accuracy!r} is above {MAX_ACCURACY:g}: it is a position error per step in "
                             "m and rad, and larger values switch error control off; use fixed_step=... to run "
                             "without error control")
        max_step = _positive("max_step", max_step)
        fixed_step = _positive("fixed_step", fixed_step, allow_none=True)
        min_step = _positive("min_step", min_step)
        if min_step > max_step:
            raise ValueError(f"min_step={min_step!r} must not exceed max_step={max_step!r}")
        margin = _positive("contact_margin", contact_margin) if contact_margin != 0 else 0.0
        for name, fn in (("generalized_force", generalized_force), ("gains", gains)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable or None, got {fn!r}")
        if external is not None:
            if isinstance(external, ExternalSystem) or not hasattr(external, "__iter__"):
                raise TypeError(f"external must be a list of ExternalSystem, got {external!r}")
            external = list(external)
            for s in external:
                if not isinstance(s, ExternalSystem):
                    raise TypeError(f"external systems must be ExternalSystem instances, got {s!r}")
        if not isinstance(impact_friction, (bool, np.bool_)):
            raise TypeError(f"impact_friction must be True or False, got {impact_friction!r}")
        self.system = system
        self.integrator = CenicIntegrator(system, accuracy, max_step, fixed_step, min_step, margin,
                                          hessian_reuse, generalized_force=generalized_force, gains=gains,
                                          error_per_unit_step=error_per_unit_step, external=external,
                                          impact_friction=impact_friction)
        if record:
            self.integrator.history = []
        self._kin = None  # (integrator.state_id, data): the kinematics of body_pose / body_velocity at that state

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def q(self):
        return self.integrator.q.copy()

    @property
    def v(self):
        return self.integrator.v.copy()

    @property
    def t(self):
        return self.integrator.t

    @property
    def z(self):
        """States of the external systems (concatenated), e.g. PID integrators."""
        return self.integrator.z.copy()

    @property
    def external(self):
        """The external systems (controllers, force elements) of this simulator, in order (after a copy, these
        are the copies: set targets and gains through them)."""
        ext = self.integrator.external
        return [] if ext is None else list(ext.systems)

    @property
    def stats(self) -> IntegratorStats:
        """Cumulative counters since construction (a live object; ``advance_to`` returns per-call values)."""
        return self.integrator.stats

    @property
    def history(self):
        return self.integrator.history

    @property
    def accuracy(self):
        return self.integrator.accuracy

    def set_state(self, q=None, v=None, t=None):
        """Set q (nq,), v (nv,) and/or t [s]. Quaternions of free joints are normalised. Contact results and
        efforts are empty until the next step."""
        m = self.system.model
        if q is not None:
            self.integrator.q = pin.normalize(m, _finite_vector("q", q, m.nq))
        if v is not None:
            self.integrator.v = _finite_vector("v", v, m.nv)
        if t is not None:
            t = float(t)
            if not math.isfinite(t):
                raise ValueError(f"t must be finite, got {t!r}")
            self.integrator.t = t
        self.integrator.invalidate()

    def get_state(self) -> SimState:
        """A :class:`SimState` (copies): :meth:`restore` continues from it bit-identically."""
        it = self.integrator
        qy, model = it.start.query, it.model
        params = dict(stiffness=qy.geom_k.copy(), dissipation=qy.geom_d.copy(), mu_static=qy.geom_mu_s.copy(),
                      mu_dynamic=qy.geom_mu_d.copy(), mass=np.array([I.mass for I in model.inertias]),
                      com=np.array([I.lever for I in model.inertias]),
                      inertia=np.array([I.inertia for I in model.inertias]), shapes=tuple(qy.shapes),
                      damping=it.damping.copy(), armature=np.array(model.armature, dtype=float),
                      placements=tuple(a.copy() for a in qy.placement(slice(None))))
        return SimState(it.q.copy(), it.v.copy(), it.t, it.dt, it.z.copy(),
                        tuple(s.get_params() for s in self.external), params, it.contact_results(),
                        tuple(it.applied_efforts()), it.period_dt)

    def restore(self, state: SimState):
        """Continue exactly from a snapshot taken with :meth:`get_state` (of this simulator or a copy of it);
        contact results, efforts and poses are valid at once."""
        if not isinstance(state, SimState):
            raise TypeError(f"restore needs a SimState (from get_state()), got {state!r}")
        it, m = self.integrator, self.system.model
        q = _finite_vector("state.q", state.q, m.nq)
        v = _finite_vector("state.v", state.v, m.nv)
        z = _finite_vector("state.z", state.z, it.z.shape[0])
        t = float(state.t)
        if not math.isfinite(t):
            raise ValueError(f"state.t must be finite, got {state.t!r}")
        dt = _positive("state.dt", state.dt)
        period_dt = dt if state.period_dt is None else _positive("state.period_dt", state.period_dt)
        if len(state.external) != len(self.external):
            raise ValueError(f"state has parameters of {len(state.external)} external systems, this simulator "
                             f"has {len(self.external)}")
        it.q, it.v, it.z, it.t, it.dt, it.period_dt = q, v, z, t, dt, period_dt  # bit-exact (no re-normalisation)
        for s, p in zip(self.external, state.external):
            s.set_params(p)
        if state.params:
            self._set_params(state.params)
        it.invalidate()
        if state.contacts is not None:
            it.frozen_results = (state.contacts, tuple(e.copy() for e in state.efforts))

    def _set_params(self, params):
        it = self.integrator
        it.set_material(slice(None), params["stiffness"], params["dissipation"], params["mu_static"],
                        params["mu_dynamic"])
        for i, shape in enumerate(params["shapes"]):
            if not _same_shape(shape, it.start.query.shapes[i]):
                it.set_shape(i, shape)
        for j, (m, c, I) in enumerate(zip(params["mass"], params["com"], params["inertia"])):
            # bit-exact (a round trip through dynamic parameters is not)
            self.integrator.set_inertia(j, pin.Inertia(m, c, I))
        if "damping" in params:  # snapshots of before 2026-12 have none
            it.set_joint_dynamics(params["damping"], params["armature"])
        if "placements" in params:  # nor these
            it.set_placement(slice(None), *params["placements"])

    # -- the flat state vector ------------------------------------------------------------------------------------
    def state_vector_layout(self):
        """Names and slices of :meth:`get_state_vector`: ``t`` [s], ``dt`` [s] (next step size), ``period_dt`` [s]
        (first step of the next control period), ``q`` (nq,),
        ``v`` (nv,), ``z`` (external states), then ``external/<i>`` for each external system i: its
        :meth:`~cenic_gym.external.ExternalSystem.setpoint_vector` (joint controllers: [q_d, v_d, feed-forward];
        suction: [on])."""
        it = self.integrator
        sizes = [("t", 1), ("dt", 1), ("period_dt", 1), ("q", it.q.shape[0]), ("v", it.v.shape[0]),
                 ("z", it.z.shape[0])]
        sizes += [(f"external/{i}", s.setpoint_vector().shape[0]) for i, s in enumerate(self.external)]
        ends = np.cumsum([0] + [n for _, n in sizes])
        return {name: slice(int(a), int(b)) for (name, _), a, b in zip(sizes, ends[:-1], ends[1:])}

    def get_state_vector(self):
        """The dynamic state as one float64 vector (layout: :meth:`state_vector_layout`). Model parameters (materials,
        inertias, gains) are not in it: they are in :meth:`get_state`."""
        it = self.integrator
        parts = [[it.t], [it.dt], [it.period_dt], it.q, it.v, it.z] + [s.setpoint_vector() for s in self.external]
        return np.concatenate([np.asarray(p, dtype=float) for p in parts])

    def set_state_vector(self, x):
        """Inverse of :meth:`get_state_vector` (bit-exact). Contact results and efforts are empty until the next step."""
        layout = self.state_vector_layout()
        n = max(sl.stop for sl in layout.values())
        x = _finite_vector("state vector", x, n)
        dt = _positive("state vector dt", x[1])
        period_dt = _positive("state vector period_dt", x[2])
        for i, s in enumerate(self.external):
            s.set_setpoint_vector(x[layout[f"external/{i}"]])
        it = self.integrator
        it.t, it.dt, it.period_dt = float(x[0]), dt, period_dt
        it.q, it.v, it.z = x[layout["q"]].copy(), x[layout["v"]].copy(), x[layout["z"]].copy()
        it.invalidate()

    # -- running --------------------------------------------------------------------------------------------------
    def advance_to(self, t, on_step=None, inputs_changed=False) -> AdvanceStats:
        """Integrate until time t [s] (lands exactly on t); ``on_step(sim)`` is called after every accepted step.
        ``inputs_changed=True`` says the set-points changed since the last call (a new control period: its first
        step follows :func:`~cenic_gym.cenic.period_start_step`; envs pass it every env step).
        Returns the :class:`~cenic_gym.cenic.AdvanceStats` of this call. Raises
        :class:`~cenic_gym.errors.AccuracyNotMetError` if the accuracy cannot be met above ``min_step`` and
        :class:`~cenic_gym.errors.SolverFailure` on a failed solve or a non-finite state."""
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)):
            raise TypeError(f"advance_to: t must be a number [s], got {t!r}")
        t = float(t)
        if not math.isfinite(t):
            raise ValueError(f"advance_to: t must be finite, got {t!r}")
        if t < self.integrator.t:
            raise ValueError(f"advance_to: t={t!r} is before the current time {self.integrator.t!r}")
        if on_step is not None and not callable(on_step):
            raise TypeError(f"on_step must be callable or None, got {on_step!r}")
        return self.integrator.advance_to(t, None if on_step is None else lambda: on_step(self),
                                          inputs_changed=bool(inputs_changed))

    # -- what envs read -------------------------------------------------------------------------------------------
    def contact_results(self) -> ContactResults:
        """Contacts of the last accepted step (:class:`~cenic_gym.cenic.ContactResults`: points, normals, φ,
        forces, slip speeds, geometry and body names; world frame)."""
        return self.integrator.contact_results()

    def applied_efforts(self):
        """Generalized forces [N, N m] each external system applied in the last accepted step, on its ``dofs``
        (effort limits included), as a list aligned with :attr:`external`."""
        return self.integrator.applied_efforts()

    def applied_effort(self, system):
        """The generalized forces [N, N m] ``system`` (one of :attr:`external`) applied in the last step."""
        for s, e in zip(self.external, self.applied_efforts()):
            if s is system:
                return e
        raise ValueError(f"{system!r} is not an external system of this simulator")

    def _frame(self, name):
        """(kind, index) of a frame or joint name: bodies added with add_body, robot links "<robot>/<link>",
        robot joints and frames."""
        if not isinstance(name, str):
            raise TypeError(f"body or frame name must be a str, got {name!r}")
        m = self.system.model
        if m.existFrame(name):
            return "frame", m.getFrameId(name)
        if m.existJointName(name):
            return "joint", m.getJointId(name)
        raise KeyError(f"no body, link, frame or joint named {name!r}")

    def _kinematics(self):
        it = self.integrator
        if self._kin is None or self._kin[0] != it.state_id:
            data = self._kin[1] if self._kin is not None else self.system.model.createData()
            pin.forwardKinematics(self.system.model, data, it.q, it.v)
            self._kin = (it.state_id, data)
        return self._kin[1]

    def body_pose(self, name):
        """World position (3,) [m] and rotation (3, 3) of a body (add_body name), robot link ("<robot>/<link>"),
        frame or joint."""
        kind, i = self._frame(name)
        m, d = self.system.model, self._kinematics()
        X = pin.updateFramePlacement(m, d, i) if kind == "frame" else d.oMi[i]
        return X.translation.copy(), X.rotation.copy()

    def body_velocity(self, name):
        """Linear velocity [m/s] of the frame's origin and angular velocity [rad/s], both in the world frame."""
        kind, i = self._frame(name)
        m, d = self.system.model, self._kinematics()
        ref = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        if kind == "frame":
            pin.updateFramePlacement(m, d, i)
            vel = pin.getFrameVelocity(m, d, i, ref)
        else:
            vel = pin.getVelocity(m, d, i, ref)
        return vel.linear.copy(), vel.angular.copy()

    # -- domain randomization -------------------------------------------------------------------------------------
    def _geometry_indices(self, geoms):
        names = [g.name for g in self.system.geometries]
        items = [geoms] if isinstance(geoms, (str, int, np.integer)) else list(geoms)
        out = []
        for g in items:
            if isinstance(g, str):
                if g not in names:
                    raise KeyError(f"no geometry named {g!r}; geometries: {names}")
                out.append(names.index(g))
            elif isinstance(g, (int, np.integer)) and not isinstance(g, bool) and 0 <= g < len(names):
                out.append(int(g))
            else:
                raise ValueError(f"geometry must be a name or an index in [0, {len(names)}), got {g!r}")
        return np.array(out, dtype=np.int64)

    def geometry_material(self, geom):
        """Current (stiffness [N/m], dissipation [s/m], mu_static, mu_dynamic) of one geometry in this simulator."""
        i = self._geometry_indices(geom)[0]
        qy = self.integrator.start.query
        return dict(stiffness=qy.geom_k[i], dissipation=qy.geom_d[i], mu_static=qy.geom_mu_s[i],
                    mu_dynamic=qy.geom_mu_d[i])

    def set_geometry_material(self, geoms, stiffness=None, dissipation=None, mu_static=None, mu_dynamic=None):
        """Change contact parameters of geometries (name, index or a list) from the next step on, in this simulator
        only (the system keeps its defaults). Pair values combine as at build time (docs/physics.md §2.2)."""
        idx = self._geometry_indices(geoms)
        qy = self.integrator.start.query
        new = {}
        for name, val, cur in (("stiffness", stiffness, qy.geom_k), ("dissipation", dissipation, qy.geom_d),
                               ("mu_static", mu_static, qy.geom_mu_s), ("mu_dynamic", mu_dynamic, qy.geom_mu_d)):
            if val is None:
                new[name] = cur[idx]
                continue
            arr = np.broadcast_to(np.asarray(val, dtype=float), idx.shape)
            if not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
                raise ValueError(f"{name} must be finite and >= 0, got {val!r}")
            new[name] = arr
        if np.any(new["stiffness"] <= 0):
            raise ValueError(f"stiffness must be > 0, got {stiffness!r}")
        if np.any(new["mu_dynamic"] > new["mu_static"]):
            raise ValueError(f"mu_dynamic must not exceed mu_static, got mu_static={new['mu_static']!r}, "
                             f"mu_dynamic={new['mu_dynamic']!r}")
        self.integrator.set_material(idx, new["stiffness"], new["dissipation"], new["mu_static"], new["mu_dynamic"])

    def set_geometry_shape(self, geom, shape):
        """Resize a geometry (name or index) from the next step on, in this simulator only: ``shape`` is a new shape
        of the same kind (e.g. ``Box((0.15, 0.06, 0.2))`` for a box). Mass properties are separate: set them with
        :meth:`set_body_inertia` (e.g. ``inertia=shape.inertia(mass).inertia``). External systems that keep their
        own copy of the geometry (the suction gripper's targets) still see the shape they were built with."""
        i = int(self._geometry_indices(geom)[0])
        current = self.integrator.start.query.shapes[i]
        if type(shape) is not type(current):
            raise TypeError(f"geometry {self.system.geometries[i].name!r} is a {type(current).__name__}; "
                            f"its new shape must be one too, got {shape!r}")
        self.integrator.set_shape(i, shape)

    def geometry_shape(self, geom):
        """The current shape of a geometry (name or index) in this simulator."""
        return self.integrator.start.query.shapes[int(self._geometry_indices(geom)[0])]

    def set_geometry_pose(self, geom, position, rotation=None):
        """Move a geometry fixed to the world (name or index; :meth:`SceneBuilder.add_fixed`, a ground) to a new
        pose from the next step on, in this simulator only: position [m], rotation (3x3, rpy [rad] or quaternion
        xyzw; None: identity), world frame. Scenery drawn per episode (a fixture's pose, a hole's clearance) moves
        this way without rebuilding the system; snapshots (:meth:`get_state`) keep the poses."""
        i = int(self._geometry_indices(geom)[0])
        g = self.system.geometries[i]
        if g.joint != 0:
            raise ValueError(f"geometry {g.name!r} moves with a body: set_geometry_pose moves world-fixed geometry")
        self.integrator.set_placement(i, _rotation(rotation), _vec3(position, "position"))

    def geometry_pose(self, geom):
        """(position (3,) [m], rotation (3, 3)) of a geometry in its body's frame (the world's for fixed geometry)
        in this simulator: the built placement or the one :meth:`set_geometry_pose` gave it (copies)."""
        R, p = self.integrator.start.query.placement(int(self._geometry_indices(geom)[0]))
        return p.copy(), R.copy()

    def geometry_placements(self):
        """The current placement (pin.SE3, in its body's frame) of every geometry, in system order: what a peer
        scene or a renderer built from the system needs to show this simulator's scenery (:meth:`set_geometry_pose`)."""
        n = len(self.system.geometries)
        return [pin.SE3(*self.integrator.start.query.placement(i)) for i in range(n)]

    def _joint_dofs(self, joints):
        """v indices of 1-DOF joints named by ``joints`` (a name or a list): the model's name (``"panda/panda_joint1"``)
        or, where it is unique, the name without the robot prefix (``"panda_joint1"``)."""
        m = self.system.model
        full = {m.names[j]: int(m.idx_vs[j]) for j in range(1, m.njoints) if m.nvs[j] == 1}
        short = {}
        for name, iv in full.items():
            short.setdefault(name.split("/", 1)[-1], []).append(iv)
        out = []
        for name in [joints] if isinstance(joints, str) else list(joints):
            if name in full:
                out.append(full[name])
            elif len(short.get(name, ())) == 1:
                out.append(short[name][0])
            else:
                raise KeyError(f"no 1-DOF joint named {name!r}; joints: {sorted(full)}")
        return np.array(out, dtype=np.int64)

    def joint_dynamics(self, joint):
        """Current (damping [N m s/rad or N s/m], armature [kg m² or kg]) of a 1-DOF joint in this simulator."""
        i = self._joint_dofs(joint)[0]
        return dict(damping=float(self.integrator.damping[i]), armature=float(self.integrator.model.armature[i]))

    def set_joint_dynamics(self, joints, damping=None, armature=None):
        """Change the viscous damping (implicit, in A = M + δt D) and the armature (reflected rotor inertia on the
        diagonal of M) of 1-DOF joints (a name or a list), finite and >= 0, from the next step on, in this simulator
        only (controllers keep their nominal model, as for :meth:`set_body_inertia`)."""
        idx = self._joint_dofs(joints)
        it = self.integrator
        new_d, new_a = it.damping.copy(), np.array(it.model.armature, dtype=float)
        for name, val, arr in (("damping", damping, new_d), ("armature", armature, new_a)):
            if val is None:
                continue
            val = np.broadcast_to(np.asarray(val, dtype=float), idx.shape)
            if not (np.all(np.isfinite(val)) and np.all(val >= 0)):
                raise ValueError(f"{name} must be finite and >= 0, got {val!r}")
            arr[idx] = val
        it.set_joint_dynamics(new_d, new_a)

    def body_inertia(self, body):
        """(mass [kg], com (3,) [m], inertia (3, 3) [kg m²] about the COM) of the rigid body ``body`` belongs to,
        in its joint frame."""
        I = self.integrator.model.inertias[self._body_joint(body)]
        return I.mass, I.lever.copy(), I.inertia.copy()

    def set_body_inertia(self, body, mass=None, com=None, inertia=None):
        """Change the inertia of a rigid body from the next step on, in this simulator only. ``body`` is a body name
        (add_body), a robot link or frame (its rigid body: everything welded to the same joint) or a joint name.
        mass [kg] > 0; com (3,) [m] in the joint frame; inertia (3, 3) [kg m²] about the COM, symmetric positive
        definite. A new mass without a new inertia scales the rotational inertia with it (same shape, scaled
        density). Controllers keep their own nominal model (a model-based controller sees the nominal masses)."""
        j = self._body_joint(body)
        model = self.integrator.model
        cur = model.inertias[j]
        m = cur.mass if mass is None else _positive("mass", mass)
        c = cur.lever.copy() if com is None else _finite_vector("com", com, 3)
        if inertia is None:
            I = cur.inertia * (m / cur.mass if cur.mass > 0 else 1.0)
        else:
            try:
                I = np.array(inertia, dtype=float)
            except (TypeError, ValueError):
                raise TypeError(f"inertia must be a 3x3 array, got {inertia!r}") from None
            if I.shape != (3, 3) or not np.all(np.isfinite(I)) or not np.allclose(I, I.T, atol=1e-12):
                raise ValueError(f"inertia must be a finite symmetric 3x3 array, got {inertia!r}")
            ev = np.linalg.eigvalsh(I)
            if ev[0] <= 0 or ev[2] > ev[0] + ev[1] + 1e-12 * ev[2]:
                raise ValueError(f"inertia must be positive definite and satisfy the triangle inequality, "
                                 f"eigenvalues {ev!r}")
        self.integrator.set_inertia(j, pin.Inertia(m, c, I))

    def _body_joint(self, body):
        kind, i = self._frame(body)
        j = self.system.model.frames[i].parentJoint if kind == "frame" else i
        if j == 0:
            raise ValueError(f"{body!r} is fixed to the world: it has no inertia to change")
        return j
