"""The Go1 joystick recipe, three seeds: learning curves, held-out success and falls, command tracking per component,
the shipped policy, its sim-to-sim with MuJoCo as the physics and its accuracy sweep.

    python benchmarks/learning_quadruped.py [--seeds 0 1 2] [--parallel 2] [--episodes 50]
        [--sim2sim-episodes 20] [--sweep-episodes 10] [--plot-only] [--note TEXT]

Each seed runs exactly what a user runs, ``cenic-gym train CenicQuadruped-v0 --seed S`` (the env's default recipe:
``CONFIGS["CenicQuadruped-v0"]["dagger"]``), ``--parallel`` at a time, into ``runs/learning_quadruped/seedS``
(``learning_common``: ``--resume`` of an interrupted seed, a finished one kept). Each final ``model.zip`` plays
``--episodes`` held-out episodes of the UNMODIFIED task (seeds 10 000…: 1000-step episodes, default command
distribution and resampling, flat ground, ε = 1e-3, the env's success test, the network alone acting), beside the
recipe's teacher (``GaitTeacher``) on the same episodes. Falls are the episodes the env terminated. Tracking: at every
step where the command has been held for at least 1 s, the error of the 0.5 s velocity average the success test
reads, per component (v_x, v_y, ω_z), binned by the magnitude of that component of the command. The best seed ships
to ``training/policies/CenicQuadruped-v0/``; its held-out episodes are rerun with MuJoCo as the physics (the env's
generated MuJoCo twin, 1 ms implicitfast steps: ``cenic_gym.sim2real.sim2sim``) and its accuracy sweep
(``cenic_gym.sim2real.accuracy``: ε = 1e-1 … 1e-5 and fixed steps of 50, 10 and 2 ms). Writes
``benchmarks/learning_quadruped.{json,png}``, ``benchmarks/learning_quadruped_tracking.png`` and the RESULTS.md
section ``quadruped-learning``. About 45 min on 2 cores; ``--plot-only`` rebuilds the plots and the section from the
JSON. Wall times are reported, so run it on an otherwise idle machine (or say what else ran with ``--note``).
"""
from __future__ import annotations

import json
import os
import shlex
import sys
import time

import numpy as np

from bench_common import provenance
from learning_common import (FINAL_SEED, Benchmark, arg_parser, best_seed, curve, files_table, median_success,
                             publish_curves, ship, stamp, stamp_note, steps_to, sweep_verdict, table, train_seeds)

ENV_ID = "CenicQuadruped-v0"
BENCH = Benchmark(ENV_ID, "learning_quadruped")
OUT, POLICY = BENCH.out, BENCH.policy
HELD = 50  # control periods (1 s) a command must have been held before its tracking error counts
COMPONENTS = ("v_x [m/s]", "v_y [m/s]", "ω_z [rad/s]")
BINS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)  # |command component| bin edges (exact zeros are their own bin)


def recipe():
    from cenic_gym.train import get_config

    return get_config(ENV_ID, "dagger")


class _Tracking:
    """A :func:`~cenic_gym.sim2real.rollout.run_episode` hook (the perturbation interface: ``apply`` after the reset,
    ``before_step`` before every step): puts ``peer``'s physics in place of the simulator (None: CENIC's) and keeps
    (command, error of the averaged velocity) of every state whose command has been held ``HELD`` steps."""

    def __init__(self, peer=None):
        self.peer, self.real, self.held, self.last = peer, None, 0, None
        self.command, self.error = [], []

    def apply(self, env):
        from cenic_gym.sim2real.sim2sim import peer_options, peer_physics

        u = env.unwrapped
        self.real, self.held, self.last = u.sim, 0, u.command.copy()
        if self.peer is not None:
            u.sim = peer_physics(self.peer)(self.real, **peer_options(self.peer))

    def before_step(self, env, step):
        if step > 0:
            self.record(env)

    def record(self, env):
        u = env.unwrapped
        self.held = self.held + 1 if np.array_equal(self.last, u.command) else 0
        self.last = u.command.copy()
        if self.held >= HELD:
            self.command.append(u.command.copy())
            self.error.append(u.vel_avg - u.command)

    def restore(self, env):
        env.unwrapped.sim = self.real

    def describe(self):
        return {"physics": self.peer or "cenic"}


def track(policy, seeds, env_kwargs, peer=None):
    """``policy`` (a ``cenic_gym.sim2real`` policy) on held-out episodes: success, falls, returns, and the tracking
    samples (:class:`_Tracking`). ``peer`` ("mujoco"): that simulator is the physics (its default options)."""
    from cenic_gym.sim2real.rollout import make_env, run_episode

    env = make_env(ENV_ID, **env_kwargs)
    tracking, episodes = _Tracking(peer), []
    for seed in seeds:
        episodes.append(run_episode(env, policy, seed, perturbation=tracking))
        tracking.record(env)  # the state after the last step
        tracking.restore(env)
    env.close()
    command, error = np.array(tracking.command), np.array(tracking.error)
    return dict(episodes=len(episodes), success_rate=float(np.mean([r.success for r in episodes])),
                falls=float(np.mean([r.terminated for r in episodes])),
                mean_return=float(np.mean([r.ret for r in episodes])),
                mean_length=float(np.mean([r.steps for r in episodes])),
                tracking=binned(command, error), mean_abs_error=np.abs(error).mean(axis=0).tolist())


def instant_tracker(seeds):
    """Success rate on the episodes ``seeds`` of a robot whose velocity becomes each new command at once: the ceiling
    the command process and the success test leave any policy. The test reads a 0.5 s average of the velocity at the
    episode's end, so a command changed shortly before the end fails even then. No physics: the env's own command
    process (same draws as in a rollout) and its own ``evaluate()`` on the average that velocity would have."""
    from cenic_gym.sim2real.rollout import make_env

    wrapped = make_env(ENV_ID)
    env = wrapped.unwrapped
    alpha = min(1.0, env.control_period / env.config["tracking_window"])
    success = []
    for seed in seeds:
        env.reset(seed=seed)
        for _ in range(wrapped.spec.max_episode_steps):
            env._advance_command()
            env.vel_avg = env.vel_avg + alpha * (env.command - env.vel_avg)
        success.append(env.evaluate()["success"])
    wrapped.close()
    return float(np.mean(success))


def binned(command, error):
    """Per component: [(bin label, samples, mean |error|)] over |command| bins (zero commands apart)."""
    out = []
    for c in range(3):
        mag, err = np.abs(command[:, c]), np.abs(error[:, c])
        rows = [("0", int((mag == 0).sum()), float(err[mag == 0].mean()) if (mag == 0).any() else None)]
        for lo, hi in zip(BINS[:-1], BINS[1:]):
            m = (mag > lo) & (mag <= hi)
            if m.any():
                rows.append((f"{lo:g}–{hi:g}", int(m.sum()), float(err[m].mean())))
        out.append(rows)
    return out


def policy_of(path):
    from cenic_gym.sim2real.policy import load_policy

    return load_policy(path, ENV_ID)


def teacher_policy():
    from cenic_gym.envs.quadruped import GaitTeacher
    from cenic_gym.sim2real.policy import ScriptedPolicy

    return ScriptedPolicy(GaitTeacher, name="GaitTeacher")


def final_seeds(episodes):
    return range(FINAL_SEED, FINAL_SEED + episodes)


def accuracy(episodes):
    from cenic_gym.sim2real.accuracy import accuracy_sweep, sweep_table

    sweep = accuracy_sweep(ENV_ID, policy_of(POLICY / "model.zip"), range(episodes), env_kwargs=recipe()["env_kwargs"],
                           progress=lambda label, s: print(f"sweep {label}: {s['success_rate']:.2f} "
                                                           f"({s['wall_s']:.0f} s)", flush=True))
    return dict(table=sweep_table(sweep), flagged=list(sweep.flagged), reference=sweep.reference,
                rows={r.label: dict(success=r.summary["success_rate"], penetration=r.summary["max_penetration"],
                                    substeps=r.summary["substeps_per_step"]) for r in sweep.rows})


def plot_tracking(rows, path):
    """Mean |tracking error| per component against the command's magnitude, one line per (policy, physics)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for label, result in rows:
        for c, ax in enumerate(axes):
            bins = result["tracking"][c]
            ax.plot([b[0] for b in bins], [b[2] for b in bins], marker="o", label=label)
    for c, ax in enumerate(axes):
        ax.axhline(0.5 if c == 2 else 0.25, ls="--", color="gray", lw=1)
        ax.set_xlabel(f"|command {COMPONENTS[c]}|")
        ax.set_ylabel(f"mean |error| of the 0.5 s average, {COMPONENTS[c]}")
        ax.tick_params(axis="x", labelrotation=45)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{ENV_ID}: tracking error per command component (commands held ≥ {HELD * 0.02:g} s; dashed: the "
                 "success test's tolerance)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def tracking_table(rows):
    lines = ["| policy | physics | episodes | success | falls | mean |error| v_x / v_y / ω_z |",
             "|---|---|---:|---:|---:|---|"]
    for label, physics, r in rows:
        e = r["mean_abs_error"]
        lines.append(f"| {label} | {physics} | {r['episodes']} | {r['success_rate']:.2f} | {r['falls']:.2f} | "
                     f"{e[0]:.3f} m/s / {e[1]:.3f} m/s / {e[2]:.3f} rad/s |")
    return lines


def section(data, plot_only=False):
    cfg = recipe()
    ours = data[ENV_ID]
    d = cfg["dagger"]
    lines = provenance("benchmarks/learning_quadruped.py", ours["command"], ours["runtime_s"], ours["load0"],
                       ("stable-baselines3", "torch", "gymnasium", "numba", "mujoco"),
                       note=stamp_note(ours, plot_only))
    lines += [
        f"Recipe: `cenic-gym train {ENV_ID} --seed S` (`dagger`, `QUADRUPED_DAGGER` in `cenic_gym/train/configs.py`): "
        f"the env's gait action mode (`{cfg['env_kwargs']}`: a trot generator the policy drives with a stance "
        "velocity, a step offset, a posture and residual joint offsets; the phase observed), DAgger from the feedback "
        "teacher `GaitTeacher` (Raibert foot placement and a push towards the stance velocity, from the observation "
        f"alone); the network (SB3 SAC actor, {cfg['sb3']['policy_kwargs']['net_arch']}) acts from the task's "
        f"observation; the task's commands, 1000-step episodes and ε = 1e-3; {d['episodes_per_round']} episodes per "
        f"round, β = {d['beta0']}·{d['beta_decay']}^round, {d['gradient_steps']} Adam steps of {d['batch_size']} per "
        f"round, {cfg['steps']} env steps per seed; seeds ran {ours['parallel']} at a time, one thread each (besides "
        f"them: {ours.get('note', 'nothing')}). "
        f"Final: {ours['runs'][0]['final']['episodes']} held-out episodes (seeds {FINAL_SEED}…) of the unmodified "
        "task "
        f"(`cenic-gym eval runs/learning_quadruped/seedS/model.zip --episodes 50 --seed {FINAL_SEED}`); success = "
        "`info[\"is_success\"]` at the episode's end (not fallen, the 0.5 s velocity average within 0.25 m/s and "
        "0.5 rad/s of the command); falls = episodes the env terminated.", ""]
    rows, med = table(ours["runs"], ENV_ID)
    falls = float(np.median([r["final"]["falls"] for r in ours["runs"]]))
    lines += rows + ["", "Falls per seed: " + ", ".join(f"seed {r['seed']} {r['final']['falls']:.2f}"
                                                        for r in ours["runs"])
                     + f" (median **{falls:.2f}**). Median final success over the seeds: **{med:.2f}**; env steps "
                     f"to the first evaluation at ≥ 0.8 success: {steps_to(ours['runs'])}. A robot whose velocity "
                     "became each new command at once would succeed in "
                     f"{ours['instant_tracker']:.2f} of the same episodes (`instant_tracker`: the success test reads "
                     "a 0.5 s average, so a command changed shortly before the end fails even then). "
                     "![learning curves](learning_quadruped.png)", "",
                     f"**Tracking** (commands held ≥ {HELD * 0.02:g} s; the shipped seed {ours['shipped']}, the "
                     "teacher, and the shipped policy with MuJoCo as the physics on the first "
                     f"{ours['shipped_mujoco']['episodes']} of "
                     "the same episodes):", ""]
    lines += tracking_table([("learned (shipped)", "cenic-gym ε = 1e-3", ours["shipped_eval"]),
                             ("GaitTeacher", "cenic-gym ε = 1e-3", ours["teacher"]),
                             ("learned (shipped)", "cenic-gym ε = 1e-3", ours["shipped_sim2sim_cenic"]),
                             ("learned (shipped)", "MuJoCo 1 ms implicitfast", ours["shipped_mujoco"])])
    lines += ["", "Sim-to-sim: " + gap_words(ours["shipped_sim2sim_cenic"], ours["shipped_mujoco"])
              + f" on the same {ours['shipped_mujoco']['episodes']} episodes; `training/policies/{ENV_ID}/README.md` "
              "says what this does and does not cover of a real Go1. ![tracking](learning_quadruped_tracking.png)"]
    sweep = ours["sweep"]
    lines += ["", f"**The shipped policy's accuracy sweep** (seeds 0–{ours['sweep_episodes'] - 1}; success, CENIC "
              "substeps per env step, deepest contact): "
              + "; ".join(f"{k}: {r['success']:.2f}, {r['substeps']:.1f}, {1e3 * r['penetration']:.2f} mm"
                          for k, r in sweep["rows"].items()) + "." + sweep_verdict(sweep)]
    return "\n".join(lines)


def gap_words(cenic, peer):
    """A sentence on the sim-to-sim gap, from the numbers."""
    d = peer["success_rate"] - cenic["success_rate"]
    size = "no" if abs(d) < 0.05 else ("a small" if abs(d) < 0.15 else "a large")
    return (f"{size} change of success with MuJoCo as the physics ({100 * d:+.0f} points, falls "
            f"{cenic['falls']:.2f} → {peer['falls']:.2f})")


def write_policy_readme(run, spec, data):
    cfg = recipe()
    f, c = run["final"], run["curve"]
    ours = data[ENV_ID]
    m, t = ours["shipped_mujoco"], ours["shipped_sim2sim_cenic"]
    text = f"""# {ENV_ID}: a learned Go1 joystick policy

An MLP (two hidden layers of {cfg['sb3']['policy_kwargs']['net_arch'][0]}, SB3 SAC actor; its deterministic action)
that makes the Go1 follow a velocity command (v_x, v_y, ω_z) on flat ground at 50 Hz by driving the env's trot
generator (`run.json`: `{json.dumps(spec['env_kwargs'])}`; the action mode is documented in the env's docstring and
`cenic_gym/envs/go1_gait.py`): each step it sets the generator's stance velocity, where the swinging feet land,
the body's posture and residual joint offsets. It observes the task's 58 numbers (base velocities, gravity, joints,
its last action, the command, the gait phase); no privileged state.

## How it was trained

    cenic-gym train {ENV_ID} --seed {run['seed']}

The env's default recipe (`cenic_gym/train/configs.py`, `QUADRUPED_DAGGER`): DAgger (`cenic_gym/train/dagger.py`)
from the feedback teacher `cenic_gym.envs.quadruped.GaitTeacher` (Raibert foot placement and a push towards the
commanded velocity, computed from the observation), {cfg['steps']} env steps of the task's own command distribution,
1000-step episodes and accuracy ε = 1e-3; no training aid. {c[-1]['wall_s'] / 60:.1f} min of training wall time in one
process on a 2-core machine that ran {ours['parallel']} seeds at a time. This is seed {run['seed']}, the best of the
{len(ours['runs'])} seeds of `python benchmarks/learning_quadruped.py`; the median seed's held-out success is
{median_success(ours['runs']):.2f} with {float(np.median([r['final']['falls'] for r in ours['runs']])):.2f} falls
(`benchmarks/RESULTS.md`, "Learning: the Go1 joystick"; the target is 0.70 with at most 0.05 falls), and the teacher
alone succeeds in {ours['teacher']['success_rate']:.2f} of the same episodes: the network copies the teacher. A robot
whose velocity became each new command at once would succeed in {ours['instant_tracker']:.2f} of them (the success
test reads a 0.5 s velocity average at the episode's end).

![learning curve](curve.png)

## Evaluation

    cenic-gym eval training/policies/{ENV_ID}/model.zip --episodes 50 --seed {FINAL_SEED}

{f['episodes']} held-out 20 s episodes of the unmodified task (default commands and resampling, flat ground, success
test and accuracy; the network alone acting): success rate **{f['success_rate']:.2f}**, falls {f['falls']:.2f},
mean return {f['mean_return']:.2f}. Tracking per command component: `benchmarks/learning_quadruped_tracking.png`.

Sim-to-sim: the same policy on the first {t['episodes']} of these episodes with MuJoCo as the physics (the env's
generated MuJoCo twin, 1 ms implicitfast steps): success {m['success_rate']:.2f} (cenic-gym {t['success_rate']:.2f}),
falls {m['falls']:.2f} ({t['falls']:.2f}), mean |tracking error| v_x / v_y / ω_z
{' / '.join(f'{x:.3f}' for x in m['mean_abs_error'])} ({' / '.join(f'{x:.3f}' for x in t['mean_abs_error'])}).

What the gap says about a real Go1: {gap_words(t, m)}. Both simulators share what the policy is trained against
(rigid links, the same masses, the same ideal joint PD at 50 Hz, perfect base-velocity and gravity measurements) and
differ in contact (CENIC's convex compliant model at ε = 1e-3 against MuJoCo's soft constraints, which let the feet
sink millimetres), so the sim-to-sim gap bounds only the contact-model part of the reality gap. What hardware adds
and neither simulator has here: motor torque and velocity limits and the transmission's friction, sensing latency,
a base-velocity estimate instead of the true velocity (the policy reads v_x, v_y from the observation), terrain
and friction variation (`domain_randomization=True`, `obs_noise`, `action_delay` and the sim2real robustness sweeps
are the tools to probe them before a real run).

    cenic-gym demo {ENV_ID} --policy training/policies/{ENV_ID} --duration 12 --seed 7 --video go1_policy.mp4

plays 12 s of one episode (walk forward at 0.96 m/s, stop at 5.4 s, back up and turn from 6.3 s) into a video:
[go1_policy.mp4](go1_policy.mp4).

## Files

{files_table(58, 20)}

Generated by `python benchmarks/learning_quadruped.py`.
"""
    (POLICY / "README.md").write_text(text)


def main():
    p = arg_parser(__doc__, sweep_episodes=10)
    p.add_argument("--sim2sim-episodes", type=int, default=20, help="episodes of the MuJoCo sim-to-sim (default 20)")
    a = p.parse_args()
    data = BENCH.saved()
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    if not a.plot_only:
        env_kwargs = recipe()["env_kwargs"]
        train_seeds(BENCH, a.seeds, a.parallel)
        runs = []
        for s in a.seeds:
            final = track(policy_of(BENCH.run_dir(s) / "model.zip"), final_seeds(a.episodes), env_kwargs)
            runs.append(dict(seed=s, curve=curve(BENCH.run_dir(s)), final=final))
            print(f"seed {s}: success {final['success_rate']:.2f}, falls {final['falls']:.2f}", flush=True)
        shipped = best_seed(runs)
        ours = dict(runs=runs, parallel=a.parallel, note=a.note, shipped=shipped, **stamp(),
                    command="`" + shlex.join(["python", "benchmarks/learning_quadruped.py", *sys.argv[1:]]) + "`",
                    teacher=track(teacher_policy(), final_seeds(a.episodes), env_kwargs),
                    instant_tracker=instant_tracker(final_seeds(a.episodes)))
        for path, err in ship(BENCH, runs, shipped).items():
            print(f"exported {path}: reproduces the model's actions to {err:.1e}")
        ours["shipped_eval"] = next(r for r in runs if r["seed"] == shipped)["final"]
        sims = final_seeds(a.sim2sim_episodes)
        ours["shipped_sim2sim_cenic"] = track(policy_of(POLICY / "model.zip"), sims, env_kwargs)
        ours["shipped_mujoco"] = track(policy_of(POLICY / "model.zip"), sims, env_kwargs, peer="mujoco")
        ours["sweep"], ours["sweep_episodes"] = accuracy(a.sweep_episodes), a.sweep_episodes
        ours.update(runtime_s=time.perf_counter() - t0, load0=load0)
        data[ENV_ID] = ours
        BENCH.save(data)
    ours = data[ENV_ID]
    if "instant_tracker" not in ours:  # seconds, no physics: added to a record that predates it
        ours["instant_tracker"] = instant_tracker(final_seeds(ours["runs"][0]["final"]["episodes"]))
        BENCH.save(data)
    title = ("DAgger through a trot generator: CenicQuadruped-v0 joystick\nperiodic evaluations: 10 held-out "
             "episodes of the unmodified task, the network alone")
    plot_tracking([("learned (shipped), cenic-gym", ours["shipped_eval"]), ("GaitTeacher, cenic-gym", ours["teacher"]),
                   ("learned (shipped), MuJoCo", ours["shipped_mujoco"])],
                  OUT.parent / f"{OUT.name}_tracking.png")
    publish_curves(BENCH, ours["runs"], title, lambda shipped, spec: write_policy_readme(shipped, spec, data),
                   "quadruped-learning", section(data, a.plot_only),
                   f"## Learning: the Go1 joystick ({ENV_ID}), three seeds, tracking, MuJoCo sim-to-sim and accuracy")


if __name__ == "__main__":
    main()
