"""Vacuum gripper benchmark (CENIC Fig. 13 analogue).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/suction.py

Scene (:func:`cenic_gym.suction.suction_scene`): a 2×2 array of 20 g bellows cups on a gantry, a 0.5 kg box
(10 × 10 × 5 cm) whose top face starts 1 cm under the cup lips, ground 22 cm below; suction on from t = 0,
simulated for 2 s. Three integrations:

(a) CENIC, ε = 1e-3, suction linearized implicitly (forward differences, CENIC §V-C);
(b) fixed steps δt = 0.01 s (plain discrete ICF), suction explicit (τ = g(q^n), ``implicit=False``);
(c) fixed steps δt = 0.01 s, suction linearized implicitly.

For each: whether the box is held at the end, the largest penetration (most negative contact φ over the accepted
states, ``stats.min_signed_distance``), pass-through (the box top rising above the lowest cup lip by more than
1 mm at any accepted step), steps and wall time (median of 3 runs after a warm-up). A sensitivity table repeats
the pass-through measure for weaker and stronger suction. Writes ``benchmarks/suction.png`` (box top height vs
time) and the section of ``benchmarks/RESULTS.md`` between ``<!-- suction:begin -->`` and ``<!-- suction:end -->``
(appended if absent; the rest of the file is kept verbatim).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import datetime  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from bench_common import git_rev, machine_line, replace_marked_section, versions  # noqa: E402
from cenic_gym import Simulator  # noqa: E402
from cenic_gym import suction as sx  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
PLOT = HERE / "suction.png"
HEADING = "## Suction gripper (CENIC Fig. 13)"
COMMAND = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/suction.py"

T_END = 2.0
REPEATS = 3
PASS_TOL = 1e-3  # [m] box top above the lowest lip by more than this: pass-through
HOLD_TOL = 1e-3  # [m] |lip − box top| at the end below this (and box at rest): held
CASES = [  # label, Simulator kwargs, implicit suction
    ("(a) CENIC ε = 1e-3, implicit", dict(accuracy=1e-3), True),
    ("(b) fixed δt = 0.01, explicit", dict(fixed_step=0.01), False),
    ("(c) fixed δt = 0.01, implicit", dict(fixed_step=0.01), True),
]
SENSITIVITY_FMAX = [20.0, 50.0, 100.0]  # [N] per cup
CONVERGENCE_EPS = [1e-2, 1e-3, 1e-4, 1e-5]  # CENIC accuracies of the convergence table (1e-5: the plot's reference)


def make(implicit, **scene_kw):
    sc = sx.suction_scene(implicit=implicit, **scene_kw)
    return sc


def trajectory(sim_kw, implicit, **scene_kw):
    """Integrate step by step (the same step sequence as ``advance_to(T_END)``) and record every accepted state."""
    sc = make(implicit, **scene_kw)
    sim = Simulator(sc.system, external=sc.external, **sim_kw)
    it = sim.integrator
    rows = [(0.0, sc.box_top(sim.q), sc.mouth_heights(sim.q).min(), 0.0)]
    while it.t < T_END - 1e-12:
        it.step(T_END)
        phi = sim.contact_results().phi
        rows.append((it.t, sc.box_top(sim.q), sc.mouth_heights(sim.q).min(), float(phi.min()) if len(phi) else 0.0))
    tr = np.array(rows)
    v_box = np.linalg.norm(sim.body_velocity("box")[0])
    return sc, sim, tr, v_box


def timed(sim_kw, implicit, **scene_kw):
    walls, stats = [], None
    for k in range(REPEATS + 1):
        sc = make(implicit, **scene_kw)
        sim = Simulator(sc.system, external=sc.external, **sim_kw)
        t0 = time.perf_counter()
        sim.advance_to(T_END)
        w = time.perf_counter() - t0
        if k:  # the first run warms up (numba cache loading)
            walls.append(w)
        stats = sim.stats
    return statistics.median(walls), stats


def summarize(tr, v_box, stats):
    over = tr[:, 1] - tr[:, 2]  # box top − lowest lip [m]
    caught = np.flatnonzero(np.abs(over) < HOLD_TOL)
    return dict(
        held=bool(abs(over[-1]) < HOLD_TOL and v_box < 1e-2),
        end_gap=float(-over[-1]),
        max_pen=max(0.0, -float(stats.min_signed_distance)),
        max_over=float(over.max()),
        passthrough=bool(over.max() > PASS_TOL),
        t_catch=float(tr[caught[0], 0]) if len(caught) else float("nan"),
        accepted=stats.accepted, rejected=stats.rejected, newton=stats.newton_iters,
        min_dt=stats.min_dt, max_dt=stats.max_dt)


def plot(trajs, path, reference=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = ["-", "--", ":"]
    curves = list(trajs) + ([reference] if reference is not None else [])
    for k, (label, tr) in enumerate(curves):
        ref = reference is not None and k == len(curves) - 1
        kw = dict(color="k", lw=0.8, alpha=0.6) if ref else dict(ls=styles[k % 3])
        axes[0].plot(tr[:, 0], 1e3 * tr[:, 1], label=label, **kw)
        sel = tr[:, 0] <= 0.2 + 1e-12
        axes[1].plot(tr[sel, 0], 1e3 * (tr[sel, 1] - tr[sel, 2]), marker=None if ref else ".", ms=4, label=label,
                     **kw)
    axes[1].axhline(1e3 * PASS_TOL, color="r", lw=0.8, ls="--", label="pass-through threshold (1 mm)")
    axes[0].set_ylabel("box top height [mm]")
    axes[0].set_title("box top height (suction on at t = 0)")
    axes[1].set_ylabel("box top − lowest cup lip [mm]  (> 0: into the cups)")
    axes[1].set_title("first 0.2 s (markers: accepted steps)")
    for ax in axes:
        ax.set_xlabel("t [s]")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_results(body):
    old = RESULTS.read_text() if RESULTS.exists() else ""
    RESULTS.write_text(replace_marked_section(old, "suction", body, heading=HEADING))


def main():
    t_start = time.perf_counter()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load0 = os.getloadavg()[0]
    results, trajs = [], []
    for label, kw, implicit in CASES:
        sc, sim, tr, v_box = trajectory(kw, implicit)
        wall, stats = timed(kw, implicit)
        r = summarize(tr, v_box, stats)
        r.update(label=label, wall=wall)
        results.append(r)
        trajs.append((label, tr))
        r["final_q"] = sim.q
        print(f"{label}: held={r['held']} max pen={1e3 * r['max_pen']:.3f} mm max over={1e3 * r['max_over']:.2f} mm "
              f"steps={r['accepted']}/{r['rejected']} wall={wall:.3f} s")
    sens = []
    for f_max in SENSITIVITY_FMAX:
        row = [f_max]
        for label, kw, implicit in CASES:
            sc, sim, tr, v_box = trajectory(kw, implicit, f_max=f_max)
            r = summarize(tr, v_box, sim.stats)
            row.append(r)
        sens.append(row)
        print(f"f_max={f_max}: " + ", ".join(f"{1e3 * r['max_over']:.2f} mm" for r in row[1:]))
    conv = []
    for eps in CONVERGENCE_EPS:
        sc, sim, tr, v_box = trajectory(dict(accuracy=eps), True)
        conv.append((eps, summarize(tr, v_box, sim.stats), tr))
        print(f"eps={eps:g}: max pen {1e3 * conv[-1][1]['max_pen']:.3f} mm, {sim.stats.accepted} steps")
    plot(trajs, PLOT, reference=(f"CENIC ε = {CONVERGENCE_EPS[-1]:g} (reference)", conv[-1][2]))
    total = time.perf_counter() - t_start

    c = sx
    lines = [
        f"_Generated by `benchmarks/suction.py` between the `suction` markers; do not edit by hand (rerun the "
        f"command)._",
        "",
        f"- Command: `{COMMAND}`",
        f"- Date: {date}; total runtime {total:.0f} s (1-minute load average {load0:.2f} at start, "
        f"{os.getloadavg()[0]:.2f} at end)",
        f"- Machine: {machine_line()}",
        f"- {versions('numba', 'pin', 'numpy')}; code: git {git_rev()}",
        "",
        f"Scene (`cenic_gym.suction.suction_scene()`): gantry gripper, 2×2 cups (radius {1e3 * c.CUP_RADIUS:g} mm, "
        f"{1e3 * c.CUP_MASS:g} g, 6 lip spheres of {1e3 * c.LIP_RADIUS:g} mm) on prismatic bellows joints (stroke "
        f"±{1e3 * c.STROKE[1]:g} mm, implicit spring {c.SPRING_KP:g} N/m, {c.SPRING_KD:g} N s/m), gantry held by an "
        f"implicit PD ({c.GANTRY_KP:g} N/m, {c.GANTRY_KD:g} N s/m, gravity feed-forward); 0.5 kg box 10 × 10 × 5 cm, "
        f"top face 10 mm under the lips; contact k = 1e5 N/m per geometry (5e4 per pair point), d = 10 s/m, μ = 1. "
        f"Suction per cup f(d) = f_max (min(1, d_sat/d) − d_sat/d_cut)/(1 − d_sat/d_cut), f_max = {c.F_MAX:g} N, "
        f"d_sat = {1e3 * c.D_SAT:g} mm, d_cut = {1e3 * c.D_CUT:g} mm, times max(0, cos θ) (module docstring of "
        f"`cenic_gym/suction.py`). Suction on from t = 0; T = {T_END:g} s.",
        "",
        "`held`: at T the box top is within 1 mm of the lowest lip and the box moves < 1 cm/s. `max pen.`: most "
        "negative contact φ over the accepted states (`stats.min_signed_distance`). `max box top − lip`: largest "
        "height of the box top above the lowest cup lip over the accepted steps (the lip spheres reach 1 mm below "
        "the cup cylinders; > 1 mm = **pass-through**: the box top went into the cups). `caught at`: first accepted "
        f"step with |lip − box top| < 1 mm. Wall: median of {REPEATS} runs of `advance_to({T_END:g})` after a "
        "warm-up.",
        "",
        "| run | held | max pen. [mm] | max box top − lip [mm] | pass-through | caught at [s] | steps acc./rej. | "
        "Newton it. | δt min / max [s] | wall [s] | wall / sim s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['label']} | {'yes' if r['held'] else 'no'} | {1e3 * r['max_pen']:.3f} | {1e3 * r['max_over']:.3f} "
            f"| {'**yes**' if r['passthrough'] else 'no'} | {r['t_catch']:.4f} | {r['accepted']}/{r['rejected']} | "
            f"{r['newton']} | {r['min_dt']:.2g} / {r['max_dt']:.2g} | {r['wall']:.3f} | {r['wall'] / T_END:.4f} |")
    lines += [
        "",
        "Sensitivity to the suction strength (same scene, `max box top − lip` [mm] / held at T):",
        "",
        "| f_max per cup [N] | " + " | ".join(label for label, _, _ in CASES) + " |",
        "|---|" + "---|" * len(CASES),
    ]
    for row in sens:
        lines.append(f"| {row[0]:g} | " + " | ".join(
            f"{1e3 * r['max_over']:.2f} / {'held' if r['held'] else 'not held'}" for r in row[1:]) + " |")
    lines += [
        "",
        "CENIC alone at other accuracies (implicit suction; the ε = 1e-5 run is the reference curve of the plot). "
        "`caught at` is the first accepted step that ends with the box at the lips, so it is quantized by the steps:",
        "",
        "| ε | held | max pen. [mm] | max box top − lip [mm] | caught at [s] | steps acc./rej. |",
        "|---|---|---|---|---|---|",
    ]
    for eps, r, _ in conv:
        lines.append(f"| {eps:g} | {'yes' if r['held'] else 'no'} | {1e3 * r['max_pen']:.3f} | "
                     f"{1e3 * r['max_over']:.3f} | {r['t_catch']:.4f} | {r['accepted']}/{r['rejected']} |")
    tb, tc = trajs[1][1], trajs[2][1]
    bc = float(np.abs(tb[:, 1] - tc[:, 1]).max()) if tb.shape == tc.shape else float("nan")
    ra = results[0]
    spread = float(np.ptp([tr[-1, 1] for _, _, tr in conv]))
    lines += [
        "",
        "Notes (numbers from this run):",
        "",
        f"- Fixed steps: the box starts at rest, so the first step's speculative contact margin is only the base "
        f"1 mm (no velocity look-ahead) and the 10 mm gap is not in the contact problem; suction pulls the box "
        f"{1e3 * results[1]['max_over']:.1f} mm into the cups within that step. The lip contacts then push it out at "
        "a relative speed of at most 1/d = 0.1 m/s (Hunt–Crossley dissipation d = 10 s/m), about 1 mm per step, hence the slow "
        f"recovery (caught at {results[1]['t_catch']:.2f} s). (b) and (c) differ by at most {1e3 * bc:.3f} mm: "
        "suction is a negative stiffness, so the forward-difference diagonal −∂τ/∂v is ≤ 0 on the approach DOFs, "
        "C = 0 and the implicit law is the explicit one evaluated at q̃ = q^n ⊕ δt v^n (identical to (b) in the "
        "first step, v^n = 0). (c) costs more wall time: 14 evaluations of the law per linearization.",
        f"- CENIC: the first 0.01 s step is rejected, the capture is resolved with steps down to {ra['min_dt']:.2g} s "
        f"and the whole {T_END:g} s takes {ra['accepted']} accepted steps (δt grows to max_step = 0.1 s once the box "
        "is held). The box never enters the cups, even at ε = 1e-2 whose first 0.01 s step is accepted: CENIC keeps "
        "the result of the two half steps, and the second half step's speculative margin includes the velocity "
        "reached at mid-step.",
        "- At ε ≥ 1e-3 the ~80 ms ringing of box and cups on the bellows springs (4 × 1000 N/m, 0.58 kg) seen in "
        "the ε = 1e-5 reference is damped numerically (first-order implicit steps of up to 0.1 s); the held "
        f"box top heights at T agree to {spread:.1e} m across ε = {CONVERGENCE_EPS[0]:g} … {CONVERGENCE_EPS[-1]:g}.",
        "",
        "![box top height vs time](suction.png)",
        "",
    ]
    write_results("\n".join(lines))
    print(f"wrote {PLOT} and the suction section of {RESULTS} ({total:.0f} s)")


if __name__ == "__main__":
    main()
