"""CenicAllegro-v0: does SB3 PPO make measurable progress in a fixed wall budget?

    python benchmarks/allegro_ppo.py [--budget 1500] [--eval-every 4096] [--eval-episodes 8] [--episode-steps 100]
    python benchmarks/allegro_ppo.py --report benchmarks/allegro_ppo.json   # rewrite PNG + section, no training

(the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself unless they are set; torch runs one thread.)

Trains SB3 PPO through the project's training stack (:func:`cenic_gym.train.sb3_backend.train`, the
``CONFIGS["CenicAllegro-v0"]["ppo"]`` hyperparameters, one in-process env) on ``CenicAllegro-v0`` with goals about
the palm normal (``goal="z"``: the start orientation turned by a uniform yaw) and ``--episode-steps``-step episodes,
until ``--budget`` seconds of wall time have passed (training and the periodic evaluations together). Every
``--eval-every`` env steps, and before the first update (the untrained policy), the deterministic policy runs the
same ``--eval-episodes`` seeded evaluation episodes (seeds 1000, 1001, ...: not training seeds), measured on the
true cube state by :func:`~cenic_gym.envs.allegro_cube.rotation_episode`: episode return, rotation about the palm
normal (|final|, and the largest |rotation| reached), drop rate, goals reached. Baseline: uniform random actions
on the same seeds. Writes the learning curve ``benchmarks/allegro_ppo.png``, the raw numbers
``benchmarks/allegro_ppo.json`` and the ``allegro-ppo`` section of ``benchmarks/RESULTS.md`` (``--no-write``: print
only); the section's curve table shows five evaluations, the JSON and the PNG all. A run takes ``--budget`` (default
25 minutes) plus the random baseline (seconds); its wall-clock numbers want an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from bench_common import git_rev, provenance, warm_up, write_section  # noqa: E402
from cenic_gym.envs.allegro_cube import rotation_episode  # noqa: E402  (importing cenic_gym registers the envs)
from cenic_gym.train.common import RunSpec  # noqa: E402
from cenic_gym.train.configs import get_config  # noqa: E402

HERE = Path(__file__).resolve().parent
PACKAGES = ("numba", ("pinocchio (pin)", "pin"), "numpy", "gymnasium", "stable_baselines3", "torch")
ENV_ID = "CenicAllegro-v0"
EVAL_SEED = 1000  # evaluation episode k uses seed EVAL_SEED + k (training resets draw from the PPO seed's stream)
METRICS = ("return", "abs_rotation_deg", "max_rotation_deg", "drop_rate", "successes")


def env_kwargs(episode_steps):
    """Training and evaluation env options: the config's, goals about the palm normal, short episodes."""
    return {**get_config(ENV_ID, "ppo")["env_kwargs"], "goal": "z", "max_episode_steps": episode_steps}


class _Policy:
    """``obs -> action`` with the ``reset()`` that :func:`rotation_episode` calls."""

    def __init__(self, act):
        self.act = act

    def reset(self):
        pass

    def __call__(self, obs):
        return self.act(obs)


def evaluate(act, kwargs, episodes, steps):
    """Mean metrics of ``episodes`` seeded episodes (seeds EVAL_SEED + k) of the policy ``act(obs) -> action``:
    return, |final rotation| and largest |rotation| about the palm normal [deg], drop rate, goals reached."""
    env = gym.wrappers.RecordEpisodeStatistics(gym.make(ENV_ID, **kwargs))
    rows = []
    try:
        for k in range(episodes):
            r = rotation_episode(env, _Policy(act), EVAL_SEED + k, steps)
            if env.episode_count != k + 1:  # steps == max_episode_steps: every episode ends inside rotation_episode
                raise RuntimeError(f"evaluation episode {k} did not end within {steps} steps")
            rows.append(dict(ret=float(env.return_queue[-1]), rot=abs(math.degrees(r["rotation"])),
                             maxrot=math.degrees(r["max_rotation"]), drop=float(r["dropped"]),
                             succ=float(env.unwrapped.successes)))
    finally:
        env.close()
    return {"return": float(np.mean([x["ret"] for x in rows])),
            "abs_rotation_deg": float(np.mean([x["rot"] for x in rows])),
            "max_rotation_deg": float(np.mean([x["maxrot"] for x in rows])),
            "drop_rate": float(np.mean([x["drop"] for x in rows])),
            "successes": float(np.mean([x["succ"] for x in rows])),
            "per_episode_return": [x["ret"] for x in rows]}


def random_policy(seed):
    rng = np.random.default_rng(seed)
    return lambda obs: rng.uniform(-1.0, 1.0, 16).astype(np.float32)


def make_callback(budget, eval_every, episodes, steps, kwargs, curve):
    """SB3 callback: stops training after ``budget`` wall seconds; evaluates the deterministic policy (through the
    run's observation normalization) at the start, every ``eval_every`` env steps and at the end, appending
    ``dict(steps, wall, **metrics)`` to ``curve``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class WallBudgetEval(BaseCallback):
        def _act(self, obs):
            norm = self.model.get_vec_normalize_env()
            o = obs if norm is None else norm.normalize_obs(obs)
            return self.model.predict(o, deterministic=True)[0]

        def _eval(self):
            t0 = time.perf_counter()
            m = evaluate(self._act, kwargs, episodes, steps)
            curve.append(dict(steps=int(self.num_timesteps), wall=time.perf_counter() - self.t0,
                              eval_wall=time.perf_counter() - t0, **m))
            print(f"[{curve[-1]['wall']:6.0f} s] {self.num_timesteps:7d} steps: return {m['return']:8.2f}, "
                  f"|rotation| {m['abs_rotation_deg']:5.1f}°, max {m['max_rotation_deg']:5.1f}°, "
                  f"drops {m['drop_rate']:.2f}, goals {m['successes']:.2f} (eval {curve[-1]['eval_wall']:.0f} s)",
                  flush=True)

        def _on_training_start(self):
            self.t0 = time.perf_counter()
            self.next_eval = eval_every
            self._eval()

        def _on_step(self):
            if self.num_timesteps >= self.next_eval:
                self.next_eval += eval_every
                self._eval()
            return time.perf_counter() - self.t0 < budget

        def _on_training_end(self):
            if curve[-1]["steps"] != self.num_timesteps:
                self._eval()

    return WallBudgetEval()


def plot(curve, baseline, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    x = [c["steps"] for c in curve]
    for ax, key, label in zip(axes, ("return", "max_rotation_deg", "drop_rate"),
                              ("episode return", "largest |rotation| about palm normal [°]", "drop rate")):
        ax.plot(x, [c[key] for c in curve], "o-", label="PPO (deterministic)")
        ax.axhline(baseline[key], color="gray", ls="--", label="random actions")
        ax.set_xlabel("env steps")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"{ENV_ID} (goal='z'): SB3 PPO, {curve[-1]['wall']:.0f} s wall")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def row(name, m):
    return (f"| {name} | {m['return']:.2f} | {m['abs_rotation_deg']:.1f} | {m['max_rotation_deg']:.1f} | "
            f"{m['drop_rate']:.2f} | {m['successes']:.2f} |")


def verdict(baseline, untrained, final):
    """Plain verdict on the final policy against the random and untrained baselines (same seeded episodes): the
    return gain must exceed 2 standard errors of the final mean, and must not come from dropping the cube more
    often (a drop ends the episode, and so ends the per-step orientation penalty: the reward pays for drops)."""
    ref = max(untrained["return"], baseline["return"])
    gained = final["return"] - ref
    se2 = 2 * float(np.std(final["per_episode_return"]) / math.sqrt(len(final["per_episode_return"])))
    more_drops = final["drop_rate"] > max(untrained["drop_rate"], baseline["drop_rate"])
    rot_gain = final["max_rotation_deg"] - max(untrained["max_rotation_deg"], baseline["max_rotation_deg"])
    if gained > se2 and not more_drops:
        label = "progress"
    elif gained > se2:
        label = "return improved, but by dropping the cube more often: not progress on the task"
    else:
        label = "no measurable progress in return"
    return (f"**Verdict: {label}.** Final policy return {final['return']:.2f} vs untrained {untrained['return']:.2f} "
            f"and random {baseline['return']:.2f} (gain {gained:+.2f}; 2 standard errors of the final mean = "
            f"{se2:.2f}); largest rotation about the palm normal {final['max_rotation_deg']:.1f}° vs "
            f"{untrained['max_rotation_deg']:.1f}° untrained and {baseline['max_rotation_deg']:.1f}° random "
            f"({rot_gain:+.1f}°); drop rate {final['drop_rate']:.2f} vs {untrained['drop_rate']:.2f} / "
            f"{baseline['drop_rate']:.2f}; goals reached per episode {final['successes']:.2f}."
            + (" The rotation of dropped episodes includes the cube tumbling out of the hand: not in-hand rotation, "
               "and a drop fails the quarter-turn criterion." if final["drop_rate"] > 0 else ""))


def old_header(run, command):
    """Provenance lines of a run recorded before the JSON kept its own."""
    load0, load1 = run["load"]
    return ["_Generated by `benchmarks/allegro_ppo.py`; rerun the command, do not edit by hand._", "",
            f"- `{command}` · total runtime {run['curve'][-1]['wall'] + run['baseline_wall']:.0f} s · {run['date']} "
            f"· git {run['git']}", f"- machine not recorded; load {load0:.2f} → {load1:.2f}", ""]


def report(run, write=True):
    """Write the PNG and the ``allegro-ppo`` section of RESULTS.md from a run record (what allegro_ppo.json
    holds: args, baseline, curve, baseline_wall, load, date, git, provenance)."""
    args, baseline, curve = run["args"], run["baseline"], run["curve"]
    wall, steps = curve[-1]["wall"], curve[-1]["steps"]
    eval_wall = sum(c["eval_wall"] for c in curve)
    untrained, final = curve[0], curve[-1]
    best = max(curve[1:] or curve, key=lambda c: c["return"])
    defaults = dict(budget=1500.0, eval_every=4096, eval_episodes=8, episode_steps=100, seed=0)
    command = "python benchmarks/allegro_ppo.py" + "".join(
        f" --{k.replace('_', '-')} {args[k]:g}" for k, v in defaults.items() if args[k] != v)
    table = ["| policy (same seeded episodes) | return | mean \\|final rotation\\| [°] | "
             "mean largest \\|rotation\\| [°] | drop rate | goals reached |", "|---|---|---|---|---|---|",
             row("random actions", baseline), row("PPO untrained (0 steps)", untrained),
             row(f"PPO best-return evaluation ({best['steps']} steps)", best), row(f"PPO final ({steps} steps)", final)]
    picks = sorted({round(k * (len(curve) - 1) / 4) for k in range(5)})
    curve_table = ["| env steps | wall [s] | return | largest \\|rotation\\| [°] | drop rate |",
                   "|---|---|---|---|---|"]
    curve_table += [f"| {c['steps']} | {c['wall']:.0f} | {c['return']:.2f} | {c['max_rotation_deg']:.1f} | "
                    f"{c['drop_rate']:.2f} |" for c in (curve[i] for i in picks)]
    body = "\n".join([
        *(run.get("provenance") or old_header(run, command)),
        f"SB3 PPO via `cenic_gym.train.sb3_backend.train`, `CONFIGS['{ENV_ID}']['ppo']`, 1 env in process, "
        f"`goal='z'` (start orientation turned about the palm normal by U(−π, π)), {args['episode_steps']}-step "
        f"episodes, ε = 1e-3; {steps} env steps in {wall:.0f} s ({eval_wall:.0f} s of it evaluations).",
        f"Each evaluation: the deterministic policy on {args['eval_episodes']} seeded episodes (seeds {EVAL_SEED}–"
        f"{EVAL_SEED + args['eval_episodes'] - 1}, never used for training), measured on the true cube state by "
        "`rotation_episode`; the random baseline runs uniform actions on the same seeds.",
        "",
        *table,
        "",
        verdict(baseline, untrained, final),
        "",
        *curve_table,
        "",
        "![PPO on CenicAllegro-v0](allegro_ppo.png)",
    ])
    print(body)
    if write:
        plot(curve, baseline, HERE / "allegro_ppo.png")
        write_section("allegro-ppo", body, "## CenicAllegro-v0: PPO progress")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=float, default=1500.0, help="wall seconds of training + evaluation (1500)")
    ap.add_argument("--eval-every", type=int, default=4096, help="env steps between evaluations (4096)")
    ap.add_argument("--eval-episodes", type=int, default=8, help="seeded episodes per evaluation (8)")
    ap.add_argument("--episode-steps", type=int, default=100, help="env steps per episode (100 = 5 s)")
    ap.add_argument("--seed", type=int, default=0, help="PPO seed (0)")
    ap.add_argument("--out", default=None, help="run folder (default: a temporary folder)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md and the PNG alone")
    ap.add_argument("--report", default=None, metavar="JSON",
                    help="no training: rewrite the PNG and the RESULTS.md section from a saved allegro_ppo.json")
    args = ap.parse_args()
    if args.report is not None:
        report(json.loads(Path(args.report).read_text()), write=not args.no_write)
        return 0
    for name in ("eval_every", "eval_episodes", "episode_steps"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not args.budget > 0:
        raise ValueError(f"--budget must be > 0 seconds, got {args.budget}")
    from cenic_gym.train.sb3_backend import train

    load0, t_start = os.getloadavg()[0], time.perf_counter()
    warm_up()
    kwargs = env_kwargs(args.episode_steps)
    t0 = time.perf_counter()
    baseline = evaluate(random_policy(args.seed), kwargs, args.eval_episodes, args.episode_steps)
    print(f"random actions: {baseline}", flush=True)
    t_base = time.perf_counter() - t0
    cfg = get_config(ENV_ID, "ppo")
    never = 10**12
    cfg.update(num_envs=1, eval_every=never, checkpoint_every=never)  # evaluation: the callback below
    spec = RunSpec(ENV_ID, "ppo", "sb3", env_kwargs=kwargs, seed=args.seed, steps=never, workers=0, num_envs=1)
    curve = []
    cb = make_callback(args.budget, args.eval_every, args.eval_episodes, args.episode_steps, kwargs, curve)
    with tempfile.TemporaryDirectory() as tmp:
        train(spec, cfg, Path(args.out or tmp), progress=False, callbacks=[cb])
    command = f"`python benchmarks/allegro_ppo.py {shlex.join(sys.argv[1:])}`".replace(" `", "`")
    run = dict(args={k: v for k, v in vars(args).items() if k != "report"}, baseline=baseline, curve=curve,
               baseline_wall=t_base, load=[load0, os.getloadavg()[0]], git=git_rev(),
               date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               provenance=provenance("benchmarks/allegro_ppo.py", command + " (sets NUMBA_NUM_THREADS=1, "
                                     "OMP_NUM_THREADS=1; torch 1 thread)", time.perf_counter() - t_start, load0,
                                     PACKAGES))
    print(json.dumps(run, indent=1))
    if not args.no_write:
        (HERE / "allegro_ppo.json").write_text(json.dumps(run, indent=1))
    report(run, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
