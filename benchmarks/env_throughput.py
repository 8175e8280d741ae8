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
attempts per env step (``info["sim"]``). One more run of the same episodes gives the split of one env step's wall
time (the timed runs go without its timer): the simulator's cumulative ``sim.stats`` wall_geometry / wall_dynamics /
wall_solver (split into the controllers' linearization, timed by wrapping ``ExternalSystems.linearize`` and
``linearize_full_and_half``, and the convex solve) and the rest of wall_total (step control, bookkeeping), over the
run, and the env layer = ``env.step`` wall − ``info["wall"]["sim_s"]`` (the ``advance_to`` inside it:
action mapping, observation, reward terms, ``evaluate()``, wrappers). ``env overhead`` = ``env.step`` wall / Σ
``advance_to`` wall − 1: what the env layer costs on top of bare ``sim.advance_to``. Writes the
``env-throughput`` section of ``benchmarks/RESULTS.md`` (``bench_common.write_section``; one row per env and policy:
throughput in every mode, the time split at ε = 1e-3) unless ``--no-write``, and prints it. A full run takes ~4 min;
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
PHASES = ("wall_geometry", "wall_dynamics", "wall_solver", "wall_compiled", "wall_total")


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


class LinearizeTimer:
    """Times the external systems' linearization (controllers' gain pools, built for every convex solve inside
    ``wall_solver``) by wrapping ``linearize`` and ``linearize_full_and_half`` of this simulator's
    ``ExternalSystems`` instance (benchmark only; a call inside another is counted once)."""

    METHODS = ("linearize", "linearize_full_and_half")

    def __init__(self, sim):
        self.wall = 0.0
        self.depth = 0
        self.ext = sim.integrator.external
        if self.ext is not None:
            for name in self.METHODS:
                setattr(self.ext, name, self._timed(getattr(self.ext, name)))

    def _timed(self, inner):
        def timed(*args, **kwargs):
            self.depth += 1
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.wall += time.perf_counter() - t0
        return timed

    def remove(self):
        if self.ext is not None:
            for name in self.METHODS:
                delattr(self.ext, name)


def run(env, make_policy, steps, seed0=1000, time_linearize=False):
    """``steps`` env steps; episodes restart (untimed) when they end. Returns the run's totals. time_linearize: wrap
    the controllers' linearization in a timer (:class:`LinearizeTimer`, its cost lands in the run's wall times)."""
    u = env.unwrapped
    timer = LinearizeTimer(u.sim) if time_linearize else None
    policy = make_policy(env)
    episode = 0
    obs, _ = env.reset(seed=seed0)
    policy.reset()
    before = {k: getattr(u.sim.stats, k) for k in PHASES}
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
    out.update({k: getattr(u.sim.stats, k) - before[k] for k in PHASES})
    if timer is not None:
        out["wall_linearize"] = timer.wall
        timer.remove()
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
                r.update(env=env_id, mode=mode, policy=pname, reset=t_reset,
                         split=run(env, make_policy, args.steps, time_linearize=True))
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
    """The ``env-throughput`` section: one row per (env, actions); throughput in every mode, and where an env step's
    time goes at TARGET_MODE."""
    modes = [m for m, _ in MODES]
    by = {(r["env"], r["policy"], r["mode"]): r for r in rows}
    keys = list(dict.fromkeys((r["env"], r["policy"]) for r in rows))
    main_table = ["| env | actions | " + " | ".join(f"env steps/s (× real time), {m}" for m in modes)
                  + f" | attempts (rejected) / env step, {TARGET_MODE} | reset [ms] | sim failures |",
                  "|---|---|" + "---|" * (len(modes) + 3)]
    split_table = ["| env | actions | env.step [µs] | geometry | dynamics | controller linearization | convex solve "
                   "| other in sim | env layer | env overhead over advance_to |",
                   "|---|---|---|---|---|---|---|---|---|---|"]
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
        if t is None:
            continue
        n, r = t["steps"], t["split"]  # the instrumented run of the same episodes
        w = r["step_wall"]
        other = r["wall_total"] - r["wall_geometry"] - r["wall_dynamics"] - r["wall_solver"]
        pct = lambda x: f"{1e6 * x / n:.0f} µs ({100 * x / w:.0f} %)"  # noqa: E731
        phases = [pct(r['wall_geometry']), pct(r['wall_dynamics']), pct(r['wall_linearize']),
                  pct(r['wall_solver'] - r['wall_linearize'])]
        if r.get("wall_compiled", 0.0) > 0.5 * r["wall_total"]:  # a compiled loop: its phases are not timed
            phases = ["–"] * 4
        split_table.append(f"| {env_id} | {policy} | {1e6 * w / n:.0f} | " + " | ".join(phases)
                           + f" | {pct(other)} | {pct(w - r['sim_wall'])} | {100 * (w / r['sim_wall'] - 1):+.0f} % |")
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
        "",
        f"Where an env step's time goes at {TARGET_MODE} (µs per env step, share of `env.step` wall; one more run with "
        "the linearization timed): the simulator's `stats` phases, wall_solver split into the controllers' "
        "linearization and the convex solve; env layer = `env.step` − `advance_to` (actions, observation, reward, "
        "wrappers); overhead = `env.step` / `advance_to` − 1. The envs on the articulated loop (one joint PD: each "
        "attempt is Pinocchio around two kernels) time no phases: all of `advance_to` is \"other\" here, and the "
        "Profile section splits it.",
        "",
        *split_table,
    ])


if __name__ == "__main__":
    sys.exit(main())
