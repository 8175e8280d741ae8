"""CenicAllegro-v0: throughput and random-action contact quality per integration mode.

    python benchmarks/allegro_cube.py [--steps 400] [--episodes 5]

(the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself unless they are set.)

For ε = 1e-2, 1e-3, 1e-4 (error control) and fixed steps 0.01 s and 0.002 s, ``--episodes`` seeded episodes of up
to ``--steps`` env steps with seeded uniform random actions (the env's defaults otherwise: 20 Hz, SO(3) goals,
random start yaw); an episode restarts (untimed ``reset``) when the cube is dropped. Reported per mode: env steps/s
(wall of ``env.step``, one process, one thread), real-time factor, CENIC attempts and rejected attempts per env
step, cube drops, the deepest cube contact penetration (fingertips, links, palm against the cube) and the deepest
self-contact penetration over all steps, and non-finite observations. The target: ≥ 200 env steps/s (10× real
time) at ε = 1e-3. Writes the ``allegro-cube`` section of ``benchmarks/RESULTS.md`` (``--no-write``: print only); a
full run takes about 30 s. A timing benchmark: run it on an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from bench_common import provenance, warm_up, write_section  # noqa: E402

importlib.import_module("cenic_gym")  # registers the envs
ENV_ID = "CenicAllegro-v0"
MODES = [("ε = 1e-2", dict(accuracy=1e-2)), ("ε = 1e-3", dict(accuracy=1e-3)), ("ε = 1e-4", dict(accuracy=1e-4)),
         ("fixed 0.01", dict(fixed_step=0.01)), ("fixed 0.002", dict(fixed_step=0.002))]
TARGET = 200.0  # env steps/s at ε = 1e-3 (issue 12)


def random_rollouts(kwargs, episodes, steps):
    """Counters of ``episodes`` seeded random-action episodes of up to ``steps`` env steps."""
    env = gym.make(ENV_ID, **kwargs)
    u = env.unwrapped
    env.reset(seed=0)
    for _ in range(5):  # warm-up (untimed): the env's paths and Pinocchio data
        env.step(np.zeros(16))
    out = dict(steps=0, wall=0.0, sim_time=0.0, attempts=0, rejected=0, drops=0, failures=0, cube_pen=0.0,
               self_pen=0.0, nonfinite=0)
    for ep in range(episodes):
        env.reset(seed=ep)
        rng = np.random.default_rng(1000 + ep)
        for _ in range(steps):
            a = rng.uniform(-1.0, 1.0, 16).astype(np.float32)
            t0 = time.perf_counter()
            obs, _, term, trunc, info = env.step(a)
            out["wall"] += time.perf_counter() - t0
            out["steps"] += 1
            out["sim_time"] += u.control_period
            s = info["sim"]
            out["attempts"] += s["substeps"] + s["rejected"]
            out["rejected"] += s["rejected"]
            out["nonfinite"] += int(not np.all(np.isfinite(obs)))
            cr = u.sim.contact_results()
            for i in range(cr.n):
                key = "cube_pen" if "cube" in (cr.body_a[i], cr.body_b[i]) else "self_pen"
                out[key] = max(out[key], float(-cr.phi[i]))
            if "sim_failure" in info:
                out["failures"] += 1
            if term or trunc:
                out["drops"] += int(term)
                break
    env.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=400, help="env steps per episode at most (default 400)")
    ap.add_argument("--episodes", type=int, default=5, help="seeded episodes per mode (default 5)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    warm_up()
    table = ["| mode | env steps/s | real-time factor | attempts / env step | rejected / env step | env steps | "
             "cube drops | deepest cube contact [mm] | deepest self-contact [mm] | non-finite obs | sim failures |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    target_line = ""
    for mode, kw in MODES:
        r = random_rollouts(kw, args.episodes, args.steps)
        n = r["steps"]
        sps = n / r["wall"]
        line = (f"| {mode} | {sps:.0f} | {r['sim_time'] / r['wall']:.1f} | {r['attempts'] / n:.2f} | "
                f"{r['rejected'] / n:.2f} | {n} | {r['drops']} | {1e3 * r['cube_pen']:.2f} | "
                f"{1e3 * r['self_pen']:.2f} | {r['nonfinite']} | {r['failures']} |")
        print(line, flush=True)
        table.append(line)
        if mode == "ε = 1e-3":
            target_line = (f"Target: ≥ {TARGET:.0f} env steps/s (10× real time) at ε = 1e-3: {sps:.0f} "
                           f"({r['sim_time'] / r['wall']:.1f}× real time): "
                           + ("meets." if sps >= TARGET else f"misses ({100 * sps / TARGET:.0f} % of it)."))
    command = f"python benchmarks/allegro_cube.py {shlex.join(sys.argv[1:])}".rstrip()
    body = "\n".join([
        *provenance("benchmarks/allegro_cube.py", f"`{command}` (sets NUMBA_NUM_THREADS=1, OMP_NUM_THREADS=1 itself)",
                    time.perf_counter() - t_start, load0, ('numba', ('pinocchio (pin)', 'pin'), 'numpy', 'gymnasium')),
        f"{args.episodes} seeded episodes of up to {args.steps} env steps (20 Hz) with uniform random actions per mode "
        "(the same actions in every mode); an episode ends early when the cube is dropped. Env steps/s: wall of "
        "`env.step`, one process, one thread. Penetration: deepest contact over all accepted steps' contact results "
        "(cube against fingertips, links and palm; finger against finger). " + target_line,
        "",
        *table,
    ])
    print()
    print(body)
    if not args.no_write:
        write_section("allegro-cube", body, "## CenicAllegro-v0: throughput and random-action contacts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
