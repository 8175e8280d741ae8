"""The CENIC integrator: error-controlled ICF steps (CENIC §V, Alg. 1; physics-notes §4).

One ICF step x^{n+1} = ICF(x^n; δt) (CENIC eq. 21) is: geometry and dynamics at x^n, the convex problem
A = M + δt D, r = M v^n − δt (k + D·0 − τ_explicit), solved by :func:`cenic_gym.solver.solve`, then
q^{n+1} = q^n ⊕ δt v^{n+1} (``pin.integrate``, quaternions stay unit).

Error control (§V-A): first-order step doubling — the full step and two half steps; the error estimate is
e = ‖q^{n+1} − q̂^{n+1}‖_∞ on the raw generalized positions (S = I: metres, radians and quaternion components,
as in Drake; physics-notes §4.4), and the half-step result is kept. The step size follows CENIC Alg. 1 with the
paper's constants and Drake's safeguards (§4.5), p = 2. Fixed-step mode runs plain ICF steps (discrete Lagged ICF).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields

import numpy as np
import pinocchio as pin
from numba import njit

from . import solver as slv
from .contact import DEFAULT_MARGIN, ContactQuery, compute_kinematics
from .icf import contact_impulse, contact_lagged_params

# Step-size controller constants (CENIC §V-F)
K_INIT = 0.1
K_SAFE = 0.9
K_LOW = 0.9
K_HIGH = 1.2
K_MAX_GROW = 5.0
K_MIN_SHRINK = 0.1
ERROR_ORDER = 2  # step doubling of a first-order method: local error estimate O(δt²)
NEWTON_KAPPA = 1.0e-3  # ε_tol = max(κ ε_acc, 1e-8)  (CENIC eq. 34)


@njit(cache=True)
def mass_matrix_terms(M_upper):
    """Symmetric M from Pinocchio's upper triangle (crba), its diagonal, and the scaling D = diag(M)^(-1/2)."""
    n = M_upper.shape[0]
    M = np.empty((n, n))
    diag = np.empty(n)
    dscale = np.empty(n)
    for i in range(n):
        for j in range(i, n):
            M[i, j] = M_upper[i, j]
            M[j, i] = M_upper[i, j]
        diag[i] = M_upper[i, i]
        dscale[i] = 1.0 / math.sqrt(M_upper[i, i])
    return M, diag, dscale


class SimulationError(RuntimeError):
    """The integrator cannot continue: accuracy unreachable above the minimum step, or a non-finite state."""


@dataclass
class IntegratorStats:
    """Counters of an integration; wall times in seconds."""

    accepted: int = 0
    rejected: int = 0
    solves: int = 0
    solver_failures: int = 0
    newton_iters: int = 0
    line_search_iters: int = 0
    factorizations: int = 0
    geometry_queries: int = 0
    min_signed_distance: float = math.inf  # most negative contact φ [m] over accepted states (max penetration)
    min_dt: float = math.inf
    max_dt: float = 0.0
    wall_geometry: float = 0.0
    wall_dynamics: float = 0.0
    wall_solver: float = 0.0
    wall_total: float = 0.0
    sim_time: float = 0.0

    def copy(self):
        return IntegratorStats(**{f.name: getattr(self, f.name) for f in fields(self)})

    def since(self, earlier):
        """Counters accumulated since ``earlier`` (min/max dt kept from self)."""
        out = self.copy()
        for f in fields(self):
            if f.name not in ("min_dt", "max_dt", "min_signed_distance"):
                setattr(out, f.name, getattr(self, f.name) - getattr(earlier, f.name))
        return out

    def as_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class StateCache:
    """Everything an ICF step needs from x^n that does not depend on δt (geometry, dynamics, lagged terms)."""

    query: ContactQuery
    q: np.ndarray = None
    v: np.ndarray = None
    M: np.ndarray = None
    nle: np.ndarray = None
    tau: np.ndarray = None
    dscale: np.ndarray = None
    contacts: object = None
    mu: np.ndarray = None
    fn0: np.ndarray = None
    w: np.ndarray = None
    limit_c: np.ndarray = None
    limit_m: np.ndarray = None
    t: float = 0.0
    valid: bool = False


def adjust_step_size(dt, err, accuracy, min_step, max_step):
    """CENIC Alg. 1 AdjustStepSize with the dead band (erratum E9) and Drake's safeguards.

    Returns (new_dt, accepted)."""
    if not math.isfinite(err):
        return max(K_MIN_SHRINK * dt, min_step), False
    accepted = err <= accuracy
    if err == 0.0:
        new = K_MAX_GROW * dt
    else:
        new = K_SAFE * dt * (accuracy / err) ** (1.0 / ERROR_ORDER)
    if K_LOW * dt < new < K_HIGH * dt:  # dead band
        new = dt
    if new > dt:
        new = min(new, K_MAX_GROW * dt)
    elif new < dt:
        if accepted:
            new = dt
        else:
            new = max(min(new, K_LOW * dt), K_MIN_SHRINK * dt)
    return min(max(new, min_step), max_step), accepted


class CenicIntegrator:
    """Error-controlled (or fixed-step) ICF integration of a :class:`~cenic_gym.model.MultibodySystem`.

    accuracy:  ε_acc, the target local position error per step [m or rad] (CENIC §V-E).
    max_step:  δt_max [s]; the first step is K_INIT δt_max.
    fixed_step: None for error control, else δt [s] of plain ICF steps.
    min_step:  below this δt a rejected step raises :class:`SimulationError` instead of looping.
    generalized_force: optional callable (t, q, v) -> τ (nv,) applied explicitly over each step [N, N m].
    gains: optional callable (t, q, v, dt) -> (idx, c, b, e): effort-limited linear control laws
           τ_i = clamp(b − c v_i, ±e) integrated implicitly (CENIC eq. 19–20).
    """

    def __init__(self, system, accuracy=1e-3, max_step=0.1, fixed_step=None, min_step=1e-9,
                 contact_margin=DEFAULT_MARGIN, hessian_reuse=False, newton_kappa=NEWTON_KAPPA,
                 generalized_force=None, gains=None):
        self.system = system
        self.model = system.model
        self.data = system.model.createData()
        self.accuracy = float(accuracy)
        self.max_step = float(max_step)
        self.fixed_step = None if fixed_step is None else float(fixed_step)
        self.min_step = float(min_step)
        self.hessian_reuse = bool(hessian_reuse)
        self.newton_kappa = float(newton_kappa)
        self.generalized_force = generalized_force
        self.gains = gains
        self.vs = float(system.stiction_tolerance)
        self.damping = np.asarray(system.model.damping, dtype=float).copy()
        self.has_damping = bool(self.damping.any())  # implicit joint damping: A = M + δt D
        self.start = StateCache(ContactQuery(system, contact_margin))
        self.mid = StateCache(ContactQuery(system, contact_margin))
        nv = system.nv
        self._L = np.zeros((nv, nv))
        self._stats = np.zeros(4, dtype=np.int64)
        self._no_gain = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
        self.stats = IntegratorStats()
        self.q = system.q0.copy()
        self.v = system.v0.copy()
        self.t = 0.0
        self.dt = self.fixed_step if self.fixed_step is not None else K_INIT * self.max_step
        self.last_solution = None  # (cache, v, dt) of the last accepted solve, for contact results
        self.history = None  # list of (t, dt, accepted) when recording

    # ----------------------------------------------------------------------------------------------------------
    def invalidate(self):
        self.start.valid = False
        self.last_solution = None

    def _prepare(self, cache, q, v, t, lookahead):
        """Geometry, dynamics and lagged contact terms at (q, v); speculative contacts for ``lookahead`` [s]."""
        s = self.system
        m, d = self.model, self.data
        t0 = time.perf_counter()
        Jw = compute_kinematics(m, d, q)
        cs = cache.query.query(q, v, d, Jw, lookahead)
        t1 = time.perf_counter()
        cache.M, diag, cache.dscale = mass_matrix_terms(pin.crba(m, d, q))
        cache.nle = pin.nonLinearEffects(m, d, q, v).copy()
        cache.tau = None if self.generalized_force is None else np.asarray(self.generalized_force(t, q, v), dtype=float)
        n = cs.n
        cache.mu = np.empty(n)
        cache.fn0 = np.empty(n)
        cache.w = np.empty(n)
        contact_lagged_params(v, cs.Jc, cs.cols, cs.ncols, cs.normal, cs.phi, cs.stiffness, cs.dissipation,
                              cs.mu_static, cs.mu_dynamic, 1.0 / diag, self.vs, n, cache.mu, cache.fn0, cache.w)
        cache.limit_c = q[s.limit_q]
        cache.limit_m = diag[s.limit_v]  # W_ii ≈ 1/M_jj (Drake; erratum E3)
        cache.contacts = cs
        cache.q = q
        cache.v = v
        cache.t = t
        cache.valid = True
        t2 = time.perf_counter()
        self.stats.geometry_queries += 1
        self.stats.wall_geometry += t1 - t0
        self.stats.wall_dynamics += t2 - t1

    def _icf(self, cache, dt, v_guess):
        """One ICF step of size dt from the cached state. Returns (q_next, v_next, converged)."""
        s = self.system
        t0 = time.perf_counter()
        A = cache.M + np.diag(dt * self.damping) if self.has_damping else cache.M
        rhs = cache.nle if cache.tau is None else cache.nle - cache.tau
        r = cache.M @ cache.v - dt * rhs
        gidx, gc, gb, ge = self._no_gain if self.gains is None else self.gains(cache.t, cache.q, cache.v, dt)
        cs = cache.contacts
        v = np.array(v_guess, dtype=float)
        slv.solve(v, A, r, cache.dscale, dt, self.vs,
                  cs.Jc, cs.cols, cs.ncols, cs.normal, cs.phi, cs.stiffness, cs.dissipation, cache.mu, cache.fn0,
                  cache.w, cs.n, s.limit_v, cache.limit_c, s.limit_lower, s.limit_upper, cache.limit_m,
                  gidx, gc, gb, ge, self._tolerance(), self.hessian_reuse, self._L, self._stats)
        st = self.stats
        st.solves += 1
        st.newton_iters += int(self._stats[slv.NEWTON_ITERS])
        st.line_search_iters += int(self._stats[slv.LS_ITERS])
        st.factorizations += int(self._stats[slv.FACTORIZATIONS])
        ok = bool(self._stats[slv.CONVERGED])  # converged implies finite (the solver checks every norm)
        if not ok:
            st.solver_failures += 1
        q_next = self.integrate(cache.q, v, dt) if ok else cache.q
        st.wall_solver += time.perf_counter() - t0
        return q_next, v, ok

    def integrate(self, q, v, dt):
        """q^{n+1} = q^n ⊕ δt v (CENIC eq. 12); quaternions stay unit (exponential map)."""
        return pin.integrate(self.model, q, dt * v)

    def _tolerance(self):
        if self.fixed_step is not None:
            return 1e-8
        return max(self.newton_kappa * self.accuracy, 1e-8)

    # ----------------------------------------------------------------------------------------------------------
    def step(self, t_end):
        """Attempt steps until one is accepted (or t_end is reached). Returns the accepted δt."""
        while True:
            remaining = t_end - self.t
            dt_nominal = self.dt
            dt = min(dt_nominal, remaining)
            clipped = dt < dt_nominal
            if not self.start.valid:
                self._prepare(self.start, self.q, self.v, self.t, dt)
                if self.start.contacts.n:
                    self.stats.min_signed_distance = min(self.stats.min_signed_distance,
                                                         float(self.start.contacts.phi.min()))
            if self.fixed_step is not None:
                q1, v1, ok = self._icf(self.start, dt, self.v)
                if not ok:
                    raise SimulationError(
                        f"ICF solve failed at t={self.t:.6g} s with fixed_step={dt:.3g} s (non-finite state or Newton "
                        f"did not converge in {slv.MAX_NEWTON_ITERATIONS} iterations)")
                self._accept(q1, v1, dt, self.start)
                return dt
            q_full, v_full, ok_full = self._icf(self.start, dt, self.v)
            ok = ok_full
            err = math.inf
            if ok_full:
                q_half, v_half, ok_h1 = self._icf(self.start, 0.5 * dt, 0.5 * (self.v + v_full))
                ok = ok_h1
                if ok_h1:
                    self._prepare(self.mid, q_half, v_half, self.t + 0.5 * dt, 0.5 * dt)
                    q1, v1, ok_h2 = self._icf(self.mid, 0.5 * dt, v_full)
                    ok = ok_h2
                    if ok_h2:
                        err = float(np.max(np.abs(q1 - q_full))) if q1.size else 0.0
            new_dt, accepted = adjust_step_size(dt, err, self.accuracy, self.min_step, self.max_step)
            if self.history is not None:
                self.history.append((self.t, dt, accepted, err))
            if accepted:
                self._accept(q1, v1, dt, self.mid)
                self.dt = max(new_dt, dt_nominal) if clipped else new_dt
                return dt
            self.stats.rejected += 1
            if dt <= self.min_step * (1 + 1e-12):
                reason = "non-finite solve" if not ok else f"error {err:.3g} > accuracy {self.accuracy:.3g}"
                raise SimulationError(
                    f"CENIC cannot meet accuracy={self.accuracy:g} at t={self.t:.6g} s: {reason} at the minimum step "
                    f"min_step={self.min_step:g} s")
            self.dt = new_dt

    def _accept(self, q1, v1, dt, cache):
        if not math.isfinite(float(q1 @ q1 + v1 @ v1)):
            raise SimulationError(f"non-finite state after an accepted step at t={self.t:.6g} s")
        self.last_solution = (cache, v1.copy(), dt if cache is self.start else 0.5 * dt)
        self.q = q1
        self.v = v1
        self.t += dt
        self.start.valid = False
        st = self.stats
        st.accepted += 1
        st.min_dt = min(st.min_dt, dt)
        st.max_dt = max(st.max_dt, dt)
        st.sim_time += dt

    def advance_to(self, t_end):
        t0 = time.perf_counter()
        try:
            while self.t < t_end - 1e-14 * max(1.0, abs(t_end)):
                self.step(t_end)
            self.t = max(self.t, t_end)  # the last step is clipped to land on t_end; absorb round-off
        finally:
            self.stats.wall_total += time.perf_counter() - t0

    # ----------------------------------------------------------------------------------------------------------
    def contact_results(self):
        """Per-contact results of the last accepted (half) step: dict of point (n,3) [m], normal (n,3), phi (n,)
        [m], force (n,3) [N] on body B (world frame; −force acts on A), geom_a, geom_b."""
        if self.last_solution is None:
            z = np.zeros((0, 3))
            return dict(point=z, normal=z, phi=np.zeros(0), force=z, geom_a=np.zeros(0, int), geom_b=np.zeros(0, int))
        cache, v, dt = self.last_solution
        cs = cache.contacts
        force = np.zeros((cs.n, 3))
        vc = np.zeros((cs.n, 3))
        slv.constraint_velocities(v, cs.Jc, cs.cols, cs.ncols, cs.n, vc)
        for i in range(cs.n):
            contact_impulse(vc[i], cs.normal[i], dt, cs.phi[i], cs.stiffness[i], cs.dissipation[i], cache.mu[i],
                            cache.fn0[i], cache.w[i], self.vs, force[i])
        force /= dt
        return dict(point=cs.point.copy(), normal=cs.normal.copy(), phi=cs.phi.copy(), force=force,
                    geom_a=cs.geom_a.copy(), geom_b=cs.geom_b.copy())
