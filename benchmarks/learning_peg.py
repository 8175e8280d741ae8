"""The peg-insertion recipe, three seeds: learning curves, held-out success, the shipped policy, its accuracy sweep,
robustness and sim-to-sim report.

    python benchmarks/learning_peg.py [--seeds 0 1 2] [--parallel 2] [--episodes 50] [--sweep-episodes 10]
        [--report-episodes 10] [--plot-only] [--note TEXT]

Each seed runs exactly what a user runs, ``cenic-gym train CenicPegInsertion-v0 --seed S`` (the env's default recipe:
``CONFIGS["CenicPegInsertion-v0"]["dagger"]``: DAgger from the feedback teacher ``ForceSearchTeacher``),
``--parallel`` at a time, into ``runs/learning_peg/seedS`` (``learning_common``: ``--resume`` of an interrupted seed,
a finished one kept). Each final ``model.zip`` plays ``--episodes`` held-out episodes of the UNMODIFIED task (seeds
10 000…: default fixture poses, grasp noise, camera error, 0.5 mm clearance, success test and ε = 1e-3; the network
alone acting), beside the teacher on the same episodes. The best seed ships to
``training/policies/CenicPegInsertion-v0/`` (model, normalizer, ``run.json``, ONNX export, ``training.json``,
``curve.png``, generated README) with the sim-to-real report of ``cenic-gym sim2real report`` in its ``report/``
(accuracy sweep, robustness sweeps, MuJoCo and Drake sim-to-sim; ``--report-episodes`` seeds 0…). Writes
``benchmarks/learning_peg.{json,png}`` and the RESULTS.md section ``peg-learning``. About 40 min on 2 cores;
``--plot-only`` rebuilds the plots and the section from the JSON. Wall times are reported, so run it on an otherwise
idle machine (or say what else ran with ``--note``).
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

from bench_common import provenance
from learning_common import (FINAL_SEED, Benchmark, arg_parser, best_seed, evaluate_seeds, files_table,
                             median_success, publish_curves, scripted_eval, ship, stamp, stamp_note, steps_to, table,
                             train_seeds)

ENV_ID = "CenicPegInsertion-v0"
BENCH = Benchmark(ENV_ID, "learning_peg")
OUT, POLICY = BENCH.out, BENCH.policy


def recipe():
    from cenic_gym.train import get_config

    return get_config(ENV_ID, "dagger")


def report(episodes):
    """The shipped policy's sim-to-real report (``cenic_gym.sim2real.report``) into ``POLICY / "report"``; returns
    the report's summary numbers (accuracy rows, sim-to-sim rows) for the section."""
    from cenic_gym.sim2real.policy import load_policy
    from cenic_gym.sim2real.report import write_report

    path = write_report(ENV_ID, load_policy(POLICY / "model.zip", ENV_ID), POLICY / "report", list(range(episodes)),
                        progress=lambda *p: print(*p, flush=True))
    return str(path.relative_to(POLICY.parent.parent.parent))


def video():
    """The shipped policy's first held-out episode as ``peg_policy.mp4`` in its folder (``cenic-gym demo``)."""
    subprocess.run([sys.executable, "-m", "cenic_gym", "demo", ENV_ID, "--policy", str(POLICY), "--seed",
                    str(FINAL_SEED), "--video", str(POLICY / "peg_policy.mp4"), "--out",
                    str(BENCH.runs / "peg_policy_demo.png")], check=True, env={**os.environ, "MUJOCO_GL": "egl"})


def section(data, plot_only=False):
    cfg = recipe()
    ours = data[ENV_ID]
    d = cfg["dagger"]
    t = ours["teacher"]
    lines = provenance("benchmarks/learning_peg.py", ours["command"], ours["runtime_s"], ours["load0"],
                       ("stable-baselines3", "torch", "gymnasium", "numba", "mujoco", "drake"),
                       note=stamp_note(ours, plot_only))
    lines += [
        f"Recipe: `cenic-gym train {ENV_ID} --seed S` (`dagger`, `PEG_DAGGER` in `cenic_gym/train/configs.py`): DAgger "
        "from the feedback teacher `ForceSearchTeacher` (moment-guided search on the wrist wrench, then a compliant "
        "push; it reads the noise-free observation); the network (SB3 SAC actor, "
        f"{cfg['sb3']['policy_kwargs']['net_arch']}) acts from the task's observation (with its noise); the task's "
        f"starts, actions, 200-step episodes and ε = 1e-3, no training aid; {d['episodes_per_round']} episodes per "
        f"round, β = {d['beta0']}·{d['beta_decay']}^round, {d['gradient_steps']} Adam steps of {d['batch_size']} per "
        f"round, {cfg['steps']} env steps per seed; seeds ran {ours['parallel']} at a time, one thread each (besides "
        f"them: {ours.get('note', 'nothing')}).",
        f"Final success: {ours['runs'][0]['final']['episodes']} held-out episodes (seeds {FINAL_SEED}…) of the "
        f"unmodified task (`cenic-gym eval runs/learning_peg/seedS/model.zip --episodes 50 --seed {FINAL_SEED}`); "
        "success = `info[\"is_success\"]` at the episode's end (the peg tip inside the hole, ≥ 20 mm deep, tilted "
        f"< 5°). The teacher on the same episodes: {t['success_rate']:.2f}.", ""]
    rows, med = table(ours["runs"], ENV_ID)
    lines += rows + ["", f"Env steps to the first evaluation at ≥ 0.8 success (median of the seeds): "
                     f"{steps_to(ours['runs'])}. Median final success over the seeds: **{med:.2f}**.", "",
                     "![learning curves](learning_peg.png)", "",
                     f"The shipped seed's sim-to-real report (accuracy sweep, robustness, MuJoCo and Drake sim-to-sim "
                     f"on seeds 0–{ours['report_episodes'] - 1}): `{ours['report']}`."]
    return "\n".join(lines)


def write_policy_readme(run, spec, data):
    cfg = recipe()
    f, c = run["final"], run["curve"]
    ours = data[ENV_ID]
    text = f"""# {ENV_ID}: a learned peg-insertion policy

An MLP (two hidden layers of {cfg['sb3']['policy_kwargs']['net_arch'][0]}, SB3 SAC actor; its deterministic action)
that inserts a round peg (Ø 20 mm) held in the Panda's fingers into a hole with 0.5 mm diametral clearance whose
pose it knows only from a noisy camera estimate, at 20 Hz, in the plain `{ENV_ID}` task (`run.json`:
`{json.dumps(spec['env_kwargs'])}`). It observes the task's 45 numbers — the arm's joints, the TCP pose, the
controller's lead, the **wrist force/torque sensor**, the observed hole and the previous action; no privileged state —
and acts by the task's 6: TCP translation (5 mm) and rotation (0.05 rad) steps of the implicit controller's target.

## How it was trained

    cenic-gym train {ENV_ID} --seed {run['seed']}

The env's default recipe (`cenic_gym/train/configs.py`, `PEG_DAGGER`): DAgger (`cenic_gym/train/dagger.py`) from
the feedback teacher `cenic_gym.envs.peg_insertion.ForceSearchTeacher` — it descends onto the observed hole, and
when the peg lands on the chamfer-less rim it reads the moment about the tip on the wrist sensor to tell which side
of the hole the tip sits on, slides toward it and pushes compliantly once the tip drops in. {cfg['steps']} env steps
of the task's own start distribution, 200-step episodes and accuracy ε = 1e-3; no training aid.
{c[-1]['wall_s'] / 60:.1f} min of training wall time in one process on a 2-core machine that ran {ours['parallel']}
seeds at a time. This is seed {run['seed']}, the best of the {len(ours['runs'])} seeds of
`python benchmarks/learning_peg.py`; the median seed's held-out success is {median_success(ours['runs']):.2f}
(`benchmarks/RESULTS.md`, "Learning: the peg insertion"), the teacher's {ours['teacher']['success_rate']:.2f} on the
same episodes.

![learning curve](curve.png)

## Evaluation

    cenic-gym eval training/policies/{ENV_ID}/model.zip --episodes 50 --seed {FINAL_SEED}

{f['episodes']} held-out episodes of the unmodified task (default fixture poses, grasp and camera noise, clearance,
success test and accuracy; the network alone acting): success rate **{f['success_rate']:.2f}**, mean return
{f['mean_return']:.1f}. Any other `--seed` gives other held-out episodes.

The sim-to-real report, `report/report.md` (`cenic-gym sim2real report`): the accuracy sweep (ε = 1e-1 … 1e-5 and
fixed steps; a policy that succeeds more often at loose settings than at tight ones would be exploiting numerics),
the robustness sweeps (friction, mass, gains, delay, observation noise) and the same episodes with MuJoCo and Drake
as the physics.

    cenic-gym demo {ENV_ID} --policy training/policies/{ENV_ID} --seed {FINAL_SEED} --video peg_policy.mp4

plays the first held-out episode into a video ([peg_policy.mp4](peg_policy.mp4)) and the CENIC plots (step size,
real-time rate, contact force).

## Files

{files_table(45, 6)}
| `report/` | the sim-to-real report: `report.md`, its plots and per-episode log |
| `peg_policy.mp4` | the first held-out episode (`cenic-gym demo`) |

Generated by `python benchmarks/learning_peg.py`.
"""
    (POLICY / "README.md").write_text(text)


def main():
    p = arg_parser(__doc__)
    p.add_argument("--report-episodes", type=int, default=10,
                   help="episodes per setting of the shipped policy's sim-to-real report (default 10)")
    a = p.parse_args()
    data = BENCH.saved()
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    if not a.plot_only:
        from cenic_gym.envs.peg_insertion import ForceSearchTeacher

        train_seeds(BENCH, a.seeds, a.parallel)
        runs = evaluate_seeds(BENCH, a.seeds, a.episodes, parallel=a.parallel)
        ours = dict(runs=runs, parallel=a.parallel, note=a.note, **stamp(),
                    command="`" + shlex.join(["python", "benchmarks/learning_peg.py", *sys.argv[1:]]) + "`",
                    teacher=scripted_eval(ENV_ID, ForceSearchTeacher, a.episodes))
        for path, err in ship(BENCH, runs, best_seed(runs)).items():
            print(f"exported {path}: reproduces the model's actions to {err:.1e}")
        video()
        ours["report"], ours["report_episodes"] = report(a.report_episodes), a.report_episodes
        ours.update(runtime_s=time.perf_counter() - t0, load0=load0)
        data[ENV_ID] = ours
        BENCH.save(data)
    ours = data[ENV_ID]
    title = ("DAgger from a force-guided teacher: CenicPegInsertion-v0, 0.5 mm clearance\nperiodic evaluations: 10 "
             "held-out episodes of the unmodified task, the network alone")
    publish_curves(BENCH, ours["runs"], title, lambda shipped, spec: write_policy_readme(shipped, spec, data),
                   "peg-learning", section(data, a.plot_only),
                   f"## Learning: the peg insertion ({ENV_ID}), three seeds, and the shipped policy's report")


if __name__ == "__main__":
    main()
