"""Learning curve: SB3 SAC + HER on CenicFrankaGoal-v0's reach rung (cenic_gym/train/configs.py).

    python benchmarks/learning_curve.py [--minutes 15] [--steps 30000] [--reward-type sparse|dense]
                                        [--preset fetch|table] [--ee-delta-origin measured|target]
                                        [--out benchmarks/learning_curve] [--plot-only]

Trains with the project's config for at most ``--minutes`` of wall time (or ``--steps``), evaluating every
``eval_every`` env steps (deterministic policy, ``eval_episodes`` episodes: success rate and mean return). Writes
``<out>.png`` (success rate and return against env steps and wall minutes) and ``<out>.json`` (every evaluation:
steps, wall seconds, success rate, mean return), and prints the machine and its load. The run folder goes to
``runs/learning_curve/``. ``--preset fetch`` (default) is the config's task (``configs.REACH``: FetchReach's goal range
and threshold), ``--preset table`` the harder table-target variant (``configs.REACH_TABLE``). Every run already in
``<out>.json`` stays and is plotted, FetchReach's included (``benchmarks/fetchreach_curve.py``, run in its own venv:
gymnasium-robotics 1.4.2's FetchReach does not build under mujoco 4.0.0); ``--plot-only`` redraws without training.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from bench_common import REPO, git_rev, machine_line, versions
from learning_common import plot_curves


def wall_limit(seconds):
    """An SB3 callback that stops training after ``seconds`` of wall time."""
    from stable_baselines3.common.callbacks import BaseCallback

    class WallLimit(BaseCallback):
        def _on_training_start(self):
            self.t0 = time.perf_counter()

        def _on_step(self):
            return time.perf_counter() - self.t0 < seconds

    return WallLimit()


def train_for(spec, cfg, run_dir, minutes):
    """:func:`cenic_gym.train.sb3_backend.train` of ``spec`` / ``cfg`` into ``run_dir``, stopped after ``minutes`` of
    wall time (or at ``spec.steps``). Returns (wall s, path of the final model)."""
    from cenic_gym.train import sb3_backend

    t0 = time.perf_counter()
    path = sb3_backend.train(spec, cfg, run_dir, progress=False, callbacks=[wall_limit(60 * minutes)])
    return time.perf_counter() - t0, path


def curve(run_dir):
    """(steps, wall s since start, success rate, mean return) of each evaluation, from the run's TensorBoard log."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(Path(run_dir, "tb").rglob("events.out.tfevents.*"))
    acc = EventAccumulator(str(files[-1].parent))
    acc.Reload()
    if "eval/success_rate" not in acc.Tags()["scalars"]:  # stopped before its first evaluation
        return []
    succ = acc.Scalars("eval/success_rate")
    ret = {e.step: e.value for e in acc.Scalars("eval/mean_reward")}
    start = min(e.wall_time for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag))
    return [dict(steps=e.step, wall_s=e.wall_time - start, success_rate=e.value, mean_return=ret.get(e.step))
            for e in succ]


def run_cenic(minutes, steps, seed, out_dir, reward_type, preset, origin=None):
    from cenic_gym.train import RunSpec, configs, get_config

    cfg = get_config("CenicFrankaGoal-v0", "sac")
    cfg["eval_episodes"] = 10
    cfg["env_kwargs"] = dict(configs.REACH if preset == "fetch" else configs.REACH_TABLE, reward_type=reward_type)
    if origin is not None:
        cfg["env_kwargs"]["ee_delta_origin"] = origin
    spec = RunSpec("CenicFrankaGoal-v0", "sac", "sb3", cfg["env_kwargs"], seed, steps, 0, 1)
    return train_for(spec, cfg, out_dir, minutes)[0], cfg


def plot(curves, path, title="SB3 SAC + HER, reach (deterministic evaluation episodes, 10 per point)",
         return_label="eval return (50 steps)"):
    plot_curves([(name, c, "-", True) for name, c in curves.items()], path, title, return_label, legend_columns=2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--steps", type=int, default=30_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reward-type", choices=("sparse", "dense"), default="sparse",
                   help="the goal env's reward: sparse -1/0 at 2.5 cm, or dense -distance [m] (HER relabels both)")
    p.add_argument("--preset", choices=("fetch", "table"), default="fetch",
                   help="fetch: FetchReach's goal range (15 cm) and threshold (5 cm), deltas from the measured TCP "
                        "(configs.REACH); table: goals above the target region, 2.5 cm (configs.REACH_TABLE)")
    p.add_argument("--ee-delta-origin", choices=("measured", "target"), default=None,
                   help="override the preset's ee_delta_origin (an ablation of the measured-origin deltas)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "learning_curve"))
    p.add_argument("--plot-only", action="store_true", help="redraw the plot from <out>.json, no training")
    a = p.parse_args()
    runs = REPO / "runs" / "learning_curve"
    out = Path(a.out)
    summary = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else {}
    if not a.plot_only:
        load0 = os.getloadavg()
        origin = "" if a.ee_delta_origin is None else f", {a.ee_delta_origin}-origin deltas"
        name = f"reach_{a.preset}_{a.reward_type}" + ("" if a.ee_delta_origin is None else f"_{a.ee_delta_origin}")
        key = (f"CenicFrankaGoal-v0 reach (table task{origin}), {a.reward_type} reward" if a.preset == "table" else
               f"CenicFrankaGoal-v0 reach (FetchReach task{origin}), {a.reward_type} reward")
        wall, cfg = run_cenic(a.minutes, a.steps, a.seed, runs / name, a.reward_type, a.preset, a.ee_delta_origin)
        summary[key] = dict(wall_s=wall, evals=curve(runs / name), env_kwargs=cfg["env_kwargs"],
                            machine=dict(machine=machine_line(), code=git_rev(), load_before=load0,
                                         load_after=os.getloadavg(),
                                         versions=versions("stable-baselines3", "torch", "gymnasium")))
        out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    plot({k: v["evals"] for k, v in summary.items() if not k.startswith("_")}, out.with_suffix(".png"))
    for name, v in summary.items():
        if name.startswith("_"):
            continue
        best = max(v["evals"], key=lambda e: e["success_rate"])
        first90 = next((e for e in v["evals"] if e["success_rate"] >= 0.9), None)
        reached = "never" if first90 is None else \
            f"{first90['steps']} steps, {first90['wall_s'] / 60:.1f} min"
        print(f"{name}: {v['wall_s'] / 60:.1f} min, {v['evals'][-1]['steps']} steps; best success "
              f"{best['success_rate']:.2f} at {best['steps']} steps; >= 0.9 first at {reached}")
    print({k: v.get("machine", summary.get("_machine")) for k, v in summary.items() if not k.startswith("_")})


if __name__ == "__main__":
    main()
