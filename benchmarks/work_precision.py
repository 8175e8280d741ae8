"""Work-precision benchmark of the CENIC integrator.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/work_precision.py [--quick]

For each scene and accuracy ε it measures wall seconds per simulated second (median of repeats), step counts,
Newton / line-search work, factorizations, the cost breakdown (geometry / dynamics / solver / compiled loop /
other; a per-phase split at ε = 1e-3 from one run on the Python step loop), the final
position error against a tight-ε reference run of the same scene, and the largest penetration. Unless
``--no-write`` it writes the ``work-precision`` section of ``benchmarks/RESULTS.md`` (``bench_common.write_section``:
ε = 1e-2, 1e-3, 1e-4 and the targets), the generated companion ``benchmarks/work_precision_tables.md`` (every ε and
column, the reference runs, the per-operation costs, the targets against Drake's quoted numbers) and
``benchmarks/work_precision.png``. A full run takes ~30 s.

``--quick`` runs only ε = 1e-3 and 1e-2 (and still the reference runs) and writes as well.

The clutter scene is chaotic (20 bodies colliding in a bin): the final positions of different ε runs diverge to
O(object size) once a single collision resolves differently, so its error column measures trajectory divergence
rather than integration error, and the ε = 1e-5 reference is itself not converged.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from bench_common import RESULTS, provenance, warm_up, write_section  # noqa: E402
from cenic_gym import Simulator, scenes  # noqa: E402

HERE = Path(__file__).resolve().parent
PLOT = HERE / "work_precision.png"
COMPANION = HERE / "work_precision_tables.md"  # generated: every ε and column (the section shows REPORT_EPS)

EPS_FULL = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]
EPS_QUICK = [1e-2, 1e-3]
REPORT_EPS = [1e-2, 1e-3, 1e-4]  # the accuracies the RESULTS.md section shows
REPEATS = 3
SLOW_RUN_S = 30.0  # a single run slower than this is not repeated
BUDGET_S = 600.0  # soft cap on the whole sweep; repeats are dropped (never whole points) once exceeded

# name, factory, end time [s], reference ε, note
SCENES = [
    ("sphere drop", lambda: scenes.sphere_drop(height=1.0, mass=0.1, stiffness=1e3, dissipation=0.0), 2.0, 1e-7,
     "ball, 1 m drop, k = 1e3 N/m, d = 0"),
    ("incline stick", lambda: scenes.incline(20, 0.5), 2.0, 1e-7, "box on 20° slope, μ = 0.5 (sticks)"),
    ("incline slide", lambda: scenes.incline(20, 0.3), 1.0, 1e-7, "box on 20° slope, μ = 0.3 (slides)"),
    ("clutter", scenes.clutter, 2.0, 1e-5, "20 boxes/spheres dropped in a bin (chaotic)"),
]

TARGETS = [  # scene, ε, limit [s wall per s simulated], Drake C++ CENIC reference [s/s]
    ("clutter", 1e-3, 1.0, 0.56),
    ("sphere drop", 1e-3, 5e-3, 1.3e-3),
    ("incline stick", 1e-3, 5e-3, 1.3e-3),
    ("incline slide", 1e-3, 5e-3, 1.3e-3),
]


# ---------------------------------------------------------------------------------------------------------------
def body_positions(sim):
    return np.array([sim.body_pose(name)[0] for name in sim.system.body_names]).reshape(-1, 3)


def run_once(factory, eps, t_end, python_loop=False):
    """One simulation from a freshly built scene; scene construction is not timed. These scenes are free bodies, so
    the integrator runs its compiled step loop (``cenic.advance_free_bodies``), unless ``python_loop``: the Python
    loop that articulated systems run, timed per phase."""
    sim = Simulator(factory(), accuracy=eps)
    sim.integrator._compiled_loop &= not python_loop
    t0 = time.perf_counter()
    sim.advance_to(t_end)
    wall = time.perf_counter() - t0
    return dict(wall=wall, stats=sim.stats.copy(), pos=body_positions(sim))


def measure(factory, eps, t_end, repeats, deadline):
    runs = [run_once(factory, eps, t_end)]
    while len(runs) < repeats and runs[0]["wall"] < SLOW_RUN_S and time.perf_counter() < deadline:
        runs.append(run_once(factory, eps, t_end))
    walls = [r["wall"] for r in runs]
    med = statistics.median(walls)
    rep = min(runs, key=lambda r: abs(r["wall"] - med))  # counters / breakdown of the median run
    return dict(wall=med, walls=walls, stats=rep["stats"], pos=rep["pos"], n=len(runs))


def row_of(scene, eps, t_end, m, ref_pos, ref_eps):
    st = m["stats"]
    tot = st.wall_total if st.wall_total > 0 else float("nan")
    other = st.wall_total - st.wall_geometry - st.wall_dynamics - st.wall_solver - st.wall_compiled
    if ref_pos is None:
        err = float("nan")
    elif eps == ref_eps:
        err = 0.0
    else:
        err = float(np.max(np.linalg.norm(m["pos"] - ref_pos, axis=1)))
    return dict(
        scene=scene, eps=eps, t_end=t_end, runs=m["n"], wall_per_s=m["wall"] / t_end, walls=m["walls"],
        accepted=st.accepted, rejected=st.rejected, solves=st.solves, geometry_queries=st.geometry_queries,
        newton_per_solve=st.newton_iters / max(st.solves, 1),
        ls_per_newton=st.line_search_iters / max(st.newton_iters, 1),
        factorizations=st.factorizations, solver_failures=st.solver_failures,
        f_geom=st.wall_geometry / tot, f_dyn=st.wall_dynamics / tot, f_solver=st.wall_solver / tot,
        f_compiled=st.wall_compiled / tot, f_other=other / tot,
        us_step=1e6 * st.wall_total / max(st.accepted, 1),
        us_attempt=1e6 * st.wall_total / max(st.accepted + st.rejected, 1), us_solve=1e6 * st.wall_solver / max(st.solves, 1),
        us_geom=1e6 * st.wall_geometry / max(st.geometry_queries, 1),
        us_dyn=1e6 * st.wall_dynamics / max(st.geometry_queries, 1),
        us_other_step=1e6 * other / max(st.accepted + st.rejected, 1),
        err=err, ref_eps=ref_eps, penetration=-st.min_signed_distance if math.isfinite(st.min_signed_distance) else 0.0,
        min_dt=st.min_dt, max_dt=st.max_dt,
    )


# ---------------------------------------------------------------------------------------------------------------
def fmt_s(x):
    if x >= 1.0:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{1e3 * x:.3g} ms"
    return f"{1e6 * x:.3g} µs"


def fmt_err(r):
    if r["eps"] == r["ref_eps"]:
        return "(ref)"
    if not math.isfinite(r["err"]):
        return "–"
    return f"{r['err']:.2e}"


def main_table(rows):
    head = ("| scene | ε | wall / sim s | runs | accepted | rejected | Newton / solve | LS / Newton | factor. "
            "| geom | dyn | solver | compiled | other | pos. error [m] | max pen. [mm] |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        lines.append(
            f"| {r['scene']} | {r['eps']:.0e} | {fmt_s(r['wall_per_s'])} | {r['runs']} | {r['accepted']} "
            f"| {r['rejected']} | {r['newton_per_solve']:.2f} | {r['ls_per_newton']:.2f} | {r['factorizations']} "
            f"| {100 * r['f_geom']:.0f}% | {100 * r['f_dyn']:.0f}% | {100 * r['f_solver']:.0f}% "
            f"| {100 * r['f_compiled']:.0f}% | {100 * r['f_other']:.0f}% | {fmt_err(r)} | {1e3 * r['penetration']:.3f} |")
    return "\n".join(lines)


def per_op_table(rows, python_rows):
    """At ε = 1e-3: µs per attempted step of the timed (compiled) runs, and the per-phase split of one run of the
    same scene on the Python step loop (``python_rows``: scene -> row)."""
    head = ("| scene | ε | µs / attempted step, compiled loop | µs / attempted step, Python loop | µs / solve "
            "| µs / geometry query | µs / dynamics eval | µs other / attempted step | solves / accepted step |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        p = python_rows.get(r["scene"])
        if r["eps"] != 1e-3 or p is None:
            continue
        lines.append(f"| {r['scene']} | {r['eps']:.0e} | {r['us_attempt']:.1f} | {p['us_attempt']:.1f} "
                     f"| {p['us_solve']:.1f} | {p['us_geom']:.1f} | {p['us_dyn']:.1f} | {p['us_other_step']:.1f} "
                     f"| {p['solves'] / max(p['accepted'], 1):.2f} |")
    return "\n".join(lines)


def ref_table(refs):
    head = "| scene | end time | reference ε | wall | accepted | rejected | note |"
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for name, info in refs.items():
        lines.append(f"| {name} | {info['t_end']:g} s | {info['eps']:.0e} | {info['wall']:.2f} s | {info['accepted']} "
                     f"| {info['rejected']} | {info['note']} |")
    return "\n".join(lines)


def targets_table(rows):
    """The project targets at ε = 1e-3 against the measured wall per simulated second (companion file)."""
    out = ["| scene | ε | measured | target | Drake C++ CENIC (quoted, not re-measured) | verdict |",
           "|---|---|---|---|---|---|"]
    by = {(r["scene"], r["eps"]): r for r in rows}
    for scene, eps, limit, drake in TARGETS:
        r = by.get((scene, eps))
        if r is None:
            out.append(f"| {scene} | {eps:.0e} | not run | ≤ {fmt_s(limit)} | ~{fmt_s(drake)} | – |")
            continue
        x = r["wall_per_s"]
        verdict = (f"**met** ({x / limit:.2f}× the target)" if x <= limit
                   else f"**missed** ({x / limit:.1f}× the target)")
        out.append(f"| {scene} | {eps:.0e} | {fmt_s(x)} | ≤ {fmt_s(limit)} | ~{fmt_s(drake)} "
                   f"| {verdict}; {x / drake:.1f}× Drake |")
    return "\n".join(out)


def targets_line(rows):
    """One sentence: which targets at ε = 1e-3 are met (the section)."""
    by = {(r["scene"], r["eps"]): r for r in rows}
    parts = []
    for scene, eps, limit, _ in TARGETS:
        r = by.get((scene, eps))
        if r is not None:
            parts.append(f"{scene} {fmt_s(r['wall_per_s'])} (≤ {fmt_s(limit)}: "
                         f"{'met' if r['wall_per_s'] <= limit else '**missed**'})")
    return f"Targets, wall per simulated s at ε = 1e-3: {'; '.join(parts)}." if parts else ""


def compact_table(rows, eps_shown):
    head = "| scene | ε | wall / sim s | accepted | rejected | Newton / solve | pos. error [m] | max pen. [mm] |"
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in rows:
        if r["eps"] in eps_shown:
            lines.append(f"| {r['scene']} | {r['eps']:.0e} | {fmt_s(r['wall_per_s'])} | {r['accepted']} "
                         f"| {r['rejected']} | {r['newton_per_solve']:.2f} | {fmt_err(r)} | {1e3 * r['penetration']:.3f} |")
    return "\n".join(lines)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for scene, *_ in SCENES:
        rs = sorted((r for r in rows if r["scene"] == scene), key=lambda r: r["eps"])
        if not rs:
            continue
        a1.loglog([r["eps"] for r in rs], [r["wall_per_s"] for r in rs], "o-", label=scene)
        e = [(r["eps"], r["err"]) for r in rs if math.isfinite(r["err"]) and r["err"] > 0]
        if e:
            lbl = scene + (f" (vs ε={rs[0]['ref_eps']:.0e})" if scene == "clutter" else "")
            a2.loglog(*zip(*e), "o-", label=lbl)
    for ax in (a1, a2):
        ax.set_xlabel("accuracy ε")
        ax.invert_xaxis()
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    a1.axhline(1.0, color="gray", ls=":", lw=1)
    a1.axhline(5e-3, color="gray", ls="--", lw=1)
    a1.set_ylabel("wall s per simulated s")
    a1.set_title("cost (dotted: 1 s/s clutter target, dashed: 5 ms/s)")
    a2.set_ylabel("final body position error [m]")
    a2.set_title("error vs reference run")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only ε = 1e-3 and 1e-2")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md and the plot alone")
    args = ap.parse_args()
    eps_list = EPS_QUICK if args.quick else EPS_FULL
    cmd = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/work_precision.py"
    cmd += " --quick" if args.quick else ""

    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    print(f"warm-up ... {warm_up():.2f} s", flush=True)
    deadline = time.perf_counter() + BUDGET_S

    rows, refs, python_rows = [], {}, {}
    for name, factory, t_end, ref_eps, note in SCENES:
        # Reference: the same scene at a tight ε (clutter: the tightest sweep ε, reused below).
        ref = run_once(factory, ref_eps, t_end)
        refs[name] = dict(t_end=t_end, eps=ref_eps, wall=ref["wall"], accepted=ref["stats"].accepted,
                          rejected=ref["stats"].rejected, note=note, pos=ref["pos"])
        print(f"{name}: reference ε={ref_eps:.0e} {ref['wall']:.2f} s", flush=True)
        for eps in eps_list:
            m = measure(factory, eps, t_end, REPEATS, deadline)
            r = row_of(name, eps, t_end, m, ref["pos"], ref_eps)
            rows.append(r)
            print(f"  ε={eps:.0e}: {fmt_s(r['wall_per_s'])}/s  runs={r['runs']} acc={r['accepted']} "
                  f"rej={r['rejected']} err={fmt_err(r)}", flush=True)
        if 1e-3 in eps_list:
            p = run_once(factory, 1e-3, t_end, python_loop=True)
            python_rows[name] = row_of(name, 1e-3, t_end, dict(p, n=1, walls=[p["wall"]]), None, ref_eps)
    total = time.perf_counter() - t_start

    table = main_table(rows)
    per_op = per_op_table(rows, python_rows)
    print()
    print(table)
    print()
    print(per_op)
    header = provenance("benchmarks/work_precision.py", f"`{cmd}`", total, load0,
                        ("numba", ("pinocchio (pin)", "pin"), "numpy"))
    wp = [
        *header,
        "Each point: a fresh `Simulator(scene, accuracy=ε).advance_to(T)` after a warm-up; `wall / sim s` = median wall "
        f"of up to {REPEATS} runs / T. `pos. error`: largest distance of a body's final position from a run of the "
        "same scene at a tight ε (clutter: 1e-5, chaotic, so it measures divergence); `max pen.`: −min φ over "
        "accepted states.",
        "",
        compact_table(rows, REPORT_EPS),
        "",
        targets_line(rows),
        f"Plot: `benchmarks/{PLOT.name}`; every ε, the cost breakdown, per-operation costs and the reference runs: "
        f"[{COMPANION.name}]({COMPANION.name}).",
    ]
    companion = [
        "# Work-precision: full tables", "",
        *header,
        "`wall / sim s` is the median wall time of `advance_to` over `runs` runs (single runs slower than "
        f"{SLOW_RUN_S:.0f} s are not repeated) divided by T; scene construction and numba cache loading are not timed. "
        "Counters and the cost breakdown are those of the median run: `geom` = contact query (poses, broad and narrow "
        "phase, contact Jacobians) + lagged contact terms, `dyn` = Pinocchio kinematics, mass matrix and bias terms, "
        "`solver` = convex solves, `compiled` = the whole step loop in one numba call (`cenic.advance_free_bodies`: "
        "these scenes are free bodies, so no phase calls back into Python; not split), `other` = `wall_total` − the "
        "four (Python step control). `factor.` counts Cholesky factorizations; `LS / Newton` = line-search iterations "
        "per Newton iteration.", "",
        table, "",
        "Reference runs for the error column:", "",
        ref_table(refs), "",
        "Per-operation cost at ε = 1e-3: per attempted step of the timed runs above (compiled loop), and the "
        "per-phase split of one more run of each scene on the Python step loop (the one articulated systems run; "
        "`µs other / attempted step` is its Python overhead outside the timed phases):", "",
        per_op, "",
        "Targets at ε = 1e-3:", "",
        targets_table(rows), "",
    ]
    body = "\n".join(wp)
    print()
    print(body)
    if not args.no_write:
        write_section("work-precision", body, "## Work-precision")
        out = RESULTS.parent / COMPANION.name  # next to RESULTS.md (``$CENIC_BENCH_RESULTS`` moves both)
        out.write_text("\n".join(companion))
        plot(rows, PLOT)
        print(f"\nwrote {out} and {PLOT} ({total:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
