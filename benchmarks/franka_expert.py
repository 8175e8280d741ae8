"""Feasibility of CenicFranka-v0: the scripted expert over seeded episodes, CENIC against fixed steps.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/franka_expert.py [--episodes 50] [--no-write]

For each configuration (ε = 1e-3 with error control, ``fixed_step=0.01``, ``fixed_step=0.002``; everything else
default, no domain randomization) the :class:`~cenic_gym.envs.franka_box.ScriptedExpert` drives
``gym.make("CenicFranka-v0", ...)`` through the same episodes (``reset(seed=k)``, k = 0 … episodes − 1), 200 steps
each (the time limit). Per episode:

* success: ``info["is_success"]`` of the final (200th) step;
* max penetration: the largest ``info["sim"]["max_penetration"]`` over the episode (the most negative contact φ
  over every accepted CENIC state, substeps included);
* slip in the grasp: the box centre in the TCP frame (``body_pose("panda/panda_hand_tcp")``, ``body_pose("box")``)
  at the end of the expert's "close" phase, against every env step up to the start of its "open" phase
  (lift, carry, lower): the largest displacement [mm];
* env steps/s: env steps / wall time of ``env.step`` (the expert's IK is timed apart: ``expert ms/step``);
* substeps (accepted CENIC steps) and rejected attempts per env step (``info["sim"]``).

A failing episode is listed with its reason: the parts of ``evaluate()`` after the last step, the expert's phase
where the grasp was lost (a finger stopped touching the box between the end of "close" and the start of "open"),
termination (box off the table) or a simulator failure. Slip outliers: seeds whose slip in the grasp exceeds 1.5×
their configuration's median. The feasibility target: ≥ 90 % success at ε = 1e-3.

Writes the ``franka-expert`` section of ``benchmarks/RESULTS.md`` (appended if absent; the rest of the file is kept
verbatim) and prints it. About 3 min at 50 episodes; a timing benchmark (env steps/s): run it on an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from bench_common import provenance, warm_up, write_section  # noqa: E402
from cenic_gym.envs.franka_box import ScriptedExpert  # noqa: E402

HERE = Path(__file__).resolve().parent
HEADING = "## CenicFranka-v0: scripted expert (feasibility)"
COMMAND = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/franka_expert.py"
ENV_ID = "CenicFranka-v0"
TCP = "panda/panda_hand_tcp"
TARGET_SUCCESS = 0.90  # the feasibility target: >= 90 % at ε = 1e-3
CONFIGS = [  # label, env options
    ("ε = 1e-3 (error control)", dict(accuracy=1e-3)),
    ("fixed_step = 0.01", dict(fixed_step=0.01)),
    ("fixed_step = 0.002", dict(fixed_step=0.002)),
]
GRASP_PHASES = ("lift", "carry", "lower")  # between the end of "close" and the start of "open"


def box_in_tcp(sim):
    """Box centre in the TCP frame [m]."""
    p_tcp, R_tcp = sim.body_pose(TCP)
    p_box, _ = sim.body_pose("box")
    return R_tcp.T @ (p_box - p_tcp)


def run_episode(env, seed):
    """One expert episode; returns a dict of its measurements."""
    u = env.unwrapped
    obs, _ = env.reset(seed=seed)
    expert = ScriptedExpert(env)
    expert.reset()
    names = [p[0] for p in expert.plan]
    out = dict(seed=seed, steps=0, step_wall=0.0, sim_wall=0.0, expert_wall=0.0, substeps=0, rejected=0,
               terminated=False, sim_failure=None, grasp_lost=None, success=False, penetration=0.0)
    ref = None  # box in the TCP frame at the end of "close"
    slip = 0.0
    trunc = False
    while not trunc:
        t0 = time.perf_counter()
        action = expert(obs)
        t1 = time.perf_counter()
        obs, _, term, trunc, info = env.step(action)
        t2 = time.perf_counter()
        out["expert_wall"] += t1 - t0
        out["step_wall"] += t2 - t1
        out["steps"] += 1
        sim_info = info["sim"]
        out["sim_wall"] += info["wall"]["sim_s"]
        out["substeps"] += sim_info["substeps"]
        out["rejected"] += sim_info["rejected"]
        out["penetration"] = max(out["penetration"], sim_info["max_penetration"])
        out["success"] = bool(info["is_success"])
        if "sim_failure" in info:
            out["sim_failure"] = f"{info['sim_failure']} (phase {names[expert.phase]}, step {out['steps']})"
            break
        phase = names[expert.phase]  # the phase whose targets this step followed
        if phase == "close":
            ref = box_in_tcp(u.sim)  # the last one is the end of "close"
        elif phase in GRASP_PHASES and ref is not None:
            slip = max(slip, float(np.linalg.norm(box_in_tcp(u.sim) - ref)))
            left, right, _ = u.view.contacts
            if not (left and right) and out["grasp_lost"] is None:
                out["grasp_lost"] = f"{phase} (step {out['steps']})"
        if term:
            out["terminated"] = f"terminated at step {out['steps']} (phase {phase}): box left the table"
            break
    out["slip"] = slip
    ev = u.evaluate()
    out["evaluate"] = ev
    out["dz"] = float(u.sim.body_pose("box")[0][2] - u.rest_z)
    out["final_phase"] = names[expert.phase]
    return out


def reason(ep, cfg):
    """Why an episode failed, from ``evaluate()`` and the episode's events."""
    if ep["sim_failure"]:
        return "sim failure: " + ep["sim_failure"]
    if ep["terminated"]:
        return ep["terminated"]
    ev = ep["evaluate"]
    parts = []
    if ev["distance_xy"] >= cfg["success_radius"]:
        parts.append(f"distance_xy {ev['distance_xy'] * 100:.1f} cm ≥ {cfg['success_radius'] * 100:.1f}")
    if ev["tilt"] >= cfg["success_tilt"]:
        parts.append(f"tilt {math.degrees(ev['tilt']):.0f}° ≥ {math.degrees(cfg['success_tilt']):.0f}°")
    if abs(ep["dz"]) >= 0.01:
        parts.append(f"not resting (box centre {ep['dz'] * 1000:+.0f} mm from rest height)")
    if not ev["released"]:
        parts.append("not released (finger touches the box)")
    if not ev["at_rest"]:
        parts.append("moving")
    if ep["grasp_lost"]:
        parts.append(f"grasp lost in {ep['grasp_lost']}")
    parts.append(f"slip {ep['slip'] * 1000:.1f} mm")
    return "; ".join(parts)


def summarize(label, eps):
    n = len(eps)
    steps = sum(e["steps"] for e in eps)
    pen = np.array([e["penetration"] for e in eps]) * 1000
    slip = np.array([e["slip"] for e in eps]) * 1000
    succ = sum(e["success"] for e in eps)
    return dict(label=label, n=n, succ=succ, rate=succ / n, pen_med=np.median(pen), pen_max=pen.max(),
                slip_med=np.median(slip), slip_max=slip.max(), steps_per_s=steps / sum(e["step_wall"] for e in eps),
                substeps=sum(e["substeps"] for e in eps) / steps, rejected=sum(e["rejected"] for e in eps) / steps,
                env_layer=1 - sum(e["sim_wall"] for e in eps) / sum(e["step_wall"] for e in eps),
                expert_ms=1000 * sum(e["expert_wall"] for e in eps) / steps,
                wall=sum(e["step_wall"] + e["expert_wall"] for e in eps))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=50, help="seeds 0 .. episodes-1 (default 50)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    warm_up()
    rows, failures, all_eps = [], [], []
    for label, kw in CONFIGS:
        env = gym.make(ENV_ID, **kw)
        run_episode(env, 10_000)  # warm-up: the env's own numba paths and Pinocchio data, not counted
        eps = []
        for seed in range(args.episodes):
            ep = run_episode(env, seed)
            eps.append(ep)
            if not ep["success"]:
                print(f"  [{label}] seed {seed} FAILED: {reason(ep, env.unwrapped.config)}; "
                      f"evaluate() = {ep['evaluate']}; expert phase at the end: {ep['final_phase']}", flush=True)
        rows.append(summarize(label, eps))
        all_eps.append(eps)
        failures.append((label, [(e["seed"], reason(e, env.unwrapped.config)) for e in eps if not e["success"]]))
        r = rows[-1]
        print(f"{label}: {r['succ']}/{r['n']} success, {r['steps_per_s']:.0f} env steps/s, "
              f"{r['substeps']:.2f} substeps/step ({r['wall']:.0f} s)", flush=True)
        env.close()
    total = time.perf_counter() - t_start
    table = [
        "| configuration | success | max penetration, median / max [mm] | slip in grasp, median / max [mm] | "
        "env steps/s | substeps / env step | rejected / env step | env layer share of env.step | "
        "expert ms / step |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        table.append(f"| {r['label']} | {r['succ']}/{r['n']} ({100 * r['rate']:.0f} %) | {r['pen_med']:.3f} / "
                     f"{r['pen_max']:.3f} | {r['slip_med']:.2f} / {r['slip_max']:.2f} | {r['steps_per_s']:.0f} | "
                     f"{r['substeps']:.2f} | {r['rejected']:.2f} | {100 * r['env_layer']:.0f} % | "
                     f"{r['expert_ms']:.1f} |")
    fail_lines, outliers = [], []
    for (label, fl), eps in zip(failures, all_eps):
        fail_lines.append(f"{label}: " + ("; ".join(f"seed {sd}: {why}" for sd, why in fl) if fl else "none"))
        med = float(np.median([e["slip"] for e in eps]))
        out = [f"{e['seed']} ({e['slip'] * 1000:.1f} mm)" for e in eps if e["slip"] > 1.5 * med]
        outliers.append(f"{label}: " + (", ".join(out) if out else "none"))
    eps_row = rows[0]
    verdict = ("meets" if eps_row["rate"] >= TARGET_SUCCESS else "misses") + \
        f" the feasibility target (≥ {100 * TARGET_SUCCESS:.0f} % at ε = 1e-3): {100 * eps_row['rate']:.0f} %"
    body = "\n".join([
        *provenance("benchmarks/franka_expert.py",
                    f"`{COMMAND}{'' if args.episodes == 50 else f' --episodes {args.episodes}'}`", total, load0,
                    ("numba", ("pinocchio (pin)", "pin"), "numpy", "gymnasium")),
        f"`ScriptedExpert` on `{ENV_ID}` (defaults, no domain randomization), seeds 0–{args.episodes - 1}, 200 "
        "steps (10 s) per episode, the same episodes in each configuration; success: `info[\"is_success\"]` at the "
        "final step; max penetration over every accepted CENIC state; slip in grasp: the box centre's largest "
        "displacement in the TCP frame from the end of \"close\" to the start of \"open\"; env steps/s: env steps / "
        "wall time of `env.step` (the expert's IK excluded: `expert ms / step`); env layer share: 1 − Σ sim wall / "
        "Σ `env.step` wall (definitions: the script's docstring).",
        "",
        *table,
        "",
        f"Result: the expert {verdict}. Failing seeds (`evaluate()` parts, the episode's events): "
        + "; ".join(fail_lines) + ". Slip outliers (> 1.5× the median): " + "; ".join(outliers) + ".",
    ])
    print()
    print(body)
    if not args.no_write:
        write_section("franka-expert", body, HEADING)
    return 0


if __name__ == "__main__":
    sys.exit(main())
