"""Throughput of every registered cenic-gym env: one process, one thread.

    python benchmarks/env_throughput.py [--steps 1000] [--resets 20] [--repeats 3]

(the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself unless they are set.)

For every Gymnasium id starting with ``Cenic`` (looped over the registry: new tasks are picked up), at
``accuracy`` 1e-2, 1e-3, 1e-4 (error control) and ``fixed_step=0.01``: ``gym.make(id, ...)`` once, a short warm-up
(a reset and 10 steps, not timed), then

* reset time: median wall time of ``reset(seed=k)``, k = 0 … resets − 1;
* ``--repeats`` runs (the one of median wall time is reported) of ``--steps`` env steps with seeded random actions
  (``action_space.seed(0)``), and, for the ids in ``SCRIPTED``, with the task's scripted expert; episodes restart
  (``reset``, not timed) at ``terminated`` / ``truncated``.

Per run: env steps/s (env steps / wall time of ``env.step``, the ``gym.make`` wrappers included, the policy
excluded), real-time factor (simulated s / ``env.step`` wall s), attempts (accepted substeps + rejected) and rejected
attempts per env step (``info["sim"]``). Writes the
``env-throughput`` section of ``benchmarks/RESULTS.md`` (``bench_common.write_section``; one row per env and policy:
throughput in every mode) unless ``--no-write``, and prints it; where an env step's time goes is
``benchmarks/profile_envs.py``'s (every step loop, CPU time). A full run takes ~4 min;
``--steps 50 --resets 2 --repeats 1`` under a minute. A timing benchmark: run it on an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402

from bench_common import provenance, warm_up, write_section  # noqa: E402
from cenic_gym.envs import SCRIPTED_POLICIES  # noqa: E402  (importing cenic_gym registers the envs)

HEADING = "## Env throughput (single process, one thread)"
COMMAND = "python benchmarks/env_throughput.py"
MODES = [("ε = 1e-2", dict(accuracy=1e-2)), ("ε = 1e-3", dict(accuracy=1e-3)), ("ε = 1e-4", dict(accuracy=1e-4)),
         ("fixed 0.01", dict(fixed_step=0.01))]
# id -> "module:Class" of the scripted policies timed here: the package's map without the Allegro rotator (its
# throughput row is random actions; step_size_analysis / ab_throughput use the full map)
SCRIPTED = {k: v for k, v in SCRIPTED_POLICIES.items() if k != "CenicAllegro-v0"}
TARGET_MODE = "ε = 1e-3"  # the target: every env at >= 20x real time per core at ε = 1e-3
TARGETS = {"CenicFranka-v0": 400.0, "CenicAllegro-v0": 400.0, "CenicSuction-v0": 400.0,
           "CenicQuadruped-v0": 1000.0}  # env steps/s (20 Hz envs: 400; the 50 Hz quadruped: 1000)


def cenic_ids():
    return sorted(k for k in gym.registry if k.startswith("Cenic"))


def load(path):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


class RandomPolicy:
    def __init__(self, env, seed=0):
        self.space = env.action_space
        self.space.seed(seed)

    def reset(self):
        pass

    def __call__(self, obs):
        return self.space.sample()


def reset_time(env, n):
    ts = []
    for k in range(n):
        t0 = time.perf_counter()
        env.reset(seed=k)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def run(env, make_policy, steps, seed0=1000):
    """``steps`` env steps; episodes restart (untimed) when they end. Returns the run's totals."""
    u = env.unwrapped
    policy = make_policy(env)
    episode = 0
    obs, _ = env.reset(seed=seed0)
    policy.reset()
    out = dict(steps=0, step_wall=0.0, sim_wall=0.0, sim_time=0.0, substeps=0, rejected=0, newton=0, penetration=0.0,
               failures=0, episodes=1)
    while out["steps"] < steps:
        action = policy(obs)
        t0 = time.perf_counter()
        obs, _, term, trunc, info = env.step(action)
        out["step_wall"] += time.perf_counter() - t0
        out["steps"] += 1
        s = info["sim"]
        out["sim_wall"] += info["wall"]["sim_s"]
        out["sim_time"] += u.control_period
        out["substeps"] += s["substeps"]
        out["rejected"] += s["rejected"]
        out["newton"] += s["newton_iters"]
        out["penetration"] = max(out["penetration"], s["max_penetration"])
        if "sim_failure" in info:
            out["failures"] += 1
        if (term or trunc) and out["steps"] < steps:
            episode += 1
            out["episodes"] += 1
            obs, _ = env.reset(seed=seed0 + episode)
            policy.reset()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1000, help="env steps per configuration (default 1000)")
    ap.add_argument("--resets", type=int, default=20, help="resets timed per configuration (default 20)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per row; the median one is reported (default 3)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    warm_up()
    rows = []
    for env_id in cenic_ids():
        for mode, kw in MODES:
            env = gym.make(env_id, **kw)
            env.reset(seed=0)
            env.action_space.seed(0)
            for _ in range(10):  # warm-up: the env's own numba paths and Pinocchio data
                env.step(env.action_space.sample())
            t_reset = reset_time(env, args.resets)
            policies = [("random", lambda e: RandomPolicy(e, 0))]
            if env_id in SCRIPTED:
                policies.append(("scripted", load(SCRIPTED[env_id])))
            for pname, make_policy in policies:
                # the same seeded episodes each repeat (identical counters); keep the repeat of median wall time
                reps = sorted((run(env, make_policy, args.steps) for _ in range(args.repeats)),
                              key=lambda x: x["step_wall"])
                r = reps[len(reps) // 2]
                r.update(env=env_id, mode=mode, policy=pname, reset=t_reset)
                rows.append(r)
                print(f"{env_id} {mode} {pname}: {r['steps'] / r['step_wall']:.0f} env steps/s, "
                      f"RTF {r['sim_time'] / r['step_wall']:.1f}, "
                      f"{(r['substeps'] + r['rejected']) / r['steps']:.2f} attempts/step, "
                      f"reset {t_reset * 1e3:.2f} ms", flush=True)
            env.close()
    total = time.perf_counter() - t_start

    command = COMMAND + (f" --steps {args.steps}" if args.steps != 1000 else "") + \
        (f" --resets {args.resets}" if args.resets != 20 else "") + \
        (f" --repeats {args.repeats}" if args.repeats != 3 else "")
    body = report(rows, args, total, load0, command)
    print()
    print(body)
    if not args.no_write:
        write_section("env-throughput", body, HEADING)
    return 0


def report(rows, args, total, load0, command):
    """The ``env-throughput`` section: one row per (env, actions), throughput in every mode."""
    modes = [m for m, _ in MODES]
    by = {(r["env"], r["policy"], r["mode"]): r for r in rows}
    keys = list(dict.fromkeys((r["env"], r["policy"]) for r in rows))
    main_table = ["| env | actions | " + " | ".join(f"env steps/s (× real time), {m}" for m in modes)
                  + f" | attempts (rejected) / env step, {TARGET_MODE} | reset [ms] | sim failures |",
                  "|---|---|" + "---|" * (len(modes) + 3)]
    for env_id, policy in keys:
        cells = []
        for m in modes:
            r = by.get((env_id, policy, m))
            cells.append("–" if r is None else
                         f"{r['steps'] / r['step_wall']:.0f} ({r['sim_time'] / r['step_wall']:.0f}×)")
        t = by.get((env_id, policy, TARGET_MODE))
        mine = [by[(env_id, policy, m)] for m in modes if (env_id, policy, m) in by]
        attempts = "–" if t is None else \
            f"{(t['substeps'] + t['rejected']) / t['steps']:.2f} ({t['rejected'] / t['steps']:.2f})"
        reset = "–" if t is None else f"{t['reset'] * 1e3:.2f}"
        main_table.append(f"| {env_id} | {policy} | " + " | ".join(cells)
                          + f" | {attempts} | {reset} | {sum(r['failures'] for r in mine)} |")
    target_lines = []
    for env_id, policy in keys:
        r, tsteps = by.get((env_id, policy, TARGET_MODE)), TARGETS.get(env_id)
        if r is not None and tsteps is not None:
            sps = r["steps"] / r["step_wall"]
            target_lines.append(f"{env_id} {policy} {sps:.0f} / {tsteps:.0f} "
                                + ("meets" if sps >= tsteps else f"**misses** ({100 * sps / tsteps:.0f} %)"))
    return "\n".join([
        *provenance("benchmarks/env_throughput.py", f"`{command}` (sets NUMBA_NUM_THREADS=1, OMP_NUM_THREADS=1 itself)",
                    total, load0, ("numba", ("pinocchio (pin)", "pin"), "numpy", "gymnasium")),
        f"Every registered `Cenic*` id, env defaults except the mode; per cell the run of median `env.step` wall among "
        f"{args.repeats} runs of {args.steps} env steps (same seeded episodes, untimed resets). `random`: seeded "
        "`action_space.sample()`; `scripted`: the task's scripted policy (its own time excluded). Attempts = accepted "
        f"substeps + rejected attempts; reset: median of {args.resets} `reset(seed=k)`.",
        "",
        *main_table,
        "",
        f"Targets (env steps/s for 20× real time per core at {TARGET_MODE}): " + "; ".join(target_lines) + ".",
        "Where an env step's time goes: the Profile section (`benchmarks/profile_envs.py`, CPU time, every loop).",
    ])


if __name__ == "__main__":
    sys.exit(main())
