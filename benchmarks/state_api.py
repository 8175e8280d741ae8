"""Cost of the state and domain-randomization API an env reset uses, against rebuilding the scene.

    python benchmarks/state_api.py          # writes the "state-api" section of benchmarks/RESULTS.md (~5 s)

Scenes: the Panda holding a box (inverse-dynamics PD arm, PD gripper; 17 joints, 40 geometries) and the standing
Go1 (joint PD; floating base, 12 joints). For each: the median wall time of ``get_state``, ``restore``,
``get_state_vector``/``set_state_vector``, ``pickle.dumps``/``loads`` (and the pickle size), ``copy.deepcopy``, the
domain-randomization setters (``set_geometry_material`` on every geometry, ``set_body_inertia`` of one body,
``set_gains`` of a controller) and, for comparison, rebuilding the scene and its simulator (what a change cost
before the setters).
"""
from __future__ import annotations

import copy
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from bench_common import provenance, warm_up, write_section  # noqa: E402
from test_state import go1_standing, panda_holding_box  # noqa: E402  (the scenes of the continuation test)


def median_time(fn, repeat=30):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def measure(make, body, vector):
    """{operation: (seconds, note)} for one scene; the note is shown next to the time (sizes, counts)."""
    sim = make()
    sim.advance_to(0.2)
    snap = sim.get_state()
    blob = pickle.dumps(sim)
    ctrl = sim.external[0]
    ngeom = len(sim.system.geometries)
    out = {"get_state / restore": ((median_time(sim.get_state), median_time(lambda: sim.restore(snap))), "")}
    if vector:  # the Go1: a floating-base robot's state vector
        x = sim.get_state_vector()
        out["get_state_vector / set_state_vector"] = (
            (median_time(sim.get_state_vector), median_time(lambda: sim.set_state_vector(x))), "")
    out.update({
        "pickle.dumps / loads (size)": ((median_time(lambda: pickle.dumps(sim), 10),
                                         median_time(lambda: pickle.loads(blob), 10)), f"{len(blob) / 1024:.0f} KiB"),
        "copy.deepcopy": ((median_time(lambda: copy.deepcopy(sim), 10),), ""),
        "set_geometry_material (every geometry)": ((median_time(
            lambda: sim.set_geometry_material(range(ngeom), mu_static=0.8, mu_dynamic=0.7)),), f"{ngeom}"),
        "set_body_inertia (one body)": ((median_time(lambda: sim.set_body_inertia(body, mass=1.0)),), body),
        "set_gains (first controller)": ((median_time(lambda: ctrl.set_gains(kp=ctrl.kp * 1.0, kd=ctrl.kd * 1.0)),),
                                         ""),
        "rebuild scene + Simulator": ((median_time(make, 5),), ""),
    })
    return out


def fmt(seconds):
    return " / ".join(f"{t * 1e6:.0f} µs" if t < 1e-3 else f"{t * 1e3:.1f} ms" for t in seconds)


def main():
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    warm_up()
    go1_standing().advance_to(0.05)
    panda_holding_box().advance_to(0.05)
    scenes = (("Panda holding a box", panda_holding_box, "box", False),
              ("Go1 standing", go1_standing, "go1/trunk", True))
    res = [measure(make, body, vector) for _, make, body, vector in scenes]
    ops = list(dict.fromkeys(op for r in sorted(res, key=len, reverse=True) for op in r))
    lines = ["| operation (median wall time) | " + " | ".join(name for name, *_ in scenes) + " |",
             "|---|" + "---|" * len(scenes)]
    for op in ops:
        cells = []
        for r in res:
            if op not in r:
                cells.append("–")
                continue
            t, note = r[op]
            cells.append(fmt(t) + (f" ({note})" if note else ""))
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    body = "\n".join([
        *provenance("benchmarks/state_api.py", "`python benchmarks/state_api.py`", time.perf_counter() - t_start,
                    load0, ("numba", "numpy", ("pinocchio (pin)", "pin"), "coal")),
        "What an env reset costs with the setters instead of a rebuild (Panda: inverse-dynamics PD arm, PD gripper; "
        "Go1: joint PD, floating base). Setters take effect at the next step and change this simulator only.",
        "", *lines])
    print(body)
    write_section("state-api", body, "## State, copies and domain-randomization setters")


if __name__ == "__main__":
    main()
