"""Where one CenicSuction-v0 env step spends its time, per phase of the scripted picker (issue 13 throughput).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/profile_suction.py [--seed 1000] [--phases carry]

One ``gym.make("CenicSuction-v0", accuracy=1e-3)``; the :class:`ScriptedPicker` episode of ``--seed`` runs once
untimed (warm-up), then once timed: per picker phase (approach, descend, grip, lift, carry, lower, release,
retreat) env steps/s of ``env.step`` and attempts (accepted + rejected substeps) per env step, and for the steps of
``--phases`` the split of their wall time — the simulator's ``sim.stats`` wall_geometry / wall_dynamics /
wall_solver (the external systems' linearization, timed by wrapping it, shown apart) / rest of wall_total, and the
env layer (``env.step`` wall − the simulator's) — then the same episode a third time under cProfile (those phases
only): the functions by own time. Prints; writes nothing.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402

import cenic_gym  # noqa: E402,F401  (registers the envs)

from cenic_gym.envs.suction_pick import ScriptedPicker  # noqa: E402

SPLIT = ("wall_geometry", "wall_dynamics", "wall_solver", "wall_total")


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


def episode(env, seed, phases, prof=None):
    """One scripted episode; returns per phase [steps, env.step wall, attempts] and the split over ``phases``."""
    u = env.unwrapped
    obs, _ = env.reset(seed=seed)
    picker = ScriptedPicker(env)
    picker.reset()
    timer = LinearizeTimer(u.sim)
    per, split = {}, dict.fromkeys(SPLIT + ("linearize", "env_step"), 0.0)
    try:
        for _ in range(200):
            action = picker(obs)
            name = picker.plan[picker.phase][0]
            watch = name in phases
            before = u.sim.stats.copy()
            lin0 = timer.wall
            if watch and prof is not None:
                prof.enable()
            t0 = time.perf_counter()
            obs, _, term, trunc, info = env.step(action)
            wall = time.perf_counter() - t0
            if watch and prof is not None:
                prof.disable()
            row = per.setdefault(name, [0, 0.0, 0])
            row[0] += 1
            row[1] += wall
            row[2] += info["sim"]["substeps"] + info["sim"]["rejected"]
            if watch:
                after = u.sim.stats
                for k in SPLIT:
                    split[k] += getattr(after, k) - getattr(before, k)
                split["linearize"] += timer.wall - lin0
                split["env_step"] += wall
            if term or trunc:
                break
    finally:
        timer.remove()
    return per, split


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--phases", nargs="+", default=["carry"])
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    env = gym.make("CenicSuction-v0", accuracy=1e-3)
    episode(env, args.seed, args.phases)  # warm-up: numba loads, first-call costs
    per, split = episode(env, args.seed, args.phases)
    print(f"load average at end: {os.getloadavg()[0]:.2f}\n")
    print("| phase | env steps | env steps/s | attempts / env step |\n|---|---|---|---|")
    for name, (n, wall, att) in per.items():
        print(f"| {name} | {n} | {n / wall:.0f} | {att / n:.2f} |")
    n = sum(per[p][0] for p in args.phases if p in per)
    tot = split["env_step"]
    parts = [("geometry (contact query, numba + coal fallback)", split["wall_geometry"]),
             ("dynamics (Pinocchio)", split["wall_dynamics"]),
             ("external systems' linearization (suction, PD)", split["linearize"]),
             ("convex solves", split["wall_solver"] - split["linearize"]),
             ("integrator rest (step control, bookkeeping)",
              split["wall_total"] - split["wall_geometry"] - split["wall_dynamics"] - split["wall_solver"]),
             ("env layer (action, observation, reward, info)", tot - split["wall_total"])]
    print(f"\n{' + '.join(args.phases)}: {n} env steps, {1e3 * tot / max(n, 1):.2f} ms per env step\n")
    print("| part | ms / env step | share |\n|---|---|---|")
    for label, w in parts:
        print(f"| {label} | {1e3 * w / max(n, 1):.2f} | {100 * w / tot:.0f} % |")
    prof = cProfile.Profile()
    episode(env, args.seed, args.phases, prof)
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(args.top)
    print("\n" + s.getvalue())


if __name__ == "__main__":
    main()
