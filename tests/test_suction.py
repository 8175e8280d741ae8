"""Vacuum gripper (CENIC §VII-D1, Fig. 13): the force law, equal and opposite forces, catching, holding, releasing
and lifting a box, and the pass-through of explicit fixed steps."""
import math

import numpy as np
import pinocchio as pin
import pytest

from cenic_gym import SceneBuilder, Simulator, Sphere
from cenic_gym.suction import (ASSET_DIR, D_CUT, D_SAT, DEFAULT_URDF, F_MAX, SuctionGripper, add_suction_gripper,
                               cup_springs, gantry_pd, gripper_urdf, mouth_height, suction_force, suction_scene)


def max_penetration(sim):
    """Largest penetration [m] among the contacts of the last accepted step (0 if none)."""
    phi = sim.contact_results().phi
    return max(0.0, -float(phi.min())) if len(phi) else 0.0


def gap(sc, q):
    """Lowest cup mouth minus the box top [m] (negative: the box top is above a mouth)."""
    return float(sc.mouth_heights(q).min() - sc.box_top(q))


# -- the model ------------------------------------------------------------------------------------------------------


def test_shipped_urdfs_are_the_generator_output():
    for r, c in ((2, 2), (3, 3)):
        assert (ASSET_DIR / f"suction_gripper_{r}x{c}.urdf").read_text() == gripper_urdf(r, c)
    assert (ASSET_DIR / "suction_gripper_2x2_yaw.urdf").read_text() == gripper_urdf(2, 2, yaw=True)
    assert DEFAULT_URDF.is_file()


@pytest.mark.parametrize("g0", [0.035, 0.045])
def test_cups_on_their_springs_settle_where_spring_and_pull_balance(g0):
    """A 2 kg box on the ground, its top g0 below the cup mouths: the pull (≤ 4 × 3.5 N) cannot lift it, so each
    cup is drawn down on its bellows spring until spring and suction balance — a static equilibrium that the
    simulation must find on its own (implicit springs and gantry PD, explicit-predictor suction, ground contact).

    The pull is the law of the module docstring, built here from its physical description: inversely proportional
    to the distance, f = A/d + B, continuous at f(d_sat) = f_max (sealed cup) and f(d_cut) = 0. Force balance per
    cup (bellows k_s = 1000 N/m, q_d = 0, cup mass m_c): k_s x = f(d) + m_c g; the stiff gantry PD (K_g = 2e4 N/m,
    weight compensated) yields by 4 f(d)/K_g; the box sinks into the ground by (m g − 4 f)/(4 k_pair). Hence the gap
    solves d = g0 − (f(d) + m_c g)/k_s − 4 f(d)/K_g + (m g − 4 f(d))/(4 k_pair), a stable root where
    |f'(d)|(1/k_s + 4/K_g) < 1 (30.61 mm for g0 = 35 mm, 43.97 mm for 45 mm). Measured after 1 s at ε = 1e-4: gap,
    cup and gantry joints equal to 1e-9 m; the pull on the box read from the ground reaction (m g − Σ f_n)/4 equals
    f(d) to 1e-7 (relative), and so does the pull on the cups read from their springs."""
    from scipy.optimize import brentq

    from cenic_gym.suction import CUP_MASS, GANTRY_KP, SPRING_KP

    g, m_box = 9.81, 2.0
    A = F_MAX / (1.0 / D_SAT - 1.0 / D_CUT)

    def pull(d):
        return F_MAX if d <= D_SAT else (A / d - A / D_CUT if d < D_CUT else 0.0)

    k_pair = 0.5 * 1e5  # box and ground: the scene's material (k = 1e5 N/m) on both sides, in series
    d_star = brentq(lambda d: d - (g0 - (pull(d) + CUP_MASS * g) / SPRING_KP - 4 * pull(d) / GANTRY_KP
                                   + (m_box * g - 4 * pull(d)) / (4 * k_pair)), 0.02, g0)
    f = pull(d_star)
    assert 0.5 < f < 4.0 and 4 * f < m_box * g
    assert A / d_star**2 * (1 / SPRING_KP + 4 / GANTRY_KP) < 1  # |f'(d)| small enough: a stable equilibrium

    sc = suction_scene(gap=g0, box_mass=m_box, tool_z=0.05 + g0 + 0.025)  # the box (5 cm tall) stands on the ground
    s = sc.system
    cups = s.robot_q_indices("gripper", [f"cup_{i}" for i in range(4)])
    z = s.robot_q_indices("gripper", ["z"])[0]
    sim = Simulator(s, external=sc.external, accuracy=1e-4)
    sim.advance_to(1.0)
    q = sim.q
    np.testing.assert_allclose(sc.mouth_heights(q) - sc.box_top(q), d_star, atol=1e-7)
    np.testing.assert_allclose(q[cups], -(f + CUP_MASS * g) / SPRING_KP, atol=1e-7)
    assert q[z] == pytest.approx(-4 * f / GANTRY_KP, abs=1e-7)
    ground = sim.contact_results()
    assert ground.phi.size == 4  # the box's four bottom corners, nothing else touches
    assert (m_box * g - ground.force[:, 2].sum()) / 4 == pytest.approx(f, rel=1e-5)
    assert -SPRING_KP * q[cups].mean() - CUP_MASS * g == pytest.approx(f, rel=1e-5)
    assert np.linalg.norm(sim.body_velocity("box")[0]) < 1e-6


@pytest.mark.parametrize("g", [0.004, 0.01, 0.03])
def test_generalized_forces_at_known_gaps(g):
    """Box straight under the 2×2 cups at gap g: f(g) per cup, up on the box, down on each cup; the gantry z joint
    carries the reaction of all four."""
    sc = suction_scene(gap=g)
    s, su = sc.system, sc.suction
    q = s.q0
    pairs = su.pairs(q)
    assert len(pairs) == 4
    f = suction_force(g)
    for p in pairs:
        assert p.distance == pytest.approx(g, abs=1e-12)
        assert p.cos_theta == pytest.approx(1.0)
        np.testing.assert_allclose(p.force, [0, 0, f], atol=1e-9)
        np.testing.assert_allclose(p.point, p.mouth - [0, 0, g], atol=1e-12)
    tau = su.generalized_force(q)
    box = s.v_slice("box")
    np.testing.assert_allclose(tau[box], [0, 0, 4 * f, 0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(tau[s.robot_v_indices("gripper", [f"cup_{i}" for i in range(4)])], -f, atol=1e-9)
    np.testing.assert_allclose(tau[s.robot_v_indices("gripper", ["x", "y", "z"])], [0, 0, -4 * f], atol=1e-9)
    su.on = False
    assert not np.any(su.generalized_force(q))


def test_directional_factor_on_a_sphere_beside_the_axis():
    """A sphere off the cup axis: distance to its surface, force along the line to its centre, scaled by cos θ."""
    b = SceneBuilder(gravity=(0, 0, 0))
    add_suction_gripper(b, position=(0, 0, 0.3), grid=(1, 1))
    mz = mouth_height(0.3)
    centre = np.array([0.012, 0.0, mz - 0.016])
    b.add_body("ball", Sphere(0.01), mass=0.1, position=centre)
    s = b.build()
    su = SuctionGripper(s, "gripper", ["ball"], seal=False)  # the law alone (a 1 cm ball cannot seal the cup)
    (p,) = su.pairs(s.q0)
    C = np.array([0.0, 0.0, mz])
    dist = np.linalg.norm(C - centre)
    n = (C - centre) / dist
    assert p.distance == pytest.approx(dist - 0.01, abs=1e-12)
    assert p.cos_theta == pytest.approx(n[2], abs=1e-12)
    np.testing.assert_allclose(p.force, suction_force(dist - 0.01) * n[2] * n, atol=1e-9)
    tau = su.generalized_force(s.q0)
    np.testing.assert_allclose(tau[s.v_slice("ball")][:3], p.force, atol=1e-9)
    np.testing.assert_allclose(tau[s.v_slice("ball")][3:], 0.0, atol=1e-9)  # central: no torque on the ball


def floating_scene(tmp_path, implicit=True):
    """The gripper floating freely (its root has a mass) with the box, no gravity and no ground."""
    path = tmp_path / "floating_gripper.urdf"
    path.write_text(gripper_urdf(2, 2, gantry_mass=2.0))
    return suction_scene(gravity=(0, 0, 0), ground=False, base="free", urdf=path, implicit=implicit)


def tilted_box(sc):
    s = sc.system
    q = s.q0.copy()
    sl = s.q_slice("box")
    R = pin.rpy.rpyToMatrix(0.1, -0.05, 0.3)
    q[sl] = np.concatenate([q[sl][:3] + [0.01, -0.005, 0.0], pin.Quaternion(R).coeffs()])
    return q


def test_forces_are_equal_and_opposite(tmp_path):
    """With a free-floating gripper the generalized force changes no momentum: A_g(q) M(q)⁻¹ τ = 0 (exact), for a
    tilted, offset box (unequal gaps, torques)."""
    sc = floating_scene(tmp_path)
    s = sc.system
    m, d = s.model, s.model.createData()
    q = tilted_box(sc)
    tau = sc.suction.generalized_force(q)
    assert np.abs(tau).max() > 10.0
    M = pin.crba(m, d, q)
    M = np.triu(M) + np.triu(M, 1).T
    dh = pin.computeCentroidalMap(m, d, q) @ np.linalg.solve(M, tau)
    assert np.abs(dh).max() < 1e-10 * np.abs(tau).max()


@pytest.mark.parametrize("implicit", [True, False])
def test_momentum_is_conserved_while_catching_in_zero_gravity(tmp_path, implicit):
    """Gripper and box pull together; the total momentum stays ~0 (to the Newton tolerance at ε = 1e-3)."""
    sc = floating_scene(tmp_path, implicit)
    s = sc.system
    m, d = s.model, s.model.createData()
    sim = Simulator(s, external=sc.external, accuracy=1e-3)
    sim.set_state(q=tilted_box(sc))
    p_box = 0.0
    for t in np.arange(0.01, 0.5001, 0.01):
        sim.advance_to(t)
        p_box = max(p_box, 0.5 * np.linalg.norm(sim.body_velocity("box")[0]))
    h = pin.computeCentroidalMomentum(m, d, sim.q, sim.v)
    assert gap(sc, sim.q) < 1e-3  # caught
    assert p_box > 0.1  # the box moved fast on its way
    assert np.linalg.norm(h.linear) < 1e-3 * p_box, (h.linear, p_box)


# -- catching, holding, releasing, lifting --------------------------------------------------------------------------


def test_catches_and_holds_a_box_then_releases_it():
    """0.5 kg box 1 cm under the cups, ε = 1e-3: pulled up, held for 2 s with < 1 mm penetration; suction off:
    it falls to the ground."""
    sc = suction_scene()
    sim = Simulator(sc.system, external=sc.external, accuracy=1e-3)
    z0 = sim.body_pose("box")[0][2]
    pen = 0.0
    for t in np.arange(0.01, 2.0001, 0.01):
        sim.advance_to(t)
        pen = max(pen, max_penetration(sim))
        if t > 0.1:
            assert abs(gap(sc, sim.q)) < 1e-3, t  # held against the lips
    z_held = sim.body_pose("box")[0][2]
    print(f"held: max penetration {pen * 1e3:.3f} mm, stats {sim.stats}")
    assert pen < 1e-3 and -sim.stats.min_signed_distance < 1e-3
    assert z_held > z0 + 0.008  # rose by the 1 cm gap less the cup extension and the penetration
    assert np.linalg.norm(sim.body_velocity("box")[0]) < 1e-3
    sc.suction.on = False
    sim.advance_to(2.2)
    assert gap(sc, sim.q) > 0.1 and sim.body_velocity("box")[0][2] < -1.5  # free fall: ½ g t² = 0.196 m
    sim.advance_to(3.0)
    assert sim.body_pose("box")[0][2] == pytest.approx(0.025, abs=1e-3)  # on the ground


def test_lifts_the_box_with_the_gantry():
    sc = suction_scene()
    sim = Simulator(sc.system, external=sc.external, accuracy=1e-3)
    sim.advance_to(0.3)
    z = sim.body_pose("box")[0][2]
    sc.gantry.set_target(q_d=[0.05, 0.0, 0.1])  # 5 cm sideways, 10 cm up
    sim.advance_to(1.5)
    p = sim.body_pose("box")[0]
    assert p[2] == pytest.approx(z + 0.1, abs=2e-3) and p[0] == pytest.approx(0.05, abs=2e-3)
    assert abs(gap(sc, sim.q)) < 1e-3


def test_explicit_fixed_steps_pass_through_and_cenic_does_not():
    """CENIC Fig. 13: with δt = 0.01 s the first step pulls the box 1 cm up into the cups unseen (no contact at
    rest), both for the explicit and the implicitly linearized suction; CENIC at ε = 1e-3 keeps the lips on top."""
    worst = {}
    for name, kw, implicit in (("cenic", dict(accuracy=1e-3), True), ("explicit", dict(fixed_step=0.01), False),
                               ("implicit", dict(fixed_step=0.01), True)):
        sc = suction_scene(implicit=implicit)
        sim = Simulator(sc.system, external=sc.external, **kw)
        g = math.inf
        for t in np.arange(0.01, 0.3001, 0.01):
            sim.advance_to(t)
            g = min(g, gap(sc, sim.q))
        worst[name] = -g
        assert abs(gap(sc, sim.q)) < 1e-3  # all end up holding the box
    print(worst)
    assert worst["cenic"] < 1e-3
    assert worst["explicit"] > 5e-3 and worst["implicit"] > 5e-3


def test_3x3_gripper_holds_and_lifts_a_heavier_box():
    sc = suction_scene(grid=(3, 3), box_mass=2.0, box_size=(0.14, 0.14, 0.05))
    assert sc.suction.n_cups == 9 and len(sc.springs.dofs) == 9
    sim = Simulator(sc.system, external=sc.external, accuracy=1e-3)
    sim.advance_to(0.5)
    z = sim.body_pose("box")[0][2]
    sc.gantry.set_target(q_d=[0.0, 0.0, 0.1])
    sim.advance_to(2.0)
    assert sim.body_pose("box")[0][2] == pytest.approx(z + 0.1, abs=2e-3)
    assert -sim.stats.min_signed_distance < 1e-3


def test_bad_arguments():
    sc = suction_scene()
    with pytest.raises(ValueError):
        SuctionGripper(sc.system, d_sat=0.1, d_cut=0.05)
    with pytest.raises(ValueError):
        SuctionGripper(sc.system, f_max=-1.0)
    with pytest.raises(KeyError):
        SuctionGripper(sc.system, gripper="nope")
    with pytest.raises(ValueError):
        gripper_urdf(2, 2, pitch=0.02)
    b = SceneBuilder()
    add_suction_gripper(b, grid=(1, 2))
    s = b.build()
    assert len(cup_springs(s).dofs) == 2 and len(gantry_pd(s).dofs) == 3
