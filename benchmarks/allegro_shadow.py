"""CenicAllegro-v0 against Gymnasium-Robotics' HandManipulateBlockRotateZ-v1 (the Shadow hand turning a block about
z in MuJoCo), timed side by side in one run: env steps per second and real-time factor under random actions.

gymnasium-robotics 1.4.2 builds its hand models under mujoco 3.3.7 only, so this runs in the venv of
``benchmarks/fetch_pick_place.py`` (mujoco 3.3.7, gymnasium-robotics 1.4.2, cenic-gym editable)::

    /work/fetchvenv/bin/python benchmarks/allegro_shadow.py [--steps 2000] [--runs 3] [--note TEXT]

Each env runs in a fresh process with one thread (OMP_NUM_THREADS=1, NUMBA_NUM_THREADS=1): ``gym.make`` with its
defaults (CenicAllegro-v0 at ε = 1e-3 and its 20 Hz control; HandManipulateBlockRotateZ-v1 with its 20 MuJoCo steps
of 2 ms per 25 Hz control period), 200 untimed warm-up steps, then ``--steps`` env steps of seeded
``action_space.sample()`` actions from each of three seeds (a reset when an episode ends, untimed), each sequence
timed ``--runs`` times, the fastest kept. Real-time factor = env steps/s × the env's control period. The machine
must be otherwise idle. Writes the RESULTS.md section ``allegro-shadow``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench_common import REPO, provenance, write_section  # noqa: E402

ENVS = ("CenicAllegro-v0", "HandManipulateBlockRotateZ-v1")
SEEDS = (1000, 1001, 1002)  # the random-action sequences timed (the Allegro's cost per step differs by 25 % between
#                             them: 7.9 against 10.3 attempts per env step)


def control_period(env):
    """Simulated seconds per env step: the env's own ``control_period`` or MuJoCo's ``dt`` (Gymnasium-Robotics)."""
    u = env.unwrapped
    return float(getattr(u, "control_period", None) or u.dt)


def measure(env_id, steps, runs, seeds=SEEDS):
    """In this process: {env_steps_per_s, per_seed [steps/s], period [s]}: for each seed the fastest of ``runs``
    repeats of the same ``steps`` env steps (the same actions and resets), and their total steps over their total
    time."""
    import gymnasium as gym

    if env_id.startswith("Cenic"):
        import cenic_gym  # noqa: F401  (registers the envs)
    else:
        import gymnasium_robotics

        gym.register_envs(gymnasium_robotics)
    env = gym.make(env_id)
    env.action_space.seed(0)
    env.reset(seed=0)
    for _ in range(200):  # warm-up: numba cache loading, MuJoCo model compilation, first contacts
        if any(env.step(env.action_space.sample())[2:4]):
            env.reset()
    best = []
    for seed in seeds:
        times = []
        for _ in range(runs):
            env.reset(seed=seed)
            env.action_space.seed(seed)
            timed = 0.0
            for _ in range(steps):
                a = env.action_space.sample()
                t0 = time.perf_counter()
                _, _, terminated, truncated, _ = env.step(a)
                timed += time.perf_counter() - t0
                if terminated or truncated:
                    env.reset()
            times.append(timed)
        best.append(min(times))
    return dict(env_steps_per_s=len(seeds) * steps / sum(best), per_seed=[steps / t for t in best],
                period=control_period(env))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(measure(a.child, a.steps, a.runs)))
        return
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = {}
    for env_id in ENVS:
        out = subprocess.run([sys.executable, __file__, "--child", env_id, "--steps", str(a.steps), "--runs",
                              str(a.runs)], env=env, cwd=REPO, capture_output=True, text=True, check=True)
        rows[env_id] = json.loads(out.stdout.strip().splitlines()[-1])
        r = rows[env_id]
        print(f"{env_id}: {r['env_steps_per_s']:.0f} env steps/s, {r['env_steps_per_s'] * r['period']:.1f}x real time",
              flush=True)
    rtf = {k: r["env_steps_per_s"] * r["period"] for k, r in rows.items()}
    ratio = rtf[ENVS[0]] / rtf[ENVS[1]]
    command = "`" + " ".join(["/work/fetchvenv/bin/python", "benchmarks/allegro_shadow.py", *sys.argv[1:]]) + "`"
    lines = provenance("benchmarks/allegro_shadow.py", command, time.perf_counter() - t0, load0,
                       ("numba", "mujoco", "gymnasium", "gymnasium-robotics"),
                       note=f"; besides: {a.note}" if a.note else "")
    lines += [f"Each env in a fresh process, one thread, 200 warm-up steps, then {a.steps} env steps of seeded random "
              f"actions from each of the seeds {', '.join(map(str, SEEDS))} (resets untimed), each sequence timed "
              f"{a.runs} times and its fastest run kept; env steps/s = all steps / the kept times. CenicAllegro-v0: "
              "its defaults (ε = 1e-3, 20 Hz, 16 joint-target steps; every link and fingertip collides with the cube "
              "and the other fingers). HandManipulateBlockRotateZ-v1: the Shadow hand (20 actuators) and a block, 20 "
              "MuJoCo steps of 2 ms per 25 Hz control period, MuJoCo's default soft contact.", "",
              "; ".join(f"{k}: {r['env_steps_per_s']:.0f} env steps/s (per seed "
                        f"{', '.join(f'{x:.0f}' for x in r['per_seed'])}) × {r['period']:.3f} s = "
                        f"**{rtf[k]:.1f}× real time**" for k, r in rows.items())
              + f". Ratio CenicAllegro-v0 / HandManipulateBlockRotateZ-v1: **{ratio:.2f}** (target ≥ 1.0: "
              f"{'meets' if ratio >= 1.0 else '**misses**'})."]
    write_section("allegro-shadow", "\n".join(lines),
                  "## CenicAllegro-v0 against the Shadow hand (HandManipulateBlockRotateZ-v1), side by side")


if __name__ == "__main__":
    main()
