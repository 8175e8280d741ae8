"""Coulomb's law at impacts: accuracy of the dropped sphere and the cost of the fix, Lagged vs step bounds.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/impact_friction.py [--quick] [--no-write]

"Lagged" is the ICF paper's friction bound μ δt f_n(x^n) (``Simulator(..., impact_friction=False)``, what fixed steps
use); "Coulomb" the default under error control, :func:`cenic_gym.solver.solve_coulomb` (bounds from the step's own
normal impulses). Two tables:

1. the ICF paper's falling sphere (§XI-B, Fig. 5: released 5 cm above the ground at U0 = 2 m/s, μ = 0.5,
   k = 1e7 N/m, d = 500 s/m): release-to-rolling time against the analytic 2U0/(7μg) = 0.1165 s, the skid after
   touchdown against 15.5 ms, and the worst Coulomb-cone excess over the accepted steps in units of ε/w
   (≤ 1: the invariant of tests/test_impact_friction.py, where the reference is derived);
2. the cost on the work-precision scenes, scenes with impacts and the Go1 trot of CenicQuadruped-v0: the two
   variants interleaved, median wall of ``REPEATS`` runs each, step and solve counters.

Writes the ``impact-friction`` section of ``benchmarks/RESULTS.md`` (``bench_common.write_section``) unless
``--no-write``; a full run takes ~3 min (``--quick``: ~1.5 min). Touchdown = end of the first step with a normal
impulse; rolling = slip ≤ 2 mm/s (interpolated within the step, as in tests/test_impact_friction.py). Cone excess: max
over accepted half steps of sliding contacts of (‖γ_t‖ − μ γ_n (1 + √ε)) w / ε. Wall differences below ~10 % are
within the run-to-run noise of a shared machine.
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

from bench_common import provenance, warm_up, write_section  # noqa: E402
from cenic_gym import Simulator, scenes  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the analytic reference and the impulse recorder live with the tests
import test_impact_friction as ref  # noqa: E402

REPEATS = 3
EPS_SPHERE = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]

# name, factory, end time [s], note
COST_SCENES = [
    ("sphere drop", lambda: scenes.sphere_drop(height=1.0, mass=0.1, stiffness=1e3, dissipation=0.0), 2.0,
     "work-precision ball, d = 0 (no friction load)"),
    ("incline stick", lambda: scenes.incline(20, 0.5), 2.0, "box on 20° slope, sticks (no impact)"),
    ("incline slide", lambda: scenes.incline(20, 0.3), 1.0, "box on 20° slope, slides (no impact)"),
    ("rolling sphere", lambda: scenes.rolling_sphere(U0=2.0, mu=0.5, stiffness=1e7, dissipation=500.0), 0.2,
     "Fig. 5 sphere launched on the ground (no impact)"),
    ("falling sphere", lambda: scenes.falling_sphere(), 0.2, "Fig. 5 sphere dropped 5 cm (one impact)"),
    ("box on edge", ref.box_on_edge, 0.4, "cube lands on an edge while sliding, tips onto a face"),
    ("go1 drop", lambda: scenes.go1_on_ground(height=0.45, mu=0.8), 1.0, "unactuated Go1 dropped from 45 cm"),
    ("clutter", scenes.clutter, 2.0, "20 boxes / spheres dropped into a bin"),
    ("sphere clutter", lambda: scenes.clutter(spheres_only=True), 2.0, "the peers' sphere-only clutter"),
]
TROT_STEPS = 50  # env steps (1 s) of the CenicQuadruped-v0 trot


def set_lagged(sim, lagged):
    if lagged:
        sim.integrator.set_impact_friction(False)


def sim_run(factory, eps, t_end, lagged):
    sim = Simulator(factory(), accuracy=eps)
    set_lagged(sim, lagged)
    t0 = time.perf_counter()
    sim.advance_to(t_end)
    return time.perf_counter() - t0, sim.stats.copy()


def trot_run(eps, lagged):
    """TROT_STEPS env steps of CenicQuadruped-v0 (accuracy ε) under the open-loop TrotGait; env.step wall."""
    import gymnasium as gym

    from cenic_gym.envs.quadruped import TrotGait

    env = gym.make("CenicQuadruped-v0", accuracy=eps)
    obs, _ = env.reset(seed=0)
    sim = env.unwrapped.sim
    set_lagged(sim, lagged)
    gait = TrotGait(env)
    gait.reset()
    wall = 0.0
    for _ in range(TROT_STEPS):
        action = gait(obs)
        t0 = time.perf_counter()
        obs, _, term, trunc, _ = env.step(action)
        wall += time.perf_counter() - t0
        if term or trunc:
            break
    return wall, sim.stats.copy()


def sphere_row(eps, lagged):
    t0 = time.perf_counter()
    sim, rec, t_td, t_roll = ref.run_falling_sphere(eps, lagged=lagged)
    wall = time.perf_counter() - t0
    st = sim.stats
    return dict(eps=eps, lagged=lagged, t_td=t_td, t_roll=t_roll, skid=t_roll - t_td, accepted=st.accepted,
                rejected=st.rejected, solves=st.solves, friction_solves=st.friction_solves,
                cone=rec.worst_cone_excess(eps, slip_min=1e-2), wall=wall)


def cost_rows(eps_list, log):
    rows = []
    cases = [(name, (lambda f=f, t=t: lambda eps, lag: sim_run(f, eps, t, lag))(), note)
             for name, f, t, note in COST_SCENES]
    cases.append((f"go1 trot ({TROT_STEPS} env steps)", trot_run, "CenicQuadruped-v0, TrotGait, seed 0"))
    for name, run, note in cases:
        for eps in eps_list:
            walls = {True: [], False: []}
            stats = {}
            for _ in range(REPEATS):
                for lagged in (True, False):  # interleaved: load drifts hit both alike
                    w, st = run(eps, lagged)
                    walls[lagged].append(w)
                    stats[lagged] = st
            row = dict(scene=name, note=note, eps=eps)
            for lagged, key in ((True, "lagged"), (False, "coulomb")):
                st = stats[lagged]
                row[key] = dict(wall=statistics.median(walls[lagged]), accepted=st.accepted, rejected=st.rejected,
                                solves=st.solves, friction_solves=st.friction_solves, newton=st.newton_iters,
                                sim_time=st.sim_time)
            rows.append(row)
            log(f"{name} ε={eps:g}: wall {row['lagged']['wall']:.3f} -> {row['coulomb']['wall']:.3f} s, solves "
                f"{row['lagged']['solves']} -> {row['coulomb']['solves']}")
    return rows


def fmt_pct(x):
    return f"{100 * x:+.1f} %"


def sphere_table(rows):
    """One row per ε: the Lagged and the Coulomb bound side by side."""
    by = {(r["lagged"], r["eps"]): r for r in rows}

    def roll(r):
        return "never" if math.isnan(r["t_roll"]) else fmt_pct(r["t_roll"] / ref.T_ROLL - 1)

    def skid(r):
        return "–" if math.isnan(r["skid"]) else f"{1e3 * r['skid']:.2f}"

    out = ["| ε | release → rolling error, Lagged / Coulomb | skid [ms], Lagged / Coulomb "
           "| worst cone excess [ε/w], Lagged / Coulomb | accepted + rejected, Lagged / Coulomb "
           "| friction re-solves (Coulomb) |",
           "|---|---|---|---|---|---|"]
    for eps in dict.fromkeys(r["eps"] for r in rows):
        a, b = by[(True, eps)], by[(False, eps)]
        out.append(f"| {eps:.0e} | {roll(a)} / {roll(b)} | {skid(a)} / {skid(b)} | {a['cone']:.3g} / {b['cone']:.3g} "
                   f"| {a['accepted']} + {a['rejected']} / {b['accepted']} + {b['rejected']} "
                   f"| {b['friction_solves']} |")
    return "\n".join(out)


def cost_table(rows):
    """One row per scene, one column group per ε: wall Lagged → Coulomb (change) and solves Lagged → Coulomb."""
    eps_list = list(dict.fromkeys(r["eps"] for r in rows))
    by = {(r["scene"], r["eps"]): r for r in rows}
    head = "| scene | " + " | ".join(f"wall [s] at {e:.0e}, Lagged → Coulomb | solves (re-solves) at {e:.0e}"
                                     for e in eps_list) + " |"
    out = [head, "|---|" + "---|---|" * len(eps_list)]
    for scene in dict.fromkeys(r["scene"] for r in rows):
        cells = []
        for e in eps_list:
            r = by.get((scene, e))
            if r is None:
                cells += ["–", "–"]
                continue
            a, b = r["lagged"], r["coulomb"]
            cells += [f"{a['wall']:.4f} → {b['wall']:.4f} ({fmt_pct(b['wall'] / a['wall'] - 1)})",
                      f"{a['solves']} → {b['solves']} ({b['friction_solves']})"]
        out.append(f"| {scene} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="cost at ε = 1e-3 only")
    ap.add_argument("--no-write", action="store_true", help="print only, leave RESULTS.md alone")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    log = lambda m: print(m, flush=True)  # noqa: E731
    log(f"warm-up {warm_up():.1f} s")
    ref.run_falling_sphere(1e-3)
    trot_run(1e-3, False)
    sphere = [sphere_row(eps, lagged) for lagged in (True, False) for eps in EPS_SPHERE]
    print(sphere_table(sphere))
    cost = cost_rows([1e-3] if args.quick else [1e-3, 1e-4], log)
    print(cost_table(cost))
    if args.no_write:
        return
    quick = " --quick" if args.quick else ""
    body = "\n".join([
        *provenance("benchmarks/impact_friction.py",
                    f"`NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/impact_friction.py{quick}`",
                    time.perf_counter() - t_start, load0, ("numba", ("pinocchio (pin)", "pin"), "numpy")),
        "\"Lagged\": friction bound μ δt f_n(x^n) (ICF eq. 18, what fixed steps use); \"Coulomb\": bounds from each "
        "step's own normal impulses (`solver.solve_coulomb`, the default under error control). Falling sphere of ICF "
        f"Fig. 5: analytic release → rolling {ref.T_ROLL:.5f} s, skid after touchdown {1e3 * ref.SKID:.2f} ms; cone "
        "excess ≤ 1: Coulomb's law holds to the requested accuracy. Cost: the two interleaved, median wall of "
        f"{REPEATS} runs each (go1 trot: {TROT_STEPS} env steps of CenicQuadruped-v0, wall of `env.step`).",
        "",
        sphere_table(sphere),
        "",
        cost_table(cost),
    ])
    write_section("impact-friction", body, "## Coulomb's law at impacts")


if __name__ == "__main__":
    main()
