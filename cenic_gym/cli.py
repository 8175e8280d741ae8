"""The ``cenic-gym`` command (also ``python -m cenic_gym``).

    cenic-gym demo [--scene clutter] [--accuracy 1e-3] [--duration 2] [--out cenic_demo.png]
                        simulate a reference scene, print integrator statistics, plot step size and real-time rate
    cenic-gym demo ENV_ID [--duration S] [--video cenic_demo.mp4] [--out cenic_demo.png] [--policy DIR] [--seed N]
                        run an episode of a registered env (scripted policy where the task has one), write an MP4
                        and the CENIC plots (step size, real-time rate, contact force)
    cenic-gym work-precision [--scene sphere_drop] [--duration 1] [--out work_precision.png]
                        error vs cost over the accuracy ε (1e-2, 1e-3, 1e-4) against a tight reference run
    cenic-gym scenes    list the reference scenes
    cenic-gym list | train | eval | bench   envs and training (cenic_gym/train/cli.py)
    cenic-gym sim2real {accuracy,robustness,export,record,replay,report,sim2sim} ...
                        sim-to-real evaluation of a policy (cenic_gym/sim2real/cli.py)
    cenic-gym --version print the installed version

Every argument is checked before anything is simulated (argparse exits with status 2 naming the bad value); the
folder of ``--out`` is created if it does not exist.
"""
from __future__ import annotations

import argparse
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import __version__, scenes
from .argtypes import positive_number
from .simulator import MAX_ACCURACY, Simulator

SCENES = {
    "clutter": scenes.clutter,
    "sphere_drop": scenes.sphere_drop,
    "incline": scenes.incline,
    "sliding_box": scenes.sliding_box,
    "rolling_sphere": scenes.rolling_sphere,
    "free_fall": scenes.free_fall,
}
DESCRIPTIONS = {
    "clutter": "20 boxes and spheres dropped into a bin (CENIC hard clutter)",
    "sphere_drop": "a ball dropped from 1 m onto the ground (CENIC Fig. 8)",
    "incline": "a box resting on a 20° incline, held by static friction (μ = 0.5)",
    "sliding_box": "a box launched along the ground at 1 m/s, stopped by friction",
    "rolling_sphere": "a sphere launched along the ground at 2 m/s: slides, then rolls (ICF §XI-B)",
    "free_fall": "a sphere in free fall (no ground)",
}

WINDOW = 0.05  # [s] of simulated time per real-time-rate sample in the plot


@dataclass
class DemoResult:
    """sim: the timed simulator (run from t = 0 to the duration; its ``stats`` cover exactly that run);
    window_ends [s] and rates: the real-time rate of each plot window (simulated / wall time); warmup_s: wall time
    of the same run done once before, untimed, by a throwaway simulator (numba compile, or cache load)."""

    sim: Simulator
    window_ends: np.ndarray
    rates: np.ndarray
    warmup_s: float


def window_ends(duration, window=WINDOW):
    """End times of the plot windows: every ``window`` s, the last one shortened to end exactly at ``duration``
    (a duration shorter than a window is one window)."""
    n = max(1, math.ceil(duration / window - 1e-9))
    ends = np.minimum(np.arange(1, n + 1) * window, duration)
    ends[-1] = duration
    return ends


def run_demo(scene="clutter", accuracy=1e-3, duration=2.0, window=WINDOW, out="cenic_demo.png"):
    """Simulate ``scene`` for ``duration`` s at ``accuracy``; write a CENIC Fig. 17-style plot (step size and
    real-time rate over simulated time) to ``out`` (None: no plot). Returns a :class:`DemoResult`.

    A throwaway simulator runs the same scene for the same time first (the run is deterministic, so it reaches
    every kernel the timed run will), so that every compiled kernel is loaded (or compiled) before the timed
    simulator starts from t = 0: its statistics and rates exclude that time. (A warm-up of one short step left the
    kernels of later contact events to compile inside the timed run: a fresh install's first demo reported a 10×
    lower real-time rate than the same command warm.)"""
    if scene not in SCENES:
        raise ValueError(f"unknown scene {scene!r}; choose one of {sorted(SCENES)}")
    for name, value in (("accuracy", accuracy), ("duration", duration), ("window", window)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    w0 = time.perf_counter()
    Simulator(SCENES[scene](), accuracy=accuracy, record=True).advance_to(duration)  # as timed (record: the Python loop)
    warmup = time.perf_counter() - w0
    sim = Simulator(SCENES[scene](), accuracy=accuracy, record=True)
    ends = window_ends(duration, window)
    rates = []
    for t_end in ends:
        t0, w0 = sim.t, time.perf_counter()
        sim.advance_to(float(t_end))
        rates.append((sim.t - t0) / max(time.perf_counter() - w0, 1e-12))
    rates = np.array(rates)
    if out is not None:
        _plot(sim.history, ends, rates, accuracy, scene, out)
    return DemoResult(sim, ends, rates, warmup)


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
    ax2.stairs(rates, np.concatenate([[0.0], times]), baseline=None)  # one level per window
    ax2.axhline(1.0, color="k", lw=0.8, ls="--")
    ax2.set_yscale("log")
    ax2.set_ylabel("real-time rate")
    ax2.set_xlabel("simulated time [s]")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def _check_out(p, out):
    """Fail before simulating if the plot cannot be written to ``out``; create its folder if missing."""
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(out)
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    ext = path.suffix[1:].lower()
    if path.is_dir():
        p.error(f"argument --out: {out!r} is a directory; give a file name such as {str(path / 'cenic_demo.png')!r}")
    if ext not in formats:
        p.error(f"argument --out: {out!r} needs a plot file extension, one of "
                f"{', '.join('.' + f for f in formats)}")
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        p.error(f"argument --out: cannot create the folder {str(folder)!r} for {out!r}: {e.strerror or e}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        p.error(f"argument --out: {out!r} is not writable")


def _subparser(p, name):
    return next(x for x in p._actions if isinstance(x, argparse._SubParsersAction)).choices[name]


def build_parser():
    p = argparse.ArgumentParser(prog="cenic-gym", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="simulate a reference scene and plot step size / real-time rate",
                       description="Simulate a reference scene from rest, print the integrator statistics of the "
                                   "timed run (the same run done once before, untimed, loads or compiles every kernel it uses) and plot "
                                   "step size and real-time rate over simulated time.")
    d.add_argument("--scene", default="clutter", choices=sorted(SCENES), help="reference scene (default: clutter)")
    d.add_argument("--accuracy", type=positive_number(MAX_ACCURACY), default=1e-3,
                   help=f"ε: position error per step [m, rad], in (0, {MAX_ACCURACY:g}] (default: 1e-3)")
    d.add_argument("--duration", type=positive_number(), default=None,
                   help=f"simulated time [s], > 0; sampled in windows of {WINDOW:g} s (default: 2; ENV_ID: the "
                        "episode, at most 200 env steps)")
    d.add_argument("--out", default=None,
                   help="plot file; its extension sets the format, its folder is created if missing "
                        "(default: cenic_demo.png)")
    d.add_argument("env", nargs="?", default=None, metavar="ENV_ID",
                   help="a registered env (e.g. CenicFranka-v0): run an episode and write a video and the plots "
                        "instead of a reference scene")
    d.add_argument("--video", default="cenic_demo.mp4", help="MP4 of the ENV_ID demo (default: cenic_demo.mp4)")
    d.add_argument("--policy", default=None, metavar="PATH",
                   help="ENV_ID demo: a trained policy (a folder with model.zip and run.json, e.g. "
                        "training/policies/CenicFranka-v0, or a checkpoint) instead of the scripted one")
    d.add_argument("--seed", type=int, default=0, help="ENV_ID demo: the episode's seed (default: 0)")
    w = sub.add_parser("work-precision", help="work-precision curve of a reference scene",
                       description="Simulate a reference scene at ε = 1e-2, 1e-3, 1e-4 and at 1e-6 (the reference); "
                                   "print and plot wall time per simulated second against the final error.")
    w.add_argument("--scene", default="sphere_drop", choices=sorted(SCENES), help="reference scene (default: "
                   "sphere_drop)")
    w.add_argument("--duration", type=positive_number(), default=1.0, help="simulated time [s], > 0 (default: 1)")
    w.add_argument("--out", default="work_precision.png", help="plot file (default: work_precision.png)")
    sub.add_parser("scenes", help="list the reference scenes")
    from .sim2real.cli import add_parser as add_sim2real_parser
    from .train.cli import add_subcommands  # list, train, eval, bench

    add_subcommands(sub)
    add_sim2real_parser(sub)  # cenic-gym sim2real {accuracy,robustness,export,record,replay,report,sim2sim}
    return p


def main(argv=None):
    p = build_parser()
    a = p.parse_args(argv)
    if getattr(a, "func", None) is not None:  # subcommands with their own handler (train/cli.py, sim2real/cli.py)
        return a.func(a)
    if a.cmd == "scenes":
        for name in SCENES:
            print(f"{name:15s} {DESCRIPTIONS[name]}")
        return 0
    if a.cmd == "work-precision":
        from .plots import main_work_precision

        return main_work_precision(_subparser(p, "work-precision"), a, SCENES[a.scene], _check_out)
    demo_parser = _subparser(p, "demo")
    a.out = "cenic_demo.png" if a.out is None else a.out
    _check_out(demo_parser, a.out)
    if a.env:
        from .render_demo import main_env_demo

        return main_env_demo(demo_parser, a)
    a.duration = 2.0 if a.duration is None else a.duration
    r = run_demo(a.scene, a.accuracy, a.duration, out=a.out)
    st, rates = r.sim.stats, r.rates
    print(f"{a.scene}: {st.sim_time:g} s simulated at accuracy {a.accuracy:g}")
    print(f"  warm-up (numba compile or cache load, not counted below) {r.warmup_s:.2f} s")
    print(f"  steps accepted {st.accepted}, rejected {st.rejected}, convex solves {st.solves}, "
          f"Newton iterations {st.newton_iters} ({st.newton_iters / max(st.solves, 1):.1f}/solve), "
          f"factorizations {st.factorizations}")
    print(f"  step size min {st.min_dt:.3g} s, max {st.max_dt:.3g} s; max penetration "
          f"{max(0.0, -st.min_signed_distance) * 1e3:.3f} mm")
    split = (f"compiled step loop of free bodies {st.wall_compiled:.3f}, not split" if st.wall_compiled else
             f"geometry {st.wall_geometry:.3f}, dynamics {st.wall_dynamics:.3f}, solver {st.wall_solver:.3f}")
    print(f"  wall {st.wall_total:.3f} s ({split}); real-time rate {st.sim_time / max(st.wall_total, 1e-12):.2f}x "
          f"(min over {len(rates)} window{'s' if len(rates) > 1 else ''} of {min(WINDOW, a.duration):g} s: "
          f"{rates.min():.2f}x)")
    print(f"  plot written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
