"""Native memory growth per env step of CenicFranka-v0, layer by layer: resident set size growth per call.

Each layer is run for a warm-up, then N more times; the script prints the resident set size (RSS, from
/proc/self/statm) growth per call, both raw and after ``malloc_trim(0)`` (glibc returns free heap pages to the
OS, so what remains after a trim is memory still allocated, i.e. a leak or live objects, not just fragmentation).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/memory_growth.py [--layers env sim ...] [--steps 20000]
        [--warmup 2000] [--json FILE]

A diagnostic (~1 min with the defaults): it prints its table and writes no RESULTS.md section (what it found is in
``docs/performance.md``, "Native memory growth"). Not a timing benchmark: RSS does not depend on the machine's
load.

Layers (all on one ``CenicFranka-v0`` with ``fixed_step=0.05`` unless said):
  env        env.step(random action), reset when the episode ends (as a training worker does)
  act        the env's action mapping (controller targets) + sim.advance_to
  apply      the env's action mapping only
  sim        sim.advance_to(t + control period) on the env's Simulator, no env around it
  prepare    the integrator's per-state work: kinematics, crba, nle, contact query (+ coal fallback)
  solve      one ICF solve (numba) from a prepared state, with the controllers' linearization
  linearize  the external systems' (controllers') linearization only
  task       the env's observation, reward terms and success test
  pinocchio  computeJointJacobians + crba + nonLinearEffects only
  coal       narrowphase.coal_contacts on a convex-box pair in contact (the coal fallback path)
  reset      env.reset() only
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys

import numpy as np

PAGE = os.sysconf("SC_PAGE_SIZE")
LAYERS = {  # name: what one call runs (the table's second column)
    "env": "env.step(random action), reset at episode end",
    "act": "action mapping + sim.advance_to",
    "apply": "action mapping only",
    "sim": "sim.advance_to(t + control period), constant targets",
    "prepare": "per-state work: kinematics, crba, nle, contact query",
    "solve": "one ICF solve with the controllers' linearization",
    "linearize": "the controllers' linearization only",
    "task": "observation, reward terms, success test",
    "pinocchio": "computeJointJacobians + crba + nonLinearEffects",
    "coal": "narrowphase.coal_contacts, convex box on box",
    "reset": "env.reset()",
}
DEFAULT_LAYERS = ["env", "sim", "prepare", "pinocchio", "coal", "reset"]
DEFAULT_STEPS, DEFAULT_WARMUP = 20000, 2000
_LIBC = ctypes.CDLL("libc.so.6")


def rss_bytes():
    """Resident set size of this process [bytes] (/proc/self/statm, field 2)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def trimmed_rss_bytes():
    """RSS after glibc's malloc_trim(0) [bytes]."""
    _LIBC.malloc_trim(0)
    return rss_bytes()


def measure(step, warmup, steps):
    """Call ``step()`` warmup times, then ``steps`` times; growth per call [bytes], raw and after malloc_trim."""
    for _ in range(warmup):
        step()
    r0 = trimmed_rss_bytes()
    for _ in range(steps):
        step()
    r1 = rss_bytes()
    t1 = trimmed_rss_bytes()
    return dict(rss0_mb=r0 / 2**20, rss1_mb=r1 / 2**20, bytes_per_call=(r1 - r0) / steps,
                trimmed_bytes_per_call=(t1 - r0) / steps)


def make_env(seed=0):
    import gymnasium as gym
    import cenic_gym

    gym.register_envs(cenic_gym)  # importing cenic_gym registers the envs
    env = gym.make("CenicFranka-v0", fixed_step=0.05)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


def layer(name):
    """A zero-argument callable that runs one unit of the named layer."""
    env = make_env()
    u = env.unwrapped
    sim = u.sim
    if name == "env":
        def step():
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            if term or trunc:
                env.reset()
        return step
    if name == "act":
        def step():
            u._apply_action(env.action_space.sample())
            sim.advance_to(sim.t + u.control_period)
        return step
    if name == "apply":
        def step():
            u._apply_action(env.action_space.sample())
        return step
    if name == "sim":
        def step():
            sim.advance_to(sim.t + u.control_period)
        return step
    it = sim.integrator
    if name == "prepare":
        q, v, z = it.q.copy(), it.v.copy(), it.z.copy()

        def step():
            it._prepare(it.start, q, v, z, 0.0, 0.05)
        return step
    if name == "solve":
        q, v, z = it.q.copy(), it.v.copy(), it.z.copy()
        it._prepare(it.start, q, v, z, 0.0, 0.05)

        def step():
            it._icf(it.start, 0.05, v)
        return step
    if name == "linearize":
        it._prepare(it.start, it.q.copy(), it.v.copy(), it.z.copy(), 0.0, 0.05)

        def step():
            it._gain_pool(it.start, 0.05)
        return step
    if name == "task":
        a = np.zeros(env.action_space.shape)

        def step():  # what a step does after advance_to, at one state
            u.view = u.View(u)
            u._observe()
            u._reward_terms(a, a, u.evaluate())
        return step
    if name == "pinocchio":
        import pinocchio as pin
        from cenic_gym.contact import compute_kinematics
        q, v = it.q.copy(), it.v.copy()

        def step():
            compute_kinematics(it.model, it.data, q)
            pin.crba(it.model, it.data, q)
            pin.nonLinearEffects(it.model, it.data, q, v)
        return step
    if name == "coal":
        from cenic_gym import narrowphase as nph
        a = nph.make_coal_shape(nph.CONVEX, None, vertices=np.array(
            [[x, y, z] for x in (-.05, .05) for y in (-.05, .05) for z in (-.05, .05)]))
        b = nph.make_coal_shape(nph.BOX, (0.1, 0.1, 0.1))
        R = np.eye(3)

        def step():
            nph.coal_contacts(a, R, np.array([0, 0, 0.149]), b, R, np.zeros(3), 0.01)
        return step
    if name == "reset":
        def step():
            env.reset()
        return step
    raise ValueError(f"unknown layer {name!r}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", nargs="+", default=DEFAULT_LAYERS, choices=list(LAYERS))
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    p.add_argument("--json", default=None, help="append one JSON line per layer to this file")
    a = p.parse_args(argv)
    rows = []
    for name in a.layers:
        r = measure(layer(name), a.warmup, a.steps)
        r.update(layer=name, steps=a.steps, warmup=a.warmup)
        rows.append(r)
        print(f"{name:10s} {r['bytes_per_call']:8.1f} B/call raw, {r['trimmed_bytes_per_call']:8.1f} B/call after "
              f"malloc_trim  (RSS {r['rss0_mb']:.1f} -> {r['rss1_mb']:.1f} MB over {a.steps})", flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")
    print("\n".join([
        "", f"CenicFranka-v0 (fixed_step=0.05): each layer {a.warmup} calls of warm-up, then {a.steps} calls; growth "
        "of the resident set size per call, raw and after malloc_trim(0):", "",
        "| layer | one call | B / call | B / call after malloc_trim | RSS before → after [MB] |",
        "|---|---|---|---|---|",
        *[f"| {r['layer']} | {LAYERS[r['layer']]} | {r['bytes_per_call']:.1f} | {r['trimmed_bytes_per_call']:.1f} "
          f"| {r['rss0_mb']:.1f} → {r['rss1_mb']:.1f} |" for r in rows]]))
    return 0

if __name__ == "__main__":
    sys.exit(main())
