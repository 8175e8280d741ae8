"""CenicQuadruped-v0's ``action_type="gait"`` (envs/go1_gait.py): the legs' kinematics, the trot generator's feet,
the action's bounds, the phase's continuity across steps, resets and restored states, the Gymnasium contract in
this mode, and that the generator, driven by the Raibert teacher, walks at the commanded velocity."""
import math
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym.envs import go1_constants as gc
from cenic_gym.envs.go1_gait import TROT_PHASE, LegKinematics, TrotGenerator
from cenic_gym.envs.quadruped import GAIT_ACTIONS, OBS_GAIT, GaitTeacher, go1_scene

ENV_ID = "CenicQuadruped-v0"
GAIT = dict(action_type="gait")


@pytest.fixture(scope="module")
def legs():
    return LegKinematics(go1_scene()[0].model)


def test_leg_kinematics_match_pinocchio_and_invert(legs):
    """forward() is Pinocchio's foot frames in the base frame; inverse() recovers the joint angles of reachable
    feet (knee bent backward) to round-off."""
    import pinocchio as pin

    system = go1_scene()[0]
    m, d = system.model, system.model.createData()
    rng = np.random.default_rng(0)
    leg_q = system.robot_q_indices(gc.ROBOT, gc.JOINTS)
    for _ in range(20):
        q_legs = gc.NOMINAL + rng.uniform(-0.4, 0.4, 12)
        q = system.q0.copy()
        q[leg_q] = q_legs
        pin.framesForwardKinematics(m, d, q)
        base = d.oMi[m.getJointId(gc.BASE_JOINT)]
        feet = np.array([base.actInv(d.oMf[m.getFrameId(f)]).translation for f in gc.FOOT_FRAMES])
        np.testing.assert_allclose(legs.forward(q_legs), feet, atol=1e-12)
        np.testing.assert_allclose(legs.inverse(feet), q_legs, atol=1e-9)


def test_leg_jacobian_is_the_derivative_of_forward(legs):
    rng = np.random.default_rng(2)
    q = gc.NOMINAL + rng.uniform(-0.4, 0.4, 12)
    J = legs.jacobian(q)
    h = 1e-7
    for j in range(3):
        dq = np.zeros(12)
        dq[j::3] = h
        np.testing.assert_allclose(J[:, :, j], (legs.forward(q + dq) - legs.forward(q - dq)) / (2 * h), atol=1e-7)


def _generator(legs, **kw):
    args = dict(mass=13.0, kp=35.0, frequency=4.0, lift=0.07, lead_time=0.0, reach=0.12, control_period=0.02)
    args.update(kw)
    return TrotGenerator(legs, gc.NOMINAL, **args)


def test_trot_stance_feet_move_with_the_ground_and_swing_feet_land_on_the_offset_neutral_point(legs):
    """A stance foot moves by −(v + ω × p) Δt per period; a swinging foot rises by at most ``lift`` and lands at
    nominal + T_stance/2 (v + ω × p) + the step offset (turned by ψ); diagonal pairs alternate."""
    gen = _generator(legs)
    v, offset = np.array([0.8, -0.2, 0.5]), np.array([0.02, -0.01, 0.1])
    zero2, zero12 = np.zeros(2), np.zeros(12)
    plan = gen.start()
    ground = gen.ground_velocity(v)
    nominal = gen.nominal
    landed = {}
    for _ in range(40):
        new = gen.step(plan, v, offset, zero2, zero12)
        leg_phase = (new.phase + TROT_PHASE) % (2 * math.pi)
        stance = leg_phase < math.pi
        was_swing = (plan.phase + TROT_PHASE) % (2 * math.pi) >= math.pi
        for i in range(4):
            if stance[i] and not was_swing[i]:  # a whole period on the ground
                np.testing.assert_allclose(new.feet[i, :2] - plan.feet[i, :2], 0.02 * ground[i], atol=1e-12)
                assert new.feet[i, 2] == pytest.approx(nominal[i, 2])
            if not stance[i]:
                assert nominal[i, 2] <= new.feet[i, 2] <= nominal[i, 2] + 0.07 + 1e-12
            if stance[i] and was_swing[i]:
                landed[i] = plan.feet[i, :2]
        assert stance[0] == stance[3] != stance[1] == stance[2]
        plan = new
    target = nominal[:, :2] - 0.5 * gen.stance_time * ground
    target[:, 0] += offset[0] - offset[2] * nominal[:, 1]
    target[:, 1] += offset[1] + offset[2] * nominal[:, 0]
    for i, xy in landed.items():  # the last swing sample is within the arc's final ease-in of the target
        assert np.linalg.norm(xy - target[i]) < 0.1 * np.linalg.norm(target[i] - nominal[i, :2]) + 0.02


def test_trot_posture_weight_feedforward_lead_and_residuals(legs):
    """Posture slopes lower stance feet by s·(x, y); stance legs' targets are offset by −Jᵀ(0, 0, m g / 2)/k_p;
    residuals add to the targets exactly; the lead extrapolates the plan by lead_time."""
    gen = _generator(legs)
    plan = gen.start()
    zero12 = np.zeros(12)
    slopes = np.array([0.2, -0.1])
    new = gen.step(plan, np.zeros(3), np.zeros(3), slopes, zero12)
    stance = ((new.phase + TROT_PHASE) % (2 * math.pi)) < math.pi
    expect_z = gen.nominal[:, 2] - (slopes[0] * gen.nominal[:, 0] + slopes[1] * gen.nominal[:, 1])
    np.testing.assert_allclose(new.feet[stance, 2], expect_z[stance], atol=1e-12)
    q_plain = legs.inverse(new.feet)
    J = legs.jacobian(q_plain)
    f_z = 13.0 * 9.81 / 2
    for i in np.flatnonzero(stance):
        np.testing.assert_allclose(new.q[3 * i:3 * i + 3], q_plain[3 * i:3 * i + 3] - J[i, 2] * f_z / 35.0,
                                   atol=1e-12)
    for i in np.flatnonzero(~stance):
        np.testing.assert_allclose(new.q[3 * i:3 * i + 3], q_plain[3 * i:3 * i + 3], atol=1e-12)
    residual = np.linspace(-0.1, 0.1, 12)
    np.testing.assert_allclose(gen.step(plan, np.zeros(3), np.zeros(3), slopes, residual).q - new.q, residual,
                               atol=1e-12)
    led = _generator(legs, lead_time=0.01).step(plan, np.zeros(3), np.zeros(3), slopes, zero12)
    np.testing.assert_array_equal(led.feet, new.feet)  # the plan is the same, only the targets lead it
    extrapolated = new.feet + 0.5 * (new.feet - plan.feet)
    np.testing.assert_allclose(led.q[~np.repeat(stance, 3)], legs.inverse(extrapolated)[~np.repeat(stance, 3)],
                               atol=1e-12)


def test_gait_teacher_walks_at_the_commanded_velocity():
    """The generator with Raibert foot placement (GaitTeacher) tracks a fixed command within the success test's
    tolerance after 3 s, without falling: the action mode can walk."""
    env = gym.make(ENV_ID, **GAIT)
    teacher = GaitTeacher(env)
    u = env.unwrapped
    for command in ((0.8, 0.0, 0.0), (0.0, 0.4, 0.0), (-0.6, 0.0, 0.6)):
        obs, _ = env.reset(seed=0, options={"command": command})
        for _ in range(150):
            obs, _, terminated, _, _ = env.step(teacher(obs))
            assert not terminated, command
        assert u.evaluate()["success"], (command, u.vel_avg)
    # a step of the command from standing to 1.2 m/s forward is tracked within 2 s (the push residuals: without
    # them the soft servos lag the stance sweep and it is not tracked within 3 s)
    obs, _ = env.reset(seed=1, options={"command": (0.0, 0.0, 0.0)})
    for _ in range(100):
        obs, *_ = env.step(teacher(obs))
    u.command = np.array([1.2, 0.0, 0.0])
    for _ in range(100):
        obs, _, terminated, _, _ = env.step(teacher(obs))
        assert not terminated
    assert u.evaluate()["success"], u.vel_avg


def test_gait_mode_spaces_bounds_and_default_unchanged():
    env = gym.make(ENV_ID, **GAIT)
    assert env.action_space.shape == (GAIT_ACTIONS,) == (20,)
    assert env.observation_space.shape == (OBS_GAIT.size,) == (58,)
    plain = gym.make(ENV_ID)
    assert plain.action_space.shape == (12,) and plain.observation_space.shape == (48,)
    u = env.unwrapped
    env.reset(seed=0)
    for a in (np.ones(20), -np.ones(20), np.r_[np.zeros(8), np.ones(12)]):
        env.step(a.astype(np.float32))
        q_d = np.asarray(u.pd.setpoints(u.sim.t)[0])
        assert np.all(q_d >= u.q_lower - 1e-12) and np.all(q_d <= u.q_upper + 1e-12)
    # residuals move the targets by residual_scale per unit action, nothing else
    env.reset(seed=0)
    plan = u.gait_plan
    res = np.r_[np.zeros(8), np.linspace(-1, 1, 12)]
    base = u._gait_targets(np.zeros(20))
    u.gait_plan = plan
    np.testing.assert_allclose(u._gait_targets(res) - base, 0.1 * res[8:], atol=1e-12)
    with pytest.raises(ValueError, match="action_type"):
        gym.make(ENV_ID, action_type="torque")
    with pytest.raises(ValueError, match="gait"):
        gym.make(ENV_ID, action_type="gait", gait=dict(frequency=0.0))
    with pytest.raises(ValueError, match="gait"):
        gym.make(ENV_ID, action_type="gait", gait=dict(lift=float("nan")))


def test_gait_phase_is_continuous_across_steps_resets_and_restored_states():
    env = gym.make(ENV_ID, **GAIT)
    u = env.unwrapped
    obs, _ = env.reset(seed=3)
    phase_slice = OBS_GAIT["gait_phase"]
    np.testing.assert_allclose(obs[phase_slice], [0.0, 1.0])
    dphi = 2 * math.pi * u.config["gait"]["frequency"] * u.control_period
    a = np.zeros(20, np.float32)
    phases = []
    for _ in range(30):
        obs, *_ = env.step(a)
        phases.append(math.atan2(obs[phase_slice][0], obs[phase_slice][1]))
    steps = np.mod(np.diff(phases), 2 * math.pi)
    np.testing.assert_allclose(steps, dphi, atol=1e-6)
    snap = u.get_state()
    after = [env.step(a)[0] for _ in range(5)]
    u.set_state(snap)
    again = [env.step(a)[0] for _ in range(5)]
    np.testing.assert_array_equal(np.array(after), np.array(again))
    obs, _ = env.reset(seed=4)
    np.testing.assert_allclose(obs[phase_slice], [0.0, 1.0])


def test_gait_mode_passes_the_checker_is_deterministic_and_pickles():
    env = gym.make(ENV_ID, **GAIT, disable_env_checker=True)
    check_env(env.unwrapped, skip_render_check=True)
    rng = np.random.default_rng(1)
    actions = rng.uniform(-1, 1, (25, 20)).astype(np.float32)

    def rollout(e):
        obs, _ = e.reset(seed=7)
        out = [obs]
        for a in actions:
            out.append(e.step(a)[0])
        return np.array(out)

    first = rollout(gym.make(ENV_ID, **GAIT))
    np.testing.assert_array_equal(first, rollout(gym.make(ENV_ID, **GAIT)))
    e = gym.make(ENV_ID, **GAIT)
    e.reset(seed=7)
    for a in actions[:10]:
        e.step(a)
    clone = pickle.loads(pickle.dumps(e))
    np.testing.assert_array_equal(np.array([e.step(a)[0] for a in actions[10:]]),
                                  np.array([clone.step(a)[0] for a in actions[10:]]))
