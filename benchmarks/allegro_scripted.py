"""CenicAllegro-v0 feasibility: the scripted ScriptedRotator turns the cube a quarter turn about the palm normal.

    python benchmarks/allegro_scripted.py [--episodes 20] [--first-seed 0] [--steps 160] [--holdout-first-seed 20]

(the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself unless they are set.)

Episodes ``--first-seed`` … ``--first-seed + --episodes − 1`` (env defaults: random start yaw U(−π, π), start
position noise ±5 mm, no domain randomization) of up to ``--steps`` env steps (20 Hz) with
:class:`~cenic_gym.envs.allegro_cube.ScriptedRotator` (target 100°, clockwise), measured by
:func:`~cenic_gym.envs.allegro_cube.rotation_episode` on the true cube state. Success (issue 12): the rotation about
the palm normal reached ≥ 90° and the cube was not dropped (and the simulator did not fail) within the episode.
Modes: ε = 1e-3 (the issue's setting) and fixed steps 0.01 s / 0.002 s on the same episodes, for contrast. The
controller was first tuned on seeds 100–151; its retreat, re-grip and heel guard were chosen on seeds 100–119 and
0–19 and its thumb wall on 0–19, so the script also runs ``--holdout-first-seed`` … (default 20–39), never run while
tuning, at ε = 1e-3. Writes the ``allegro-scripted`` section of ``benchmarks/RESULTS.md``.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402

import cenic_gym  # noqa: E402,F401  (registers the envs)
from bench_common import provenance, replace_marked_section, warm_up  # noqa: E402
from cenic_gym.envs.allegro_cube import ScriptedRotator, rotation_episode  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
ENV_ID = "CenicAllegro-v0"
MODES = [("ε = 1e-3", dict(accuracy=1e-3)), ("fixed 0.01", dict(fixed_step=0.01)),
         ("fixed 0.002", dict(fixed_step=0.002))]
TARGET = 0.8  # success rate asked for by issue 12


def success(r):
    """Issue 12's criterion on a :func:`rotation_episode` result."""
    return r["max_rotation"] >= 0.5 * math.pi and not r["dropped"] and not r["sim_failure"]


def run_mode(kwargs, seeds, steps, policy_kwargs=None):
    env = gym.make(ENV_ID, **kwargs)
    policy = ScriptedRotator(env, **(policy_kwargs or {}))
    rows, wall = [], 0.0
    for s in seeds:
        t0 = time.perf_counter()
        rows.append(rotation_episode(env, policy, s, steps))
        wall += time.perf_counter() - t0
    env.close()
    return rows, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=20, help="seeded episodes per mode (default 20)")
    ap.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--steps", type=int, default=160, help="env steps per episode at most (default 160 = 8 s)")
    ap.add_argument("--holdout-first-seed", type=int, default=20,
                    help="first of --episodes held-out seeds run once more at ε = 1e-3 (default 20; -1: skip)")
    ap.add_argument("--policy-kwargs", type=json.loads, default={},
                    help="JSON dict of ScriptedRotator arguments, for ablations (with --no-write), e.g. "
                         "'{\"heel\": null}'")
    ap.add_argument("--accuracy-only", action="store_true", help="run only the ε = 1e-3 mode (with --no-write)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    if (args.policy_kwargs or args.accuracy_only) and not args.no_write:
        ap.error("--policy-kwargs and --accuracy-only are for ablations: add --no-write (RESULTS.md holds the "
                 "defaults' numbers in every mode)")
    modes = MODES[:1] if args.accuracy_only else MODES
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    warm_up()
    seeds = range(args.first_seed, args.first_seed + args.episodes)
    table = ["| mode | successes | rate | drops | sim failures | median steps to 90° | mean final rotation [°] | "
             "max final tilt [°] | wall [s] |", "|---|---|---|---|---|---|---|---|---|"]
    per_seed = {}
    verdict = ""
    for mode, kw in modes:
        rows, wall = run_mode(kw, seeds, args.steps, args.policy_kwargs)
        ok = [success(r) for r in rows]
        per_seed[mode] = ["ok" if g else ("drop" if r["dropped"] else f"{math.degrees(r['max_rotation']):.0f}°")
                          for g, r in zip(ok, rows)]
        quarter = sorted(r["steps_to_quarter"] for r in rows if r["steps_to_quarter"] is not None)
        med = quarter[len(quarter) // 2] if quarter else float("nan")
        n_ok = sum(ok)
        line = (f"| {mode} | {n_ok}/{len(rows)} | {100 * n_ok / len(rows):.0f} % | "
                f"{sum(r['dropped'] for r in rows)} | {sum(r['sim_failure'] for r in rows)} | {med} | "
                f"{sum(math.degrees(r['rotation']) for r in rows) / len(rows):.0f} | "
                f"{max(math.degrees(r['tilt']) for r in rows):.0f} | {wall:.0f} |")
        print(line, flush=True)
        table.append(line)
        if mode == "ε = 1e-3":
            rate = n_ok / len(rows)
            verdict = (f"Target (issue 12): ≥ {100 * TARGET:.0f} % of {len(rows)} seeded episodes at ε = 1e-3: "
                       f"{100 * rate:.0f} %: " + ("meets." if rate >= TARGET else "misses."))
    holdout = []
    if args.holdout_first_seed >= 0:
        h_seeds = range(args.holdout_first_seed, args.holdout_first_seed + args.episodes)
        rows, _ = run_mode(dict(MODES)["ε = 1e-3"], h_seeds, args.steps, args.policy_kwargs)
        n_ok = sum(success(r) for r in rows)
        outcome = ", ".join(f"{s}: " + ("ok" if success(r) else ("drop" if r["dropped"] else
                                                                f"{math.degrees(r['max_rotation']):.0f}°"))
                            for s, r in zip(h_seeds, rows))
        holdout = [f"Held-out seeds {h_seeds[0]}–{h_seeds[-1]} at ε = 1e-3 (never run while the controller was "
                   f"tuned): {n_ok}/{len(rows)} = {100 * n_ok / len(rows):.0f} %, "
                   f"{sum(r['dropped'] for r in rows)} dropped ({outcome}).", ""]
        print(holdout[0], flush=True)
    seed_table = ["| seed | " + " | ".join(m for m, _ in modes) + " |", "|---" * (len(modes) + 1) + "|"]
    for i, s in enumerate(seeds):
        seed_table.append(f"| {s} | " + " | ".join(per_seed[m][i] for m, _ in modes) + " |")
    command = "python benchmarks/allegro_scripted.py" + \
        (f" --episodes {args.episodes}" if args.episodes != 20 else "") + \
        (f" --first-seed {args.first_seed}" if args.first_seed != 0 else "") + \
        (f" --steps {args.steps}" if args.steps != 160 else "") + \
        (f" --holdout-first-seed {args.holdout_first_seed}" if args.holdout_first_seed != 20 else "")
    body = "\n".join([
        *provenance("benchmarks/allegro_scripted.py", f"`{command}` (sets NUMBA_NUM_THREADS=1, OMP_NUM_THREADS=1 itself)", time.perf_counter() - t_start, load0,
                    ('numba', ('pinocchio (pin)', 'pin'), 'numpy', 'gymnasium')),
        f"`ScriptedRotator` (a feedback finger relay: index, middle and ring fingers push the cube's vertical edges "
        f"clockwise, each in its reachable zone of edge angles, targets recomputed from the observed cube pose every "
        f"0.05 s; target 100°, then the fingers back off radially and lift; stall rescue: zones widened by 15° "
        f"after 10 periods without progress, pushing fingers re-grip their edge every 20 stalled periods; heel "
        f"guard: no push towards the heel while the cube centre is behind x = −0.060 m; thumb wall: the thumb's "
        f"fingertip stands beside the palm's −y edge at the cube's mid-height, a post the pushes' drift runs into) "
        f"on `{ENV_ID}` defaults "
        f"(random start yaw and ±5 mm start "
        f"position, no domain randomization), seeds {seeds[0]}–{seeds[-1]}, up to {args.steps} env steps "
        f"({args.steps * 0.05:.0f} s). Success: rotation about the palm normal (true cube state, summed per-step "
        "twist) reached ≥ 90° and no drop / simulator failure within the episode. Tilt: angle of the cube's most "
        "vertical axis from the palm normal at the end (the cube rests partly on the thumb's base box: a few "
        "degrees). The controller's first version was tuned on seeds 100–151; its retreat, re-grip and heel "
        "guard were chosen on seeds 100–119 *and* these seeds 0–19 (their failures were diagnosed), and the "
        "thumb wall's point on seeds 0–19 among three (y = −0.055, −0.065, −0.075 m), so 0–19 is not held out: "
        "see the held-out seeds below the table (run with the chosen controller only; 20–39 also with the wall "
        "at y = −0.060 and −0.070 m, as a sensitivity check, RESULTS.md \"Scripted rotator: a thumb wall\").",
        "",
        *table,
        "",
        verdict,
        "",
        *holdout,
        "Per seed (`ok`, `drop`, or the largest rotation reached):",
        "",
        *seed_table,
    ])
    print()
    print(body)
    if not args.no_write:
        RESULTS.write_text(replace_marked_section(RESULTS.read_text(), "allegro-scripted", body,
                                                  heading="## CenicAllegro-v0: scripted quarter turn (feasibility)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
