"""The parts of the learning benchmarks that do not depend on the task (``learning_franka.py``,
``learning_suction.py``): train a recipe's seeds with the user's command, read their learning curves, evaluate the
final models on held-out episodes, tabulate and plot them, and ship the best seed as a policy folder.

Each seed runs exactly what a user runs, ``cenic-gym train ENV --seed S`` (the env's default recipe), in its own
process (one thread), ``parallel`` of them at a time, into ``runs/<name>/seedS``; an interrupted seed continues from
its last checkpoint (``--resume``), a finished one is kept. Final evaluation: held-out episodes (seeds 10 000,
10 001, …) of the UNMODIFIED task, the network alone acting (what ``cenic-gym eval`` does), ``parallel`` evaluations
at a time too (each episode is seeded, so the numbers do not depend on it).
"""
from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench_common import REPO, git_rev, write_section

FINAL_SEED = 10_000  # first seed of the held-out evaluation episodes


@dataclass(frozen=True)
class Benchmark:
    """Where one recipe's learning benchmark keeps its runs and results."""

    env_id: str
    name: str  # runs/<name>/seedS, benchmarks/<name>.{json,png}

    @property
    def runs(self) -> Path:
        return REPO / "runs" / self.name

    @property
    def out(self) -> Path:
        return REPO / "benchmarks" / self.name

    @property
    def policy(self) -> Path:
        return REPO / "training" / "policies" / self.env_id

    def run_dir(self, seed) -> Path:
        return self.runs / f"seed{seed}"

    @property
    def json(self) -> Path:
        return self.out.with_suffix(".json")

    def saved(self) -> dict:
        """The results the benchmark saved last ({} before its first run)."""
        return json.loads(self.json.read_text()) if self.json.is_file() else {}

    def save(self, data: dict):
        self.json.write_text(json.dumps(data, indent=1))

    def shipped(self) -> tuple[dict, dict]:
        """The shipped seed's record (``training.json``: seed, curve, final) and run spec (``run.json``)."""
        return (json.loads((self.policy / "training.json").read_text()),
                json.loads((self.policy / "run.json").read_text()))


def train_command(bench, seed):
    """The user's command for one seed (``--resume`` from the newest checkpoint of an interrupted run)."""
    run_dir = bench.run_dir(seed)
    cmd = [sys.executable, "-m", "cenic_gym", "train", bench.env_id, "--seed", str(seed), "--out", str(run_dir),
           "--no-progress"]
    ckpts = sorted((run_dir / "checkpoints").glob("model_*_steps.zip"), key=lambda p: int(p.stem.split("_")[1])) \
        if run_dir.is_dir() else []
    return cmd + (["--resume", str(ckpts[-1])] if ckpts else [])


def run_trainings(jobs, parallel):
    """Run training commands, ``parallel`` processes at a time (one thread each): ``jobs`` maps a name to (command,
    run folder); a folder with a final ``model.zip`` is skipped, each run logs to its folder's ``train.log``.
    Returns {name: wall s of this invocation}; a failed run stops the benchmark."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    todo = [k for k, (_, run_dir) in jobs.items() if not (Path(run_dir) / "model.zip").is_file()]
    running, walls = {}, {}
    while todo or running:
        while todo and len(running) < parallel:
            k = todo.pop(0)
            cmd, run_dir = jobs[k]
            Path(run_dir).mkdir(parents=True, exist_ok=True)
            log = open(Path(run_dir) / "train.log", "a")
            running[k] = (subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO),
                          time.perf_counter(), log)
        time.sleep(2.0)
        for k, (proc, t0, log) in list(running.items()):
            if proc.poll() is not None:
                log.close()
                if proc.returncode != 0:
                    raise SystemExit(f"{k} failed (exit {proc.returncode}); see {Path(jobs[k][1]) / 'train.log'}")
                walls[k] = time.perf_counter() - t0
                del running[k]
    return walls


def train_seeds(bench, seeds, parallel):
    """Run the seeds' trainings, ``parallel`` processes at a time; returns {seed: wall s of this invocation}."""
    return run_trainings({s: (train_command(bench, s), bench.run_dir(s)) for s in seeds}, parallel)


def curve(run_dir):
    """Each periodic evaluation of a run: env steps, training wall s, success rate, mean return (and goals per
    episode, for a task that counts them)."""
    ev = np.load(run_dir / "eval" / "evaluations.npz")
    out = [dict(steps=int(s), wall_s=float(w), success_rate=float(np.mean(ok)), mean_return=float(np.mean(r)))
           for s, w, ok, r in zip(ev["timesteps"], ev["wall"], ev["successes"], ev["results"])]
    if "goals" in ev:
        for e, g in zip(out, ev["goals"]):
            e["mean_goals"] = float(np.mean(g))
    return out


def goals_entry(mean_goals):
    """{"mean_goals": ...} of an evaluation of a task that counts its goals, else {}."""
    return {} if mean_goals is None else dict(mean_goals=mean_goals)


def final_eval(model, episodes):
    """The model (its run.json's task) on ``episodes`` held-out episodes from seed ``FINAL_SEED``."""
    from cenic_gym.train import evaluate

    result = evaluate(model, episodes=episodes, seed=FINAL_SEED)
    return dict(episodes=episodes, success_rate=result.success_rate, mean_return=result.mean_return,
                mean_length=float(np.mean(result.lengths)), **goals_entry(result.mean_goals))


def scripted_eval(env_id, policy_class, episodes, env_kwargs=None):
    """A scripted policy ``policy_class(env)`` (rebuilt at each episode's start: :class:`ScriptedPolicy`) on the
    same held-out episodes."""
    from cenic_gym.sim2real.policy import ScriptedPolicy
    from cenic_gym.sim2real.rollout import make_env, run_episode, summarize

    env, policy = make_env(env_id, **(env_kwargs or {})), ScriptedPolicy(policy_class)
    s = summarize([run_episode(env, policy, FINAL_SEED + k) for k in range(episodes)])
    return dict(episodes=episodes, success_rate=s["success_rate"], mean_return=s["mean_return"],
                **goals_entry(s["mean_goals"]))


def run_parallel(calls, parallel):
    """[fn(*args) for fn, args in calls], ``parallel`` worker processes at a time (spawned: fresh interpreters with
    this one's environment, so run with ``OMP_NUM_THREADS=1`` for one thread each), in order; in this process when
    ``parallel`` ≤ 1. The functions must be importable (module level)."""
    if parallel <= 1 or len(calls) <= 1:
        return [fn(*args) for fn, args in calls]
    with ProcessPoolExecutor(min(parallel, len(calls)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(fn, *args) for fn, args in calls]
        return [f.result() for f in futures]


def evaluate_seeds(bench, seeds, episodes, parallel=1):
    """[{seed, curve, final}] of the trained seeds, ``parallel`` evaluations at a time."""
    finals = run_parallel([(final_eval, (bench.run_dir(s) / "model.zip", episodes)) for s in seeds], parallel)
    runs = []
    for s, final in zip(seeds, finals):
        runs.append(dict(seed=s, curve=curve(bench.run_dir(s)), final=final))
        print(f"seed {s}: final success {final['success_rate']:.2f}", flush=True)
    return runs


def best_seed(runs):
    return max(runs, key=lambda r: (r["final"]["success_rate"], r["final"]["mean_return"]))["seed"]


def median_success(runs):
    return float(np.median([r["final"]["success_rate"] for r in runs]))


def median_goals(runs):
    """The median of the seeds' final goals per episode (a task that counts its goals)."""
    return float(np.median([r["final"]["mean_goals"] for r in runs]))


def first_at(c, level=0.8):
    """(env steps, wall s) of the first evaluation with a success rate ≥ ``level``, or None."""
    hit = next((e for e in c if e["success_rate"] >= level), None)
    return None if hit is None else (hit["steps"], hit["wall_s"])


def steps_to(runs, level=0.8):
    """Median env steps to the first evaluation at ≥ ``level`` ("—" if a seed never got there)."""
    hits = [first_at(r["curve"], level) for r in runs]
    return "—" if None in hits else f"{float(np.median([h[0] for h in hits])):.0f}"


def table(runs, name):
    """The markdown rows of the seeds' table and the median final success (with a goals-per-episode column for a
    task that counts its goals)."""
    goals = all("mean_goals" in r["final"] for r in runs)
    rows = ["| run | env steps | training wall [min] | first eval ≥ 0.8: steps / min | final success (held-out) "
            + ("| goals per episode " if goals else "") + "| final return |",
            "|---|---:|---:|---:|---:|" + ("---:|" if goals else "") + "---:|"]
    for run in runs:
        hit = first_at(run["curve"])
        f = run["final"]
        last = run["curve"][-1]
        rows.append(f"| {name} seed {run['seed']} | {last['steps']} | {last['wall_s'] / 60:.1f} "
                    f"| {'—' if hit is None else f'{hit[0]} / {hit[1] / 60:.1f}'} | {f['success_rate']:.2f} "
                    f"({round(f['success_rate'] * f['episodes'])}/{f['episodes']}) | "
                    + (f"{f['mean_goals']:.2f} | " if goals else "") + f"{f['mean_return']:.1f} |")
    med = median_success(runs)
    rows.append(f"| **{name} median of {len(runs)}** | | | | **{med:.2f}** | "
                + (f"**{median_goals(runs):.2f}** | " if goals else "") + "|")
    return rows, med


def plot_curves(lines, path, title, return_label, legend_columns=3):
    """Success and return against env steps and wall time; ``lines``: [(label, curve, style, with_returns)], a
    curve being :func:`curve`'s list (returns of tasks on another reward scale are left out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for label, c, style, with_returns in lines:
        s = np.array([e["steps"] for e in c]) / 1e3
        w = np.array([e["wall_s"] for e in c]) / 60
        sr = np.array([e["success_rate"] for e in c])
        line, = axes[0, 0].plot(s, sr, style, marker="o", ms=3, label=label)
        axes[0, 1].plot(w, sr, style, marker="o", ms=3, color=line.get_color())
        if with_returns:
            r = np.array([e["mean_return"] for e in c], dtype=float)
            axes[1, 0].plot(s, r, style, marker="o", ms=3, color=line.get_color())
            axes[1, 1].plot(w, r, style, marker="o", ms=3, color=line.get_color())
    for ax in axes[0]:
        ax.set_ylabel("evaluation success rate")
        ax.set_ylim(-0.05, 1.05)
    for ax in axes[1]:
        ax.set_ylabel(return_label)
    for ax in axes[:, 0]:
        ax.set_xlabel("env steps [thousands]")
    for ax in axes[:, 1]:
        ax.set_xlabel("training wall time [min]")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=legend_columns, fontsize=8)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def publish_curves(bench, runs, title, write_readme, section_key, section_text, heading):
    """The end of a learning benchmark: every seed's curves (``benchmarks/<name>.png``), the shipped seed's curve and
    README (``write_readme(shipped record, run spec)``) in its policy folder, and the RESULTS.md section."""
    label = f"{bench.env_id} evaluation return"
    plot_curves(seed_lines(bench.env_id, runs), bench.out.with_suffix(".png"), title, label)
    shipped, spec = bench.shipped()
    plot_curves(seed_lines(bench.env_id, [shipped]), bench.policy / "curve.png", title, label)
    write_readme(shipped, spec)
    write_section(section_key, section_text, heading)
    print(f"wrote {bench.out.with_suffix('.png')} and {bench.json}")


def seed_lines(label, runs, style="-", with_returns=True):
    """:func:`plot_curves` lines of a recipe's seeds."""
    return [(f"{label} seed {r['seed']}", r["curve"], style, with_returns) for r in runs]


def stamp():
    """{date, git} of a run, kept in the benchmark's JSON: ``--plot-only`` rebuilds the section later."""
    return dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), git=git_rev())


def stamp_note(record, plot_only):
    """The provenance note of a section rebuilt from saved runs (``--plot-only``): when and at which commit the runs
    were made ("" for a fresh run, or a record without its stamp)."""
    return f"; runs of {record['date']}, git {record['git']}" if plot_only and "date" in record else ""


def arg_parser(doc, sweep_episodes=None):
    """The options every learning benchmark takes (and ``--sweep-episodes``, the shipped policy's accuracy-sweep
    episodes per setting, when ``sweep_episodes`` gives its default)."""
    import argparse

    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if sweep_episodes is not None:
        p.add_argument("--sweep-episodes", type=int, default=sweep_episodes,
                       help=f"episodes per accuracy-sweep setting (default {sweep_episodes})")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--parallel", type=int, default=2,
                   help="training processes at a time, and evaluations after them (default 2)")
    p.add_argument("--episodes", type=int, default=50, help="held-out episodes per final model (default 50)")
    p.add_argument("--plot-only", action="store_true", help="redraw the plots and section from the JSON")
    p.add_argument("--note", default="nothing", help="what else ran on the machine meanwhile (for the section)")
    return p


def files_table(obs_dim, act_dim):
    """The markdown table of a shipped DAgger policy folder's files (its README's "Files")."""
    return "\n".join([
        "| file | what |", "|---|---|",
        "| `model.zip`, `model.vecnormalize.pkl` | the SB3 model and its observation statistics "
        "(`stable_baselines3.SAC.load`) |",
        "| `run.json` | the run record: env id and the options it was trained and is evaluated with (`cenic-gym eval` "
        "reads it) |",
        f"| `model.onnx` | the exported policy, normalization folded in: raw observation ({obs_dim},) float32 → "
        f"action ({act_dim},) (`cenic-gym sim2real export`, checked against the SB3 model to 1e-5) |",
        "| `training.json`, `curve.png` | this seed's periodic evaluations (10 held-out episodes each) and the final "
        "one |"])


def ship(bench, runs, seed):
    """Copy ``seed``'s model to the policy folder, export it to ONNX (the TorchScript twin is not shipped) and
    write its ``training.json`` (the seed's record); returns {exported file: largest action difference to the SB3
    model}."""
    from cenic_gym.sim2real.export import export_policy

    policy = bench.policy
    policy.mkdir(parents=True, exist_ok=True)
    for name in ("model.zip", "model.vecnormalize.pkl", "run.json"):
        shutil.copy(bench.run_dir(seed) / name, policy / name)
    spec = json.loads((policy / "run.json").read_text())
    errors = export_policy(policy / "model.zip", policy, bench.env_id, env_kwargs=spec["env_kwargs"])
    (policy / "model.pt").unlink()
    run = next(r for r in runs if r["seed"] == seed)
    (policy / "training.json").write_text(json.dumps(run, indent=1))  # seed, curve, final and the task's extras
    return {k: v for k, v in errors.items() if k.endswith(".onnx")}


def sweep_verdict(sweep):
    """The sentence on an accuracy sweep's flags (``cenic_gym.sim2real.accuracy``: a setting is flagged when its
    success rate beats the reference's by more than ``FLAG_MARGIN``)."""
    from cenic_gym.sim2real.accuracy import FLAG_MARGIN

    if sweep["flagged"]:
        return (f" Flagged (a looser setting succeeds more often than the reference {sweep['reference']}, by more "
                f"than {FLAG_MARGIN:.2f}): {', '.join(sweep['flagged'])}.")
    return (f" No setting succeeds more often than the reference ({sweep['reference']}) by more than "
            f"{FLAG_MARGIN:.2f}, the sweep's flag margin (its episodes are few: each success rate is uncertain by "
            "about that much).")
