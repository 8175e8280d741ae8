"""Stable-Baselines3 and rl-baselines3-zoo compatibility: SB3's ``check_env`` passes on every registered id, the
goal API (``compute_reward``, ...) exists only on the goal-conditioned Franka, and the zoo's hyperparameter files
(``training/zoo/<algo>.yml``) mirror ``cenic_gym/train/configs.py`` and train."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import cenic_gym  # noqa: F401  (registers the ids)
from cenic_gym.train.configs import CONFIGS

ENV_IDS = sorted(k for k in gym.registry if k.startswith("Cenic"))
ZOO = Path(__file__).resolve().parents[1] / "training" / "zoo"
GOAL_IDS = {"CenicFrankaGoal-v0"}


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sb3_check_env_passes(env_id):
    """SB3's checker on what ``gym.make`` returns, with its warnings on: it passes and SB3 has nothing to warn of."""
    env_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    env = gym.make(env_id)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env_checker.check_env(env, warn=True)
    finally:
        env.close()
    assert [str(w.message) for w in caught if "stable_baselines3" in w.filename] == []


def test_goal_api_only_on_the_goal_conditioned_form():
    """The Box-observation Franka has no GoalEnv API (SB3 would take it for a broken GoalEnv); the goal-conditioned
    form has it, whether made as CenicFrankaGoal-v0 or as CenicFranka-v0 with goal_conditioned=True."""
    from cenic_gym.envs.franka_box import FrankaBoxEnv, FrankaBoxGoalEnv

    plain = gym.make("CenicFranka-v0").unwrapped
    assert type(plain) is FrankaBoxEnv and isinstance(plain.observation_space, gym.spaces.Box)
    assert not any(hasattr(plain, m) for m in ("compute_reward", "compute_terminated", "compute_truncated"))
    same = gym.make("CenicFranka-v0", goal_conditioned=True, reward_type="sparse").unwrapped
    assert type(same) is FrankaBoxGoalEnv and isinstance(same.observation_space, gym.spaces.Dict)
    with pytest.raises(ValueError, match="goal-conditioned form"):
        gym.make("CenicFrankaGoal-v0", goal_conditioned=False)
    # the wrapper gym.make returns has the API too (Gymnasium 1.x wrappers forward no attributes); the step's reward
    # is compute_reward of the observation's (float32) goals, also with the dense reward
    env = gym.make("CenicFrankaGoal-v0", reward_type="dense")
    env.reset(seed=0)
    obs, r, *_, info = env.step(env.action_space.sample())
    assert r == env.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) < 0.0
    batch = np.stack([obs["achieved_goal"]] * 3)
    assert env.compute_reward(batch, batch, [info] * 3).tolist() == [0.0] * 3
    assert env.compute_terminated(batch, batch, [info] * 3).shape == env.compute_truncated(batch, batch, {}).shape \
        == (3,)


# -- rl-baselines3-zoo ------------------------------------------------------------------------------------------
def zoo_entry(env_id, cfg):
    """The zoo hyperparameters (as the yml files hold them, after ``yaml.safe_load``) of ``CONFIGS[env_id][algo]``:
    the training envs' options (env_kwargs + train_env_kwargs) as the zoo's one ``env_kwargs``."""
    sb3 = dict(cfg["sb3"])
    her = sb3.pop("her", None)
    policy_kwargs = sb3.pop("policy_kwargs")
    entry = dict(n_envs=cfg["num_envs"], n_timesteps=float(cfg["steps"]),
                 policy="MultiInputPolicy" if env_id in GOAL_IDS else "MlpPolicy", **sb3,
                 policy_kwargs=policy_kwargs, monitor_kwargs=dict(info_keywords=("is_success",)))
    env_kwargs = {k: list(v) if isinstance(v, tuple) else v
                  for k, v in {**cfg["env_kwargs"], **cfg["train_env_kwargs"]}.items()}
    if env_kwargs:
        entry["env_kwargs"] = env_kwargs
    if cfg["normalize"]:
        entry["normalize"] = dict(norm_obs=True, norm_reward=False)  # observations only, as cenic-gym train does
    if her is not None:
        entry.update(replay_buffer_class="HerReplayBuffer", replay_buffer_kwargs=her)
    return entry


@pytest.mark.parametrize("algo", ["sac", "ppo", "tqc", "crossq"])
def test_zoo_files_mirror_the_training_configs(algo):
    """Every id with a configs.py entry for the algorithm has the same settings in the zoo file; the zoo's
    python-expression strings (policy_kwargs, normalize, ...) are evaluated as rl_zoo3 does."""
    yaml = pytest.importorskip("yaml")
    loaded = yaml.safe_load((ZOO / f"{algo}.yml").read_text())
    expected = {env_id: zoo_entry(env_id, algos[algo]) for env_id, algos in CONFIGS.items() if algo in algos}
    assert set(expected) == set(ENV_IDS) - ({"CenicFrankaGoal-v0"} if algo == "crossq" else set())  # no HER
    assert sorted(loaded) == sorted(expected)
    for env_id, entry in loaded.items():
        entry = {k: eval(v, {}) if k in ("policy_kwargs", "replay_buffer_kwargs", "normalize", "monitor_kwargs")
                 else v for k, v in entry.items()}
        assert entry == expected[env_id], env_id


@pytest.mark.parametrize("algo, env_id, extra", [
    ("sac", "CenicFranka-v0", ["-params", "learning_starts:200"]),  # 50 gradient steps (train_freq 2)
    ("sac", "CenicFrankaGoal-v0", ["-params", "learning_starts:200"]),  # HER, relabelling with compute_reward
    ("ppo", "CenicFranka-v0", []),  # one rollout: 32 envs x 64 steps
])
def test_zoo_train_writes_a_model(tmp_path, algo, env_id, extra):
    """``python -m rl_zoo3.train`` with ``--gym-packages cenic_gym`` and our hyperparameter file trains a few hundred
    steps and saves the model (and the observation statistics: the files normalize)."""
    if importlib.util.find_spec("rl_zoo3") is None:  # found, not imported: importing rl_zoo3 replaces
        pytest.skip("rl_zoo3 is not installed")  # gymnasium.wrappers.TimeLimit for the whole process (gym_patches)
    cmd = [sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id, "--gym-packages", "cenic_gym",
           "--conf-file", str(ZOO / f"{algo}.yml"), "-n", "300", "--eval-freq", "-1", "--seed", "0",
           "-f", str(tmp_path), "--num-threads", "1", *extra]
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    folder = tmp_path / algo / f"{env_id}_1"
    assert (folder / f"{env_id}.zip").is_file() and (folder / env_id / "vecnormalize.pkl").is_file()
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: gym.make(env_id)])  # SB3 loads a HER model only with an env
    model = {"sac": SAC, "ppo": PPO}[algo].load(folder / f"{env_id}.zip", env=venv, device="cpu")
    assert model.num_timesteps >= 300 and model.observation_space == venv.observation_space
    assert "rl_zoo3" not in sys.modules  # rl_zoo3 patches gymnasium.wrappers.TimeLimit on import: keep it out
