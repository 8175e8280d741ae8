"""Learning curve: SB3 SAC + HER on CenicFrankaGoal-v0's reach rung (cenic_gym/train/configs.py), side by side with
FetchReach.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/learning_curve.py [--minutes 15] [--steps 30000]
        [--reward-type sparse|dense] [--preset fetch|table] [--ee-delta-origin measured|target] [--final-episodes 30]
        [--out benchmarks/learning_curve] [--no-write]
    python benchmarks/learning_curve.py --report     # rewrite the PNG and the RESULTS.md section from the JSON

Trains with the project's config (``CONFIGS["CenicFrankaGoal-v0"]["sac"]``) for at most ``--minutes`` of wall time
(or ``--steps``), evaluating every ``eval_every`` env steps (deterministic policy, ``eval_episodes`` episodes: success
rate and mean return), then plays the final model on ``--final-episodes`` fresh episodes (seeds 1000, 1001, ...).
``--preset fetch`` (default) is the config's task (``configs.REACH``: FetchReach's goal range and threshold), ``--preset
table`` the harder table-target variant (``configs.REACH_TABLE``); ``--reward-type`` and ``--ee-delta-origin``
override the preset (ablations). Every run is kept in ``<out>.json`` under its own key, FetchReach's included
(``benchmarks/fetchreach_curve.py``, run in its own venv: gymnasium-robotics 1.4.2's FetchReach does not build under
mujoco 4.0.0). Run folders: ``runs/learning_curve/``.

Writes ``<out>.json``, ``<out>.png`` (success rate and return against env steps and wall minutes) and the
``reach-learning`` section of ``benchmarks/RESULTS.md`` (``--no-write``: print only): the config's run (the default
options) and FetchReach's, with the two tasks' definitions, plus any other run of the JSON made at the same git
revision as the config's run. A default run takes about 15 minutes (the wall budget; 30 000 env steps at ~50 env
steps/s on an idle core take ~12); the FetchReach run (``--minutes 5``) about 5. Wall times want an idle machine.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import time
from pathlib import Path

from bench_common import REPO, git_rev, machine_line, provenance, versions, write_section
from learning_common import plot_curves

RECIPE_KEY = "CenicFrankaGoal-v0 reach (FetchReach task), sparse reward"  # the config's run (default options)
FINAL_SEED = 1000
PACKAGES = ("stable-baselines3", "torch", "gymnasium")


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
    """Train the reach; returns (wall s, config, path of the final model)."""
    from cenic_gym.train import RunSpec, configs, get_config

    cfg = get_config("CenicFrankaGoal-v0", "sac")
    cfg["eval_episodes"] = 10
    cfg["env_kwargs"] = dict(configs.REACH if preset == "fetch" else configs.REACH_TABLE)
    if reward_type is not None:
        cfg["env_kwargs"]["reward_type"] = reward_type
    if origin is not None:
        cfg["env_kwargs"]["ee_delta_origin"] = origin
    spec = RunSpec("CenicFrankaGoal-v0", "sac", "sb3", cfg["env_kwargs"], seed, steps, 0, 1)
    wall, path = train_for(spec, cfg, out_dir, minutes)
    return wall, cfg, path


def cenic_task(env_kwargs):
    """The reach's task definition, read from the env made with ``env_kwargs`` (the same keys as
    ``fetchreach_curve.fetch_task``)."""
    import importlib

    import gymnasium as gym

    importlib.import_module("cenic_gym")  # registers the ids
    env = gym.make("CenicFrankaGoal-v0", **env_kwargs)
    c = env.unwrapped.config
    r = c["reach_goal_range"]
    task = dict(goal=(f"start TCP + U(±{r:g} m)³" if r is not None else "10 cm above a target-region draw")
                + f", success < {100 * c['goal_threshold']:g} cm",
                action=f"Δxyz × {100 * c['ee_delta_scale'][0]:g} cm from the {c['ee_delta_origin']} TCP, IK, "
                       f"joint PD ({env.action_space.shape[0]}-D; rotation scale {c['ee_delta_scale'][1]:g})",
                period=f"{c['control_period']:g} s × {env.spec.max_episode_steps}",
                physics=f"{env.observation_space['observation'].shape[0]}-D; CENIC "
                        + (f"fixed {c['fixed_step']:g} s" if c["fixed_step"] else
                           f"ε = {c['accuracy']:.0e}".replace("e-0", "e-")))
    env.close()
    return task


def plot(curves, path, title="SB3 SAC + HER, reach (deterministic evaluation episodes, 10 per point)",
         return_label="eval return (50 steps)"):
    plot_curves([(name, c, "-", True) for name, c in curves.items()], path, title, return_label, legend_columns=2)


def reached(evals, bar=0.9):
    """(env steps, wall s) of the first evaluation at success ≥ ``bar``, or None."""
    e = next((e for e in evals if e["success_rate"] >= bar), None)
    return None if e is None else (e["steps"], e["wall_s"])


def row(name, run):
    ev, fin = run["evals"], run.get("final")
    hit = reached(ev)
    last = ev[-1] if ev else None
    final = "—" if fin is None else (f"{round(fin['success_rate'] * fin['episodes'])}/{fin['episodes']}, return "
                                     f"{fin['mean_return']:.2f} ± {fin['std_return']:.2f}")
    return (f"| {name} | {'never' if hit is None else hit[0]} | "
            f"{'—' if hit is None else f'{hit[1] / 60:.1f} min'} | "
            + ("—" if last is None else f"{100 * last['success_rate']:.0f} % at {last['steps']} steps "
               f"({run['wall_s'] / 60:.1f} min)") + f" | {final} |")


def old_header(run):
    """Provenance lines of a run recorded before runs kept their own (no date in the JSON)."""
    m = run.get("machine", {})
    return ["_Generated by `benchmarks/learning_curve.py`; rerun the command, do not edit by hand._", "",
            f"- `{run.get('command', 'python benchmarks/learning_curve.py')}` · total runtime {run['wall_s']:.0f} s "
            f"· date not recorded · git {m.get('code', '?')}",
            f"- {m.get('machine', '?')} · {m.get('versions', '?')}", ""]


def section(summary, png="learning_curve.png"):
    """The Markdown body of the ``reach-learning`` section from the JSON ``summary``, and the runs it shows."""
    from cenic_gym.train import get_config

    ours = summary.get(RECIPE_KEY)
    if ours is None:
        raise SystemExit(f"no run of the config ({RECIPE_KEY!r}) in the JSON: run benchmarks/learning_curve.py")
    fetch_key = next((k for k in summary if k.startswith("FetchReach")), None)
    code = ours.get("machine", {}).get("code")
    shown = {"CenicFrankaGoal-v0 + `configs.REACH` (the config)": ours}
    if fetch_key:
        shown[fetch_key] = summary[fetch_key]
    shown.update({k: v for k, v in summary.items() if k not in (RECIPE_KEY, fetch_key) and not k.startswith("_")
                  and v.get("machine", {}).get("code") == code})
    cfg = ours.get("config") or get_config("CenicFrankaGoal-v0", "sac")
    sb3, her = cfg["sb3"], cfg["sb3"]["her"]
    fetch = summary.get(fetch_key, {})
    fv = fetch.get("machine", {}).get("versions", {})
    fv = ", ".join(f"{k} {v}" for k, v in fv.items()) if isinstance(fv, dict) else fv
    fin = ours.get("final", {})
    lines = [*(ours.get("provenance") or old_header(ours)),
             f"SB3 SAC + HER, `CONFIGS['CenicFrankaGoal-v0']['sac']` (HER {her['goal_selection_strategy']} × "
             f"{her['n_sampled_goal']}, lr {sb3['learning_rate']:g}, γ {sb3['gamma']:g}, τ {sb3['tau']:g}, batch "
             f"{sb3['batch_size']}, {sb3['policy_kwargs']['net_arch']}, VecNormalize), one env in process, seed "
             f"{ours.get('seed', 0)}; evaluation every {cfg['eval_every']} env steps on 10 deterministic episodes; the "
             f"final model on {fin.get('episodes', '?')} fresh episodes (seeds {FINAL_SEED}+). Target: ≥ 90 % within "
             "15 minutes.",
             "FetchReach-v4 (Gymnasium-Robotics, MuJoCo) runs the same dict in its own venv: "
             + (f"`{fetch.get('command', 'benchmarks/fetchreach_curve.py')}` ({fetch.get('date', 'date not recorded')}"
                f", git {fetch.get('machine', {}).get('code', '?')}; {fv})."
                if fetch else "not in the JSON (run `benchmarks/fetchreach_curve.py`)."),
             "", "| run | env steps to ≥ 90 % eval success | wall to it | last evaluation | final model, fresh "
             "episodes |", "|---|---|---|---|---|"]
    lines += [row(name, run) for name, run in shown.items()]
    ct = ours.get("task") or cenic_task(ours["env_kwargs"])
    ft = fetch.get("task", {})
    lines += ["", "| task | CenicFrankaGoal-v0 + `configs.REACH` | FetchReach-v4 |", "|---|---|---|"]
    lines += [f"| {label} | {ct[k]} | {ft.get(k, '?')} |" for label, k in (
        ("goal, success", "goal"), ("action", "action"), ("control period × episode steps", "period"),
        ("observation, physics", "physics"))]
    lines += ["", f"![reach learning curves]({png})"]
    return "\n".join(lines), shown


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--steps", type=int, default=30_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reward-type", choices=("sparse", "dense"), default=None,
                   help="override the goal env's reward (default: the id's, sparse -1/0; dense: -distance [m])")
    p.add_argument("--preset", choices=("fetch", "table"), default="fetch",
                   help="fetch: FetchReach's goal range (15 cm) and threshold (5 cm), deltas from the measured TCP "
                        "(configs.REACH, the config's); table: goals above the target region, 2.5 cm "
                        "(configs.REACH_TABLE)")
    p.add_argument("--ee-delta-origin", choices=("measured", "target"), default=None,
                   help="override the preset's ee_delta_origin (an ablation of the measured-origin deltas)")
    p.add_argument("--final-episodes", type=int, default=30, help="fresh episodes of the final model (default 30)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "learning_curve"))
    p.add_argument("--no-write", action="store_true", help="print only; leave the JSON, PNG and RESULTS.md alone")
    p.add_argument("--report", action="store_true", help="no training: rewrite the PNG and RESULTS.md from the JSON")
    a = p.parse_args()
    out = Path(a.out)
    js = out.with_suffix(".json")
    summary = json.loads(js.read_text()) if js.exists() else {}
    if not a.report:
        from cenic_gym.train import evaluate

        t_start, load0 = time.perf_counter(), os.getloadavg()
        reward = a.reward_type or "sparse"
        origin = "" if a.ee_delta_origin is None else f", {a.ee_delta_origin}-origin deltas"
        name = f"reach_{a.preset}_{reward}" + ("" if a.ee_delta_origin is None else f"_{a.ee_delta_origin}")
        key = f"CenicFrankaGoal-v0 reach ({'table' if a.preset == 'table' else 'FetchReach'} task{origin}), " \
              f"{reward} reward"
        run_dir = REPO / "runs" / "learning_curve" / name
        wall, cfg, path = run_cenic(a.minutes, a.steps, a.seed, run_dir, a.reward_type, a.preset, a.ee_delta_origin)
        final = evaluate(path, episodes=a.final_episodes, seed=FINAL_SEED)
        import numpy as np

        command = f"`python benchmarks/learning_curve.py {shlex.join(sys.argv[1:])}`".replace(" `", "`")
        summary[key] = dict(
            wall_s=wall, evals=curve(run_dir), env_kwargs=cfg["env_kwargs"], seed=a.seed, command=command,
            config={k: cfg[k] for k in ("sb3", "eval_every", "eval_episodes", "normalize")},
            task=cenic_task(cfg["env_kwargs"]),
            final=dict(episodes=a.final_episodes, success_rate=final.success_rate, mean_return=final.mean_return,
                       std_return=float(np.std(final.returns))),
            date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            machine=dict(machine=machine_line(), code=git_rev(), load_before=load0, load_after=os.getloadavg(),
                         versions=versions(*PACKAGES)),
            provenance=provenance("benchmarks/learning_curve.py", command, time.perf_counter() - t_start, load0[0],
                                  PACKAGES))
        print(f"{key}: final model {final.summary()}")
        if not a.no_write:
            js.write_text(json.dumps(summary, indent=1, default=str))
    for name, v in summary.items():
        if name.startswith("_"):
            continue
        hit = reached(v["evals"])
        print(f"{name}: {v['wall_s'] / 60:.1f} min, {v['evals'][-1]['steps'] if v['evals'] else 0} steps; >= 0.9 "
              f"first at " + ("never" if hit is None else f"{hit[0]} steps, {hit[1] / 60:.1f} min"))
    if RECIPE_KEY not in summary:
        print(f"no run of the config ({RECIPE_KEY!r}) in {js}: no section written")
        return
    body, shown = section(summary, out.with_suffix(".png").name)
    print(body)
    if not a.no_write:
        plot({k: v["evals"] for k, v in shown.items()}, out.with_suffix(".png"))
        write_section("reach-learning", body, "## Learning: the Franka reach, side by side with FetchReach")


if __name__ == "__main__":
    main()
