"""Feasibility of CenicSuction-v0: the scripted picker over seeded episodes, CENIC against fixed steps.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/suction_pick.py [--episodes 50] [--no-write]

For each configuration — ε = 1e-3 with error control (suction linearized in the convex step), ``fixed_step=0.01``
with the explicit suction element (τ = g(q^n), as most simulators do; CENIC Fig. 13b) and ``fixed_step=0.01`` with
the implicit one; everything else default, no domain randomization — the
:class:`~cenic_gym.envs.suction_pick.ScriptedPicker` drives ``gym.make("CenicSuction-v0", ...)`` through the same
episodes (``reset(seed=k)``, k = 0 … episodes − 1), 200 steps each (the time limit). Per episode:

* success: ``info["is_success"]`` of the last step;
* max penetration: the most negative contact φ over every accepted state of the episode (the
  ``info["sim"]["max_penetration"]`` of each env step), box/cup, box/box,
  box/table and box/tote alike;
* lip pass-through: the largest height of the target's top face above the lowest cup mouth while it is attached
  (> 1 mm: the box went into the cups);
* env steps/s: env steps / wall time of ``env.step`` (the picker's own time excluded), and substeps / rejected
  attempts per env step (``info["sim"]``).

Success means the target inside the tote, on its floor, released, at rest, the other boxes on the table (3 boxes,
f_max = 20 N per cup with the seal/leak model). Failing seeds are listed with ``evaluate()``'s parts that are False
and the attach/release events. The feasibility target: ≥ 95 % success at ε = 1e-3 with penetration < 1 mm.

Writes the ``suction-pick`` section of ``benchmarks/RESULTS.md`` (appended if absent; the rest of the file is kept
verbatim) and prints it. About 1 min at 50 episodes; a timing benchmark (env steps/s): run it on an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from bench_common import provenance, warm_up, write_section  # noqa: E402
from cenic_gym.envs import suction_constants as sc  # noqa: E402
from cenic_gym.envs.suction_pick import ScriptedPicker  # noqa: E402

HERE = Path(__file__).resolve().parent
HEADING = "## CenicSuction-v0: scripted pick and place"
COMMAND = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/suction_pick.py"
CONFIGS = [("ε = 1e-3 (error control), implicit suction", dict(accuracy=1e-3)),
           ("fixed_step = 0.01, explicit suction", dict(fixed_step=0.01, explicit_suction=True)),
           ("fixed_step = 0.01, implicit suction", dict(fixed_step=0.01))]
TARGET = 0.95  # the feasibility target: >= 95 % at ε = 1e-3
PEN_BOUND = 1e-3  # [m]


def episode(env, policy, seed):
    u = env.unwrapped
    pen = 0.0
    obs, _ = env.reset(seed=seed)
    policy.reset()
    out = dict(steps=0, wall=0.0, substeps=0, rejected=0, events=[], through=0.0, failure=None, terminated=False)
    info = {}
    for _ in range(200):
        a = policy(obs)
        t0 = time.perf_counter()
        obs, _, term, trunc, info = env.step(a)
        out["wall"] += time.perf_counter() - t0
        out["steps"] += 1
        out["substeps"] += info["sim"]["substeps"]
        out["rejected"] += info["sim"]["rejected"]
        pen = max(pen, info["sim"]["max_penetration"])
        for k in ("attach_event", "release_event"):
            if info.get(k):
                out["events"].append(f"{k.split('_')[0]}@{policy.plan[policy.phase][0]}")
        if info.get("attached"):
            s = u.view
            top = (s.p_box + s.R_box @ np.array([0.0, 0.0, 0.5 * u.sizes[0, 2]]))[2]
            mouth = (s.p_tool[2] - sc.MOUTH_BELOW_TOOL) - np.max(u.sim.q[u.cup_q])
            out["through"] = max(out["through"], top - mouth)
        if "sim_failure" in info:
            out["failure"] = info["sim_failure"]
        if term or trunc:
            out["terminated"] = bool(term)
            break
    out.update(success=bool(info.get("is_success")), pen=pen, parts=u.evaluate())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    warm_up()
    rows = []
    for label, kw in CONFIGS:
        env = gym.make("CenicSuction-v0", **kw)
        policy = ScriptedPicker(env)
        episode(env, policy, 10_000)  # warm-up (not counted)
        eps = [episode(env, policy, k) for k in range(args.episodes)]
        rows.append((label, eps))
        ok = sum(e["success"] for e in eps)
        print(f"{label}: {ok}/{len(eps)}, max pen {max(e['pen'] for e in eps) * 1e3:.3f} mm, "
              f"{sum(e['steps'] for e in eps) / sum(e['wall'] for e in eps):.0f} env steps/s", flush=True)
        env.close()
    total = time.perf_counter() - t_start
    table = ["| configuration | success | max penetration, median / max [mm] | episodes with penetration ≥ 1 mm | "
             "box top above the lips while attached, max [mm] | env steps/s | real-time factor | "
             "substeps / env step | rejected / env step |",
             "|---|---|---|---|---|---|---|---|---|"]
    failing = []
    for label, eps in rows:
        n = len(eps)
        ok = sum(e["success"] for e in eps)
        pens = np.array([e["pen"] for e in eps]) * 1e3
        steps = sum(e["steps"] for e in eps)
        wall = sum(e["wall"] for e in eps)
        table.append(f"| {label} | {ok}/{n} ({100 * ok / n:.0f} %) | {np.median(pens):.3f} / {pens.max():.3f} | "
                     f"{int((pens >= PEN_BOUND * 1e3).sum())} | {max(e['through'] for e in eps) * 1e3:.2f} | "
                     f"{steps / wall:.0f} | {steps * 0.05 / wall:.1f} | "
                     f"{sum(e['substeps'] for e in eps) / steps:.2f} | {sum(e['rejected'] for e in eps) / steps:.2f} |")
        bad = [f"seed {k} ({', '.join(p for p, v in e['parts'].items() if v is False) or 'ok parts'}; events "
               f"{' '.join(e['events']) or 'none'}"
               + ("; terminated" if e["terminated"] else "") + (f"; {e['failure']}" if e["failure"] else "") + ")"
               for k, e in enumerate(eps) if not e["success"]]
        failing.append(f"{label}: " + ("none" if not bad else "; ".join(bad)))
    main_rate = sum(e["success"] for e in rows[0][1]) / len(rows[0][1])
    main_pen = max(e["pen"] for e in rows[0][1])
    body = "\n".join([
        *provenance("benchmarks/suction_pick.py",
                    f"`{COMMAND}" + (f" --episodes {args.episodes}" if args.episodes != 50 else "") + "`", total,
                    load0, ("numba", ("pinocchio (pin)", "pin"), "numpy", "gymnasium")),
        f"`ScriptedPicker` on `CenicSuction-v0` (defaults, no domain randomization), seeds 0–{args.episodes - 1}, up "
        "to 200 steps (10 s) per episode, the same episodes in each configuration; success: `info[\"is_success\"]` "
        "at the last step; max penetration: most negative contact φ over every accepted state (all pairs); box top "
        "above the lips: the target's top face above the lowest cup mouth while attached (> 1 mm: into the cups); "
        "env steps/s: env steps / wall time of `env.step` (the picker excluded).",
        "",
        *table,
        "",
        f"Result: the picker {'meets' if main_rate >= TARGET else 'misses'} the feasibility target (≥ 95 % at "
        f"ε = 1e-3): {100 * main_rate:.0f} %, max penetration {main_pen * 1e3:.3f} mm "
        f"({'<' if main_pen < PEN_BOUND else '≥'} 1 mm). Failing seeds (`evaluate()` parts that are False, "
        "attach/release events): " + "; ".join(failing) + ".",
    ])
    print()
    print(body)
    if not args.no_write:
        write_section("suction-pick", body, HEADING)
    return 0


if __name__ == "__main__":
    sys.exit(main())
