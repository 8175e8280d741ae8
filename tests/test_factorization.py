"""The Newton solver's Cholesky factorization (:func:`cenic_gym.solver.cholesky`): dense (loops; LAPACK for large
n) or by blocks of independent kinematic trees, and the partition :func:`cenic_gym.solver.factor_blocks` picks."""
import numpy as np
import pytest

from cenic_gym import Simulator, scenes
from cenic_gym import solver as slv


def _block_sparse_spd(sizes, couplings, rng):
    """An SPD matrix with dense diagonal blocks of ``sizes`` and off-diagonal blocks only at ``couplings`` (pairs of
    block indices): the mass matrices of independent trees plus J_iᵀ G_i J_i of contacts between two of them."""
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(starts[-1])
    H = np.zeros((n, n))
    for b in range(len(sizes)):
        X = rng.normal(size=(sizes[b], sizes[b]))
        H[starts[b]:starts[b + 1], starts[b]:starts[b + 1]] = X @ X.T + sizes[b] * np.eye(sizes[b])
    for a, b in couplings:  # a contact between trees a and b: a PSD rank-3 term on their joint rows
        rows = np.r_[starts[a]:starts[a + 1], starts[b]:starts[b + 1]]
        J = rng.normal(size=(3, rows.size))
        H[np.ix_(rows, rows)] += J.T @ np.diag(rng.uniform(1, 10, 3)) @ J
    return H, starts


@pytest.mark.parametrize("sizes, couplings", [
    ([6] * 8, [(0, 3), (3, 7), (1, 2), (5, 6), (0, 7)]),  # fill: eliminating block 0 couples 3 and 7
    ([4, 4, 4, 4, 6], [(0, 4), (1, 4), (2, 4), (3, 4)]),  # an Allegro hand: four fingers touching the cube
    ([6] * 5, []),  # no contacts: block diagonal
    ([7, 6, 6, 6], [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)]),  # every pair coupled: dense
])
def test_block_cholesky_equals_the_dense_factor(sizes, couplings):
    rng = np.random.default_rng(len(sizes) + len(couplings))
    H, starts = _block_sparse_spd(sizes, couplings, rng)
    L = np.full(H.shape, np.nan)  # stale workspace: every entry must be written
    slv.cholesky(H, starts, L)
    L0 = np.linalg.cholesky(H)
    assert np.allclose(L, L0, rtol=0, atol=1e-13 * np.abs(L0).max())
    assert np.all(np.triu(L, 1) == 0.0)
    dense = np.full(H.shape, np.nan)
    slv.cholesky(H, slv.NO_BLOCKS, dense)
    assert np.allclose(dense, L0, rtol=0, atol=1e-13 * np.abs(L0).max())  # empty partition: dense
    assert np.all(np.triu(dense, 1) == 0.0)


@pytest.mark.parametrize("n", [1, 6, 18, slv.DENSE_LOOP_MAX, slv.DENSE_LOOP_MAX + 1, 60])
def test_dense_cholesky_is_the_one_block_factorization(n):
    """Small dense factors come from loops with the block factorization's sums (one block: the same bits), large
    ones from LAPACK; both are LAPACK's factor to round-off, and a matrix that is not positive definite raises."""
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, n))
    H = X @ X.T + n * np.eye(n)
    dense, one_block = np.full(H.shape, np.nan), np.full(H.shape, np.nan)
    slv.cholesky(H, slv.NO_BLOCKS, dense)
    slv.cholesky(H, np.array([0, n], dtype=np.int64), one_block)
    L0 = np.linalg.cholesky(H)
    assert np.allclose(dense, L0, rtol=0, atol=1e-13 * np.abs(L0).max())
    if n <= slv.DENSE_LOOP_MAX:
        assert np.array_equal(dense, one_block)
    H[n // 2, n // 2] = -1.0
    with pytest.raises(np.linalg.LinAlgError):
        slv.cholesky(H, slv.NO_BLOCKS, dense)


@pytest.mark.parametrize("sizes, couplings", [
    ([6] * 8, [(0, 3), (3, 7), (1, 2), (5, 6), (0, 7)]),
    ([4, 4, 4, 4, 6], [(0, 4), (1, 4), (2, 4), (3, 4)]),
    ([6] * 5, []),
])
def test_block_triangular_solves_equal_the_dense_ones_bit_for_bit(sizes, couplings):
    """The triangular solves skip the zero blocks of a block factor (the mask cholesky returns): the same sums in
    the same order without their exact-zero terms, so the same Newton direction to the last bit."""
    rng = np.random.default_rng(7 + len(couplings))
    H, starts = _block_sparse_spd(sizes, couplings, rng)
    L = np.empty(H.shape)
    mask = slv.cholesky(H, starts, L)
    assert mask.shape == (len(sizes), len(sizes))
    for bi in range(len(sizes)):  # outside the pattern L is exactly zero
        for bj in range(bi + 1):
            if not mask[bi, bj]:
                assert np.all(L[starts[bi]:starts[bi + 1], starts[bj]:starts[bj + 1]] == 0.0)
    b = rng.normal(size=H.shape[0])
    x = slv._cholesky_solve(L, b, starts, mask)
    dense_loops = slv._cholesky_solve(L, b, slv.NO_BLOCKS, np.zeros((0, 0), dtype=bool))
    assert np.array_equal(x, dense_loops)
    assert np.allclose(x, np.linalg.solve(H, b), rtol=1e-10, atol=0)


def _clutter_problems(times, n_objects=12):
    """The convex problem of the full step from the states of a clutter run at ``times``: (integrator, dt, A, r,
    (contact, limit, gain, coupler pools)), as the integrator hands it to the solver."""
    sim = Simulator(scenes.clutter(n_objects=n_objects), accuracy=1e-3)
    integ = sim.integrator
    for t in times:
        sim.advance_to(t)
        dt = integ.dt
        cache = integ.start
        integ._prepare(cache, integ.q, integ.v, integ.z, integ.t, dt)
        gains, _, _ = integ._gain_pool(cache, dt)
        A = cache.M + np.diag(dt * integ.damping)
        r = cache.M @ cache.v - dt * cache.bias
        yield integ, dt, A, r, (cache.contact_pool, cache.limit_pool, gains, cache.coupler_pool)


def test_coupled_blocks_cover_the_hessian_and_give_the_same_factor():
    """The candidate blocks from the pools (coupled_blocks) contain every nonzero block of clutter Hessians (objects
    resting on each other), and the factor that scans only them is the full scan's bit for bit."""
    coupled = 0
    for integ, dt, A, r, pools in _clutter_problems((0.3, 0.5, 0.7, 0.9)):
        blocks = integ._blocks
        nb = blocks.shape[0] - 1
        grad, H = np.empty(A.shape[0]), np.empty(A.shape)
        slv.cost_gradient_hessian(integ.v, A, r, dt, integ.vs, *pools, grad, H, True, blocks)
        cand = slv.coupled_blocks(pools[0], pools[3], blocks)
        for bi in range(nb):
            for bj in range(bi + 1):
                if np.any(H[blocks[bi]:blocks[bi + 1], blocks[bj]:blocks[bj + 1]] != 0.0):
                    assert cand[bi, bj]
        L1, L2 = np.empty(H.shape), np.zeros(H.shape)  # cholesky_within writes the pattern's blocks only
        m1, m2 = slv.cholesky(H, blocks, L1), np.ones((nb, nb), dtype=bool)
        assert slv.cholesky_within(H, blocks, L2, cand, m2, np.empty(nb, dtype=np.int64))
        assert np.array_equal(L1, L2) and np.array_equal(m1, m2)
        coupled += int(np.tril(m1, -1).sum())
    assert coupled > 0  # objects touched each other: off-diagonal blocks were tested


def _ascending_row_sums(A, x, b0, b1):
    """(A x)[b0:b1] over the columns b0:b1, each entry one sum in ascending column order (Python floats)."""
    out = []
    for i in range(b0, b1):
        s = 0.0
        for j in range(b0, b1):
            s += float(A[i, j]) * float(x[j])
        out.append(s)
    return out


def test_block_matvec_equals_the_dense_product():
    """A = M + δt D never couples two trees: the product by blocks is the dense one (to round-off); each entry is
    one ascending sum over its block, bit for bit, and without blocks the matrix is one block (loops, not BLAS:
    the same bits on every CPU)."""
    rng = np.random.default_rng(3)
    H, starts = _block_sparse_spd([6] * 5, [], rng)
    x = rng.normal(size=H.shape[0])
    by_blocks = slv.block_matvec(H, x, starts)
    assert np.allclose(by_blocks, H @ x, rtol=1e-14, atol=1e-12)
    ref = sum((_ascending_row_sums(H, x, a, b) for a, b in zip(starts[:-1], starts[1:])), [])
    assert np.array_equal(by_blocks, ref)
    for n in (1, 5, 6, 18, 30):  # every remainder of the four-row chains
        A, y = rng.normal(size=(n, n)), rng.normal(size=n)
        assert np.array_equal(slv.block_matvec(A, y, slv.NO_BLOCKS), _ascending_row_sums(A, y, 0, n))
        assert np.allclose(slv.block_matvec(A, y, slv.NO_BLOCKS), A @ y, rtol=1e-13, atol=1e-13)


def test_dot_is_four_interleaved_sums():
    """solver.dot: the partial sums s_k over the entries i ≡ k (mod 4) of the first 4⌊n/4⌋, the remainder added to
    s_0, then (s_0 + s_1) + (s_2 + s_3): the same bits on every CPU."""
    rng = np.random.default_rng(5)
    dot = slv.dot
    for n in (0, 1, 3, 4, 7, 18, 120):
        x, y = rng.normal(size=n), rng.normal(size=n)
        s = [0.0] * 4
        for i in range(n - n % 4):
            s[i % 4] += float(x[i]) * float(y[i])
        for i in range(n - n % 4, n):
            s[0] += float(x[i]) * float(y[i])
        assert dot(x, y) == (s[0] + s[1]) + (s[2] + s[3])
        assert abs(dot(x, y) - float(x @ y)) <= 1e-13 * max(1.0, float(np.abs(x) @ np.abs(y)))


def test_block_cholesky_rejects_an_indefinite_matrix():
    H, starts = _block_sparse_spd([6] * 4, [(0, 1)], np.random.default_rng(0))
    H[10, 10] = -1.0
    with pytest.raises(np.linalg.LinAlgError):
        slv.cholesky(H, starts, np.empty(H.shape))


def test_factor_blocks_one_per_tree_from_the_world():
    clutter = Simulator(scenes.clutter(n_objects=20))
    assert np.array_equal(clutter.integrator._blocks, np.arange(0, 121, 6))  # 20 free bodies
    go1 = Simulator(scenes.go1_on_ground())
    assert go1.integrator._blocks.shape == (0,)  # one tree (the floating base): dense
    two = Simulator(scenes.clutter(n_objects=slv.MIN_FACTOR_BLOCKS - 1))
    assert two.integrator._blocks.shape == (0,)  # too few trees to pay


def test_clutter_trajectory_does_not_depend_on_the_factorization():
    """The same clutter drop with the dense and the block factorization: equal to round-off at first, and within
    the accuracy over a short run (the factors differ by ~1e-15 relative; the scene is chaotic later on)."""
    runs = []
    for blocks in (None, slv.NO_BLOCKS):
        sim = Simulator(scenes.clutter(n_objects=8), accuracy=1e-3)
        if blocks is not None:
            sim.integrator._blocks = blocks
        sim.advance_to(0.15)
        runs.append((sim.q.copy(), sim.integrator.stats))
    (qa, sa), (qb, sb) = runs
    assert sa.accepted == sb.accepted and sa.rejected == sb.rejected
    assert np.abs(qa - qb).max() < 1e-6


def test_newton_assembly_reads_and_writes_only_the_candidate_blocks():
    """A Newton iteration of solve() puts A on the lower triangle of the candidate blocks (start_hessian), the pools
    add their lower triangles, and cholesky_within reads only those and writes only its pattern's blocks: with every
    other entry of H and L garbage (NaN) the factor and the Newton direction are the reference's bit for bit."""
    checked = 0
    for integ, dt, A, r, pools in _clutter_problems((0.3, 0.6, 0.9)):
        blocks = integ._blocks
        nv = integ.v.shape[0]
        grad_ref, H_ref = np.empty(nv), np.zeros((nv, nv))
        slv.cost_gradient_hessian(integ.v, A, r, dt, integ.vs, *pools, grad_ref, H_ref, True, blocks)
        L_ref = np.empty((nv, nv))
        mask_ref = slv.cholesky(H_ref, blocks, L_ref)
        cand = slv.coupled_blocks(pools[0], pools[3], blocks)
        H, L = np.full((nv, nv), np.nan), np.full((nv, nv), np.nan)
        grad = np.empty(nv)
        quad = slv.quadratic_cost(integ.v, A, r, blocks, grad, np.empty(nv))
        slv.start_hessian(A, H, blocks, cand)
        slv.pool_costs(integ.v, A, dt, integ.vs, *pools, quad, grad, H, True)
        nb = blocks.shape[0] - 1
        mask = np.ones((nb, nb), dtype=bool)
        assert slv.cholesky_within(H, blocks, L, cand, mask, np.empty(nb, dtype=np.int64))
        assert np.array_equal(mask, mask_ref) and np.array_equal(grad, grad_ref)
        for bi in range(blocks.shape[0] - 1):
            for bj in range(bi + 1):
                rows, cols = slice(blocks[bi], blocks[bi + 1]), slice(blocks[bj], blocks[bj + 1])
                if mask[bi, bj]:
                    assert np.array_equal(np.tril(L[rows, cols]) if bi == bj else L[rows, cols],
                                          np.tril(L_ref[rows, cols]) if bi == bj else L_ref[rows, cols])
                    checked += bi != bj
                else:
                    assert np.all(np.isnan(L[rows, cols]))  # not written
        p = slv._cholesky_solve(L, -grad, blocks, mask)
        assert np.array_equal(p, slv._cholesky_solve(L_ref, -grad_ref, blocks, mask_ref))
        B = np.random.default_rng(0).normal(size=(nv, 5))
        X = B.copy()
        slv._cholesky_solve_columns(L, X, blocks, mask)  # the friction-bound Jacobian's solve, all columns at once
        for c in range(B.shape[1]):
            assert np.array_equal(X[:, c], slv._cholesky_solve(L_ref, B[:, c].copy(), blocks, mask_ref)), c
    assert checked > 0  # objects touched each other: coupled blocks were compared


def test_a_reused_newton_workspace_gives_every_solve_the_bits_of_a_fresh_one():
    """The integrator's solves share one NewtonWorkspace (its Hessian, factor pattern, block lists, contact velocities
    and normal impulses hold the last solve's values): clutter problems solved one after another in it, Lagged and
    with Coulomb bounds, end where each solve with a workspace of its own ends, bit for bit, with the same
    counters."""
    problems = []
    for integ, dt, A, r, pools in _clutter_problems((0.3, 0.5, 0.7, 0.9)):
        pools = tuple(type(p)(*(f.copy() if isinstance(f, np.ndarray) else f for f in p)) for p in pools)
        problems.append((dt, A, r, integ.start.dscale.copy(), pools, integ.v.copy()))
    blocks, nv, vs, tol = integ._blocks, integ.v.shape[0], integ.vs, integ._tol
    closed = 0
    for friction_tol in (np.zeros(2), integ._friction_tol):
        capacity = max(pools[0].Jc.shape[0] for _, _, _, _, pools, _ in problems)
        shared_work = slv.new_newton_workspace(nv, capacity, blocks)
        L_shared = np.zeros((nv, nv))
        for dt, A, r, dscale, pools, v0 in problems[::-1] + problems:
            results = []
            for work, L in ((shared_work, L_shared),
                            (slv.new_newton_workspace(nv, pools[0].Jc.shape[0], blocks), np.zeros((nv, nv)))):
                v, stats, fn_used = v0.copy(), np.zeros(4, dtype=np.int64), np.zeros(pools[0].Jc.shape[0])
                contacts = pools[0]._replace(fn0=pools[0].fn0.copy())
                extra = slv.solve_coulomb(v, A, r, dscale, dt, vs, contacts, *pools[1:], tol, False, L, blocks, stats,
                                          friction_tol, fn_used, work)
                results.append((v, stats, extra, fn_used))
            (v1, s1, e1, f1), (v2, s2, e2, f2) = results
            assert s1[slv.CONVERGED] == 1 and np.array_equal(s1, s2) and e1 == e2
            assert np.array_equal(v1, v2) and np.array_equal(f1, f2)
            closed += int(np.sum(pools[0].phi0[:pools[0].n] < 0.0))
    assert closed > 0  # the problems had closed contacts
    small = slv.new_newton_workspace(nv, 0, blocks)
    dt, A, r, dscale, pools, v0 = problems[0]
    with pytest.raises(ValueError, match="does not fit"):
        slv.solve_coulomb(v0.copy(), A, r, dscale, dt, vs, *pools, tol, False, np.zeros((nv, nv)), blocks,
                          np.zeros(4, dtype=np.int64), np.zeros(2), np.zeros(pools[0].n), small)


def test_newton_ends_unconverged_on_a_hessian_that_is_not_positive_definite():
    """A problem whose Hessian has no Cholesky factor (here A negated: not a convex problem) ends the solve with
    stats[CONVERGED] = 0 (the integrator then rejects the step), not with an exception from inside the loop."""
    integ, dt, A, r, pools = next(_clutter_problems((0.3,)))
    v, stats, L = integ.v.copy(), np.zeros(4, dtype=np.int64), np.zeros(A.shape)
    slv.solve(v, -A, r, integ.start.dscale, dt, integ.vs, *pools, integ._tol, False, L, integ._blocks, stats)
    assert stats[slv.CONVERGED] == 0 and stats[slv.FACTORIZATIONS] == 0
