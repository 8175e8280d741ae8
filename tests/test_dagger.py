"""The Franka pick-and-place recipe's parts (CI-sized): the feedback teacher solves the task from the default
starts and from states it did not lead to; DAgger's plumbing (the network fits the teacher, checkpoints, a resumed
run continues bit for bit, evaluation and ONNX export of the saved model); the CLI's per-env default algo."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import cenic_gym  # noqa: F401
from cenic_gym.envs.franka_box import CartesianExpert
from cenic_gym.train import evaluate, get_config, train
from cenic_gym.train.configs import PICK_PLACE_CARTESIAN, default_algo

pytest.importorskip("stable_baselines3")


def _episode(env, policy, seed, steps=200):
    env.reset(seed=seed)
    info = {}
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(policy())
        if terminated or truncated:
            break
    return info


def test_cartesian_teacher_solves_the_plain_task():
    env = gym.make("CenicFranka-v0", **PICK_PLACE_CARTESIAN)
    teacher = CartesianExpert(env)
    assert all(_episode(env, teacher, seed)["is_success"] for seed in (3, 4, 5))


def test_cartesian_teacher_recovers_from_a_perturbed_state():
    """Random actions for 1 s (the arm wanders, the gripper opens and closes), then the teacher takes over: it acts
    from the state it finds, which is what DAgger asks of a teacher."""
    env = gym.make("CenicFranka-v0", **PICK_PLACE_CARTESIAN)
    teacher = CartesianExpert(env)
    rng = np.random.default_rng(0)
    env.reset(seed=11)
    for _ in range(20):
        env.step(rng.uniform(-1, 1, 8).astype(np.float32))
    info = {}
    for _ in range(180):
        _, _, terminated, truncated, info = env.step(teacher())
        if terminated or truncated:
            break
    assert info["is_success"]


def test_cartesian_teacher_rejects_other_action_types():
    with pytest.raises(ValueError, match="ee_delta"):
        CartesianExpert(gym.make("CenicFranka-v0"))
    with pytest.raises(ValueError, match="ee_delta_scale"):
        CartesianExpert(gym.make("CenicFranka-v0", action_type="ee_delta", ee_delta_scale=(0.03, 0.0)))


SMALL = dict(env_kwargs={"max_episode_steps": 60}, eval_every=120, checkpoint_every=120, eval_episodes=1,
             dagger=dict(episodes_per_round=1, gradient_steps=40, batch_size=32))


def _actor_params(path):
    from stable_baselines3 import SAC

    return [p.detach().numpy().copy() for p in SAC.load(path, device="cpu").actor.parameters()]


def test_dagger_fits_checkpoints_resumes_bit_for_bit_and_exports(tmp_path):
    full = train("CenicFranka-v0", "dagger", steps=180, out=tmp_path / "full", hyperparams=SMALL, progress=False)
    run = tmp_path / "full"
    names = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert names == ["dagger_model_120_steps.json", "dagger_model_120_steps.npz", "model_120_steps.zip",
                     "model_vecnormalize_120_steps.pkl"]
    assert (run / "model.vecnormalize.pkl").is_file() and (run / "dagger_model.npz").is_file()
    spec = json.loads((run / "run.json").read_text())
    assert spec["algo"] == "dagger" and spec["env_kwargs"]["action_type"] == "ee_delta"
    ev = np.load(run / "eval" / "evaluations.npz")
    assert list(ev["timesteps"]) == [120, 180] and np.all(np.diff(ev["wall"]) > 0)
    data = np.load(run / "dagger_model.npz")
    assert data["obs"].shape == (180, 49) and data["act"].shape == (180, 8)

    # the network fits the teacher: its actions on the data set are much closer to the labels than at the start
    from stable_baselines3.common.vec_env import VecNormalize

    from cenic_gym.sim2real.policy import load_sb3

    model, norm = load_sb3(full)
    assert isinstance(norm, VecNormalize)
    fitted = model.predict(norm.normalize_obs(data["obs"]), deterministic=True)[0]
    assert np.mean((fitted - data["act"]) ** 2) < 0.5 * np.mean(data["act"] ** 2)

    # a run resumed from the 120-step checkpoint ends with the same network, bit for bit
    resumed = train("CenicFranka-v0", "dagger", steps=180, out=tmp_path / "resumed", hyperparams=SMALL,
                    progress=False, resume=str(run / "checkpoints" / "model_120_steps.zip"))
    for a, b in zip(_actor_params(full), _actor_params(resumed)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.load(tmp_path / "resumed" / "dagger_model.npz")["act"], data["act"])

    result = evaluate(full, episodes=1, seed=5)
    assert 0 < result.lengths[0] <= 60 and np.isfinite(result.mean_return)  # 180 steps of data: may end early

    pytest.importorskip("onnxruntime")
    from cenic_gym.sim2real.export import export_policy

    errors = export_policy(full, tmp_path / "exported", env_id="CenicFranka-v0", env_kwargs=spec["env_kwargs"])
    assert any(str(p).endswith(".onnx") for p in errors) and max(errors.values()) <= 1e-5


def test_dart_noise_moves_the_executed_actions_not_the_labels_and_resumes_bit_for_bit(tmp_path):
    # DART (the Allegro recipe's aid): with the teacher acting, noise perturbs what is executed; the data set records
    # the teacher's clean action at each visited state
    teacher_only = dict(SMALL, checkpoint_every=60, dagger=dict(SMALL["dagger"], beta_decay=1.0))
    noisy = dict(teacher_only, dagger=dict(teacher_only["dagger"], noise=0.3))
    clean = np.load(train("CenicFranka-v0", "dagger", steps=120, out=tmp_path / "clean", hyperparams=teacher_only,
                          progress=False).with_name("dagger_model.npz"))
    full = train("CenicFranka-v0", "dagger", steps=120, out=tmp_path / "noisy", hyperparams=noisy, progress=False)
    data = np.load(full.with_name("dagger_model.npz"))
    # the same start and the same first label (the clean action, not the executed one); the noisy execution leads
    # to another second state
    np.testing.assert_array_equal(data["obs"][0], clean["obs"][0])
    np.testing.assert_array_equal(data["act"][0], clean["act"][0])
    assert np.abs(data["obs"][1] - clean["obs"][1]).max() > 1e-4
    resumed = train("CenicFranka-v0", "dagger", steps=120, out=tmp_path / "resumed", hyperparams=noisy, progress=False,
                    resume=str(tmp_path / "noisy" / "checkpoints" / "model_60_steps.zip"))
    np.testing.assert_array_equal(np.load(resumed.with_name("dagger_model.npz"))["act"], data["act"])
    for a, b in zip(_actor_params(full), _actor_params(resumed)):
        np.testing.assert_array_equal(a, b)


def test_polish_anneals_only_the_last_fit_and_resumes_bit_for_bit(tmp_path):
    """``polish`` (the Allegro recipe's): after the last round's fit, a further fit with the rate annealed. Earlier
    rounds are untouched (the first checkpoint is the unpolished run's, bit for bit), the data set is the same, the
    final network fits it better, the optimizer's rate is back at ``learning_rate`` and a resumed run ends equal."""
    teacher_only = dict(SMALL, checkpoint_every=60, dagger=dict(SMALL["dagger"], beta_decay=1.0))
    polished = dict(teacher_only, dagger=dict(teacher_only["dagger"],
                                              polish=dict(gradient_steps=300, batch_size=64, lr_end=1e-5)))
    plain = train("CenicFranka-v0", "dagger", steps=120, out=tmp_path / "plain", hyperparams=teacher_only,
                  progress=False)
    full = train("CenicFranka-v0", "dagger", steps=120, out=tmp_path / "polished", hyperparams=polished, progress=False)
    first = "checkpoints/model_60_steps.zip"
    for a, b in zip(_actor_params(tmp_path / "plain" / first), _actor_params(tmp_path / "polished" / first)):
        np.testing.assert_array_equal(a, b)
    data = np.load(full.with_name("dagger_model.npz"))
    np.testing.assert_array_equal(data["act"], np.load(plain.with_name("dagger_model.npz"))["act"])

    from cenic_gym.sim2real.policy import load_sb3

    def fit_error(path):
        model, norm = load_sb3(path)
        return np.mean((model.predict(norm.normalize_obs(data["obs"]), deterministic=True)[0] - data["act"]) ** 2)

    assert fit_error(full) < 0.7 * fit_error(plain)
    model, _ = load_sb3(full)
    assert [g["lr"] for g in model.actor.optimizer.param_groups] == [get_config("CenicFranka-v0", "dagger")["dagger"]
                                                                     ["learning_rate"]]
    resumed = train("CenicFranka-v0", "dagger", steps=120, out=tmp_path / "resumed", hyperparams=polished,
                    progress=False, resume=str(tmp_path / "polished" / first))
    for a, b in zip(_actor_params(full), _actor_params(resumed)):
        np.testing.assert_array_equal(a, b)


def test_dagger_config_is_the_plain_task_and_the_default_algo():
    cfg = get_config("CenicFranka-v0", "dagger")
    # trained on the task it is evaluated on; the one training aid is observation noise on the training env
    assert cfg["train_env_kwargs"] == {"obs_noise": 1.0}
    assert not {"max_episode_steps", "accuracy", "obs_noise", "grasped_start", "placed_start"} & set(cfg["env_kwargs"])
    assert default_algo("CenicFranka-v0") == "dagger" and default_algo("CenicFrankaGoal-v0") == "sac"
    # the suction recipe: the plain task, no aid, its own teacher
    cfg = get_config("CenicSuction-v0", "dagger")
    assert cfg["env_kwargs"] == {} and cfg["train_env_kwargs"] == {}
    assert cfg["dagger"]["teacher"] == "cenic_gym.envs.suction_pick:SuctionExpert"
    assert default_algo("CenicSuction-v0") == "dagger"
    # the Go1 joystick: the task's commands and terrain through the gait action mode, no aid, its own teacher
    cfg = get_config("CenicQuadruped-v0", "dagger")
    assert cfg["env_kwargs"] == {"action_type": "gait"} and cfg["train_env_kwargs"] == {}
    assert cfg["dagger"]["teacher"] == "cenic_gym.envs.quadruped:GaitTeacher"
    assert default_algo("CenicQuadruped-v0") == "dagger"
    # the Allegro z-rotation: the goal task goal="z", no aid, cloning its goal-seeking teacher (β = 1 throughout)
    cfg = get_config("CenicAllegro-v0", "dagger")
    assert cfg["env_kwargs"] == {"goal": "z"} and cfg["train_env_kwargs"] == {}
    assert cfg["dagger"]["teacher"] == "cenic_gym.envs.allegro_cube:GoalRotator"
    assert cfg["dagger"]["beta0"] == 1.0 and cfg["dagger"]["beta_decay"] == 1.0
    assert cfg["dagger"]["polish"]["lr_end"] < cfg["dagger"]["learning_rate"]
    assert default_algo("CenicAllegro-v0") == "dagger"
    with pytest.raises(ValueError, match="one env in this process"):
        train("CenicFranka-v0", "dagger", steps=10, workers=1, out="/nonexistent/x", progress=False)


def test_cli_train_without_algo_runs_the_recipe(tmp_path, capsys):
    """`cenic-gym train CenicFranka-v0` (no --algo) runs DAgger; a round is the config's 10 episodes, so --steps 1
    plays one round, fits, evaluates and saves; `cenic-gym eval` plays the result."""
    from cenic_gym import cli

    out = tmp_path / "run"
    assert cli.main(["train", "CenicFranka-v0", "--steps", "1", "--out", str(out), "--no-progress"]) == 0
    spec = json.loads((out / "run.json").read_text())
    assert spec["algo"] == "dagger" and spec["train_env_kwargs"] == {"obs_noise": 1.0}
    assert np.load(out / "dagger_model.npz")["obs"].shape == (2000, 49)
    assert cli.main(["eval", str(out / "model.zip"), "--episodes", "1"]) == 0
    assert "1 episodes" in capsys.readouterr().out
