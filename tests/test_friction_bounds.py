"""Newton's method on the friction bounds of :func:`cenic_gym.solver.solve_coulomb` (issues 10, 12, 18).

Under error control each solve's friction bound b_i = δt fn_i must agree with the step's own normal impulse
γ_n,i(v*(b)). On the Allegro cube (four fingertips and the palm on one body) the former fixed-point iteration
(Anderson(1)) ended without agreement in 1 of 18 iterations, each a rejected step. These tests check, on convex
problems taken from CenicAllegro-v0 states where the lagged bounds disagree:

* the sensitivities of :func:`cenic_gym.solver.friction_bound_jacobian` (implicit function theorem) against central
  differences of the minimiser and its normal impulses;
* that the answer is the same problem's answer: the returned v is the minimiser for the returned bounds (a cold
  plain solve with those bounds finds it again) and the bounds agree with its normal impulses to the tolerance;
  where the lagged solve already agrees, the result is the lagged solve bit for bit;
* the convergence statistic on the scripted rotation: failed solves per env step (0.57 with Anderson(1)).
"""
import gymnasium as gym
import numpy as np
import pytest

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym import solver as slv
from cenic_gym.envs.allegro_cube import ScriptedRotator
from cenic_gym.icf import ContactPool


def problem(integ, dt):
    """The convex problem of a full step of size dt from the integrator's current state:
    (A, r, dscale, contact pool (lagged f_n0), limits, gains, couplers)."""
    cache = integ.start
    integ._prepare(cache, integ.q, integ.v, integ.z, integ.t, dt)
    gains, _, _ = integ._gain_pool(cache, dt)
    A = cache.M + np.diag(dt * integ.damping)
    r = cache.M @ cache.v - dt * cache.bias
    pool = cache.contact_pool
    pool = ContactPool(*(x.copy() if isinstance(x, np.ndarray) else x for x in pool))
    return A, r, cache.dscale.copy(), pool, cache.limit_pool, gains, cache.coupler_pool


def coulomb(integ, prob, dt, v0):
    """solve_coulomb from warm start v0: (v, extra solves, stats, normal forces of the bounds used)."""
    A, r, dscale, pool, limits, gains, couplers = prob
    v, stats, L = v0.copy(), np.zeros(4, dtype=np.int64), np.zeros((v0.size, v0.size))
    fn_used = np.zeros(pool.n)
    work = slv.new_newton_workspace(v0.size, pool.Jc.shape[0], integ._blocks)
    extra = slv.solve_coulomb(v, A, r, dscale, dt, integ.vs, pool, limits, gains, couplers, integ._tol, False, L,
                              integ._blocks, stats, integ._friction_tol, fn_used, work)
    return v, extra, stats, fn_used


@pytest.fixture(scope="module")
def disagreeing_states():
    """Up to 3 (integrator, problem, dt) of the scripted rotation (seed 0) whose lagged bounds disagree with the
    normal impulses, with ≥ 3 contacts; the env is copied at each (its integrator keeps the state)."""
    import copy

    env = gym.make("CenicAllegro-v0", accuracy=1e-3)
    obs, _ = env.reset(seed=0)
    policy = ScriptedRotator(env)
    policy.reset()
    found = []
    for _ in range(120):
        obs, *_ = env.step(policy(obs))
        integ = env.unwrapped.sim.integrator
        dt = integ.dt
        prob = problem(integ, dt)
        if prob[3].n < 3:
            continue
        _, extra, stats, _ = coulomb(integ, prob, dt, integ.v)
        if extra > 0 and stats[slv.CONVERGED]:
            found.append((copy.deepcopy(integ), prob, dt))
            if len(found) == 3:
                break
    env.close()
    assert found, "no state with disagreeing lagged friction bounds in 120 scripted steps"
    return found


def test_bound_sensitivities_match_central_differences(disagreeing_states):
    integ, prob, dt, = disagreeing_states[0]
    A, r, dscale, pool, limits, gains, couplers = prob
    nv, nc = A.shape[0], pool.n

    def minimiser(fn):
        p = pool._replace(fn0=fn)
        v, stats, L = integ.v.copy(), np.zeros(4, dtype=np.int64), np.zeros((nv, nv))
        slv.solve(v, A, r, dscale, dt, integ.vs, p, limits, gains, couplers, 1e-13, False, L, integ._blocks, stats)
        assert stats[slv.CONVERGED] == 1
        gn = np.empty(nc)
        slv.friction_bound_mismatch(v, dt, integ.vs, p, fn, gn, 0.1, 1e-3)
        return v, gn

    # bounds of the first Newton iterate: a point where the sensitivities matter
    fn = pool.fn0.copy()
    v, gn = minimiser(fn)
    fn = np.maximum(gn, 0.0) / dt
    v, gn = minimiser(fn)
    Xt, G = np.empty((nv, nc)), np.empty((nc, nc))
    slv.friction_bound_jacobian(v, A, r, dt, integ.vs, pool._replace(fn0=fn), limits, gains, couplers,
                                np.empty((nv, nv)), integ._blocks, np.ones((1, 1), dtype=bool), True, np.arange(nc),
                                Xt, G)
    X = Xt.T
    assert np.abs(G).max() > 1e-3, "the contacts should be coupled through the cube"
    checked = 0
    for j in range(nc):
        if fn[j] <= 0.0:
            continue
        h = 1e-5 * fn[j]
        up, down = fn.copy(), fn.copy()
        up[j] += h
        down[j] -= h
        (vu, gu), (vd, gd) = minimiser(up), minimiser(down)
        dv_fd = (vu - vd) / (2 * h * dt)  # per unit b = δt fn
        dg_fd = (gu - gd) / (2 * h * dt)
        assert np.allclose(-X[j], dv_fd, rtol=1e-3, atol=1e-4 * np.abs(dv_fd).max() + 1e-9), j
        assert np.allclose(G[:, j], dg_fd, rtol=1e-3, atol=1e-4 * np.abs(dg_fd).max() + 1e-9), j
        checked += 1
    assert checked >= 2


def test_newton_bounds_return_the_minimiser_for_agreeing_bounds(disagreeing_states):
    for integ, prob, dt in disagreeing_states:
        A, r, dscale, pool, limits, gains, couplers = prob
        v, extra, stats, fn_used = coulomb(integ, prob, dt, integ.v)
        assert stats[slv.CONVERGED] == 1 and 0 < extra < slv.MAX_FRICTION_SOLVES - 1
        # the bounds agree with the solution's own normal impulses (the acceptance test of solve_coulomb)
        gn = np.empty(pool.n)
        rtol, atol = integ._friction_tol
        assert slv.friction_bound_mismatch(v, dt, integ.vs, pool, fn_used, gn, rtol, atol) <= 1.0
        # ... and v is the minimiser of the problem with those bounds: a cold plain solve finds it again
        cold, st, L = np.zeros_like(v), np.zeros(4, dtype=np.int64), np.zeros((v.size, v.size))
        slv.solve(cold, A, r, dscale, dt, integ.vs, pool._replace(fn0=fn_used), limits, gains, couplers, 1e-12,
                  False, L, integ._blocks, st)
        assert st[slv.CONVERGED] == 1
        scale = 1.0 / dscale  # D⁻¹: the solver's velocity norm
        assert np.linalg.norm(scale * (cold - v)) <= 10 * integ._tol * max(1.0, np.linalg.norm(dscale * r))


def test_agreeing_lagged_bounds_keep_the_lagged_solve(disagreeing_states):
    integ, prob, _ = disagreeing_states[0]
    A, r, dscale, pool, limits, gains, couplers = prob
    dt = 1e-6  # a tiny step: the lagged normal force is the step's own to far within the tolerance
    prob = problem(integ, dt)
    v, extra, stats, fn_used = coulomb(integ, prob, dt, integ.v)
    assert extra == 0 and stats[slv.CONVERGED] == 1
    A, r, dscale, pool, limits, gains, couplers = prob
    plain, st, L = integ.v.copy(), np.zeros(4, dtype=np.int64), np.zeros((v.size, v.size))
    slv.solve(plain, A, r, dscale, dt, integ.vs, pool, limits, gains, couplers, integ._tol, False, L, integ._blocks, st)
    assert np.array_equal(plain, v) and np.array_equal(fn_used, pool.fn0)


def test_scripted_rotation_rarely_fails_a_solve():
    """Failed solves (every one a rejected step) per env step on the scripted quarter turn at ε = 1e-3: 0.57 with
    the Anderson(1) bound iteration (benchmarks/solver_convergence.py, 200 env steps), 0.06–0.18 with Newton in
    100-step episodes of seeds 0–7 (0.17 over seeds 0–3; chaotic, so averaged over seeds)."""
    failures, steps = 0, 100
    for seed in range(4):
        env = gym.make("CenicAllegro-v0", accuracy=1e-3)
        obs, _ = env.reset(seed=seed)
        policy = ScriptedRotator(env)
        policy.reset()
        for _ in range(steps):
            obs, *_ = env.step(policy(obs))
        st = env.unwrapped.sim.integrator.stats
        env.close()
        assert st.friction_solves > 0  # the scene exercises the bound iteration
        failures += st.solver_failures
    assert failures <= 0.25 * 4 * steps, failures
