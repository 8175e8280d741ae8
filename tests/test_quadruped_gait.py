"""CenicQuadruped-v0's ``action_type="gait"`` (envs/go1_gait.py): the legs' kinematics, the trot generator's feet,
the action's bounds, the phase's continuity across steps, resets and restored states, the Gymnasium contract in
this mode, and that the generator walks at the velocity it is driven at."""
import math
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym.envs import go1_constants as gc
from cenic_gym.envs.go1_gait import LegKinematics, trot_feet
from cenic_gym.envs.quadruped import OBS_GAIT, go1_scene

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


def test_trot_feet_stance_speed_and_swing_height(legs):
    """In stance a foot moves backward relative to the base at the commanded velocity (plus ω × p); in swing it
    returns, raised by at most ``lift``; diagonal pairs are half a cycle apart."""
    nominal = legs.forward(gc.NOMINAL)
    f, lift, v = 2.5, 0.07, (0.8, -0.2, 0.5)
    h = 1e-6
    phase = 0.3  # FL and RR in stance, FR and RL in swing
    dfeet = (trot_feet(phase + h, v, f, lift, nominal) - trot_feet(phase - h, v, f, lift, nominal)) / (2 * h)
    dfeet_dt = dfeet * 2 * math.pi * f  # dφ/dt = 2π f
    for i in (0, 3):
        expect = -np.array([v[0] - v[2] * nominal[i, 1], v[1] + v[2] * nominal[i, 0]])
        np.testing.assert_allclose(dfeet_dt[i, :2], expect, rtol=1e-6)
        assert dfeet_dt[i, 2] == pytest.approx(0.0)
    feet = trot_feet(phase, v, f, lift, nominal)
    assert np.all(feet[[1, 2], 2] > nominal[[1, 2], 2]) and np.all(feet[[1, 2], 2] <= nominal[[1, 2], 2] + lift)
    np.testing.assert_array_equal(feet[[0, 3], 2], nominal[[0, 3], 2])
    # at the stance/swing boundary the trajectory is continuous
    for phase in (0.0, math.pi):
        a = trot_feet(phase - 1e-9, v, f, lift, nominal)
        b = trot_feet(phase + 1e-9, v, f, lift, nominal)
        np.testing.assert_allclose(a, b, atol=1e-7)


def test_gait_mode_spaces_bounds_and_default_unchanged():
    env = gym.make(ENV_ID, **GAIT)
    assert env.action_space.shape == (15,) and env.observation_space.shape == (OBS_GAIT.size,) == (53,)
    plain = gym.make(ENV_ID)
    assert plain.action_space.shape == (12,) and plain.observation_space.shape == (48,)
    u = env.unwrapped
    env.reset(seed=0)
    for a in (np.ones(15), -np.ones(15), np.r_[np.zeros(3), np.ones(12)]):
        env.step(a.astype(np.float32))
        q_d = np.asarray(u.pd.setpoints(u.sim.t)[0])
        assert np.all(q_d >= u.q_lower - 1e-12) and np.all(q_d <= u.q_upper + 1e-12)
    # residuals move the targets by residual_scale per unit action, nothing else
    env.reset(seed=0)
    phase = u.gait_phase
    res = np.r_[np.zeros(3), np.linspace(-1, 1, 12)]
    base = u._gait_targets(np.zeros(15))
    u.gait_phase = phase
    np.testing.assert_allclose(u._gait_targets(res) - base, 0.1 * res[3:], atol=1e-12)
    with pytest.raises(ValueError, match="action_type"):
        gym.make(ENV_ID, action_type="torque")
    with pytest.raises(ValueError, match="gait"):
        gym.make(ENV_ID, action_type="gait", gait=dict(frequency=0.0))


def test_gait_phase_is_continuous_across_steps_resets_and_restored_states():
    env = gym.make(ENV_ID, **GAIT)
    u = env.unwrapped
    obs, _ = env.reset(seed=3)
    phase_slice = OBS_GAIT["gait_phase"]
    np.testing.assert_allclose(obs[phase_slice], [0.0, 1.0])
    dphi = 2 * math.pi * u.config["gait"]["frequency"] * u.control_period
    a = np.zeros(15, np.float32)
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
    actions = rng.uniform(-1, 1, (25, 15)).astype(np.float32)

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
