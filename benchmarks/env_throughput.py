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
``env-throughput`` section of ``benchmarks/RESULTS.md`` (appended if absent; the rest is kept verbatim) and prints it.
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
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402

import cenic_gym  # noqa: E402,F401  (registers the envs)
from bench_common import provenance, replace_marked_section, warm_up  # noqa: E402
from cenic_gym.envs import SCRIPTED_POLICIES  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
HEADING = "## Env throughput (single process, one thread)"
COMMAND = "python benchmarks/env_throughput.py"
MODES = [("ε = 1e-2", dict(accuracy=1e-2)), ("ε = 1e-3", dict(accuracy=1e-3)), ("ε = 1e-4", dict(accuracy=1e-4)),
         ("fixed 0.01", dict(fixed_step=0.01))]
# id -> "module:Class" of the scripted policies timed here: the package's map without the Allegro rotator (its
# throughput row is random actions; step_size_analysis / ab_throughput use the full map)
SCRIPTED = {k: v for k, v in SCRIPTED_POLICIES.items() if k != "CenicAllegro-v0"}
TARGET_MODE = "ε = 1e-3"  # issue 18: every env at >= 20x real time per core at ε = 1e-3
TARGETS = {"CenicFranka-v0": 400.0, "CenicAllegro-v0": 400.0, "CenicSuction-v0": 400.0,
           "CenicQuadruped-v0": 1000.0}  # env steps/s (20 Hz envs: 400; the 50 Hz quadruped: 1000)
PHASES = ("wall_geometry", "wall_dynamics", "wall_solver", "wall_total")


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

    main_table = ["| env | mode | actions | env steps/s | real-time factor | reset [ms] | attempts / env step | "
                  "rejected / env step | substeps / env step | episodes | sim failures |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
    split_table = ["| env | mode | actions | env.step [µs] | advance_to [µs] | geometry | dynamics | "
                   "controller linearization | convex solve | other in sim | env layer | "
                   "env overhead over advance_to |",
                   "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        n = row["steps"]
        main_table.append(
            f"| {row['env']} | {row['mode']} | {row['policy']} | {n / row['step_wall']:.0f} | "
            f"{row['sim_time'] / row['step_wall']:.1f} | {row['reset'] * 1e3:.2f} | "
            f"{(row['substeps'] + row['rejected']) / n:.2f} | "
            f"{row['rejected'] / n:.2f} | {row['substeps'] / n:.2f} | {row['episodes']} | {row['failures']} |")
        r = row["split"]  # the instrumented run of the same episodes
        w = r["step_wall"]
        other = r["wall_total"] - r["wall_geometry"] - r["wall_dynamics"] - r["wall_solver"]
        env_layer = w - r["sim_wall"]
        pct = lambda x: f"{1e6 * x / n:.0f} µs ({100 * x / w:.0f} %)"  # noqa: E731
        split_table.append(
            f"| {row['env']} | {row['mode']} | {row['policy']} | {1e6 * w / n:.0f} | {1e6 * r['sim_wall'] / n:.0f} | "
            f"{pct(r['wall_geometry'])} | {pct(r['wall_dynamics'])} | {pct(r['wall_linearize'])} | "
            f"{pct(r['wall_solver'] - r['wall_linearize'])} | {pct(other)} | "
            f"{pct(env_layer)} | {100 * (w / r['sim_wall'] - 1):+.0f} % |")
    target_lines = []
    for r in rows:
        tsteps = TARGETS.get(r["env"])
        if tsteps is not None and r["mode"] == TARGET_MODE:
            sps = r["steps"] / r["step_wall"]
            target_lines.append(
                f"{r['env']} {r['policy']} {sps:.0f} env steps/s ({r['sim_time'] / r['step_wall']:.1f}× real time; "
                f"target {tsteps:.0f}): "
                + ("meets" if sps >= tsteps else f"misses ({100 * sps / tsteps:.0f} % of it)"))
    command = COMMAND + (f" --steps {args.steps}" if args.steps != 1000 else "") + \
        (f" --resets {args.resets}" if args.resets != 20 else "") + \
        (f" --repeats {args.repeats}" if args.repeats != 3 else "")
    body = "\n".join([
        *provenance("benchmarks/env_throughput.py", f"`{command}` (sets NUMBA_NUM_THREADS=1, OMP_NUM_THREADS=1 itself)", total, load0, ('numba', ('pinocchio (pin)', 'pin'), 'numpy', 'gymnasium')),
        f"Every registered `Cenic*` id, env defaults except the mode; {args.steps} env steps per run after an untimed "
        f"warm-up (episodes of up to 200 steps restart with an untimed reset), one process, one thread; each row is "
        f"the run of median `env.step` wall time among {args.repeats} runs of the same seeded episodes (the "
        "simulation counters are identical between them). `random`: "
        "`action_space.sample()` seeded with 0; `scripted`: the task's `ScriptedExpert` (its IK time excluded). "
        f"Env steps/s and the real-time factor (simulated s / wall s) count `env.step` wall time, the `gym.make` "
        f"wrappers included. Reset: median of {args.resets} `reset(seed=k)`. Attempts = accepted substeps + "
        "rejected step-doubling attempts (`info[\"sim\"]`).",
        "",
        *main_table,
        "",
        f"Targets (issues 11, 18: 20× real time per core at {TARGET_MODE}): " + "; ".join(target_lines) + ".",
        "",
        "Where an env step's time goes (µs per env step and share of `env.step` wall), from one more run of the "
        "same episodes with the linearization timer installed (the timed runs above go without it; its cost, "
        "~1 µs per linearization, is in this table's times): geometry / dynamics / "
        "wall_solver / other are the deltas of the simulator's cumulative `sim.stats` (wall_geometry, wall_dynamics, "
        "wall_solver, wall_total − the three) over the run, and wall_solver is split into the controllers' "
        "linearization (the gain pool `ExternalSystems.linearize` builds for every convex solve: RNEA "
        "derivatives for `InverseDynamicsPD`, a numba kernel for `SuctionGripper`, closed forms for the joint "
        "PDs; timed by wrapping it) and the convex solve proper (the numba Newton kernel and its "
        "Python call); advance_to = Σ `info[\"wall\"][\"sim_s\"]`; env layer = `env.step` "
        "wall − advance_to (action → set-points, observation, reward terms, `evaluate()`, contact queries for them, "
        "Gymnasium wrappers); env overhead = `env.step` wall / advance_to wall − 1.",
        "",
        *split_table,
    ])
    print()
    print(body)
    if not args.no_write:
        RESULTS.write_text(replace_marked_section(RESULTS.read_text(), "env-throughput", body, heading=HEADING))
    return 0


if __name__ == "__main__":
    sys.exit(main())
