"""Simulator API: bad input, snapshots, determinism, failure reporting, modes."""
import pickle

import numpy as np
import pytest

from cenic_gym import (Box, ContactMaterial, ConvexMesh, SceneBuilder, SimulationError, Simulator, Sphere,
                       scenes)
from cenic_gym import icf
from cenic_gym.cenic import adjust_step_size


@pytest.mark.parametrize("kw, exc", [
    (dict(accuracy=0.0), ValueError), (dict(accuracy=-1e-3), ValueError), (dict(accuracy=float("nan")), ValueError),
    (dict(accuracy=50.0), ValueError), (dict(accuracy="x"), TypeError), (dict(max_step=0.0), ValueError),
    (dict(fixed_step=-0.01), ValueError), (dict(min_step=1.0, max_step=0.1), ValueError),
    (dict(contact_margin=-1.0), ValueError), (dict(generalized_force=3.0), TypeError),
    (dict(external=[3]), TypeError)])
def test_invalid_arguments_raise_naming_the_value(kw, exc):
    with pytest.raises(exc) as e:
        Simulator(scenes.free_fall(), **kw)
    name = next(iter(kw))
    assert name in str(e.value) or repr(kw[name]) in str(e.value)


def test_invalid_state_and_time():
    sim = Simulator(scenes.free_fall())
    with pytest.raises(ValueError, match="q must have shape"):
        sim.set_state(q=np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        sim.set_state(v=np.full(6, np.nan))
    with pytest.raises(ValueError, match="before the current time"):
        sim.advance_to(1.0)
        sim.advance_to(0.5)
    with pytest.raises(ValueError, match="finite"):
        sim.advance_to(float("inf"))


def test_invalid_model_input():
    b = SceneBuilder()
    with pytest.raises(ValueError, match="mass"):
        b.add_body("x", Sphere(0.1), mass=-1.0)
    with pytest.raises(ValueError, match="exactly one of mass or density"):
        b.add_body("x", Sphere(0.1))
    with pytest.raises(ValueError, match="radius"):
        b.add_body("x", Sphere(-0.1), mass=1.0)
    with pytest.raises(ValueError, match="lengths"):
        b.add_body("x", Box((0.1, 0.1)), mass=1.0)
    with pytest.raises(ValueError, match="vertices"):
        ConvexMesh(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="stiffness"):
        ContactMaterial(stiffness=-1.0)
    with pytest.raises(ValueError, match="position"):
        b.add_body("x", Sphere(0.1), mass=1.0, position=(0, 0, np.nan))
    b.add_body("x", Sphere(0.1), mass=1.0)
    with pytest.raises(ValueError, match="already exists"):
        b.add_body("x", Sphere(0.1), mass=1.0)


def test_unreachable_accuracy_raises_instead_of_looping():
    sim = Simulator(scenes.free_fall(), accuracy=1e-12, min_step=1e-3, max_step=1e-2)
    with pytest.raises(SimulationError, match="min_step"):
        sim.advance_to(0.1)


def test_snapshot_restore_is_exact_and_deterministic():
    sys = scenes.clutter(n_objects=6)
    a = Simulator(sys, accuracy=1e-3)
    a.advance_to(0.3)
    snap = a.get_state()
    a.advance_to(0.6)
    q_a = a.q
    a.restore(snap)
    a.advance_to(0.6)
    np.testing.assert_array_equal(a.q, q_a)
    b = Simulator(scenes.clutter(n_objects=6), accuracy=1e-3)
    b.advance_to(0.3)
    b.advance_to(0.6)
    np.testing.assert_array_equal(b.q, q_a)
    snap2 = pickle.loads(pickle.dumps(snap))
    np.testing.assert_array_equal(snap2.q, snap.q)


def test_lands_exactly_on_requested_times():
    sim = Simulator(scenes.sphere_drop(), accuracy=1e-3)
    for t in (0.0137, 0.5, 0.77777):
        sim.advance_to(t)
        assert sim.t == t


def test_fixed_step_mode_takes_exactly_the_steps():
    sim = Simulator(scenes.sphere_drop(), fixed_step=0.01)
    sim.advance_to(1.0)
    assert sim.stats.accepted == 100 and sim.stats.rejected == 0 and sim.stats.solves == 100


def test_step_size_controller():
    # rejections shrink (at least ×0.9, at most ×0.1), growth is capped at ×5, dead band keeps the step
    dt, acc = adjust_step_size(0.01, 4e-3, 1e-3, 1e-9, 0.1)
    assert not acc and dt == pytest.approx(0.9 * 0.01 * 0.5)
    dt, acc = adjust_step_size(0.01, 0.0, 1e-3, 1e-9, 0.1)
    assert acc and dt == pytest.approx(0.05)
    dt, acc = adjust_step_size(0.01, 0.9e-3, 1e-3, 1e-9, 0.1)
    assert acc and dt == 0.01
    dt, acc = adjust_step_size(0.01, float("nan"), 1e-3, 1e-9, 0.1)
    assert not acc and dt == pytest.approx(1e-3)
    dt, acc = adjust_step_size(0.01, 1e-9, 1e-3, 1e-9, 0.02)
    assert acc and dt == 0.02
    # error per unit step: tolerance ε δt and a first-order ratio (δt_new = 0.9 δt ε δt / e)
    dt, acc = adjust_step_size(0.01, 4e-5, 1e-3 * 0.01, 1e-9, 0.1, order=1)
    assert not acc and dt == pytest.approx(0.9 * 0.01 * 0.25)


def test_error_per_unit_step_mode_keeps_error_per_step_below_eps_dt():
    sim = Simulator(scenes.free_fall(), accuracy=1e-2, error_per_unit_step=True, record=True)
    sim.advance_to(0.5)
    acc = [(dt, err) for _, dt, ok, err in sim.history if ok]
    assert all(err <= 1e-2 * dt for dt, err in acc)
    # free fall: e = g δt²/4 = ε δt at δt = 4ε/g; the controller settles at 0.9 of it
    assert np.median([dt for dt, _ in acc][3:-1]) == pytest.approx(0.9 * 4 * 1e-2 / 9.81, rel=0.05)


def test_numba_integration_matches_pinocchio():
    """q ⊕ δt v of the integrator's numba kernel equals pin.integrate for free bodies and robot joints."""
    import pinocchio as pin
    from cenic_gym.cenic import CenicIntegrator, integrate_q
    b = SceneBuilder()
    b.add_robot("go1", name="go1")
    b.add_body("ball", Sphere(0.05), mass=1.0, position=(1, 0, 1))
    sys = b.build()
    integ = CenicIntegrator(sys)
    assert integ._numba_integrate
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = pin.randomConfiguration(sys.model, -np.ones(sys.nq), np.ones(sys.nq))
        v = rng.normal(size=sys.nv) * 3
        out = np.empty(sys.nq)
        integrate_q(q, v, 0.01, *integ._int_plan, out)
        np.testing.assert_allclose(out, pin.integrate(sys.model, q, 0.01 * v), atol=1e-14)


def test_implicit_effort_limited_gain_law():
    """A 1 kg ball in zero gravity under τ = clamp(K_d (v_d − v), ±e) along x (the gains pool of the convex
    problem): with a huge K_d the implicit law is stable at any step, and the force saturates at exactly e."""
    b = SceneBuilder(gravity=(0, 0, 0))
    b.add_body("ball", Sphere(0.05), mass=1.0)
    sys = b.build()
    e, vd, kd = 2.0, 1.0, 1e6
    gains = lambda t, q, v, dt: (np.array([0]), np.array([kd]), np.array([kd * vd]), np.array([e]))  # noqa: E731
    sim = Simulator(sys, fixed_step=0.05, gains=gains)
    sim.advance_to(0.25)  # saturated: a = e / m
    assert sim.v[0] == pytest.approx(e * 0.25, rel=1e-9)
    sim.advance_to(1.0)  # reaches v_d and holds it without oscillation despite K_d δt / m = 5e4
    assert sim.v[0] == pytest.approx(vd, abs=1e-5)


def test_hessian_reuse_gives_the_same_trajectory_within_tolerance():
    base = Simulator(scenes.clutter(n_objects=6), accuracy=1e-3)
    reuse = Simulator(scenes.clutter(n_objects=6), accuracy=1e-3, hessian_reuse=True)
    base.advance_to(0.5)
    reuse.advance_to(0.5)
    assert reuse.stats.factorizations < reuse.stats.newton_iters
    np.testing.assert_allclose(reuse.q, base.q, atol=5e-3)


def test_contact_normal_convention_and_force_balance():
    sim = Simulator(scenes.sphere_drop(height=0.0, mass=0.1, stiffness=1e4, dissipation=5.0), accuracy=1e-4)
    sim.advance_to(1.0)
    cr = sim.contact_results()
    assert cr.phi.size == 1
    np.testing.assert_allclose(cr.normal[0], [0, 0, 1], atol=1e-12)  # from ground (A) to ball (B)
    np.testing.assert_allclose(cr.force[0], [0, 0, 0.1 * 9.81], rtol=1e-4, atol=1e-9)


def test_joint_limit_is_a_rigid_inelastic_stop_in_the_limit(tmp_path):
    """A 2 kg carriage on a vertical prismatic joint falls 0.2 m onto its lower limit (q = 0) at √(2gh) = 1.98 m/s.
    A rigid stop absorbs the impact completely and holds the carriage at the limit. The near-rigid limit
    (CENIC §IV-D; docs/physics.md §2.7, E1) is a critically damped spring of period β δt, k = 4π²m/(β²δt²), so:

    * no rebound: after reaching the limit the carriage stays at rest (measured |v| ≤ 2e-5 m/s);
    * at rest the weight compresses that spring by m g/k = g β² δt²/(4π²) (docs/physics.md §5.6-13): 2.48e-7 m at
      δt = 10 ms, 4x less at 5 ms — second order in δt, a rigid stop as δt → 0 (measured: equal to 1e-7);
    * with error control, step doubling sees the difference of the full- and half-step compressions,
      e = (1 − 1/4) m g/k(δt), so an accepted state (the half step) is compressed by at most ε/3, and the violation
      falls linearly with ε (measured 0.28 ε at ε = 1e-5, 1e-6, 1e-7), as does the arrival delay at the stop.

    The last step is left out: it is clipped to land on the end time, and a step much shorter than the previous
    one, taken against a loaded limit, turns the compression left by the longer step into a spurious velocity
    Δc/(δt + τ) (reported as an engine issue; e.g. 1.9 m/s after advance_to(t + 1e-6) from rest at ε = 1e-3)."""
    import math

    beta, g, h, m = icf.LIMIT_BETA, 9.81, 0.2, 2.0
    urdf = tmp_path / "slider.urdf"
    urdf.write_text(
        '<?xml version="1.0"?>\n<robot name="slider"><link name="base"/>\n'
        f'<link name="carriage"><inertial><mass value="{m}"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" '
        'iyz="0" izz="0.01"/></inertial></link>\n'
        '<joint name="z" type="prismatic"><parent link="base"/><child link="carriage"/><axis xyz="0 0 1"/>'
        '<limit lower="0" upper="1" effort="100" velocity="100"/></joint></robot>\n')
    b = SceneBuilder()
    b.add_robot(str(urdf), name="s", q0={"z": h})
    sys = b.build()
    assert list(sys.limit_q) == [0] and sys.limit_lower[0] == 0.0

    def drop(**kw):
        sim = Simulator(sys, **kw)
        rec = []
        sim.advance_to(0.5, on_step=lambda s: rec.append((s.t, s.q[0], s.v[0])))
        rec = np.array(rec[:-1])
        i = int(np.argmax(rec[:, 1] <= 0.0))  # reaches the stop
        assert 0 < i and rec[i, 0] < 0.3
        assert np.abs(rec[i + 1:, 2]).max() < 1e-4  # inelastic: at rest from the next step on, no rebound
        return rec[i, 0], -rec[i:, 1].min(), rec[-1, 1]

    for dt in (0.01, 0.005):
        _, _, q_rest = drop(fixed_step=dt)
        assert -q_rest == pytest.approx(g * beta**2 * dt**2 / (4 * math.pi**2), rel=1e-4)
    t_rigid = math.sqrt(2 * h / g)
    late, worst = [], []
    for eps in (1e-5, 1e-6, 1e-7):
        t_arrive, violation, _ = drop(accuracy=eps)
        assert 0.0 < violation <= eps / 3
        late.append(t_arrive - t_rigid)
        worst.append(violation)
    assert worst[0] / worst[1] == pytest.approx(10.0, rel=0.1) and worst[1] / worst[2] == pytest.approx(10.0, rel=0.1)
    assert late[-1] < 1e-4 and late[0] > late[1] > late[2]  # arrives at the rigid-body time as ε → 0
