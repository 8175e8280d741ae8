"""The shipped policies (``training/policies/ENV/``): each folder is complete, ``cenic-gym eval`` plays it from its
own ``run.json`` on the unmodified task, its ONNX export acts like the SB3 model, and the learned policies (Franka,
suction, Go1, Allegro, peg insertion) play held-out episodes as they did when shipped (a few here; 50 per seed in
benchmarks/RESULTS.md)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from cenic_gym import cli

pytest.importorskip("stable_baselines3")

POLICIES = Path(__file__).resolve().parents[1] / "training" / "policies"
FRANKA = POLICIES / "CenicFranka-v0"
# the recipes' policies: env id -> the env options run.json may hold (an action mode; nothing that changes the task;
# the Allegro policy's task is the goal task goal="z" that issue 37 evaluates)
LEARNED = {"CenicFranka-v0": {"action_type", "ee_delta_scale", "ee_delta_origin"}, "CenicSuction-v0": set(),
           "CenicQuadruped-v0": {"action_type"}, "CenicAllegro-v0": {"goal"}, "CenicPegInsertion-v0": set()}
# `cenic-gym eval --seed 424242` of each: episodes per env (a few; 50 per seed in benchmarks/RESULTS.md). The exact
# figures are the host's, not the policy's: OpenBLAS and torch pick their kernels by instruction set, so a host of
# another CPU family rounds differently, and a grasp, a gait or a cube turned by four fingers amplifies that into
# other (equally valid) episodes: the shipped Allegro policy reaches 4 goals in these 3 episodes on an AMD Zen 5
# host and 2 on an Intel one, with the same code. So the test asks for what the shipped held-out figure implies on
# any host: at least success_floor(...) successes (a broken policy or task reaches none).
EVAL_EPISODES = {"CenicFranka-v0": 5, "CenicSuction-v0": 5, "CenicQuadruped-v0": 10, "CenicAllegro-v0": 10,
                 "CenicPegInsertion-v0": 5}
EVAL_RISK = 0.005  # the chance that a policy as good as shipped fails the floor


def success_floor(final, episodes, risk=EVAL_RISK):
    """The fewest successes in ``episodes`` that a policy plays with probability ≥ 1 − risk when its success rate is
    the 95 % lower (Clopper–Pearson) bound of the shipped held-out figure ``final`` (training.json: its episodes and
    success rate, themselves a sample)."""
    from scipy.stats import beta, binom

    n = final["episodes"]
    k = round(final["success_rate"] * n)
    p = float(beta.ppf(0.05, k, n - k + 1)) if k else 0.0
    return int(binom.ppf(risk, episodes, p))


def test_success_floor():
    # 29 of 50 (the shipped Allegro figure): the rate's lower bound is about 0.46, P(no success in 10) = 0.2 %
    assert success_floor({"episodes": 50, "success_rate": 0.58}, 10) == 1
    assert success_floor({"episodes": 50, "success_rate": 1.0}, 5) == 3
    assert success_floor({"episodes": 50, "success_rate": 0.0}, 5) == 0
    assert success_floor({"episodes": 50, "success_rate": 1.0}, 20) > success_floor({"episodes": 50,
                                                                                      "success_rate": 0.5}, 20)


def test_every_policy_folder_is_complete():
    folders = sorted(p for p in POLICIES.iterdir() if p.is_dir())
    assert [p.name for p in folders] == ["CenicAllegro-v0", "CenicFranka-v0", "CenicFrankaGoal-v0",
                                         "CenicPegInsertion-v0", "CenicQuadruped-v0", "CenicSuction-v0"]
    for folder in folders:
        spec = json.loads((folder / "run.json").read_text())
        assert spec["env_id"] == folder.name
        assert (folder / "model.zip").is_file() and (folder / "model.vecnormalize.pkl").is_file()


@pytest.mark.parametrize("env_id", sorted(LEARNED))
def test_learned_policy_evaluates_the_unmodified_task(env_id):
    folder = POLICIES / env_id
    spec = json.loads((folder / "run.json").read_text())
    assert spec["algo"] == "dagger" and spec["env_id"] == env_id
    options = spec["env_kwargs"]
    # default starts, success test, accuracy and episode length: at most an action mode
    assert set(options) <= LEARNED[env_id], options
    for f in ("README.md", "model.onnx", "curve.png", "training.json"):
        assert (folder / f).is_file(), f


@pytest.mark.parametrize("env_id", sorted(LEARNED))
def test_cenic_gym_eval_plays_the_shipped_policy(env_id, capsys):
    """`cenic-gym eval` on held-out seeds, the policy network alone acting: at least the successes its shipped
    held-out figure implies (:func:`success_floor`)."""
    n = EVAL_EPISODES[env_id]
    assert cli.main(["eval", str(POLICIES / env_id / "model.zip"), "--episodes", str(n), "--seed", "424242"]) == 0
    out = capsys.readouterr().out
    assert f"{n} episodes" in out, out
    rate = float(re.search(r"success rate ([0-9.]+)", out).group(1))
    final = json.loads((POLICIES / env_id / "training.json").read_text())["final"]
    assert round(rate * n) >= success_floor(final, n), out
    goals = re.search(r"goals per episode ([0-9.]+)", out)
    if goals:  # each successful episode reached at least one goal
        assert float(goals.group(1)) >= rate, out


@pytest.mark.parametrize("env_id", sorted(LEARNED))
def test_onnx_export_acts_like_the_model(env_id):
    pytest.importorskip("onnxruntime")
    import gymnasium as gym

    from cenic_gym.sim2real.policy import load_policy

    folder = POLICIES / env_id
    spec = json.loads((folder / "run.json").read_text())
    env = gym.make(env_id, **spec["env_kwargs"])
    sb3, onnx = load_policy(str(folder / "model.zip"), env), load_policy(str(folder / "model.onnx"), env)
    obs, _ = env.reset(seed=3)
    for _ in range(30):
        a = sb3(obs)
        np.testing.assert_allclose(onnx(obs), a, atol=1e-5)
        obs, *_ = env.step(a)


def test_sim2real_commands_take_the_env_from_the_policy_run(tmp_path, capsys):
    """`cenic-gym sim2real ... --policy training/policies/ENV/model.zip` needs no --env / --env-kwargs: the policy's
    run.json says which env and options it acts in (export checks the actions on that env's observations)."""
    pytest.importorskip("onnxruntime")
    assert cli.main(["sim2real", "export", str(FRANKA / "model.zip"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "model.onnx").is_file() and "reproduces the original actions" in capsys.readouterr().out
    assert cli.main(["sim2real", "accuracy", "--policy", str(FRANKA / "model.zip"), "--episodes", "1",
                     "--max-steps", "5", "--accuracies", "1e-2", "--fixed-steps", "0.01"]) == 0
    assert "ε = 0.01" in capsys.readouterr().out
