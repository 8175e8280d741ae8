"""Training smoke (CI): SB3 PPO, SB3 SAC + HER and RLlib PPO for a few thousand env steps each on Ray workers:
finite returns, TensorBoard logs, checkpoints saved, reloaded for evaluation and resumed; the training CLI's
commands and its errors for unknown env / algo / backend."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cenic_gym import cli
from cenic_gym.train import evaluate, get_config, train

ray = pytest.importorskip("ray")
pytest.importorskip("stable_baselines3")

SHORT = {"max_episode_steps": 50}



def _tb_events(folder):
    return list(folder.rglob("events.out.tfevents.*"))


def test_sb3_ppo_smoke(ray_local, tmp_path):
    over = dict(eval_every=1024, checkpoint_every=1024, eval_episodes=1, env_kwargs=SHORT,
                sb3=dict(n_steps=256, batch_size=128, n_epochs=2))
    path = train("CenicFranka-v0", "ppo", "sb3", steps=2048, workers=1, num_envs=2, out=tmp_path, hyperparams=over,
                 progress=False)
    assert path.is_file() and (tmp_path / "run.json").is_file() and _tb_events(tmp_path / "tb")
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    # between two rollouts (the last one ends the run: model.zip); the PPO config normalizes observations
    assert names == ["model_1024_steps.run.pkl", "model_1024_steps.zip", "model_vecnormalize_1024_steps.pkl"]
    assert (tmp_path / "model.vecnormalize.pkl").is_file()  # <stem>.vecnormalize.pkl, as cenic_gym.sim2real reads
    ev = np.load(tmp_path / "eval" / "evaluations.npz")
    assert list(ev["timesteps"]) == [1024, 2048] and np.all(np.isfinite(ev["results"]))
    result = evaluate(path, episodes=2)
    assert len(result.returns) == 2 and all(math.isfinite(r) for r in result.returns)
    assert result.lengths == [50, 50] and 0.0 <= result.success_rate <= 1.0
    # resume from a checkpoint: the step counter continues to the run's total
    from stable_baselines3 import PPO

    again = train("CenicFranka-v0", "ppo", "sb3", steps=1536, workers=1, num_envs=2, out=tmp_path / "resumed",
                  hyperparams=over, resume=str(tmp_path / "checkpoints" / "model_1024_steps.zip"), progress=False)
    assert PPO.load(again).num_timesteps == 1024 + 512


def test_sb3_sac_her_smoke(ray_local, tmp_path):
    over = dict(eval_every=200, checkpoint_every=200, eval_episodes=1, sb3=dict(learning_starts=100, batch_size=64))
    path = train("CenicFrankaGoal-v0", "sac", "sb3", steps=400, workers=1, num_envs=1, out=tmp_path,
                 hyperparams=over, progress=False)
    assert get_config("CenicFrankaGoal-v0", "sac")["env_kwargs"]["task"] == "reach"
    ev = np.load(tmp_path / "eval" / "evaluations.npz")
    assert np.all(np.isfinite(ev["results"])) and ev["successes"].shape == (2, 1)
    result = evaluate(path, episodes=1)
    assert math.isfinite(result.mean_return) and -50.0 <= result.mean_return <= 0.0  # sparse −1/0 over 50 steps


def test_rllib_ppo_smoke(ray_local, tmp_path):
    over = dict(eval_every=500, checkpoint_every=500, eval_episodes=1, env_kwargs=SHORT,
                rllib=dict(train_batch_size_per_learner=500, minibatch_size=125, num_epochs=2))
    path = train("CenicFranka-v0", "ppo", "rllib", steps=1000, workers=1, num_envs=2, out=tmp_path,
                 hyperparams=over, progress=False)
    assert (path / "rllib_checkpoint.json").is_file() and _tb_events(tmp_path / "tb")
    assert len(list((tmp_path / "checkpoints").iterdir())) == 2
    result = evaluate(path, episodes=2)
    assert all(math.isfinite(r) for r in result.returns) and result.lengths == [50, 50]
    again = train("CenicFranka-v0", "ppo", "rllib", steps=500, workers=1, num_envs=2, out=tmp_path / "resumed",
                  hyperparams=over, resume=str(path), progress=False)
    assert math.isfinite(evaluate(again, episodes=1).mean_return)


def test_cli_list_and_bench(capsys):
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["CenicAllegro-v0", "CenicFranka-v0", "CenicFrankaGoal-v0",
                                                   "CenicPegInsertion-v0", "CenicQuadruped-v0", "CenicSuction-v0"]
    assert cli.main(["bench", "CenicFranka-v0", "--steps", "5"]) == 0
    assert "env steps/s" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["train", "Nope-v0"], "argument ENV: invalid choice: 'Nope-v0' (choose from 'CenicAllegro-v0'"),
    (["train", "CenicFranka-v0", "--algo", "dqn"], "argument --algo: invalid choice: 'dqn' (choose from 'ppo', "
                                                   "'sac', 'dagger', 'tqc', 'crossq', 'droq', 'sbx_sac', "
                                                   "'sbx_crossq')"),
    (["train", "CenicFranka-v0", "--algo", "sac", "--hyperparams", "gama=0.9"], "unknown hyperparameter 'gama': "
                                                                               "not a config entry"),
    (["train", "CenicFranka-v0", "--algo", "sac", "--hyperparams", "gamma"], "hyperparameter 'gamma' is not "
                                                                            "KEY=VALUE"),
    (["train", "CenicFranka-v0", "--env-kwargs", "[1]"], "argument --env-kwargs: expected a JSON object of env "
                                                         "options, got '[1]'"),
    (["train", "CenicFranka-v0", "--env-kwargs", "{accuracy: 1}"], "argument --env-kwargs: expected a JSON object"),
    (["train", "CenicFranka-v0", "--algo", "sac", "--env-kwargs", '{"accuracy": -1}'], "env options"),
    (["train", "CenicFranka-v0", "--algo", "ppo", "--init", "training/policies/CenicFranka-v0"],
     "argument --init: fine-tuning runs sac, tqc, got --algo ppo"),
    (["train", "CenicFranka-v0", "--algo", "sac", "--init", "no/such/policy"], "--init 'no/such/policy': no SB3 "
                                                                               "model there"),
    (["train", "CenicFranka-v0", "--backend", "jax"], "argument --backend: invalid choice: 'jax' (choose from "
                                                      "'sb3', 'rllib')"),
    (["train", "CenicFranka-v0", "--backend", "rllib", "--algo", "sac"], "rllib trains ppo only"),
    (["train", "CenicFranka-v0", "--workers", "-1"], "argument --workers: must be an integer >= 0, got '-1'"),
    (["train", "CenicFranka-v0", "--steps", "0"], "argument --steps: must be an integer >= 1, got '0'"),
    (["eval", "no/such/checkpoint.zip"], "argument CHECKPOINT: 'no/such/checkpoint.zip' does not exist"),
    (["eval", "x", "--episodes", "0"], "argument --episodes: must be an integer >= 1, got '0'"),
    (["bench", "Nope-v0"], "argument ENV: invalid choice: 'Nope-v0'"),
])
def test_cli_errors_list_the_choices(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_train_api_errors(tmp_path):
    (tmp_path / "not_a_run").mkdir()
    with pytest.raises(ValueError, match=r"unknown env 'Nope-v0'; choose one of \['CenicAllegro-v0'"):
        train("Nope-v0")
    with pytest.raises(ValueError, match=r"unknown algo 'dqn'; choose one of \['ppo', 'sac', 'dagger', 'tqc', "
                                         r"'crossq', 'droq', 'sbx_sac', 'sbx_crossq'\]"):
        train("CenicFranka-v0", "dqn")
    with pytest.raises(ValueError, match=r"unknown backend 'jax'; choose one of \['sb3', 'rllib'\]"):
        train("CenicFranka-v0", "ppo", "jax")
    with pytest.raises(ValueError, match=r"the rllib backend trains ppo only"):
        train("CenicFranka-v0", "sac", "rllib", out=tmp_path)
    with pytest.raises(ValueError, match=r"unknown hyperparameter 'lr': not a config entry .* nor a keyword argument "
                                         r"of stable_baselines3:PPO"):
        train("CenicFranka-v0", hyperparams={"lr": 1.0})
    with pytest.raises(FileNotFoundError, match=r"no run.json beside or above"):
        evaluate(tmp_path / "not_a_run")


def test_cli_train_then_eval(tmp_path, capsys):
    """`cenic-gym train` (in process, the config's PPO, one rollout) then `cenic-gym eval` of its final model."""
    out = tmp_path / "run"
    assert cli.main(["train", "CenicFranka-v0", "--algo", "ppo", "--steps", "256", "--num-envs", "1",
                     "--out", str(out), "--no-progress"]) == 0
    assert f"final checkpoint: {out / 'model.zip'}" in capsys.readouterr().out
    assert cli.main(["eval", str(out / "model.zip"), "--episodes", "1"]) == 0
    text = capsys.readouterr().out
    assert "1 episodes: return" in text and ("success rate 0.00" in text or "success rate 1.00" in text)


@pytest.mark.parametrize("algo", ["tqc", "crossq", "droq", "sbx_sac", "sbx_crossq"])
def test_every_off_policy_learner_trains_evaluates_and_resumes(tmp_path, algo):
    """Each learner's recipe runs through `train` (a checkpoint, an evaluation, the final model), `evaluate` loads
    what it saved, and a resume continues the step count with the replay buffer."""
    pytest.importorskip("sbx" if algo in ("droq", "sbx_sac", "sbx_crossq") else "sb3_contrib")
    small = ["eval_every=100", "checkpoint_every=100", "eval_episodes=1", "learning_starts=50", "batch_size=32",
             "env_kwargs.max_episode_steps=50", "sb3.policy_kwargs.net_arch=[32, 32]"]
    path = train("CenicSuction-v0", algo, steps=150, out=tmp_path, hyperparams=small, progress=False)
    ev = np.load(tmp_path / "eval" / "evaluations.npz")
    assert list(ev["timesteps"]) == [100, 150] and np.all(np.isfinite(ev["results"])) and ev["updates"][-1] > 0
    assert (tmp_path / "checkpoints" / "model_replay_buffer_100_steps.npz").is_file()
    assert math.isfinite(evaluate(path, episodes=1).mean_return)
    again = train("CenicSuction-v0", algo, steps=200, out=tmp_path, hyperparams=small, progress=False,
                  resume=str(tmp_path))
    ev = np.load(tmp_path / "eval" / "evaluations.npz")
    assert again.is_file() and list(ev["timesteps"]) == [100, 200]  # the 150-step evaluation came after the checkpoint


def test_hyperparams_reach_every_recipe_entry_and_name_bad_keys():
    """`--hyperparams KEY=VALUE`: config entries, dotted paths, learner keywords (short for sb3.KEY), literal
    values, dict updates; errors name the key."""
    from cenic_gym.train.configs import apply_hyperparams

    cfg = apply_hyperparams(get_config("CenicQuadruped-v0", "sac"), "sac",
                            ["gamma=0.98", "sb3.policy_kwargs.net_arch=[64, 64]", "init.std=0.2", "steps=1000",
                             "env_kwargs.accuracy=1e-2", "ent_coef=auto", "eval_every=5_000"])
    assert cfg["sb3"]["gamma"] == 0.98 and cfg["sb3"]["policy_kwargs"] == {"net_arch": [64, 64]}
    assert cfg["init"]["std"] == 0.2 and cfg["steps"] == 1000  # the rest of init kept:
    assert cfg["init"]["critic_warmup"] == get_config("CenicQuadruped-v0", "sac")["init"]["critic_warmup"] == 20_000
    assert cfg["env_kwargs"] == {"action_type": "gait", "accuracy": 1e-2} and cfg["sb3"]["ent_coef"] == "auto"
    assert cfg["eval_every"] == 5000
    cfg = apply_hyperparams(get_config("CenicQuadruped-v0", "sac"), "sac", {"sb3": {"batch_size": 64}})
    assert cfg["sb3"]["batch_size"] == 64 and cfg["sb3"]["gamma"] == 0.99  # a dict updates, keeps the rest
    assert get_config("CenicQuadruped-v0", "sac")["sb3"]["batch_size"] == 256  # the recipe itself is untouched
    for bad, message in [(["gama=1"], r"unknown hyperparameter 'gama': not a config entry"),
                         (["init.x.y=1"], r"hyperparameter 'init.x.y': the recipe has no 'init.x'"),
                         (["steps.x=1"], r"hyperparameter 'steps.x': 'steps' is not a dict"),
                         (["=1"], r"hyperparameter '=1' is not KEY=VALUE"),
                         (["tau=0.1"], r"unknown hyperparameter 'tau'.*sb3_contrib:CrossQ")]:
        algo = "crossq" if "tau" in bad[0] else "sac"
        with pytest.raises(ValueError, match=message):
            apply_hyperparams(get_config("CenicQuadruped-v0", algo), algo, bad)
