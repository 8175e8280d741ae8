"""Learning curve of the pick-and-place: SB3 PPO on CenicFranka-v0 (the config ``cenic_gym.train.configs``
``CONFIGS["CenicFranka-v0"]["ppo"]``: TCP-translation + gripper actions, 100-step episodes, dense reward, some of
the training episodes starting with the box grasped, or grasped and standing on the target).

    python benchmarks/learning_franka.py [--minutes 60] [--steps N] [--seed 0] [--workers 0] [--algo ppo|sac]
                                         [--grasped-start P] [--placed-start P]
                                         [--train-accuracy EPS] [--name NAME] [--final-episodes 20] [--no-results]
                                         [--plot-only | --final-only]

Trains for at most ``--minutes`` of wall time (or ``--steps`` env steps), evaluating every ``eval_every`` env steps
on the UNMODIFIED task (``env_kwargs`` without the training aid; deterministic policy, ``eval_episodes`` episodes
on a held-out seed stream): mean return and success rate (``info["is_success"]`` at the episode's end). Then the
final model plays ``--final-episodes`` more held-out episodes (seeds 10 000, 10 001, ...). Writes
``benchmarks/learning_franka.{png,json}``, the section ``franka-ppo`` of ``benchmarks/RESULTS.md`` and the final
model in ``benchmarks/models/franka_pick_place_ppo/`` (``model.zip``, its observation normalizer and
``run.json``: ``cenic-gym eval benchmarks/models/franka_pick_place_ppo/model.zip`` plays it); the run folder is
``runs/learning_franka/<name>``. Every run already in the JSON stays (``--name`` keys it) and is plotted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from bench_common import REPO, provenance, replace_marked_section
from learning_curve import curve, plot, train_for

ENV_ID = "CenicFranka-v0"
OUT = REPO / "benchmarks" / "learning_franka"
MODEL = REPO / "benchmarks" / "models" / "franka_pick_place_ppo" / "model.zip"  # with run.json: cenic-gym eval
RESULTS = REPO / "benchmarks" / "RESULTS.md"
FINAL_SEED = 10_000


def train_run(a, run_dir):
    """Train with the project's config (``--grasped-start`` / ``--placed-start`` override the training aids); returns
    (wall s, cfg, path of the final model)."""
    from cenic_gym.train import RunSpec, get_config

    cfg = get_config(ENV_ID, a.algo)
    for key in ("grasped_start", "placed_start", "accuracy"):
        if getattr(a, key) is not None:
            cfg["train_env_kwargs"] = dict(cfg["train_env_kwargs"], **{key: getattr(a, key)})
    spec = RunSpec(ENV_ID, a.algo, "sb3", cfg["env_kwargs"], a.seed, a.steps or cfg["steps"], a.workers,
                   max(cfg["num_envs"], a.workers), cfg["train_env_kwargs"])
    wall, path = train_for(spec, cfg, run_dir, a.minutes)
    return wall, cfg, path


def section(name, run, command):
    """The Markdown body of the RESULTS.md section of one run."""
    ev = run["evals"]
    cfg = run["config"]
    lines = provenance("benchmarks/learning_franka.py", command, run["wall_s"], run["load_before"][0],
                       ("stable-baselines3", "torch", "gymnasium"),
                       note=f"; 1/5/15-min load {', '.join(f'{x:.1f}' for x in run['load_after'])} at end")
    final = run["final"]
    workers = run.get("workers", 0)
    where = "in process" if not workers else f"over {workers} Ray workers"
    lines += [
        f"Run `{name}`: SB3 PPO on `{ENV_ID}` for {run['wall_s'] / 60:.1f} min of wall time, {ev[-1]['steps']} env "
        f"steps ({ev[-1]['steps'] / run['wall_s']:.0f} env steps/s with learning and evaluation included).",
        f"Config (`cenic_gym/train/configs.py` `PICK_PLACE_PPO`): env `{cfg['env_kwargs']}`, training envs only "
        f"`{cfg['train_env_kwargs']}`, {cfg['num_envs']} envs {where}, VecNormalize, PPO `{cfg['sb3']}`.",
        "Evaluation: the unmodified task (no grasped or placed starts), deterministic policy, "
        f"{cfg['eval_episodes']} episodes per point on held-out seeds; success = `info[\"is_success\"]` at the "
        "episode's end (box within 2.5 cm of the target, upright, resting, released, still).", "",
        "| env steps | wall [min] | eval return (100 steps) | eval success rate |",
        "|---:|---:|---:|---:|"]
    lines += [f"| {e['steps']} | {e['wall_s'] / 60:.1f} | {e['mean_return']:.1f} | {e['success_rate']:.2f} |"
              for e in ev]
    lines += ["", f"Final model, {final['episodes']} held-out episodes (seeds {FINAL_SEED}+): return "
              f"{final['mean_return']:.1f}, success rate {final['success_rate']:.2f} "
              f"(`cenic-gym eval benchmarks/models/{MODEL.parent.name}/{MODEL.name}`)."]
    if final.get("terms"):
        names = list(final["terms"])
        lines += ["", "Its reward terms, summed over an episode and averaged over the episodes (scaled as in the "
                  "reward):", "", "| " + " | ".join(names) + " |", "|" + "---:|" * len(names),
                  "| " + " | ".join(f"{final['terms'][k]:.1f}" for k in names) + " |"]
    lines += ["", "![learning curve](learning_franka.png)"]
    return "\n".join(lines)


def publish(name, run, path):
    """Copy the final model (with its normalizer and run record) to benchmarks/models/ and write the RESULTS.md
    section of run ``name``."""
    MODEL.parent.mkdir(exist_ok=True)
    for f in (path, path.with_name(path.stem + ".vecnormalize.pkl"), path.with_name("run.json")):
        shutil.copy(f, MODEL.parent / f.name)
    command = run.get("command", f"`python benchmarks/learning_franka.py --minutes 60 --workers 2 --name {name}`")
    RESULTS.write_text(replace_marked_section(
        RESULTS.read_text(), "franka-ppo", section(name, run, command),
        heading="## Learning: PPO on the Franka pick-and-place (CenicFranka-v0)"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--steps", type=int, default=None, help="env steps (default: the config's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=0, help="Ray actors for the training envs (0: in process)")
    p.add_argument("--grasped-start", type=float, default=None,
                   help="override the config's training-only grasped_start probability (0 switches it off)")
    p.add_argument("--placed-start", type=float, default=None,
                   help="override the config's training-only placed_start probability (0 switches it off)")
    p.add_argument("--train-accuracy", dest="accuracy", type=float, default=None,
                   help="the training envs' accuracy ε (the evaluation keeps the task's default, 1e-3)")
    p.add_argument("--final-episodes", type=int, default=20)
    p.add_argument("--name", default="ppo")
    p.add_argument("--algo", choices=("ppo", "sac"), default="ppo")
    p.add_argument("--no-results", action="store_true", help="do not write RESULTS.md or the model (pilots)")
    p.add_argument("--plot-only", action="store_true", help="redraw the plot from the JSON, no training")
    p.add_argument("--final-only", action="store_true",
                   help="no training: evaluate the final model of run --name again and rewrite its results")
    a = p.parse_args()
    js = OUT.with_suffix(".json")
    summary = json.loads(js.read_text()) if js.exists() else {}
    run_dir = REPO / "runs" / "learning_franka" / a.name
    if not a.plot_only:
        from cenic_gym.train import evaluate

        if not a.final_only:
            load0 = os.getloadavg()
            if run_dir.exists():
                shutil.rmtree(run_dir)
            wall, cfg, path = train_run(a, run_dir)
            summary[a.name] = dict(wall_s=wall, evals=curve(run_dir), load_before=load0, load_after=os.getloadavg(), workers=a.workers,
                                   config=cfg, command="`python benchmarks/learning_franka.py "
                                   + " ".join(sys.argv[1:]) + "`")
        elif a.name not in summary:
            raise SystemExit(f"--final-only: no run {a.name!r} in {js} (runs: {sorted(summary)})")
        path = run_dir / "model.zip"
        final = evaluate(path, episodes=a.final_episodes, seed=FINAL_SEED)
        summary[a.name]["final"] = dict(episodes=a.final_episodes, mean_return=final.mean_return,
                                        success_rate=final.success_rate, terms=final.mean_terms())
        js.write_text(json.dumps(summary, indent=1, default=str))
        print(final.summary(), final.mean_terms())
        if not a.no_results:
            publish(a.name, summary[a.name], path)
    plot({k: v["evals"] for k, v in summary.items()}, OUT.with_suffix(".png"),
         title="SB3 PPO, CenicFranka-v0 pick-and-place (deterministic evaluation on the plain task)",
         return_label="eval return (100 steps)")
    for k, v in summary.items():
        print(k, f"{v['wall_s'] / 60:.1f} min", [(e["steps"], round(e["mean_return"], 1), e["success_rate"])
                                                   for e in v["evals"]])


if __name__ == "__main__":
    main()
