"""Bodies of unequal materials: how a pair's stiffness, dissipation and friction follow from its two materials.

Pairs combine as in Drake (docs/physics.md §2.2): springs in series k = k₁k₂/(k₁ + k₂), Hunt–Crossley dissipation
d = (k₂d₁ + k₁d₂)/(k₁ + k₂), friction μ = 2μ₁μ₂/(μ₁ + μ₂) (static and dynamic coefficients each). Every other
test gives both sides of a contact the same material, where any mean of two equal numbers is that number; here
the two sides always differ, and each test measures a physical consequence of the combined value against an
analytic or independent ODE answer, with a tolerance well inside the gap to the usual wrong rules (arithmetic or
geometric mean, min/max, weights swapped). The numbers in the docstrings are the measured ones.

Springs in series: two compliant surfaces pressed together carry the same force f and each yields f/kᵢ, so the
approach is f(1/k₁ + 1/k₂). Dissipation: with f = kᵢxᵢ(1 − dᵢẋᵢ) on each side and a thin-film split of the rate
in the same ratio as the depths (ẋᵢ/ẋ = xᵢ/x = k/kᵢ), the combined law k x (1 − d ẋ) has d = (k/k₁)d₁ + (k/k₂)d₂
= (k₂d₁ + k₁d₂)/(k₁ + k₂): the softer side's dissipation dominates (a hard ball on a soft, lossy pad behaves like
the pad).
"""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from cenic_gym import Box, ContactMaterial, ConvexMesh, SceneBuilder, Simulator, Sphere

G = 9.81


def series(k1, k2):
    return k1 * k2 / (k1 + k2)


def harmonic(m1, m2):
    return 2.0 * m1 * m2 / (m1 + m2)


# ---------------------------------------------------------------------------------------------------------------
# Friction: a harmonic mean, static and dynamic coefficients each
# ---------------------------------------------------------------------------------------------------------------

BOX_MAT = dict(stiffness=2e5, dissipation=10.0)  # equal stiffness and dissipation: only μ differs between sides


def _box_on_ground(mu_box, mu_ground, mud_box=None, mud_ground=None, v0=0.0, angle_deg=0.0, m=1.0, side=0.1):
    """A 10 cm, 1 kg box of friction (mu_box, mud_box) at its static sag on a half-space of (mu_ground, mud_ground)
    tilted by angle_deg about y (downhill towards −x); initial speed v0 along +x (flat ground). Returns
    (system, outward normal)."""
    th = math.radians(angle_deg)
    n = np.array([-math.sin(th), 0.0, math.cos(th)])
    b = SceneBuilder()
    b.add_ground(ContactMaterial(mu_static=mu_ground, mu_dynamic=mud_ground, **BOX_MAT), normal=n)
    k_pair = series(BOX_MAT["stiffness"], BOX_MAT["stiffness"])
    sag = m * G * math.cos(th) / (4 * k_pair)  # four corner points
    c, s = math.cos(-th), math.sin(-th)
    R = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    b.add_body("box", Box((side, side, side)), mass=m, position=(0.5 * side - sag) * n, rotation=R,
               velocity=(v0, 0.0, 0.0), material=ContactMaterial(mu_static=mu_box, mu_dynamic=mud_box, **BOX_MAT))
    return b.build(), n


def test_sliding_box_stops_where_the_harmonic_mean_of_the_dynamic_coefficients_says():
    """Box μ = (0.9 static, 0.6 dynamic) on ground μ = (0.3, 0.2), launched at 1 m/s: Coulomb deceleration μ_d g
    with μ_d = 2·0.6·0.2/0.8 = 0.30, so x(t) = v₀t − ½μ_d g t² until it stops at t* = v₀/(μ_d g) = 0.340 s, after
    x* = v₀²/(2μ_d g) = 0.1699 m. Measured at ε = 1e-5: x off by ≤ 0.6 mm (the first-order lag, falling like ε^½),
    v by ≤ 1.1 mm/s, stopped at t*. The arithmetic mean (0.4) stops at 0.127 m, the geometric (0.35) at 0.146 m,
    the static coefficients' harmonic mean (0.45) at 0.113 m."""
    v0 = 1.0
    mu_d = harmonic(0.6, 0.2)
    sys, _ = _box_on_ground(0.9, 0.3, 0.6, 0.2, v0=v0)
    sim = Simulator(sys, accuracy=1e-5)
    t_stop = v0 / (mu_d * G)
    for t in np.linspace(0.05, 0.5, 10):
        sim.advance_to(t)
        tt = min(t, t_stop)
        x_exact = v0 * tt - 0.5 * mu_d * G * tt * tt
        assert sim.body_pose("box")[0][0] == pytest.approx(x_exact, abs=1.5e-3), t
        if t > t_stop + 0.02:
            assert abs(sim.body_velocity("box")[0][0]) < 1e-3, t  # stopped (stiction creep is ~v_s)
        elif t < t_stop - 0.02:
            assert sim.body_velocity("box")[0][0] == pytest.approx(v0 - mu_d * G * t, abs=5e-3), t
    assert sim.body_pose("box")[0][0] == pytest.approx(v0**2 / (2 * mu_d * G), abs=1.5e-3)


def test_box_on_a_slope_steeper_than_the_harmonic_mean_slides_at_its_coulomb_acceleration():
    """Box μ = 0.8 on ground μ = 0.2 on a 22° slope: tan 22° = 0.404 lies between the harmonic mean 0.32 (17.7°)
    and the arithmetic mean 0.5 (26.6°), so the box must slide, at g(sin θ − μ cos θ) = 0.764 m/s² (the
    arithmetic mean would hold it; the geometric mean 0.4 would give 0.037 m/s²). Measured: equal to 1e-6."""
    th = math.radians(22.0)
    mu = harmonic(0.8, 0.2)
    sim = Simulator(_box_on_ground(0.8, 0.2, angle_deg=22.0)[0], accuracy=1e-4)
    sim.advance_to(0.5)
    v1 = np.linalg.norm(sim.body_velocity("box")[0])
    sim.advance_to(1.0)
    v2 = np.linalg.norm(sim.body_velocity("box")[0])
    assert (v2 - v1) / 0.5 == pytest.approx(G * (math.sin(th) - mu * math.cos(th)), rel=1e-3)


def test_box_on_a_gentler_slope_sticks_and_creeps_at_the_regularized_rate_of_the_harmonic_mean():
    """Same materials on a 15° slope (below atan 0.32 = 17.7°, above atan 0.2 = 11.3°): the box sticks. Lagged
    friction is regularized (γ_t = μ γ_n f(v/v_s), f(s) = s/√(1+s²)), so "sticking" is a steady creep where
    μ f(v/v_s) = tan θ: v = v_s r/√(1 − r²), r = tan θ/μ (docs/physics.md §5.6-2) = 1.532e-4 m/s for μ = 0.32
    (arithmetic mean 0.5: 0.64e-4; geometric 0.4: 0.95e-4; min 0.2: slides at 0.65 m/s²). Measured over 1..2 s with
    δt ≤ 10 ms (so that the impact regularization σ w μ γ_n0 stays below v_s): equal to 1e-6."""
    th = math.radians(15.0)
    mu = harmonic(0.8, 0.2)
    sys, _ = _box_on_ground(0.8, 0.2, angle_deg=15.0)
    sim = Simulator(sys, accuracy=1e-4, max_step=0.01)
    sim.advance_to(1.0)
    p1 = sim.body_pose("box")[0]
    sim.advance_to(2.0)
    p2 = sim.body_pose("box")[0]
    r = math.tan(th) / mu
    v_creep = sys.stiction_tolerance * r / math.sqrt(1 - r * r)
    assert np.linalg.norm(p2 - p1) / 1.0 == pytest.approx(v_creep, rel=1e-3)


# ---------------------------------------------------------------------------------------------------------------
# Stiffness: springs in series
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("support", ["ground", "fixed box", "convex mesh on ground"])
def test_resting_body_penetrates_by_its_weight_over_the_series_stiffness(support):
    """A 1 kg body of k = 1e5 N/m resting on a support of k = 4e5 N/m: each of its n contact points carries
    m g/n and the pair yields φ = −m g/(n k), k = 1e5·4e5/5e5 = 8e4 N/m (sphere: 122.6 µm; the cube of the
    convex-mesh case stands on 4 corners: 30.7 µm). Arithmetic mean 2.5e5 or harmonic mean 1.6e5 would give 2.5 or
    2 times less. Three code paths: sphere–half-space and sphere–box (numba narrow phase; the box is a fixed body,
    not the ground) and a convex mesh on the ground (coal). Measured: equal to 1e-6."""
    kb, ks = 1e5, 4e5
    body_mat = ContactMaterial(stiffness=kb, dissipation=5.0, mu_static=0.5)
    support_mat = ContactMaterial(stiffness=ks, dissipation=5.0, mu_static=0.5)
    b = SceneBuilder()
    z0 = 0.0
    if support == "fixed box":
        b.add_fixed("table", Box((0.4, 0.4, 0.1)), position=(0, 0, 0.05), material=support_mat)
        z0 = 0.1
    else:
        b.add_ground(support_mat)
    if support == "convex mesh on ground":
        cube = np.array([[x, y, z] for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (-0.05, 0.05)])
        b.add_body("body", ConvexMesh(cube), mass=1.0, position=(0, 0, z0 + 0.05), material=body_mat)
        n_points = 4
    else:
        b.add_body("body", Sphere(0.05), mass=1.0, position=(0, 0, z0 + 0.05), material=body_mat)
        n_points = 1
    sim = Simulator(b.build(), accuracy=1e-4)
    sim.advance_to(1.0)
    cr = sim.contact_results()
    assert cr.phi.size == n_points
    np.testing.assert_allclose(cr.phi, -G / (n_points * series(kb, ks)), rtol=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# Dissipation: the stiffness-weighted combination
# ---------------------------------------------------------------------------------------------------------------

M_BALL, R_BALL, H_DROP = 0.1, 0.05, 0.1  # [kg], [m], [m] (lowest point above the ground)
K_BALL, D_BALL = 1e4, 2.0  # the ball: soft and lossy
K_GROUND, D_GROUND = 4e4, 0.5  # the ground: 4x stiffer, less lossy
K_PAIR = series(K_BALL, K_GROUND)  # 8e3 N/m
D_PAIR = (K_GROUND * D_BALL + K_BALL * D_GROUND) / (K_BALL + K_GROUND)  # 1.7 s/m


def _hunt_crossley_rebound(h, k, d, m):
    """Apex height [m] of the first rebound of a ball dropped from rest at h on a Hunt–Crossley ground,
    m z̈ = −m g + k (−z)₊ (1 − d ż)₊ (z: lowest point), integrated by scipy (DOP853, rtol 1e-12) to the event ż = 0
    after the impact. Gravity acts during the contact too (it lowers the rebound by ~8 % against the
    gravity-free restitution of docs/physics.md §5.6-8 here)."""
    def rhs(t, y):
        return [y[1], -G + k * max(-y[0], 0.0) * max(1.0 - d * y[1], 0.0) / m]

    def apex(t, y):
        return y[1]
    apex.direction = -1.0
    sol = solve_ivp(rhs, (0.0, 0.4), [h, 0.0], rtol=1e-12, atol=1e-14, method="DOP853", max_step=1e-4,
                    events=apex)
    t_fall = math.sqrt(2 * h / G)
    return next(float(y[0]) for t, y in zip(sol.t_events[0], sol.y_events[0]) if t > t_fall)


def _simulated_rebound(accuracy):
    b = SceneBuilder()
    b.add_ground(ContactMaterial(stiffness=K_GROUND, dissipation=D_GROUND, mu_static=0.5))
    b.add_body("ball", Sphere(R_BALL), mass=M_BALL, position=(0, 0, H_DROP + R_BALL),
               material=ContactMaterial(stiffness=K_BALL, dissipation=D_BALL, mu_static=0.5))
    sim = Simulator(b.build(), accuracy=accuracy, error_per_unit_step=True, max_step=0.05)
    t_fall = math.sqrt(2 * H_DROP / G)
    sim.advance_to(t_fall + 0.02)  # contact lasts ~11 ms (ω = √(k/m) = 283 rad/s)
    apex = -math.inf
    for t in np.arange(t_fall + 0.02, 0.30, 5e-4):  # the first rebound peaks near 0.2 s and lands near 0.25 s
        sim.advance_to(t)
        apex = max(apex, sim.body_pose("ball")[0][2] - R_BALL)
    return apex


def test_rebound_of_a_ball_on_unequal_materials_follows_the_stiffness_weighted_dissipation():
    """A 0.1 kg ball (k = 1e4 N/m, d = 2 s/m) dropped 10 cm onto ground (k = 4e4 N/m, d = 0.5 s/m): pair
    k = 8e3 N/m, d = (4e4·2 + 1e4·0.5)/5e4 = 1.7 s/m, impact speed 1.40 m/s. The ODE gives a rebound to 11.36 mm;
    d = 1.25 (arithmetic mean) 17.7 mm, 0.8 (weights swapped) 29.5 mm, 2.0 (max) 8.7 mm, 0.5 (min) 43.8 mm.
    Convergence study (error per unit step, first order): measured −10.6 % at ε = 1e-2, −1.9 % at 1e-3
    (−0.29 % at 1e-4), i.e. 5.6x per decade towards the ODE; a wrong d converges to a different height, so its
    error stops shrinking."""
    ref = _hunt_crossley_rebound(H_DROP, K_PAIR, D_PAIR, M_BALL)
    assert ref == pytest.approx(0.01136, rel=1e-3)
    err = [_simulated_rebound(eps) / ref - 1.0 for eps in (1e-2, 1e-3)]
    assert abs(err[1]) < 0.04, err
    assert abs(err[0]) / abs(err[1]) > 3.0, err
