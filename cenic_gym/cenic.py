"""The CENIC integrator: error-controlled ICF steps (CENIC §V, Alg. 1; docs/physics.md §4).

One ICF step x^{n+1} = ICF(x^n; δt) (CENIC eq. 21) is: geometry and dynamics at x^n, the convex problem
A = M + δt D, r = M v^n − δt (k + D·0 − τ_explicit), solved by :func:`cenic_gym.solver.solve`, then
q^{n+1} = q^n ⊕ δt v^{n+1} (:func:`integrate_q` in numba, the same map as ``pin.integrate``, which is used for joint
types it does not cover; quaternions stay unit).

Error control (§V-A): first-order step doubling — the full step and two half steps; the error estimate is
e = ‖q^{n+1} − q̂^{n+1}‖_∞ on the raw generalized positions (S = I: metres, radians and quaternion components,
as in Drake; docs/physics.md §4.4), and the half-step result is kept. The step size follows CENIC Alg. 1 with the
paper's constants and Drake's safeguards (§4.5), p = 2. Fixed-step mode runs plain ICF steps (discrete Lagged ICF).
Under error control each solve takes its friction bounds from the step's own normal impulses where the lagged ones
disagree (:func:`cenic_gym.solver.solve_coulomb`, issue 10: Coulomb's law at impacts).

Three loops take the same steps: :meth:`CenicIntegrator.step` (Python; every option), :func:`advance_free_bodies`
(compiled; free bodies with closed-form dynamics) and :meth:`CenicIntegrator._advance_articulated` (Pinocchio around
two kernels per attempt, :func:`attempt_from_start` and :func:`attempt_from_mid`; robots with at most one joint PD).
"""
from __future__ import annotations

from collections import namedtuple
import math
import time
from dataclasses import dataclass, fields

import numpy as np
import pinocchio as pin
from numba import njit
from numba.experimental import structref

from . import solver as slv
from .contact import DEFAULT_MARGIN, ContactQuery, _query_kernel, compute_kinematics_and_inertia, query_contacts
from .icf import ContactPool, CouplerPool, GainPool, LimitPool, contact_impulse, contact_lagged_params
from .errors import AccuracyNotMetError, SimulationError, SolverFailure  # noqa: F401  (re-exported)
from .external import ExternalSystems, GainLaw, joint_pd_law
from .free_bodies import free_body_dynamics, free_body_joints, free_body_parameters
from .model import is_free_body_joint

# Step-size controller constants (CENIC §V-F)
K_INIT = 0.1
K_SAFE = 0.9
K_LOW = 0.9
K_HIGH = 1.2
K_MAX_GROW = 5.0
K_MIN_SHRINK = 0.1
ERROR_ORDER = 2  # step doubling of a first-order method: local error estimate O(δt²)
NEWTON_KAPPA = 1.0e-3  # ε_tol = max(κ ε_acc, 1e-8)  (CENIC eq. 34)
K_PERIOD_FLOOR = 0.5  # the period-start predictor shortens a period's first step by at most 2× (period_start_step)
K_STRETCH = 1.01  # an attempt stretches by up to 1 % to land on t_end instead of leaving a sliver (attempt_step_size)
# attempts per call of the compiled free-body loop: compiled code cannot be interrupted, so a long advance_to returns
# to Python (Ctrl-C) between calls of at most this many attempts (~6 ms for a ball, ~0.8 s for the 20-body clutter)
COMPILED_ATTEMPTS = 500

# Named slots of the integrator's flat records. They stay flat arrays and tuples, which the compiled kernels take
# as they are; these names are what the code reads them by.
# the state-term buffers of a prepared state (StateCache.out, StateArgs.out; written by state_terms)
OUT_M, OUT_DSCALE, OUT_MU, OUT_FN0, OUT_W, OUT_LIMIT_C, OUT_LIMIT_M, OUT_COUPLER_C, OUT_COUPLER_M = range(9)
# the solver totals (SolveWorkspace.totals, int64), accumulated over every solve
TOT_SOLVES, TOT_NEWTON, TOT_LINE_SEARCH, TOT_FACTORIZATIONS, TOT_FAILURES, TOT_FRICTION_SOLVES = range(6)
# the compiled loop's (advance_free_bodies) clock [s], counters (int64) and step window; the Python loop's window
# holds the first three of the latter
CLOCK_T, CLOCK_DT, CLOCK_PERIOD_DT = range(3)
COUNT_ACCEPTED, COUNT_REJECTED, COUNT_QUERIES, COUNT_LAST_CONTACTS = range(4)
WIN_MIN_DT, WIN_MAX_DT, WIN_MIN_PHI, WIN_SIM_TIME, WIN_LAST_DT, WIN_ERROR, WIN_TOL = range(7)


@njit(cache=True)
def period_start_step(dt, period_dt):
    """Period-start predictor: the first step size [s] of a control period whose inputs (controller set-points)
    just changed, from the nominal next step ``dt`` [s] and ``period_dt`` [s], the step size the controller
    (:func:`adjust_step_size`) proposed after the first accepted step of the previous control period.

    What: min(dt, max(period_dt, K_PERIOD_FLOOR·dt)). The first steps of consecutive control periods form their
    own error-controlled sequence; the steps inside a period (set-points held) form the usual one.
    Why: with constant set-points the error per step falls as the controllers settle and the controller grows δt
    (dead band, growth up to K_MAX_GROW); the next set-point change then meets that grown step and the error of
    the period's first attempt jumps above ε. Measured (``benchmarks/step_size_analysis.py``, ε = 1e-3, before
    this rule, 300 env steps): CenicQuadruped-v0 random actions 1.24 of 1.53 rejections per env step were first
    attempts of a period, whose δt was a median 1.65× the previous period's first accepted δt; CenicFranka-v0
    random: all 0.96 rejections per env step were first attempts (1.32×); after: 0.41 and 0.32 (docs/performance.md,
    "Step-size control and rejections"). The acceptance test (e ≤ ε, step doubling, the
    half-step result kept) is unchanged: this only chooses the size of the first attempt.
    Floor: the result is at least K_PERIOD_FLOOR·dt. The error estimate of one step is a noisy guide where contact
    sets change: after a reset of CenicSuction-v0 (random actions) the first 5 ms steps of the first periods had
    e/ε ≈ 0.4–0.7 while 50 ms steps were accepted without the predictor, so an unbounded memory held the first
    steps near 5 ms for seven periods (1.02 → 1.11 attempts per env step over 300 steps); with the floor 0.5:
    1.03, while Go1 keeps most of its gain (10.72 → 10.04 attempts unbounded, 10.18 with the floor)."""
    return min(dt, max(period_dt, K_PERIOD_FLOOR * dt))


@njit(cache=True)
def state_terms(M_upper, v, q, nc, vs, state):
    """Everything of x^n the convex problems of all step sizes share, written into ``state.out``
    (:class:`StateArgs`) from its first nc contacts.

    out = (M (symmetrized from Pinocchio's upper triangle), D = diag(M)^(-1/2), the lagged contact terms μ, f_n0
    and Delassus estimate w (ICF §VI), the limit pool's c^n and m = 1/W_ii ≈ M_jj (erratum E3), the coupler
    pool's c^n = q0 − ρ q1 − offset and m = 1/(1/M_00 + ρ²/M_11) (docs/physics.md §2.8)). The contacts come from
    the state's pool (its query's buffers) and (μ_s, μ_d), the limit and coupler indices from ``state.static``.
    Each field is read where it is unpacked: numba then counts its arrays once, not once more per tuple."""
    pool = state.contacts
    Jc, cols, ncols, normal, phi, k, d = pool.Jc, pool.cols, pool.ncols, pool.normal, pool.phi0, pool.k, pool.d
    mu_s, mu_d = state.friction
    limit_q, limit_v, cpl_q0, cpl_q1, cpl_v0, cpl_v1, cpl_ratio, cpl_offset = state.static
    M, dscale, mu, fn0, w, lc, lm, kc, km = state.out
    n = M_upper.shape[0]
    minv = np.empty(n)
    for i in range(n):
        for j in range(i, n):
            M[i, j] = M_upper[i, j]
            M[j, i] = M_upper[i, j]
        minv[i] = 1.0 / M_upper[i, i]
        dscale[i] = 1.0 / math.sqrt(M_upper[i, i])
    contact_lagged_params(v, Jc, cols, ncols, normal, phi, k, d, mu_s, mu_d, minv, vs, nc, mu, fn0, w)
    for i in range(limit_q.shape[0]):
        lc[i] = q[limit_q[i]]
        lm[i] = M_upper[limit_v[i], limit_v[i]]
    for i in range(cpl_q0.shape[0]):
        rho = cpl_ratio[i]
        kc[i] = q[cpl_q0[i]] - rho * q[cpl_q1[i]] - cpl_offset[i]
        km[i] = 1.0 / (minv[cpl_v0[i]] + rho * rho * minv[cpl_v1[i]])


@njit(cache=True)
def prepare_kernel(q, v, Jw, M_upper, lookahead, vs, state):
    """One numba call per state: the contact query (:func:`cenic_gym.contact._query_kernel`) and, unless some
    pairs need coal (then the caller finishes those and calls :func:`state_terms`), the state terms, into the
    buffers of ``state`` (:class:`StateArgs`). Returns (number of contacts, number of pairs left to coal, smallest
    signed distance φ [m] (inf if none))."""
    n, n_fallback = _query_kernel(q, v, Jw, lookahead, state)
    phi = state.contacts.phi0  # the query's buffer at full capacity: its first n are this query's
    phi_min = math.inf
    for i in range(n):
        phi_min = min(phi_min, phi[i])
    if n_fallback == 0:
        state_terms(M_upper, v, q, n, vs, state)
    return n, n_fallback, phi_min


INTEGRATE_VECTOR, INTEGRATE_FREE_BODY = 0, 1


@njit(cache=True)
def integrate_q(q, v, dt, kind, iq, iv, nq, out):
    """out = q ⊕ δt v (CENIC eq. 12) for vector-space joints (q̇ = v: revolute, prismatic, translation) and free
    bodies (:func:`~cenic_gym.model.free_body_joint`: p += δt v_world, quaternion (x, y, z, w) ← quat ⊗ exp(δt ω_body),
    renormalised) — the same maps as ``pin.integrate`` for these joints."""
    for j in range(kind.shape[0]):
        a = iq[j]
        b = iv[j]
        if kind[j] == INTEGRATE_VECTOR:
            for i in range(nq[j]):
                out[a + i] = q[a + i] + dt * v[b + i]
        else:
            for i in range(3):
                out[a + i] = q[a + i] + dt * v[b + i]
            wx, wy, wz = dt * v[b + 3], dt * v[b + 4], dt * v[b + 5]
            th = math.sqrt(wx * wx + wy * wy + wz * wz)
            if th < 1e-6:
                sc = 0.5 - th * th / 48.0
                cc = 1.0 - th * th / 8.0
            else:
                sc = math.sin(0.5 * th) / th
                cc = math.cos(0.5 * th)
            ex, ey, ez, ew = sc * wx, sc * wy, sc * wz, cc
            x, y, z, w = q[a + 3], q[a + 4], q[a + 5], q[a + 6]
            rx = w * ex + x * ew + y * ez - z * ey
            ry = w * ey - x * ez + y * ew + z * ex
            rz = w * ez + x * ey - y * ex + z * ew
            rw = w * ew - x * ex - y * ey - z * ez
            n = math.sqrt(rx * rx + ry * ry + rz * rz + rw * rw)
            out[a + 3] = rx / n
            out[a + 4] = ry / n
            out[a + 5] = rz / n
            out[a + 6] = rw / n


def pool_args(pool):
    """A constraint pool as the plain tuple of its fields, for a call into the kernels: numba types a namedtuple
    argument ~1 µs slower per call than a tuple (measured: a kernel call with the four pools, 24 → 31 µs on the
    Franka scene), and the kernels name the fields again at their entry (:func:`icf_step`)."""
    return tuple(pool)




# -- what the kernels keep between calls --------------------------------------------------------------------------
# numba types and unboxes every array a Python call passes, one by one (~50–100 ns each, in tuples too). The arrays
# that stay the same from call to call travel in two structrefs, each typed and unboxed at once (~0.5 µs): the
# integrator's solve workspace and the buffers of each cached state (Go1: the full-and-half call's dispatch
# 3.3 → 2.2 µs; docs/performance.md, "The per-state evaluation").


@structref.register
class SolveWorkspaceType(slv.FieldsType):
    pass


class SolveWorkspace(structref.StructRefProxy):
    """The integrator's arrays every convex solve reads or writes, as one kernel argument (:func:`new_solve_workspace`):
    damping (n_v,) [N s/m, N m s/rad] (A = M + δt D), L (n_v, n_v) the Hessian factor's workspace and blocks its
    partition (:func:`cenic_gym.solver.factor_blocks`), stats (4,) one solve's counters and totals (6,) the
    integration's (:func:`icf_step`), plan the joint integration plan (:func:`integrate_q`), friction_tol (rtol,
    atol) of :func:`cenic_gym.solver.solve_coulomb`, fn_work (2, capacity) the friction bounds [N] of the full and
    first half step: references to the integrator's arrays, not copies; and the workspace's own arrays, A (n_v, n_v)
    and r (n_v,) of the step's problem and newton, the solves' (:class:`~cenic_gym.solver.NewtonWorkspace`). Not
    picklable (rebuilt after a copy)."""


structref.define_proxy(SolveWorkspace, SolveWorkspaceType,
                       ["damping", "L", "blocks", "stats", "totals", "plan", "friction_tol", "fn_work", "A", "r",
                        "newton"])


@njit(cache=True)
def new_solve_workspace(damping, L, blocks, stats, totals, plan, friction_tol, fn_work):
    """A :class:`SolveWorkspace` (built in a cached kernel: the proxy's own constructor compiles in every process)."""
    nv = damping.shape[0]
    return SolveWorkspace(damping, L, blocks, stats, totals, plan, friction_tol, fn_work, np.empty((nv, nv)),
                          np.empty(nv), slv.new_newton_workspace(nv, fn_work.shape[1], blocks))


@structref.register
class StateArgsType(slv.FieldsType):
    pass


class StateArgs(structref.StructRefProxy):
    """The buffers of one cached state (:class:`StateCache`), as one kernel argument (:func:`new_state_args`):
    query = the argument tuple of the contact query's kernel (:attr:`cenic_gym.contact.ContactQuery.kernel_args`:
    views of :attr:`cenic_gym.contact.ContactQuery.packed`, made once per query instead of at every call: 1.0 µs of
    the 2.0 µs query of a sphere on the ground), static = the system's limit and coupler indices, out = the state terms
    (:func:`state_terms`), and the state's constraint pools by reference (:class:`~cenic_gym.solver.LimitPoolRef`,
    :class:`~cenic_gym.solver.CouplerPoolRef` of its :class:`~cenic_gym.icf.LimitPool` and
    :class:`~cenic_gym.icf.CouplerPool`; :class:`~cenic_gym.solver.ContactPoolRef` of the query's contact buffers
    and the lagged terms of ``out`` at full capacity, its count set by each solve: :func:`icf_step`), built once per
    cache, so that a solve passes each pool as one reference instead of building it from its arrays; friction =
    the query's (μ_s, μ_d) buffers, which :func:`state_terms` reads besides the pool's.
    References to the cache's arrays, not copies; not picklable (rebuilt after a copy)."""


structref.define_proxy(StateArgs, StateArgsType,
                       ["query", "static", "out", "limits", "couplers", "contacts", "friction"])


@njit(cache=True)
def new_state_args(query, static, out, limits, couplers):
    """A :class:`StateArgs` of a contact query's kernel arguments (:attr:`cenic_gym.contact.ContactQuery.kernel_args`)
    and the state's buffers (built in a cached kernel, as :func:`new_solve_workspace`)."""
    Jc, cols, ncols, normal, phi, k, d, mu_s, mu_d, _ = query_contacts(query, out[OUT_MU].shape[0])
    contacts = slv.ContactPoolRef(Jc, cols, ncols, normal, phi, k, d, out[OUT_MU], out[OUT_FN0], out[OUT_W], 0)
    return StateArgs(query, static, out, slv.LimitPoolRef(*limits), slv.CouplerPoolRef(*couplers), contacts,
                     (mu_s, mu_d))


@njit(cache=True)
def icf_step(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains, v, q_out, fn_used):
    """One ICF step of size dt (CENIC eq. 21) from x^n = (q, v0). The problem's data come as what they are: ``state``
    (:class:`StateArgs`: M, D = diag(M)^(-1/2) and the constraint pools of x^n, its first n contacts), ``work``
    (:class:`SolveWorkspace`: damping, the Hessian factor's workspace and blocks, the counters, the integration plan,
    the friction tolerances), ``bias`` = k − τ at x^n and ``gains`` (the step's gain pool, as a plain tuple:
    :func:`pool_args`). A = M + δt D, r = M v0 − δt bias; ℓ is solved from the warm start in ``v`` (overwritten by
    v^{n+1}), then (if ``integrate``) q_out = q ⊕ δt v^{n+1} (:func:`integrate_q`).

    The workspace's totals accumulate the solve's counters (``TOT_*``). Friction bounds come from the step's own
    normal impulses to the workspace's (rtol, atol) (0: Lagged), their normal forces written into ``fn_used``
    (:func:`cenic_gym.solver.solve_coulomb`). Returns True when the solve converged."""
    out = state.out
    M, dscale = out[OUT_M], out[OUT_DSCALE]
    damping, blocks, stats, totals, A, r = work.damping, work.blocks, work.stats, work.totals, work.A, work.r
    nv = v0.shape[0]
    for a in range(nv):
        for b in range(nv):
            A[a, b] = M[a, b]
        A[a, a] += dt * damping[a]
    slv.block_matvec_into(M, v0, blocks, r)
    for a in range(nv):
        r[a] -= dt * bias[a]
    contacts = state.contacts
    contacts.n = n  # the state's first n contacts
    extra = slv.solve_coulomb(v, A, r, dscale, dt, vs, contacts, state.limits, slv.GainPoolRef(*gains),
                              state.couplers, tol, reuse, work.L, blocks, stats, work.friction_tol, fn_used,
                              work.newton)
    ok = stats[slv.CONVERGED] == 1
    totals[TOT_SOLVES] += 1 + extra
    totals[TOT_FRICTION_SOLVES] += extra
    totals[TOT_NEWTON] += stats[slv.NEWTON_ITERS]
    totals[TOT_LINE_SEARCH] += stats[slv.LS_ITERS]
    totals[TOT_FACTORIZATIONS] += stats[slv.FACTORIZATIONS]
    if not ok:
        totals[TOT_FAILURES] += 1
    elif integrate:
        plan = work.plan
        integrate_q(q, v, dt, plan[0], plan[1], plan[2], plan[3], q_out)
    return ok


@njit(cache=True, inline="always")
def icf_step_at(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains, v, q_out):
    """:func:`icf_step` from a prepared state, the friction bounds it used overwriting the state's f_n0, which no
    later solve from this state reads (the integrator calls this for the second half step and for fixed steps).
    Returns True when the solve converged."""
    return icf_step(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains, v, q_out,
                    state.contacts.fn0)


@njit(cache=True, inline="always")
def icf_full_and_half(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains_full, gains_half, v_full,
                      q_full, v_half, q_half):
    """The two solves of a step-doubling attempt that start from x^n (CENIC §V-A): the full step (warm start v^n)
    and the first half step (warm start ½(v^n + v̂^{n+1})), from a prepared state as :func:`icf_step_at`; the
    workspace's fn_work[0], fn_work[1] receive their friction bounds. Returns (full converged, half converged)."""
    fn_work = work.fn_work
    v_full[:] = v0
    if not icf_step(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains_full, v_full, q_full,
                    fn_work[0]):
        return False, False
    for a in range(v0.shape[0]):
        v_half[a] = 0.5 * (v0[a] + v_full[a])
    ok = icf_step(state, n, work, q, v0, bias, 0.5 * dt, vs, tol, reuse, integrate, gains_half, v_half, q_half,
                  fn_work[1])
    return True, ok


@njit(cache=True, inline="always")
def max_abs_diff(a, b):
    """‖a − b‖_∞ (0 for empty vectors); NaN propagates as inf."""
    e = 0.0
    for i in range(a.shape[0]):
        d = abs(a[i] - b[i])
        if not d <= e:
            e = d if math.isfinite(d) else math.inf
    return e


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
    friction_solves: int = 0  # solves beyond the first that moved friction bounds to the normal impulses (issue 10)
    geometry_queries: int = 0
    min_signed_distance: float = math.inf  # most negative contact φ [m] over accepted states (max penetration)
    min_dt: float = math.inf
    max_dt: float = 0.0
    wall_geometry: float = 0.0  # contact query + lagged contact/limit/coupler terms (numba)
    wall_dynamics: float = 0.0  # Pinocchio: kinematics, joint Jacobians, M(q), k(q, v); explicit forces
    wall_solver: float = 0.0
    wall_compiled: float = 0.0  # compiled step loop of free-body systems (advance_free_bodies): all phases, not split
    wall_total: float = 0.0
    sim_time: float = 0.0

    def copy(self):
        return IntegratorStats(**{f.name: getattr(self, f.name) for f in fields(self)})

    def as_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class AdvanceStats:
    """What one :meth:`CenicIntegrator.advance_to` call did (a value; times in seconds).

    accepted, rejected: attempted steps; solves, newton_iters: convex solves and their Newton iterations;
    min_dt, mean_dt, max_dt: accepted step sizes (nan if no step was taken); min_signed_distance: most negative
    contact φ [m] over the accepted states of this call (inf without contacts); sim_time: simulated time advanced;
    wall_time: wall-clock time of the call; realtime_factor: sim_time / wall_time."""

    accepted: int
    rejected: int
    solves: int
    newton_iters: int
    min_dt: float
    mean_dt: float
    max_dt: float
    min_signed_distance: float
    sim_time: float
    wall_time: float

    @property
    def realtime_factor(self):
        return self.sim_time / self.wall_time if self.wall_time > 0 else math.inf

    def as_dict(self):
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["realtime_factor"] = self.realtime_factor
        return d


@dataclass
class StateCache:
    """Everything an ICF step needs from x^n that does not depend on δt: geometry, dynamics, the lagged terms and
    the constraint pools of :func:`cenic_gym.solver.solve` (the gain pool is built per solve, it depends on δt)."""

    query: ContactQuery
    q: np.ndarray = None
    v: np.ndarray = None
    z: np.ndarray = None  # external systems' states
    t: float = 0.0
    M: np.ndarray = None
    bias: np.ndarray = None  # k(q, v) − τ_explicit [N, N m]
    dscale: np.ndarray = None
    contacts: object = None  # ContactSet
    contact_pool: ContactPool = None
    phi_min: float = math.inf  # smallest signed distance of the contacts [m]
    out: tuple = None  # workspace of state_terms (M, D, μ, f_n0, w, limit c^n, m, coupler c^n, m)
    limit_pool: LimitPool = None
    coupler_pool: CouplerPool = None
    contact_args: tuple = None  # the contact pool as the plain tuple contact_forces takes (pool_args)
    args: StateArgs = None  # the buffers above as one kernel argument (built at first use: _state_args)
    valid: bool = False

    def __getstate__(self):
        """Copies forget the cached state (views of the query's buffers) and the kernel argument (references to
        them); the next step prepares it anew, with bit-identical results since preparation is a function of
        (q, v, t) alone."""
        state = self.__dict__.copy()
        state.update(contacts=None, contact_pool=None, contact_args=None, args=None, valid=False)
        return state


@njit(cache=True)
def adjust_step_size(dt, err, accuracy, min_step, max_step, order=ERROR_ORDER):
    """CENIC Alg. 1 AdjustStepSize with the dead band (erratum E9) and Drake's safeguards.

    ``accuracy`` is the tolerance for this step's error estimate and ``order`` the power of δt in the ratio
    err/tolerance: 2 for CENIC's error per step (e ≈ c δt²), 1 for error per unit step (tolerance ε δt), where
    δt_new = k_safe δt (ε δt / e) keeps e/δt ≈ ε, so the global error is O(ε) rather than O(ε^½).
    Returns (new_dt, accepted)."""
    if not math.isfinite(err):
        return max(K_MIN_SHRINK * dt, min_step), False
    accepted = err <= accuracy
    if err == 0.0:
        new = K_MAX_GROW * dt
    else:
        new = K_SAFE * dt * (accuracy / err) ** (1.0 / order)
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


@njit(cache=True, inline="always")
def attempt_step_size(dt, period_dt, predict, remaining):
    """The size of an attempt: (nominal δt, δt of the attempt, clipped or not). The nominal δt is ``dt`` [s], or
    :func:`period_start_step` of it when ``predict`` (the first attempt of a control period). The attempt is the
    nominal δt, or the ``remaining`` time to t_end [s] when that is at most K_STRETCH times it: shorter (clipped),
    or up to 1 % longer (stretched), the rule of Drake's ``IntegratorBase`` (stretch factor 1.01) and of Hairer's
    DOPRI5.

    Why stretch: error-controlled steps leave any remainder before t_end, down to round-off above the loop's end
    test, and an attempt of a few nanoseconds meets the error test easily (‖q^{n+1} − q̂^{n+1}‖ ∝ δt) while a
    near-rigid constraint (a joint limit, a contact in the near-rigid regime; relaxation time ∝ δt) removes its
    violation within the step, at a velocity violation/δt. Seen in ``CenicAllegro-v0`` (the scripted rotator,
    seed 48 of ``goal="z"``): four accepted 12.5 ms steps left 2.2 ns of the control period; the thumb's distal
    joint, 27 µrad past its upper limit, left that step at 1.2e4 rad/s and threw the cube off the hand at 34 m/s
    (``tests/test_step_size.py::test_an_attempt_stretches_to_t_end_instead_of_leaving_a_sliver``)."""
    dt_nominal = period_start_step(dt, period_dt) if predict else dt
    h = remaining if remaining <= K_STRETCH * dt_nominal else dt_nominal
    return dt_nominal, h, h < dt_nominal


@njit(cache=True, inline="always")
def step_outcome(h, dt_nominal, clipped, err, accuracy, per_unit, min_step, max_step):
    """Accept or reject an attempt of size h [s] with error estimate ``err`` (:func:`adjust_step_size` against
    ε, or ε h/(1 s) with error per unit step). Returns (accepted, the next δt [s], the attempt was at min_step, the
    tolerance). After a clipped accepted step the next δt is at least the nominal one (clipping to land on t_end
    says nothing about the error)."""
    tol = accuracy * h if per_unit else accuracy
    new_dt, accepted = adjust_step_size(h, err, tol, min_step, max_step, ERROR_ORDER - 1 if per_unit else ERROR_ORDER)
    if accepted:
        return True, max(new_dt, dt_nominal) if clipped else new_dt, False, tol
    return False, new_dt, h <= min_step * (1 + 1e-12), tol


@njit(cache=True, inline="always")
def record_attempt(accepted, h, dt_next, period_start, clock, counts, window):
    """The bookkeeping of one attempted step of size ``h`` [s], the same for :meth:`CenicIntegrator.step` and the
    compiled loop (:func:`advance_free_bodies`): accepted, the clock moves by h, the step is counted and its size
    enters the window (min and max δt, simulated time, last δt), and the first step of a control period sets the next
    period's first step; rejected, it is counted. Either way the next attempt's δt is ``dt_next``.
    clock: [t, δt, period δt] (CLOCK_*); counts: int64 [accepted, rejected, ...] (COUNT_*); window: WIN_*."""
    if accepted:
        clock[CLOCK_T] += h
        counts[COUNT_ACCEPTED] += 1
        window[WIN_MIN_DT] = min(window[WIN_MIN_DT], h)
        window[WIN_MAX_DT] = max(window[WIN_MAX_DT], h)
        window[WIN_SIM_TIME] += h
        window[WIN_LAST_DT] = h
        if period_start:
            clock[CLOCK_PERIOD_DT] = dt_next
    else:
        counts[COUNT_REJECTED] += 1
    clock[CLOCK_DT] = dt_next


@njit(cache=True)
def advance_free_bodies(t_end, first, clock, control, q, v, start, mid, work, params, dyn_start, dyn_mid, vs, tol,
                        reuse, integrate, max_attempts, counts, window):
    """:meth:`CenicIntegrator.advance_to` for a system of free bodies (:func:`cenic_gym.free_bodies.free_body_joints`)
    without external systems, explicit forces or a fixed step, compiled: the attempts of :meth:`CenicIntegrator.step`
    (predict δt, full step and first half step from x^n, second half step from x^{n+½}, error estimate, accept or
    shrink: :func:`attempt_step_size` and :func:`step_outcome`, as there), with the dynamics in closed form (:func:`free_body_dynamics`) instead of
    Pinocchio and the contact query of :func:`prepare_kernel` (every pair in numba).

    clock = [t, δt, period δt] [s] and q, v are read and overwritten; control = (ε, min_step, max_step, error per
    unit step); start, mid: the :class:`StateArgs` of x^n and x^{n+½}; params: :func:`free_body_parameters`;
    dyn_start, dyn_mid: (Jw, M, bias) workspaces of the two states (M zero off the bodies' blocks; Jw in Fortran
    order, as Pinocchio's). vs, tol, reuse: as :func:`icf_step`; integrate: True (free bodies integrate in numba), an
    argument so that the kernels called here get the argument types of the Python loop's calls and share their
    compiled code (a literal True, or a C-ordered Jw, would compile them a second time).
    counts (int64) += [accepted, rejected, geometry queries]; [COUNT_LAST_CONTACTS] = contacts of the last accepted
    half step;
    window = [min δt, max δt, min φ over the states steps start from, simulated time (added to), last accepted δt,
    error and tolerance of the last attempt] (min and max taken with what it holds).
    Returns 0 when t_end is reached, 1 when the accuracy is not met at min_step, 2 when a solve failed at
    min_step (the caller raises as :meth:`CenicIntegrator.step`), 3 when ``max_attempts`` attempts were made: it
    stops at the end of a step, and a call with ``first`` False continues exactly."""
    accuracy, min_step, max_step, per_unit = control
    q_full, v_full, q_half, v_half = np.empty_like(q), np.empty_like(v), np.empty_like(q), np.empty_like(v)
    q1, v1 = np.empty_like(q), np.empty_like(v)
    Jw0, M0, bias0 = dyn_start
    Jw1, M1, bias1 = dyn_mid
    no_gains = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
    status = n1 = attempts = 0
    while status == 0 and clock[CLOCK_T] < t_end - 1e-14 * max(1.0, abs(t_end)):
        if attempts >= max_attempts:
            status = 3
            break
        period_start = first
        first = False
        predict = period_start
        n0 = -1  # x^n not prepared yet
        while True:
            dt_nominal, h, clipped = attempt_step_size(clock[CLOCK_DT], clock[CLOCK_PERIOD_DT], predict,
                                                       t_end - clock[CLOCK_T])
            predict = False
            attempts += 1
            if n0 < 0:
                free_body_dynamics(q, v, params, Jw0, M0, bias0)
                n0, _, phi = prepare_kernel(q, v, Jw0, M0, h, vs, start)
                counts[COUNT_QUERIES] += 1
                window[WIN_MIN_PHI] = min(window[WIN_MIN_PHI], phi)
            ok_full, ok = icf_full_and_half(start, n0, work, q, v, bias0, h, vs, tol, reuse, integrate, no_gains,
                                            no_gains, v_full, q_full, v_half, q_half)
            ok = ok and ok_full
            err = math.inf
            if ok:
                free_body_dynamics(q_half, v_half, params, Jw1, M1, bias1)
                n1, _, _ = prepare_kernel(q_half, v_half, Jw1, M1, 0.5 * h, vs, mid)
                counts[COUNT_QUERIES] += 1
                v1[:] = v_full
                ok = icf_step_at(mid, n1, work, q_half, v_half, bias1, 0.5 * h, vs, tol, reuse, integrate, no_gains,
                                 v1, q1)
                if ok:
                    err = max_abs_diff(q1, q_full)
            accepted, dt_next, at_min_step, step_tol = step_outcome(h, dt_nominal, clipped, err, accuracy, per_unit,
                                                                    min_step, max_step)
            record_attempt(accepted, h, dt_next, period_start, clock, counts, window)
            if accepted:
                q[:] = q1
                v[:] = v1
                counts[COUNT_LAST_CONTACTS] = n1
                break
            if at_min_step:
                window[WIN_ERROR] = err
                window[WIN_TOL] = step_tol
                status = 1 if ok else 2
                break
    return status


# -- the attempt loop of articulated systems: Pinocchio in Python, everything else in two kernels per attempt ------


@structref.register
class AttemptLoopType(slv.FieldsType):
    pass


class AttemptLoop(structref.StructRefProxy):
    """Everything the kernels of :meth:`CenicIntegrator._advance_articulated` read and write, as one kernel argument
    (:func:`new_attempt_loop`; :class:`AttemptArrays` names the fields): the :class:`StateArgs` of x^n and x^{n+½}
    and the :class:`SolveWorkspace`; clock, counts and window as in :func:`advance_free_bodies`; control = [ε,
    min_step, max_step, error per unit step, v_s, Newton tolerance, Hessian reuse, integrate in numba] (copied in
    at each call of ``advance_to``); attempt = [nominal δt, δt, clipped, error, period start] of the attempt under
    way; sizes = [contacts of x^n, contacts of x^{n+½}]; q, v the state; q_full, v_full (the full step), q_half,
    v_half (the first half step, x^{n+½}), q1, v1 (the second half step); bias the bias of x^n; pd = (K_p, K_d, q_d,
    v_d, τ_ff, q index, dofs, effort limit) of the one :class:`~cenic_gym.external.JointPD` (copied in at each call
    of ``advance_to``; empty without one); C and d (3, n) its laws of the full, first half and second half step
    (:func:`~cenic_gym.external.joint_pd_law`)."""


AttemptArrays = namedtuple("AttemptArrays", ["start", "mid", "work", "clock", "counts", "window", "control", "attempt",
                                              "sizes", "q", "v", "q_full", "v_full", "q_half", "v_half", "q1", "v1",
                                              "bias", "pd", "C", "d"])
AttemptArrays.__doc__ = ("The fields of an :class:`AttemptLoop`, as Python reads them (a proxy's attributes would be "
                         "kernel calls).")
structref.define_proxy(AttemptLoop, AttemptLoopType, list(AttemptArrays._fields))
CONTROL_VS, CONTROL_TOL, CONTROL_REUSE, CONTROL_INTEGRATE = range(4, 8)  # AttemptLoop.control after the first four


@njit(cache=True)
def new_attempt_loop(start, mid, work, clock, counts, window, control, attempt, sizes, q, v, q_full, v_full, q_half,
                     v_half, q1, v1, bias, pd, C, d):
    """An :class:`AttemptLoop` (built in a cached kernel, as :func:`new_solve_workspace`)."""
    return AttemptLoop(start, mid, work, clock, counts, window, control, attempt, sizes, q, v, q_full, v_full, q_half,
                       v_half, q1, v1, bias, pd, C, d)


ATTEMPT_NOMINAL, ATTEMPT_DT, ATTEMPT_CLIPPED, ATTEMPT_ERROR, ATTEMPT_PERIOD_START = range(5)
# what an attempt's kernels return: the solves converged (first) / the step was accepted (second), the solves failed
# / the step was rejected, the accuracy was not met at min_step, a solve failed at min_step, a gain law is not finite,
# some pairs of the state being prepared need coal (the caller finishes them and calls again without preparing)
(ATTEMPT_OK, ATTEMPT_NOT_OK, ATTEMPT_ACCURACY_NOT_MET, ATTEMPT_SOLVER_FAILURE, ATTEMPT_GAINS_NOT_FINITE,
 ATTEMPT_COAL) = range(6)


@njit(cache=True, inline="always")
def _pd_gains(loop, row, q, dt):
    """The joint PD's implicit law of a step of size dt [s] from q into row ``row`` of the loop's C, d; returns
    (the gain pool as the plain tuple :func:`icf_step` takes, finite)."""
    kp, kd, q_d, v_d, tau_ff, qidx, dofs, effort = loop.pd
    finite = joint_pd_law(kp, kd, q_d, v_d, tau_ff, qidx, q, dt, loop.C[row], loop.d[row])
    return (dofs, loop.C[row], loop.d[row], effort), finite


@njit(cache=True)
def attempt_from_start(loop, t_end, predict, prepare, Jw, M):
    """The first part of an attempt of :meth:`CenicIntegrator.step` from x^n = (loop.q, loop.v): its step size
    (:func:`attempt_step_size`), x^n's contact query and state terms if ``prepare`` (Jw, M from Pinocchio, the bias
    in ``loop.bias``), the joint PD's laws and the full step and first half step (:func:`icf_full_and_half`).
    Returns ATTEMPT_OK (both converged), ATTEMPT_NOT_OK, ATTEMPT_GAINS_NOT_FINITE or ATTEMPT_COAL (x^n's query is
    done but for the pairs coal takes: the caller finishes them, its φ_min included, and calls again without
    ``prepare``; the step size comes out the same)."""
    clock, attempt, control, q, v = loop.clock, loop.attempt, loop.control, loop.q, loop.v
    vs = control[CONTROL_VS]
    dt_nominal, h, clipped = attempt_step_size(clock[CLOCK_DT], clock[CLOCK_PERIOD_DT], predict,
                                               t_end - clock[CLOCK_T])
    attempt[ATTEMPT_NOMINAL], attempt[ATTEMPT_DT], attempt[ATTEMPT_CLIPPED] = dt_nominal, h, clipped
    if prepare:
        n, n_coal, phi = prepare_kernel(q, v, Jw, M, h, vs, loop.start)
        loop.sizes[0] = n
        loop.counts[COUNT_QUERIES] += 1
        if n_coal:
            return ATTEMPT_COAL
        loop.window[WIN_MIN_PHI] = min(loop.window[WIN_MIN_PHI], phi)
    gains_full, finite_full = _pd_gains(loop, 0, q, h)
    gains_half, finite_half = _pd_gains(loop, 1, q, 0.5 * h)
    if not (finite_full and finite_half):
        return ATTEMPT_GAINS_NOT_FINITE
    ok_full, ok_half = icf_full_and_half(loop.start, loop.sizes[0], loop.work, q, v, loop.bias, h, vs,
                                         control[CONTROL_TOL], control[CONTROL_REUSE] != 0.0,
                                         control[CONTROL_INTEGRATE] != 0.0, gains_full, gains_half, loop.v_full,
                                         loop.q_full, loop.v_half, loop.q_half)
    return ATTEMPT_OK if ok_full and ok_half else ATTEMPT_NOT_OK


@njit(cache=True)
def attempt_from_mid(loop, solved, prepare, Jw, M, bias):
    """The rest of the attempt: if the first two solves converged (``solved``), the contact query and state terms of
    x^{n+½} if ``prepare`` (Jw, M, bias from Pinocchio), the second half step (:func:`icf_step_at`, warm start
    v̂^{n+1}) and the error estimate ‖q^{n+1} − q̂^{n+1}‖_∞; then accept or shrink (:func:`step_outcome`,
    :func:`record_attempt`) and, accepted, (loop.q, loop.v) ← (q1, v1). Returns ATTEMPT_OK (accepted),
    ATTEMPT_NOT_OK (rejected), ATTEMPT_ACCURACY_NOT_MET or ATTEMPT_SOLVER_FAILURE (rejected at min_step: error and
    tolerance in the window), ATTEMPT_GAINS_NOT_FINITE or ATTEMPT_COAL (as :func:`attempt_from_start`)."""
    attempt, counts, window, control = loop.attempt, loop.counts, loop.window, loop.control
    h = attempt[ATTEMPT_DT]
    ok = solved
    err = math.inf
    if ok:
        if prepare:
            n, n_coal, _ = prepare_kernel(loop.q_half, loop.v_half, Jw, M, 0.5 * h, control[CONTROL_VS], loop.mid)
            loop.sizes[1] = n
            counts[COUNT_QUERIES] += 1
            if n_coal:
                return ATTEMPT_COAL
        gains, finite = _pd_gains(loop, 2, loop.q_half, 0.5 * h)
        if not finite:
            return ATTEMPT_GAINS_NOT_FINITE
        loop.v1[:] = loop.v_full
        ok = icf_step_at(loop.mid, loop.sizes[1], loop.work, loop.q_half, loop.v_half, bias, 0.5 * h,
                         control[CONTROL_VS], control[CONTROL_TOL], control[CONTROL_REUSE] != 0.0,
                         control[CONTROL_INTEGRATE] != 0.0, gains, loop.v1, loop.q1)
        if ok:
            err = max_abs_diff(loop.q1, loop.q_full)
    accepted, dt_next, at_min_step, step_tol = step_outcome(h, attempt[ATTEMPT_NOMINAL],
                                                            attempt[ATTEMPT_CLIPPED] != 0.0, err, control[0],
                                                            control[3] != 0.0, control[1], control[2])
    record_attempt(accepted, h, dt_next, attempt[ATTEMPT_PERIOD_START] != 0.0, loop.clock, counts, window)
    attempt[ATTEMPT_ERROR] = err
    if accepted:
        loop.q[:] = loop.q1
        loop.v[:] = loop.v1
        counts[COUNT_LAST_CONTACTS] = loop.sizes[1]
        return ATTEMPT_OK
    if at_min_step:
        window[WIN_ERROR] = err
        window[WIN_TOL] = step_tol
        return ATTEMPT_ACCURACY_NOT_MET if ok else ATTEMPT_SOLVER_FAILURE
    return ATTEMPT_NOT_OK


class _ClockEntry:
    """An attribute of :class:`CenicIntegrator` that reads and writes one entry of its ``clock`` array as a float."""

    def __init__(self, index, doc):
        self.index, self.__doc__ = index, doc

    def __get__(self, integrator, owner=None):
        return self if integrator is None else float(integrator.clock[self.index])

    def __set__(self, integrator, value):
        integrator.clock[self.index] = value


class CenicIntegrator:
    """Error-controlled (or fixed-step) ICF integration of a :class:`~cenic_gym.model.MultibodySystem`.

    accuracy:  ε_acc, the target position error [m or rad] (CENIC §V-E): per step by default; with
               ``error_per_unit_step=True`` the error per step must stay below ε·δt/(1 s), which makes the global
               error O(ε) instead of O(ε^½) (see :func:`adjust_step_size`).
    max_step:  δt_max [s]; the first step is K_INIT δt_max.
    fixed_step: None for error control, else δt [s] of plain ICF steps.
    min_step:  below this δt a rejected step raises :class:`SimulationError` instead of looping.
    generalized_force: optional callable (t, q, v) -> τ (nv,) applied explicitly over each step [N, N m].
    gains: optional callable (t, q, v, dt) -> (idx, c, b, e): effort-limited linear control laws
           τ_i = clamp(b − c v_i, ±e) integrated implicitly (CENIC eq. 19–20).
    external: list of :class:`~cenic_gym.external.ExternalSystem` (controllers, force elements), linearized for
           every convex solve and integrated implicitly (CENIC §V-C); their states z are not in the error norm.
    impact_friction: True (default): friction bounds from each step's own normal impulses where they disagree with
           the lagged ones (Coulomb's law at impacts, :func:`cenic_gym.solver.solve_coulomb`); False: the plain
           Lagged model (always so with fixed steps).
    """

    def __init__(self, system, accuracy=1e-3, max_step=0.1, fixed_step=None, min_step=1e-9,
                 contact_margin=DEFAULT_MARGIN, hessian_reuse=False, newton_kappa=NEWTON_KAPPA,
                 generalized_force=None, gains=None, error_per_unit_step=False, external=None, impact_friction=True):
        self.system = system
        self.model = pin.Model(system.model)  # own copy: domain randomization of inertias changes this one only
        self.data = self.model.createData()
        self.accuracy = float(accuracy)
        self.max_step = float(max_step)
        self.fixed_step = None if fixed_step is None else float(fixed_step)
        self.min_step = float(min_step)
        self.hessian_reuse = bool(hessian_reuse)
        self.newton_kappa = float(newton_kappa)
        self.error_per_unit_step = bool(error_per_unit_step)
        self._tol = self._tolerance()
        self.generalized_force = generalized_force
        self.gains = gains
        systems = ([GainLaw(gains)] if gains is not None else []) + list(external or [])
        self.external = ExternalSystems(systems, system.nv) if systems else None
        self.z = self.external.initial_state() if self.external else np.zeros(0)
        self.vs = float(system.stiction_tolerance)
        self._geom_names = (tuple(g.name for g in system.geometries),
                            tuple("world" if g.joint == 0 else self.model.names[g.joint] for g in system.geometries))
        self.damping = np.asarray(system.model.damping, dtype=float).copy()  # implicit: A = M + δt D
        nv = system.nv
        cpl = (system.coupler_q0, system.coupler_q1, system.coupler_v0, system.coupler_v1, system.coupler_ratio,
               system.coupler_offset)
        self._static = (system.limit_q, system.limit_v) + cpl
        self.start = self._new_cache(contact_margin)
        self.mid = self._new_cache(contact_margin)
        self._L = np.zeros((nv, nv))
        self._blocks = slv.factor_blocks(self.model)  # block Cholesky for many independent bodies (or dense)
        # Friction bounds from the steps' own normal impulses (solver.solve_coulomb; plain Lagged in fixed steps). Those
        # of the full and first half step go to _fn_work; the second half step writes its own into the mid cache's
        # pool (its lagged f_n0 is not needed after that solve), where contact_results finds them.
        self._fn_work = np.zeros((2, self.start.query.capacity))
        self._friction_tol = np.zeros(2)  # (rtol, atol) of solve_coulomb; zeros: the Lagged model
        self.set_impact_friction(impact_friction)
        self._solve_stats = np.zeros(4, dtype=np.int64)
        # solves, Newton, line search, factorizations, failures, friction re-solves
        self._totals = np.zeros(6, dtype=np.int64)
        self._no_gain = GainPool(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
        self._integration_plan()
        self._work = None  # SolveWorkspace of the arrays above (built at first use: _workspace)
        self._stats = IntegratorStats()
        self.q = system.q0.copy()
        self.v = system.v0.copy()
        # counts the states this integrator has held (every accepted step, every state set from outside): what
        # is computed from a state is valid while state_id is unchanged
        self.state_id = 0
        dt = self.fixed_step if self.fixed_step is not None else K_INIT * self.max_step
        # [t, δt, period δt] (CLOCK_*): time [s], next attempt's step [s], the first step of the next control period
        # [s] (period_start_step; = δt: no memory yet). record_attempt moves it, in both loops
        self.clock = np.array([0.0, dt, dt])
        # counters and the window of the current advance_to call (COUNT_*, WIN_*), written by record_attempt
        self._counts = np.zeros(4, dtype=np.int64)
        self._window = np.array([math.inf, 0.0, math.inf, 0.0, 0.0, math.nan, math.nan])
        self.last_solution = None  # (cache, v, dt, gains) of the last accepted solve, for contact results
        self.frozen_results = None  # (ContactResults, efforts): the same, computed (after a copy or a restore)
        self.history = None  # list of (t, dt, accepted, error) when recording
        # free bodies only, nothing called back in Python: advance_to runs compiled (advance_free_bodies)
        self._compiled_loop = (free_body_joints(system) and self.fixed_step is None and generalized_force is None
                               and self.external is None)
        self._free_body_work = None  # (params, dyn_start, dyn_mid) of advance_free_bodies (built at first use)
        # any other system whose joints the kernels cover, without explicit forces and with at most one plain
        # JointPD: advance_to runs each attempt as two kernels around Pinocchio (and coal) (_advance_articulated)
        pd = self.external._joint_pd if self.external is not None else None
        self._articulated_loop = (not self._compiled_loop and self.fixed_step is None and generalized_force is None
                                  and self._numba_integrate and not system.general_joints
                                  and (self.external is None or pd is not None))
        self._attempt_loop = None  # AttemptLoop of _advance_articulated (built at first use)

    def __getstate__(self):
        """A copy holds the last step's contact results and efforts as values (the live ones are views of
        workspaces that copies do not share)."""
        state = self.__dict__.copy()
        state["_work"] = None  # references to this integrator's arrays: the copy builds its own
        state["_free_body_work"] = None
        state["_attempt_loop"] = None
        if self.last_solution is not None:
            state["frozen_results"] = (self.contact_results(), self.applied_efforts())
            state["last_solution"] = None
        return state

    t = _ClockEntry(CLOCK_T, "Time [s].")
    dt = _ClockEntry(CLOCK_DT, "The next attempt's step size [s].")
    period_dt = _ClockEntry(CLOCK_PERIOD_DT, "The first step of the next control period [s] "
                                             "(:func:`period_start_step`).")

    def _new_cache(self, contact_margin):
        """A StateCache with its workspace: contact query, state-term buffers and the fixed parts of the limit and
        coupler pools (the buffers are overwritten in place by each :meth:`_prepare` of this cache)."""
        s = self.system
        query = ContactQuery(s, contact_margin)
        nv, cap, nl, ncp = s.nv, query.capacity, len(s.limit_q), len(s.coupler_q0)
        out = (np.zeros((nv, nv)), np.zeros(nv), np.zeros(cap), np.zeros(cap), np.zeros(cap), np.zeros(nl),
               np.zeros(nl), np.zeros(ncp), np.zeros(ncp))
        cache = StateCache(query)
        cache.out = out
        cache.M, cache.dscale = out[OUT_M], out[OUT_DSCALE]
        cache.limit_pool = LimitPool(s.limit_v, out[OUT_LIMIT_C], s.limit_lower, s.limit_upper, out[OUT_LIMIT_M])
        cache.coupler_pool = CouplerPool(s.coupler_v0, s.coupler_v1, s.coupler_ratio, out[OUT_COUPLER_C],
                                         out[OUT_COUPLER_M])
        return cache

    def _workspace(self):
        """The :class:`SolveWorkspace` of this integrator's solve arrays (built once, and again after a copy)."""
        work = self._work
        if work is None:
            work = self._work = new_solve_workspace(self.damping, self._L, self._blocks, self._solve_stats,
                                                    self._totals, self._int_plan, self._friction_tol, self._fn_work)
        return work

    def _state_args(self, cache):
        """The :class:`StateArgs` of a cache's buffers (built once per cache, and again after a copy)."""
        args = cache.args
        if args is None:
            args = cache.args = new_state_args(cache.query.kernel_args, self._static, cache.out, cache.limit_pool,
                                               cache.coupler_pool)
        return args

    def _integration_plan(self):
        """Per-joint integration kinds for :func:`integrate_q`; ``pin.integrate`` for any other joint type."""
        m = self.model
        kind, iq, iv, nq = [], [], [], []
        self._numba_integrate = True
        for j in range(1, m.njoints):
            if is_free_body_joint(m.joints[j]):
                kind.append(INTEGRATE_FREE_BODY)
            elif m.nqs[j] == m.nvs[j]:
                kind.append(INTEGRATE_VECTOR)
            else:
                self._numba_integrate = False
                kind.append(-1)
            iq.append(m.idx_qs[j])
            iv.append(m.idx_vs[j])
            nq.append(m.nqs[j])
        self._int_plan = tuple(np.array(x, dtype=np.int64) for x in (kind, iq, iv, nq))

    @property
    def stats(self) -> IntegratorStats:
        """Counters so far (the solver counters live in a numba-side array and are copied in here)."""
        st = self._stats
        (st.solves, st.newton_iters, st.line_search_iters, st.factorizations, st.solver_failures,
         st.friction_solves) = self._totals.tolist()
        st.accepted, st.rejected, st.geometry_queries, _ = self._counts.tolist()
        self._fold_window()
        return st

    def _fold_window(self):
        """Carry the window's extremes (min and max δt, min φ) and simulated time into the running stats."""
        st, w = self._stats, self._window
        st.min_dt, st.max_dt = min(st.min_dt, w[WIN_MIN_DT]), max(st.max_dt, w[WIN_MAX_DT])
        st.min_signed_distance = min(st.min_signed_distance, w[WIN_MIN_PHI])
        st.sim_time = float(w[WIN_SIM_TIME])

    # ----------------------------------------------------------------------------------------------------------
    def set_impact_friction(self, on):
        """Coulomb's law at impacts (friction bounds from each step's own normal impulses) on, or off for the
        plain Lagged model, from the next step on; always off with fixed steps."""
        lagged = self.fixed_step is not None or not on
        self._friction_tol[:] = slv.coulomb_tolerance(0.0 if lagged else self.accuracy)  # in place: the workspace's

    @property
    def impact_friction(self):
        """Whether Coulomb's law at impacts is on (:meth:`set_impact_friction`)."""
        return bool(self._friction_tol.any())

    def set_material(self, geoms, stiffness, dissipation, mu_static, mu_dynamic):
        """Contact parameters of geometries (an index array or a slice) from the next step on, in the queries of
        both states (x^n and x^{n+½})."""
        for query in (self.start.query, self.mid.query):
            query.set_material(geoms, stiffness, dissipation, mu_static, mu_dynamic)
        self.start.valid = False

    def set_shape(self, geom, shape):
        """A new shape (of the same kind) for geometry index ``geom`` from the next step on, in both states'
        queries."""
        for query in (self.start.query, self.mid.query):
            query.set_shape(geom, shape)
        self.start.valid = False

    def set_placement(self, geom, R, p):
        """Geometry index ``geom`` placed at (R, p) in its joint's frame from the next step on, in both states'
        queries."""
        for query in (self.start.query, self.mid.query):
            query.set_placement(geom, R, p)
        self.start.valid = False

    def invalidate(self):
        """The state (q, v, z, t) was set from outside: nothing computed at the previous one holds."""
        self.state_id += 1
        self.start.valid = False
        self.last_solution = None
        self.frozen_results = None

    def set_joint_dynamics(self, damping, armature):
        """Joint damping (nv,) [N m s/rad, N s/m] and armature (nv,) [kg m², kg] of this integrator's model, from the
        next step on (written in place: the solve workspace holds the damping array)."""
        self.damping[:] = damping
        self.model.armature = np.asarray(armature, dtype=float).copy()
        self._free_body_work = None
        self.start.valid = False

    def set_inertia(self, joint, inertia):
        """Give the rigid body of Pinocchio joint ``joint`` the ``pin.Inertia`` ``inertia`` (this integrator's model
        only), from the next step on."""
        self.model.inertias[joint] = inertia
        self._free_body_work = None

    def _prepare(self, cache, q, v, z, t, lookahead):
        """Geometry, dynamics and lagged terms at (q, v); speculative contacts for ``lookahead`` [s]."""
        m, d = self.model, self.data
        t0 = time.perf_counter()
        Jw, M_upper = compute_kinematics_and_inertia(m, d, q)
        bias = pin.nonLinearEffects(m, d, q, v).copy()
        if self.generalized_force is not None:
            bias -= np.asarray(self.generalized_force(t, q, v), dtype=float)
        t1 = time.perf_counter()
        query = cache.query
        if self.system.general_joints:
            query.sync_joint_poses(d)
        n, n_fallback, phi_min = prepare_kernel(q, v, Jw, M_upper, lookahead, self.vs, self._state_args(cache))
        if n_fallback:
            n, phi_min = self._coal_pairs(cache, n, Jw, M_upper, q, v)
        self._bind_contacts(cache, n)
        cache.phi_min = phi_min
        cache.bias = bias
        cache.q, cache.v, cache.z, cache.t = q, v, z, t
        cache.valid = True
        self._counts[COUNT_QUERIES] += 1
        st = self._stats
        st.wall_dynamics += t1 - t0
        st.wall_geometry += time.perf_counter() - t1

    def _coal_pairs(self, cache, n, Jw, M_upper, q, v):
        """Finish a contact query that :func:`prepare_kernel` left with pairs for coal (n contacts so far): their
        contacts, then the state terms of all. Returns (number of contacts, smallest signed distance φ [m])."""
        query = cache.query
        n = query.coal_fallback(n, Jw)
        state_terms(M_upper, v, q, n, self.vs, self._state_args(cache))  # its buffers are the query's
        phi = query.contact_set(n).phi
        return n, float(phi.min()) if n else math.inf

    @staticmethod
    def _bind_contacts(cache, n):
        """The cache's ContactSet and contact pool for the n contacts its query buffers hold."""
        cs = cache.query.contact_set(n)
        if cache.contacts is not cs:  # views of the workspace: rebuild the pool only when n changed
            mu, fn0, w = cache.out[2:5]
            cache.contact_pool = ContactPool(cs.Jc, cs.cols, cs.ncols, cs.normal, cs.phi, cs.stiffness, cs.dissipation,
                                             mu[:n], fn0[:n], w[:n], n)
            cache.contact_args = pool_args(cache.contact_pool)
            cache.contacts = cs

    def _integrate(self, q, v, dt):
        """q ⊕ δt v as a new array (numba for the covered joint types, else ``pin.integrate``)."""
        if not self._numba_integrate:
            return pin.integrate(self.model, q, dt * v)
        out = np.empty(q.shape[0])
        kind, iq, iv, nq = self._int_plan
        integrate_q(q, v, dt, kind, iq, iv, nq, out)
        return out

    def _gain_pool(self, cache, dt):
        """Effort-limited gain laws of the external systems for a solve of size dt from ``cache`` (linearized
        with q̃(v) = q ⊕ δt v, CENIC eq. 26), and their state update (Z, b_z); (empty, None, None) without any."""
        if self.external is None:
            return self._no_gain, None, None
        return self.external.linearize(cache.t, cache.z, cache.q, cache.v, dt,
                                       lambda v: self._integrate(cache.q, v, dt))

    def _gain_pools_full_and_half(self, cache, dt):
        """:meth:`_gain_pool` for the full step (dt) and the first half step (dt/2) from ``cache``: (gains of the
        full step, gains of the half step, Z, b_z of the half step)."""
        if self.external is None:
            return self._no_gain, self._no_gain, None, None
        q = cache.q
        return self.external.linearize_full_and_half(cache.t, cache.z, q, cache.v, dt,
                                                     lambda v: self._integrate(q, v, dt),
                                                     lambda v: self._integrate(q, v, 0.5 * dt))

    def _z_next(self, Z, bz, v):
        if Z is None or not Z.shape[0]:  # no external state: z is the empty vector
            return self.z if Z is None else bz
        return Z @ v + bz

    def _icf(self, cache, dt, v_guess):
        """One ICF step of size dt from the cached state. Returns (q_next, v_next, z_next, converged); the gain
        pool of the solve is kept in ``self._last_gains`` (for the applied efforts)."""
        t0 = time.perf_counter()
        v = v_guess.copy()
        q_next = np.empty(cache.q.shape[0])
        gains, Z, bz = self._gain_pool(cache, dt)
        self._last_gains = gains
        ok = icf_step_at(self._state_args(cache), cache.contacts.n, self._workspace(), cache.q, cache.v, cache.bias,
                         dt, self.vs, self._tol, self.hessian_reuse, self._numba_integrate, pool_args(gains), v, q_next)
        if not ok:
            q_next = cache.q  # converged implies finite (the solver checks every norm)
        elif not self._numba_integrate:
            q_next = self._integrate(cache.q, v, dt)
        self._stats.wall_solver += time.perf_counter() - t0
        return q_next, v, self._z_next(Z, bz, v), ok

    def _full_and_half(self, cache, dt):
        """Full step and first half step from x^n. Returns (q_full, v_full, q_half, v_half, z_half, converged)."""
        t0 = time.perf_counter()
        nq, nv = cache.q.shape[0], cache.v.shape[0]
        q_full, v_full, q_half, v_half = np.empty(nq), np.empty(nv), np.empty(nq), np.empty(nv)
        gains_full, gains_half, Z, bz = self._gain_pools_full_and_half(cache, dt)
        ok_full, ok_half = icf_full_and_half(
            self._state_args(cache), cache.contacts.n, self._workspace(), cache.q, cache.v, cache.bias, dt, self.vs,
            self._tol, self.hessian_reuse, self._numba_integrate, pool_args(gains_full), pool_args(gains_half),
            v_full, q_full, v_half, q_half)
        if not self._numba_integrate:
            if ok_full:
                q_full = self._integrate(cache.q, v_full, dt)
            if ok_half:
                q_half = self._integrate(cache.q, v_half, 0.5 * dt)
        self._stats.wall_solver += time.perf_counter() - t0
        return q_full, v_full, q_half, v_half, self._z_next(Z, bz, v_half), ok_full and ok_half

    def _tolerance(self):
        """ε_tol of the Newton convergence tests (CENIC eq. 34)."""
        if self.fixed_step is not None:
            return 1e-8
        return max(self.newton_kappa * self.accuracy, 1e-8)

    # ----------------------------------------------------------------------------------------------------------
    def step(self, t_end, period_start=False):
        """Attempt steps until one is accepted (or t_end is reached). Returns the accepted δt.

        period_start: this is the first step after the inputs changed (:meth:`advance_to` ``inputs_changed``): the
        first attempt is :func:`period_start_step`, and the step size proposed after its acceptance becomes the
        next period's ``period_dt``."""
        predict = period_start and self.fixed_step is None
        clock = self.clock
        while True:
            t = clock[CLOCK_T]
            dt_nominal, dt, clipped = attempt_step_size(clock[CLOCK_DT], clock[CLOCK_PERIOD_DT], predict, t_end - t)
            predict = False
            if not self.start.valid:
                self._prepare(self.start, self.q, self.v, self.z, t, dt)
                w = self._window
                w[WIN_MIN_PHI] = min(w[WIN_MIN_PHI], self.start.phi_min)
            if self.fixed_step is not None:
                q1, v1, z1, ok = self._icf(self.start, dt, self.v)
                if not ok:
                    raise SolverFailure(
                        f"ICF solve failed at t={self.t:.6g} s with fixed_step={dt:.3g} s (non-finite state or Newton "
                        f"did not converge in {slv.MAX_NEWTON_ITERATIONS} iterations)")
                self._accept(q1, v1, z1, dt, self.start)
                record_attempt(True, dt, clock[CLOCK_DT], False, clock, self._counts, self._window)
                return dt
            q_full, v_full, q_half, v_half, z_half, ok = self._full_and_half(self.start, dt)
            err = math.inf
            if ok:
                self._prepare(self.mid, q_half, v_half, z_half, t + 0.5 * dt, 0.5 * dt)
                q1, v1, z1, ok = self._icf(self.mid, 0.5 * dt, v_full)
                if ok:
                    err = max_abs_diff(q1, q_full)
            accepted, dt_next, at_min_step, tol = step_outcome(dt, dt_nominal, clipped, err, self.accuracy,
                                                               self.error_per_unit_step, self.min_step, self.max_step)
            if self.history is not None:
                self.history.append((float(t), dt, accepted, err))
            if accepted:
                self._accept(q1, v1, z1, dt, self.mid)
            record_attempt(accepted, dt, dt_next, period_start, clock, self._counts, self._window)
            if accepted:
                return dt
            if at_min_step:
                raise self._min_step_error(ok, err, tol)

    def _min_step_error(self, ok, err, tol):
        """The exception of an attempt rejected at min_step: :class:`AccuracyNotMetError` (error ``err`` above the
        tolerance ``tol``) or :class:`SolverFailure` (a solve failed: not ``ok``)."""
        reason = "non-finite solve" if not ok else f"error {err:.3g} > tolerance {tol:.3g}"
        return (AccuracyNotMetError if ok else SolverFailure)(
            f"CENIC cannot meet accuracy={self.accuracy:g} at t={self.t:.6g} s: {reason} at the minimum step "
            f"min_step={self.min_step:g} s")

    def _accept(self, q1, v1, z1, dt, cache):
        """The accepted attempt's state becomes the integrator's (its clock and counters: :func:`record_attempt`).
        """
        # v1 is finite (a converged solve checks every norm), hence q1; external states come from user code
        if z1.shape[0] and not np.all(np.isfinite(z1)):
            raise SolverFailure(f"non-finite external-system state z after an accepted step at t={self.t:.6g} s: "
                                  f"{z1!r}")
        self.last_solution = (cache, v1, dt if cache is self.start else 0.5 * dt, self._last_gains)
        self.frozen_results = None
        self.q = q1
        self.v = v1
        self.z = z1
        self.state_id += 1
        self.start.valid = False

    def advance_to(self, t_end, on_step=None, inputs_changed=False):
        """Integrate to t_end [s]; ``on_step()`` is called after every accepted step. Returns the
        :class:`AdvanceStats` of this call. ``inputs_changed``: the caller changed the inputs (set-points of the
        external systems) since the last call, so this call is a new control period and its first step follows
        the period-start predictor (:func:`period_start_step`). A system of free bodies without external systems
        or explicit forces runs the whole call compiled (:func:`advance_free_bodies`) unless ``on_step`` is given or
        the history is recorded; everything else runs :meth:`step` from Python."""
        t0 = time.perf_counter()
        st = self.stats  # folds the previous call's window
        start = (st.accepted, st.rejected, st.solves, st.newton_iters, self.t)
        w = self._window
        w[WIN_MIN_DT], w[WIN_MAX_DT], w[WIN_MIN_PHI] = math.inf, 0.0, math.inf
        try:
            first = bool(inputs_changed)
            if on_step is None and self.history is None:
                if self._compiled_loop:
                    self._advance_compiled(t_end, first)
                elif self._articulated_loop and self._setpoints_constant():
                    self._advance_articulated(t_end, first)
            while self.t < t_end - 1e-14 * max(1.0, abs(t_end)):
                self.step(t_end, first)
                first = False
                if on_step is not None:
                    on_step()
            self.t = max(self.t, t_end)  # the last step is clipped to land on t_end; absorb round-off
        finally:
            wall = time.perf_counter() - t0
            self._stats.wall_total += wall
        st = self.stats
        accepted = st.accepted - start[0]
        sim_time = self.t - start[4]
        nan = math.nan
        w = self._window
        min_dt, max_dt, min_phi = w[:3].tolist()
        return AdvanceStats(accepted, st.rejected - start[1], st.solves - start[2], st.newton_iters - start[3],
                            min_dt if accepted else nan, sim_time / accepted if accepted else nan,
                            max_dt if accepted else nan, min_phi, sim_time, wall)

    def _advance_compiled(self, t_end, first):
        """:meth:`advance_to` (without callbacks or recording) of a free-body system in calls of
        :func:`advance_free_bodies` of at most :data:`COMPILED_ATTEMPTS` attempts each; the same steps as :meth:`step`
        (the closed-form dynamics differ from Pinocchio's in round-off). The counters and the last accepted step's
        contacts are brought up to date, also when interrupted (Ctrl-C between two calls); the wall time counts in
        ``wall_compiled`` (no per-phase split)."""
        fb = self._free_body_work
        if fb is None:
            nv = self.v.shape[0]
            fb = self._free_body_work = (free_body_parameters(self.model),
                                         (np.zeros((6, nv), order="F"), np.zeros((nv, nv)), np.zeros(nv)),
                                         (np.zeros((6, nv), order="F"), np.zeros((nv, nv)), np.zeros(nv)))
        clock, counts, window = self.clock, self._counts, self._window
        q, v = self.q.copy(), self.v.copy()
        accepted = counts[COUNT_ACCEPTED]
        control = (self.accuracy, self.min_step, self.max_step, self.error_per_unit_step)
        start, mid, work = self._state_args(self.start), self._state_args(self.mid), self._workspace()
        t0 = time.perf_counter()
        try:
            status = 3
            while status == 3:  # back in Python between calls: a long run can be interrupted
                status = advance_free_bodies(t_end, first, clock, control, q, v, start, mid, work, fb[0], fb[1],
                                             fb[2], self.vs, self._tol, self.hessian_reuse, self._numba_integrate,
                                             COMPILED_ATTEMPTS, counts, window)
                first = False
        finally:  # also on KeyboardInterrupt: the state of the last step completed, and its counters
            self._stats.wall_compiled += time.perf_counter() - t0
            self._sync_compiled(q, v, counts[COUNT_ACCEPTED] > accepted)
        if status:
            raise self._min_step_error(status == 1, window[WIN_ERROR], window[WIN_TOL])

    def _setpoints_constant(self):
        """True when the external systems' gain laws can be evaluated in the kernels: none, or one plain JointPD,
        implicit, with set-points that are arrays (not functions of time)."""
        if self.external is None:
            return True
        pd = self.external._joint_pd
        return pd.implicit and not any(callable(x) for x in pd.setpoints(self.t))

    def _loop_buffers(self):
        """The :class:`AttemptLoop` of :meth:`_advance_articulated` and its fields (built once, and again after a
        copy), with the integrator's options, the state and its joint PD's gains and set-points copied in (they may
        change between calls of advance_to)."""
        if self._attempt_loop is None:
            nq, nv = self.q.shape[0], self.v.shape[0]
            pd = None if self.external is None else self.external._joint_pd
            n = 0 if pd is None else pd.dofs.shape[0]
            law = tuple(np.zeros(n) for _ in range(5)) + (
                (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)) if pd is None else
                (pd.qidx.astype(np.int64), pd.dofs.astype(np.int64), pd.effort_limit.copy()))
            fields = AttemptArrays(self._state_args(self.start), self._state_args(self.mid), self._workspace(),
                                   self.clock, self._counts, self._window, np.zeros(8), np.zeros(5),
                                   np.zeros(2, np.int64), *(np.empty(k) for k in (nq, nv) * 4), np.empty(nv), law,
                                   np.zeros((3, n)), np.zeros((3, n)))
            self._attempt_loop = (new_attempt_loop(*fields), fields)
        loop, fields = self._attempt_loop
        fields.control[:] = (self.accuracy, self.min_step, self.max_step, self.error_per_unit_step, self.vs,
                             self._tol, self.hessian_reuse, self._numba_integrate)
        fields.q[:] = self.q
        fields.v[:] = self.v
        if self.external is not None:
            pd = self.external._joint_pd
            kp, kd, q_d, v_d, tau_ff, _, _, effort = fields.pd
            for buf, value in zip((kp, kd, q_d, v_d, tau_ff, effort),
                                  (pd.kp, pd.kd) + tuple(pd.setpoints(self.t)) + (pd.effort_limit,)):
                buf[:] = value
        return loop, fields

    def _advance_articulated(self, t_end, first):
        """:meth:`advance_to` (without callbacks or recording) of a system the kernels cover but Pinocchio's dynamics
        (``_articulated_loop``): the attempts of :meth:`step`, each as Pinocchio's kinematics, M and bias of x^n
        (once per step) and x^{n+½} around two kernels (:func:`attempt_from_start`, :func:`attempt_from_mid`) and,
        where a state has pairs for coal, :meth:`_coal_pairs` between two calls of one; bit-identical to
        :meth:`step`. The wall time counts in ``wall_compiled``."""
        m, d = self.model, self.data
        loop, fields = self._loop_buffers()
        q, v, q_half, v_half, bias = fields.q, fields.v, fields.q_half, fields.v_half, fields.bias
        attempt, sizes, clock, window = fields.attempt, fields.sizes, self.clock, self._window
        stop = t_end - 1e-14 * max(1.0, abs(t_end))
        accepted = self._counts[COUNT_ACCEPTED]
        status = ATTEMPT_OK
        t0 = time.perf_counter()
        try:
            while clock[CLOCK_T] < stop:
                attempt[ATTEMPT_PERIOD_START] = first
                predict, prepare, first = first, True, False
                while True:
                    if prepare:  # x^n: once per step (Jw and M are read at once, by the query and the state terms)
                        Jw, M = compute_kinematics_and_inertia(m, d, q)
                        bias[:] = pin.nonLinearEffects(m, d, q, v)
                    status = attempt_from_start(loop, t_end, predict, prepare, Jw, M)
                    if status == ATTEMPT_COAL:
                        sizes[0], phi_min = self._coal_pairs(self.start, int(sizes[0]), Jw, M, q, v)
                        window[WIN_MIN_PHI] = min(window[WIN_MIN_PHI], phi_min)
                        status = attempt_from_start(loop, t_end, predict, False, Jw, M)
                    predict = prepare = False
                    if status == ATTEMPT_GAINS_NOT_FINITE:
                        break
                    solved = status == ATTEMPT_OK
                    if solved:  # x^{n+½}
                        Jw, M = compute_kinematics_and_inertia(m, d, q_half)
                        bias_half = pin.nonLinearEffects(m, d, q_half, v_half)
                    else:  # failed solves: shrink (Jw, M and the bias are not read)
                        bias_half = bias
                    status = attempt_from_mid(loop, solved, True, Jw, M, bias_half)
                    if status == ATTEMPT_COAL:
                        sizes[1], _ = self._coal_pairs(self.mid, int(sizes[1]), Jw, M, q_half, v_half)
                        status = attempt_from_mid(loop, True, False, Jw, M, bias_half)
                    if status != ATTEMPT_NOT_OK:
                        break
                if status != ATTEMPT_OK:
                    break
        finally:  # also on KeyboardInterrupt: the state of the last step completed
            self._stats.wall_compiled += time.perf_counter() - t0
            stepped = self._counts[COUNT_ACCEPTED] > accepted
            self._sync_compiled(q.copy(), v.copy(), stepped)
            if stepped and self.external is not None:  # the last solve's gain pool, for the applied efforts
                pd = self.external._joint_pd
                self._last_gains = GainPool(pd.dofs, fields.C[2].copy(), fields.d[2].copy(), pd.effort_limit)
                self.external.last_bounds = [(0, pd.dofs.shape[0])]
                self.last_solution = self.last_solution[:3] + (self._last_gains,)
        if status == ATTEMPT_GAINS_NOT_FINITE:  # the Python loop's linearization names the system and the values
            h = attempt[ATTEMPT_DT]
            self.external.linearize(self.t, self.z, q_half, v_half, 0.5 * h, None)
            self.external.linearize(self.t, self.z, self.q, self.v, h, None)
            raise FloatingPointError(f"non-finite joint PD law at t={self.t:.6g} s")
        if status != ATTEMPT_OK:
            w = self._window
            raise self._min_step_error(status == ATTEMPT_ACCURACY_NOT_MET, w[WIN_ERROR], w[WIN_TOL])

    def _sync_compiled(self, q, v, stepped):
        """Bring the integrator up to date after a compiled loop (:func:`advance_free_bodies` or
        :meth:`_advance_articulated`, whose clock, counters and window are the integrator's own arrays): the state, and
        the last accepted step's contacts if it took one (``stepped``; no gain pool: the articulated loop sets its
        own)."""
        self.q, self.v = q, v
        self.state_id += 1
        self.start.valid = False  # its buffers were overwritten without the Python-side fields
        if stepped:
            self._bind_contacts(self.mid, int(self._counts[COUNT_LAST_CONTACTS]))
            self._last_gains = self._no_gain
            self.last_solution = (self.mid, self.v, 0.5 * self._window[WIN_LAST_DT], self._no_gain)
            self.frozen_results = None

    # ----------------------------------------------------------------------------------------------------------
    def contact_results(self):
        """:class:`ContactResults` of the last accepted (half) step (empty before the first step)."""
        if self.last_solution is None:
            return self.frozen_results[0] if self.frozen_results is not None else ContactResults.empty()
        cache, v, dt, _ = self.last_solution
        cs = cache.contacts
        force, slip = np.zeros((cs.n, 3)), np.zeros(cs.n)
        contact_forces(v, cache.contact_args, self.vs, dt, force, slip)
        names, bodies = self._geom_names
        ga, gb = cs.geom_a.tolist(), cs.geom_b.tolist()
        return ContactResults(cs.point.copy(), cs.normal.copy(), cs.phi.copy(), force, slip, cs.geom_a.copy(),
                              cs.geom_b.copy(), tuple(map(names.__getitem__, ga)), tuple(map(names.__getitem__, gb)),
                              tuple(map(bodies.__getitem__, ga)), tuple(map(bodies.__getitem__, gb)))

    def applied_efforts(self):
        """Generalized forces [N, N m] of each external system in the last accepted solve, as applied there:
        τ_i = clamp(d_i − C_i v_i^{n+1}, ±e_i) on its ``dofs`` (list aligned with the external systems)."""
        if self.external is None:
            return []
        if self.last_solution is None:
            if self.frozen_results is not None:
                return [e.copy() for e in self.frozen_results[1]]
            return [np.zeros(len(s.dofs)) for s in self.external.systems]
        _, v, _, gains = self.last_solution
        tau = np.clip(gains.b - gains.c * v[gains.dof], -gains.e, gains.e)
        return [tau[a:z].copy() for a, z in self.external.last_bounds]


@njit(cache=True)
def contact_forces(v, pool, vs, dt, force, slip):
    """Average contact forces [N] on body B over a step of size dt at the solution v (world frame) and slip
    speeds [m/s] (tangential relative speed at the contact) of the contacts of ``pool`` (a
    :class:`~cenic_gym.icf.ContactPool`, or its fields as a plain tuple: :func:`pool_args`), written into ``force``
    (n, 3) and ``slip`` (n,)."""
    pool = ContactPool(*pool)
    n, normal = pool.n, pool.normal
    vc = np.empty((n, 3))
    slv.constraint_velocities(v, pool.Jc, pool.cols, pool.ncols, n, vc)
    for i in range(n):
        contact_impulse(vc[i], normal[i], dt, pool.phi0[i], pool.k[i], pool.d[i], pool.mu[i], pool.fn0[i], vs,
                        force[i])
        vn = vc[i, 0] * normal[i, 0] + vc[i, 1] * normal[i, 1] + vc[i, 2] * normal[i, 2]
        tx = vc[i, 0] - vn * normal[i, 0]
        ty = vc[i, 1] - vn * normal[i, 1]
        tz = vc[i, 2] - vn * normal[i, 2]
        slip[i] = math.sqrt(tx * tx + ty * ty + tz * tz)
        for j in range(3):
            force[i, j] /= dt


@dataclass(frozen=True)
class ContactResults:
    """Contacts of one accepted step (world frame, SI units), one row per contact point.

    point (n, 3) [m]: midpoint of the witness points; normal (n, 3): unit, from geometry A to B; phi (n,) [m]:
    signed distance (< 0: penetration); force (n, 3) [N]: average force on B over the step (−force acts on A);
    slip_speed (n,) [m/s]: tangential relative speed of B with respect to A at the point; geom_a, geom_b (n,):
    geometry indices; names_a, names_b: geometry names; body_a, body_b: names of the bodies (joints) they move
    with ("world" for fixed geometry)."""

    point: np.ndarray
    normal: np.ndarray
    phi: np.ndarray
    force: np.ndarray
    slip_speed: np.ndarray
    geom_a: np.ndarray
    geom_b: np.ndarray
    names_a: tuple
    names_b: tuple
    body_a: tuple
    body_b: tuple

    @property
    def n(self):
        return self.phi.shape[0]

    @property
    def penetration(self):
        """max(0, −φ) per contact [m]."""
        return np.maximum(0.0, -self.phi)

    @classmethod
    def empty(cls):
        z3, z, zi = np.zeros((0, 3)), np.zeros(0), np.zeros(0, dtype=np.int64)
        return cls(z3, z3, z, z3, z, zi, zi, (), (), (), ())
