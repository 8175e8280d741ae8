"""Learning from reward, every algorithm side by side on one env: ``benchmarks/learning_reward.json`` and the RESULTS.md
section ``learning-reward-<ENV>``.

    python benchmarks/learning_reward.py --env ENV [--kinds KIND ...] [--seeds 0 1 2] [--parallel 2]
        [--episodes 50] [--plot-only] [--note TEXT]
    python benchmarks/learning_reward.py --learners [--env ENV]     learner updates/s on this CPU, one thread

A *kind* (``KINDS[ENV]``, data) is one way of learning the task from its reward: an algorithm of
``cenic_gym.train.configs`` (``--algo``), from scratch or fine-tuned from the shipped policy (``--init
training/policies/ENV``), with the env options and hyperparameters it states. Each seed runs what a user runs,
``cenic-gym train ENV --algo A --seed S --steps N [--init ...] [--hyperparams ...] [--env-kwargs ...]``, into
``runs/learning_reward/ENV/KIND/seedS``, ``--parallel`` processes at a time (one thread each); an interrupted seed
continues from its newest checkpoint (``--resume``), a finished one is kept. No teacher labels the learner's states
and no demonstrations are used by any kind here (``"teacher": false``, ``"demos": 0``).

Final figures: ``--episodes`` held-out episodes (seeds 10 000…) of the UNMODIFIED task (default starts, commands,
success test and accuracy), the network alone acting (``cenic-gym eval RUN/model.zip --episodes 50 --seed 10000``);
the recipe's teacher (the DAgger recipe's) on the same episodes gives ``teacher_steps_to_success``. Steps to success:
the median over the successful episodes of the env steps until the success the episode ended with began
(``EvalResult.success_steps``). Training speed: env steps/s while collecting, learner updates/s while updating, and
the envs' share of the wall time (the run's ``eval/evaluations.npz``). Each run is one row of
``benchmarks/learning_reward.json`` (rows of other envs and kinds are kept); the section shows the rows of ``--env``.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from bench_common import REPO, provenance, write_section
from learning_common import FINAL_SEED, curve, run_parallel, run_trainings

JSON = REPO / "benchmarks" / "learning_reward.json"
RUNS = REPO / "runs" / "learning_reward"
POLICIES = "training/policies"

# KINDS[env][kind]: algo, init (start from the shipped policy), steps, hyperparams (KEY=VALUE), env_kwargs, and
# what the kind is, in words
KINDS = {
    "CenicQuadruped-v0": {
        "sac-init": dict(algo="sac", init=True, steps=100_000,
                         hyperparams=["eval_every=10000", "reward_scale=50.0", "learning_rate=1e-4",
                                      "init.critic_warmup=20000", "init.learning_starts=10000",
                                      "init.prior_weight=100.0"], env_kwargs={},
                         what="SB3 SAC fine-tuned from the shipped DAgger policy (its actor and normalization; "
                              "exploration noise 0.1, 10 000 steps of the shipped actor, 20 000 critic-only updates, "
                              "then SAC pulled towards the shipped actor with weight 100; rewards × 50 for the "
                              "learner, rate 1e-4: cenic_gym.train.finetune)"),
        "sbx_sac": dict(algo="sbx_sac", init=False, steps=500_000, hyperparams=[], env_kwargs={},
                        what="SBX (JAX) SAC from scratch, the gait action mode"),
    },
}


def run_dir(env_id, kind, seed) -> Path:
    return RUNS / env_id / kind / f"seed{seed}"


def train_command(env_id, kind, seed):
    """The user's command of one run (``--resume`` of its folder when it has a complete checkpoint)."""
    from cenic_gym.train.sb3_backend import latest_checkpoint

    k = KINDS[env_id][kind]
    out = run_dir(env_id, kind, seed)
    cmd = [sys.executable, "-m", "cenic_gym", "train", env_id, "--algo", k["algo"], "--seed", str(seed),
           "--steps", str(k["steps"]), "--out", str(out), "--no-progress"]
    if k["init"]:
        cmd += ["--init", f"{POLICIES}/{env_id}"]
    if k["hyperparams"]:
        cmd += ["--hyperparams", *k["hyperparams"]]
    if k["env_kwargs"]:
        cmd += ["--env-kwargs", json.dumps(k["env_kwargs"])]
    return cmd + (["--resume", str(out)] if latest_checkpoint(out) is not None else [])


def user_command(env_id, kind):
    """The command as a user types it (seed S)."""
    cmd = train_command(env_id, kind, 0)[3:]
    cmd = ["cenic-gym", *cmd[:cmd.index("--seed") + 1], "S", *cmd[cmd.index("--seed") + 2:]]
    for flag in ("--out", "--resume"):
        if flag in cmd:
            del cmd[cmd.index(flag):cmd.index(flag) + 2]
    return " ".join(shlex.quote(c) for c in cmd if c != "--no-progress")


def train_all(env_id, jobs, parallel):
    """Run the (kind, seed) trainings without a final model, ``parallel`` at a time."""
    run_trainings({(k, s): (train_command(env_id, k, s), run_dir(env_id, k, s)) for k, s in jobs}, parallel)


def summary(result):
    """The figures of an EvalResult kept in a row."""
    falls = [t and not s for t, s in zip(result.terminated, result.successes)]
    return dict(success=result.success_rate, falls=float(np.mean(falls)), mean_return=result.mean_return,
                goals_per_episode=result.mean_goals, steps_to_success=result.median_success_steps,
                success_steps=result.success_steps)


def final_eval(model, episodes):
    from cenic_gym.train import evaluate

    return summary(evaluate(model, episodes=episodes, seed=FINAL_SEED))


def teacher_eval(env_id, episodes):
    """The DAgger recipe's teacher (acting from the state) on the held-out episodes, in its own action space."""
    import gymnasium as gym

    import cenic_gym  # noqa: F401
    from cenic_gym.train import get_config
    from cenic_gym.train.common import run_episodes
    from cenic_gym.train.dagger import teacher_class

    cfg = get_config(env_id, "dagger")
    cls = teacher_class(cfg["dagger"]["teacher"])
    env = gym.make(env_id, **cfg["env_kwargs"])
    holder = {}

    def on_reset(e):
        holder["teacher"] = cls(e)
        holder["teacher"].reset()

    result = run_episodes(lambda obs: holder["teacher"](), lambda: env, episodes, FINAL_SEED, on_reset=on_reset)
    return dict(teacher=cfg["dagger"]["teacher"], env_kwargs=cfg["env_kwargs"], episodes=episodes, **summary(result))


def row(env_id, kind, seed, final, teacher):
    from cenic_gym.env import COMMON_DEFAULTS

    k = KINDS[env_id][kind]
    out = run_dir(env_id, kind, seed)
    run = json.loads((out / "run.json").read_text())
    ev = np.load(out / "eval" / "evaluations.npz")
    done = [i for i, n in enumerate(ev["timesteps"]) if n <= run["steps"]]  # a killed process may have evaluated later
    c, last = curve(out)[:done[-1] + 1], done[-1]
    env_s, learner_s, updates = float(ev["env_s"][last]), float(ev["learner_s"][last]), int(ev["updates"][last])
    steps = run["steps"]
    trained_on = {**run["env_kwargs"], **run["train_env_kwargs"]}  # the training envs' options
    return dict(env=env_id, kind=kind, algo=k["algo"], seed=seed, init=run["init"] and f"{POLICIES}/{env_id}",
                teacher=k["algo"] == "dagger",  # DAgger queries its teacher on the learner's states
                demos=0, env_steps=steps, wall_s=c[-1]["wall_s"], final_success=final["success"],
                falls=final["falls"], goals_per_episode=final["goals_per_episode"],
                steps_to_success=final["steps_to_success"],
                teacher_steps_to_success=teacher_median_on(final["success_steps"], teacher["success_steps"]),
                train_accuracy=trained_on.get("accuracy", COMMON_DEFAULTS["accuracy"]), hyperparams=k["hyperparams"],
                env_kwargs=run["env_kwargs"], updates=updates, env_steps_per_s=steps / max(env_s, 1e-9),
                updates_per_s=updates / max(learner_s, 1e-9), env_share=env_s / max(c[-1]["wall_s"], 1e-9),
                curve=[[e["steps"], round(e["wall_s"], 1), e["success_rate"]] for e in c], command=user_command(env_id,
                                                                                                            kind))


def teacher_median_on(mine, theirs):
    """The teacher's median steps to success on the episodes the learner succeeded in (and the teacher too)."""
    both = [t for m, t in zip(mine, theirs) if m is not None and t is not None]
    return float(np.median(both)) if both else None


# -- learner speed -----------------------------------------------------------------------------------------------
LEARNER_ALGOS = ("sac", "sbx_sac", "tqc", "crossq", "sbx_crossq", "droq")


def learner_speed(env_id, algo, updates=1500):
    """Learner updates/s of ``algo``'s recipe for ``env_id`` on a stand-in env with the task's spaces (one thread,
    no simulation: the learner alone)."""
    import gymnasium as gym
    import torch

    import cenic_gym  # noqa: F401
    from cenic_gym.train import get_config
    from cenic_gym.train.configs import learner_class

    torch.set_num_threads(1)
    cfg = get_config(env_id, algo)
    real = gym.make(env_id, **cfg["env_kwargs"])

    class StandIn(gym.Env):
        observation_space, action_space = real.observation_space, real.action_space

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, False, {}

    kwargs = {k: v for k, v in cfg["sb3"].items() if k not in ("her", "buffer_size")}
    kwargs["learning_starts"] = 300
    model = learner_class(algo)("MlpPolicy", StandIn(), buffer_size=100_000, seed=0, **kwargs)
    utd = int(kwargs.get("gradient_steps", 1))
    model.learn(600)
    n = max(updates // utd, 50)
    t = time.perf_counter()
    model.learn(n, reset_num_timesteps=False)
    wall = time.perf_counter() - t
    real.close()
    return dict(env=env_id, algo=algo, updates_per_s=n * utd / wall, updates_per_sample=utd,
                batch_size=kwargs.get("batch_size"), net_arch=kwargs.get("policy_kwargs", {}).get("net_arch"))


# -- report --------------------------------------------------------------------------------------------------------
def load():
    return json.loads(JSON.read_text()) if JSON.is_file() else dict(runs=[], teachers={}, learners=[])


def save(data):
    JSON.write_text(json.dumps(data, indent=1) + "\n")


def plot(env_id, rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({r["kind"] for r in rows})
    colors = dict(zip(kinds, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for r in rows:
        c = np.array(r["curve"], float)
        label = r["kind"] if r["seed"] == min(x["seed"] for x in rows if x["kind"] == r["kind"]) else None
        axes[0].plot(c[:, 0], c[:, 2], color=colors[r["kind"]], label=label, alpha=0.8)
        axes[1].plot(c[:, 1] / 60.0, c[:, 2], color=colors[r["kind"]], alpha=0.8)
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("training wall time [min]")
    axes[0].set_ylabel("evaluation success (10 fixed episodes)")
    axes[0].legend()
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"{env_id}: learning from reward (one line per seed)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def fmt(x, spec=".2f"):
    return "—" if x is None else format(x, spec)


def section(env_id, data, header):
    rows = sorted((r for r in data["runs"] if r["env"] == env_id), key=lambda r: (r["kind"], r["seed"]))
    teacher = data["teachers"].get(env_id)
    png = JSON.with_name(f"learning_reward_{env_id.replace('-', '_')}.png")
    plot(env_id, rows, png)
    lines = [*header, "| kind | seed | env steps | wall [min] | success (held-out) | falls | steps to success "
                      "(teacher) | env steps/s | updates/s | envs' share |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['seed']} | {r['env_steps']} | {r['wall_s'] / 60:.0f} | "
                     f"{r['final_success']:.2f} | {r['falls']:.2f} | {fmt(r['steps_to_success'], '.0f')} "
                     f"({fmt(r['teacher_steps_to_success'], '.0f')}) | {r['env_steps_per_s']:.0f} | "
                     f"{r['updates_per_s']:.0f} | {r['env_share']:.2f} |")
    lines.append("")
    for kind in sorted({r["kind"] for r in rows}):
        mine = [r for r in rows if r["kind"] == kind]
        k = KINDS[env_id][kind]
        med = float(np.median([r["final_success"] for r in mine]))
        lines.append(f"- **{kind}** ({k['what']}): median held-out success **{med:.2f}** over {len(mine)} seed(s), "
                     f"median falls {float(np.median([r['falls'] for r in mine])):.2f}; `{mine[0]['command']}`.")
    if teacher is not None:
        lines.append(f"- The teacher `{teacher['teacher']}` on the same {teacher['episodes']} episodes: success "
                     f"{teacher['success']:.2f}, falls {teacher['falls']:.2f}, steps to success "
                     f"{fmt(teacher['steps_to_success'], '.0f')}.")
    speed = [x for x in data["learners"] if x["env"] == env_id]
    if speed:
        lines.append("- Learner alone (one thread, batch 256, the recipes' networks; `--learners`): " + ", ".join(
            f"{x['algo']} {x['updates_per_s']:.0f}" for x in speed) + " updates/s.")
    lines.append(f"\n![learning from reward]({png.name})")
    return "\n".join(lines)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="CenicQuadruped-v0", choices=sorted(KINDS))
    ap.add_argument("--kinds", nargs="+", default=None)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--plot-only", action="store_true", help="rebuild the section and plot from the JSON")
    ap.add_argument("--learners", action="store_true", help="measure the learners' updates/s instead")
    ap.add_argument("--note", default="", help="what else ran on the machine")
    a = ap.parse_args(argv)
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    data = load()
    kinds = a.kinds or sorted(KINDS[a.env])
    unknown = set(kinds) - set(KINDS[a.env])
    if unknown:
        ap.error(f"unknown kinds {sorted(unknown)} for {a.env}; choose from {sorted(KINDS[a.env])}")
    if a.learners:
        measured = [learner_speed(a.env, algo) for algo in LEARNER_ALGOS]
        for m in measured:
            print(f"{m['algo']}: {m['updates_per_s']:.0f} updates/s", flush=True)
        data["learners"] = [x for x in data["learners"] if x["env"] != a.env] + measured
    elif not a.plot_only:
        jobs = [(k, s) for k in kinds for s in a.seeds]
        train_all(a.env, jobs, a.parallel)
        finals = run_parallel([(final_eval, (run_dir(a.env, k, s) / "model.zip", a.episodes)) for k, s in jobs]
                              + [(teacher_eval, (a.env, a.episodes))], a.parallel)
        data["teachers"][a.env] = finals[-1]
        for (k, s), final in zip(jobs, finals[:-1]):
            data["runs"] = [r for r in data["runs"] if (r["env"], r["kind"], r["seed"]) != (a.env, k, s)]
            data["runs"].append(row(a.env, k, s, final, finals[-1]))
            print(f"{k} seed {s}: held-out success {final['success']:.2f}", flush=True)
    save(data)
    cmd = shlex.join(["python", "benchmarks/learning_reward.py", *(argv if argv is not None else sys.argv[1:])])
    note = f"; besides it: {a.note}" if a.note else ""
    header = provenance("benchmarks/learning_reward.py", f"`{cmd}`", time.perf_counter() - t0, load0,
                        ["stable-baselines3", "sb3-contrib", "sbx-rl", "jax", "torch", "numba"], note)
    write_section(f"learning-reward-{a.env}", section(a.env, data, header),
                  f"## Learning from reward: {a.env}, every algorithm side by side")


if __name__ == "__main__":
    main()
