"""Sim-to-real toolkit (issue 16), end to end on tiny policies: the scripted expert, a PPO trained for 128 steps,
its ONNX / TorchScript exports. Accuracy sweep, robustness perturbations (each checked against its analytic
effect), log replay (a log made by our simulator at ε = 1e-5 replays exactly; bad logs name the problem), export
(actions reproduced to 1e-5; a wrong normalization is caught), the standalone runtime, the report CLI.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cenic_gym import cli
from cenic_gym.sim2real import accuracy, replay, robustness
from cenic_gym.sim2real.policy import Policy, load_policy
from cenic_gym.sim2real.rollout import make_env, run_episode

ENV = "CenicFranka-v0"
EXAMPLE = Path(replay.__file__).parent / "data" / "franka_example_log.csv"
RUNTIME = Path(replay.__file__).parent / "runtime.py"
JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8)) + ("panda_finger_joint1",)


@pytest.fixture(scope="module")
def scripted():
    return load_policy("scripted", ENV)


# -- policies ---------------------------------------------------------------------------------------------------
def test_load_policy_kinds_and_bad_specs(scripted, tmp_path):
    assert isinstance(scripted, Policy)
    assert load_policy("scripted", "CenicAllegro-v0").name == "scripted (ScriptedRotator)"
    assert load_policy("scripted", "CenicSuction-v0").name == "scripted (ScriptedPicker)"
    with pytest.raises(ValueError, match="no scripted policy for 'CartPole-v1'"):
        load_policy("scripted", "CartPole-v1")
    with pytest.raises(ValueError, match="'trot' drives CenicQuadruped-v0, not CenicFranka-v0"):
        load_policy("trot", "CenicFranka-v0")
    with pytest.raises(ValueError, match="'nope.zip': not 'scripted', not an RLlib checkpoint folder and no such file"):
        load_policy("nope.zip")
    (tmp_path / "p.txt").write_text("x")
    with pytest.raises(ValueError, match="unknown file type '.txt'"):
        load_policy(tmp_path / "p.txt")
    (tmp_path / "p.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="is not a Stable-Baselines3 model file"):
        load_policy(tmp_path / "p.zip")


# -- accuracy sweep ---------------------------------------------------------------------------------------------
def test_accuracy_sweep_end_to_end(scripted):
    sweep = accuracy.accuracy_sweep(ENV, scripted, [0], accuracies=(1e-2, 1e-4), fixed_steps=(0.01,), max_steps=6)
    labels = [r.label for r in sweep.rows]
    assert labels == ["ε = 0.01", "ε = 0.0001", "fixed δt = 0.01 s"]
    assert sweep.reference == "ε = 0.0001"
    rows = {r.label: r for r in sweep.rows}
    assert rows["ε = 0.0001"].divergence.tolist() == [0.0]  # the reference against itself
    # looser settings end elsewhere, but within the arm's motion over 0.3 s
    assert 0 < rows["ε = 0.01"].divergence[0] < 0.05
    assert 0 < rows["fixed δt = 0.01 s"].divergence[0] < 0.05
    assert all(r.summary["mean_steps"] == 6 for r in sweep.rows)
    table = accuracy.sweep_table(sweep)
    assert "| ε = 0.01 |" in table and "Not flagged" in table


def test_numerical_artifact_flag():
    rates = {"ε = 0.1": 0.9, "ε = 0.01": 0.5, "ε = 1e-05": 0.4, "fixed δt = 0.05 s": 0.65}
    assert accuracy.flag_loose_success(rates, "ε = 1e-05", 0.2) == ["ε = 0.1", "fixed δt = 0.05 s"]
    assert accuracy.flag_loose_success(rates, "ε = 1e-05", 0.5) == []
    with pytest.raises(ValueError, match=r"accuracies must be numbers in \(0, 1\], got 0"):
        accuracy.accuracy_sweep(ENV, None, [0], accuracies=(1e-3, 0))
    with pytest.raises(ValueError, match="env_kwargs must not set 'accuracy'"):
        accuracy.accuracy_sweep(ENV, None, [0], env_kwargs=dict(accuracy=1e-3))


# -- robustness -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def franka():
    env = make_env(ENV)
    env.reset(seed=0)
    return env


def test_push_gives_impulse_over_mass(franka):
    """A horizontal impulse p at the box's origin (its centre of mass) changes its velocity by p / m, and nothing
    else (the box is a free body, not coupled to the arm in M)."""
    sim = franka.unwrapped.sim
    franka.reset(seed=0)
    v0 = sim.v.copy()
    m = sim.body_inertia("box")[0]
    p = np.array([0.03, -0.04, 0.0])
    robustness.apply_impulse(sim, "box", p)
    dv = sim.v - v0
    box = sim.system.v_slice("box")
    np.testing.assert_allclose(dv[box][:3], p / m, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.delete(dv, np.arange(box.start, box.start + 3)), 0.0, atol=1e-14)


def test_perturbations_scale_the_simulator(franka):
    u = franka.unwrapped
    franka.reset(seed=1)
    sim = u.sim
    mu0 = [sim.geometry_material(i)["mu_static"] for i in range(len(sim.system.geometries))]
    m0 = sim.body_inertia("box")[0]
    kp0, kd0, lim0 = u.arm.kp.copy(), u.arm.kd.copy(), u.arm.effort_limit.copy()
    glim0 = u.grip.effort_limit.copy()
    robustness.Perturbation(gain_scale=1.5, effort_scale=0.5, friction_scale=0.8, mass_scale=2.0).apply(franka)
    np.testing.assert_allclose([sim.geometry_material(i)["mu_static"] for i in range(len(mu0))], 0.8 * np.array(mu0))
    np.testing.assert_allclose([sim.geometry_material(i)["mu_dynamic"] for i in range(len(mu0))],
                               0.8 * np.array(mu0))
    assert sim.body_inertia("box")[0] == pytest.approx(2.0 * m0)
    np.testing.assert_allclose(u.arm.kp, 1.5 * kp0)
    np.testing.assert_allclose(u.arm.kd, 1.5 * kd0)
    np.testing.assert_allclose(u.arm.effort_limit, 0.5 * lim0)
    np.testing.assert_allclose(u.grip.effort_limit, 0.5 * glim0)
    franka.reset(seed=1)  # the reset restores the nominal model
    assert sim.body_inertia("box")[0] == pytest.approx(m0)
    np.testing.assert_allclose(u.arm.effort_limit, lim0)


def test_perturbation_draws_are_reproducible_and_in_range():
    for family in ("gain", "friction", "mass"):
        fs = [robustness.sample_perturbation(family, 0.5, np.random.default_rng([s, 2, 1]), 100).describe()
              for s in range(50)]
        key = {"gain": "gain_scale", "friction": "friction_scale", "mass": "mass_scale"}[family]
        vals = np.array([f[key] for f in fs])
        assert np.all((vals >= 1 / 1.5) & (vals <= 1.5)) and vals.min() < 0.85 and vals.max() > 1.2
    a = robustness.sample_perturbation("push", 0.2, np.random.default_rng([3, 6, 2]), 100, "box").describe()
    b = robustness.sample_perturbation("push", 0.2, np.random.default_rng([3, 6, 2]), 100, "box").describe()
    assert a == b and a["family"] == "push" and 0 <= a["push"]["step"] < 100
    assert np.linalg.norm(a["push"]["impulse"]) == pytest.approx(0.2)
    eff = robustness.sample_perturbation("effort_limit", 0.5, np.random.default_rng(0), 10).effort_scale
    assert 0.5 <= eff <= 1.0
    for family, levels, match in (("action_delay", (0, 1.5), "action_delay: level 1.5 out of range"),
                                  ("effort_limit", (0, 1.0), "effort_limit: level 1.0 out of range"),
                                  ("mass", (-0.1,), "mass: level -0.1 out of range"),
                                  ("wind", (1,), "unknown perturbation family 'wind'")):
        with pytest.raises(ValueError, match=match):
            robustness.check_levels(family, levels)


def test_robustness_sweep_end_to_end_logs_seed_and_draw(scripted):
    res = robustness.robustness_sweep(ENV, scripted, [0, 1], families={"action_delay": (0, 2), "mass": (0, 1.0),
                                                                       "push": (0.3,)}, max_steps=4)
    assert list(res) == ["action_delay", "mass", "push"]
    eps = res["mass"].episodes[1]
    assert [e.seed for e in eps] == [0, 1]
    assert all(e.perturbation["family"] == "mass" and "mass_scale" in e.perturbation for e in eps)
    assert eps[0].perturbation["mass_scale"] != eps[1].perturbation["mass_scale"]  # drawn per episode
    assert res["push"].episodes[0][0].perturbation["push"]["body"] == "box"
    # the same seed and family/level reproduce the draw, whichever other families run
    again = robustness.robustness_sweep(ENV, scripted, [0], families={"mass": (0, 1.0)}, max_steps=4)
    assert again["mass"].episodes[1][0].perturbation == eps[0].perturbation
    assert again["mass"].episodes[1][0].q.tolist() == eps[0].q.tolist()
    json.dumps([e.row() for e in eps])  # loggable
    assert "| action_delay | 0, 2 |" in robustness.robustness_table(res)


def test_tolerated_levels():
    def fam(name, levels, rates):
        return robustness.FamilyResult(name, levels, [dict(success_rate=r) for r in rates], [])

    res = {"a": fam("a", (0, 1, 2, 3), (1.0, 0.95, 0.5, 0.95)), "b": fam("b", (0.0, 0.5), (0.4, 0.0)),
           "c": fam("c", (0.0, 0.1), (0.8, 0.8))}
    assert robustness.tolerated_levels(res) == {"a": 1, "b": 0.0, "c": 0.1}


# -- log replay -------------------------------------------------------------------------------------------------
def test_log_made_by_our_simulator_replays_within_the_requested_accuracy(scripted, tmp_path):
    """A log recorded at ε = 1e-5 replays (same controller, same commands) to within 1e-5 at ε = 1e-5 — in fact
    exactly: the replay path is the env's own; at looser ε the tracking error is the integration error, which
    shrinks as ε tightens."""
    log = replay.record_log(make_env(ENV, accuracy=1e-5), scripted, seed=2, max_steps=30)
    assert log.joints == JOINTS and log.q.shape == (31, 8) and set(log.poses) == {"box"}
    log.save(tmp_path / "log.npz")
    log.save(tmp_path / "log.csv")
    for path in ("log.npz", "log.csv"):
        r = replay.replay(ENV, tmp_path / path, accuracy=1e-5, seed=5)  # another seed: the log sets the start
        s = r.summary()
        assert s["rows"] == 31 and s["sim_failure"] is None
        assert s["max_q_err"] <= 1e-5 and s["max_v_err"] <= 1e-4 and s["max_pose_err"]["box"] <= 1e-5, s
    loose = [replay.replay(ENV, log, accuracy=a).summary()["max_q_err"] for a in (1e-2, 1e-4)]
    assert 1e-5 < loose[1] < loose[0] < 0.05, loose


def test_shipped_example_log_replays(tmp_path):
    log = replay.load_log(EXAMPLE, JOINTS)
    assert log.q.shape == (101, 8) and np.all(np.diff(log.t) > 0)
    r = replay.replay(ENV, EXAMPLE, accuracy=1e-5)
    assert r.summary()["max_q_err"] <= 1e-5


def _write_csv(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(str(x) for x in r) for r in rows]) + "\n")
    return path


def _good_columns():
    return ["t"] + [f"{k}/{j}" for k in ("q", "v", "cmd") for j in JOINTS]


def _rows(T=3):
    return [[0.05 * i] + [0.1] * 24 for i in range(T)]


@pytest.mark.parametrize("case, match", [
    ("missing", r"missing columns \['cmd/panda_joint3'\]"),
    ("nan", r"NaN or inf in column 'v/panda_joint2' at row 1"),
    ("time", r"time is not strictly increasing: row 2 has t = 0.05 after t = 0.05"),
    ("extra_joint", r"wrong joint count: columns \['cmd/panda_finger_joint2', 'q/panda_finger_joint2', "
                    r"'v/panda_finger_joint2'\]"),
    ("too_few", r"wrong joint count: 7 'q/' columns, the env controls 8 joints"),
    ("one_row", r"1 row\(s\); a replay needs at least 2"),
    ("text", r"row 1, column 'q/panda_joint1': 'abc' is not a number"),
    ("quat", r"pose/box quaternion at row 0 has norm 2, expected 1"),
])
def test_bad_csv_logs_name_the_problem(tmp_path, case, match):
    header, rows = _good_columns(), _rows()
    if case == "missing":
        i = header.index("cmd/panda_joint3")
        header.pop(i)
        rows = [r[:i] + r[i + 1:] for r in rows]
    elif case == "nan":
        rows[1][header.index("v/panda_joint2")] = "nan"
    elif case == "time":
        rows[2][0] = 0.05
    elif case == "extra_joint":
        header += [f"{k}/panda_finger_joint2" for k in ("q", "v", "cmd")]
        rows = [r + [0.0] * 3 for r in rows]
    elif case == "too_few":
        keep = [i for i, h in enumerate(header) if not h.endswith("finger_joint1")]
        header, rows = [header[i] for i in keep], [[r[i] for i in keep] for r in rows]
    elif case == "one_row":
        rows = rows[:1]
    elif case == "text":
        rows[0][1] = "abc"
    elif case == "quat":
        header += [f"pose/box/{c}" for c in replay.POSE]
        rows = [r + [0.5, 0, 0.1, 0, 0, 0, 2.0] for r in rows]
    with pytest.raises(replay.LogError, match=match):
        replay.load_log(_write_csv(tmp_path / "bad.csv", header, rows), JOINTS)


def test_bad_npz_logs_name_the_problem(tmp_path):
    T = 4
    good = dict(t=np.arange(T) * 0.05, q=np.zeros((T, 8)), v=np.zeros((T, 8)), cmd=np.zeros((T, 8)))
    cases = [(dict(good, q=np.zeros((T, 9))), r"wrong joint count: 'q' has 9 columns, the env controls 8 joints"),
             ({k: v for k, v in good.items() if k != "v"}, r"missing keys \['v'\]"),
             (dict(good, cmd=np.where(np.eye(T, 8) > 0, np.inf, 0.0)),
              r"NaN or inf in column 'cmd/panda_joint1' at row 0"),
             (dict(good, t=np.array([0, 0.1, 0.05, 0.2])), r"time is not strictly increasing: row 2"),
             (dict(good, joints=np.array(JOINTS[::-1])), r"do not match the env's controlled joints"),
             (dict(good, **{"pose/box": np.zeros((T, 6))}), r"pose/box has shape \(4, 6\), expected \(4, 7\)")]
    for i, (arrays, match) in enumerate(cases):
        np.savez(tmp_path / f"bad{i}.npz", **arrays)
        with pytest.raises(replay.LogError, match=match):
            replay.load_log(tmp_path / f"bad{i}.npz", JOINTS)
    with pytest.raises(replay.LogError, match="unknown log format '.txt'"):
        (tmp_path / "x.txt").write_text("t\n0\n")
        replay.load_log(tmp_path / "x.txt", JOINTS)
    with pytest.raises(replay.LogError, match="no log file"):
        replay.load_log(tmp_path / "none.csv", JOINTS)


def test_replay_cli_rejects_a_bad_log(tmp_path):
    header, rows = _good_columns(), _rows()
    rows[1][5] = "nan"
    bad = _write_csv(tmp_path / "bad.csv", header, rows)
    with pytest.raises(SystemExit,
                       match=r"cenic-gym sim2real replay: .*NaN or inf in column 'q/panda_joint5' at row 1"):
        cli.main(["sim2real", "replay", str(bad)])


# -- export and runtime -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_ppo(tmp_path_factory):
    """PPO on CenicFranka-v0 for 128 steps (32-step episodes) with VecNormalize: a tiny trained policy."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("ppo")
    venv = VecNormalize(DummyVecEnv([lambda: make_env(ENV, max_episode_steps=32)]), norm_reward=False)
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=32, n_epochs=1, policy_kwargs=dict(net_arch=[32, 32]),
                seed=0, device="cpu")
    model.learn(128)
    model.save(folder / "tiny.zip")
    venv.save(folder / "tiny.vecnormalize.pkl")
    assert np.any(venv.obs_rms.var != 1.0)  # statistics to fold in
    return folder / "tiny.zip"


def test_export_reproduces_actions_and_catches_a_wrong_normalization(tiny_ppo, tmp_path, capsys):
    from cenic_gym.sim2real import export
    from cenic_gym.sim2real.policy import OnnxPolicy, SB3Policy, load_sb3

    assert cli.main(["sim2real", "export", str(tiny_ppo), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tiny.onnx: reproduces the original actions to" in out and "tiny.pt: reproduces" in out
    model, norm = load_sb3(tiny_ppo)
    original = SB3Policy(model, norm)
    env = make_env(ENV)
    obs = export.collect_observations(env, original, [3], 20)
    actions = np.array([original(o) for o in obs])
    assert np.ptp(actions) > 1e-3  # the policy's actions vary: the comparison is not trivial
    for kind in ("onnx", "pt"):
        exported = load_policy(tmp_path / f"tiny.{kind}")
        assert export.check_export(original, exported, obs, tol=1e-5) <= 1e-5
    # the same network exported without its observation statistics does not pass the check
    export.export_onnx(export.folded_module(model, None), obs.shape[1], tmp_path / "raw.onnx")
    with pytest.raises(ValueError, match=r"exported policy differs from the original by .* > tol 1e-05"):
        export.check_export(original, OnnxPolicy(tmp_path / "raw.onnx"), obs, tol=1e-5)


def test_standalone_runtime_needs_no_training_stack(tiny_ppo, tmp_path):
    from cenic_gym.sim2real.export import collect_observations
    from cenic_gym.sim2real.policy import SB3Policy, load_sb3

    assert cli.main(["sim2real", "export", str(tiny_ppo), "--out", str(tmp_path)]) == 0
    model, norm = load_sb3(tiny_ppo)
    original = SB3Policy(model, norm)
    obs = collect_observations(make_env(ENV), original, [4], 10)
    np.savetxt(tmp_path / "obs.csv", obs, delimiter=",", fmt="%.9g")
    probe = (f"import runpy, sys; sys.argv = ['runtime.py', {str(tmp_path / 'tiny.onnx')!r}, "
             f"{str(tmp_path / 'obs.csv')!r}, '-o', {str(tmp_path / 'act.csv')!r}]\n"
             f"try:\n    runpy.run_path({str(RUNTIME)!r}, run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
             "('torch', 'stable_baselines3', 'cenic_gym', 'ray', 'gymnasium', 'pinocchio'))\n"
             "print('IMPORTED', bad)")
    res = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "IMPORTED []" in res.stdout, res.stdout
    actions = np.loadtxt(tmp_path / "act.csv", delimiter=",", ndmin=2)
    expected = np.array([original(o) for o in np.loadtxt(tmp_path / "obs.csv", delimiter=",", dtype=np.float32)])
    np.testing.assert_allclose(actions, expected, atol=1e-5)


def test_report_cli_with_an_exported_policy(tiny_ppo, tmp_path, capsys):
    assert cli.main(["sim2real", "export", str(tiny_ppo), "--out", str(tmp_path)]) == 0
    out = tmp_path / "report"
    assert cli.main(["sim2real", "report", "--policy", str(tmp_path / "tiny.onnx"), "--episodes", "1",
                     "--max-steps", "3", "--accuracies", "1e-2", "1e-3", "--fixed-steps", "0.01",
                     "--families", "gain", "action_delay", "--out", str(out), "--log", str(EXAMPLE)]) == 0
    md = (out / "report.md").read_text()
    assert md.startswith("# Sim-to-real report: tiny on CenicFranka-v0")
    for part in ("## Summary", "- Accuracy: not flagged", "- Robustness (largest level", "## Accuracy sweep",
                 "| ε = 0.01 |", "| gain | 0, 0.25, 0.5, 1 |", "## Log replay",
                 "| ε = 1e-05 | 101 |"):
        assert part in md, part
    for png in ("accuracy.png", "robustness.png", "replay.png", "sim2sim.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    peers = ["mujoco", "drake"] if importlib.util.find_spec("pydrake") else ["mujoco"]  # CI: Drake not installed
    assert len(lines) == 3 + 2 * 4 + len(peers)
    assert {x["sweep"] for x in lines} == {"accuracy", "robustness", "sim2sim"}
    assert [x["peer"] for x in lines if x["sweep"] == "sim2sim"] == peers
    assert "## Sim-to-sim (MuJoCo, Drake)" in md and "| CenicFranka-v0 | tiny | MuJoCo 0.001 s, implicitfast | 1 |" in md
    if "drake" in peers:
        assert "| CenicFranka-v0 | tiny | Drake SAP (lagged) 0.001 s | 1 |" in md
    else:
        assert "drake: skipped, the package is not installed (`pip install 'cenic-gym[peers]'`)." in md


def test_sb3_policy_runs_in_an_episode(tiny_ppo):
    policy = load_policy(tiny_ppo, ENV)
    r = run_episode(make_env(ENV), policy, seed=0, max_steps=3)
    assert r.steps == 3 and np.all(np.isfinite(r.q))


# -- sim-to-sim (MuJoCo; slow, needs the peers extra) -----------------------------------------------------------
@pytest.mark.slow
def test_mujoco_twin_converges_to_cenic_in_free_motion(scripted):
    """The MuJoCo twin of benchmarks/sim2real_mujoco.py (scene generated from our model, same control laws) on the
    expert's first 1.2 s (the arm moves above the box, no contact): both integrate the same rigid-body dynamics,
    so the gap between MuJoCo's log (0.5 ms steps) and its replay in cenic-gym shrinks as ε tightens."""
    pytest.importorskip("mujoco")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import sim2real_mujoco as smj

    env = make_env(ENV, accuracy=1e-5)
    own = replay.record_log(env, scripted, seed=0, max_steps=24)
    mj, unstable = smj.mujoco_log(env, own, dt=5e-4)
    assert not unstable
    gaps = [replay.replay(ENV, mj, accuracy=a).summary()["max_q_err"] for a in (1e-4, 1e-6)]
    assert gaps[1] < 0.3 * gaps[0] and gaps[1] < 1e-3, gaps


@pytest.fixture(scope="module")
def tiny_rllib(tmp_path_factory):
    """An RLlib PPO RLModule (new API stack, 32×32, untrained weights) for CenicFranka-v0's spaces, saved as a
    checkpoint folder with observation statistics beside it."""
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    torch.manual_seed(0)
    env = make_env(ENV)
    module = RLModuleSpec(module_class=DefaultPPOTorchRLModule, observation_space=env.observation_space,
                          action_space=env.action_space, model_config={"fcnet_hiddens": [32, 32]}).build()
    folder = tmp_path_factory.mktemp("rllib") / "franka_rllib"
    module.save_to_path(str(folder))
    rng = np.random.default_rng(0)
    n = env.observation_space.shape[0]
    np.savez(folder / "obs_normalization.npz", mean=rng.normal(size=n).astype(np.float32),
             std=rng.uniform(0.5, 2.0, n).astype(np.float32))
    return folder


def test_rllib_export_reproduces_actions(tiny_rllib, tmp_path, capsys):
    from cenic_gym.sim2real import export
    from cenic_gym.sim2real.policy import RLlibPolicy, load_rllib

    policy = load_policy(tiny_rllib, ENV)
    assert isinstance(policy, RLlibPolicy) and policy.obs_mean is not None
    assert cli.main(["sim2real", "export", str(tiny_rllib), "--out", str(tmp_path)]) == 0
    assert "franka_rllib.onnx: reproduces the original actions to" in capsys.readouterr().out
    obs = export.collect_observations(make_env(ENV), policy, [1], 15)
    assert np.ptp(np.array([policy(o) for o in obs])) > 1e-3
    for kind in ("onnx", "pt"):
        assert export.check_export(policy, load_policy(tmp_path / f"franka_rllib.{kind}"), obs, tol=1e-5) <= 1e-5
    module, _, _ = load_rllib(tiny_rllib)  # without its observation statistics it is another policy
    with pytest.raises(ValueError, match="exported policy differs from the original"):
        export.check_export(policy, RLlibPolicy(module), obs, tol=1e-5)


def test_cli_env_kwargs(tmp_path, capsys):
    """--env-kwargs reaches the env: a 2-step action delay makes the expert's first steps differ, and a bad value
    is named."""
    log = tmp_path / "log.csv"
    assert cli.main(["sim2real", "record", "--policy", "scripted", "--max-steps", "5", "--accuracy", "1e-3",
                     "--env-kwargs", '{"action_delay": 2}', "--out", str(log)]) == 0
    delayed = replay.load_log(log, JOINTS)
    plain = replay.record_log(make_env(ENV, accuracy=1e-3), load_policy("scripted", ENV), seed=0, max_steps=5)
    assert not np.allclose(delayed.cmd, plain.cmd)
    np.testing.assert_array_equal(delayed.cmd[0, :7], delayed.q[0, :7])  # nothing applied yet: targets = start
    with pytest.raises(SystemExit):
        cli.main(["sim2real", "accuracy", "--policy", "scripted", "--env-kwargs", "[1]"])
    assert "expected a JSON object of env options, got '[1]'" in capsys.readouterr().err


def test_goal_conditioned_sb3_policy_is_evaluated_and_exported(tmp_path, capsys):
    """A SAC on the goal-conditioned (dict observation) form runs in the sweeps and exports (the CLI with
    --env-kwargs), its per-key observation statistics folded in."""
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from cenic_gym.sim2real import export

    torch.set_num_threads(1)
    kw = dict(goal_conditioned=True, task="reach", reward_type="dense")
    venv = VecNormalize(DummyVecEnv([lambda: make_env(ENV, max_episode_steps=16, **kw)]), norm_reward=False)
    model = SAC("MultiInputPolicy", venv, learning_starts=16, batch_size=16, policy_kwargs=dict(net_arch=[16]),
                seed=0, device="cpu")
    model.learn(24)
    model.save(tmp_path / "sac.zip")
    venv.save(tmp_path / "sac.vecnormalize.pkl")
    policy = load_policy(tmp_path / "sac.zip", ENV)
    sweep = accuracy.accuracy_sweep(ENV, policy, [0], accuracies=(1e-3,), fixed_steps=(), env_kwargs=kw,
                                    max_steps=3)
    assert sweep.rows[0].summary["mean_steps"] == 3
    assert cli.main(["sim2real", "export", str(tmp_path / "sac.zip"), "--out", str(tmp_path / "out"),
                     "--env-kwargs", json.dumps(kw)]) == 0
    assert "sac.onnx: reproduces the original actions" in capsys.readouterr().out
    obs = export.collect_observations(make_env(ENV, **kw), policy, [5], 4)
    assert export.check_export(policy, load_policy(tmp_path / "out" / "sac.onnx"), obs) <= 1e-5


def test_sac_her_model_loads_without_its_env_and_acts_as_trained(tmp_path):
    """An SB3 SAC + HER model (what `cenic-gym train CenicFrankaGoal-v0 --algo sac` saves) loads for evaluation
    without an env (SB3 itself refuses: HER needs one) and gives the trained model's deterministic actions."""
    import torch
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    torch.set_num_threads(1)
    kw = dict(goal_conditioned=True, task="reach", reward_type="sparse", max_episode_steps=8)
    venv = VecNormalize(DummyVecEnv([lambda: make_env(ENV, **kw)]), norm_reward=False)
    model = SAC("MultiInputPolicy", venv, learning_starts=16, batch_size=16, policy_kwargs=dict(net_arch=[16]),
                replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=dict(n_sampled_goal=2), seed=0,
                device="cpu")
    model.learn(24)
    model.save(tmp_path / "her.zip")
    venv.save(tmp_path / "her.vecnormalize.pkl")
    with pytest.raises(AssertionError, match="HerReplayBuffer"):
        SAC.load(tmp_path / "her.zip", device="cpu")  # why load_sb3 drops the replay buffer settings
    policy = load_policy(tmp_path / "her.zip", ENV)
    assert policy.model.replay_buffer_class is not HerReplayBuffer
    env = make_env(ENV, **kw)
    obs, _ = env.reset(seed=3)
    expected = model.predict(venv.normalize_obs(obs), deterministic=True)[0]
    np.testing.assert_array_equal(policy(obs), expected)
    sweep = accuracy.accuracy_sweep(ENV, policy, [0], accuracies=(1e-3,), fixed_steps=(), env_kwargs=kw,
                                    max_steps=2)
    assert sweep.rows[0].summary["mean_steps"] == 2
    # exported with its dict observations flattened (layout in the files), normalization folded in, checked to 1e-5
    from cenic_gym.sim2real import export

    errors = export.export_policy(tmp_path / "her.zip", tmp_path / "out", ENV, steps=6, env_kwargs=kw)
    assert sorted(Path(p).name for p in errors) == ["her.onnx", "her.pt"] and max(errors.values()) <= 1e-5
    onnx_policy = load_policy(tmp_path / "out" / "her.onnx")
    assert [k for k, _ in onnx_policy.runtime.obs_layout] == list(env.observation_space.spaces)
    np.testing.assert_allclose(onnx_policy(obs), expected, atol=1e-5)
    np.testing.assert_allclose(load_policy(tmp_path / "out" / "her.pt")(obs), expected, atol=1e-5)
    with pytest.raises(ValueError, match="no entry 'desired_goal'"):
        onnx_policy({k: v for k, v in obs.items() if k != "desired_goal"})


def test_sac_export_reproduces_actions(tmp_path):
    """SAC's squashed Gaussian actor (the off-policy path of folded_module): exported and checked to 1e-5."""
    import torch
    from stable_baselines3 import SAC

    from cenic_gym.sim2real import export

    torch.set_num_threads(1)
    model = SAC("MlpPolicy", make_env(ENV, max_episode_steps=16), learning_starts=16, batch_size=16,
                policy_kwargs=dict(net_arch=[16]), seed=0, device="cpu")
    model.learn(24)
    model.save(tmp_path / "sac.zip")
    errors = export.export_policy(tmp_path / "sac.zip", tmp_path / "out", ENV, steps=10)
    assert sorted(Path(p).name for p in errors) == ["sac.onnx", "sac.pt"]
    assert max(errors.values()) <= 1e-5
