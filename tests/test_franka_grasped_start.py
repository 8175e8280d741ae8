"""CenicFranka-v0's training aids ``grasped_start`` (episodes that start with the box in the closed gripper) and
``placed_start`` (the same, with the box standing on the target): off by default and then bit-identical to the plain
env, a physically held grasp when on (the box lifts with the hand; a placed box is a success once the gripper opens),
deterministic, bad values rejected; the training backends give them to the training envs only. Evaluation sums each
reward term per episode."""
from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym.train import RunSpec, get_config

EE = dict(action_type="ee_delta", ee_delta_scale=(0.03, 0.0))


def _rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        out.append(env.step(a)[0])
    return np.array(out)


def test_off_is_the_plain_env_bit_for_bit():
    actions = np.random.default_rng(1).uniform(-1, 1, (5, 8)).astype(np.float32)
    plain = _rollout(gym.make("CenicFranka-v0"), 3, actions)
    off = _rollout(gym.make("CenicFranka-v0", grasped_start=0.0, placed_start=0.0), 3, actions)
    assert np.array_equal(plain, off)


def test_grasped_start_holds_the_box_and_is_deterministic():
    env = gym.make("CenicFranka-v0", grasped_start=1.0, **EE)
    e = env.unwrapped
    obs, _ = env.reset(seed=5)
    left, right, table = e.view.contacts
    s = e.view
    assert left and right and not table  # both fingers on the box, hand clear of the table
    assert abs(s.p_box[2] - e.rest_z) < 2e-3 and np.degrees(np.arccos(s.R_box[2, 2])) < 2.0  # still resting
    assert np.linalg.norm(e._grasp_point(s) - s.p_tcp) < 0.01
    assert e.sim.t == pytest.approx(e.config["grasp_settle"])
    up = np.array([0, 0, 1, 0, 0, 0, 0, -1], np.float32)  # TCP up 3 cm per step, gripper closed
    for _ in range(6):
        obs, r, terminated, truncated, info = env.step(up)
    lifted = e.view.p_box[2] - e.rest_z
    assert lifted > 0.08 and info["reward/grasp"] == 1.0  # the grasp holds: the box rises with the hand
    again = _rollout(gym.make("CenicFranka-v0", grasped_start=1.0, **EE), 5, [up] * 6)
    assert np.array_equal(again[-1], obs)


def test_grasped_start_probability_draws_per_episode():
    env = gym.make("CenicFranka-v0", grasped_start=0.5, **EE)
    grasped = []
    for seed in range(8):
        env.reset(seed=seed)
        grasped.append(env.unwrapped.sim.t > 0.0)
    assert 0 < sum(grasped) < 8


def test_placed_start_is_one_step_from_success():
    """A placed start holds the box upright on the target; opening the gripper (and nothing else) succeeds, and the
    release term pays from the first opening step."""
    env = gym.make("CenicFranka-v0", placed_start=1.0, **EE)
    e = env.unwrapped
    env.reset(seed=2)
    left, right, _ = e.view.contacts
    d_xy, tilt_box, dz, placed = e.view.placement
    assert left and right and placed and d_xy < 1e-3 and not e.evaluate()["success"]
    hold = np.array([0, 0, 0, 0, 0, 0, 0, -1], np.float32)
    _, r_hold, *_ , info = env.step(hold)
    assert info["reward/release"] == 0.0 and not info["is_success"]
    opened = np.array([0, 0, 0, 0, 0, 0, 0, 1], np.float32)
    _, r_open, *_ , info = env.step(opened)
    assert info["reward/release"] > 0.0 and r_open > r_hold
    for _ in range(10):
        *_, info = env.step(opened)
    assert info["is_success"] and info["reward/release"] == e.config["reward_scales"]["release"]


def test_one_draw_picks_plain_grasped_or_placed_starts():
    env = gym.make("CenicFranka-v0", grasped_start=0.4, placed_start=0.4, **EE)
    e = env.unwrapped
    starts = set()
    for seed in range(12):
        env.reset(seed=seed)
        grasped = e.sim.t > 0.0
        on_target = e.view.placement[0] < 1e-3
        starts.add((grasped, on_target))
    assert starts == {(False, False), (True, False), (True, True)}


@pytest.mark.parametrize("kwargs,text", [
    (dict(placed_start=-0.1), "placed_start must be a probability in [0, 1], got -0.1"),
    (dict(grasped_start=0.6, placed_start=0.5), "grasped_start + placed_start must be at most 1, got 0.6 + 0.5"),
    (dict(grasped_start=1.5), "grasped_start must be a probability in [0, 1], got 1.5"),
    (dict(grasped_start=True), "option grasped_start=True must be a finite number"),  # the merge checks the type
    (dict(grasp_settle=0.0), "grasp_settle must be a duration > 0 [s], got 0.0")])
def test_bad_values_raise_naming_them(kwargs, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        gym.make("CenicFranka-v0", **kwargs)


def test_training_aid_reaches_training_envs_only():
    from cenic_gym.train import sb3_backend

    cfg = get_config("CenicFranka-v0", "ppo")
    spec = RunSpec("CenicFranka-v0", "ppo", "sb3", cfg["env_kwargs"], train_env_kwargs=cfg["train_env_kwargs"])
    train_env = sb3_backend._env_factory(spec, training=True)()
    eval_env = sb3_backend._env_factory(spec)()
    for key in ("grasped_start", "placed_start"):
        assert cfg["train_env_kwargs"][key] > 0 and key not in cfg["env_kwargs"]
        assert train_env.unwrapped.config[key] == cfg["train_env_kwargs"][key]
        assert eval_env.unwrapped.config[key] == 0.0
    # the training envs run at a looser accuracy; the evaluation keeps the task's default
    assert train_env.unwrapped.sim.integrator.accuracy == cfg["train_env_kwargs"]["accuracy"] == 1e-2
    assert eval_env.unwrapped.sim.integrator.accuracy == 1e-3
    assert spec.training_env_kwargs() == {**cfg["env_kwargs"], **cfg["train_env_kwargs"]}


def test_evaluation_sums_the_reward_terms_per_episode():
    from cenic_gym.train.common import run_episodes

    result = run_episodes(lambda obs: np.zeros(8, np.float32),
                          lambda: gym.make("CenicFranka-v0", max_episode_steps=5, **EE), episodes=2, seed=4)
    assert len(result.terms) == 2 and set(result.terms[0]) >= {"reach", "grasp", "release", "action_rate"}
    for ret, terms in zip(result.returns, result.terms):
        assert sum(terms.values()) == pytest.approx(ret, rel=1e-12, abs=1e-12)  # reward = sum of its terms
    assert result.mean_terms()["reach"] == pytest.approx(np.mean([t["reach"] for t in result.terms]))
