"""The ``cenic-gym`` command.

    cenic-gym demo [--accuracy 1e-3] [--duration 2] [--out cenic_demo.png]   drop the clutter scene, print integrator
                                                                              statistics, plot step size and real-time rate
    cenic-gym scenes                                                          list the reference scenes
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import scenes
from .simulator import Simulator

SCENES = {
    "clutter": scenes.clutter,
    "sphere_drop": scenes.sphere_drop,
    "incline": scenes.incline,
    "sliding_box": scenes.sliding_box,
    "rolling_sphere": scenes.rolling_sphere,
    "free_fall": scenes.free_fall,
}


def run_demo(scene="clutter", accuracy=1e-3, duration=2.0, window=0.05, out="cenic_demo.png"):
    """Simulate ``scene`` for ``duration`` s at ``accuracy``; write a CENIC Fig. 17-style plot (step size and
    real-time rate over simulated time) to ``out``. Returns (simulator, per-window real-time rates)."""
    if scene not in SCENES:
        raise ValueError(f"unknown scene {scene!r}; choose one of {sorted(SCENES)}")
    sim = Simulator(SCENES[scene](), accuracy=accuracy, record=True)
    sim.advance_to(min(window, duration) * 1e-3)  # loads the compiled kernels before timing
    times, rates = [], []
    for t_end in np.arange(window, duration + 1e-12, window):
        w0 = time.perf_counter()
        t0 = sim.t
        sim.advance_to(t_end)
        times.append(t_end)
        rates.append((sim.t - t0) / max(time.perf_counter() - w0, 1e-12))
    _plot(sim.history, times, rates, accuracy, scene, out)
    return sim, np.array(rates)


def _plot(history, times, rates, accuracy, scene, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h = np.array([(t, dt, acc) for t, dt, acc, _ in history], dtype=float)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    acc = h[:, 2] > 0.5
    ax1.semilogy(h[acc, 0], h[acc, 1], ".", ms=3, label="accepted")
    ax1.semilogy(h[~acc, 0], h[~acc, 1], "x", ms=3, color="tab:red", label="rejected")
    ax1.set_ylabel("step size δt [s]")
    ax1.legend(loc="lower right")
    ax1.set_title(f"CENIC, {scene}, ε = {accuracy:g}")
    ax2.step(times, rates, where="pre")
    ax2.axhline(1.0, color="k", lw=0.8, ls="--")
    ax2.set_yscale("log")
    ax2.set_ylabel("real-time rate")
    ax2.set_xlabel("simulated time [s]")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(prog="cenic-gym", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="simulate a reference scene and plot step size / real-time rate")
    d.add_argument("--scene", default="clutter", choices=sorted(SCENES))
    d.add_argument("--accuracy", type=float, default=1e-3)
    d.add_argument("--duration", type=float, default=2.0)
    d.add_argument("--out", default="cenic_demo.png")
    sub.add_parser("scenes", help="list the reference scenes")
    a = p.parse_args(argv)
    if a.cmd == "scenes":
        for name, fn in SCENES.items():
            print(f"{name:15s} {fn.__doc__.strip().splitlines()[0]}")
        return 0
    try:
        sim, rates = run_demo(a.scene, a.accuracy, a.duration, out=a.out)
    except ValueError as e:
        p.error(str(e))
    st = sim.stats
    print(f"{a.scene}: {a.duration:g} s simulated at accuracy {a.accuracy:g}")
    print(f"  steps accepted {st.accepted}, rejected {st.rejected}, convex solves {st.solves}, "
          f"Newton iterations {st.newton_iters} ({st.newton_iters / max(st.solves, 1):.1f}/solve), "
          f"factorizations {st.factorizations}")
    print(f"  step size min {st.min_dt:.3g} s, max {st.max_dt:.3g} s; max penetration "
          f"{max(0.0, -st.min_signed_distance) * 1e3:.3f} mm")
    print(f"  wall {st.wall_total:.3f} s (geometry {st.wall_geometry:.3f}, dynamics {st.wall_dynamics:.3f}, "
          f"solver {st.wall_solver:.3f}); real-time rate {st.sim_time / st.wall_total:.2f}x "
          f"(min over {len(rates)} windows {rates.min():.2f}x)")
    print(f"  plot written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
