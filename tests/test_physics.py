"""Physics against analytic answers (physics-notes §5.6) and convergence studies."""
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
    # the controller settles near 0.9 * 2 sqrt(ε/g) (physics-notes §5.6-1)
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
    f = sim.contact_results()["force"].sum(axis=0)
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
    # breakaway near μ_s m g (the regularized blend peaks at ~0.98 μ_s, physics-notes §2.3)
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


def _trajectory(system_fn, accuracy, times):
    sim = Simulator(system_fn(), accuracy=accuracy, max_step=0.05)
    out = []
    for t in times:
        sim.advance_to(t)
        out.append(sim.q[:3].copy())
    return np.array(out)


def _convergence_slope(system_fn, accuracies, reference, times):
    ref = _trajectory(system_fn, reference, times)
    errs = [np.sqrt(np.mean(np.sum((_trajectory(system_fn, a, times) - ref) ** 2, axis=1))) for a in accuracies]
    slope = np.polyfit(np.log10(accuracies), np.log10(errs), 1)[0]
    return np.array(errs), slope


def test_convergence_sliding_box():
    """Global error vs ε over three decades. A first-order method whose local error per step is held at ε
    converges like ε^{1/2} (δt ∝ ε^{1/2}, global error O(δt)); the measured slope must reach that order."""
    times = np.linspace(0.05, 1.5, 30)
    errs, slope = _convergence_slope(lambda: scenes.sliding_box(v0=1.0, mu=0.3), [1e-4, 1e-5, 1e-6, 1e-7], 1e-9,
                                     times)
    assert np.all(np.diff(errs) < 0)
    assert slope >= 0.45, (errs, slope)


@pytest.mark.slow
def test_convergence_bouncing_sphere():
    times = np.linspace(0.02, 1.0, 50)
    errs, slope = _convergence_slope(lambda: scenes.sphere_drop(height=0.3, dissipation=0.5, stiffness=1e4),
                                     [1e-4, 1e-5, 1e-6, 1e-7], 1e-9, times)
    assert np.all(np.diff(errs) < 0)
    assert slope >= 0.3, (errs, slope)


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
    """CENIC Fig. 8 (physics-notes §5.6-7): m = 0.1 kg, k = 1e3 N/m, d = 0, h = 1 m: 11 impacts in 10 s,
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
    """20 boxes and spheres into an open 0.5 m bin, pair stiffness 1e5 N/m, v_s = 1e-4 m/s, μ = 0.5, 2 s at
    ε = 1e-3: finite, inside the walls, max penetration over every accepted state below 1 mm."""
    sys = scenes.clutter(n_objects=20, stiffness=1e5, mu=0.5, bin_inner=0.5)
    assert sys.stiction_tolerance == 1e-4
    sim = Simulator(sys, accuracy=1e-3)
    for t in np.arange(0.1, 2.0001, 0.1):
        sim.advance_to(t)
        assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))
    half = 0.25
    for name in sys.body_names:
        p = sim.body_pose(name)[0]
        assert abs(p[0]) < half and abs(p[1]) < half and p[2] > 0.0, (name, p)  # inside the walls, above the floor
    max_pen = -sim.stats.min_signed_distance
    print(f"clutter max penetration {max_pen * 1e3:.3f} mm, {sim.stats.accepted} steps")
    assert 0.0 < max_pen < 1e-3
    # settled: static sag of the stack is ~0.1 mm
    assert -sim.contact_results()["phi"].min() < 0.5e-3


def test_static_sag_matches_mg_over_k():
    k = 1e5
    b = SceneBuilder()
    mat = ContactMaterial(stiffness=2 * k, mu_static=0.5)
    b.add_ground(mat)
    b.add_body("ball", Sphere(0.05), mass=1.0, position=(0, 0, 0.06), material=mat)
    sim = Simulator(b.build(), accuracy=1e-4)
    sim.advance_to(1.5)
    phi = sim.contact_results()["phi"]
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
    assert cr["phi"].size >= 2
    np.testing.assert_allclose(cr["force"].sum(axis=0), [0, 0, G], atol=0.02 * G)
