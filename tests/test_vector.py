"""RayVectorEnv and the SB3 adapter: bit-identical to an in-process loop over the same sub-envs (both autoreset
modes), recovery from a killed actor (its episodes truncated with a reason, the others untouched), an env that
raises is isolated in its own info, bad arguments name the value."""
from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import cenic_gym  # noqa: F401  (registers the ids)

ray = pytest.importorskip("ray")
from cenic_gym.vector import RayVectorEnv, restart_seed  # noqa: E402

ENV = "CenicFranka-v0"
EPISODE = 4  # env steps per episode (max_episode_steps): several autoresets in a short run
N = 4



def _make():
    return gym.make(ENV, max_episode_steps=EPISODE)


def _reference(mode):
    return SyncVectorEnv([_make] * N, autoreset_mode=mode)


def _actions(steps, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(steps, N, 8)).astype(np.float32)


def _same_infos(a, b, mode):
    if mode == AutoresetMode.SAME_STEP:
        assert np.array_equal(a.get("_final_obs", np.zeros(N, bool)), b.get("_final_obs", np.zeros(N, bool)))
        for i in np.flatnonzero(b.get("_final_obs", np.zeros(N, bool))):
            assert np.array_equal(a["final_obs"][i], b["final_obs"][i])
    assert np.array_equal(a["is_success"], b["is_success"])
    for key in ("substeps", "rejected", "newton_iters", "min_dt", "max_penetration"):  # the integrator's numbers too
        assert np.array_equal(a["sim"][key], b["sim"][key]), key


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_bit_identical_to_in_process_loop(ray_local, mode):
    venv = RayVectorEnv(ENV, N, env_kwargs={"max_episode_steps": EPISODE}, envs_per_actor=2, autoreset_mode=mode)
    ref = _reference(mode)
    try:
        assert venv.metadata["autoreset_mode"] == mode
        assert len(venv.actors) == 2
        obs, _ = venv.reset(seed=7)
        obs_ref, _ = ref.reset(seed=7)
        assert np.array_equal(obs, obs_ref)
        assert len({o.tobytes() for o in obs}) == N  # seed + i: every sub-env starts differently
        ends = 0
        for a in _actions(11):
            got, want = venv.step(a), ref.step(a)
            for x, y in zip(got[:4], want[:4]):
                assert x.dtype == y.dtype and np.array_equal(x, y)
            _same_infos(got[4], want[4], mode)
            ends += int(np.sum(got[2] | got[3]))
        assert ends >= N * 2  # several autoresets happened on every sub-env
    finally:
        venv.close()
        ref.close()


def _wait_dead(actor, timeout=30.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            ray.get(actor.spaces.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        except ray.exceptions.GetTimeoutError:
            pass
        time.sleep(0.1)
    raise AssertionError("the killed actor still answers")


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_killed_actor_recovers(ray_local, mode):
    venv = RayVectorEnv(ENV, N, env_kwargs={"max_episode_steps": 50}, envs_per_actor=2, autoreset_mode=mode)
    ref = SyncVectorEnv([lambda: gym.make(ENV, max_episode_steps=50)] * N, autoreset_mode=mode)
    try:
        venv.reset(seed=3)
        ref.reset(seed=3)
        acts = _actions(8, seed=1)
        for a in acts[:3]:
            venv.step(a)
            ref.step(a)
        last = venv.step(acts[3])[0]
        ref.step(acts[3])
        dead = venv.actors[0]
        ray.kill(dead)
        _wait_dead(dead)
        obs, rew, term, trunc, info = venv.step(acts[4])
        obs_r, rew_r, term_r, trunc_r, _ = ref.step(acts[4])
        assert venv.actors[0] is not dead and venv.restarts == 1
        # the killed actor's episodes: truncated, with the reason; the other actor's episodes did not change
        assert list(trunc) == [True, True, False, False] and not term.any() and list(rew[:2]) == [0.0, 0.0]
        assert list(info["_actor_restarted"]) == [True, True, False, False]
        assert "actor died" in info["actor_restarted"][0]
        assert np.array_equal(obs[2:], obs_r[2:]) and np.array_equal(rew[2:], rew_r[2:])
        # the new episodes of the re-created sub-envs are reproducible: seeded from (seed + i, restart count)
        fresh = np.stack([_make().reset(seed=restart_seed(3 + i, 1))[0] for i in range(2)])
        if mode == AutoresetMode.NEXT_STEP:  # final obs = the last one seen (for bootstrapping); reset next step
            assert np.array_equal(obs[:2], last[:2])
            obs, rew, term, trunc, info = venv.step(acts[5])
            assert np.array_equal(obs[:2], fresh) and list(rew[:2]) == [0.0, 0.0]
        else:  # reset in the same step; the last observation seen is the final one
            assert np.array_equal(obs[:2], fresh)
            assert all(np.array_equal(info["final_obs"][i], last[i]) for i in range(2))
            obs, rew, term, trunc, info = venv.step(acts[5])
        obs_r, rew_r, _, _, _ = ref.step(acts[5])
        assert np.array_equal(obs[2:], obs_r[2:]) and not (term | trunc).any()
        for a in acts[6:]:  # it keeps stepping
            obs, rew, term, trunc, info = venv.step(a)
            obs_r, *_ = ref.step(a)
            assert np.array_equal(obs[2:], obs_r[2:]) and np.all(np.isfinite(obs))
    finally:
        venv.close()
        ref.close()


def test_env_exception_is_isolated(ray_local):
    mode = AutoresetMode.NEXT_STEP
    venv = RayVectorEnv(ENV, N, env_kwargs={"max_episode_steps": 50}, envs_per_actor=2, autoreset_mode=mode)
    ref = SyncVectorEnv([lambda: gym.make(ENV, max_episode_steps=50)] * N, autoreset_mode=mode)
    try:
        venv.reset(seed=11)
        ref.reset(seed=11)
        acts = _actions(4, seed=2)
        before = venv.step(acts[0])[0]
        ref.step(acts[0])
        bad = acts[1].copy()
        bad[1, 0] = np.nan  # the env raises ValueError on a NaN action
        obs, rew, term, trunc, info = venv.step(bad)
        good = bad.copy()
        good[1] = 0.0
        obs_r, rew_r, *_ = ref.step(good)
        assert list(trunc) == [False, True, False, False] and not term.any()
        assert list(info["_env_error"]) == [False, True, False, False]
        assert info["env_error"][1].startswith("ValueError") and "nan" in info["env_error"][1]
        assert np.array_equal(obs[1], before[1])  # the last valid observation
        keep = [0, 2, 3]
        assert np.array_equal(obs[keep], obs_r[keep]) and np.array_equal(rew[keep], rew_r[keep])
        obs, rew, term, trunc, info = venv.step(acts[2])  # sub-env 1 resets (NEXT_STEP), the others go on
        assert not (term | trunc).any() and rew[1] == 0.0 and np.all(np.isfinite(obs))
    finally:
        venv.close()
        ref.close()


def test_sb3_adapter_matches_dummy_vec_env(ray_local):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    from cenic_gym.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(ENV, N, env_kwargs={"max_episode_steps": EPISODE}, envs_per_actor=2)
    ref = DummyVecEnv([_make] * N)
    try:
        venv.seed(5)
        ref.seed(5)
        assert np.array_equal(venv.reset(), ref.reset())
        for a in _actions(7, seed=4):
            venv.step_async(a)
            ref.step_async(a)
            obs, rew, done, infos = venv.step_wait()
            obs_r, rew_r, done_r, infos_r = ref.step_wait()
            assert np.array_equal(obs, obs_r) and np.array_equal(rew, rew_r) and np.array_equal(done, done_r)
            for i in np.flatnonzero(done):
                assert np.array_equal(infos[i]["terminal_observation"], infos_r[i]["terminal_observation"])
                assert infos[i]["TimeLimit.truncated"] == infos_r[i]["TimeLimit.truncated"]
        assert venv.get_attr("control_period") == [0.05] * N
        assert venv.env_method("get_wrapper_attr", "control_period", indices=[3]) == [0.05]
        assert venv.env_is_wrapped(gym.wrappers.TimeLimit) == [True] * N
    finally:
        venv.close()
        ref.close()


@pytest.mark.parametrize("kwargs, match", [
    (dict(env="NoSuchEnv-v9", num_envs=2), r"unknown env id 'NoSuchEnv-v9'.*CenicFranka-v0"),
    (dict(env=ENV, num_envs=0), r"num_envs must be an integer >= 1, got 0"),
    (dict(env=ENV, num_envs=2.0), r"num_envs must be an integer >= 1, got 2.0"),
    (dict(env=ENV, num_envs=2, envs_per_actor=0), r"envs_per_actor must be an integer >= 1, got 0"),
    (dict(env=ENV, num_envs=2, autoreset_mode="sometimes"), r"autoreset_mode='sometimes'.*next_step"),
    (dict(env=ENV, num_envs=2, max_restarts=-1), r"max_restarts must be an integer >= 0, got -1"),
    (dict(env=ENV, num_envs=2, env_kwargs=[1]), r"env_kwargs must be a dict, got \[1\]"),
    (dict(env=42, num_envs=2), r"env must be a registered env id or a callable.*got 42"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RayVectorEnv(kwargs.pop("env"), kwargs.pop("num_envs"), **kwargs)


def test_bad_env_option_and_bad_calls(ray_local):
    with pytest.raises(ValueError, match=r"could not create the sub-envs.*unknown option 'colour'"):
        RayVectorEnv(ENV, 1, env_kwargs={"colour": "red"})
    venv = RayVectorEnv(ENV, 2, envs_per_actor=2)
    try:
        with pytest.raises(gym.error.ResetNeeded):
            venv.step(np.zeros((2, 8)))
        venv.reset(seed=0)
        with pytest.raises(ValueError, match=r"actions must have shape \(2, 8\).*got shape \(8,\)"):
            venv.step(np.zeros(8))
        with pytest.raises(ValueError, match=r"seed must be None, an int or a list of 2"):
            venv.reset(seed=[1, 2, 3])
        with pytest.raises(ValueError, match=r"sub-env index 5 out of range\(0, 2\)"):
            venv.get_attr("control_period", indices=[5])
    finally:
        venv.close()


def test_concat_batches_matches_gymnasium_concatenate():
    """The actors' batches joined leaf by leaf equal Gymnasium's concatenate of all the rows (Dict, Tuple, Box,
    Discrete), written into the given output."""
    from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

    from cenic_gym.vector import concat_batches

    space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (3,), np.float32),
                             "b": gym.spaces.Tuple((gym.spaces.Discrete(4), gym.spaces.Box(0, 1, (2, 2))))})
    space.seed(0)
    sizes = [3, 1, 2]
    batches = [batch_space(space, n).sample() for n in sizes]
    out = create_empty_array(space, n=sum(sizes), fn=np.zeros)
    joined = concat_batches(space, batches, out)
    rows = [x for b, n in zip(batches, sizes) for x in iterate(batch_space(space, n), b)]
    want = concatenate(space, rows, create_empty_array(space, n=sum(sizes), fn=np.zeros))
    assert joined["a"] is out["a"] and np.array_equal(joined["a"], want["a"])
    assert np.array_equal(joined["b"][0], want["b"][0]) and np.array_equal(joined["b"][1], want["b"][1])
