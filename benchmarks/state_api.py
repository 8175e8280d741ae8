"""Cost of the state and domain-randomization API an env reset uses, against rebuilding the scene.

    python benchmarks/state_api.py          # writes the "state-api" section of benchmarks/RESULTS.md

Scenes: the Panda holding a box (inverse-dynamics PD arm, PD gripper; 17 joints, 40 geometries) and the standing
Go1 (joint PD; floating base, 12 joints). For each: the median wall time of ``get_state``, ``restore``,
``get_state_vector``/``set_state_vector``, ``pickle.dumps``/``loads`` (and the pickle size), ``copy.deepcopy``, the
domain-randomization setters (``set_geometry_material`` on every geometry, ``set_body_inertia`` of one body,
``set_gains`` of a controller) and, for comparison, rebuilding the scene and its simulator (what a change cost
before the setters).
"""
from __future__ import annotations

import copy
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from bench_common import REPO, git_rev, machine_line, replace_marked_section, versions, warm_up  # noqa: E402
from test_state import go1_standing, panda_holding_box  # noqa: E402  (the scenes of the continuation test)

RESULTS = REPO / "benchmarks" / "RESULTS.md"


def median_time(fn, repeat=30):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def measure(make, body):
    sim = make()
    sim.advance_to(0.2)
    snap = sim.get_state()
    x = sim.get_state_vector() if body == "go1/trunk" else None
    blob = pickle.dumps(sim)
    ctrl = sim.external[0]
    ngeom = len(sim.system.geometries)
    rows = [
        ("get_state", median_time(sim.get_state)),
        ("restore", median_time(lambda: sim.restore(snap))),
        ("pickle.dumps", median_time(lambda: pickle.dumps(sim), 10)),
        ("pickle.loads", median_time(lambda: pickle.loads(blob), 10)),
        ("copy.deepcopy", median_time(lambda: copy.deepcopy(sim), 10)),
        (f"set_geometry_material (all {ngeom})", median_time(
            lambda: sim.set_geometry_material(range(ngeom), mu_static=0.8, mu_dynamic=0.7))),
        (f"set_body_inertia ({body})", median_time(lambda: sim.set_body_inertia(body, mass=1.0))),
        ("set_gains", median_time(lambda: ctrl.set_gains(kp=ctrl.kp * 1.0, kd=ctrl.kd * 1.0))),
        ("rebuild scene + Simulator", median_time(make, 5)),
    ]
    if x is not None:
        rows[2:2] = [("get_state_vector", median_time(sim.get_state_vector)),
                     ("set_state_vector", median_time(lambda: sim.set_state_vector(x)))]
    return rows, len(blob)


def main():
    warm_up()
    go1_standing().advance_to(0.05)
    panda_holding_box().advance_to(0.05)
    sections = []
    for name, make, body in (("Panda holding a box", panda_holding_box, "box"),
                             ("Go1 standing", go1_standing, "go1/trunk")):
        rows, size = measure(make, body)
        lines = [f"**{name}** (pickle size {size / 1024:.0f} KiB)", "", "| operation | median wall time |",
                 "|---|---|"]
        lines += [f"| {op} | {t * 1e6:,.0f} µs |" for op, t in rows]
        sections.append("\n".join(lines))
        print("\n".join(lines), "\n")
    body = "\n".join([
        "Command: `python benchmarks/state_api.py`. " + f"Machine: {machine_line()}. Code: {git_rev()}. "
        + versions("numba", "numpy", ("pinocchio (pin)", "pin"), "coal") + ".",
        "",
        "What an env reset costs with the setters instead of a rebuild (medians; setters take effect at the next "
        "step and change this simulator only).",
        "", *[s + "\n" for s in sections]])
    RESULTS.write_text(replace_marked_section(RESULTS.read_text(), "state-api", body,
                                              heading="## State, copies and domain-randomization setters"))


if __name__ == "__main__":
    main()
