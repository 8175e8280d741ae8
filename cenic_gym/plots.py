"""The CENIC plots, as plain functions of recorded numbers (used by ``cenic-gym demo`` and benchmarks):

* :func:`plot_cenic_run` — step size (accepted / rejected) and real-time rate over simulated time (CENIC Fig. 17
  style), and the contact normal force;
* :func:`work_precision` / :func:`plot_work_precision` — wall time per simulated second and error against a
  tight-accuracy reference run, over the accuracy ε (``cenic-gym work-precision``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_cenic_run(history, t_end, rates, normal_force, title, out):
    """CENIC Fig. 17-style plot: step size (accepted / rejected) over simulated time, real-time rate per window
    ending at ``t_end`` [s], and the total contact normal force [N] (None: that panel is left out)."""
    plt = _pyplot()
    n = 3 if normal_force is not None else 2
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.4 * n + 0.6), sharex=True)
    h = np.array([(t, dt, acc) for t, dt, acc, _ in history], dtype=float).reshape(-1, 3)
    acc = h[:, 2] > 0.5
    axes[0].semilogy(h[acc, 0], h[acc, 1], ".", ms=3, label="accepted")
    axes[0].semilogy(h[~acc, 0], h[~acc, 1], "x", ms=3, color="tab:red", label="rejected")
    axes[0].set_ylabel("step size δt [s]")
    axes[0].legend(loc="lower right")
    axes[0].set_title(title)
    starts = np.concatenate([[h[0, 0] if len(h) else 0.0], t_end[:-1]])
    axes[1].stairs(rates, np.concatenate([starts[:1], t_end]), baseline=None)
    axes[1].axhline(1.0, color="k", lw=0.8, ls="--")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("real-time rate")
    if normal_force is not None:
        axes[2].plot(t_end, normal_force, lw=1.2)
        axes[2].set_ylabel("contact normal force [N]")
        axes[2].ticklabel_format(axis="y", useOffset=False)
    axes[-1].set_xlabel("simulated time [s]")
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


@dataclass(frozen=True)
class WorkPrecisionPoint:
    """One run of a work-precision sweep: accuracy ε, wall seconds per simulated second, error [m, rad] (max-norm
    of the final configuration's difference from the reference run; quaternion components count as rad/2),
    accepted / rejected CENIC steps."""

    accuracy: float
    wall_per_s: float
    error: float
    accepted: int
    rejected: int


def work_precision(factory, accuracies=(1e-2, 1e-3, 1e-4), duration=1.0, reference=None):
    """Simulate ``factory()`` (a function building a MultibodySystem, e.g. from :mod:`cenic_gym.scenes`) for
    ``duration`` [s] at each accuracy, and once at ``reference`` (default: min(accuracies) / 100) as the "exact"
    answer. A throwaway short run loads the compiled kernels first. Returns a list of WorkPrecisionPoint."""
    from .simulator import Simulator

    accuracies = [float(a) for a in accuracies]
    for name, x in [("duration", duration)] + [("accuracy", a) for a in accuracies]:
        if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    reference = min(accuracies) / 100 if reference is None else float(reference)
    Simulator(factory(), accuracy=accuracies[0]).advance_to(1e-4)
    ref = Simulator(factory(), accuracy=reference)
    ref.advance_to(duration)
    out = []
    for eps in accuracies:
        sim = Simulator(factory(), accuracy=eps)
        w0 = time.perf_counter()
        sim.advance_to(duration)
        wall = time.perf_counter() - w0
        err = float(np.max(np.abs(sim.q - ref.q))) if sim.q.size else 0.0
        out.append(WorkPrecisionPoint(eps, wall / duration, err, sim.stats.accepted, sim.stats.rejected))
    return out


def plot_work_precision(points, title, out):
    """Work-precision curve: error against wall seconds per simulated second, each point labelled with its ε."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    pts = sorted(points, key=lambda p: -p.accuracy)
    ax.loglog([p.wall_per_s for p in pts], [max(p.error, 1e-16) for p in pts], "o-")
    for p in pts:
        ax.annotate(f"ε={p.accuracy:g}", (p.wall_per_s, max(p.error, 1e-16)), textcoords="offset points",
                    xytext=(5, 5), fontsize=8)
    ax.set_xlabel("wall time per simulated second [s/s]")
    ax.set_ylabel("final configuration error vs reference")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main_work_precision(parser, a, factory, check_out):
    """``cenic-gym work-precision``: run the sweep on ``factory`` (the scene), print a table, write the plot."""
    check_out(parser, a.out)
    points = work_precision(factory, duration=a.duration)
    print(f"{a.scene}: {a.duration:g} s simulated per run; error vs a run at ε = 1e-6")
    print("  ε        wall s/s   error        accepted  rejected")
    for p in points:
        print(f"  {p.accuracy:<8g} {p.wall_per_s:<10.3g} {p.error:<12.3g} {p.accepted:<9d} {p.rejected}")
    plot_work_precision(points, f"CENIC work-precision, {a.scene}", a.out)
    print(f"  plot written to {a.out}")
    return 0
