"""Newton's method with exact line search for the ICF convex problem (CENIC §VI, docs/physics.md §3).

Everything runs in one numba call per convex solve: the cost, gradient and Hessian sums over the constraint
pools of :mod:`cenic_gym.icf`, a Cholesky factorization (:func:`cholesky`: dense, or by blocks of
independent kinematic trees where a scene has many — a bin of objects, a hand's fingers), the exact line search
(safeguarded Newton–Raphson on ℓ'(α) with bisection fallback and the cubic Hermite initial guess, CENIC §VI-D), and
the convergence tests (32)–(34) on the diag(M)^(-1/2)-scaled norms. Hessian reuse (CENIC eq. 35) is optional.

The problem is ``A, r`` plus one named struct of flat arrays per constraint pool (:class:`~cenic_gym.icf.ContactPool`,
:class:`~cenic_gym.icf.LimitPool`, :class:`~cenic_gym.icf.GainPool`, :class:`~cenic_gym.icf.CouplerPool`); the solution is written into ``v`` in place and a small integer array of
statistics is filled:
``stats = [newton_iterations, line_search_iterations, factorizations, converged (1/0)]``.

Friction bounds at impacts (issue 10; :func:`solve_coulomb`, :func:`friction_bound_mismatch`)
--------------------------------------------------------------------------------------------
What changes: the normal impulse in the Lagged friction bound, docs/physics.md §2.3 / ICF eq. 18 / CENIC eq. 14,
``ℓ_t = μ γ_n0 ‖v_t‖_s`` with ``γ_n0 = δt f_n(x^n)``. Under error control (CENIC steps; fixed steps keep the paper's
Lagged model) γ_n0 becomes, per contact, a constant b_i that agrees with the step's own normal impulse
``γ_n,i = n(v_n,i^{n+1})`` (ICF eq. 7): the lagged solve runs first and is kept when its normal impulses agree with
its bounds; otherwise b = γ_n(v*(b)) is solved by Newton's method on the bounds (:func:`coulomb_newton_bounds`: the
Jacobian ∂γ_n/∂b from the implicit function theorem at the minimiser), each iterate a full solve warm-started from
the first-order prediction of the last.
Agreement: friction beyond the cone ‖γ_t‖ − μγ_n and the friction change μ f(s)|γ_n − b|/(1 + w G_t) within
rtol = √ε_acc relative and ε_acc [m/s] absolute (contact-point velocity, via the Delassus estimate w); no agreement
after :data:`MAX_FRICTION_SOLVES` solves rejects the step (counted as a solver failure), which then shrinks.

Why it stays convex: within a solve b is a constant, so every solve minimises exactly the ICF cost of
docs/physics.md §2.4 (ℓ_t = μ b ‖v_t‖_s is convex in v_t for any b ≥ 0; ℓ_n, the regularization ε = max(v_s, σ w μ b)
and the Stribeck μ(‖v_t^n‖) are unchanged): A ≻ 0, one minimiser, Newton with exact line search converges. The
implicit law "b = γ_n(v)" inside one problem would break the curl condition (ICF eq. 16, the "true" model eq. 11);
it is only ever imposed between solves. Consistency: wherever the normal force is smooth, γ_n − γ_n0 = O(δt²) and,
once that is below the tolerance, the lagged solve is accepted unchanged (the same trajectory as before); otherwise
the accepted step is the Lagged step with the bound moved to the backward-Euler normal impulse of the same step (as
consistent, still first order, and to the tolerance the "true" Coulomb bound of ICF eq. 11); at an impact the
lagged γ_n0 is O(1) wrong (−kφ0·d v_n^n dominated, or 0 for a contact appearing inside the step) whatever δt,
which is why position-only error control cannot fix it and the Lagged model converged only near ε = 1e-7.

Evidence (falling sphere of ICF §XI-B, analytic release-to-rolling 2U0/(7μg) = 0.1165 s, skid after touchdown
15.5 ms; tests/test_impact_friction.py; 2-core VM, NUMBA_NUM_THREADS=1):

==================================  ===========  ===========  ===========  ============  =======================
skid after touchdown (rel. error)    ε = 1e-3     ε = 1e-4     ε = 1e-5     ε = 1e-6     cost at 1e-4 (solves)
==================================  ===========  ===========  ===========  ============  =======================
Lagged (before)                      +281 %       −99 %        −94 %        +256 %        117
(a) error on ‖Δv‖·δt as well         +156 %       −39 %        −29 %        –             153
(a) error on ‖Δv‖ [m/s] as well      +23 %        +8 %         +2 %         –             3117 (27×)
(c) split the step at touchdown      +415 %       +33 %        +5 %         –             156
(b) bound from own normal impulse    +20 %        +9 %         +2 %         +0.4 %        182
==================================  ===========  ===========  ===========  ============  =======================

(a) compares step sizes that share the bias (full and half steps all grip) or, in velocity units, pays for every
impact's velocity spike (pitfall P5) and still leaves frictionless landing steps; (c) makes the landing step start
at φ0 ≈ 0, i.e. f_n(x^n) ≈ 0 — frictionless. (Rows (a) and (c) were measured with prototypes that are not kept.)
(b) keeps release-to-rolling within 0.4 % for every ε from 1e-2 to 1e-6 (the skid error, +30 % … +0.4 %, is mostly
the first-order touchdown time of the free fall) and the Coulomb cone per accepted step to the tolerance above
(Lagged: up to 1e4 ε/w beyond it on the landing sphere at ε = 1e-4, ~40 ε/w on a box landing on an edge, ~800 ε/w at
a trotting Go1's footfalls at 1e-3).

Cost (``benchmarks/impact_friction.py``, RESULTS.md "Coulomb's law at impacts"; Lagged → this, ε = 1e-3): scenes
without impacts take the same steps and solves (sphere drop, incline stick, on-ground sphere) or a few more (incline
slide: 2 of 47 solves), wall within noise; impact scenes pay for the re-solves (wall ranges of two runs on a loaded
2-core machine): clutter (20 bodies) +11–38 % wall, +48 % Newton iterations (+55–82 % wall, 2.0× Newton at 1e-4), a
dropped Go1 +17–36 %, the Go1 trot of CenicQuadruped-v0 +12–32 % wall per env step (2.2× solves, +56 % Newton). Most re-solves in clutter and the trot are not landings but
loaded contacts whose normal force changes by more than √ε of itself per step, where the Lagged bound is O(δt) off.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.experimental import structref

from .icf import (ContactPool, CouplerPool, GainPool, LimitPool, contact_pool_cost, contact_pool_line,
                  contact_step_params, coupler_pool_cost, coupler_pool_line, friction_bound_sensitivity, gain_pool_cost,
                  gain_pool_line, limit_pool_cost, limit_pool_line, normal_cost)

MAX_NEWTON_ITERATIONS = 100
LS_TOLERANCE = 1.0e-8
LS_MAX_ITERATIONS = 100
ALPHA_MAX = 1.0
MAX_FRICTION_SOLVES = 6  # convex solves per step of solve_coulomb before the step is rejected
FRICTION_KAPPA = 1.0  # solve_coulomb: friction bounds agree with the normal impulses to κ_f √ε_acc (relative)

# stats indices
NEWTON_ITERS, LS_ITERS, FACTORIZATIONS, CONVERGED = 0, 1, 2, 3


# -- the pools inside the Newton loop, by reference ---------------------------------------------------------------
# A pool namedtuple is a value: every numba call that takes it, inlined or not, increments and decrements the
# reference count of each of its arrays (atomic operations; the four pools hold 24 arrays), and LLVM's pruning leaves
# those in the Newton loop (310 call sites in the loops of the compiled solve). :func:`solve` hands the Newton loop
# the same arrays in one structref per pool instead: one count per pool and call, field reads pruned within their
# block (130 call sites). :func:`solve_coulomb` takes them by reference: the integrator builds the pools of a
# cached state once (``cenic.new_state_args``), not per solve. Same arithmetic, same bits; a Go1 solve 1.12x
# (docs/performance.md "The convex solve").


class FieldsType(types.StructRef):
    """A structref type whose fields have the types of the values it is built from (the pools' here, the
    integrator's workspaces in :mod:`cenic_gym.cenic`)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@structref.register
class ContactPoolRefType(FieldsType):
    pass


@structref.register
class LimitPoolRefType(FieldsType):
    pass


@structref.register
class GainPoolRefType(FieldsType):
    pass


@structref.register
class CouplerPoolRefType(FieldsType):
    pass


class ContactPoolRef(structref.StructRefProxy):
    """:class:`~cenic_gym.icf.ContactPool` by reference (the pools :func:`_newton` and :func:`solve_coulomb` take)."""


class LimitPoolRef(structref.StructRefProxy):
    """:class:`~cenic_gym.icf.LimitPool` by reference (the pools :func:`_newton` and :func:`solve_coulomb` take)."""


class GainPoolRef(structref.StructRefProxy):
    """:class:`~cenic_gym.icf.GainPool` by reference (the pools :func:`_newton` and :func:`solve_coulomb` take)."""


class CouplerPoolRef(structref.StructRefProxy):
    """:class:`~cenic_gym.icf.CouplerPool` by reference (the pools :func:`_newton` and :func:`solve_coulomb` take)."""


for _ref, _typ, _pool in ((ContactPoolRef, ContactPoolRefType, ContactPool),
                          (LimitPoolRef, LimitPoolRefType, LimitPool),
                          (GainPoolRef, GainPoolRefType, GainPool),
                          (CouplerPoolRef, CouplerPoolRefType, CouplerPool)):
    structref.define_proxy(_ref, _typ, list(_pool._fields))


# -- the Newton loop's arrays, allocated once ---------------------------------------------------------------------
# A solve of the one-body scenes takes a few microseconds, and it allocated ~15 arrays (gradient, Hessian, search
# direction, contact velocities, the factor's block pattern and lists), each a malloc, a free and reference counts.
# The integrator keeps them in one workspace (``cenic.SolveWorkspace.newton``); :func:`solve` builds one per call.
# Same arithmetic, same bits; a sphere drop 1.06-1.11x faster (docs/performance.md "The convex solve").

@structref.register
class NewtonWorkspaceType(FieldsType):
    pass


class NewtonWorkspace(structref.StructRefProxy):
    """The arrays of :func:`_newton` and :func:`solve_coulomb` for n_v unknowns, up to ``capacity`` contacts and
    the factorization's block partition (:func:`new_newton_workspace`): grad, p, Av (n_v,) the gradient, the search
    direction and A v; H (n_v, n_v) the Hessian (lower triangle); vc, uc (capacity, 3) the contact velocities of v
    and p; gn (capacity,) the normal impulses of :func:`friction_bound_mismatch`; tri_blocks the triangular solves'
    partition (:func:`solve_partition`); mask (n_b, n_b) the factor's block pattern ([[True]] dense: :func:`cholesky`)
    and candidates (n_b, n_b) H's (:func:`coupled_blocks`); tree (n_v,) each unknown's block; seen, shared, below
    (n_b,) the lists of :func:`coupled_blocks_into`, :func:`cholesky_within` and :func:`cholesky_solve_into`.
    Not picklable (the integrator builds its own after a copy)."""


structref.define_proxy(NewtonWorkspace, NewtonWorkspaceType,
                       ["grad", "H", "p", "Av", "vc", "uc", "gn", "tri_blocks", "mask", "candidates", "tree", "seen",
                        "shared", "below"])


@njit(cache=True, error_model="numpy")
def constraint_velocities(v, Jc, cols, ncols, nc, out):
    """v_c,i = J_i v (nc, 3) from the compact Jacobians."""
    for i in range(nc):
        x0 = 0.0
        x1 = 0.0
        x2 = 0.0
        for j in range(ncols[i]):
            vj = v[cols[i, j]]
            x0 += Jc[i, 0, j] * vj
            x1 += Jc[i, 1, j] * vj
            x2 += Jc[i, 2, j] * vj
        out[i, 0] = x0
        out[i, 1] = x1
        out[i, 2] = x2


@njit(cache=True, error_model="numpy")
def block_matvec(A, x, blocks):
    """A x as a new array (:func:`block_matvec_into`)."""
    out = np.empty(x.shape[0])
    block_matvec_into(A, x, blocks, out)
    return out


@njit(cache=True, error_model="numpy")
def block_matvec_into(A, x, blocks, out):
    """out ← A x for A = M + δt D, block diagonal over the independent trees of ``blocks`` (:func:`factor_blocks`:
    the mass matrix never couples two trees), one dense block without blocks. A bin of 20 objects: 20 6×6 products
    instead of one 120×120. Loops, not BLAS (:func:`dot`). Returns the arguments' sizes, which no caller reads
    (the one exit that reads every argument: the comment there)."""
    nb = blocks.shape[0] - 1
    if nb < 1:
        _block_rows_times(A, x, 0, x.shape[0], out)
    for bi in range(nb):
        _block_rows_times(A, x, blocks[bi], blocks[bi + 1], out)
    # one exit that reads every argument: numba releases them all there, where LLVM's pruning pairs each release with
    # its count at entry, so a call costs no reference counts (docs/performance.md "Reference counts pruned")
    return A.size + x.size + blocks.size + out.size


@njit(cache=True, error_model="numpy", inline="always")
def _block_rows_times(A, x, b0, b1, out):
    """out[b0:b1] ← A[b0:b1, b0:b1] x[b0:b1], each entry one sum in ascending column order, four rows at a time
    (independent chains, as :func:`_factor_block`)."""
    i = b0
    while i + 4 <= b1:
        s0 = s1 = s2 = s3 = 0.0
        for j in range(b0, b1):
            xj = x[j]
            s0 += A[i, j] * xj
            s1 += A[i + 1, j] * xj
            s2 += A[i + 2, j] * xj
            s3 += A[i + 3, j] * xj
        out[i], out[i + 1], out[i + 2], out[i + 3] = s0, s1, s2, s3
        i += 4
    while i < b1:
        s = 0.0
        for j in range(b0, b1):
            s += A[i, j] * x[j]
        out[i] = s
        i += 1


@njit(cache=True, error_model="numpy", inline="always")
def dot(x, y):
    """xᵀy as four interleaved partial sums, (s0 + s1) + (s2 + s3). The solver's vector products are loops, not
    numba's BLAS calls: the same sums on every CPU (OpenBLAS picks its kernels, and with them the order of the
    additions, by CPU) and none of a call's overhead, whose checks and reference counts outweigh n_v ≤ 120
    multiplications (docs/performance.md "The convex solve")."""
    n = x.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    i = 0
    while i + 4 <= n:
        s0 += x[i] * y[i]
        s1 += x[i + 1] * y[i + 1]
        s2 += x[i + 2] * y[i + 2]
        s3 += x[i + 3] * y[i + 3]
        i += 4
    while i < n:
        s0 += x[i] * y[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, error_model="numpy")
def quadratic_cost(v, A, r, blocks, grad, Av):
    """½ vᵀA v − rᵀv, the unconstrained part of ℓ; writes its gradient A v − r into ``grad`` (and A v into the
    workspace ``Av``). Returns the value. blocks: A's block-diagonal partition (:func:`block_matvec`)."""
    block_matvec_into(A, v, blocks, Av)
    for a in range(v.shape[0]):
        grad[a] = Av[a] - r[a]
    return 0.5 * dot(v, Av) - dot(r, v)


@njit(cache=True, error_model="numpy")
def start_hessian(A, H, blocks, candidates):
    """H ← A on the lower triangle of the blocks the pools may write (``candidates`` of :func:`coupled_blocks`, the
    trees' diagonal blocks among them; A's entries off its diagonal blocks are zero): the Hessian before the pools
    add theirs (:func:`pool_costs`). No blocks: the whole lower triangle. The rest of H is neither written nor read
    (:func:`cholesky_within` reads the lower triangle of the candidates only): a bin of 20 objects (n_v = 120)
    writes ~1 100 of 14 400 entries per Newton iteration. Returns the arguments' sizes, which no caller reads (one
    exit reading every argument, as :func:`block_matvec_into`)."""
    nb = blocks.shape[0] - 1
    if nb < 1:
        _copy_lower_block(A, H, 0, A.shape[0])
    for bi in range(nb):
        _copy_lower_block(A, H, blocks[bi], blocks[bi + 1])
        for bj in range(bi):
            if candidates[bi, bj]:  # (loops, not a slice: a view would cost reference counts per block)
                for a in range(blocks[bi], blocks[bi + 1]):
                    for b in range(blocks[bj], blocks[bj + 1]):
                        H[a, b] = 0.0
    return A.size + H.size + blocks.size + candidates.size  # one exit reading every argument (block_matvec_into)


@njit(cache=True, error_model="numpy", inline="always")
def _copy_lower_block(A, H, b0, b1):
    """H ← A on the lower triangle of the diagonal block b0:b1."""
    for a in range(b0, b1):
        for b in range(b0, a + 1):
            H[a, b] = A[a, b]


@njit(cache=True, error_model="numpy")
def pool_costs(v, A, dt, vs, contacts, limits, gains, couplers, cost, grad, H, want_hess):
    """cost + the four pools' costs at v; adds their gradients to ``grad`` and (if want_hess) their Hessians to the
    lower triangle of H (:func:`start_hessian` puts A there first). Returns the sum."""
    cost = contact_pool_cost(contacts, v, dt, vs, cost, grad, H, want_hess)
    cost = limit_pool_cost(limits, v, dt, cost, grad, H, want_hess)
    cost = gain_pool_cost(gains, v, dt, cost, grad, H, want_hess)
    return coupler_pool_cost(couplers, v, dt, cost, grad, H, want_hess)


@njit(cache=True, error_model="numpy")
def cost_gradient_hessian(v, A, r, dt, vs, contacts, limits, gains, couplers, grad, H, want_hess, blocks):
    """ℓ(v) = ½ vᵀ A v − rᵀ v + the four pools' costs; writes ∇ℓ into grad and (if want_hess) the lower triangle of
    ∇²ℓ into H (every block; the upper triangle is not written). Returns ℓ. Pools as in :func:`solve`; blocks: A's
    block-diagonal partition (:func:`block_matvec`)."""
    quad = quadratic_cost(v, A, r, blocks, grad, np.empty(v.shape[0]))
    if want_hess:
        nb = max(blocks.shape[0] - 1, 0)
        start_hessian(A, H, blocks, np.ones((nb, nb), dtype=np.bool_))
    return pool_costs(v, A, dt, vs, contacts, limits, gains, couplers, quad, grad, H, want_hess)


@njit(cache=True, error_model="numpy", inline="always")
def _line_eval(alpha, v, p, quad_a, quad_b, quad_c, vc, uc, dt, vs, contacts, limits, gains, couplers):
    """ℓ(v + α p), dℓ/dα, d²ℓ/dα² in time linear in the number of constraints."""
    f = 0.5 * quad_a * alpha * alpha + quad_b * alpha + quad_c
    d1 = quad_a * alpha + quad_b
    d2 = quad_a
    f, d1, d2 = contact_pool_line(contacts, vc, uc, alpha, dt, vs, f, d1, d2)
    f, d1, d2 = limit_pool_line(limits, v, p, alpha, dt, f, d1, d2)
    f, d1, d2 = gain_pool_line(gains, v, p, alpha, dt, f, d1, d2)
    return coupler_pool_line(couplers, v, p, alpha, dt, f, d1, d2)


@njit(cache=True, error_model="numpy", inline="always")
def _cubic_guess(l0, l1, d0, d1, amax):
    """Minimiser of the cubic Hermite interpolant of ℓ on [0, α_max] (CENIC §VI-D)."""
    a3 = 2.0 * (l0 - l1) + amax * (d0 + d1)
    b2 = -3.0 * (l0 - l1) - amax * (2.0 * d0 + d1)
    c1 = amax * d0
    # roots of 3 a3 t² + 2 b2 t + c1 = 0
    qa, qb, qc = 3.0 * a3, 2.0 * b2, c1
    t = -1.0
    if abs(qa) < 1e-14 * (abs(qb) + abs(qc)):
        if qb != 0.0:
            t = -qc / qb
    else:
        disc = qb * qb - 4.0 * qa * qc
        if disc >= 0.0:
            sq = math.sqrt(disc)
            qq = -0.5 * (qb + math.copysign(sq, qb))
            r1 = qq / qa
            r2 = qc / qq if qq != 0.0 else -1.0
            # the minimiser is where the derivative crosses from negative to positive
            for rr in (r1, r2):
                if 0.0 < rr < 1.0 and 2.0 * qa * rr + qb > 0.0:
                    t = rr
    if not (0.0 < t < 1.0):
        t = 0.5
    return t * amax


@njit(cache=True, error_model="numpy")
def exact_line_search(v, p, vc, uc, qa, qb, qc, dt, vs, contacts, limits, gains, couplers, l0, dl0):
    """argmin_{α ∈ (0, α_max]} ℓ(v + α p). Returns (α, iterations).

    qa, qb, qc: the quadratic part of ℓ along the line, ½ qa α² + qb α + qc (qa = pᵀA p, qb = vᵀA p − rᵀp,
    qc = ½ vᵀA v − rᵀv); vc, uc: the contact velocities of v and p (:func:`constraint_velocities`).
    l0 = ℓ(v), dl0 = ∇ℓ(v)·p: from the assembly at v (:func:`quadratic_cost`, :func:`pool_costs`). Its ℓ(v) is the same floating-point sum as ``_line_eval`` at α = 0
    (quadratic part, then the pools' costs in the same order; every pool's line cost at α = 0 is its cost's
    expression), so passing it saves one evaluation per Newton iteration without changing any result (checked bit
    for bit on every Newton iterate of captured CenicAllegro-v0 problems, docs/performance.md "The convex solve")."""
    amax = ALPHA_MAX
    l1, d1, _ = _line_eval(amax, v, p, qa, qb, qc, vc, uc, dt, vs, contacts, limits, gains, couplers)
    scale = -dl0  # > 0; normalise F(α) = ℓ'(α)/(−ℓ'(0)) so F(0) = −1
    alpha, it = amax, 1  # ℓ still falls at α_max (one exit: numba's reference counts are pruned)
    if d1 > 1e-14 * scale:
        lo, hi = 0.0, amax
        alpha = _cubic_guess(l0, l1, dl0, d1, amax)
        dx_old = hi - lo
        dx = dx_old
        it = 0
        while it < LS_MAX_ITERATIONS:
            it += 1
            _, d, dd = _line_eval(alpha, v, p, qa, qb, qc, vc, uc, dt, vs, contacts, limits, gains, couplers)
            F = d / scale
            if abs(F) < LS_TOLERANCE:
                break
            if F < 0.0:
                lo = alpha
            else:
                hi = alpha
            # Newton–Raphson step, safeguarded by bisection (rtsafe).
            newton_ok = False
            if dd > 0.0:
                step = d / dd
                cand = alpha - step
                if lo < cand < hi and abs(2.0 * step) <= abs(dx_old):
                    newton_ok = True
            dx_old = dx
            if newton_ok:
                dx = step
                alpha = cand
            else:
                dx = 0.5 * (hi - lo)
                alpha = lo + dx
            if abs(dx) < LS_TOLERANCE * amax or hi - lo < LS_TOLERANCE * amax:
                break
    # Each argument is read once more at the one exit, so that numba releases them all there, in one place, where
    # LLVM's pruning pairs each release with its count at entry; released at the loop's several exits, none is
    # paired (docs/performance.md "Reference counts pruned, not only moved").
    live = v.size + p.size + vc.size + uc.size + contacts.n + limits.dof.size + gains.dof.size + couplers.dof0.size
    return alpha, it + 0 * live


MIN_FACTOR_BLOCKS = 4  # independent kinematic trees from which the block Cholesky pays (see cholesky)
NO_BLOCKS = np.zeros(0, dtype=np.int64)  # the block partition of a dense factorization (:func:`cholesky`)


def factor_blocks(model):
    """The block partition of the Hessian for :func:`cholesky`: the offsets (n_b + 1,) of the generalized
    velocities of each kinematic tree hanging from the world (each free body, each robot), whose mass-matrix blocks
    never couple (Pinocchio numbers a subtree's velocities contiguously); empty (the dense factorization) for
    fewer than :data:`MIN_FACTOR_BLOCKS` trees."""
    starts = [int(model.idx_vs[j]) for j in range(1, model.njoints) if model.parents[j] == 0 and model.nvs[j] > 0]
    if len(starts) < MIN_FACTOR_BLOCKS:
        return NO_BLOCKS.copy()
    return np.array(starts + [int(model.nv)], dtype=np.int64)


@njit(cache=True, error_model="numpy")
def cholesky(H, blocks, L):
    """L ← the lower Cholesky factor of the SPD matrix H.

    blocks empty: dense (:func:`_dense_cholesky`, LAPACK beyond :data:`DENSE_LOOP_MAX` unknowns). Otherwise
    ``blocks`` = (n_b + 1,) offsets of a partition of the unknowns into independent trees (:func:`factor_blocks`),
    and the factorization works by blocks: the block pattern of H (the trees' mass matrices plus J_iᵀ G_i J_i of
    each contact, which couples the two trees it touches), its fill, and a left-looking block Cholesky over the
    nonzero blocks only. A bin of 20 objects (n_v = 120) has ~35–50 nonzero blocks of 210 in L: 16–24 µs against
    LAPACK's 48–50 µs (the same factor to ~1e-15 relative). Raises ``np.linalg.LinAlgError`` for a matrix that is
    not positive definite, as LAPACK's does. Reads H's lower triangle only.

    Returns the block pattern of L (n_b, n_b) (mask[i, j]: block (i, j) may be nonzero; every other entry of L is
    exactly 0) for the triangular solves of :func:`cholesky_solve_into`; [[True]] for the dense factorization (one
    block of the partition :func:`solve_partition` gives)."""
    nb = max(blocks.shape[0] - 1, 0)
    if nb > 0:
        L[:, :] = 0.0
    mask = np.empty((max(nb, 1), max(nb, 1)), dtype=np.bool_)
    if not cholesky_within(H, blocks, L, np.ones((nb, nb), dtype=np.bool_), mask, np.empty(nb, dtype=np.int64)):
        raise np.linalg.LinAlgError("Matrix is not positive definite.")
    return mask


@njit(cache=True, error_model="numpy")
def coupled_blocks(contacts, couplers, blocks):
    """:func:`coupled_blocks_into` as a new array."""
    nb = max(blocks.shape[0] - 1, 0)
    cand = np.empty((nb, nb), dtype=np.bool_)
    coupled_blocks_into(contacts, couplers, blocks, block_tree(blocks), np.empty(nb, dtype=np.int64), cand)
    return cand


@njit(cache=True, error_model="numpy")
def block_tree(blocks):
    """Each unknown's block (n_v,) of the partition ``blocks`` (:func:`factor_blocks`; empty: dense, no entries)."""
    nb = max(blocks.shape[0] - 1, 0)
    tree = np.empty(blocks[nb] if nb else 0, dtype=np.int64)
    for b in range(nb):
        tree[blocks[b]:blocks[b + 1]] = b
    return tree


@njit(cache=True, error_model="numpy", inline="always")
def coupled_blocks_into(contacts, couplers, blocks, tree, seen, cand):
    """cand (n_b, n_b) ← the blocks (i, j), i ≥ j, of the Hessian that may be nonzero, from the constraint pools
    alone: the diagonal (mass matrices, limits and gains act on one DOF), the trees each contact's Jacobian columns
    span (J_iᵀ G_i J_i) and the two DOFs of each coupler. A superset of H's pattern (an open contact has G_i = 0)
    found in O(contacts) instead of scanning the n_b² blocks of H. Nothing without blocks. tree: each unknown's
    block (:func:`block_tree`); seen (n_b,): workspace."""
    nb = max(blocks.shape[0] - 1, 0)
    for a in range(nb):
        for b in range(nb):
            cand[a, b] = a == b
    for i in range(contacts.n if nb else 0):
        m = 0
        for j in range(contacts.ncols[i]):  # sorted columns: a tree's columns are one run
            t = tree[contacts.cols[i, j]]
            if m == 0 or seen[m - 1] != t:
                seen[m] = t
                m += 1
        for a in range(m):
            for b in range(a):
                cand[max(seen[a], seen[b]), min(seen[a], seen[b])] = True
    for i in range(couplers.dof0.shape[0] if nb else 0):
        ta, tb = tree[couplers.dof0[i]], tree[couplers.dof1[i]]
        cand[max(ta, tb), min(ta, tb)] = True


DENSE_LOOP_MAX = 40  # dense factorizations up to this size run in loops (:func:`_dense_cholesky`), larger in LAPACK
_NO_SHARED = np.zeros(0, dtype=np.int64)  # a dense factor's (empty) list of earlier blocks


@njit(cache=True, error_model="numpy")
def _factor_block(H, L, i0, i1, j0, j1, blocks, shared, ns, from_h):
    """The block of rows i0:i1 and columns j0:j1 (i0 ≥ j0; a diagonal block when i0 = j0) of the Cholesky factor,
    column by column: L_ij = (H_ij − Σ_k L_ik L_jk) / L_jj with the sum over the columns k of the earlier blocks
    ``shared[:ns]`` of the partition ``blocks`` (those where both L_ik and L_jk may be nonzero, ascending) and then
    over the block's own earlier columns; on the diagonal √(H_jj − Σ_k L_jk²) first.
    The rows of a column are independent, so four run at a time: each entry's sum is the same chain of
    multiply-subtracts in the same order as one row at a time (the same bits), and four independent chains keep the
    floating-point units busy where one waits on each subtraction's latency (the factorizations of a bin of 20
    spheres 1.26× faster than one row at a time). from_h False: H's block is zero (fill) and is not read. Needs
    the blocks (bj, bj) and (bi, k), (bj, k) of the shared k already factored (bi, bj: the blocks of the rows and
    of the columns).

    Returns False if a pivot H_jj − Σ_k L_jk² was not positive (H is not positive definite: LAPACK's info > 0),
    and its callers decide whether to raise: a plain call with one exit and no raise, so numba counts no reference
    of its four arrays (docs/performance.md, "Reference counts pruned")."""
    positive = True
    for j in range(j0, j1):
        i = i0
        if i0 == j0:
            s = H[j, j]
            for t in range(ns):
                for k in range(blocks[shared[t]], blocks[shared[t] + 1]):
                    s -= L[j, k] * L[j, k]
            for k in range(j0, j):
                s -= L[j, k] * L[j, k]
            if not s > 0.0:
                positive = False
            L[j, j] = math.sqrt(s) if s > 0.0 else math.nan
            i = j + 1
        d = L[j, j]
        while i + 4 <= i1:
            s0, s1, s2, s3 = (H[i, j], H[i + 1, j], H[i + 2, j], H[i + 3, j]) if from_h else (0.0, 0.0, 0.0, 0.0)
            for t in range(ns):
                for k in range(blocks[shared[t]], blocks[shared[t] + 1]):
                    ljk = L[j, k]
                    s0 -= L[i, k] * ljk
                    s1 -= L[i + 1, k] * ljk
                    s2 -= L[i + 2, k] * ljk
                    s3 -= L[i + 3, k] * ljk
            for k in range(j0, j):
                ljk = L[j, k]
                s0 -= L[i, k] * ljk
                s1 -= L[i + 1, k] * ljk
                s2 -= L[i + 2, k] * ljk
                s3 -= L[i + 3, k] * ljk
            L[i, j] = s0 / d
            L[i + 1, j] = s1 / d
            L[i + 2, j] = s2 / d
            L[i + 3, j] = s3 / d
            i += 4
        while i + 2 <= i1:
            s0, s1 = (H[i, j], H[i + 1, j]) if from_h else (0.0, 0.0)
            for t in range(ns):
                for k in range(blocks[shared[t]], blocks[shared[t] + 1]):
                    ljk = L[j, k]
                    s0 -= L[i, k] * ljk
                    s1 -= L[i + 1, k] * ljk
            for k in range(j0, j):
                ljk = L[j, k]
                s0 -= L[i, k] * ljk
                s1 -= L[i + 1, k] * ljk
            L[i, j] = s0 / d
            L[i + 1, j] = s1 / d
            i += 2
        if i < i1:
            s0 = H[i, j] if from_h else 0.0
            for t in range(ns):
                for k in range(blocks[shared[t]], blocks[shared[t] + 1]):
                    s0 -= L[i, k] * L[j, k]
            for k in range(j0, j):
                s0 -= L[i, k] * L[j, k]
            L[i, j] = s0 / d
    return positive


@njit(cache=True, error_model="numpy")
def _dense_cholesky(H, L):
    """L ← the lower Cholesky factor of the SPD matrix H by the textbook loops, L_ij = (H_ij − Σ_{k<j} L_ik L_jk) / L_jj:
    :func:`_factor_block` on one block. For the small dense Hessians of robot scenes it is faster than numba's
    LAPACK call, whose copies and checks dominate there (n_v = 6: ~0.1 vs 0.3 µs; n_v = 18: 0.52 µs; LAPACK ahead
    beyond :data:`DENSE_LOOP_MAX`). The factor differs from LAPACK's in round-off only. Returns False (L unfinished)
    where LAPACK's raises: H is not positive definite."""
    n = H.shape[0]
    for j in range(n):
        for i in range(j):
            L[i, j] = 0.0
    return _factor_block(H, L, 0, n, 0, n, _NO_SHARED, _NO_SHARED, 0, True)


@njit(cache=True, error_model="numpy")
def cholesky_within(H, blocks, L, candidates, mask, shared):
    """:func:`cholesky` where only the blocks (i, j), i ≥ j, with ``candidates[i, j]`` may be nonzero in H
    (:func:`coupled_blocks`): the others are neither scanned nor read (zeros; :func:`start_hessian` writes only the
    candidates). Reads H's lower triangle only. The same factor bit for bit as with every block a candidate.

    With blocks, only L's blocks in the returned pattern are written (their lower triangle): the rest of L keeps
    whatever it held, and every reader (:func:`cholesky_solve_into`, :func:`_cholesky_solve_columns`, the
    factorization itself) visits the pattern only — zeroing a 120 × 120 L cost ~1.5 µs per factorization.
    :func:`cholesky` zeroes L first, for a plain triangular factor.

    ``mask`` (n_b, n_b), or (1, 1) dense, receives the pattern; ``shared`` (n_b,): workspace. Returns False (L
    unfinished) for a matrix that is not positive definite (:func:`cholesky` raises), and raises nothing but
    LAPACK's error beyond :data:`DENSE_LOOP_MAX` dense unknowns."""
    if blocks.shape[0] == 0:
        mask[0, 0] = True
        if H.shape[0] > DENSE_LOOP_MAX:
            L[:, :] = np.linalg.cholesky(H)
            return True
        return _dense_cholesky(H, L)
    nb = blocks.shape[0] - 1
    for bi in range(nb):
        for bj in range(nb):
            mask[bi, bj] = False
        for bj in range(bi + 1):
            if not candidates[bi, bj]:
                continue
            nz = False
            for i in range(blocks[bi], blocks[bi + 1]):
                for j in range(blocks[bj], min(blocks[bj + 1], i + 1)):
                    if H[i, j] != 0.0:
                        nz = True
                        break
                if nz:
                    break
            mask[bi, bj] = nz
    for bk in range(nb):  # fill: eliminating block k couples every pair of blocks below it that touch it
        for bi in range(bk + 1, nb):
            if mask[bi, bk]:
                for bj in range(bk + 1, bi + 1):
                    if mask[bj, bk]:
                        mask[bi, bj] = True
    for bj in range(nb):  # shared[:ns]: the earlier blocks k with L_ik and L_jk both nonzero
        for bi in range(bj, nb):
            if not mask[bi, bj]:
                continue
            ns = np.int64(0)  # int64 from the start: a literal 0 compiled _factor_block once more
            for bk in range(bj):
                if mask[bi, bk] and mask[bj, bk]:
                    shared[ns] = bk
                    ns += 1
            if not _factor_block(H, L, blocks[bi], blocks[bi + 1], blocks[bj], blocks[bj + 1], blocks, shared, ns,
                                 candidates[bi, bj]):
                return False
    return True


@njit(cache=True, error_model="numpy")
def cholesky_solve_into(L, x, blocks, mask, below):
    """x ← H⁻¹ x for H = L Lᵀ, in place, both triangular solves by columns: forward, x_k /= L_kk once every
    earlier column has been subtracted, then x_i −= L_ik x_k for the rows i > k; back, x_i /= L_ii, then
    x_k −= L_ik x_i for k < i. Each x_i gets its terms in the order of a sum per row (ascending k forward,
    descending back), so the same bits as x_i = (x_i − Σ_{k<i} L_ik x_k) / L_ii, but the updates of one column are
    independent, where a sum per row waits on each subtraction. With a block factor (``blocks``, ``mask`` of
    :func:`cholesky`) the loops visit only the nonzero blocks (the skipped terms are exact zeros: the same x bit
    for bit); a dense factor is one block (``blocks`` = [0, n]: :func:`solve_partition`, ``mask`` = [[True]]).
    below (≥ n_b − 1,): workspace."""
    nb = blocks.shape[0] - 1
    for bk in range(nb):  # below[:nbelow]: the blocks bi > bk with L's block (bi, bk) nonzero
        nbelow = 0
        for bi in range(bk + 1, nb):
            if mask[bi, bk]:
                below[nbelow] = bi
                nbelow += 1
        k1 = blocks[bk + 1]
        for k in range(blocks[bk], k1):
            xk = x[k] / L[k, k]
            x[k] = xk
            for i in range(k + 1, k1):
                x[i] -= L[i, k] * xk
            for t in range(nbelow):
                for i in range(blocks[below[t]], blocks[below[t] + 1]):
                    x[i] -= L[i, k] * xk
    for bi in range(nb - 1, -1, -1):
        for i in range(blocks[bi + 1] - 1, blocks[bi] - 1, -1):
            xi = x[i] / L[i, i]
            x[i] = xi
            for k in range(blocks[bi], i):
                x[k] -= L[i, k] * xi
            for bk in range(bi):
                if mask[bi, bk]:
                    for k in range(blocks[bk], blocks[bk + 1]):
                        x[k] -= L[i, k] * xi


@njit(cache=True, error_model="numpy")
def solve_partition(blocks, n):
    """The partition of the triangular solves (:func:`cholesky_solve_into`) for the factor of :func:`cholesky` with
    ``blocks``: the same blocks, or one block [0, n] for a dense factor."""
    if blocks.shape[0] == 0:
        return np.array([0, n], dtype=np.int64)
    return blocks


@njit(cache=True, error_model="numpy")
def _cholesky_solve(L, b, blocks, mask):
    """x = H⁻¹ b as a new array (:func:`cholesky_solve_into`; blocks empty: the dense factor of :func:`cholesky`,
    whose one block never reads ``mask``)."""
    x = b.copy()
    cholesky_solve_into(L, x, solve_partition(blocks, b.shape[0]), mask, np.empty(blocks.shape[0], dtype=np.int64))
    return x


@njit(cache=True, error_model="numpy")
def new_newton_workspace(nv, capacity, blocks):
    """A :class:`NewtonWorkspace` for n_v unknowns, up to ``capacity`` contacts and the block partition ``blocks``
    (built in a cached kernel: the proxy's own constructor compiles in every process)."""
    nb = max(blocks.shape[0] - 1, 0)
    mask = np.zeros((max(nb, 1), max(nb, 1)), dtype=np.bool_)
    mask[0, 0] = True  # the dense factor's pattern (cholesky_within overwrites a block factor's)
    return NewtonWorkspace(np.empty(nv), np.empty((nv, nv)), np.empty(nv), np.empty(nv), np.empty((capacity, 3)),
                           np.empty((capacity, 3)), np.empty(capacity), solve_partition(blocks, nv).copy(), mask,
                           np.zeros((nb, nb), dtype=np.bool_), block_tree(blocks), np.empty(nb, dtype=np.int64),
                           np.empty(nb, dtype=np.int64), np.empty(max(nb, 1), dtype=np.int64))


@njit(cache=True, error_model="numpy")
def solve(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse_hessian, L, blocks, stats):
    """Minimise ℓ(v) = ½ vᵀA v − rᵀv + Σ pools from the warm start ``v`` (overwritten with the solution).

    Constraint pools: contacts :class:`~cenic_gym.icf.ContactPool`, limits :class:`~cenic_gym.icf.LimitPool`,
    gains :class:`~cenic_gym.icf.GainPool`, couplers :class:`~cenic_gym.icf.CouplerPool`.

    dscale: diag(M)^(-1/2) (the scaling D of CENIC eq. 32–33). tol: ε_tol of eq. 34.
    reuse_hessian: CENIC eq. 35 (L holds the last factor and must be valid if stats[FACTORIZATIONS] > 0 on entry
    with reuse). blocks: the factorization's block partition (:func:`cholesky`). Returns nothing; ``stats`` gets the
    counters and the convergence flag. (The integrator calls :func:`solve_coulomb` with its own workspace; this
    builds one per call.)
    """
    pool = ContactPoolRef(*contacts)
    _newton(v, A, r, dscale, dt, vs, pool, LimitPoolRef(*limits), GainPoolRef(*gains), CouplerPoolRef(*couplers), tol,
            reuse_hessian, L, blocks, stats, new_newton_workspace(v.shape[0], pool.Jc.shape[0], blocks))


@njit(cache=True, error_model="numpy")
def _newton(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse_hessian, L, blocks, stats, work):
    """The Newton loop of :func:`solve`, on the pools by reference (:class:`ContactPoolRef`, ...) and the arrays of
    ``work`` (:class:`NewtonWorkspace`; ValueError if it does not fit the problem). ``work.mask`` receives the block
    pattern of the factor in L (:func:`cholesky_within`; valid when stats[FACTORIZATIONS] > 0). A Hessian that is
    not positive definite (a non-finite problem) ends the loop unconverged, as a non-finite gradient or step does.
    Returns nothing: ``stats`` gets the counters and the convergence flag."""
    Jc, cols, ncols, nc = contacts.Jc, contacts.cols, contacts.ncols, contacts.n
    nv = v.shape[0]
    grad, H, p, Av, vc, uc = work.grad, work.H, work.p, work.Av, work.vc, work.uc  # Av: A v, then A p (the line)
    tri_blocks, mask, candidates, shared, below = work.tri_blocks, work.mask, work.candidates, work.shared, work.below
    tree = work.tree
    if grad.shape[0] != nv or vc.shape[0] < nc or tree.shape[0] != (nv if blocks.shape[0] else 0):
        raise ValueError("the Newton workspace does not fit the problem (new_newton_workspace(n_v, capacity, blocks))")
    stats[NEWTON_ITERS] = 0
    stats[LS_ITERS] = 0
    stats[FACTORIZATIONS] = 0
    stats[CONVERGED] = 0
    Dr = 0.0
    for a in range(nv):
        Dr += (dscale[a] * r[a]) ** 2
    scale = max(1.0, math.sqrt(Dr))
    dv_prev = -1.0
    have_factor = False
    need_factor = True
    coupled_blocks_into(contacts, couplers, blocks, tree, work.seen, candidates)  # H's possible nonzero blocks
    for it in range(MAX_NEWTON_ITERATIONS):
        quad = quadratic_cost(v, A, r, blocks, grad, Av)
        want_hess = need_factor or not reuse_hessian
        if want_hess:
            start_hessian(A, H, blocks, candidates)
        cost = pool_costs(v, A, dt, vs, contacts, limits, gains, couplers, quad, grad, H, want_hess)
        gnorm = 0.0
        for a in range(nv):
            gnorm += (dscale[a] * grad[a]) ** 2
        gnorm = math.sqrt(gnorm)
        if not math.isfinite(gnorm):
            break
        if gnorm <= tol * scale:  # (32), checked before the iteration
            stats[CONVERGED] = 1
            break
        if need_factor or not reuse_hessian or not have_factor:
            if not cholesky_within(H, blocks, L, candidates, mask, shared):
                break
            stats[FACTORIZATIONS] += 1
            have_factor = True
        for a in range(nv):
            p[a] = -grad[a]
        cholesky_solve_into(L, p, tri_blocks, mask, below)
        dl0 = dot(grad, p)
        if dl0 >= 0.0:  # stale factor gave no descent: refactor
            need_factor = True
            continue
        constraint_velocities(v, Jc, cols, ncols, nc, vc)
        constraint_velocities(p, Jc, cols, ncols, nc, uc)
        block_matvec_into(A, p, blocks, Av)  # the quadratic part along the line: ½ qa α² + qb α + quad
        qa, qb = dot(p, Av), dot(v, Av) - dot(r, p)
        alpha, lsit = exact_line_search(v, p, vc, uc, qa, qb, quad, dt, vs, contacts, limits, gains, couplers, cost,
                                        dl0)
        stats[LS_ITERS] += lsit
        stats[NEWTON_ITERS] += 1
        dv = 0.0
        for a in range(nv):
            step = alpha * p[a]
            v[a] += step
            dv += (step / dscale[a]) ** 2
        dv = math.sqrt(dv)
        if not math.isfinite(dv):
            break
        if dv_prev > 0.0:
            theta = min(dv / dv_prev, 0.9999)
            eta = theta / (1.0 - theta)
            if eta * dv <= tol * scale:  # (33)
                stats[CONVERGED] = 1
                break
            if reuse_hessian:  # (35): refactor if the predicted error after 10 iterations is too large
                kk = min(it, 9)
                need_factor = theta ** (10 - kk) / (1.0 - theta) * dv >= tol * scale
        elif dv == 0.0:
            stats[CONVERGED] = 1
            break
        dv_prev = dv




def coulomb_tolerance(accuracy, kappa=FRICTION_KAPPA):
    """(rtol, atol) of :func:`solve_coulomb` for an integrator accuracy ε_acc: rtol = κ_f √ε_acc (relative, of the
    friction impulse), atol = ε_acc [m/s] (contact-point velocity); accuracy ≤ 0 (fixed steps): (0, 0), the Lagged
    model."""
    if accuracy <= 0.0:
        return np.zeros(2)
    return np.array([kappa * math.sqrt(accuracy), accuracy])


@njit(cache=True, error_model="numpy", inline="always")
def friction_bound_mismatch(v, dt, vs, contacts, fn, gn, rtol, atol):
    """How far the friction of a solution ``v`` (step dt, bounds μ b_i with b_i = δt fn_i: fn = the normal forces the
    solve used) is from Coulomb's law with the step's own normal impulses γ_n,i = n(v_n,i) (ICF eq. 7, written into
    ``gn``), relative to the tolerance: 1 is the limit of acceptance.

    Per contact, with the solve's friction ‖γ_t‖ = μ b f(s) (f(s) = ‖v_t‖/s_ε, s_ε = √(‖v_t‖² + ε²), ICF eq. 9) and
    the Delassus estimate w [1/kg], the friction impulse error is the larger of
    * grip beyond the cone, ‖γ_t‖ − μ γ_n, against the tolerance rtol μ γ_n + atol/w, and
    * the change of friction that moving the bound from b to γ_n would cause, μ f |γ_n − b| / (1 + w G_t),
      linearized with the friction's own stiffness G_t = μ b ε²/s_ε³ (ICF §VIII) — sliding (f ≈ 1, G_t ≈ 0) gives
      μ |γ_n − b|, a sticking contact (w G_t ≫ 1) only changes its creep, a contact without tangential load (f = 0)
      nothing — against rtol μ max(γ_n, b) + atol/w.
    atol [m/s] is a contact-point velocity change too small to matter; the relative part bounds the accumulated
    error of many small steps through an impact by rtol times the impact's friction impulse (an absolute tolerance
    per step would not). Returns the largest ratio error/tolerance over the contacts (≤ 1: agreement)."""
    Jc, cols, ncols, normal = contacts.Jc, contacts.cols, contacts.ncols, contacts.normal
    phi0, ck, cd, cmu, cw = contacts.phi0, contacts.k, contacts.d, contacts.mu, contacts.w
    worst = 0.0
    for i in range(contacts.n):
        vc0 = vc1 = vc2 = 0.0  # v_c,i = J_i v
        for j in range(ncols[i]):
            vj = v[cols[i, j]]
            vc0 += Jc[i, 0, j] * vj
            vc1 += Jc[i, 1, j] * vj
            vc2 += Jc[i, 2, j] * vj
        b, eps, vhat, _ = contact_step_params(dt, phi0[i], ck[i], cd[i], fn[i], vs)
        vn = vc0 * normal[i, 0] + vc1 * normal[i, 1] + vc2 * normal[i, 2]
        _, g, _ = normal_cost(vn, dt, phi0[i], ck[i], cd[i], vhat)
        gn[i] = -g
        vt2 = max(vc0 * vc0 + vc1 * vc1 + vc2 * vc2 - vn * vn, 0.0)
        s_eps = math.sqrt(vt2 + eps * eps)
        f = math.sqrt(vt2) / s_eps
        mu = cmu[i]
        floor = atol / cw[i]
        over = mu * (b * f - gn[i]) / (rtol * mu * gn[i] + floor)
        change = mu * f * abs(gn[i] - b) / (1.0 + cw[i] * mu * b * eps * eps / (s_eps * s_eps * s_eps))
        worst = max(worst, over, change / (rtol * mu * max(gn[i], b) + floor))
    return worst


@njit(cache=True, error_model="numpy", inline="always")
def _subtract_row(B, i, k, scale):
    """B[i] −= scale · B[k] (nothing for scale = 0: the zero blocks of a block factor)."""
    if scale != 0.0:
        for a in range(B.shape[1]):
            B[i, a] -= scale * B[k, a]


@njit(cache=True, error_model="numpy")
def _cholesky_solve_columns(L, B, blocks, mask):
    """B ← H⁻¹ B in place for H = L Lᵀ, all columns at once: forward then back substitution by rows of B, so the
    inner loops run along contiguous rows; each column's operations in the order of :func:`cholesky_solve_into`,
    over the nonzero blocks of L only (``blocks``, ``mask`` as there)."""
    nb = blocks.shape[0] - 1
    for bi in range(nb):
        for i in range(blocks[bi], blocks[bi + 1]):
            for bk in range(bi):
                if mask[bi, bk]:
                    for k in range(blocks[bk], blocks[bk + 1]):
                        _subtract_row(B, i, k, L[i, k])
            for k in range(blocks[bi], i):
                _subtract_row(B, i, k, L[i, k])
            B[i] /= L[i, i]
    for bi in range(nb - 1, -1, -1):
        for i in range(blocks[bi + 1] - 1, blocks[bi] - 1, -1):
            B[i] /= L[i, i]
            for k in range(blocks[bi], i):
                _subtract_row(B, k, i, L[i, k])
            for bk in range(bi):
                if mask[bi, bk]:
                    for k in range(blocks[bk], blocks[bk + 1]):
                        _subtract_row(B, k, i, L[i, k])


@njit(cache=True, error_model="numpy")
def friction_bound_jacobian(v, A, r, dt, vs, contacts, limits, gains, couplers, L, blocks, mask, fresh, idx, Xt, G):
    """Sensitivities of the minimiser v* of ℓ(·; b) and of its normal impulses to the friction bounds
    b_j = δt fn_j [N s] (``contacts.fn0`` = fn) of the contacts ``idx`` (m,), at ``v`` = v*(b), by the implicit
    function theorem on ∇ℓ(v*(b); b) = 0:

    Xt (n_v, m): column a = −∂v*/∂b_j (j = idx[a]) = H⁻¹ J_jᵀ ∂(∇ℓ_c,j)/∂b_j
    (:func:`~cenic_gym.icf.friction_bound_sensitivity`, H = ∇²ℓ(v), solved for all m columns at once with its
    Cholesky factor L);
    G (m, m): G_ab = ∂γ_n,i/∂b_j (i = idx[a], j = idx[b]) = ℓ_n,i'' n̂_iᵀ J_i Xt[:, b]
    (∂γ_n,i/∂v = −ℓ_n,i'' n̂_iᵀ J_i): friction at one contact moves the bodies and through them every stiff normal.

    fresh: factor H at v into L first (block partition ``blocks``, as :func:`solve` does; ``mask`` is not read);
    else L is used as it is, with ``mask`` its block pattern (:func:`cholesky_within`) —
    :func:`solve_coulomb` passes the factor of the solve's last Newton iteration, one iterate before v (on 3 500
    Allegro problems the Newton iteration on the bounds then took the same solves as with the exact factor: 4 776 vs
    4 775, 2 951 vs 2 953). Pools as in :func:`solve`."""
    Jc, cols, ncols, normal = contacts.Jc, contacts.cols, contacts.ncols, contacts.normal
    phi0, ck, cd, cmu, cfn0, cw = contacts.phi0, contacts.k, contacts.d, contacts.mu, contacts.fn0, contacts.w
    nv, m = v.shape[0], idx.shape[0]
    if fresh:
        grad = np.empty(nv)
        H = np.empty((nv, nv))
        cost_gradient_hessian(v, A, r, dt, vs, contacts, limits, gains, couplers, grad, H, fresh, blocks)
        mask = cholesky(H, blocks, L)  # the factor solve() would make: H has every block, the same bits
    vc = np.empty((contacts.n, 3))
    constraint_velocities(v, Jc, cols, ncols, contacts.n, vc)
    sens = np.empty(3)
    curv = np.empty(m)
    Xt[:, :] = 0.0
    for a in range(m):
        i = idx[a]
        curv[a] = friction_bound_sensitivity(vc[i], normal[i], dt, phi0[i], ck[i], cd[i], cmu[i], cfn0[i], vs, sens)
        for j in range(ncols[i]):
            Xt[cols[i, j], a] += Jc[i, 0, j] * sens[0] + Jc[i, 1, j] * sens[1] + Jc[i, 2, j] * sens[2]
    _cholesky_solve_columns(L, Xt, solve_partition(blocks, nv), mask)
    for a in range(m):
        for b in range(m):
            G[a, b] = 0.0
        if curv[a] == 0.0:
            continue
        i = idx[a]
        for jj in range(ncols[i]):
            nj = curv[a] * (normal[i, 0] * Jc[i, 0, jj] + normal[i, 1] * Jc[i, 1, jj] + normal[i, 2] * Jc[i, 2, jj])
            row = Xt[cols[i, jj]]
            for b in range(m):
                G[a, b] += nj * row[b]


@njit(cache=True, error_model="numpy")
def coulomb_newton_bounds(v, A, r, dt, vs, contacts, limits, gains, couplers, gn, L, blocks, mask, fresh):
    """One (quasi-)Newton step on the friction bounds of :func:`solve_coulomb`: b − γ_n(v*(b)) = 0, per contact
    b_i = δt fn_i [N s] (``contacts.fn0``, overwritten with the new bounds / δt) and γ_n,i the normal impulse of the
    solution ``v`` of the problem with bounds b (``gn``, from :func:`friction_bound_mismatch`).

    With G = ∂γ_n/∂b and X = −∂v*/∂b of :func:`friction_bound_jacobian` (L, blocks, mask, fresh: its Hessian factor), the
    step solves (I − G) Δb = γ_n − b, clips the new bounds at 0 and moves ``v`` to the first-order prediction v − Xᵀ Δb
    (the next solve's warm start). Only the contacts that are closed at v (ℓ_n'' > 0) or whose bound disagrees
    (γ_n ≠ b) enter: an open contact with γ_n = b (= 0: speculative, or released) has a zero row of G and a zero
    residual, so Δb = 0 there exactly — in clutter most contacts are of that kind, and each costs a column of X.
    A singular I − G (not seen in practice) falls back to Δb = γ_n − b, plain substitution. Pools as in
    :func:`solve`."""
    nc, fn = contacts.n, contacts.fn0
    nv = v.shape[0]
    Jc, cols, ncols, normal = contacts.Jc, contacts.cols, contacts.ncols, contacts.normal
    phi0, ck, cd, cmu, cw = contacts.phi0, contacts.k, contacts.d, contacts.mu, contacts.w
    take = np.empty(nc, dtype=np.int64)
    vc = np.empty((nc, 3))
    constraint_velocities(v, Jc, cols, ncols, nc, vc)
    sens = np.empty(3)
    m = 0
    for i in range(nc):
        closed = friction_bound_sensitivity(vc[i], normal[i], dt, phi0[i], ck[i], cd[i], cmu[i], fn[i], vs, sens) != 0.0
        if closed or gn[i] != dt * fn[i]:
            take[m] = i
            m += 1
    idx = take[:m]
    Xt = np.empty((nv, m))
    G = np.empty((m, m))
    friction_bound_jacobian(v, A, r, dt, vs, contacts, limits, gains, couplers, L, blocks, mask, fresh, idx, Xt, G)
    S = np.eye(m) - G
    res = np.empty(m)
    for a in range(m):
        res[a] = gn[idx[a]] - dt * fn[idx[a]]
    db = res.copy()
    try:
        step = np.linalg.solve(S, res)
        if np.all(np.isfinite(step)):
            db = step
    except Exception:  # noqa: BLE001  (numba: the LinAlgError of a singular I − G)
        pass
    for a in range(m):
        i = idx[a]
        b = max(dt * fn[i] + db[a], 0.0)
        delta = b - dt * fn[i]
        fn[i] = b / dt
        for c in range(nv):
            v[c] -= Xt[c, a] * delta


@njit(cache=True, error_model="numpy", inline="always")
def solve_coulomb(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse_hessian, L, blocks, stats,
                  friction_tol, fn_used, work):
    """:func:`solve` with each contact's friction bound taken from the step's own normal impulse (issue 10).

    The Lagged model (ICF eq. 18) bounds friction by μ γ_n0 = μ δt f_n(x^n), the normal force at the start of the
    step. At an impact with Hunt–Crossley dissipation f_n(x^n) = k(−φ0)(1 − d v_n^n) is dominated by −k φ0 d v_n^n
    and far exceeds the step's average, so the landing step grips; a contact that appears inside the step has
    f_n(x^n) = 0 and is frictionless for that step. Here the lagged solve comes first; if its normal impulses γ_n,i
    disagree with its bounds by more than the tolerance of :func:`friction_bound_mismatch` (``friction_tol`` =
    (rtol, atol); the integrator passes rtol = κ_f √ε_acc with κ_f = :data:`FRICTION_KAPPA` and atol = ε_acc [m/s],
    :func:`coulomb_tolerance`), the
    problem is solved again, warm-started, with new bounds b_i in place of γ_n0 — Newton's method on
    b − γ_n(v*(b)) = 0 (:func:`coulomb_newton_bounds`). Normal impulses depend on friction through the bodies'
    motion (a box landing on a corner while sliding; a cube held by four fingertips, where friction at one tip
    loads the others' stiff normals), so the map b ↦ γ_n(v*(b)) couples the contacts and need not contract: on the
    Allegro cube the former fixed-point iteration (Anderson(1) with one scalar weight) ended without agreement in
    114 of 2057 iterations (1 in 18, each a rejected step), Newton in 11, with 28 % fewer solves
    (``benchmarks/solver_convergence.py``, docs/performance.md "The convex solve").
    Every solve is the same strictly convex problem with other constants (ℓ_t = μ b ‖v_t‖_s with b frozen). The
    iteration stops when bounds and normal impulses agree; after :data:`MAX_FRICTION_SOLVES` solves without
    agreement stats[CONVERGED] is set to 0, so that the step is rejected and retried smaller.

    The pools come by reference (:class:`ContactPoolRef`, :class:`LimitPoolRef`, :class:`GainPoolRef`,
    :class:`CouplerPoolRef`: the integrator keeps the state's in its ``StateArgs``, built once per cached state).
    rtol ≤ 0: the plain Lagged solve. fn_used (≥ nc): the normal forces b/δt [N] of the bounds of the returned
    solution (may alias the pool's f_n0 array: written after the last solve). stats accumulate over the solves.
    work: the solves' arrays (:class:`NewtonWorkspace`). Returns the number of solves beyond the first."""
    nc, cfn0 = contacts.n, contacts.fn0
    _newton(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse_hessian, L, blocks, stats, work)
    rtol, atol = friction_tol[0], friction_tol[1]
    gn = work.gn
    if (rtol <= 0.0 or nc == 0 or stats[CONVERGED] == 0
            or friction_bound_mismatch(v, dt, vs, contacts, cfn0, gn, rtol, atol) <= 1.0):  # the usual case
        for i in range(nc):
            fn_used[i] = cfn0[i]
        return 0
    fn = cfn0.copy()
    with_bounds = ContactPoolRef(contacts.Jc, contacts.cols, contacts.ncols, contacts.normal, contacts.phi0,
                                 contacts.k, contacts.d, contacts.mu, fn, contacts.w, nc)
    factored = stats[FACTORIZATIONS] > 0  # L holds the last solve's last Hessian factor, block pattern work.mask
    extra = 0
    while True:
        if extra + 1 >= MAX_FRICTION_SOLVES:
            stats[CONVERGED] = 0
            break
        # next bounds (fn, in place) and the warm start (v, in place) from a Newton step on b − γ_n(v*(b)) = 0
        coulomb_newton_bounds(v, A, r, dt, vs, with_bounds, limits, gains, couplers, gn, L, blocks, work.mask,
                              not factored)
        n0, l0, f0 = stats[NEWTON_ITERS], stats[LS_ITERS], stats[FACTORIZATIONS] + (0 if factored else 1)
        _newton(v, A, r, dscale, dt, vs, with_bounds, limits, gains, couplers, tol, reuse_hessian, L, blocks, stats,
                work)
        factored = stats[FACTORIZATIONS] > 0
        stats[NEWTON_ITERS] += n0
        stats[LS_ITERS] += l0
        stats[FACTORIZATIONS] += f0
        extra += 1
        if stats[CONVERGED] == 0 or friction_bound_mismatch(v, dt, vs, contacts, fn, gn, rtol, atol) <= 1.0:
            break
    for i in range(nc):
        fn_used[i] = fn[i]
    return extra
