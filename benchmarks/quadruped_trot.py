"""Traction check of CenicQuadruped-v0: an open-loop trot (sinusoidal joint targets, no feedback) over seeded episodes.

    python benchmarks/quadruped_trot.py [--episodes 20] [--steps 1000] [--sweep-episodes 3] [--sweep-steps 250]

(the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself unless they are set.)

The gait is ``cenic_gym.envs.quadruped.TrotGait`` (2 Hz, thigh and calf amplitudes 0.3 rad = the full action
range) in the env's own action space; the env runs with its defaults (ε = 1e-3, 50 Hz, random start yaw and base
velocity per seed, random commands the gait ignores). An episode passes when the robot is not terminated (flipped
or trunk on the ground) in ``--steps`` env steps and its base moved forward (along its initial heading) at
≥ 0.1 m/s on average: contact gives traction, not gliding. The issue's bar: ≥ 90 % of 20 episodes. Reported per
setting: pass rate, forward speed (mean, min), lateral speed, yaw drift, falls, deepest penetration of any
contact, env steps/s (wall of ``env.step``), CENIC substeps and rejected attempts per env step. Settings: the
defaults, the defaults with ``domain_randomization=True``, and a short sweep of accuracy ε and fixed steps (how
the gait's speed depends on integration error). Writes the ``quadruped-trot`` section of ``benchmarks/RESULTS.md``
(``--no-write``: print only); a full run takes about 1–2 minutes. Its env steps/s column wants an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from bench_common import provenance, warm_up, write_section  # noqa: E402
from cenic_gym.envs.quadruped import TrotGait  # noqa: E402  (importing cenic_gym registers the envs)

ENV_ID = "CenicQuadruped-v0"
MIN_SPEED = 0.1  # m/s
BAR = 0.9  # pass rate the issue asks for


def episode(env, seed, steps):
    """One trot episode: (forward m/s, lateral m/s, yaw change rad, terminated, env-step wall s, substeps, rejected,
    env steps taken)."""
    u = env.unwrapped
    obs, _ = env.reset(seed=seed)
    gait = TrotGait(env)
    gait.reset()
    p0, R0 = u.sim.body_pose("go1/trunk")
    wall, sub, rej, n, term = 0.0, 0, 0, 0, False
    for _ in range(steps):
        action = gait(obs)
        t0 = time.perf_counter()
        obs, r, term, trunc, info = env.step(action)
        wall += time.perf_counter() - t0
        sub += info["sim"]["substeps"]
        rej += info["sim"]["rejected"]
        n += 1
        if term or trunc:
            break
    p1, R1 = u.sim.body_pose("go1/trunk")
    duration = steps * u.control_period  # a fall counts as the distance covered over the whole episode
    d = p1 - p0
    yaw = math.atan2(R1[1, 0], R1[0, 0]) - math.atan2(R0[1, 0], R0[0, 0])
    yaw = (yaw + math.pi) % (2 * math.pi) - math.pi
    return (R0[:, 0] @ d / duration, R0[:, 1] @ d / duration, yaw, bool(term), wall, sub, rej, n)


def run(label, kwargs, seeds, steps):
    env = gym.make(ENV_ID, **kwargs)
    rows = [episode(env, s, steps) for s in seeds]
    fwd = np.array([r[0] for r in rows])
    lat = np.array([r[1] for r in rows])
    yaw = np.array([r[2] for r in rows])
    fell = np.array([r[3] for r in rows])
    wall = sum(r[4] for r in rows)
    n = sum(r[7] for r in rows)
    passed = (~fell) & (fwd >= MIN_SPEED)
    out = dict(label=label, episodes=len(rows), steps=steps, passed=int(passed.sum()), rate=float(passed.mean()),
               fwd_mean=float(fwd.mean()), fwd_min=float(fwd.min()), lat=float(np.abs(lat).mean()),
               yaw=float(np.abs(yaw).mean()), falls=int(fell.sum()),
               pen=max(0.0, -env.unwrapped.sim.stats.min_signed_distance), sps=n / wall,
               substeps=sum(r[5] for r in rows) / n, rejected=sum(r[6] for r in rows) / n)
    print(f"{label}: {out['passed']}/{out['episodes']} pass, forward {out['fwd_mean']:.3f} m/s "
          f"(min {out['fwd_min']:.3f}), falls {out['falls']}, {out['sps']:.0f} steps/s, "
          f"{out['substeps']:.2f} substeps/step, penetration {out['pen'] * 1e3:.2f} mm", flush=True)
    return out


def table(rows):
    lines = ["| setting | episodes × steps | pass | forward m/s mean (min) | \\|lateral\\| m/s | \\|yaw drift\\| rad | "
             "falls | max penetration | env steps/s | substeps (rejected) / step |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['episodes']} × {r['steps']} | {r['passed']}/{r['episodes']} | "
                     f"{r['fwd_mean']:.3f} ({r['fwd_min']:.3f}) | {r['lat']:.3f} | {r['yaw']:.2f} | {r['falls']} | "
                     f"{r['pen'] * 1e3:.2f} mm | {r['sps']:.0f} | {r['substeps']:.2f} ({r['rejected']:.2f}) |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--sweep-episodes", type=int, default=3)
    ap.add_argument("--sweep-steps", type=int, default=250)
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    warm_up()
    gym.make(ENV_ID).reset(seed=0)
    seeds = range(args.episodes)
    main_rows = [run("defaults (ε = 1e-3)", {}, seeds, args.steps),
                 run("domain_randomization=True", dict(domain_randomization=True), seeds, args.steps)]
    sweep = [run(label, kw, range(args.sweep_episodes), args.sweep_steps) for label, kw in (
        ("ε = 1e-2", dict(accuracy=1e-2)), ("ε = 1e-4", dict(accuracy=1e-4)),
        ("fixed_step = 0.01 s", dict(fixed_step=0.01)), ("fixed_step = 0.005 s", dict(fixed_step=0.005)))]
    ok = main_rows[0]["rate"] >= BAR
    body = "\n".join([
        *provenance("benchmarks/quadruped_trot.py",
                    f"`python benchmarks/quadruped_trot.py {shlex.join(sys.argv[1:])}`".replace(" `", "`"),
                    time.perf_counter() - t_start, load0,
                    ("numba", "numpy", ("pinocchio (pin)", "pin"), "coal", "gymnasium")),
        "Open-loop `TrotGait` (diagonal pairs at 2 Hz, thigh ± 0.3 rad, calf lift 0.3 rad, no feedback), seeds 0, 1, … "
        "(random start yaw and base velocity). Pass: no termination and mean forward speed along the initial heading "
        f"≥ {MIN_SPEED} m/s; bar ≥ {100 * BAR:.0f} % of the default episodes: **{'met' if ok else 'not met'}** "
        f"({main_rows[0]['passed']}/{main_rows[0]['episodes']}).",
        "Penetration: deepest contact of the run (`sim.stats.min_signed_distance`); env steps/s: wall of `env.step`. "
        f"The rows below the first two are the accuracy sweep ({args.sweep_episodes} × {args.sweep_steps}).",
        "",
        *table(main_rows + sweep),
    ])
    print(body)
    if not args.no_write:
        write_section("quadruped-trot", body, "## Quadruped: open-loop trot (traction)")


if __name__ == "__main__":
    main()
