"""Physics against analytic answers (docs/physics.md §5.6) and convergence studies."""
import math

import numpy as np
import pytest

from cenic_gym import ContactMaterial, SceneBuilder, Simulator, Sphere, scenes

G = 9.81


def test_free_fall_step_doubling_error_is_g_dt2_over_4():
    sim = Simulator(scenes.free_fall(), accuracy=1e-3, max_step=0.5, record=True)
    sim.advance_to(1.0)
    for t, dt, accepted, err in sim.history:
        assert err == pytest.approx(G * dt**2 / 4, rel=1e-6)
    # the controller settles near 0.9 * 2 sqrt(ε/g) (docs/physics.md §5.6-1)
    dts = np.array([h[1] for h in sim.history if h[2]])
    assert np.median(dts[3:-1]) == pytest.approx(0.9 * 2 * math.sqrt(1e-3 / G), rel=0.05)


def test_free_fall_first_order_in_fixed_step():
    errs = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        sim = Simulator(scenes.free_fall(height=1.0), fixed_step=dt)
        sim.advance_to(0.5)
        z = sim.body_pose("ball")[0][2]
        errs.append(abs(z - (1.0 - 0.5 * G * 0.25)))
        # semi-implicit Euler: z_N = z_0 - g dt² N(N+1)/2 exactly
        n = round(0.5 / dt)
        assert z == pytest.approx(1.0 - G * dt**2 * n * (n + 1) / 2, abs=1e-12)
    assert errs[0] / errs[1] == pytest.approx(2.0, rel=0.02)
    assert errs[1] / errs[2] == pytest.approx(2.0, rel=0.02)


def _slope_displacement(sim, name, normal):
    p, _ = sim.body_pose(name)
    return p - (p @ normal) * normal


@pytest.mark.parametrize("accuracy", [1e-3, 1e-4])
def test_box_on_incline_sticks(accuracy):
    sys = scenes.incline(angle_deg=20.0, mu=0.5)
    sim = Simulator(sys, accuracy=accuracy)
    p0, _ = sim.body_pose("box")
    sim.advance_to(2.0)
    p1, _ = sim.body_pose("box")
    assert np.linalg.norm(p1 - p0) < 1e-3  # creep < 1 mm over 2 s
    # steady friction impulse balances gravity along the slope: total contact force = m g
    f = sim.contact_results().force.sum(axis=0)
    np.testing.assert_allclose(f, [0, 0, 1.0 * G], atol=2e-3 * G)


def test_box_on_incline_slides_with_coulomb_acceleration():
    th = math.radians(20.0)
    sys = scenes.incline(angle_deg=20.0, mu=0.3)
    sim = Simulator(sys, accuracy=1e-4)
    sim.advance_to(0.5)
    v1 = np.linalg.norm(sim.body_velocity("box")[0])
    sim.advance_to(1.5)
    v2 = np.linalg.norm(sim.body_velocity("box")[0])
    a = (v2 - v1) / 1.0
    assert a == pytest.approx(G * (math.sin(th) - 0.3 * math.cos(th)), rel=0.01)


def test_sphere_slide_to_roll_transition():
    U0, mu, R = 2.0, 0.5, 0.025
    sim = Simulator(scenes.rolling_sphere(U0=U0, mu=mu, radius=R), accuracy=1e-4)
    t_roll = None
    for t in np.arange(0.002, 0.3, 0.002):
        sim.advance_to(t)
        v, w = sim.body_velocity("ball")
        if t_roll is None and abs(v[0] - w[1] * R) < 1e-2 * U0:  # contact-point slip ≈ 0
            t_roll = t
    assert t_roll == pytest.approx(2 * U0 / (7 * mu * G), rel=0.05)
    v, w = sim.body_velocity("ball")
    assert v[0] == pytest.approx(5 / 7 * U0, rel=2e-3)


def test_static_then_dynamic_friction_under_ramped_force():
    mu_s, mu_d, m, rate = 0.6, 0.4, 1.0, 4.0  # force F = rate * t along +x [N]
    sys = scenes.sliding_box(v0=0.0, mu=mu_s, mu_dynamic=mu_d, mass=m)
    force = lambda t, q, v: sys.free_body_force(q, "box", (rate * t, 0.0, 0.0))  # noqa: E731
    sim = Simulator(sys, accuracy=1e-4, max_step=0.01, generalized_force=force)
    x0 = sim.body_pose("box")[0][0]
    t_break = None
    samples = []
    for t in np.arange(0.01, 2.2, 0.01):
        sim.advance_to(t)
        vx = sim.body_velocity("box")[0][0]
        samples.append((t, vx))
        if t_break is None and sim.body_pose("box")[0][0] - x0 > 1e-3:
            t_break = t
    assert t_break is not None
    # breakaway near μ_s m g (the regularized blend peaks at ~0.98 μ_s, docs/physics.md §2.3)
    assert rate * t_break == pytest.approx(mu_s * m * G, rel=0.05)
    # then sliding under μ_d: v(t2) − v(t1) = ∫ (F − μ_d m g)/m dt
    t1, t2 = t_break + 0.2, 2.1
    s = dict((round(t, 2), v) for t, v in samples)
    dv = s[round(t2, 2)] - s[round(t1, 2)]
    expected = (0.5 * rate * (t2**2 - t1**2) - mu_d * m * G * (t2 - t1)) / m
    assert dv == pytest.approx(expected, rel=0.02)


def test_no_gliding_while_sliding():
    """Lagged friction has no normal velocity while sliding (ICF §VII-A): push at μ m g to keep the speed."""
    mu, m = 0.5, 1.0
    sys = scenes.sliding_box(v0=1.0, mu=mu, mass=m)
    force = lambda t, q, v: sys.free_body_force(q, "box", (mu * m * G, 0.0, 0.0))  # noqa: E731
    sim = Simulator(sys, accuracy=1e-3, generalized_force=force)
    sim.advance_to(0.1)
    vz = []
    for t in np.arange(0.11, 1.0, 0.01):
        sim.advance_to(t)
        v = sim.body_velocity("box")[0]
        vz.append(v[2])
        assert v[0] == pytest.approx(1.0, abs=1e-3)
    assert np.max(np.abs(vz)) < 1e-6


def _trajectory(system_fn, accuracy, times, coord=slice(0, 3), **kw):
    sim = Simulator(system_fn(), accuracy=accuracy, **kw)
    out = []
    for t in times:
        sim.advance_to(t)
        out.append(sim.q[coord].copy())
    return np.array(out)


def _rms_errors(system_fn, accuracies, ref, times, coord, **kw):
    errs = np.array([np.sqrt(np.mean((_trajectory(system_fn, a, times, coord, **kw) - ref) ** 2))
                     for a in accuracies])
    return errs, np.polyfit(np.log10(accuracies), np.log10(errs), 1)[0]


def _sliding_box_exact(times, v0, mu):
    """x(t) of a box sliding under Coulomb friction μ m g from speed v0 until it stops at t* = v0/(μ g)."""
    t = np.minimum(times, v0 / (mu * G))
    return v0 * t - 0.5 * mu * G * t * t


def _hunt_crossley_drop_reference(times, height, k, d, m):
    """Height of the lowest point of a ball dropped from rest at ``height`` on a Hunt–Crossley ground:
    m z̈ = −m g + k (−z)_+ (1 − d ż)_+, integrated independently by scipy (DOP853, rtol 1e-12)."""
    from scipy.integrate import solve_ivp

    def rhs(t, y):
        return [y[1], -G + k * max(-y[0], 0.0) * max(1.0 - d * y[1], 0.0) / m]

    sol = solve_ivp(rhs, (0.0, times[-1]), [height, 0.0], t_eval=times, rtol=1e-12, atol=1e-14, method="DOP853",
                    max_step=1e-4)
    return sol.y[0]


def test_convergence_sliding_box():
    """Global error vs ε over three decades against the analytic solution. CENIC's error per step ≤ ε with a
    first-order method gives δt ∝ ε^½ and a global error O(ε^½) (slope ½); the error-per-unit-step mode
    (e ≤ ε δt) gives δt ∝ ε and a global error that falls linearly in ε (slope 1)."""
    times = np.linspace(0.05, 1.0, 30)
    ref = _sliding_box_exact(times, 1.0, 0.3)
    box = lambda: scenes.sliding_box(v0=1.0, mu=0.3)  # noqa: E731
    errs, slope = _rms_errors(box, [1e-4, 1e-5, 1e-6, 1e-7], ref, times, 0, max_step=0.05)
    assert np.all(np.diff(errs) < 0)
    assert slope >= 0.45, (errs, slope)
    # error per unit step, over the sliding phase (it stops at t* = 0.34 s; the stick transition has its own
    # O(v_s) regularization floor ~1e-5 m): measured 1.3e-3, 1.6e-4, 1.5e-5, 1.5e-6 m
    times = np.linspace(0.05, 0.3, 30)
    ref = _sliding_box_exact(times, 1.0, 0.3)
    errs, slope = _rms_errors(box, [1e-2, 1e-3, 1e-4, 1e-5], ref, times, 0, max_step=0.2, error_per_unit_step=True)
    assert np.all(np.diff(errs) < 0)
    assert slope >= 0.95, (errs, slope)


def test_convergence_bouncing_sphere_is_linear_in_error_per_unit_step_mode():
    """Ball with Hunt–Crossley dissipation dropped 0.3 m (one impact and rebound), against an independent
    high-accuracy ODE solution: with error per unit step the error falls at least linearly in ε over three
    decades (measured slope 0.91: 1.2e-3, 1.4e-4, 1.7e-5, 2.3e-6 m)."""
    times = np.linspace(0.01, 0.32, 40)
    ref = _hunt_crossley_drop_reference(times, 0.3, 1e4, 0.5, 0.1)
    ball = lambda: scenes.sphere_drop(height=0.3, dissipation=0.5, stiffness=1e4)  # noqa: E731
    errs, slope = _rms_errors(ball, [1e-2, 1e-3, 1e-4, 1e-5], ref + 0.05, times, 2, max_step=0.05,
                              error_per_unit_step=True)
    assert np.all(np.diff(errs) < 0)
    assert slope >= 0.85, (errs, slope)
    assert np.all(errs[1:] / errs[:-1] < 0.2), errs  # each decade of ε gains more than 5x


@pytest.mark.slow
def test_convergence_bouncing_sphere_error_per_step():
    """Default mode: position error per step ≤ ε. Impacts make the outgoing velocity error (not controlled,
    position-only norm, CENIC §V-E) dominate, so the global error falls slower than ε^½ here (measured ≈ 0.3)."""
    times = np.linspace(0.02, 1.0, 50)
    ref = _hunt_crossley_drop_reference(times, 0.3, 1e4, 0.5, 0.1)
    ball = lambda: scenes.sphere_drop(height=0.3, dissipation=0.5, stiffness=1e4)  # noqa: E731
    errs, slope = _rms_errors(ball, [1e-4, 1e-5, 1e-6, 1e-7], ref + 0.05, times, 2, max_step=0.05)
    assert np.all(np.diff(errs) < 0)
    assert slope >= 0.25, (errs, slope)


def _bounce(accuracy):
    sim = Simulator(scenes.sphere_drop(height=1.0, mass=0.1, stiffness=1e3, dissipation=0.0), accuracy=accuracy)
    in_contact, impacts, min_phi = False, 0, 0.0
    for t in np.arange(0.002, 10.0, 0.002):
        sim.advance_to(t)
        z = sim.body_pose("ball")[0][2] - 0.05
        min_phi = min(min_phi, z)
        if z < 0 and not in_contact:
            impacts += 1
        in_contact = z < 0
    vz = sim.v[2]
    energy = 0.5 * 0.1 * vz**2 + 0.1 * G * z + (0.5 * 1e3 * z * z if z < 0 else 0.0)
    return impacts, -min_phi, energy / (0.1 * G * 1.0)


def test_bouncing_ball_impacts_and_penetration():
    """CENIC Fig. 8 (docs/physics.md §5.6-7): m = 0.1 kg, k = 1e3 N/m, d = 0, h = 1 m: 11 impacts in 10 s,
    max penetration 4.53 cm (the implicit normal law loses energy at O(δt): at ε = 1e-5 the ball has lost
    60 % of its energy after 10 s and bounces 13 times; at 1e-6 22 %)."""
    impacts, pen, _ = _bounce(1e-6)
    assert impacts == 11
    assert pen == pytest.approx(0.0453, rel=0.02)


@pytest.mark.slow
def test_bouncing_ball_energy_loss_converges():
    losses = [1.0 - _bounce(eps)[2] for eps in (1e-5, 1e-6, 1e-7)]
    assert losses[0] > losses[1] > losses[2] > 0
    assert losses[0] / losses[2] > 5.0  # ~ε^{1/2}: 10x over two decades


def test_clutter_stays_in_bin_without_deep_penetration():
    """20 boxes and spheres into an open 0.5 m bin, pair stiffness 1e5 N/m, v_s = 1e-4 m/s, μ = 0.5, 2 s: finite,
    inside the walls, settled. Penetration converges to the contact model's own: at ε = 1e-4 the deepest accepted
    state is below 1 mm, the exact 1-D Hunt & Crossley penetration of a 1 kg box landing on a corner at the top
    layer's 2.54 m/s (0.99 mm, ``benchmarks/clutter_penetration.py``). At ε = 1e-3 a box spinning at 13 rad/s
    over an edge–edge contact (one manifold point) brings a corner 2 mm into its neighbour within one 7 ms step:
    bounded here at 3 mm (docs/physics.md §3)."""
    sys = scenes.clutter(n_objects=20, stiffness=1e5, mu=0.5, bin_inner=0.5)
    assert sys.stiction_tolerance == 1e-4
    for accuracy, bound in ((1e-3, 3e-3), (1e-4, 1e-3)):
        sim = Simulator(sys, accuracy=accuracy)
        for t in np.arange(0.1, 2.0001, 0.1):
            sim.advance_to(t)
            assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))
        half = 0.25
        for name in sys.body_names:
            p = sim.body_pose(name)[0]
            assert abs(p[0]) < half and abs(p[1]) < half and p[2] > 0.0, (name, p)  # inside the walls, above floor
        max_pen = -sim.stats.min_signed_distance
        print(f"clutter ε={accuracy:g} max penetration {max_pen * 1e3:.3f} mm, {sim.stats.accepted} steps")
        assert 0.0 < max_pen < bound
        # settled: static sag of the stack is ~0.1 mm
        assert -sim.contact_results().phi.min() < 0.5e-3


def test_static_sag_matches_mg_over_k():
    k = 1e5
    b = SceneBuilder()
    mat = ContactMaterial(stiffness=2 * k, mu_static=0.5)
    b.add_ground(mat)
    b.add_body("ball", Sphere(0.05), mass=1.0, position=(0, 0, 0.06), material=mat)
    sim = Simulator(b.build(), accuracy=1e-4)
    sim.advance_to(1.5)
    phi = sim.contact_results().phi
    assert phi[0] == pytest.approx(-G / k, rel=1e-3)


@pytest.mark.parametrize("shape_kind", ["convex", "cylinder_on_box", "capsule"])
def test_other_shapes_rest_with_weight_balanced(shape_kind):
    """Coal fallback (convex mesh, cylinder vs box) and capsule kernels inside the simulator: the body comes to
    rest and the contact forces carry its weight."""
    from cenic_gym import Box, Capsule, ConvexMesh, Cylinder

    mat = ContactMaterial(stiffness=2e5, dissipation=20.0, mu_static=0.5)
    b = SceneBuilder()
    b.add_ground(mat)
    if shape_kind == "convex":
        cube = np.array([[x, y, z] for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (-0.05, 0.05)])
        b.add_fixed("table", Box((0.4, 0.4, 0.1)), position=(0, 0, 0.05), material=mat)
        b.add_body("body", ConvexMesh(cube), mass=1.0, position=(0, 0, 0.152), material=mat)
    elif shape_kind == "cylinder_on_box":
        b.add_fixed("table", Box((0.4, 0.4, 0.1)), position=(0, 0, 0.05), material=mat)
        b.add_body("body", Cylinder(0.05, 0.1), mass=1.0, position=(0, 0, 0.152), material=mat)
    else:
        b.add_body("body", Capsule(0.03, 0.2), mass=1.0, position=(0, 0, 0.032), rotation=(0.0, np.pi / 2, 0.0),
                   material=mat)
    sim = Simulator(b.build(), accuracy=1e-4)
    sim.advance_to(1.0)
    v, w = sim.body_velocity("body")
    assert np.linalg.norm(v) < 1e-3 and np.linalg.norm(w) < 1e-2
    cr = sim.contact_results()
    assert cr.phi.size >= 2
    np.testing.assert_allclose(cr.force.sum(axis=0), [0, 0, G], atol=0.02 * G)


def test_coupler_makes_panda_fingers_move_together():
    """Holonomic coupler (docs/physics.md §2.8) from the Panda URDF's mimic tag: finger 2 = finger 1. Started 2 cm
    apart, the near-rigid constraint closes the gap within a few steps; a 5 N push on finger 1 alone drives both
    to the upper limit (0.04 m) and the constraint holds to within the near-rigid static violation."""
    b = SceneBuilder()
    b.add_robot("panda", name="panda")
    sys = b.build()
    assert list(sys.coupler_q0) == [8] and list(sys.coupler_q1) == [7]
    push = np.zeros(sys.nv)
    push[7] = 5.0
    sim = Simulator(sys, accuracy=1e-3, generalized_force=lambda t, q, v: push)
    q = sim.q
    q[7], q[8] = 0.01, 0.03
    sim.set_state(q=q)
    sim.advance_to(0.01)
    assert abs(sim.q[7] - sim.q[8]) < 1e-5
    assert abs(sim.v[7] - sim.v[8]) < 1e-3 * max(1.0, abs(sim.v[7]))
    sim.advance_to(0.2)
    assert sim.q[7] == pytest.approx(0.04, abs=1e-4) and sim.q[8] == pytest.approx(0.04, abs=1e-4)
    assert abs(sim.q[7] - sim.q[8]) < 1e-6
