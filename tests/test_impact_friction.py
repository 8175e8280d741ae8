"""Coulomb's law at impacts (issue 10): the ICF paper's falling sphere, a box landing on an edge, a Go1 landing.

Analytic reference: the falling sphere (ICF §XI-B, Fig. 5)
=========================================================

A sphere of mass m and radius R (I = 2/5 m R²) is released with its lowest point h above the ground, horizontal
velocity U0 along +x and no spin; ground friction μ (Coulomb), gravity g. With ω_y the spin about +y, the contact
point's velocity is v + ω × (−R ẑ), so the slip is s = v_x − R ω_y; it rolls when s = 0.

1. Free fall: touchdown at t_td = √(2h/g) with v_z = −√(2gh), v_x = U0, ω_y = 0, s = U0.
2. Rigid, perfectly plastic impact with Coulomb friction: the normal impulse stops the fall, P_n = m √(2gh). A
   friction impulse P_t (along −x) changes v_x by −P_t/m and R ω_y by +P_t R²/I = 5 P_t/(2m), so the slip drops by
   7 P_t/(2m). Coulomb: P_t ≤ μ P_n; the contact keeps sliding through the impact if even μ P_n cannot stop the
   slip, 7 μ √(2gh)/2 < U0 (here 1.733 < 2 m/s), and then P_t = μ P_n (maximal dissipation), leaving
   s⁺ = U0 − (7/2) μ √(2gh) = 0.267 m/s.
3. Sliding on the ground: N = m g, friction μ m g, so ds/dt = −(7/2) μ g, and the sphere rolls
   s⁺ / ((7/2) μ g) = 2U0/(7μg) − √(2h/g) after touchdown (the "skid", 15.5 ms), at v_x = 5/7 U0.
4. Release to rolling: t_roll = t_td + skid = **2U0/(7μg)**, the same as for the sphere launched on the ground
   (docs/physics.md §5.6 item 6). In general: while it slides the friction impulse is μ times the normal impulse, and
   the vertical momentum is zero before the release and after the landing, so the normal impulse from release to t is
   m g t whatever happens in between, and s(t) = U0 − (7/2) μ g t until s = 0.

With U0 = 2 m/s, μ = 0.5, h = 5 cm, g = 9.81: t_td = 0.10096 s, t_roll = 0.11650 s, skid 15.54 ms.

The compliant model (k = 1e7 N/m, d = 500 s/m) is not quite plastic: Hunt–Crossley lets the sphere leave with
v_out → 1/d = 2 mm/s (docs/physics.md §5.6 item 8), an extra normal impulse ≈ m/d which brings rolling ≈ 0.1 % earlier
(0.11641 s at ε = 1e-8). The Lagged model (friction bound μ δt f_n(x^n), ICF eq. 18) instead grips: at the landing
step f_n(x^n) = k(−φ0)(1 − d v_n^n) is ~500 times the elastic force, so the sphere rolled within one step of
touchdown at ε = 1e-4 (skid 0.2 ms instead of 15.5 ms) — or, when the contact appears inside a step (f_n(x^n) = 0),
lands without friction (ε = 1e-6: rolling at 0.156 s). :func:`cenic_gym.solver.solve_coulomb` takes the bound
from each step's own normal impulse instead; the tests below check the invariant it guarantees and the timings.

Invariant, per contact and accepted (half) step (to the integrator's accuracy ε, the tolerance of
:func:`cenic_gym.solver.friction_bound_mismatch`): ‖γ_t‖ ≤ μ γ_n (1 + √ε) + ε / w, with γ_t, γ_n the step's friction
and normal impulses and w [1/kg] the contact's Delassus estimate (ε / w: an impulse that changes the contact-point
velocity by ε [m/s]).
"""
import math

import numpy as np
import pytest

from cenic_gym import Box, ContactMaterial, SceneBuilder, Simulator, scenes
from cenic_gym import cenic as cn
from cenic_gym import solver as slv

G = 9.81
U0, MU, H = 2.0, 0.5, 0.05
T_TD = math.sqrt(2 * H / G)  # touchdown after release
T_ROLL = 2 * U0 / (7 * MU * G)  # release to rolling, = on-ground launch
SKID = T_ROLL - T_TD
R = 0.025


def box_on_edge(angle_deg=30.0, height=0.05, v0=2.0, mu=0.5, stiffness=1e5, dissipation=50.0):
    """A 10 cm, 1 kg cube tilted by ``angle_deg`` about y, its lowest edge (along y) ``height`` above the ground,
    moving along +x: it lands on that edge (two corner contacts) while sliding, then tips onto a face."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    a = math.radians(angle_deg)
    c, s = math.cos(a), math.sin(a)
    b = SceneBuilder()
    b.add_ground(mat)
    b.add_body("box", Box((0.1, 0.1, 0.1)), mass=1.0, position=(0, 0, 0.05 * (c + s) + height),
               rotation=np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]), velocity=(v0, 0, 0), material=mat)
    return b.build()


class ImpulseRecorder:
    """The contact impulses of both half steps of every accepted step of ``sim``'s integrator, however it is advanced
    (``sim.advance_to`` or an env's step): installed by wrapping the integrator's ``step``.

    White-box: the first half step's solution and friction bounds are not public, so ``_full_and_half`` is wrapped to
    keep its v^{n+1/2}, and the bounds are read from ``_fn_work[1]`` (first half) and the mid cache's pool (second
    half, the array :meth:`contact_results` uses). Rows: (t, half, γ_n, ‖γ_t‖, μ, w, slip at the start or end);
    with ``body``, ``samples`` holds (t, slip of a sphere of radius R on the ground) after every step."""

    def __init__(self, sim, body=None):
        self.sim, self.body = sim, body
        self.rows, self.samples = [], []
        integ = sim.integrator
        # the Python step loop, whose methods are wrapped here (free bodies and joint-PD robots run other loops)
        integ._compiled_loop = integ._articulated_loop = False
        full_and_half, step = integ._full_and_half, integ.step

        def recording_full_and_half(cache, dt):
            out = full_and_half(cache, dt)
            self._half = (out[3].copy(), dt)
            return out

        def recording_step(t_end, *args):
            dt = step(t_end, *args)
            self.record()
            return dt

        integ._full_and_half = recording_full_and_half
        integ.step = recording_step

    def record(self):
        integ = self.sim.integrator
        mid, v1, _, _ = integ.last_solution
        v_half, dt = self._half
        for half, (cache, v, fn) in enumerate(((integ.start, v_half, integ._fn_work[1]),
                                               (mid, v1, mid.contact_pool.fn0))):
            cs = cache.contacts
            if cs is None or cs.n == 0:
                continue
            n, pool = cs.n, cache.contact_pool
            force, slip = np.zeros((n, 3)), np.zeros(n)
            cn.contact_forces(v, pool._replace(fn0=fn[:n].copy()), integ.vs, 0.5 * dt, force, slip)
            vc0 = np.zeros((n, 3))
            slv.constraint_velocities(cache.v, cs.Jc, cs.cols, cs.ncols, n, vc0)
            for i in range(n):
                g = force[i] * 0.5 * dt
                gn = g @ cs.normal[i]
                s0 = np.linalg.norm(vc0[i] - (vc0[i] @ cs.normal[i]) * cs.normal[i])
                self.rows.append((integ.t, half, gn, np.linalg.norm(g - gn * cs.normal[i]), pool.mu[i], pool.w[i],
                                  max(slip[i], s0)))
        if self.body is not None:
            v, w = self.sim.body_velocity(self.body)
            self.samples.append((integ.t, v[0] - R * w[1]))

    def worst_cone_excess(self, eps, slip_min=0.0):
        """max over rows of (‖γ_t‖ − μ γ_n (1 + √ε)) w / ε: ≤ 1 is the invariant."""
        return max([(gt - mu * gn * (1 + math.sqrt(eps))) * w / eps
                    for t, h, gn, gt, mu, w, s in self.rows if s > slip_min] + [-math.inf])

    def sliding_rows(self, slip_min=1e-2):
        return sum(1 for r in self.rows if r[6] > slip_min)


def roll_time(samples, t_touchdown, thr=2e-3):
    """First step end at or after touchdown with slip ≤ thr (at touchdown itself: the grip-on-landing artefact, skid
    0); within the step, the zero of the line through the two previous (sliding, post-touchdown) samples, where there
    are such (the discrete slip decreases linearly while sliding)."""
    for j in range(1, len(samples)):
        t, s = samples[j]
        if s <= thr < samples[j - 1][1] and t >= t_touchdown:
            if j >= 2 and samples[j - 2][0] > t_touchdown and samples[j - 2][1] > thr:
                (t1, s1), (t2, s2) = samples[j - 2], samples[j - 1]
                slope = (s2 - s1) / (t2 - t1)
                if slope < 0:
                    return min(max(t2 - s2 / slope, t2), t)
            return t
    return math.nan


def run_falling_sphere(eps, t_end=0.16, lagged=False):
    sim = Simulator(scenes.falling_sphere(height=H, U0=U0, mu=MU), accuracy=eps, impact_friction=not lagged)
    rec = ImpulseRecorder(sim, body="ball")
    sim.advance_to(t_end)
    t_td = min(r[0] for r in rec.rows if r[2] > 0)  # end of the first step with a normal impulse
    return sim, rec, t_td, roll_time(rec.samples, t_td)


def slip_at(rec, t):
    ts, ss = zip(*([(0.0, U0)] + rec.samples))
    return float(np.interp(t, ts, ss))


def test_falling_sphere_rolls_at_the_analytic_time():
    sim, rec, t_td, t_roll = run_falling_sphere(1e-4)
    assert t_roll == pytest.approx(T_ROLL, rel=0.05)
    assert t_roll - t_td == pytest.approx(SKID, rel=0.20)
    # it does slide after landing: slip right after the impact ≈ U0 − 7/2 μ √(2gh) (0.267 m/s)
    s_plus = U0 - 3.5 * MU * math.sqrt(2 * G * H)
    assert slip_at(rec, t_td + 1e-3) == pytest.approx(s_plus - 3.5 * MU * G * 1e-3, abs=0.03)
    sim.advance_to(0.2)
    v, w = sim.body_velocity("ball")
    assert v[0] == pytest.approx(5 / 7 * U0, rel=2e-3)
    assert w[1] * R == pytest.approx(v[0], rel=2e-3)


def test_impact_friction_switch_is_checked():
    with pytest.raises(TypeError, match="impact_friction"):
        Simulator(scenes.falling_sphere(), impact_friction="no")


def test_lagged_bound_grips_on_landing():
    """The artifact of issue 10, kept as a check that the tests above can see it."""
    _, rec, t_td, t_roll = run_falling_sphere(1e-4, lagged=True)
    assert t_roll - t_td < 0.2 * SKID
    assert rec.worst_cone_excess(1e-4) > 100


def test_falling_sphere_converges_as_epsilon_tightens():
    """The skid after touchdown (analytic 15.54 ms) converges first order in δt (δt ∝ √ε under CENIC's per-step error
    control): measured +30 %, +20 %, +9 %, +2 % at ε = 1e-2 … 1e-5, mostly the first-order error of the free fall's
    touchdown time; release to rolling stays within 1 % from ε = 1e-3 on (its limit, the compliant model's, is 0.1 %
    early) and within 2 % at ε = 1e-2, where the 11 accepted steps of ~7–10 ms put it at the mercy of the step-size
    sequence: solver-tolerance-level changes move it by about 1 % there (measured with the Anderson(1) bound
    iteration: −0.4 % at κ = 1e-3, −1.2 % at κ = 1e-4, −1.1 % at ε = 5e-3; with Newton on the bounds −1.1 %).
    """
    err = {}
    for eps in (1e-2, 1e-3, 1e-4, 1e-5):
        _, rec, t_td, t_roll = run_falling_sphere(eps)
        assert t_roll == pytest.approx(T_ROLL, rel=0.02 if eps >= 1e-2 else 0.01)
        err[eps] = abs((t_roll - t_td) / SKID - 1)
    assert err[1e-2] > err[1e-3] > err[1e-4] > err[1e-5]
    assert err[1e-5] < 0.2 * err[1e-3]  # first order: 0.1


@pytest.mark.parametrize("eps", [1e-3, 1e-4])
def test_coulomb_invariant_falling_sphere(eps):
    _, rec, _, _ = run_falling_sphere(eps, t_end=0.12)
    assert rec.sliding_rows() > 5
    assert rec.worst_cone_excess(eps) <= 1.0 + 1e-6


@pytest.mark.parametrize("eps", [1e-3, 1e-4])
def test_coulomb_invariant_box_landing_on_an_edge(eps):
    sim = Simulator(box_on_edge(), accuracy=eps)
    rec = ImpulseRecorder(sim)
    sim.advance_to(0.4)
    assert rec.sliding_rows() > 20
    assert rec.worst_cone_excess(eps) <= 1.0 + 1e-6
    # the Lagged bound violates it by far on this scene (measured: ~40 ε/w beyond the cone at ε = 1e-4)
    lag = Simulator(box_on_edge(), accuracy=eps, impact_friction=False)  # the public switch to the Lagged bound
    rec_lag = ImpulseRecorder(lag)
    lag.advance_to(0.4)
    assert rec_lag.worst_cone_excess(eps) > 10


def test_coulomb_invariant_go1_landing():
    """An unactuated Go1 dropped from 45 cm: the feet (and then the body) land and slide; every footfall step."""
    sim = Simulator(scenes.go1_on_ground(height=0.45, mu=0.8), accuracy=1e-3)
    rec = ImpulseRecorder(sim)
    sim.advance_to(0.6)
    assert rec.sliding_rows() > 50
    assert rec.worst_cone_excess(1e-3) <= 1.0 + 1e-6


def trot(lagged, env_steps=50, seed=0):
    """CenicQuadruped-v0 (ε = 1e-3, 50 Hz) under the open-loop TrotGait for ``env_steps``: the recorder."""
    import gymnasium as gym

    from cenic_gym.envs.quadruped import TrotGait

    env = gym.make("CenicQuadruped-v0")
    obs, _ = env.reset(seed=seed)
    sim = env.unwrapped.sim
    if lagged:
        sim.integrator.set_impact_friction(False)
    rec = ImpulseRecorder(sim)
    gait = TrotGait(env)
    gait.reset()
    for _ in range(env_steps):
        obs, _, term, trunc, _ = env.step(gait(obs))
        assert not (term or trunc)
    return rec


def test_coulomb_invariant_go1_trotting():
    """The Go1 of CenicQuadruped-v0 trotting for 1 s (two gait cycles, ~160 accepted steps, ~500 sliding contact
    rows): every step of every foot that slides keeps friction inside the cone of its own normal impulse; the Lagged
    bound does not (measured: ~800 ε/w beyond it at the worst footfall)."""
    rec = trot(lagged=False)
    assert rec.sliding_rows() > 200
    assert rec.worst_cone_excess(1e-3) <= 1.0 + 1e-6
    assert trot(lagged=True).worst_cone_excess(1e-3) > 10


def test_contact_results_report_the_applied_friction():
    """contact_results() (the second half step) reports the bound the solve used: inside the cone of its own normal
    force during the landing."""
    sim = Simulator(scenes.falling_sphere(), accuracy=1e-4)
    seen = []

    def check(s):
        cr = s.contact_results()
        for i in range(cr.n):
            fn = cr.force[i] @ cr.normal[i]
            ft = np.linalg.norm(cr.force[i] - fn * cr.normal[i])
            if fn > 0 and cr.slip_speed[i] > 1e-2:
                seen.append(ft / (MU * fn))

    sim.advance_to(0.11, on_step=check)
    assert len(seen) > 5
    assert max(seen) <= 1.0 + 0.05


@pytest.mark.parametrize("stiffness, dissipation", [(1e5, 10.0), (1e7, 500.0)])
def test_on_ground_launch_is_unchanged(stiffness, dissipation):
    """Launched on the ground (no impact) the bounds already agree: the same steps and state as the plain Lagged
    model, and rolling at 2U0/(7μg)."""
    out = []
    for lagged in (False, True):
        sim = Simulator(scenes.rolling_sphere(U0=U0, mu=MU, stiffness=stiffness, dissipation=dissipation),
                        accuracy=1e-4)
        if lagged:
            sim.integrator.set_impact_friction(False)
        rec = ImpulseRecorder(sim, body="ball")
        sim.advance_to(0.2)
        out.append((sim.stats.solves, sim.q.copy(), roll_time(rec.samples, 0.0)))
    assert out[0][0] == out[1][0]
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=0, atol=1e-12)
    assert out[0][2] == pytest.approx(T_ROLL, rel=0.01)


def test_fixed_steps_keep_the_lagged_model():
    sim = Simulator(scenes.falling_sphere(), fixed_step=1e-3)
    assert not sim.integrator.impact_friction
    sim.advance_to(0.12)  # runs (the lagged discrete ICF of the paper)
