"""Before/after env throughput of two code trees, measured in the same run (alternating), one thread each.

    python benchmarks/ab_throughput.py BEFORE_TREE AFTER_TREE [--case CenicFranka-v0:1e-3:random ...]
                                       [--steps 400] [--rounds 3] [--clock wall|cpu]

A tree is a directory holding a ``cenic_gym`` package (e.g. ``git archive <rev> | tar -x -C /tmp/before`` and the
worktree itself); its top-level ``envs/`` and ``assets/`` (installed as ``cenic_gym.envs`` / ``.assets``) are
linked into its ``cenic_gym/`` when missing there, so that each tree runs its own tasks. The machine this project runs on is shared, so absolute numbers drift by tens of percent within
minutes; what this script reports is the ratio after/before of runs interleaved in time: every round runs each
case once per tree, in alternating order (ABAB…, BABA… on the next round), each in a fresh interpreter with
``PYTHONPATH`` = the tree (``NUMBA_NUM_THREADS=1``, ``OMP_NUM_THREADS=1``). Per run: ``gym.make(id, accuracy=ε)``,
``reset(seed=0)`` and 10 untimed warm-up steps, then ``--steps`` env steps of :func:`env_throughput.run` (seeded
random actions, or the task's scripted policy; episodes restart untimed). Reported per case: median env steps/s
of each tree over the rounds (``--clock wall``: ``env.step`` wall time; ``--clock cpu``: the run loop's CPU time,
policy and untimed resets included, what a loaded machine inflates far less), their ratio, attempts and rejections per env step of each (identical when the change
leaves trajectories bit-identical) and max |Δ| of the final observation between the trees (how far the change
moved the trajectory: the accuracy ε bounds the local error per step, not this difference, which grows with
contact events and chaos).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CASES = ["CenicFranka-v0:1e-3:random", "CenicFranka-v0:1e-3:scripted", "CenicQuadruped-v0:1e-3:scripted",
                 "CenicAllegro-v0:1e-3:random", "CenicSuction-v0:1e-3:scripted"]


def parse_case(text):
    """'id:eps:policy' -> (id, eps, policy); policy 'random' or 'scripted'."""
    parts = text.split(":")
    if len(parts) != 3 or parts[2] not in ("random", "scripted"):
        raise ValueError(f"a case is 'EnvId:accuracy:random|scripted', got {text!r}")
    eps = float(parts[1])
    if not eps > 0:
        raise ValueError(f"accuracy must be > 0, got {parts[1]!r} in {text!r}")
    return parts[0], eps, parts[2]


def child(case, steps):
    """Runs one case in this interpreter (cenic_gym from PYTHONPATH) and prints a JSON line."""
    import gymnasium as gym
    import numpy as np

    sys.path.append(sys.path.pop(0))  # this script's folder after PYTHONPATH's (the tree's own benchmarks first)
    import cenic_gym  # noqa: F401  (registers the envs)
    import env_throughput as et
    from step_size_analysis import SCRIPTED_ALL  # env_throughput's scripted policies + Allegro's ScriptedRotator

    env_id, eps, policy = parse_case(case)
    env = gym.make(env_id, accuracy=eps)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(10):
        env.step(env.action_space.sample())
    make = (lambda e: et.RandomPolicy(e, 0)) if policy == "random" else et.load(SCRIPTED_ALL[env_id])
    last = {}

    class Recorder:  # keeps the last observation the policy saw
        def __init__(self, e):
            self.inner = make(e)

        def reset(self):
            self.inner.reset()

        def __call__(self, obs):
            last["obs"] = np.asarray(obs, dtype=float).tolist()
            return self.inner(obs)

    cpu0 = time.thread_time()
    r = et.run(env, Recorder, steps)
    cpu = time.thread_time() - cpu0  # this thread's CPU time of the whole loop (policy and untimed resets included)
    print("RESULT " + json.dumps(dict(sps=r["steps"] / r["step_wall"], sps_cpu=r["steps"] / cpu, attempts=(r["substeps"] + r["rejected"]) / steps,
                                      rejected=r["rejected"] / steps, obs=last["obs"], failures=r["failures"])))


def link_tasks(tree):
    """Link the tree's ``envs/`` and ``assets/`` (installed as cenic_gym.envs / .assets) into its package where
    missing, or an editable install of another checkout would supply them (its finder answers what PYTHONPATH
    lacks). Returns the links made, for :func:`main` to remove afterwards (a git checkout must not keep them)."""
    root = Path(tree).resolve()
    made = []
    for sub in ("envs", "assets"):
        link = root / "cenic_gym" / sub
        if (root / sub).is_dir() and not link.exists():
            link.symlink_to(root / sub, target_is_directory=True)
            made.append(link)
    return made


def run_tree(tree, case, steps):
    # the tree's own benchmark helpers (env_throughput, step_size_analysis: they name the tree's scripted policies)
    # come first, this file's folder after them (a tree without them)
    root = Path(tree).resolve()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(root), str(root / "benchmarks"), str(HERE))),
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", case, "--steps", str(steps)],
                         env=env, capture_output=True, text=True, check=False)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"{tree} {case} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    return json.loads(line[len("RESULT "):])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", nargs="?")
    ap.add_argument("after", nargs="?")
    ap.add_argument("--case", action="append", help="EnvId:accuracy:random|scripted (repeatable)")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: env steps per second of env.step wall time; cpu: env steps per second of the run "
                         "loop's CPU time (time.thread_time; policy and resets included), which an overloaded "
                         "shared machine inflates far less (default wall)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.steps)
        return 0
    if not (args.before and args.after):
        ap.error("give BEFORE_TREE and AFTER_TREE")
    cases = args.case or DEFAULT_CASES
    for c in cases:
        parse_case(c)
    links = link_tasks(args.before) + link_tasks(args.after)
    try:
        compare(args, cases)
    finally:
        for link in links:
            link.unlink()
    return 0


def compare(args, cases):
    """The table of :func:`main`: every case, ``args.rounds`` alternating rounds of both trees."""
    print(f"clock: {args.clock}")
    print("| case | before env steps/s | after env steps/s | after / before | attempts / step before → after | "
          "rejected / step before → after | max abs Δ final obs |\n|---|---|---|---|---|---|---|", flush=True)
    for case in cases:
        res = {"before": [], "after": []}
        for k in range(args.rounds):
            order = ("before", "after") if k % 2 == 0 else ("after", "before")
            for which in order:
                res[which].append(run_tree(getattr(args, which), case, args.steps))
        key = "sps_cpu" if args.clock == "cpu" else "sps"
        b = statistics.median(r[key] for r in res["before"])
        a = statistics.median(r[key] for r in res["after"])
        rb, ra = res["before"][0], res["after"][0]
        dobs = max(abs(x - y) for x, y in zip(rb["obs"], ra["obs"]))
        print(f"| {case} | {b:.0f} | {a:.0f} | {a / b:.2f} | {rb['attempts']:.2f} → {ra['attempts']:.2f} | "
              f"{rb['rejected']:.2f} → {ra['rejected']:.2f} | {dobs:.1e} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
