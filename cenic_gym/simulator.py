"""User-facing simulator: validated arguments, state get/set, snapshots, contact results.

    sim = Simulator(system, accuracy=1e-3)
    sim.advance_to(1.0)
    sim.q, sim.v, sim.t, sim.stats, sim.contact_results()
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .cenic import CenicIntegrator, IntegratorStats, SimulationError  # noqa: F401  (re-exported)
from .contact import DEFAULT_MARGIN


@dataclass(frozen=True)
class SimState:
    """A snapshot: generalized positions q (nq,), velocities v (nv,), time t [s], the integrator's next δt and the
    external systems' states z (controllers' integrators)."""

    q: np.ndarray
    v: np.ndarray
    t: float
    dt: float
    z: np.ndarray = None


def _positive(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not (math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def _finite_vector(name, value, n):
    x = np.array(value, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x


class Simulator:
    """CENIC simulation of a :class:`~cenic_gym.model.MultibodySystem`.

    accuracy:   ε_acc > 0, position error per step [m, rad] (default 1e-3, as Drake). The global error then
                falls like ε^½ (first-order method, δt ∝ ε^½).
    error_per_unit_step: if True, ε_acc bounds the error per unit of simulated time instead [m/s, rad/s]:
                a step of size δt must have error ≤ ε δt / (1 s). Steps shrink like ε and the global error falls
                linearly in ε, at the cost of more steps at a given ε (not in the CENIC paper; off by default).
    max_step:   largest step δt_max [s] (default 0.1 s, as Drake).
    fixed_step: None (error control) or a step δt [s] for plain discrete ICF.
    min_step:   smallest step [s]; below it the simulator raises SimulationError instead of looping.
    contact_margin: speculative contact distance [m].
    hessian_reuse: reuse Cholesky factors inside a Newton solve (CENIC eq. 35).
    generalized_force: optional explicit force callable (t, q, v) -> (nv,).
    gains: optional implicit effort-limited linear control laws, callable (t, q, v, dt) -> (idx, c, b, e).
    external: list of :class:`~cenic_gym.external.ExternalSystem` — controllers (JointPD, JointPID,
                InverseDynamicsPD) and force elements integrated implicitly inside each convex step.
    record: keep the (t, δt, accepted, error) history of every attempted step in ``sim.history``.
    """

    def __init__(self, system, accuracy=1e-3, max_step=0.1, fixed_step=None, min_step=1e-9,
                 contact_margin=DEFAULT_MARGIN, hessian_reuse=False, generalized_force=None, gains=None, record=False,
                 error_per_unit_step=False, external=None):
        accuracy = _positive("accuracy", accuracy)
        max_step = _positive("max_step", max_step)
        fixed_step = _positive("fixed_step", fixed_step, allow_none=True)
        min_step = _positive("min_step", min_step)
        if min_step > max_step:
            raise ValueError(f"min_step={min_step!r} must not exceed max_step={max_step!r}")
        if not (np.isfinite(contact_margin) and contact_margin >= 0):
            raise ValueError(f"contact_margin must be >= 0, got {contact_margin!r}")
        for name, fn in (("generalized_force", generalized_force), ("gains", gains)):
            if fn is not None and not callable(fn):
                raise ValueError(f"{name} must be callable or None, got {fn!r}")
        self.system = system
        self.integrator = CenicIntegrator(system, accuracy, max_step, fixed_step, min_step, contact_margin,
                                          hessian_reuse, generalized_force=generalized_force, gains=gains,
                                          error_per_unit_step=error_per_unit_step, external=external)
        if record:
            self.integrator.history = []

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
    def stats(self) -> IntegratorStats:
        return self.integrator.stats

    @property
    def history(self):
        return self.integrator.history

    @property
    def accuracy(self):
        return self.integrator.accuracy

    def set_state(self, q=None, v=None, t=None):
        """Set q (nq,), v (nv,) and/or t [s]. Quaternions of free joints are normalised."""
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
        it = self.integrator
        return SimState(it.q.copy(), it.v.copy(), it.t, it.dt, it.z.copy())

    def restore(self, state: SimState):
        """Continue exactly from a snapshot taken with :meth:`get_state`."""
        self.set_state(state.q, state.v, state.t)
        self.integrator.q = state.q.copy()  # bit-exact (no re-normalisation)
        self.integrator.dt = state.dt
        if state.z is not None:
            self.integrator.z = state.z.copy()

    # -- running --------------------------------------------------------------------------------------------------
    def advance_to(self, t):
        """Integrate until time t [s] (lands exactly on t). Raises SimulationError if accuracy cannot be met."""
        t = float(t)
        if not math.isfinite(t):
            raise ValueError(f"advance_to: t must be finite, got {t!r}")
        if t < self.integrator.t:
            raise ValueError(f"advance_to: t={t!r} is before the current time {self.integrator.t!r}")
        self.integrator.advance_to(t)
        return self

    def contact_results(self):
        """Contacts of the last accepted step: point, normal, phi, force on B [N] (world frame), geom_a, geom_b."""
        return self.integrator.contact_results()

    def body_pose(self, name):
        """World position (3,) [m] and rotation (3, 3) of a free body's frame."""
        sl = self.system.q_slice(name)
        qb = self.integrator.q[sl]
        R = pin.Quaternion(qb[6], qb[3], qb[4], qb[5]).normalized().toRotationMatrix()
        return qb[:3].copy(), R

    def body_velocity(self, name):
        """World-frame linear velocity of the body origin [m/s] and angular velocity [rad/s]."""
        p, R = self.body_pose(name)
        vb = self.integrator.v[self.system.v_slice(name)]
        return vb[:3].copy(), R @ vb[3:]
