"""The reach rung of CenicFrankaGoal-v0: FetchReach's goal range and the measured-origin ee_delta actions."""
import gymnasium as gym
import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import expm

from cenic_gym.envs import panda_constants as pc
from cenic_gym.train.configs import REACH, REACH_TABLE


def make(**kw):
    preset = {k: v for k, v in REACH.items() if k != "max_episode_steps"}
    return gym.make("CenicFrankaGoal-v0", **{**preset, **kw}).unwrapped


def tcp(env):
    return env.sim.body_pose(pc.TCP)[0]


def target_tcp(env):
    """TCP position of the arm controller's target joint positions [m]."""
    q = env.sim.q
    q[env.arm_q] = env.arm.q_d
    d = env.system.model.createData()
    pin.framesForwardKinematics(env.system.model, d, q)
    return d.oMf[env.tcp].translation.copy()


def pd_step_motion(kp, kd, period, delta, measured):
    """Per-step displacement [m] of a 1-D critically damped PD (ẍ = kp (x_d − x) − kd ẋ, the inverse-dynamics PD of
    each joint) driven at |a| = 1: x_d ← x + delta (measured origin) or x_d ← x_d + delta (target origin), 12
    periods (8 driven, then 4 at a = 0); exact, by the matrix exponential of the error dynamics."""
    phi = expm(np.array([[0.0, 1.0], [-kp, -kd]]) * period)
    x = v = x_d = 0.0
    out = []
    for k in range(12):
        x_d = (x if measured else x_d) + (delta if k < 8 else 0.0)
        e, v = phi @ np.array([x - x_d, v])
        out.append(e + x_d - x)
        x = e + x_d
    return np.array(out)


def test_reach_goal_is_drawn_around_the_start_tcp_and_the_threshold_is_5_cm():
    env = make()
    offsets = []
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        np.testing.assert_allclose(obs["achieved_goal"], tcp(env), atol=1e-6)
        offsets.append(obs["desired_goal"] - obs["achieved_goal"])
    offsets = np.array(offsets)
    assert np.abs(offsets).max() <= 0.15 + 1e-6 and np.abs(offsets).max() > 0.05
    assert len({tuple(np.round(o, 6)) for o in offsets}) == 6
    g = np.zeros(3)
    assert env.compute_reward(g + [0.049, 0, 0], g, {}) == 0.0 and env.compute_reward(g + [0.051, 0, 0], g, {}) == -1.0
    table = gym.make("CenicFrankaGoal-v0", **{k: v for k, v in REACH_TABLE.items() if k != "max_episode_steps"})
    obs, _ = table.reset(seed=0)
    assert np.linalg.norm(obs["desired_goal"] - obs["achieved_goal"]) > 0.3  # the env's default: the target region


@pytest.mark.parametrize("origin", ["measured", "target"])
def test_ee_delta_tracking_matches_the_pd_model(origin):
    """At |a| = 1 along +x the TCP moves per step as the joint-space PD (ω = 20 rad/s, critically damped) predicts
    (within 8 % or 2 mm: the arm is not a point mass along x), and with the measured origin the target never leads
    the TCP by more than one delta, so the TCP stops within a step of the last action."""
    # target origin at the env's default 2 cm per step: it travels 2.5x the deltas (16 cm), where the PD model holds
    env = make(ee_delta_origin=origin, **({} if origin == "measured" else dict(ee_delta_scale=(0.02, 0.0))))
    env.reset(seed=0)
    a = np.zeros(8, np.float32)
    a[0] = 1.0
    delta = env.config["ee_delta_scale"][0]
    xs, leads = [tcp(env)], []
    for k in range(12):
        env.step(a if k < 8 else np.zeros(8, np.float32))
        xs.append(tcp(env))
        leads.append(np.linalg.norm(target_tcp(env) - xs[-1]))
    xs = np.array(xs)
    steps = np.diff(xs[:, 0])
    model = pd_step_motion(pc.ARM_KP, pc.ARM_KD, env.config["control_period"], delta, origin == "measured")
    np.testing.assert_allclose(steps, model, rtol=0.08, atol=2e-3)
    # nearly straight along x: the joint-space PD's path bends off the Cartesian line (< 0.5 mm per step here), and
    # the measured origin keeps what it bent (FetchReach's mocap reset does the same); 16 cm of travel -> < 1 cm
    assert np.abs(xs[:, 1:] - xs[0, 1:]).max() < 1e-2
    if origin == "measured":
        assert max(leads) < delta + 2e-3 and abs(steps[9:]).max() < 2e-3
    else:
        assert max(leads) > 1.5 * delta  # the target runs ahead: the lag the measured origin removes


def test_reach_options_reject_bad_values():
    with pytest.raises(ValueError, match="ee_delta_origin.*'tcp'"):
        make(ee_delta_origin="tcp")
    with pytest.raises(ValueError, match="reach_goal_range.*-0.1"):
        make(reach_goal_range=-0.1)


def test_ee_delta_ik_is_well_conditioned_and_exact_over_the_reach_workspace():
    """The TCP position Jacobian stays far from singular where the reach goes (condition number < 5; 2.3 over 400
    probed states), and 3 damped least-squares iterations hit a 5 cm delta to < 10 µm (1.2 µm probed)."""
    env = make()
    rng = np.random.default_rng(0)
    model, data = env.system.model, env.system.model.createData()
    for seed in range(3):
        env.reset(seed=seed)
        for _ in range(5):
            a = np.zeros(8, np.float32)
            a[:3] = rng.uniform(-1, 1, 3)
            q, p = env.sim.q, tcp(env)
            dp = a[:3] * env.config["ee_delta_scale"][0]
            q_d = env._ik_delta(np.asarray(env.arm.q_d, float), dp, np.zeros(3), p)
            q_ik = env.sim.q
            q_ik[env.arm_q] = q_d
            pin.framesForwardKinematics(model, data, q_ik)
            assert np.linalg.norm(data.oMf[env.tcp].translation - (p + dp)) < 1e-5
            J = pin.computeFrameJacobian(model, data, q, env.tcp, pin.LOCAL_WORLD_ALIGNED)[:3, env.arm_v]
            s = np.linalg.svd(J, compute_uv=False)
            assert s[0] / s[-1] < 5.0
            env.step(a)
