"""Systems of free bodies: their closed-form dynamics (cenic_gym.free_bodies) and the compiled step loop
(cenic.advance_free_bodies) that replaces the Python one for them (issue 18)."""
import copy
import pickle

import numpy as np
import pinocchio as pin
import pytest

from cenic_gym import AccuracyNotMetError, Box, ContactMaterial, Cylinder, SceneBuilder, Simulator, Sphere, scenes
from cenic_gym.contact import compute_kinematics_and_inertia
from cenic_gym.free_bodies import free_body_dynamics, free_body_joints, free_body_parameters

MAT = ContactMaterial(stiffness=2e5, dissipation=20.0, mu_static=0.6)


def tumbling_box(n=1):
    """Boxes whose centre of mass is off their geometric centre, thrown spinning onto the ground."""
    b = SceneBuilder()
    b.add_ground(MAT)
    I = np.diag([0.004, 0.006, 0.008]) + 0.001 * np.ones((3, 3))
    for i in range(n):
        b.add_body(f"box{i}", Box((0.1, 0.14, 0.08)), inertia=pin.Inertia(1.2, np.array([0.02, -0.01, 0.015]), I),
                   position=(0.3 * i, 0.0, 0.12), rotation=(0.3, -0.2, 0.1), velocity=(0.4, 0.1, 0.0),
                   angular_velocity=(2.0, -3.0, 5.0), material=MAT)
    return b.build()


def python_loop(sim):
    """The same simulator on the Python step loop (CenicIntegrator.step, Pinocchio dynamics)."""
    sim.integrator._compiled_loop = False
    return sim


def test_closed_form_dynamics_equal_pinocchio():
    """Jacobians, mass matrix and bias of free bodies with off-centre masses and armature: Pinocchio's to round-off."""
    s = tumbling_box(3)
    m = pin.Model(s.model)
    m.armature = np.random.default_rng(1).uniform(0.0, 0.1, m.nv)
    d = m.createData()
    rng = np.random.default_rng(0)
    Jw, M, bias = np.zeros((6, m.nv), order="F"), np.zeros((m.nv, m.nv)), np.zeros(m.nv)  # as the integrator
    for _ in range(10):
        q = pin.randomConfiguration(m, -np.ones(m.nq), np.ones(m.nq))
        v = 3.0 * rng.normal(size=m.nv)
        J_ref, M_upper = compute_kinematics_and_inertia(m, d, q)
        M_ref = np.triu(M_upper) + np.triu(M_upper, 1).T
        b_ref = pin.nonLinearEffects(m, d, q, v)
        free_body_dynamics(q, v, free_body_parameters(m), Jw, M, bias)
        np.testing.assert_allclose(Jw, J_ref, rtol=0, atol=1e-14)
        np.testing.assert_allclose(M, M_ref, rtol=0, atol=1e-14 * np.abs(M_ref).max())
        np.testing.assert_allclose(bias, b_ref, rtol=0, atol=1e-14 * np.abs(b_ref).max())


def test_which_systems_run_compiled():
    assert free_body_joints(scenes.clutter())
    assert not free_body_joints(scenes.go1_on_ground())  # articulated: Pinocchio
    b = SceneBuilder()
    b.add_body("can", Cylinder(0.03, 0.1), mass=0.3, position=(0, 0, 0.2))
    b.add_body("ball", Sphere(0.03), mass=0.1, position=(0, 0, 0.4))
    assert not free_body_joints(b.build())  # a cylinder-sphere pair goes through coal
    s = scenes.sphere_drop()
    assert Simulator(s).integrator._compiled_loop
    assert not Simulator(s, fixed_step=1e-3).integrator._compiled_loop
    assert not Simulator(s, generalized_force=lambda t, q, v: np.zeros(6)).integrator._compiled_loop
    assert not Simulator(s, gains=lambda t, q, v, dt: (np.array([2]), np.ones(1), np.zeros(1), np.ones(1))
                         ).integrator._compiled_loop


CASES = {
    "sphere drop": (lambda: scenes.sphere_drop(height=0.1, dissipation=2.0), 1.0, 1e-3),
    "incline stick": (lambda: scenes.incline(), 0.5, 1e-3),
    "rolling sphere": (lambda: scenes.falling_sphere(), 0.3, 1e-4),
    "tumbling box": (lambda: tumbling_box(2), 0.6, 1e-3),
}


@pytest.mark.parametrize("case", CASES)
def test_compiled_loop_takes_the_python_loops_steps(case):
    """Same attempts, accepted and rejected, same solver work, states and contact forces equal to round-off; in one
    call and in 10 ms chunks (control periods: inputs_changed)."""
    make, T, eps = CASES[case]
    system = make()
    for chunks in (1, int(round(T / 0.01))):
        a, b = Simulator(system, accuracy=eps), python_loop(Simulator(system, accuracy=eps))
        assert a.integrator._compiled_loop
        for k in range(1, chunks + 1):
            sa = a.advance_to(T * k / chunks, inputs_changed=chunks > 1)
            sb = b.advance_to(T * k / chunks, inputs_changed=chunks > 1)
            assert (sa.accepted, sa.rejected, sa.solves, sa.newton_iters) == (sb.accepted, sb.rejected, sb.solves,
                                                                              sb.newton_iters)
            # step sizes follow the error estimates continuously: equal to round-off
            assert (sa.min_dt, sa.max_dt, sa.sim_time) == pytest.approx((sb.min_dt, sb.max_dt, sb.sim_time), rel=1e-9)
            assert sa.min_signed_distance == pytest.approx(sb.min_signed_distance, rel=1e-9, abs=1e-15)
        A, B = a.stats, b.stats
        for name in ("accepted", "rejected", "solves", "newton_iters", "factorizations", "geometry_queries"):
            assert getattr(A, name) == getattr(B, name), name
        assert A.line_search_iters == pytest.approx(B.line_search_iters, rel=0.02)  # its stopping test sees round-off
        assert (A.min_dt, A.max_dt, A.sim_time) == pytest.approx((B.min_dt, B.max_dt, B.sim_time), rel=1e-9)
        assert a.t == b.t == T
        assert (a.integrator.dt, a.integrator.period_dt) == pytest.approx((b.integrator.dt, b.integrator.period_dt),
                                                                          rel=1e-9)
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.v, b.v, rtol=0, atol=1e-10)
        ca, cb = a.contact_results(), b.contact_results()
        assert ca.n == cb.n and ca.n > 0
        assert ca.names_a == cb.names_a and ca.names_b == cb.names_b
        np.testing.assert_allclose(ca.force, cb.force, rtol=1e-8, atol=1e-9)
        assert A.wall_solver == 0.0 and B.wall_solver > 0.0 and A.wall_compiled > 0.0 == B.wall_compiled  # no split


def test_clutter_compiled_matches_python_loop_until_chaos():
    """Twenty bodies in a bin, 0.1 s (before round-off differences grow in this chaotic scene)."""
    system = scenes.clutter()
    a, b = Simulator(system), python_loop(Simulator(system))
    a.advance_to(0.1)
    b.advance_to(0.1)
    assert (a.stats.accepted, a.stats.rejected) == (b.stats.accepted, b.stats.rejected)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-9)


def test_compiled_loop_raises_as_the_python_loop():
    """An accuracy it cannot meet at min_step: the same exception, message and state after it."""
    system = scenes.sphere_drop(height=0.2)
    errors, states = [], []
    for sim in (Simulator(system, accuracy=1e-9, min_step=2e-3),
                python_loop(Simulator(system, accuracy=1e-9, min_step=2e-3))):
        with pytest.raises(AccuracyNotMetError) as e:
            sim.advance_to(1.0)
        errors.append(str(e.value))
        states.append((sim.t, sim.q.copy(), sim.stats.accepted, sim.stats.rejected))
    assert errors[0] == errors[1] and "min_step=0.002" in errors[0]
    assert states[0][0] == states[1][0] and states[0][2:] == states[1][2:]
    np.testing.assert_allclose(states[0][1], states[1][1], rtol=0, atol=1e-12)


def test_new_inertia_reaches_the_compiled_loop():
    """set_body_inertia between two calls: the compiled loop integrates the new body (as the Python loop does)."""
    system = tumbling_box()
    sims = [Simulator(system), python_loop(Simulator(system))]
    for sim in sims:
        sim.advance_to(0.05)
        sim.set_body_inertia("box0", mass=3.0, com=(-0.03, 0.02, 0.0))
        sim.advance_to(0.4)
    np.testing.assert_allclose(sims[0].q, sims[1].q, rtol=0, atol=1e-12)
    ref = Simulator(system)
    ref.advance_to(0.4)
    assert np.abs(ref.q - sims[0].q).max() > 1e-3  # the change mattered


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda s: pickle.loads(pickle.dumps(s))])
def test_copies_continue_bit_identically(clone):
    system = tumbling_box(2)
    sim = Simulator(system)
    sim.advance_to(0.1)
    twin = clone(sim)
    sim.advance_to(0.5)
    twin.advance_to(0.5)
    assert np.array_equal(sim.q, twin.q) and np.array_equal(sim.v, twin.v)
    assert np.array_equal(sim.contact_results().force, twin.contact_results().force)



@pytest.mark.parametrize("options", [dict(hessian_reuse=True), dict(error_per_unit_step=True),
                                     dict(impact_friction=False), dict(max_step=0.01, min_step=1e-6)])
def test_compiled_loop_honours_the_integrator_options(options):
    """Hessian reuse, error per unit step, Lagged friction, step bounds: the compiled loop takes the Python loop's
    steps under each."""
    system = tumbling_box(2)
    a, b = Simulator(system, **options), python_loop(Simulator(system, **options))
    assert a.integrator._compiled_loop
    # 0.15 s: the landing; over longer runs the round-off of the closed-form dynamics, grown through the contacts,
    # flips an accept/reject decision now and then under error per unit step (3 700 steps in 0.4 s: 11 more)
    a.advance_to(0.15)
    b.advance_to(0.15)
    assert a.stats.min_signed_distance < 0.0  # in contact
    for name in ("accepted", "rejected", "solves", "newton_iters", "factorizations"):
        assert getattr(a.stats, name) == getattr(b.stats, name), name
    assert a.stats.max_dt <= options.get("max_step", 0.1)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-8)


def test_compiled_loop_in_short_calls_continues_exactly(monkeypatch):
    """A long advance_to returns to Python every COMPILED_ATTEMPTS attempts (so that it can be interrupted) and
    continues at the end of a step: calls of one attempt each give the same bits as one call."""
    import cenic_gym.cenic as cenic

    system = tumbling_box(2)
    ref = Simulator(system)
    ref.advance_to(0.3, inputs_changed=True)
    monkeypatch.setattr(cenic, "COMPILED_ATTEMPTS", 1)
    sim = Simulator(system)
    sim.advance_to(0.3, inputs_changed=True)
    assert np.array_equal(sim.q, ref.q) and np.array_equal(sim.v, ref.v)
    assert (sim.integrator.dt, sim.integrator.period_dt) == (ref.integrator.dt, ref.integrator.period_dt)
    for name in ("accepted", "rejected", "solves", "newton_iters", "geometry_queries", "min_dt", "max_dt", "sim_time",
                 "min_signed_distance"):
        assert getattr(sim.stats, name) == getattr(ref.stats, name), name
    assert np.array_equal(sim.contact_results().force, ref.contact_results().force)


def test_an_interrupted_compiled_run_keeps_its_last_step_and_continues(monkeypatch):
    """Ctrl-C between two compiled calls (here a KeyboardInterrupt raised after the third): the simulator holds the
    state, clock and counters of the last completed step, and a new advance_to continues as if never stopped."""
    import cenic_gym.cenic as cenic

    system = tumbling_box(2)
    ref = Simulator(system)
    ref.advance_to(0.3, inputs_changed=True)
    real, calls = cenic.advance_free_bodies, []

    def interrupted(*args):
        status = real(*args)
        calls.append(status)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return status

    monkeypatch.setattr(cenic, "COMPILED_ATTEMPTS", 5)
    monkeypatch.setattr(cenic, "advance_free_bodies", interrupted)
    sim = Simulator(system)
    with pytest.raises(KeyboardInterrupt):
        sim.advance_to(0.3, inputs_changed=True)
    assert 0.0 < sim.t < 0.3 and sim.stats.accepted > 0
    monkeypatch.setattr(cenic, "advance_free_bodies", real)
    sim.advance_to(0.3)
    assert np.array_equal(sim.q, ref.q) and np.array_equal(sim.v, ref.v)
    assert (sim.stats.accepted, sim.stats.rejected, sim.stats.sim_time) == (ref.stats.accepted, ref.stats.rejected,
                                                                            ref.stats.sim_time)
