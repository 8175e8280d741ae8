"""Implicit external systems: controllers and force elements inside the convex step (CENIC §III-C, §V-C;
docs/physics.md §2.9, §2.10, §4.6).

An external system has a state z (n_z,), dynamics ż = h(t, z, q, v) and an output τ = g(t, z, q, v): generalized
forces [N or N m] on the generalized velocities ``dofs`` (indices into v), each clamped to ±``effort_limit``.
Every convex solve of size δt linearizes it about x^n = (q^n, v^n), z^n with the configuration eliminated by
q̃(v) = q^n ⊕ δt v (CENIC eq. 26–29):

    z^{n+1} = Z v + b_z,     Z = δt (I − δt ∂_z h̃)⁻¹ ∂_v h̃,   b_z = (I − δt ∂_z h̃)⁻¹ (z^n + δt b_h)
    τ ≈ −C v + d,            C = max(0, diag(−∂_v g̃)),        d = g̃(v^n) + C v^n,   g̃(v) = g(Z v + b_z, q̃(v), v)

and the law τ_i = clamp(d_i − C_i v_i, ±e_i) enters the convex problem as an effort-limited gain constraint
(Huber potential, docs/physics.md §2.9), so stiff gains never force small steps. Only the diagonal of −∂g̃/∂v is
kept (the curl condition of ICF); a negative entry gives C_ii = 0, i.e. the explicit τ ≈ g̃(v^n) for that DOF.

Derivatives are forward differences by default (CENIC §V-C, Drake's recipe: Δv_i = √eps · max(1, |v_i|));
a system may override :meth:`ExternalSystem.linearize` with an exact form (the joint PD, PID and
inverse-dynamics PD controllers and the suction gripper do).
With ``implicit=False`` a system is treated explicitly, as most simulators do: C = 0, d = g(z^n, x^n) and
z^{n+1} = z^n + δt h(z^n, x^n) (explicit Euler) — for comparisons (CENIC Fig. 12, 13).

The controllers' set-points are plain attributes (``q_d``, ``v_d``, ``tau_ff``, ...) that may change between
``Simulator.advance_to`` calls; that is how environments act.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numba import njit

from .icf import GainPool

_SQRT_EPS = math.sqrt(np.finfo(float).eps)


@dataclass
class Linearization:
    """One external system linearized for a step of size dt: the gain law on ``idx`` and the implicit state update."""

    idx: np.ndarray  # (m,) indices into v
    c: np.ndarray  # (m,) C_ii >= 0 [N s/m or N m s/rad]
    b: np.ndarray  # (m,) d_i [N or N m]
    e: np.ndarray  # (m,) effort limits (inf: unlimited)
    Z: np.ndarray  # (nz, nv)
    bz: np.ndarray  # (nz,)


class ExternalSystem:
    """Base class. Subclasses set ``dofs`` (v indices of the outputs), ``effort_limit`` (same length, inf for
    none) and ``nz``, and implement :meth:`output` (g) and, if nz > 0, :meth:`dynamics` (h)."""

    nz: int = 0
    implicit: bool = True

    def __init__(self, dofs, effort_limit=None, implicit=True):
        self.dofs = np.asarray(dofs, dtype=np.int64).reshape(-1)
        lim = np.full(self.dofs.shape, np.inf) if effort_limit is None else np.broadcast_to(
            np.asarray(effort_limit, dtype=float), self.dofs.shape).copy()
        if np.any(np.isnan(lim)) or np.any(lim <= 0):
            raise ValueError(f"effort_limit must be > 0 (inf for none), got {lim!r}")
        self.effort_limit = lim
        self.implicit = bool(implicit)

    # -- parameters and set-points (part of the simulator state) -------------------------------------------------
    def get_params(self):
        """Everything mutable the system's future depends on besides its state z (set-points, gains, limits,
        switches), as a dict of copies; :meth:`set_params` puts such a dict back."""
        return {"effort_limit": self.effort_limit.copy()}

    def set_params(self, params):
        self.effort_limit = np.array(params["effort_limit"], dtype=float)

    def setpoint_vector(self):
        """The numeric set-points, flat (the system's part of ``Simulator.get_state_vector``)."""
        return np.zeros(0)

    def set_setpoint_vector(self, x):
        """Inverse of :meth:`setpoint_vector`."""
        if len(x):
            raise ValueError(f"{type(self).__name__} has no set-points, got {len(x)} values")

    # -- the model of the system -----------------------------------------------------------------------------------
    def initial_state(self):
        return np.zeros(self.nz)

    def dynamics(self, t, z, q, v):
        """ż = h(t, z, q, v) (nz,)."""
        return np.zeros(self.nz)

    def output(self, t, z, q, v):
        """τ = g(t, z, q, v) on ``dofs`` (len(dofs),), before effort limits."""
        raise NotImplementedError

    # -- linearization (CENIC eq. 26–29) ---------------------------------------------------------------------------
    def linearize(self, t, z, q, v, dt, qtilde):
        """Linearization for a step dt from (q, v, z); ``qtilde(v)`` = q ⊕ δt v. Forward differences.

        Overrides return arrays that the caller may keep without copying (the gain pool of an accepted solve is
        read after later calls, :meth:`~cenic_gym.cenic.CenicIntegrator.applied_efforts`): fresh arrays, or
        attributes that are replaced rather than written in place (``dofs``, ``effort_limit``)."""
        nz, nv = self.nz, v.shape[0]
        if not self.implicit:
            tau = self.output(t, z, q, v)
            bz = z + dt * self.dynamics(t, z, q, v) if nz else z.copy()
            return Linearization(self.dofs, np.zeros(self.dofs.shape), tau, self.effort_limit, np.zeros((nz, nv)), bz)
        t1 = t + dt  # the law is evaluated at the end of the step (x̃^{n+1})
        q0 = qtilde(v)
        if nz:
            h0 = self.dynamics(t1, z, q0, v)
            Az = np.empty((nz, nz))
            for j in range(nz):
                dz = _SQRT_EPS * max(1.0, abs(z[j]))
                zp = z.copy()
                zp[j] += dz
                dz = zp[j] - z[j]
                Az[:, j] = (self.dynamics(t1, zp, q0, v) - h0) / dz
            Bz = np.empty((nz, nv))
            for i in range(nv):
                vp, dv = _perturb(v, i)
                Bz[:, i] = (self.dynamics(t1, z, qtilde(vp), vp) - h0) / dv
            bh = h0 - Az @ z - Bz @ v
            Minv = np.linalg.inv(np.eye(nz) - dt * Az)
            Z = dt * Minv @ Bz
            bz = Minv @ (z + dt * bh)
        else:
            Z = np.zeros((0, nv))
            bz = np.zeros(0)
        z0 = Z @ v + bz
        g0 = self.output(t1, z0, q0, v)
        c = np.empty(self.dofs.shape)
        for k, i in enumerate(self.dofs):
            vp, dv = _perturb(v, i)
            gp = self.output(t1, Z @ vp + bz, qtilde(vp), vp)
            c[k] = -(gp[k] - g0[k]) / dv
        np.maximum(c, 0.0, out=c)
        b = g0 + c * v[self.dofs]
        return Linearization(self.dofs, c, b, self.effort_limit, Z, bz)


@functools.lru_cache(maxsize=None)
def _no_state(nv):
    """(Z, b_z) of a system without state for nv generalized velocities: read-only empty arrays, shared (a
    linearization is built for every convex solve; these never change)."""
    Z, bz = np.zeros((0, nv)), np.zeros(0)
    Z.flags.writeable = bz.flags.writeable = False
    return Z, bz


def _perturb(v, i):
    vp = v.copy()
    vp[i] += _SQRT_EPS * max(1.0, abs(v[i]))
    return vp, vp[i] - v[i]  # exactly representable increment


class GainLaw(ExternalSystem):
    """Wraps a user callable (t, q, v, dt) -> (idx, c, b, e) of effort-limited linear laws τ_i = clamp(b − c v_i,
    ±e) (CENIC eq. 19–20), given directly in the convex form (the ``gains`` argument of the Simulator)."""

    def __init__(self, fn):
        super().__init__(np.zeros(0, dtype=np.int64))
        self.fn = fn

    def linearize(self, t, z, q, v, dt, qtilde):
        idx, c, b, e = self.fn(t, q, v, dt)
        # copies: the user's function may reuse its buffers, and the gain pool of a solve outlives the next call
        return Linearization(np.array(idx, dtype=np.int64), np.array(c, dtype=float), np.array(b, dtype=float),
                             np.array(e, dtype=float), *_no_state(v.shape[0]))


# ---------------------------------------------------------------------------------------------------------------
# Built-in controllers
# ---------------------------------------------------------------------------------------------------------------


def _per_dof(value, n, name):
    a = np.asarray(value, dtype=float)
    a = a.copy() if a.shape == (n,) else np.broadcast_to(a, (n,)).copy()  # (the common case without broadcast_to)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return a


def _model_effort(system, dofs):
    lim = np.asarray(system.model.effortLimit, dtype=float)[dofs].copy()
    lim[~(lim > 0)] = np.inf  # 0 or missing in the file: unlimited
    return lim


class PiecewiseLinear:
    """Set-points that vary within an advance: values (k, n) at strictly increasing times (k,) [s], linearly
    interpolated and held constant outside [times[0], times[-1]]. A picklable callable t -> (n,)."""

    def __init__(self, times, values):
        self.times = np.array(times, dtype=float).reshape(-1)
        self.values = np.array(values, dtype=float).reshape(self.times.shape[0], -1)
        if not (np.all(np.isfinite(self.times)) and np.all(np.isfinite(self.values))):
            raise ValueError(f"PiecewiseLinear: times and values must be finite, got {times!r}, {values!r}")
        if self.times.shape[0] < 1 or np.any(np.diff(self.times) <= 0):
            raise ValueError(f"PiecewiseLinear: times must be strictly increasing, got {times!r}")

    def __call__(self, t):
        return np.array([np.interp(t, self.times, col) for col in self.values.T])


def _target(value, n, name):
    """A set-point: a constant (n,) array, or a callable of time t [s] returning one (checked when evaluated)."""
    return value if callable(value) else _per_dof(value, n, name)


def _evaluate(target, t, n, name):
    if not callable(target):
        return target
    value = np.asarray(target(t), dtype=float)
    if value.shape != (n,) or not np.all(np.isfinite(value)):
        raise ValueError(f"set-point {name}(t={t!r}) must be a finite array of shape ({n},), got {value!r}")
    return value


class JointController(ExternalSystem):
    """Common part of the joint-space controllers: 1-DOF joints ``dofs`` (v indices; q̇ = v as for revolute and
    prismatic joints), gains K_p, K_d ≥ 0, set-points q_d (default: the system's q0), v_d (default 0) and a
    feed-forward term named by ``FEEDFORWARD`` (default 0). Effort limits default to the model's ``effortLimit``.

    Set-points are constant arrays or callables of time t [s] (e.g. :class:`PiecewiseLinear`) that vary within an
    advance; an implicit step from t to t + δt uses them at t + δt (CENIC §V-C: the law is evaluated at x̃^{n+1})."""

    FEEDFORWARD = "tau_ff"

    def __init__(self, system, dofs, kp, kd, q_d=None, v_d=None, feedforward=None, effort_limit="model",
                 implicit=True):
        dofs = np.asarray(dofs, dtype=np.int64).reshape(-1)
        self.qidx = _q_indices(system, dofs)
        super().__init__(dofs, _model_effort(system, dofs) if isinstance(effort_limit, str) else effort_limit,
                         implicit)
        self.set_gains(kp, kd)
        self.targets = {}
        self.set_target(system.q0[self.qidx] if q_d is None else q_d, 0.0 if v_d is None else v_d,
                        0.0 if feedforward is None else feedforward)

    def set_target(self, q_d=None, v_d=None, feedforward=None):
        """New set-points (None keeps the current one), constant or callables of time; effective at the next step."""
        n = self.dofs.shape[0]
        for name, value in (("q_d", q_d), ("v_d", v_d), (self.FEEDFORWARD, feedforward)):
            if value is not None:
                self.targets[name] = _target(value, n, name)

    def set_gains(self, kp=None, kd=None, effort_limit=None):
        """New gains K_p, K_d ≥ 0 and/or effort limits > 0 (inf: none), per DOF or scalar (domain randomization)."""
        n = self.dofs.shape[0]
        new = {}
        for name, value in (("kp", kp), ("kd", kd)):
            if value is not None:
                new[name] = _per_dof(value, n, name)
                if np.any(new[name] < 0):
                    raise ValueError(f"{name} must be >= 0, got {value!r}")
        if effort_limit is not None:
            lim = np.broadcast_to(np.asarray(effort_limit, dtype=float), (n,)).copy()
            if np.any(np.isnan(lim)) or np.any(lim <= 0):
                raise ValueError(f"effort_limit must be > 0 (inf for none), got {effort_limit!r}")
            self.effort_limit = lim
        kp, kd = new.get("kp", getattr(self, "kp", None)), new.get("kd", getattr(self, "kd", None))
        self.kp, self.kd = kp, kd

    def setpoints(self, t):
        """(q_d, v_d, feed-forward) at time t [s]."""
        g = self.targets
        q_d, v_d, ff = g["q_d"], g["v_d"], g[self.FEEDFORWARD]
        if callable(q_d) or callable(v_d) or callable(ff):
            n = self.dofs.shape[0]
            return _evaluate(q_d, t, n, "q_d"), _evaluate(v_d, t, n, "v_d"), _evaluate(ff, t, n, self.FEEDFORWARD)
        return q_d, v_d, ff

    q_d = property(lambda self: self.targets["q_d"], lambda self, value: self.set_target(q_d=value))
    v_d = property(lambda self: self.targets["v_d"], lambda self, value: self.set_target(v_d=value))

    def get_params(self):
        return dict(super().get_params(), kp=self.kp.copy(), kd=self.kd.copy(),
                    targets={k: v if callable(v) else v.copy() for k, v in self.targets.items()})

    def set_params(self, params):
        super().set_params(params)
        self.kp, self.kd = params["kp"].copy(), params["kd"].copy()
        self.targets = {k: v if callable(v) else v.copy() for k, v in params["targets"].items()}

    def setpoint_vector(self):
        """[q_d, v_d, feed-forward] (3 n,); only for constant set-points."""
        if any(callable(v) for v in self.targets.values()):
            raise ValueError(f"{type(self).__name__} has time-varying set-points, which have no flat form: use "
                             "Simulator.get_state() instead of get_state_vector()")
        return np.concatenate([self.targets[k] for k in ("q_d", "v_d", self.FEEDFORWARD)])

    def set_setpoint_vector(self, x):
        n = self.dofs.shape[0]
        if len(x) != 3 * n:
            raise ValueError(f"{type(self).__name__}: expected {3 * n} set-point values, got {len(x)}")
        self.set_target(x[:n], x[n:2 * n], x[2 * n:])


class JointPD(JointController):
    """τ = K_p (q_d − q) + K_d (v_d − v) + τ_ff on 1-DOF joints. Linearized exactly (docs/physics.md §2.10):
    C = K_d + δt K_p, d = K_p (q_d − q^n) + K_d v_d + τ_ff."""

    def __init__(self, system, dofs, kp, kd, q_d=None, v_d=None, tau_ff=None, effort_limit="model", implicit=True):
        super().__init__(system, dofs, kp, kd, q_d, v_d, tau_ff, effort_limit, implicit)

    def set_target(self, q_d=None, v_d=None, tau_ff=None):
        super().set_target(q_d, v_d, tau_ff)

    tau_ff = property(lambda self: self.targets["tau_ff"], lambda self, value: self.set_target(tau_ff=value))

    def output(self, t, z, q, v):
        q_d, v_d, tau_ff = self.setpoints(t)
        return self.kp * (q_d - q[self.qidx]) + self.kd * (v_d - v[self.dofs]) + tau_ff

    def linearize(self, t, z, q, v, dt, qtilde):
        if not self.implicit:
            return super().linearize(t, z, q, v, dt, qtilde)
        c, b, _ = self.implicit_law(t, q, dt)
        return Linearization(self.dofs, c, b, self.effort_limit, *_no_state(v.shape[0]))

    def implicit_law(self, t, q, dt):
        """(C, d, finite) of the implicit law for a step of size dt [s] from q at time t [s] (set-points at
        t + dt): new arrays C = K_d + δt K_p, d = K_p (q_d − q) + K_d v_d + τ_ff on ``dofs`` (:func:`joint_pd_law`)
        and whether all their entries are finite."""
        q_d, v_d, tau_ff = self.setpoints(t + dt)
        n = self.dofs.shape[0]
        c, b = np.empty(n), np.empty(n)
        finite = joint_pd_law(self.kp, self.kd, q_d, v_d, tau_ff, self.qidx, q, dt, c, b)
        return c, b, finite

    def implicit_laws_full_and_half(self, t, q, dt):
        """:meth:`implicit_law` for a step of size dt [s] (row 0 of C and d, (2, n)) and for dt/2 (row 1), both
        from q at time t [s], in one numba call (:func:`joint_pd_laws_full_and_half`): the two solves of a
        step-doubling attempt that start from x^n. Returns (C, d, finite)."""
        n = self.dofs.shape[0]
        c, b = np.empty((2, n)), np.empty((2, n))
        finite = joint_pd_laws_full_and_half(self.kp, self.kd, self.setpoints(t + dt), self.setpoints(t + 0.5 * dt),
                                             self.qidx, q, dt, c, b)
        return c, b, finite


@njit(cache=True)
def joint_pd_law(kp, kd, q_d, v_d, tau_ff, qidx, q, dt, c, b):
    """The implicit joint PD law of a step of size dt [s] from q (docs/physics.md §2.10), written into c, b (n,):
    c = K_d + δt K_p [N s/m or N m s/rad], b = K_p (q_d − q[qidx]) + K_d v_d + τ_ff [N or N m], per DOF in the
    same floating-point operation order as the numpy expressions it replaces (bit-identical). One numba call
    instead of eight numpy temporaries: this law is evaluated for every convex solve (3 per step-doubling attempt).
    Returns True when every c and b is finite."""
    finite = True
    for i in range(kp.shape[0]):
        c[i] = kd[i] + dt * kp[i]
        b[i] = kp[i] * (q_d[i] - q[qidx[i]]) + kd[i] * v_d[i] + tau_ff[i]
        if not (math.isfinite(c[i]) and math.isfinite(b[i])):
            finite = False
    return finite


@njit(cache=True)
def joint_pd_laws_full_and_half(kp, kd, setpoints_full, setpoints_half, qidx, q, dt, c, b):
    """:func:`joint_pd_law` for a step of size dt [s] with set-points (q_d, v_d, τ_ff) ``setpoints_full`` into
    c[0], b[0] and for dt/2 with ``setpoints_half`` into c[1], b[1] (the same operations: bit-identical to two
    calls). Returns True when every entry is finite."""
    q_d, v_d, tau_ff = setpoints_full
    ok = joint_pd_law(kp, kd, q_d, v_d, tau_ff, qidx, q, dt, c[0], b[0])
    q_d, v_d, tau_ff = setpoints_half
    return joint_pd_law(kp, kd, q_d, v_d, tau_ff, qidx, q, 0.5 * dt, c[1], b[1]) and ok


class JointPID(JointPD):
    """PD plus integral action: z = ∫ (q_d − q) dt, τ = K_p (q_d − q) + K_i z + K_d (v_d − v) + τ_ff.
    Implicit exactly: z^{n+1} = z^n + δt (q_d − q^n − δt v) → C = K_d + δt K_p + δt² K_i,
    d = K_p (q_d − q^n) + K_i (z^n + δt (q_d − q^n)) + K_d v_d + τ_ff."""

    def __init__(self, system, dofs, kp, ki, kd, **kw):
        super().__init__(system, dofs, kp, kd, **kw)
        self.ki = _per_dof(ki, self.dofs.shape[0], "ki")
        if np.any(self.ki < 0):
            raise ValueError(f"ki must be >= 0, got {ki!r}")
        self.nz = self.dofs.shape[0]

    def set_gains(self, kp=None, kd=None, effort_limit=None, ki=None):
        super().set_gains(kp, kd, effort_limit)
        if ki is not None:
            ki = _per_dof(ki, self.dofs.shape[0], "ki")
            if np.any(ki < 0):
                raise ValueError(f"ki must be >= 0, got {ki!r}")
            self.ki = ki

    def get_params(self):
        return dict(super().get_params(), ki=self.ki.copy())

    def set_params(self, params):
        super().set_params(params)
        self.ki = params["ki"].copy()

    def dynamics(self, t, z, q, v):
        return self.setpoints(t)[0] - q[self.qidx]

    def output(self, t, z, q, v):
        return super().output(t, z, q, v) + self.ki * z

    def linearize(self, t, z, q, v, dt, qtilde):
        if not self.implicit:
            return ExternalSystem.linearize(self, t, z, q, v, dt, qtilde)
        nv = v.shape[0]
        q_d, v_d, tau_ff = self.setpoints(t + dt)
        err = q_d - q[self.qidx]
        Z = np.zeros((self.nz, nv))
        Z[np.arange(self.nz), self.dofs] = -dt * dt
        bz = z + dt * err
        c = self.kd + dt * self.kp + dt * dt * self.ki
        b = self.kp * err + self.ki * bz + self.kd * v_d + tau_ff
        return Linearization(self.dofs, c, b, self.effort_limit, Z, bz)


class InverseDynamicsPD(JointController):
    """Inverse-dynamics (computed-torque) PD (CENIC §VII-D1): τ = M(q) v̇_d + k(q, v) on ``dofs`` with
    v̇_d = a_ff + K_p (q_d − q) + K_d (v_d − v) on those DOFs and 0 elsewhere. Nonlinear and coupled: linearized
    exactly from the RNEA derivatives (:meth:`linearize`; only diag(−∂τ/∂v) ≈ M_ii (K_d + δt K_p) enters C).
    Effort limits from the model.

    Keeping only the diagonal makes the off-diagonal part M_ij v̇_d,j explicit: at very high gains the step is
    a Jacobi iteration on M and diverges when ρ(diag(M)⁻¹ offdiag(M)) > 1 (steps then shrink). The bare
    example-robot-data Panda has ρ ≈ 1.2 in a grasp pose; with realistic reflected rotor inertia (armature
    0.1 kg m², ``add_robot(..., armature=...)``) ρ ≈ 0.95 and the step count is flat up to K = 1e6
    (benchmarks/stiff_control.py)."""

    FEEDFORWARD = "a_ff"

    def __init__(self, system, dofs, kp, kd, q_d=None, v_d=None, a_ff=None, effort_limit="model", implicit=True):
        super().__init__(system, dofs, kp, kd, q_d, v_d, a_ff, effort_limit, implicit)
        self.model = system.model
        self.data = system.model.createData()

    def set_target(self, q_d=None, v_d=None, a_ff=None):
        super().set_target(q_d, v_d, a_ff)

    a_ff = property(lambda self: self.targets["a_ff"], lambda self, value: self.set_target(a_ff=value))

    def _acceleration(self, t, q, v):
        """v̇_d (nv,) [rad/s², m/s²] at time t: a_ff + K_p (q_d − q) + K_d (v_d − v) on ``dofs``, 0 elsewhere."""
        q_d, v_d, a_ff = self.setpoints(t)
        a = np.zeros(self.model.nv)
        a[self.dofs] = a_ff + self.kp * (q_d - q[self.qidx]) + self.kd * (v_d - v[self.dofs])
        return a

    def output(self, t, z, q, v):
        return pin.rnea(self.model, self.data, q, v, self._acceleration(t, q, v))[self.dofs]

    def linearize(self, t, z, q, v, dt, qtilde):
        """Exact CENIC eq. 26–29 from one ``pin.computeRNEADerivatives`` at (q̃ = q ⊕ δt v, v, v̇_d): with
        g̃(v) = τ(q̃(v), v, v̇_d(q̃(v), v)) and 1-DOF joints (∂q̃_i/∂v_i = δt, no other q̃ entry moves),

            −∂g̃_i/∂v_i = −δt ∂τ_i/∂q_i − ∂τ_i/∂v_i + M_ii (K_d,i + δt K_p,i)   (i in ``dofs``),

        C = max(0, that), d = g̃(v) + C v on ``dofs``. Replaces 1 + len(dofs) RNEA evaluations of forward
        differences (the base class; still used with ``implicit=False``)."""
        if not self.implicit:
            return super().linearize(t, z, q, v, dt, qtilde)
        t1 = t + dt  # the law at the end of the step (x̃^{n+1}), as in the base class
        q0 = qtilde(v)
        a = self._acceleration(t1, q0, v)
        d = self.data
        pin.computeRNEADerivatives(self.model, d, q0, v, a)
        i = self.dofs
        g0 = d.tau[i]
        c = -dt * d.dtau_dq[i, i] - d.dtau_dv[i, i] + d.M[i, i] * (self.kd + dt * self.kp)
        np.maximum(c, 0.0, out=c)
        b = g0 + c * v[i]
        return Linearization(self.dofs, c, b, self.effort_limit, *_no_state(v.shape[0]))


class JointFriction(ExternalSystem):
    """Coulomb (dry) friction of 1-DOF joints ``dofs`` (v indices): a joint slides against τ_i = −F_i sign(v_i) and
    sticks while the other torques on it stay within ±F_i [N m or N]. In the convex step it is the effort-limited
    gain law of an effort-limited PD without a spring, τ_i = clamp(−C_i v_i, ±F_i) with C_i = F_i / v_s (the same
    Huber potential, docs/physics.md §2.9): convex, implicit, and no step-size limit from the stiff C_i. A sticking
    joint creeps at |v_i| = v_s |τ_other| / F_i ≤ v_s (``stiction_speed``, default 1e-4 rad/s); MuJoCo's
    ``frictionloss`` is the same law. Joints with F_i = 0 are left out of the gain pool."""

    def __init__(self, system, dofs, friction, stiction_speed=1e-4):
        super().__init__(dofs)
        self.qidx = _q_indices(system, self.dofs)
        self.stiction_speed = float(stiction_speed)
        if not (math.isfinite(self.stiction_speed) and self.stiction_speed > 0):
            raise ValueError(f"stiction_speed must be a finite number > 0 [rad/s or m/s], got {stiction_speed!r}")
        self.set_friction(friction)

    def set_friction(self, friction):
        """New Coulomb friction F (per DOF or a scalar, finite, >= 0) [N m or N], from the next step on."""
        f = _per_dof(friction, self.dofs.shape[0], "friction")
        if not np.all(np.isfinite(f)) or np.any(f < 0):
            raise ValueError(f"friction must be finite and >= 0, got {friction!r}")
        self.friction = f
        on = f > 0
        self._pool = (self.dofs[on], f[on] / self.stiction_speed, np.zeros(int(on.sum())), f[on])

    def get_params(self):
        return dict(super().get_params(), friction=self.friction.copy())

    def set_params(self, params):
        super().set_params(params)
        self.set_friction(params["friction"])

    def output(self, t, z, q, v):
        return -self.friction * np.clip(v[self.dofs] / self.stiction_speed, -1.0, 1.0)

    def linearize(self, t, z, q, v, dt, qtilde):
        if not self.implicit:
            return super().linearize(t, z, q, v, dt, qtilde)
        idx, c, b, e = self._pool  # replaced, never written in place, by set_friction
        return Linearization(idx, c, b, e, *_no_state(v.shape[0]))


def _q_indices(system, dofs):
    """q indices of 1-DOF joints given their v indices (revolute, prismatic: q̇ = v)."""
    m = system.model
    out = np.empty(dofs.shape, dtype=np.int64)
    for k, i in enumerate(dofs):
        j = next((j for j in range(1, m.njoints) if m.idx_vs[j] <= i < m.idx_vs[j] + m.nvs[j]), None)
        if j is None:
            raise ValueError(f"dof index {i} out of range for nv={m.nv}")
        if not (m.nqs[j] == 1 and m.nvs[j] == 1):
            raise ValueError(f"dof {i} belongs to joint {m.names[j]!r} ({m.joints[j].shortname()}), which is not a "
                             "1-DOF joint; joint controllers need revolute or prismatic joints")
        out[k] = m.idx_qs[j]
    return out


# ---------------------------------------------------------------------------------------------------------------
# The set of external systems of a simulation
# ---------------------------------------------------------------------------------------------------------------


class ExternalSystems:
    """All external systems of a simulation, with their states concatenated into one vector z."""

    def __init__(self, systems, nv):
        self.systems = list(systems)
        for s in self.systems:
            if not isinstance(s, ExternalSystem):
                raise ValueError(f"external systems must be ExternalSystem instances, got {s!r}")
            if s.dofs.size and (s.dofs.min() < 0 or s.dofs.max() >= nv):
                raise ValueError(f"{type(s).__name__}: dofs {s.dofs} out of range for nv={nv}")
        self.offsets = np.cumsum([0] + [s.nz for s in self.systems])
        self.nz = int(self.offsets[-1])
        self.nv = nv
        self.last_bounds = [(0, 0)] * len(self.systems)  # each system's slice of the last gain pool
        self._slices = [(s, int(a), int(b)) for s, a, b in zip(self.systems, self.offsets[:-1], self.offsets[1:])]
        self._Z0, self._bz0 = np.zeros((0, nv)), np.zeros(0)  # the state update without states (never written)
        # one plain JointPD (not a subclass): its gain pool comes straight from JointPD.implicit_law (linearize)
        self._joint_pd = self.systems[0] if len(self.systems) == 1 and type(self.systems[0]) is JointPD else None

    def initial_state(self):
        return np.concatenate([np.asarray(s.initial_state(), dtype=float) for s in self.systems]) if self.nz else \
            np.zeros(0)

    def linearize(self, t, z, q, v, dt, qtilde):
        """:class:`~cenic_gym.icf.GainPool` (dof, c, b, e) of all systems and the implicit state update (Z (nz, nv),
        b_z). Called for every convex solve, so it stays lean: one finiteness check over the pool (the offending
        system is looked up only on failure) and no state-update arrays to fill when no system has a state."""
        pd = self._joint_pd
        if pd is not None and pd.implicit:  # the common case, kept lean: no Linearization, no copies
            c, b, finite = pd.implicit_law(t, q, dt)
            if finite:  # else the general path below names the system and the values
                self.last_bounds = [(0, c.shape[0])]
                return GainPool(pd.dofs, c, b, pd.effort_limit), self._Z0, self._bz0
        systems = self.systems
        if self.nz:
            lins = [s.linearize(t, z[a:b], q, v, dt, qtilde) for s, a, b in self._slices]
        else:
            lins = [s.linearize(t, z, q, v, dt, qtilde) for s in systems]
        if not lins:
            self.last_bounds = []
            return GainPool(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)), self._Z0, self._bz0
        if len(lins) == 1:  # no copies: linearizations are the caller's to keep (ExternalSystem.linearize)
            p = lins[0]
            gains = GainPool(np.asarray(p.idx, dtype=np.int64), np.asarray(p.c, dtype=float),
                             np.asarray(p.b, dtype=float), np.asarray(p.e, dtype=float))
        else:
            gains = GainPool(np.concatenate([p.idx for p in lins]).astype(np.int64, copy=False),
                             np.concatenate([p.c for p in lins]).astype(float, copy=False),
                             np.concatenate([p.b for p in lins]).astype(float, copy=False),
                             np.concatenate([p.e for p in lins]).astype(float, copy=False))
        if self.nz:
            Z = np.zeros((self.nz, self.nv))
            bz = np.zeros(self.nz)
            for lin, (_, a, b) in zip(lins, self._slices):
                if b > a:
                    Z[a:b] = lin.Z
                    bz[a:b] = lin.bz
        else:
            Z, bz = self._Z0, self._bz0
        # a NaN or ±inf anywhere makes these dot products non-finite (an overflow only sends them to the exact check)
        c, b = gains.c, gains.b
        if not (math.isfinite(np.dot(c, c) + np.dot(b, b)) and (not self.nz or math.isfinite(np.dot(bz, bz)))):
            for s, lin in zip(systems, lins):
                if not (np.all(np.isfinite(lin.c)) and np.all(np.isfinite(lin.b)) and np.all(np.isfinite(lin.bz))):
                    raise FloatingPointError(
                        f"{type(s).__name__} gave a non-finite linearization at t={t:.6g} s (C={lin.c!r}, "
                        f"d={lin.b!r}, b_z={lin.bz!r}): check its output/dynamics for NaN or inf")
        if len(lins) == 1:
            self.last_bounds = [(0, gains.dof.shape[0])]
        else:
            bounds, k = [], 0
            for p in lins:
                bounds.append((k, k + p.idx.shape[0]))
                k += p.idx.shape[0]
            self.last_bounds = bounds
        return gains, Z, bz

    def linearize_full_and_half(self, t, z, q, v, dt, qtilde_full, qtilde_half):
        """:meth:`linearize` for the two solves of a step-doubling attempt that start from (t, z, q, v): the full
        step of size dt [s] (``qtilde_full``) and the first half step (dt/2, ``qtilde_half``). Returns (gain pool of
        the full step, gain pool of the half step, Z, b_z of the half step). A single plain JointPD takes one
        numba call for both (:meth:`JointPD.implicit_laws_full_and_half`)."""
        pd = self._joint_pd
        if pd is not None and pd.implicit:
            c, b, finite = pd.implicit_laws_full_and_half(t, q, dt)
            if finite:  # else the general path names the system and the values
                self.last_bounds = [(0, c.shape[1])]
                return (GainPool(pd.dofs, c[0], b[0], pd.effort_limit), GainPool(pd.dofs, c[1], b[1], pd.effort_limit),
                        self._Z0, self._bz0)
        gains_full, _, _ = self.linearize(t, z, q, v, dt, qtilde_full)
        gains_half, Z, bz = self.linearize(t, z, q, v, 0.5 * dt, qtilde_half)
        return gains_full, gains_half, Z, bz

    def outputs(self, t, z, q, v):
        """Generalized force (nv,) of all systems at (z, q, v), effort limits applied (for analysis)."""
        tau = np.zeros(self.nv)
        for s, a, b in zip(self.systems, self.offsets[:-1], self.offsets[1:]):
            np.add.at(tau, s.dofs, np.clip(s.output(t, z[a:b], q, v), -s.effort_limit, s.effort_limit))
        return tau
