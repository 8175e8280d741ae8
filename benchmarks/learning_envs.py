"""Learning curves of SB3 PPO on the envs beyond the Franka (issue 15: "the same for each other env"), each for a
fixed wall budget on this machine, with the project's configs (``cenic_gym.train.configs``).

    python benchmarks/learning_envs.py [--env CenicQuadruped-v0 CenicSuction-v0] [--minutes 20] [--workers 2]
                                       [--seed 0] [--final-episodes 10] [--no-results]
    python benchmarks/learning_envs.py --report      # rewrite the PNG and the RESULTS.md section from the JSON

Per env: SB3 PPO through :func:`cenic_gym.train.sb3_backend.train` (``CONFIGS[env]["ppo"]``, ``--workers`` Ray
actors, VecNormalize) until ``--minutes`` of wall time have passed, evaluating every ``eval_every`` env steps on
``eval_episodes`` deterministic episodes (the config's evaluation: mean return, success rate =
``info["is_success"]`` at the episode's end). Then the final model and uniform random actions play the same
``--final-episodes`` held-out episodes (seeds 10 000, 10 001, ...): return, success rate, episode length and each
reward term's episode sum. Writes ``benchmarks/learning_envs.{json,png}`` and the ``learning-envs`` section of
``benchmarks/RESULTS.md``; envs already in the JSON and not rerun stay. Run folders: ``runs/learning_envs/<env>``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np

from bench_common import REPO, provenance, replace_marked_section
from learning_curve import curve, train_for

OUT = REPO / "benchmarks" / "learning_envs"
RESULTS = REPO / "benchmarks" / "RESULTS.md"
DEFAULT_ENVS = ("CenicQuadruped-v0", "CenicSuction-v0")
FINAL_SEED = 10_000


def train_env(env_id, minutes, workers, seed, run_dir):
    """Train PPO on ``env_id`` for ``minutes`` of wall time; returns (wall s, cfg, path of the final model)."""
    from cenic_gym.train import RunSpec, get_config

    cfg = get_config(env_id, "ppo")
    spec = RunSpec(env_id, "ppo", "sb3", cfg["env_kwargs"], seed, 10**9, workers, max(cfg["num_envs"], workers),
                   cfg["train_env_kwargs"])
    wall, path = train_for(spec, cfg, run_dir, minutes)
    return wall, cfg, path


def random_baseline(env_id, env_kwargs, episodes):
    """Uniform random actions (the action space seeded with FINAL_SEED) on the final evaluation's episodes."""
    import gymnasium as gym

    from cenic_gym.train.common import run_episodes

    space = gym.make(env_id, **env_kwargs).action_space
    space.seed(FINAL_SEED)
    return run_episodes(lambda obs: space.sample(), lambda: gym.make(env_id, **env_kwargs), episodes, FINAL_SEED)


def summary_of(result):
    return dict(episodes=len(result.returns), mean_return=result.mean_return, std_return=float(np.std(result.returns)),
                success_rate=result.success_rate, mean_length=float(np.mean(result.lengths)), terms=result.mean_terms())


def plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 2, figsize=(11, 3.4 * len(runs)), squeeze=False)
    for row, (env_id, run) in zip(axes, runs.items()):
        w = np.array([e["wall_s"] for e in run["evals"]]) / 60
        for ax, key, label in ((row[0], "mean_return", "eval return"), (row[1], "success_rate", "eval success rate")):
            ax.plot(w, [e[key] for e in run["evals"]], "o-", label="PPO (deterministic)")
            ax.axhline(run["random"][key], color="gray", ls="--", label="random actions")
            ax.set_title(env_id, fontsize=10)
            ax.set_xlabel("wall time [min]")
            ax.set_ylabel(label)
        row[1].set_ylim(-0.05, 1.05)
        row[0].legend(fontsize=8)
    fig.suptitle("SB3 PPO with the project's configs (2-core machine)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def section(runs):
    """The Markdown body of the ``learning-envs`` section."""
    first = next(iter(runs.values()))
    wall = sum(r["wall_s"] for r in runs.values())
    lines = provenance("benchmarks/learning_envs.py", first["command"], wall, first["load_before"][0],
                       ("stable-baselines3", "torch", "gymnasium"),
                       note=f"; 1/5/15-min load {', '.join(f'{x:.1f}' for x in first['load_after'])} after the first env")
    lines += ["SB3 PPO through the project's training stack (`cenic_gym.train.sb3_backend.train`, the config "
              "`CONFIGS[env]['ppo']` of `cenic_gym/train/configs.py`) for a fixed wall budget per env, evaluated "
              "every `eval_every` env steps on `eval_episodes` deterministic episodes (success = `info[\"is_success\"]` "
              "at the episode's end). Final: the last model and uniform random actions on the same "
              f"held-out episodes (seeds {FINAL_SEED}+). Curves: `benchmarks/learning_envs.png`; raw numbers: "
              "`benchmarks/learning_envs.json`.", ""]
    for env_id, run in runs.items():
        cfg, ev, fin, rnd = run["config"], run["evals"], run["final"], run["random"]
        steps = ev[-1]["steps"] if ev else 0
        lines += [f"### {env_id}", "",
                  f"{run['wall_s'] / 60:.1f} min, {steps} env steps ({steps / run['wall_s']:.0f} env steps/s with "
                  f"learning and evaluation); {cfg['num_envs']} envs over {run['workers']} Ray workers; env "
                  f"`{cfg['env_kwargs']}`; PPO `{cfg['sb3']}`.", "",
                  "| env steps | wall [min] | eval return | eval success rate |", "|---:|---:|---:|---:|"]
        lines += [f"| {e['steps']} | {e['wall_s'] / 60:.1f} | {e['mean_return']:.1f} | {e['success_rate']:.2f} |"
                  for e in ev]
        names = sorted(set(fin["terms"]) | set(rnd["terms"]))
        lines += ["", f"| policy ({fin['episodes']} held-out episodes) | return | success rate | episode length | "
                  + " | ".join(names) + " |", "|---|---:|---:|---:|" + "---:|" * len(names)]
        for label, r in (("PPO, final model", fin), ("random actions", rnd)):
            lines.append(f"| {label} | {r['mean_return']:.1f} ± {r['std_return']:.1f} | {r['success_rate']:.2f} | "
                         f"{r['mean_length']:.0f} | " + " | ".join(f"{r['terms'].get(k, 0.0):.1f}" for k in names)
                         + " |")
        lines.append("")
    lines.append("![learning curves](learning_envs.png)")
    return "\n".join(lines)


def write_report(runs):
    plot(runs, OUT.with_suffix(".png"))
    RESULTS.write_text(replace_marked_section(RESULTS.read_text(), "learning-envs", section(runs),
                                              heading="## Learning: PPO on the other envs (issue 15)"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", nargs="+", default=list(DEFAULT_ENVS))
    p.add_argument("--minutes", type=float, default=20.0, help="wall budget per env (training + evaluations)")
    p.add_argument("--workers", type=int, default=2, help="Ray actors for the training envs (0: in process)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--final-episodes", type=int, default=10)
    p.add_argument("--no-results", action="store_true", help="print only; leave the JSON, PNG and RESULTS.md alone")
    p.add_argument("--report", action="store_true", help="no training: rewrite the PNG and RESULTS.md from the JSON")
    a = p.parse_args()
    js = OUT.with_suffix(".json")
    runs = json.loads(js.read_text()) if js.exists() else {}
    if not a.report:
        from cenic_gym.train import evaluate

        for env_id in a.env:
            run_dir = REPO / "runs" / "learning_envs" / env_id
            if run_dir.exists():
                shutil.rmtree(run_dir)
            load0 = os.getloadavg()
            wall, cfg, path = train_env(env_id, a.minutes, a.workers, a.seed, run_dir)
            final = evaluate(path, episodes=a.final_episodes, seed=FINAL_SEED)
            rnd = random_baseline(env_id, cfg["env_kwargs"], a.final_episodes)
            runs[env_id] = dict(wall_s=wall, evals=curve(run_dir), load_before=load0, load_after=os.getloadavg(),
                                workers=a.workers, config=cfg, final=summary_of(final), random=summary_of(rnd),
                                command="`python benchmarks/learning_envs.py " + " ".join(sys.argv[1:]) + "`")
            print(env_id, f"{wall / 60:.1f} min", final.summary(), "| random:", rnd.summary())
            if not a.no_results:
                js.write_text(json.dumps(runs, indent=1, default=str))
    if not a.no_results:
        write_report(runs)


if __name__ == "__main__":
    main()
