"""Peer case of Coulomb's law at impacts: the ICF paper's falling sphere in Drake's CENIC and cenic-gym.

    pip install "drake==1.51.1"      # see README.md
    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/peers/impact_friction.py [--no-write]

The sphere of ICF §XI-B / Fig. 5 (``scenes.falling_sphere``: 0.5 kg, 5 cm steel sphere released with its lowest point
5 cm above the ground at U0 = 2 m/s, μ = 0.5, k = 1e7 N/m, d = 500 s/m) lands, slides and rolls. Analytic
(tests/test_impact_friction.py): release → rolling 2U0/(7μg) = 0.1165 s, i.e. 15.5 ms of skid after touchdown at
0.101 s. Drake's CENIC bounds friction by μ δt f_n(x^n) (the Lagged model, ICF eq. 18; cenic-gym's
``impact_friction=False``): the question is whether Drake also grips on landing (rolling within a step of touchdown).

Rows per ε ∈ {1e-2 … 1e-6}: Drake CENIC (translated by peer_drake, point contact, the same pair k, d, μ), cenic-gym
with the Lagged bound and cenic-gym as it runs by default (bounds from the step's own normal impulses). Every engine
is sampled after every accepted step (a Drake monitor; cenic-gym's integrator step) and measured by the same code:
touchdown = first sample whose vertical velocity left free fall (v_z > −g t + 1 mm/s), rolling = slip
v_x − R ω_y ≤ 2 mm/s (``roll_time`` of the tests, interpolated within the step).

Writes the ``impact-friction-peers`` section of ``benchmarks/RESULTS.md`` (``bench_common.write_section``) unless
``--no-write``; without pydrake it prints the cenic-gym rows and writes nothing. A run takes a few seconds.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench_common
sys.path.insert(0, str(HERE.parent.parent / "tests"))  # the analytic reference (test_impact_friction)

from cenic_gym import Simulator, scenes  # noqa: E402  (pinocchio + coal before pydrake, as run.py)
from bench_common import provenance, write_section  # noqa: E402

import test_impact_friction as ref  # noqa: E402

EPS = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]
T_END = 0.2
G = 9.81


def timing(samples):
    """(touchdown, rolling) [s] from samples (t, v_x, v_z, ω_y) in the world frame; nan where not reached."""
    t_td = next((t for t, vx, vz, wy in samples if vz > -G * t + 1e-3), math.nan)
    slip = [(t, vx - ref.R * wy) for t, vx, vz, wy in samples]
    return t_td, ref.roll_time(slip, t_td) if not math.isnan(t_td) else math.nan


def gym_run(eps, lagged):
    sim = Simulator(scenes.falling_sphere(), accuracy=eps)
    integ = sim.integrator
    if lagged:
        integ.set_impact_friction(False)
    samples = []
    # sampled after every step of the Python loop (free bodies and joint-PD robots run other loops by default)
    integ._compiled_loop = integ._articulated_loop = False
    step = integ.step

    def sampled_step(t_end, *args):
        dt = step(t_end, *args)
        v, w = sim.body_velocity("ball")
        samples.append((integ.t, v[0], v[2], w[1]))
        return dt

    integ.step = sampled_step
    t0 = time.perf_counter()
    sim.advance_to(T_END)
    wall = time.perf_counter() - t0
    st = sim.stats
    return dict(samples=samples, accepted=st.accepted, rejected=st.rejected, wall=wall)


def drake_run(eps):
    from pydrake.systems.framework import EventStatus

    from peer_drake import DrakeScene

    ds = DrakeScene(scenes.falling_sphere(), kind="cenic")
    plant = ds.plant
    body = ds.bodies[ds.joints[0].joint]
    sim = ds.new_simulator(eps)
    samples = []

    def monitor(root_context):
        pc = plant.GetMyContextFromRoot(root_context)
        V = plant.EvalBodySpatialVelocityInWorld(pc, body)
        w, v = V.rotational(), V.translational()
        samples.append((root_context.get_time(), v[0], v[2], w[1]))
        return EventStatus.Succeeded()

    sim.set_monitor(monitor)
    t0 = time.perf_counter()
    sim.AdvanceTo(T_END)
    wall = time.perf_counter() - t0
    c = ds.counters(sim)
    return dict(samples=samples, accepted=c["accepted"], rejected=c["rejected"], wall=wall)


def row(engine, eps, r):
    t_td, t_roll = timing(r["samples"])
    return dict(engine=engine, eps=eps, t_td=t_td, t_roll=t_roll, accepted=r["accepted"], rejected=r["rejected"],
                wall=r["wall"])


def pct(x):
    return "–" if math.isnan(x) else f"{100 * x:+.1f} %"


def skid_ms(r):
    return 1e3 * (r["t_roll"] - r["t_td"])


def table(rows):
    """One row per ε, the engines side by side: skid after touchdown, release → rolling error, steps."""
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    by = {(r["engine"], r["eps"]): r for r in rows}

    def cells(eps, fn):
        return " / ".join(fn(by[(e, eps)]) if (e, eps) in by else "–" for e in engines)

    def skid(r):
        return "not rolling by 0.2 s" if math.isnan(r["t_roll"]) else f"{skid_ms(r):.2f}"

    def steps(r):
        return f"{r['accepted']} + {r['rejected']}"

    out = [f"| ε | skid [ms]: {' / '.join(engines)} | release → rolling error | accepted + rejected |",
           "|---|---|---|---|"]
    for eps in dict.fromkeys(r["eps"] for r in rows):
        out.append(f"| {eps:.0e} | {cells(eps, skid)} | {cells(eps, lambda r: pct(r['t_roll'] / ref.T_ROLL - 1))} "
                   f"| {cells(eps, steps)} |")
    return "\n".join(out)


def verdict(rows):
    """One line: at which ε each engine grips on landing (skid < 10 % of the analytic one), read off the rows."""
    out = []
    for engine in dict.fromkeys(r["engine"] for r in rows):
        grips = [r["eps"] for r in rows if r["engine"] == engine and not math.isnan(r["t_roll"])
                 and skid_ms(r) < 0.1 * 1e3 * ref.SKID]
        out.append(f"{engine} at " + (", ".join(f"{e:.0e}" for e in grips) if grips else "no ε"))
    return (f"Grips on landing (skid < 10 % of the analytic {1e3 * ref.SKID:.2f} ms): " + "; ".join(out) + ".")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    have_drake = importlib.util.find_spec("pydrake") is not None
    if not have_drake:
        print("pydrake is not installed (pip install 'drake==1.51.1'): cenic-gym rows only, nothing written")
    gym_run(1e-3, False)  # numba warm-up
    rows = []
    for eps in EPS:
        if have_drake:
            rows.append(row("Drake CENIC", eps, drake_run(eps)))
        rows.append(row("cenic-gym Lagged", eps, gym_run(eps, True)))
        rows.append(row("cenic-gym", eps, gym_run(eps, False)))
        print(f"ε = {eps:.0e}: skid " + ", ".join(f"{r['engine']} {skid_ms(r):.2f} ms" for r in rows[-3:]), flush=True)
    text = table(rows)
    print(text)
    print(verdict(rows))
    if args.no_write or not have_drake:
        return
    body = "\n".join([
        *provenance("benchmarks/peers/impact_friction.py",
                    "`NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/peers/impact_friction.py`",
                    time.perf_counter() - t_start, load0, ("numba", ("pinocchio (pin)", "pin"), "drake")),
        f"Falling sphere of ICF Fig. 5: analytic touchdown {ref.T_TD:.5f} s, release → rolling {ref.T_ROLL:.5f} s, "
        f"skid {1e3 * ref.SKID:.2f} ms. \"Lagged\": the friction bound μ δt f_n(x^n) of Drake's CENIC (ICF eq. 18); a "
        "skid near 0 ms is its grip-on-landing artefact. Every engine sampled after every accepted step.",
        "",
        text,
        "",
        verdict(rows),
    ])
    write_section("impact-friction-peers", body, "## Peers: Coulomb's law at impacts")


if __name__ == "__main__":
    main()
