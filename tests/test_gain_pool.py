"""The gain pool of the external systems for one convex solve (external.ExternalSystems.linearize): the JointPD law
in numba (joint_pd_law) against the numpy expressions of docs/physics.md §2.10, the lean single-JointPD path against
the general one, the pools of a step-doubling attempt's full and half step (linearize_full_and_half) against two
linearizations, and the ownership of the pool's arrays."""
import numpy as np
import pytest

from cenic_gym import JointPD, SceneBuilder
from cenic_gym.external import ExternalSystems, GainLaw, PiecewiseLinear, joint_pd_law


def _panda():
    b = SceneBuilder()
    b.add_robot("panda", name="panda")
    return b.build()


@pytest.mark.parametrize("dt", [1e-5, 3.7e-3, 0.05])
def test_joint_pd_law_is_bit_identical_to_the_numpy_law(dt):
    """C = K_d + δt K_p and d = K_p (q_d − q) + K_d v_d + τ_ff, exactly as numpy evaluates them (same order of
    operations: the kernel must not move trajectories)."""
    rng = np.random.default_rng(3)
    n, nq = 9, 14
    kp, kd = rng.uniform(0, 1e4, n), rng.uniform(0, 1e2, n)
    q_d, v_d, tau_ff = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    qidx = rng.permutation(nq)[:n].astype(np.int64)
    q = rng.normal(size=nq)
    c, b = np.empty(n), np.empty(n)
    assert joint_pd_law(kp, kd, q_d, v_d, tau_ff, qidx, q, dt, c, b)
    np.testing.assert_array_equal(c, kd + dt * kp)
    np.testing.assert_array_equal(b, kp * (q_d - q[qidx]) + kd * v_d + tau_ff)
    q[qidx[4]] = np.nan
    assert not joint_pd_law(kp, kd, q_d, v_d, tau_ff, qidx, q, dt, c, b)


class _PDSubclass(JointPD):
    """A JointPD that is not exactly JointPD: ExternalSystems takes the general path (Linearization objects)."""


@pytest.mark.parametrize("timed", [False, True])
def test_single_joint_pd_pool_equals_the_general_path(timed):
    sys = _panda()
    rng = np.random.default_rng(5)
    q_d = PiecewiseLinear([0.0, 1.0], [sys.q0[:7], sys.q0[:7] + 0.3]) if timed else sys.q0[:7] + 0.1
    kw = dict(kp=rng.uniform(10, 100, 7), kd=rng.uniform(1, 10, 7), q_d=q_d, tau_ff=rng.normal(size=7))
    lean, general = ExternalSystems([JointPD(sys, np.arange(7), **kw)], sys.nv), \
        ExternalSystems([_PDSubclass(sys, np.arange(7), **kw)], sys.nv)
    assert lean._joint_pd is not None and general._joint_pd is None
    q, v = sys.q0 + 0.1 * rng.normal(size=sys.nq), rng.normal(size=sys.nv)
    for dt in (1e-3, 0.02):
        (g1, Z1, bz1), (g2, Z2, bz2) = (e.linearize(0.4, np.zeros(0), q, v, dt, lambda vv: q + dt * vv)
                                        for e in (lean, general))
        for a, b in zip(g1, g2):
            np.testing.assert_array_equal(a, b)
        assert Z1.shape == Z2.shape == (0, sys.nv) and bz1.shape == bz2.shape == (0,)
        assert lean.last_bounds == general.last_bounds == [(0, 7)]


@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_state_in_the_lean_path_raises_naming_the_system(pair, bad):
    """linearize and linearize_full_and_half alike."""
    sys = _panda()
    ext = ExternalSystems([JointPD(sys, np.arange(7), kp=50.0, kd=5.0)], sys.nv)
    q = sys.q0.copy()
    q[2] = bad
    args = (0.0, np.zeros(0), q, np.zeros(sys.nv), 0.01, lambda vv: q + 0.01 * vv)
    with pytest.raises(FloatingPointError, match="JointPD"):
        ext.linearize_full_and_half(*args, lambda vv: q + 0.005 * vv) if pair else ext.linearize(*args)


def test_gain_law_pool_keeps_its_values_when_the_user_reuses_buffers():
    """A user gain function may return the same buffers every call: the pool of an earlier solve (kept for the
    applied efforts) must not change with later calls."""
    idx, c, b, e = np.array([0, 2]), np.zeros(2), np.zeros(2), np.full(2, np.inf)

    def law(t, q, v, dt):
        c[:] = 1.0 / dt
        b[:] = t
        return idx, c, b, e

    ext = ExternalSystems([GainLaw(law)], 3)
    q, v = np.zeros(3), np.zeros(3)
    first, _, _ = ext.linearize(1.0, np.zeros(0), q, v, 0.5, lambda vv: vv)
    ext.linearize(2.0, np.zeros(0), q, v, 0.25, lambda vv: vv)
    np.testing.assert_array_equal(first.c, [2.0, 2.0])
    np.testing.assert_array_equal(first.b, [1.0, 1.0])


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize("timed", [False, True])
def test_full_and_half_pools_equal_two_linearizations(lean, timed):
    """linearize_full_and_half (one numba call for a plain JointPD) gives the pools of linearize at dt and dt/2 bit
    for bit, set-points evaluated at the end of each step (timed ones differ between the two)."""
    sys = _panda()
    rng = np.random.default_rng(7)
    q_d = PiecewiseLinear([0.0, 1.0], [sys.q0[:7], sys.q0[:7] + 0.3]) if timed else sys.q0[:7] + 0.1
    kw = dict(kp=rng.uniform(10, 100, 7), kd=rng.uniform(1, 10, 7), q_d=q_d, tau_ff=rng.normal(size=7))
    ext = ExternalSystems([(JointPD if lean else _PDSubclass)(sys, np.arange(7), **kw)], sys.nv)
    assert (ext._joint_pd is not None) == lean
    q, v, t, dt = sys.q0 + 0.1 * rng.normal(size=sys.nq), rng.normal(size=sys.nv), 0.4, 0.02
    full, half, Z, bz = ext.linearize_full_and_half(t, np.zeros(0), q, v, dt, lambda vv: q + dt * vv,
                                                    lambda vv: q + 0.5 * dt * vv)
    want_full, _, _ = ext.linearize(t, np.zeros(0), q, v, dt, lambda vv: q + dt * vv)
    want_half, want_Z, want_bz = ext.linearize(t, np.zeros(0), q, v, 0.5 * dt, lambda vv: q + 0.5 * dt * vv)
    for got, want in ((full, want_full), (half, want_half)):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(full.c, half.c)
    assert timed == (not np.array_equal(full.b, half.b))
    assert Z.shape == want_Z.shape == (0, sys.nv) and bz.shape == want_bz.shape == (0,)
    assert ext.last_bounds == [(0, 7)]
