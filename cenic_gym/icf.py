"""The convex problem of one ICF step (Irrotational Contact Fields; CENIC §IV, docs/physics.md §1–2).

    v^{n+1} = argmin_v  ℓ(v) = ½ vᵀ A v − rᵀ v + Σ_pools Σ_i ℓ_i(v_c,i)

Four constraint pools, each a named struct of flat arrays (a ``namedtuple``: numba passes it to the kernels as one
argument with named fields) frozen at x^n (the *lagged* quantities) plus the step δt:

* contact (compliant point contact, Hunt–Crossley normal law + Lagged friction, ICF §V-B, §VI):
  per contact i a compact 3 x m_i relative-velocity Jacobian ``Jc[i]`` over generalized-velocity columns
  ``cols[i, :ncols[i]]`` (world frame, v_c = v_B − v_A at the contact point), normal n̂ from A to B, signed distance
  φ0 [m], stiffness k [N/m], dissipation d [s/m], lagged friction coefficient μ, lagged normal force
  f_n0 = k (−φ0)_+ (1 − d v_n^n)_+ [N] and a Delassus estimate w [1/kg] (the Coulomb tolerance's scale). Under
  error control a solve may replace f_n0 by the step's own average normal force (issue 10,
  :func:`cenic_gym.solver.solve_coulomb`); the kernels only see a constant per solve.
* limits (near-rigid one-sided joint limits, CENIC §IV-D with errata E1, E2): per 1-DOF joint the velocity index,
  position c^n, bounds, and the effective mass m = 1/W_ii.
* gains (effort-limited linear control laws τ = clamp(b − c v, ±e), CENIC eq. 19–20 in the continuous Huber form
  of docs/physics.md §2.9): per entry the velocity index, c ≥ 0, b, e (may be inf). Every external system (PD,
  PID and inverse-dynamics controllers, the suction element) contributes its linearization to this pool.
* couplers (q_0 = ρ q_1 + offset between two 1-DOF joints, URDF ``<mimic>``, docs/physics.md §2.8): the limit
  potential with both bounds at 0 on c = q_0 − ρ q_1 − offset.

Each pool (one section below: :class:`ContactPool`, :class:`LimitPool`, :class:`GainPool`, :class:`CouplerPool`)
has a kernel adding its cost, gradient and Hessian to the problem's (``<pool>_pool_cost``) and one adding its value
and first / second derivative along a search direction (``<pool>_pool_line``: line search in linear time,
docs/physics.md §3.2); :mod:`cenic_gym.solver` sums them. All kernels are numba, no fastmath. The pool and per-contact
kernels the Newton loop calls are inlined (``inline="always"``): a call that passes a pool by value increments and
decrements the reference count of each of its arrays (the four pools hold 24), which had cost more than the pools'
own arithmetic in a line-search evaluation (Go1: 0.55 µs per evaluation, 0.20 µs inlined; docs/performance.md "The
convex solve"); inlined calls still count them, so :func:`cenic_gym.solver.solve` runs its Newton loop on the same
arrays in one structref per pool (the kernels read the fields by name and take either).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

LIMIT_BETA = 0.1  # near-rigid parameter β (CENIC §IV-D)
_DELTA = 10.0  # Δ of the static/dynamic friction blend (CENIC eq. 8)


# ---------------------------------------------------------------------------------------------------------------
# Friction regularizer and static/dynamic blend
# ---------------------------------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _reg_f(s):
    """ICF eq. 9: f(s) = s / sqrt(1 + s^2)."""
    return s / math.sqrt(1.0 + s * s)


@njit(cache=True, error_model="numpy")
def stribeck_mu(speed, vs, mu_s, mu_d):
    """Lagged friction coefficient μ(‖v_t‖/v_s) (CENIC eq. 7–8): μ_s at rest, μ_d above ~10 v_s."""
    s = speed / vs
    sig = 0.5 * (1.0 - _reg_f(abs(s) - _DELTA) / _reg_f(_DELTA))
    return (mu_s - mu_d) * sig + mu_d


# ---------------------------------------------------------------------------------------------------------------
# Contact potential (docs/physics.md §2.2–2.4)
# ---------------------------------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def contact_step_params(dt, phi0, k, d, fn0, vs):
    """Quantities of one contact that depend on δt: (γ_n0 [N s], ε [m/s], v̂ [m/s], 1/d). The friction's
    regularization is ε = v_s, whatever the step and the normal force (docs/physics.md §2.3; the regularized Lagged
    ε = max(v_s, σ w μ γ_n0) of ICF eq. 26 lets sustained grips and wedged parts creep at cm/s)."""
    gn0 = dt * fn0
    eps = vs
    inv_d = 1.0 / d if d > 0.0 else 1.0e20
    vhat = min(-phi0 / dt, inv_d)
    return gn0, eps, vhat, inv_d


@njit(cache=True, error_model="numpy")
def _n_plus(v, dt, phi0, k, d):
    """N⁺(v) = ∫ n, the antiderivative of the normal impulse (ICF §VI)."""
    return dt * k * (-v * (phi0 + 0.5 * dt * v) + 0.5 * d * v * v * (phi0 + 2.0 / 3.0 * dt * v))


@njit(cache=True, error_model="numpy")
def normal_cost(vn, dt, phi0, k, d, vhat):
    """ℓ_n(v_n) = −N⁺(min(v_n, v̂)) and its first and second derivative (Hunt–Crossley, fully implicit)."""
    if vn < vhat:
        cost = -_n_plus(vn, dt, phi0, k, d)
        fe = -k * phi0 - dt * k * vn  # elastic force at the end of the step (unclipped base, pitfall P7)
        damp = 1.0 - d * vn
        grad = -dt * fe * damp  # = −n(v_n)
        hess = dt * (dt * k * damp + d * fe)
        return cost, grad, hess
    return -_n_plus(vhat, dt, phi0, k, d), 0.0, 0.0


@njit(cache=True, error_model="numpy", inline="always")
def contact_cost(vc, nh, dt, phi0, k, d, mu, fn0, vs, want_hess):
    """Cost of one contact at relative velocity vc (3 numbers), world frame, with normal nh (3 numbers).
    Returns (ℓ, ∇ℓ, ∇²ℓ): the gradient as 3 numbers, the 3x3 Hessian as 9 (row-major; zeros unless
    ``want_hess``). Scalars only: no array is allocated or referenced."""
    gn0, eps, vhat, _ = contact_step_params(dt, phi0, k, d, fn0, vs)
    vn = vc[0] * nh[0] + vc[1] * nh[1] + vc[2] * nh[2]
    vt0 = vc[0] - vn * nh[0]
    vt1 = vc[1] - vn * nh[1]
    vt2 = vc[2] - vn * nh[2]
    s_eps = math.sqrt(vt0 * vt0 + vt1 * vt1 + vt2 * vt2 + eps * eps)
    ln, dln, d2ln = normal_cost(vn, dt, phi0, k, d, vhat)
    mg = mu * gn0
    cost = mg * (s_eps - eps) + ln
    c = mg / s_eps
    grad = (c * vt0 + dln * nh[0], c * vt1 + dln * nh[1], c * vt2 + dln * nh[2])
    hess = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if want_hess:
        t0, t1, t2 = vt0 / s_eps, vt1 / s_eps, vt2 / s_eps
        n0, n1, n2 = nh[0], nh[1], nh[2]
        hess = (c * (1.0 - n0 * n0 - t0 * t0) + d2ln * n0 * n0, c * (0.0 - n0 * n1 - t0 * t1) + d2ln * n0 * n1,
                c * (0.0 - n0 * n2 - t0 * t2) + d2ln * n0 * n2,
                c * (0.0 - n1 * n0 - t1 * t0) + d2ln * n1 * n0, c * (1.0 - n1 * n1 - t1 * t1) + d2ln * n1 * n1,
                c * (0.0 - n1 * n2 - t1 * t2) + d2ln * n1 * n2,
                c * (0.0 - n2 * n0 - t2 * t0) + d2ln * n2 * n0, c * (0.0 - n2 * n1 - t2 * t1) + d2ln * n2 * n1,
                c * (1.0 - n2 * n2 - t2 * t2) + d2ln * n2 * n2)
    return cost, grad, hess


@njit(cache=True, error_model="numpy", inline="always")
def contact_line_derivs(vc, u, nh, dt, phi0, k, d, mu, fn0, vs):
    """ℓ, dℓ/dα and d²ℓ/dα² of one contact along v_c + α u, evaluated at α = 0 (linear-time line search)."""
    gn0, eps, vhat, _ = contact_step_params(dt, phi0, k, d, fn0, vs)
    vn = vc[0] * nh[0] + vc[1] * nh[1] + vc[2] * nh[2]
    un = u[0] * nh[0] + u[1] * nh[1] + u[2] * nh[2]
    vt0, vt1, vt2 = vc[0] - vn * nh[0], vc[1] - vn * nh[1], vc[2] - vn * nh[2]
    ut0, ut1, ut2 = u[0] - un * nh[0], u[1] - un * nh[1], u[2] - un * nh[2]
    s_eps = math.sqrt(vt0 * vt0 + vt1 * vt1 + vt2 * vt2 + eps * eps)
    ln, dln, d2ln = normal_cost(vn, dt, phi0, k, d, vhat)
    mg = mu * gn0
    tu = (vt0 * ut0 + vt1 * ut1 + vt2 * ut2) / s_eps
    uu = ut0 * ut0 + ut1 * ut1 + ut2 * ut2
    cost = mg * (s_eps - eps) + ln
    d1 = mg * tu + dln * un
    d2 = mg / s_eps * (uu - tu * tu) + d2ln * un * un
    return cost, d1, d2


@njit(cache=True, error_model="numpy")
def contact_impulse(vc, nh, dt, phi0, k, d, mu, fn0, vs, out):
    """γ = −∇ℓ_c (3,), the impulse on body B [N s], world frame."""
    _, grad, _ = contact_cost((vc[0], vc[1], vc[2]), (nh[0], nh[1], nh[2]), dt, phi0, k, d, mu, fn0, vs, False)
    for a in range(3):
        out[a] = -grad[a]


@njit(cache=True, error_model="numpy")
def friction_bound_sensitivity(vc, nh, dt, phi0, k, d, mu, fn0, vs, out):
    """How one contact's cost gradient moves with its friction bound b = δt f_n0 [N s] (the constant of ℓ_t = μ b ‖v_t‖_s,
    :func:`cenic_gym.solver.solve_coulomb`), at relative velocity vc (3,), world frame.

    Writes ∂(∇ℓ_c)/∂b (3,) (dimensionless: ∇ℓ_c is an impulse) into ``out``:
    ∂/∂b (μ b v_t / s_ε) = μ v_t / s_ε, with s_ε = √(‖v_t‖² + ε²) (ε = v_s does not depend on b).
    Returns ℓ_n''(v_n) = −∂γ_n/∂v_n [kg], the normal law's curvature (0 where the contact is open)."""
    gn0, eps, vhat, _ = contact_step_params(dt, phi0, k, d, fn0, vs)
    vn = vc[0] * nh[0] + vc[1] * nh[1] + vc[2] * nh[2]
    vt0, vt1, vt2 = vc[0] - vn * nh[0], vc[1] - vn * nh[1], vc[2] - vn * nh[2]
    s_eps = math.sqrt(vt0 * vt0 + vt1 * vt1 + vt2 * vt2 + eps * eps)
    c = mu / s_eps
    out[0], out[1], out[2] = c * vt0, c * vt1, c * vt2
    _, _, hess = normal_cost(vn, dt, phi0, k, d, vhat)
    return hess


ContactPool = namedtuple("ContactPool", ["Jc", "cols", "ncols", "normal", "phi0", "k", "d", "mu", "fn0", "w", "n"])
ContactPool.__doc__ = """The contact pool: ``n`` contacts (arrays may be longer; entries past n are ignored). Jc (≥n, 3, m)
compact relative-velocity Jacobians over the columns ``cols[i, :ncols[i]]``; normal (≥n, 3) n̂ from A to B (world);
phi0 φ0 [m]; k [N/m]; d [s/m]; mu the lagged μ; fn0 f_n0 [N] (or the step's own normal force, issue 10); w [1/kg]."""


@njit(cache=True, error_model="numpy", inline="always")
def contact_pool_cost(pool, v, dt, vs, cost, grad, H, want_hess):
    """cost + Σ_i ℓ_c,i(J_i v); adds Σ J_iᵀ ∇ℓ_c,i to grad and (if want_hess) Σ J_iᵀ ∇²ℓ_c,i J_i to the lower
    triangle of H (the pools' Hessians are symmetric and the factorization reads only that; the upper triangle is
    not touched). Allocates nothing (each entry of H gets one sum per contact, as from a J_iᵀ (∇²ℓ_c,i J_i)
    product); ``cols[i, :ncols[i]]`` ascending."""
    Jc, cols, ncols, normal = pool.Jc, pool.cols, pool.ncols, pool.normal
    phi0, k, d, mu, fn0 = pool.phi0, pool.k, pool.d, pool.mu, pool.fn0
    for i in range(pool.n):
        m = ncols[i]
        vc0, vc1, vc2 = 0.0, 0.0, 0.0
        for j in range(m):
            vj = v[cols[i, j]]
            vc0 += Jc[i, 0, j] * vj
            vc1 += Jc[i, 1, j] * vj
            vc2 += Jc[i, 2, j] * vj
        c, gi, Hi = contact_cost((vc0, vc1, vc2), (normal[i, 0], normal[i, 1], normal[i, 2]), dt, phi0[i], k[i],
                                 d[i], mu[i], fn0[i], vs, want_hess)
        cost += c
        for j in range(m):
            grad[cols[i, j]] += Jc[i, 0, j] * gi[0] + Jc[i, 1, j] * gi[1] + Jc[i, 2, j] * gi[2]
        if want_hess:
            for j2 in range(m):  # column j2 of ∇²ℓ_c,i J_i, then its products with the columns j1 ≥ j2 of J_i
                c2 = cols[i, j2]
                h0 = Hi[0] * Jc[i, 0, j2] + Hi[1] * Jc[i, 1, j2] + Hi[2] * Jc[i, 2, j2]
                h1 = Hi[3] * Jc[i, 0, j2] + Hi[4] * Jc[i, 1, j2] + Hi[5] * Jc[i, 2, j2]
                h2 = Hi[6] * Jc[i, 0, j2] + Hi[7] * Jc[i, 1, j2] + Hi[8] * Jc[i, 2, j2]
                for j1 in range(j2, m):  # cols ascending: the lower triangle
                    H[cols[i, j1], c2] += Jc[i, 0, j1] * h0 + Jc[i, 1, j1] * h1 + Jc[i, 2, j1] * h2
    return cost


@njit(cache=True, error_model="numpy", inline="always")
def contact_pool_line(pool, vc, uc, alpha, dt, vs, f, d1, d2):
    """(f, d1, d2) + Σ_i (ℓ_c,i, dℓ_c,i/dα, d²ℓ_c,i/dα²) at v + α p, from the contact velocities vc = J v and
    uc = J p (n, 3) of the line's start and direction."""
    normal, phi0, k, d, mu, fn0 = pool.normal, pool.phi0, pool.k, pool.d, pool.mu, pool.fn0
    for i in range(pool.n):
        u = (uc[i, 0], uc[i, 1], uc[i, 2])
        x = (vc[i, 0] + alpha * u[0], vc[i, 1] + alpha * u[1], vc[i, 2] + alpha * u[2])
        c, g, h = contact_line_derivs(x, u, (normal[i, 0], normal[i, 1], normal[i, 2]), dt, phi0[i], k[i], d[i],
                                      mu[i], fn0[i], vs)
        f += c
        d1 += g
        d2 += h
    return f, d1, d2


# ---------------------------------------------------------------------------------------------------------------
# Joint limits (CENIC §IV-D, errata E1–E3)
# ---------------------------------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def limit_params(dt, m):
    """Near-rigid stiffness k = 4π² m / (β² δt²), dissipation time τ = β δt / π; returns (R⁻¹ = δt(δt+τ)k, δt+τ)."""
    k = 4.0 * math.pi * math.pi * m / (LIMIT_BETA * LIMIT_BETA * dt * dt)
    tau = LIMIT_BETA * dt / math.pi
    return dt * (dt + tau) * k, dt + tau


@njit(cache=True, error_model="numpy")
def limit_cost(cdot, c, lo, hi, m, dt):
    """One-sided quadratic limit costs; returns (ℓ, dℓ/dċ, d²ℓ/dċ²)."""
    rinv, h = limit_params(dt, m)
    cost = 0.0
    g = 0.0
    H = 0.0
    vl = (lo - c) / h
    if cdot < vl:
        x = vl - cdot
        cost += 0.5 * rinv * x * x
        g -= rinv * x
        H += rinv
    vu = (hi - c) / h
    if cdot > vu:
        x = cdot - vu
        cost += 0.5 * rinv * x * x
        g += rinv * x
        H += rinv
    return cost, g, H


LimitPool = namedtuple("LimitPool", ["dof", "c", "lower", "upper", "m"])
LimitPool.__doc__ = """The joint-limit pool: per 1-DOF joint its velocity index ``dof``, position c^n [m or rad], bounds
``lower`` ≤ ``upper`` and effective mass m = 1/W_ii [kg or kg m²] (erratum E3)."""


@njit(cache=True, error_model="numpy", inline="always")
def limit_pool_cost(pool, v, dt, cost, grad, H, want_hess):
    """cost + Σ_i ℓ_lim,i(v_dof); adds the gradient and the (diagonal) Hessian."""
    dof, cn, lower, upper, m = pool.dof, pool.c, pool.lower, pool.upper, pool.m
    for i in range(dof.shape[0]):
        col = dof[i]
        c, g, h = limit_cost(v[col], cn[i], lower[i], upper[i], m[i], dt)
        cost += c
        grad[col] += g
        if want_hess:
            H[col, col] += h
    return cost


@njit(cache=True, error_model="numpy", inline="always")
def limit_pool_line(pool, v, p, alpha, dt, f, d1, d2):
    """(f, d1, d2) + the pool's value and derivatives along v + α p."""
    dof, cn, lower, upper, m = pool.dof, pool.c, pool.lower, pool.upper, pool.m
    for i in range(dof.shape[0]):
        col = dof[i]
        c, g, h = limit_cost(v[col] + alpha * p[col], cn[i], lower[i], upper[i], m[i], dt)
        f += c
        d1 += g * p[col]
        d2 += h * p[col] * p[col]
    return f, d1, d2


# ---------------------------------------------------------------------------------------------------------------
# Effort-limited linear control laws (CENIC eq. 19–20, Huber form, erratum E4)
# ---------------------------------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _huber(y, e):
    a = abs(y)
    if a <= e:
        return 0.5 * y * y
    return e * a - 0.5 * e * e


@njit(cache=True, error_model="numpy")
def gain_cost(v, c, b, e, dt):
    """τ = clamp(b − c v, ±e) integrated implicitly: returns (ℓ, dℓ/dv, d²ℓ/dv²) with dℓ/dv = −δt τ.

    ℓ = (δt/c)(Huber_e(b − c v) − Huber_e(b)) is continuous in c and tends to −δt clamp(b, ±e) v as c → 0."""
    y = b - c * v
    tau = min(max(y, -e), e)
    if c > 0.0:
        cost = dt / c * (_huber(y, e) - _huber(b, e))
        H = dt * c if abs(y) < e else 0.0
    else:
        cost = -dt * tau * v
        H = 0.0
    return cost, -dt * tau, H


GainPool = namedtuple("GainPool", ["dof", "c", "b", "e"])
GainPool.__doc__ = """The gain pool: per entry the velocity index ``dof`` and the law τ = clamp(b − c v_dof, ±e)
(c ≥ 0 [N m s/rad or N s/m], b [N m or N], e > 0, may be inf), the linearizations of the external systems."""


@njit(cache=True, error_model="numpy", inline="always")
def gain_pool_cost(pool, v, dt, cost, grad, H, want_hess):
    """cost + Σ_i ℓ_gain,i(v_dof); adds the gradient (−δt τ_i) and the (diagonal) Hessian."""
    dof, cn, b, e = pool.dof, pool.c, pool.b, pool.e
    for i in range(dof.shape[0]):
        col = dof[i]
        c, g, h = gain_cost(v[col], cn[i], b[i], e[i], dt)
        cost += c
        grad[col] += g
        if want_hess:
            H[col, col] += h
    return cost


@njit(cache=True, error_model="numpy", inline="always")
def gain_pool_line(pool, v, p, alpha, dt, f, d1, d2):
    """(f, d1, d2) + the pool's value and derivatives along v + α p."""
    dof, cn, b, e = pool.dof, pool.c, pool.b, pool.e
    for i in range(dof.shape[0]):
        col = dof[i]
        c, g, h = gain_cost(v[col] + alpha * p[col], cn[i], b[i], e[i], dt)
        f += c
        d1 += g * p[col]
        d2 += h * p[col] * p[col]
    return f, d1, d2


# ---------------------------------------------------------------------------------------------------------------
# Couplers (docs/physics.md §2.8): the limit potential with both bounds at 0 on c = q_0 − ρ q_1 − offset
# ---------------------------------------------------------------------------------------------------------------

CouplerPool = namedtuple("CouplerPool", ["dof0", "dof1", "ratio", "c", "m"])
CouplerPool.__doc__ = """The coupler pool: per coupler q_dof0 = ρ q_dof1 + offset, its velocity indices, ρ = ``ratio``,
c^n = q_0 − ρ q_1 − offset [m or rad] and m = 1/(1/M_00 + ρ²/M_11)."""


@njit(cache=True, error_model="numpy", inline="always")
def coupler_pool_cost(pool, v, dt, cost, grad, H, want_hess):
    """cost + Σ_i ℓ_lim(ċ_i; c_i, 0, 0) with ċ = v_0 − ρ v_1; adds the gradient and the Hessian's lower triangle (3 of
    its 2 x 2 entries per coupler)."""
    dof0, dof1, ratio, cn, m = pool.dof0, pool.dof1, pool.ratio, pool.c, pool.m
    for i in range(dof0.shape[0]):
        a = dof0[i]
        b = dof1[i]
        rho = ratio[i]
        c, g, h = limit_cost(v[a] - rho * v[b], cn[i], 0.0, 0.0, m[i], dt)
        cost += c
        grad[a] += g
        grad[b] -= rho * g
        if want_hess:
            H[a, a] += h
            H[max(a, b), min(a, b)] -= rho * h  # the lower triangle (a ≠ b), as the contact pool
            H[b, b] += rho * rho * h
    return cost


@njit(cache=True, error_model="numpy", inline="always")
def coupler_pool_line(pool, v, p, alpha, dt, f, d1, d2):
    """(f, d1, d2) + the pool's value and derivatives along v + α p."""
    dof0, dof1, ratio, cn, m = pool.dof0, pool.dof1, pool.ratio, pool.c, pool.m
    for i in range(dof0.shape[0]):
        a = dof0[i]
        b = dof1[i]
        u = p[a] - ratio[i] * p[b]
        c, g, h = limit_cost(v[a] - ratio[i] * v[b] + alpha * u, cn[i], 0.0, 0.0, m[i], dt)
        f += c
        d1 += g * u
        d2 += h * u * u
    return f, d1, d2


# ---------------------------------------------------------------------------------------------------------------
# Lagged contact parameters (computed once per geometry query, independent of δt)
# ---------------------------------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def contact_lagged_params(v, Jc, cols, ncols, normal, phi, k, d, mu_s, mu_d, minv_diag, vs, nc,
                          out_mu, out_fn0, out_w):
    """From the state velocity v^n: lagged μ(‖v_t^n‖/v_s), lagged normal force f_n0 = k(−φ0)_+(1 − d v_n^n)_+
    and a diagonal Delassus estimate w = tr(J diag(M)⁻¹ Jᵀ)/3 per contact."""
    vc = np.zeros(3)
    for i in range(nc):
        vc[:] = 0.0
        wi = 0.0
        for j in range(ncols[i]):
            col = cols[i, j]
            for a in range(3):
                vc[a] += Jc[i, a, j] * v[col]
                wi += Jc[i, a, j] * Jc[i, a, j] * minv_diag[col]
        vn = vc[0] * normal[i, 0] + vc[1] * normal[i, 1] + vc[2] * normal[i, 2]
        vt = math.sqrt(max(vc[0] ** 2 + vc[1] ** 2 + vc[2] ** 2 - vn * vn, 0.0))
        out_mu[i] = stribeck_mu(vt, vs, mu_s[i], mu_d[i])
        out_fn0[i] = k[i] * max(-phi[i], 0.0) * max(1.0 - d[i] * vn, 0.0)
        out_w[i] = wi / 3.0
