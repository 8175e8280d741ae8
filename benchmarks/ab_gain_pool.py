"""In-process interleaved A/B of the gain-pool path (RESULTS.md, "Gain pool of the joint PD without per-solve
Python"): 'before' binds the ``ExternalSystems.linearize`` and ``JointPD.linearize`` of BEFORE_TREE's
``cenic_gym/external.py`` onto one env's instances, 'after' is this tree's; both envs take the same actions in
alternating chunks (ABAB…, BABA…), timed on this thread's CPU clock.

    PYTHONPATH=$PWD NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        python benchmarks/ab_gain_pool.py /tmp/before CenicAllegro-v0 [--chunks 10] [--chunk 30]

Why in one process: on the shared machine the subprocess A/B (``ab_throughput.py``) of this change gave after/before
0.96, 1.27 and 1.01 for the same two trees within 20 minutes (load 4–8); the alternating chunks of one process see
the same load and the same memory state, so their ratio is far steadier. Prints env steps/s (CPU) of each, their
ratio and max |Δ| of the last observations (0: the change leaves trajectories bit-identical).
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import types

import gymnasium as gym
import numpy as np


def load_external(tree):
    """BEFORE_TREE's cenic_gym/external.py as a module of this package (its relative imports resolve here)."""
    spec = importlib.util.spec_from_file_location("cenic_gym._external_before", f"{tree}/cenic_gym/external.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def make(env_id, old=None):
    """The env at ε = 1e-3 after reset(seed=0) and 10 seeded random steps; with ``old``, its external systems
    linearize with that module's methods."""
    env = gym.make(env_id, accuracy=1e-3)
    env.reset(seed=0)
    env.action_space.seed(0)
    if old is not None:
        ext = env.unwrapped.sim.integrator.external
        ext.linearize = types.MethodType(old.ExternalSystems.linearize, ext)
        for s in ext.systems:
            s.linearize = types.MethodType(getattr(old, type(s).__name__).linearize, s)
    for _ in range(10):
        env.step(env.action_space.sample())
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before_tree")
    ap.add_argument("env_id")
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=30, help="env steps per chunk")
    a = ap.parse_args(argv)
    if a.chunks < 1 or a.chunk < 1:
        raise ValueError(f"--chunks and --chunk must be >= 1, got {a.chunks}, {a.chunk}")
    import cenic_gym  # noqa: F401  (registers the envs)

    envs = {"before": make(a.env_id, load_external(a.before_tree)), "after": make(a.env_id)}
    space = envs["after"].action_space
    space.seed(1)
    actions = [space.sample() for _ in range(a.chunks * a.chunk)]
    cpu, last = {"before": 0.0, "after": 0.0}, {}
    for k in range(a.chunks):
        for name in (("before", "after") if k % 2 == 0 else ("after", "before")):
            env = envs[name]
            t0 = time.thread_time()
            for act in actions[k * a.chunk:(k + 1) * a.chunk]:
                obs, _, term, trunc, _ = env.step(act)
                if term or trunc:
                    obs, _ = env.reset()
            cpu[name] += time.thread_time() - t0
            last[name] = obs
    n = a.chunks * a.chunk
    print(f"{a.env_id}: before {n / cpu['before']:.1f} env steps/s (CPU), after {n / cpu['after']:.1f}, "
          f"after/before {cpu['before'] / cpu['after']:.3f}, max |Δ final obs| "
          f"{np.max(np.abs(last['before'] - last['after'])):.1e}")


if __name__ == "__main__":
    main()
