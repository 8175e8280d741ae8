"""The Franka pick-and-place recipe, three seeds: learning curves, held-out success, and the shipped policy.

    python benchmarks/learning_franka.py [--seeds 0 1 2] [--parallel 2] [--episodes 50] [--plot-only] [--note TEXT]

Each seed runs exactly what a user runs, ``cenic-gym train CenicFranka-v0 --seed S`` (the env's default recipe:
``CONFIGS["CenicFranka-v0"]["dagger"]``), in its own process, ``--parallel`` of them at a time (one thread each),
into ``runs/learning_franka/seedS``; an interrupted seed continues from its last checkpoint (``--resume``), a
finished one is kept. Then each final ``model.zip`` plays ``--episodes`` held-out episodes of the UNMODIFIED task
(seeds 10 000, 10 001, …: default starts, success test and accuracy 1e-3, the network alone acting; what
``cenic-gym eval`` does). The recipe: DAgger from the feedback teacher ``CartesianExpert``, which reads the
simulator's state, while the network sees only the observation; the one training aid is the task's observation
noise on the training env (the network learns from noisy observations, the teacher reads the true state;
evaluation without noise).

FetchPickAndPlace-v4's runs (``benchmarks/fetch_pick_place.py``, in its own venv: the same DAgger code,
hyperparameters and env-step budget on Gymnasium-Robotics' MuJoCo task, 50-step episodes, success = the cube within
5 cm of the goal, in the air for half of the episodes, still held allowed) are shown beside them when
``benchmarks/learning_franka.json`` holds them.

Writes ``benchmarks/learning_franka.{json,png}``, the RESULTS.md section ``franka-learning``, and ships the best
seed's model to ``training/policies/CenicFranka-v0/`` (``model.zip``, its normalizer, ``run.json``, the ONNX export
and the generated part of its README). About 15 min on 2 cores (three seeds, two at a time); ``--plot-only``
rebuilds the plots and the section from the JSON in seconds. Wall times are reported, so run it on an otherwise
idle machine (or say what else ran with ``--note``).
"""
from __future__ import annotations

import json
import os
import shlex
import sys
import time


from bench_common import provenance, write_section
from learning_common import (FINAL_SEED, Benchmark, arg_parser, best_seed, evaluate_seeds, median_success,
                             plot_curves, scripted_eval, seed_lines, ship, stamp, stamp_note, steps_to, table,
                             train_seeds)

ENV_ID = "CenicFranka-v0"
FETCH_ID = "FetchPickAndPlace-v4"
BENCH = Benchmark(ENV_ID, "learning_franka")
OUT, POLICY = BENCH.out, BENCH.policy


def plot(data, path):
    lines = [line for env_id, style in ((ENV_ID, "-"), (FETCH_ID, "--")) if env_id in data
             for line in seed_lines(env_id, data[env_id]["runs"], style, env_id == ENV_ID)]  # Fetch: sparse returns
    plot_curves(lines, path, "DAgger from a feedback teacher: CenicFranka-v0 pick-and-place (solid), "
                "FetchPickAndPlace-v4 (dashed)\nperiodic evaluations: 10 held-out episodes of the unmodified task, "
                "the network alone", f"{ENV_ID} evaluation return (200 steps)")


def section(data, plot_only=False):
    from cenic_gym.train import get_config

    cfg = get_config(ENV_ID, "dagger")
    ours = data[ENV_ID]
    d = cfg["dagger"]
    lines = provenance("benchmarks/learning_franka.py", ours["command"], ours["runtime_s"], ours["load0"],
                       ("stable-baselines3", "torch", "gymnasium", "numba"), note=stamp_note(ours, plot_only))
    t = ours["teacher"]
    lines += [
        f"Recipe: `cenic-gym train {ENV_ID} --seed S` (`dagger`, `PICK_PLACE_DAGGER` in `cenic_gym/train/configs.py`): "
        "DAgger from the feedback teacher `CartesianExpert` (reads the simulator's state); the network (SB3 SAC "
        f"actor, {cfg['sb3']['policy_kwargs']['net_arch']}) sees only the observation; action mode "
        f"`{cfg['env_kwargs']}`; training aid `{cfg['train_env_kwargs']}`; {d['episodes_per_round']} episodes per "
        f"round, β = {d['beta0']}·{d['beta_decay']}^round, {d['gradient_steps']} Adam steps of {d['batch_size']} per "
        f"round, {cfg['steps']} env steps per seed; seeds ran {ours['parallel']} at a time, one thread each (besides "
        f"them: {ours.get('note', 'nothing')}).",
        f"Final success: {ours['runs'][0]['final']['episodes']} held-out episodes (seeds {FINAL_SEED}…) of the "
        f"unmodified task (`cenic-gym eval runs/learning_franka/seedS/model.zip --episodes 50 --seed {FINAL_SEED}`); "
        "success = `info[\"is_success\"]` at the episode's end (box within 2.5 cm of the target, upright, released, "
        f"at rest). The teacher on the same episodes: success {t['success_rate']:.2f}, mean return "
        f"{t['mean_return']:.1f}.", ""]
    rows, med = table(ours["runs"], ENV_ID)
    summary = (f"Env steps to the first evaluation at ≥ 0.8 success (median of the seeds): {steps_to(ours['runs'])} "
               f"on `{ENV_ID}`")
    final = f"Median final success over the seeds: **{med:.2f}** on `{ENV_ID}`"
    if FETCH_ID in data:
        fetch = data[FETCH_ID]
        frows, fmed = table(fetch["runs"], FETCH_ID)
        rows += frows[2:]
        when = f", {fetch['date']}, git {fetch['git']}" if "date" in fetch else ""
        rows += ["", f"`{FETCH_ID}` (Gymnasium-Robotics {fetch['gymnasium_robotics']}, MuJoCo {fetch['mujoco']}; the "
                 "same DAgger code, hyperparameters and env-step budget, its own 50-step episodes and success test, "
                 f"teacher `FetchTeacher`): `{fetch['command']}` (a separate venv{when}; beside it: "
                 f"{fetch.get('beside', 'other work')}, so its wall times are not comparable to the Franka runs')."]
        summary += f", {steps_to(fetch['runs'])} on `{FETCH_ID}`"
        final += f", {fmed:.2f} on `{FETCH_ID}`"
    lines += rows + ["", f"{summary}. {final}. Shipped: the best seed's model in `training/policies/{ENV_ID}/` (its "
                     "README, ONNX export and sim-to-real report).", "", "![learning curves](learning_franka.png)"]
    return "\n".join(lines)


def write_policy_readme(run, spec, data):
    """The shipped policy's README: what it is, how it was trained, its evaluation and curve (numbers from this run)."""
    from cenic_gym.train import get_config

    cfg = get_config(ENV_ID, "dagger")
    f, c = run["final"], run["curve"]
    med = median_success(data[ENV_ID]["runs"])
    text = f"""# {ENV_ID}: a learned pick-and-place policy

An MLP (two hidden layers of {cfg['sb3']['policy_kwargs']['net_arch'][0]}, SB3 SAC actor; its deterministic action)
that picks the box from its random start pose and places it upright in the target region of the plain
`{ENV_ID}` task, then lets go, at 20 Hz. It acts in the env's Cartesian mode, `{json.dumps(spec['env_kwargs'])}`:
actions 0–2 move the TCP by up to 3 cm per step from where it is measured, 3–5 turn the hand by up to 0.15 rad, 7
opens (+1) or closes (−1) the gripper. Its observation is the task's 49 numbers (no privileged state).

## How it was trained

    cenic-gym train {ENV_ID} --seed {run['seed']}

The env's default recipe (`cenic_gym/train/configs.py`, `PICK_PLACE_DAGGER`): DAgger (`cenic_gym/train/dagger.py`)
from the feedback teacher `cenic_gym.envs.franka_box.CartesianExpert`, which reads the simulator's state (contacts,
box pose) and can act from any state the learner reaches. {cfg['steps']} env steps on the task's own start
distribution, 200-step episodes and accuracy ε = 1e-3, with one training aid: the training env's observations carry
the task's observation noise (`{json.dumps(cfg['train_env_kwargs'])}`: 5 mm on positions, 0.01 on quaternions,
0.005 rad / 0.05 rad/s on joints) while the teacher reads the true state, so the network learns to act from noisy
observations. {c[-1]['wall_s'] / 60:.1f} min of wall
time in one process on a 2-core machine that ran {data[ENV_ID]['parallel']} seeds at a time (and besides them:
{data[ENV_ID].get('note', 'nothing')}). This is seed {run['seed']}, the best of
the {len(data[ENV_ID]['runs'])} seeds of `python benchmarks/learning_franka.py`; the median seed's held-out success
is {med:.2f} (`benchmarks/RESULTS.md`, "Learning: the Franka pick-and-place").

![learning curve](curve.png)

## Evaluation

    cenic-gym eval training/policies/{ENV_ID}/model.zip --episodes 50 --seed {FINAL_SEED}

{f['episodes']} held-out episodes of the unmodified task (default starts, success test and accuracy; the network
alone acting): success rate **{f['success_rate']:.2f}**, mean return {f['mean_return']:.1f}. Any other `--seed`
gives other held-out episodes.

    cenic-gym demo {ENV_ID} --policy training/policies/{ENV_ID} --video franka_policy.mp4

plays one episode into a video (the target region drawn in green) and the CENIC plots (step size, real-time rate,
contact force).

## Files

| file | what |
|---|---|
| `model.zip`, `model.vecnormalize.pkl` | the SB3 model and its observation statistics (`stable_baselines3.SAC.load`) |
| `run.json` | the run record: env id and the options it was trained and is evaluated with (`cenic-gym eval` reads it) |
| `model.onnx` | the exported policy, normalization folded in: raw observation (49,) float32 → action (8,) (`cenic-gym sim2real export`, checked against the SB3 model to 1e-5; it also writes a TorchScript `model.pt`, not shipped) |
| `training.json`, `curve.png` | this seed's periodic evaluations (10 held-out episodes each) and the final one |
| `report/` | its sim-to-real report (`cenic-gym sim2real report`; `benchmarks/RESULTS.md`, "Sim-to-real: the learned Franka policy") |

Running it without this package (onnxruntime):

```python
import numpy as np, onnxruntime as ort
session = ort.InferenceSession("training/policies/{ENV_ID}/model.onnx")
action = session.run(None, {{session.get_inputs()[0].name: obs.astype(np.float32)[None]}})[0][0]
```

Generated by `python benchmarks/learning_franka.py`.
"""
    (POLICY / "README.md").write_text(text)


def main():
    a = arg_parser(__doc__).parse_args()
    data = BENCH.saved()
    data = {k: v for k, v in data.items() if k in (ENV_ID, FETCH_ID)}
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    command = "`" + shlex.join(["python", "benchmarks/learning_franka.py", *sys.argv[1:]]) + "`"
    if not a.plot_only:
        train_seeds(BENCH, a.seeds, a.parallel)
        runs = evaluate_seeds(BENCH, a.seeds, a.episodes)
        data[ENV_ID] = dict(runs=runs, parallel=a.parallel, command=command, runtime_s=time.perf_counter() - t0,
                            load0=load0, note=a.note, **stamp())
        BENCH.save(data)
        for path, err in ship(BENCH, runs, best_seed(runs)).items():
            print(f"exported {path}: reproduces the model's actions to {err:.1e}")
    ours = data[ENV_ID]
    if "teacher" not in ours:
        from cenic_gym.envs.franka_box import CartesianExpert
        from cenic_gym.train import get_config

        ours["teacher"] = scripted_eval(ENV_ID, CartesianExpert, a.episodes, get_config(ENV_ID, "dagger")["env_kwargs"])
        BENCH.save(data)
    if a.plot_only and a.note != "nothing":
        ours["note"] = a.note
        BENCH.save(data)
    plot(data, OUT.with_suffix(".png"))
    shipped, spec = BENCH.shipped()
    plot({ENV_ID: dict(runs=[shipped])}, POLICY / "curve.png")
    write_policy_readme(shipped, spec, data)
    write_section("franka-learning", section(data, a.plot_only),
                  f"## Learning: the Franka pick-and-place ({ENV_ID}), three seeds, and FetchPickAndPlace side by side")
    print(f"wrote {OUT.with_suffix('.png')} and {BENCH.json}")


if __name__ == "__main__":
    main()
