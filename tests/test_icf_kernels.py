"""ICF potentials: gradients/Hessians against central finite differences, convexity, continuity (docs/physics.md §5.7)."""
import numpy as np
import pytest

from cenic_gym import icf

RNG = np.random.default_rng(0)


def _contact(vc, params):
    n, *rest = params
    c, g, H = icf.contact_cost(tuple(vc), tuple(n), *rest, True)
    return c, np.array(g), np.array(H).reshape(3, 3)


def _params(dt=1e-2, phi0=-1e-3, k=1e5, d=10.0, mu=0.5, fn0=None, vs=1e-4, normal=None):
    n = normal if normal is not None else RNG.normal(size=3)
    n = n / np.linalg.norm(n)
    if fn0 is None:
        fn0 = k * max(-phi0, 0.0)
    return (n, dt, phi0, k, d, mu, fn0, vs)


def _fd_check(f, x, h, rtol, atol):
    c, g, H = f(x)
    gfd = np.zeros_like(x)
    Hfd = np.zeros((x.size, x.size))
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cp, gp, _ = f(x + e)
        cm, gm, _ = f(x - e)
        gfd[i] = (cp - cm) / (2 * h)
        Hfd[:, i] = (gp - gm) / (2 * h)
    np.testing.assert_allclose(g, gfd, rtol=rtol, atol=atol)
    np.testing.assert_allclose(H, Hfd, rtol=rtol, atol=1e-6 * np.abs(H).max())
    return H


@pytest.mark.parametrize("slip", [1e-2, 1e-4, 1e-6])  # ‖v_t‖ ≫, ≈, ≪ ε = v_s
@pytest.mark.parametrize("phi0,d", [(-1e-3, 0.0), (-1e-3, 10.0), (-2e-2, 50.0), (2e-4, 5.0)])
def test_contact_gradient_hessian_fd(slip, phi0, d):
    for _ in range(5):
        p = _params(phi0=phi0, d=d)
        n = p[0]
        t = np.cross(n, RNG.normal(size=3))
        t /= np.linalg.norm(t)
        gn0, eps, vhat, _ = icf.contact_step_params(p[1], phi0, p[3], d, p[6], p[7])
        vn = vhat - abs(RNG.normal()) * 0.05 - 1e-3  # inside the active region, away from the kink at v̂
        vc = vn * n + slip * t
        h = min(slip, 1e-3) * 1e-3
        H = _fd_check(lambda x: _contact(x, p), vc, h, rtol=2e-5, atol=1e-9 * (1 + abs(gn0) * 1e3))
        assert np.linalg.eigvalsh(H).min() >= -1e-9 * np.abs(H).max()


def test_contact_gradient_outside_active_region_is_friction_only():
    p = _params(phi0=5e-3)  # separated: γ_n0 = 0, no friction, no force unless v_n < −φ0/δt
    vc = np.array([0.3, -0.2, 0.1])
    c, g, H = _contact(vc, p)
    n = p[0]
    if n @ vc > -5e-3 / 1e-2:
        assert np.allclose(g, 0) and np.allclose(H, 0)


def test_normal_cost_continuous_at_vhat_and_sign_of_impulse():
    dt, phi0, k, d = 1e-2, -1e-3, 1e5, 20.0
    _, _, vhat, _ = icf.contact_step_params(dt, phi0, k, d, k * 1e-3, 1e-4)
    below = icf.normal_cost(vhat - 1e-9, dt, phi0, k, d, vhat)
    above = icf.normal_cost(vhat + 1e-9, dt, phi0, k, d, vhat)
    assert abs(below[0] - above[0]) < 1e-9
    assert abs(below[1]) < 1e-6  # impulse vanishes continuously at v̂
    for vn in np.linspace(vhat - 1.0, vhat, 50):
        _, g, h = icf.normal_cost(vn, dt, phi0, k, d, vhat)
        assert g <= 1e-15 and h >= 0  # repulsive impulse −g ≥ 0, convex


def test_friction_impulse_bounded_by_lagged_cone_and_opposes_slip():
    p = _params(phi0=-2e-3, d=0.0)
    n, dt, phi0, k, d, mu, fn0, vs = p
    for _ in range(50):
        vc = RNG.normal(size=3)
        gamma = np.zeros(3)
        icf.contact_impulse(vc, *p, gamma)
        vt = vc - (vc @ n) * n
        gt = gamma - (gamma @ n) * n
        assert np.linalg.norm(gt) <= mu * dt * fn0 * (1 + 1e-12)
        assert gt @ vt <= 0  # maximum dissipation direction
        np.testing.assert_allclose(np.cross(gt, vt), 0, atol=1e-12)


def test_contact_cost_convex_along_random_lines():
    for _ in range(20):
        p = _params(phi0=RNG.uniform(-5e-3, 5e-3), d=RNG.uniform(0, 50))
        v0 = RNG.normal(size=3) * 0.1
        u = RNG.normal(size=3)
        a = np.linspace(-1, 1, 201)
        vals = np.array([_contact(v0 + t * u, p)[0] for t in a])
        second = vals[:-2] - 2 * vals[1:-1] + vals[2:]
        assert second.min() >= -1e-9 * (1 + np.abs(vals).max())


def test_line_derivatives_match_full_kernel():
    for _ in range(20):
        p = _params(phi0=RNG.uniform(-5e-3, 1e-3), d=RNG.uniform(0, 50))
        vc = RNG.normal(size=3) * 0.05
        u = RNG.normal(size=3)
        c, g, H = _contact(vc, p)
        lc, d1, d2 = icf.contact_line_derivs(vc, u, *p)
        assert np.isclose(lc, c) and np.isclose(d1, g @ u) and np.isclose(d2, u @ H @ u)


@pytest.mark.parametrize("c", [0.0, 1e-3, 2.0, 50.0])
@pytest.mark.parametrize("e", [np.inf, 3.0])
def test_gain_cost_fd_continuity_and_impulse(c, e):
    dt, b = 0.01, 4.0
    vs = np.linspace(-10, 10, 401)
    out = np.array([icf.gain_cost(v, c, b, e, dt) for v in vs])
    # gradient = −δt τ with τ = clamp(b − c v, ±e)
    tau = np.clip(b - c * vs, -e, e)
    np.testing.assert_allclose(out[:, 1], -dt * tau, atol=1e-14)
    # derivative of the cost by central differences
    h = 1e-6
    for v in [-7.3, -1.1, 0.3, 2.9, 8.8]:
        fp, fm = icf.gain_cost(v + h, c, b, e, dt)[0], icf.gain_cost(v - h, c, b, e, dt)[0]
        assert np.isclose((fp - fm) / (2 * h), icf.gain_cost(v, c, b, e, dt)[1], rtol=1e-5, atol=1e-9)
    # continuity (Huber form, erratum E4) and convexity
    assert np.max(np.abs(np.diff(out[:, 0]))) < 0.5 * dt * (abs(b) + c * 10 + 1) * (vs[1] - vs[0]) * 2
    assert np.all(out[:, 2] >= 0)


def test_limit_cost_fd_and_erratum_e1():
    dt, m = 1e-3, 2.0
    rinv, h = icf.limit_params(dt, m)
    beta = icf.LIMIT_BETA
    k = 4 * np.pi**2 * m / (beta**2 * dt**2)  # E1: period β δt
    assert np.isclose(rinv, dt * (dt + beta * dt / np.pi) * k)
    c, lo, hi = 0.5, 0.49, 0.51
    for cdot in [-30.0, -5.0, 0.0, 5.0, 30.0]:
        eps = 1e-6
        f0, g0, H0 = icf.limit_cost(cdot, c, lo, hi, m, dt)
        fp = icf.limit_cost(cdot + eps, c, lo, hi, m, dt)[0]
        fm = icf.limit_cost(cdot - eps, c, lo, hi, m, dt)[0]
        assert np.isclose((fp - fm) / (2 * eps), g0, rtol=1e-5, atol=1e-6)
    # inside the band: zero; below: pushes up (γ = −g > 0); above: pushes down
    assert icf.limit_cost(0.0, c, lo, hi, m, dt)[1] == 0.0
    assert icf.limit_cost(-20.0, c, lo, hi, m, dt)[1] < 0 < icf.limit_cost(20.0, c, lo, hi, m, dt)[1]


def test_stribeck_mu_values():
    # docs/physics.md §2.3: σ(0)=1, σ(10)=0.5, σ(20)≈0
    vs = 1e-4
    assert np.isclose(icf.stribeck_mu(0.0, vs, 1.0, 0.0), 1.0, atol=1e-12)
    assert np.isclose(icf.stribeck_mu(10 * vs, vs, 1.0, 0.0), 0.5)
    assert abs(icf.stribeck_mu(20 * vs, vs, 1.0, 0.0)) < 1e-3
    assert np.isclose(icf.stribeck_mu(5 * vs, vs, 1.0, 0.0), 0.993, atol=1e-3)


# ---------------------------------------------------------------------------------------------------------------
# The pools (issue 18: one named struct per constraint kind): each pool's cost kernel against central finite
# differences in the generalized velocity v, and its line kernel against the cost kernel along a direction.
# ---------------------------------------------------------------------------------------------------------------
NV, DT, VS = 5, 1e-2, 1e-4


def _pools():
    """One small pool of each kind over nv = 5, with active and inactive entries."""
    n = 3
    cols = np.array([[0, 1, 2, 3], [1, 2, 4, 0], [0, 3, 4, 0]])
    ncols = np.array([4, 3, 3])
    Jc = RNG.normal(size=(n, 3, 4))
    normal = RNG.normal(size=(n, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    phi0 = np.array([-1e-3, -4e-3, 2e-4])
    k = np.array([1e5, 3e4, 1e5])
    fn0 = k * np.maximum(-phi0, 0.0)
    contacts = icf.ContactPool(Jc, cols, ncols, normal, phi0, k, np.array([10.0, 0.0, 5.0]), np.array([0.5, 0.8, 0.3]),
                               fn0, np.array([1.0, 0.5, 2.0]), n)
    limits = icf.LimitPool(np.array([1, 3]), np.array([0.5, -0.2]), np.array([0.499, -1.0]), np.array([0.6, -0.2005]),
                           np.array([2.0, 0.3]))
    gains = icf.GainPool(np.array([0, 2, 4]), np.array([3.0, 0.0, 50.0]), np.array([1.0, -2.0, 4.0]),
                         np.array([np.inf, 1.5, 3.0]))
    couplers = icf.CouplerPool(np.array([2]), np.array([4]), np.array([-0.7]), np.array([1e-3]), np.array([0.4]))
    return contacts, limits, gains, couplers


def _pool_cost(kind, pool, v):
    """(cost, gradient, full Hessian) of one pool at v: the pools add the lower triangle of their (symmetric)
    Hessian only, and leave the upper one untouched."""
    grad, H = np.zeros(NV), np.zeros((NV, NV))
    if kind == "contact":
        c = icf.contact_pool_cost(pool, v, DT, VS, 0.0, grad, H, True)
    else:
        c = getattr(icf, f"{kind}_pool_cost")(pool, v, DT, 0.0, grad, H, True)
    assert not np.any(np.triu(H, 1)), "a pool wrote the upper triangle"
    return c, grad, np.tril(H) + np.tril(H, -1).T


@pytest.mark.parametrize("kind", ["contact", "limit", "gain", "coupler"])
def test_pool_cost_gradient_hessian_fd_and_line(kind):
    pool = dict(zip(["contact", "limit", "gain", "coupler"], _pools()))[kind]
    for trial in range(5):
        v = RNG.normal(size=NV) * (0.02 if kind == "contact" else 2.0)
        c, g, H = _pool_cost(kind, pool, v)
        assert np.isfinite(c)
        h = 1e-7
        for i in range(NV):
            e = np.zeros(NV)
            e[i] = h
            cp, gp, _ = _pool_cost(kind, pool, v + e)
            cm, gm, _ = _pool_cost(kind, pool, v - e)
            assert np.isclose((cp - cm) / (2 * h), g[i], rtol=1e-4, atol=1e-7 * (1 + np.abs(g).max()))
            np.testing.assert_allclose((gp - gm) / (2 * h), H[:, i], rtol=1e-3, atol=1e-5 * (1 + np.abs(H).max()))
        assert np.linalg.eigvalsh(H).min() >= -1e-9 * (1 + np.abs(H).max())  # convex
        # line kernel: value and derivatives along v + α p equal the cost kernel's
        p, alpha = RNG.normal(size=NV), 0.3
        if kind == "contact":
            vc, uc = np.zeros((pool.n, 3)), np.zeros((pool.n, 3))
            from cenic_gym.solver import constraint_velocities
            constraint_velocities(v, pool.Jc, pool.cols, pool.ncols, pool.n, vc)
            constraint_velocities(p, pool.Jc, pool.cols, pool.ncols, pool.n, uc)
            f, d1, d2 = icf.contact_pool_line(pool, vc, uc, alpha, DT, VS, 0.0, 0.0, 0.0)
        else:
            f, d1, d2 = getattr(icf, f"{kind}_pool_line")(pool, v, p, alpha, DT, 0.0, 0.0, 0.0)
        ca, ga, Ha = _pool_cost(kind, pool, v + alpha * p)
        assert np.isclose(f, ca, rtol=1e-12, atol=1e-15)
        assert np.isclose(d1, ga @ p, rtol=1e-9, atol=1e-12)
        assert np.isclose(d2, p @ Ha @ p, rtol=1e-9, atol=1e-12)


def test_coupler_pool_holds_the_coupled_velocity():
    """The coupler potential is the limit one with both bounds at 0 on c = q0 − ρ q1 − offset: it vanishes exactly
    where the step ends on the constraint (c + δt' ċ = 0, δt' = δt + τ) and pushes ċ back otherwise."""
    _, _, _, couplers = _pools()
    rinv, h = icf.limit_params(DT, couplers.m[0])
    v = np.zeros(NV)
    rho = couplers.ratio[0]
    v[2] = -couplers.c[0] / h  # ċ = v_2 − ρ v_4 with v_4 = 0
    c, g, _ = _pool_cost("coupler", couplers, v)
    assert abs(c) < 1e-12 and np.abs(g).max() < 1e-9
    v[2] += 0.1
    c, g, _ = _pool_cost("coupler", couplers, v)
    assert c > 0 and g[2] > 0 and np.isclose(g[4], -rho * g[2])
