"""Fine-tuning from a shipped policy (``cenic-gym train ENV --algo sac --init training/policies/ENV``): the run starts
from the shipped actor and its normalization, the loaded actor plays the first steps, only the critic learns during
the warm-up, and after it the actor learns too; run.json records the resolved recipe and the policy."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cenic_gym.train import RecipeError, train

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "training" / "policies" / "CenicSuction-v0"
ENV = "CenicSuction-v0"
SMALL = ["eval_every=1000", "checkpoint_every=1000", "eval_episodes=1", "batch_size=32",
         "init.learning_starts=60", "init.critic_warmup=40", "env_kwargs.max_episode_steps=50"]


def _actions(model_path, obs):
    """The deterministic actions of a saved model (its own normalizer applied) on raw observations."""
    from cenic_gym.sim2real.policy import load_sb3

    model, norm = load_sb3(model_path)
    return model.predict(norm.normalize_obs(obs), deterministic=True)[0], model, norm


def test_a_fine_tuning_run_starts_from_the_shipped_actor(tmp_path):
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(16, 48)).astype(np.float32)
    shipped, shipped_model, shipped_norm = _actions(POLICY / "model.zip", obs)
    # 100 env steps: 60 played by the loaded actor, then 40 critic-only updates: the actor has not moved
    warm = train(ENV, "sac", steps=100, out=tmp_path / "warm", hyperparams=SMALL, init=POLICY, progress=False)
    acts, model, norm = _actions(warm, obs)
    assert np.array_equal(acts, shipped)
    assert np.array_equal(norm.obs_rms.mean, shipped_norm.obs_rms.mean) and not norm.training
    assert model._n_updates == 40
    std = torch.exp(model.actor.log_std.bias).detach().numpy()
    assert np.allclose(std, 0.1) and not model.actor.log_std.weight.detach().any()
    run = json.loads((tmp_path / "warm" / "run.json").read_text())
    assert run["init"] == str(POLICY / "model.zip") and run["recipe"]["init"]["critic_warmup"] == 40
    assert run["recipe"]["sb3"]["batch_size"] == 32 and run["recipe"]["steps"] == 100
    # 40 more steps: the actor learns
    moved = train(ENV, "sac", steps=140, out=tmp_path / "moved", hyperparams=SMALL, init=POLICY, progress=False)
    assert not np.array_equal(_actions(moved, obs)[0], shipped)


def test_init_errors(tmp_path):
    with pytest.raises(RecipeError, match=r"--init fine-tunes with the sb3 backend and one of \['sac', 'tqc'\]"):
        train(ENV, "ppo", init=POLICY, out=tmp_path)
    with pytest.raises(RecipeError, match=r"no SB3 model there"):
        train(ENV, "sac", init=tmp_path, out=tmp_path)
    with pytest.raises(RecipeError, match=r"the shipped actor does not fit the recipe's actor"):
        train(ENV, "sac", steps=10, init=POLICY, out=tmp_path / "arch", progress=False,
              hyperparams=["sb3.policy_kwargs.net_arch=[32,32]", "eval_every=1000"])
