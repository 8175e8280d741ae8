"""Cost of the controllers' linearization per convex solve, this tree against an older one, in one process.

    git archive <rev> | tar -x -C /tmp/before          # the older code (any tree with cenic_gym/external.py)
    python benchmarks/linearize_cost.py /tmp/before [--calls 300] [--rounds 5]

For every registered ``Cenic*`` env (ε = 1e-3): after ``reset(seed=0)`` and 20 seeded random steps, times
``ExternalSystems.linearize`` of the env's simulator for a solve of δt = 1 ms at the current state, once with this
tree's code and once with the older tree's ``ExternalSystems.linearize`` / ``JointController.setpoints`` /
``InverseDynamicsPD.linearize`` (loaded from its ``cenic_gym/external.py`` and bound to the same objects), the two
alternating ``--rounds`` times (best of each; the machine is shared). Prints µs per call for both, their ratio, and
the largest relative difference of the gain pool (C, d) between the two (forward differences against exact
derivatives: ~1e-7). With ``--env-steps N``: also whole env steps/s of N seeded random-action steps (from
``reset(seed=1)``), older and this tree's linearization alternating in the same process, best of ``--rounds``
each (the env layer is this tree's in both).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import cenic_gym  # noqa: E402,F401  (registers the envs)
from cenic_gym import external as ext  # noqa: E402


def load_old(tree):
    path = Path(tree) / "cenic_gym" / "external.py"
    spec = importlib.util.spec_from_file_location("external_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Patched:
    """Within the block, the classes of this tree run the older tree's methods."""

    def __init__(self, old):
        self.swaps = [(ext.ExternalSystems, "linearize", old.ExternalSystems.linearize),
                      (ext.JointController, "setpoints", old.JointController.setpoints),
                      (ext.InverseDynamicsPD, "linearize", getattr(old.InverseDynamicsPD, "linearize",
                                                                   old.ExternalSystem.linearize)),
                      (ext.InverseDynamicsPD, "output", old.InverseDynamicsPD.output)]

    def __enter__(self):
        self.saved = [(cls, name, cls.__dict__.get(name)) for cls, name, _ in self.swaps]
        for cls, name, fn in self.swaps:
            setattr(cls, name, fn)

    def __exit__(self, *exc):
        for cls, name, fn in self.saved:
            if fn is None:
                delattr(cls, name)
            else:
                setattr(cls, name, fn)


def per_call(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", help="a tree holding the older cenic_gym/external.py")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--env-steps", type=int, default=0,
                    help="also time this many random-action env steps per run, before vs after alternating")
    args = ap.parse_args()
    old = load_old(args.before)
    steps_rows = []
    print("| env | external systems | before [µs per solve] | after [µs per solve] | after / before | "
          "max rel. Δ (C, d) |\n|---|---|---|---|---|---|")
    for env_id in sorted(k for k in gym.registry if k.startswith("Cenic")):
        env = gym.make(env_id, accuracy=1e-3)
        env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(20):
            env.step(env.action_space.sample())
        it = env.unwrapped.sim.integrator
        es, dt = it.external, 1e-3
        q, v, z, t = it.q, it.v, it.z, it.t

        def call():
            return es.linearize(t, z, q, v, dt, lambda w: it._integrate(q, w, dt))

        new_pool = call()[0]
        with Patched(old):
            old_pool = call()[0]
        times = {"before": [], "after": []}
        for _ in range(args.rounds):
            with Patched(old):
                times["before"].append(per_call(call, args.calls))
            times["after"].append(per_call(call, args.calls))
        b, a = min(times["before"]), min(times["after"])
        rel = max(float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-12), initial=0.0))
                  for x, y in zip(new_pool[1:3], old_pool[1:3]))
        names = ", ".join(type(s).__name__ for s in es.systems)
        print(f"| {env_id} | {names} | {1e6 * b:.1f} | {1e6 * a:.1f} | {a / b:.2f} | {rel:.1e} |", flush=True)
        if args.env_steps:
            rate = {"before": [], "after": []}
            for k in range(args.rounds):
                for which in (("before", "after") if k % 2 == 0 else ("after", "before")):
                    env.reset(seed=1)
                    env.action_space.seed(1)
                    actions = [env.action_space.sample() for _ in range(args.env_steps)]
                    with Patched(old) if which == "before" else _Nothing():
                        t0 = time.perf_counter()
                        for a_ in actions:
                            env.step(a_)
                        rate[which].append(args.env_steps / (time.perf_counter() - t0))
            sb, sa = max(rate["before"]), max(rate["after"])
            steps_rows.append(f"| {env_id} | {sb:.0f} | {sa:.0f} | {sa / sb:.2f} |")
        env.close()
    if steps_rows:
        print(f"\nWhole env steps (random actions, {args.env_steps} per run, best of {args.rounds}):\n\n"
              "| env | before env steps/s | after env steps/s | after / before |\n|---|---|---|---|")
        print("\n".join(steps_rows))
    return 0


class _Nothing:
    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


if __name__ == "__main__":
    sys.exit(main())
