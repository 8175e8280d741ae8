"""Implicit external systems: joint PD / PID / inverse-dynamics controllers with effort limits (CENIC §V-C)."""
import math

import numpy as np
import pytest

from cenic_gym import ExternalSystem, InverseDynamicsPD, JointPD, JointPID, SceneBuilder, Simulator, scenes

G = 9.81
# A point-mass-like rod on one revolute joint: mass 1 kg at 0.5 m (inertia about the joint I = 0.25 + 1e-4).
PENDULUM_URDF = """<?xml version="1.0"?>
<robot name="pendulum">
  <link name="base"/>
  <link name="rod">
    <inertial><origin xyz="0.5 0 0"/><mass value="1.0"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>
  </link>
  <joint name="hinge" type="revolute">
    <parent link="base"/><child link="rod"/><axis xyz="{axis}"/>
    <limit lower="-100" upper="100" effort="{effort}" velocity="100"/>
  </joint>
</robot>
"""
INERTIA = 0.25 + 1e-4


def pendulum(tmp_path, axis="0 0 1", effort=1000.0):
    f = tmp_path / f"pendulum_{axis.replace(' ', '')}_{effort:g}.urdf"
    f.write_text(PENDULUM_URDF.format(axis=axis, effort=effort))
    b = SceneBuilder()
    b.add_robot(str(f), name="p", base="fixed")
    return b.build()


def test_pd_step_response_matches_the_damped_oscillator(tmp_path):
    """Rotation about the vertical axis (no gravity torque): I θ̈ = K_p (θ_d − θ) − K_d θ̇, analytic response."""
    sys = pendulum(tmp_path)
    kp, kd, qd = 20.0, 2.0, 1.0
    sim = Simulator(sys, accuracy=1e-6, external=[JointPD(sys, [0], kp, kd, q_d=qd)])
    wn, zeta = math.sqrt(kp / INERTIA), kd / (2 * math.sqrt(kp * INERTIA))
    wd = wn * math.sqrt(1 - zeta**2)
    err = 0.0
    for t in np.linspace(0.05, 3.0, 60):
        sim.advance_to(t)
        exact = qd * (1 - math.exp(-zeta * wn * t) * (math.cos(wd * t) + zeta * wn / wd * math.sin(wd * t)))
        err = max(err, abs(sim.q[0] - exact))
    assert err < 2e-3, err
    sim.advance_to(8.0)
    assert sim.q[0] == pytest.approx(qd, abs=1e-5)


def test_effort_limit_saturates_exactly(tmp_path):
    """K_p = 1e6 towards a far target with effort limit 2 N m: the torque is exactly the limit, θ̇ = e t / I."""
    sys = pendulum(tmp_path, effort=2.0)
    ctrl = JointPD(sys, [0], kp=1e6, kd=1e3, q_d=5.0)
    assert ctrl.effort_limit[0] == 2.0  # from the URDF
    sim = Simulator(sys, fixed_step=0.01, external=[ctrl])
    sim.advance_to(0.5)
    assert sim.v[0] == pytest.approx(2.0 * 0.5 / INERTIA, rel=1e-9)
    # the torque never exceeds the limit, through braking and the oscillation about the target (fixed steps:
    # |I Δv / δt| is the applied torque); and the stiff law (K_p δt² / I = 400) stays stable (implicit)
    v_prev = sim.v[0]
    for t in np.arange(0.51, 6.0, 0.01):
        sim.advance_to(t)
        assert abs(INERTIA * (sim.v[0] - v_prev) / 0.01) <= 2.0 * (1 + 1e-9)
        v_prev = sim.v[0]
    assert abs(sim.q[0] - 5.0) < 5.0 and np.isfinite(sim.v[0])


def test_integral_action_removes_steady_state_error_under_gravity(tmp_path):
    """Horizontal rod (joint axis y) held at θ = 0 against gravity m g l = 4.905 N m: PD leaves an offset of
    m g l / K_p; PID drives it to zero."""
    sys = pendulum(tmp_path, axis="0 1 0")
    kp, kd, ki = 200.0, 10.0, 400.0
    pd = Simulator(sys, accuracy=1e-4, external=[JointPD(sys, [0], kp, kd, q_d=0.0)])
    pid = Simulator(sys, accuracy=1e-4, external=[JointPID(sys, [0], kp, ki, kd, q_d=0.0)])
    pd.advance_to(5.0)
    pid.advance_to(5.0)
    assert abs(pd.q[0]) == pytest.approx(G * 0.5 / kp, rel=2e-3)  # static offset θ = m g l cos θ / K_p
    assert abs(pid.q[0]) < 1e-5
    assert pid.z[0] * ki == pytest.approx(-np.sign(pd.q[0]) * G * 0.5, rel=1e-3)  # integral holds the load


def test_inverse_dynamics_pd_tracks_on_the_panda():
    b = SceneBuilder()
    b.add_robot("panda", name="panda")
    sys = b.build()
    dofs = sys.robot_v_indices("panda")[:7]
    qd = sys.q0[:7] + 0.3
    sim = Simulator(sys, accuracy=1e-4, external=[InverseDynamicsPD(sys, dofs, kp=100.0, kd=20.0, q_d=qd)])
    sim.advance_to(2.0)  # critically damped at ω = 10 rad/s, efforts saturate at first (12 N m wrist limits)
    assert np.abs(sim.q[:7] - qd).max() < 1e-3


def test_setpoints_change_between_advance_calls_and_snapshots_include_z_and_setpoints(tmp_path):
    sys = pendulum(tmp_path, axis="0 1 0")
    ctrl = JointPID(sys, [0], 200.0, 400.0, 10.0, q_d=0.0)
    sim = Simulator(sys, accuracy=1e-4, external=[ctrl])
    sim.advance_to(1.0)
    snap = sim.get_state()
    ctrl.set_target(q_d=0.5)
    sim.advance_to(4.0)
    assert sim.q[0] == pytest.approx(0.5, abs=1e-3)
    end = (sim.q, sim.z)
    sim.restore(snap)
    assert sim.external[0] is ctrl and np.array_equal(ctrl.q_d, [0.0])  # the snapshot's set-point is back
    ctrl.set_target(q_d=0.5)
    sim.advance_to(4.0)
    assert np.array_equal(sim.q, end[0]) and np.array_equal(sim.z, end[1])


def test_stiff_gains_do_not_shrink_implicit_steps(tmp_path):
    """CENIC Fig. 12 in miniature: the accepted-step count is flat in K_p = K_d for the implicit treatment and
    grows for the explicit one."""
    sys = pendulum(tmp_path)
    steps = {}
    for implicit in (True, False):
        for k in (1e1, 1e4):
            ctrl = JointPD(sys, [0], kp=k, kd=k, q_d=0.5, implicit=implicit)
            sim = Simulator(sys, accuracy=1e-2, external=[ctrl])
            sim.advance_to(2.0)
            steps[implicit, k] = sim.stats.accepted
    assert steps[True, 1e4] <= 2 * steps[True, 1e1], steps
    assert steps[False, 1e4] > 10 * steps[True, 1e4], steps


def test_forward_difference_linearization_matches_the_exact_pd():
    """The generic linearization (forward differences, CENIC eq. 26–29) reproduces JointPD's exact mapping."""
    b = SceneBuilder()
    b.add_robot("panda", name="panda")
    sys = b.build()
    pd = JointPD(sys, np.arange(7), kp=50.0, kd=5.0, q_d=sys.q0[:7] + 0.1)
    rng = np.random.default_rng(1)
    q = sys.q0 + 0.1 * rng.normal(size=sys.nq)
    v = rng.normal(size=sys.nv)
    dt = 0.01
    qt = lambda vv: q + dt * vv  # noqa: E731 (all joints are 1-DOF)
    exact = pd.linearize(0.0, np.zeros(0), q, v, dt, qt)
    generic = ExternalSystem.linearize(pd, 0.0, np.zeros(0), q, v, dt, qt)
    np.testing.assert_allclose(generic.c, exact.c, rtol=1e-6)
    np.testing.assert_allclose(generic.b, exact.b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("robot", ["panda", "go1"])
@pytest.mark.parametrize("dt", [1e-4, 1e-2, 5e-2])
def test_inverse_dynamics_pd_exact_linearization_matches_forward_differences(robot, dt):
    """InverseDynamicsPD.linearize (one RNEA-derivatives call, CENIC eq. 26–29 exactly) agrees with the generic
    forward differences of the base class to their truncation error, on a fixed-base arm and on a floating base
    (q̃ = q ⊕ δt v through the free flyer), with time-varying set-points and a feed-forward acceleration."""
    from cenic_gym.external import PiecewiseLinear

    b = SceneBuilder()
    b.add_robot(robot, name="r")
    sys = b.build()
    dofs, qidx = sys.robot_v_indices("r"), sys.robot_q_indices("r")  # all 1-DOF joints (a free base excluded)
    n = dofs.shape[0]
    rng = np.random.default_rng(3)
    qd = PiecewiseLinear([0.0, 1.0], [sys.q0[qidx], sys.q0[qidx] + 0.2])
    ctrl = InverseDynamicsPD(sys, dofs, kp=rng.uniform(50, 400, n), kd=rng.uniform(5, 40, n), q_d=qd,
                             v_d=rng.normal(size=n), a_ff=rng.normal(size=n))
    q = sys.q0.copy()
    q[qidx] += 0.2 * rng.normal(size=n)
    v = rng.normal(size=sys.nv)
    sim = Simulator(sys, external=[ctrl])
    qt = lambda vv: sim.integrator._integrate(q, vv, dt)  # noqa: E731
    exact = ctrl.linearize(0.3, np.zeros(0), q, v, dt, qt)
    generic = ExternalSystem.linearize(ctrl, 0.3, np.zeros(0), q, v, dt, qt)
    assert np.all(exact.c > 0)
    np.testing.assert_allclose(exact.c, generic.c, rtol=2e-6)
    np.testing.assert_allclose(exact.b, generic.b, rtol=2e-6, atol=1e-6 * np.abs(generic.b).max())
    np.testing.assert_array_equal(exact.idx, dofs)
    assert exact.Z.shape == (0, sys.nv) and exact.bz.shape == (0,)


def test_go1_stands_under_joint_pd():
    sys = scenes.go1_on_ground()
    qi = sys.robot_q_indices("go1")
    ctrl = JointPD(sys, sys.robot_v_indices("go1"), kp=300.0, kd=5.0, q_d=sys.q0[qi])
    sim = Simulator(sys, accuracy=1e-3, external=[ctrl])
    sim.advance_to(0.5)  # lands on its feet
    p0 = sim.q[:3]
    assert 0.2 < p0[2] < 0.3
    sim.advance_to(10.5)
    drift = np.linalg.norm(sim.q[:3] - p0)
    print(f"Go1 drift over 10 s: {drift * 1e3:.2f} mm, {sim.stats.accepted} steps")
    assert drift < 0.01
    assert np.abs(sim.q[qi] - sys.q0[qi]).max() < 0.05


@pytest.mark.parametrize("kw", [dict(kp=-1.0), dict(dofs=[99]), dict(effort_limit=0.0), dict(q_d=[math.nan])])
def test_bad_controller_arguments(tmp_path, kw):
    sys = pendulum(tmp_path)
    args = dict(dofs=[0], kp=1.0, kd=1.0)
    args.update(kw)
    with pytest.raises(ValueError):
        JointPD(sys, **args)


def test_non_finite_controller_output_raises_naming_the_system(tmp_path):
    class Broken(ExternalSystem):
        def output(self, t, z, q, v):
            return np.array([np.nan])

    sys = pendulum(tmp_path)
    sim = Simulator(sys, accuracy=1e-3, external=[Broken([0])])
    with pytest.raises(FloatingPointError, match="Broken"):
        sim.advance_to(0.1)
    assert np.all(np.isfinite(sim.q))
