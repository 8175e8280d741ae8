"""CenicPegInsertion-v0 under its teacher: speed on one core, the counts behind it, and the step size over an episode.

    python benchmarks/peg_speed.py [--episodes 5] [--accuracy 1e-3] [--plot-seed 0] [--no-write]

(the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself.)

``ForceSearchTeacher`` plays seeds 0 … episodes−1 of the default task (200 env steps of 50 ms: 10 s) after one
untimed warm-up episode. Speed: simulated time ÷ the wall time of ``env.step`` (the teacher's own time excluded), in
env steps/s and as a real-time factor; beside it the host-independent counts per env step: accepted CENIC steps,
rejected attempts, Newton iterations. Then one more episode (``--plot-seed``) with the integrator recording every
attempt (its Python loop: not timed) plots the accepted step sizes against time, with the peg–fixture contact count
and the task's phase (free motion above the hole, search on the rim, insertion) beside them: error control should
shrink the step only at contact transitions. Writes ``benchmarks/peg_speed.png`` and the RESULTS.md section
``peg-speed`` (``--no-write``: print only). About a minute; the wall times want an idle machine (the profile of an env
step is ``benchmarks/profile_envs.py --env CenicPegInsertion-v0``).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from bench_common import provenance, write_section  # noqa: E402

ENV_ID = "CenicPegInsertion-v0"
PLOT = Path(__file__).with_name("peg_speed.png")


def episode(env, seed, on_step=None):
    """One teacher episode; returns (wall of env.step [s], sim time [s], totals of info["sim"] counts, success).
    ``on_step(env)`` is called after every env step."""
    from cenic_gym.envs.peg_insertion import ForceSearchTeacher

    obs, _ = env.reset(seed=seed)
    teacher = ForceSearchTeacher(env)
    wall, counts, done, info = 0.0, dict(steps=0, substeps=0, rejected=0, newton_iters=0), False, {}
    while not done:
        action = teacher(obs)
        t0 = time.perf_counter()
        obs, _, terminated, truncated, info = env.step(action)
        wall += time.perf_counter() - t0
        done = terminated or truncated
        counts["steps"] += 1
        for k in ("substeps", "rejected", "newton_iters"):
            counts[k] += int(info["sim"][k])
        if on_step is not None:
            on_step(env)
    return wall, env.unwrapped.sim.t, counts, bool(info["is_success"])


def step_trace(env, seed):
    """(accepted steps: (t, δt) rows, per env step: (t, peg–fixture contacts, depth of the tip below the top)) of one
    episode with the integrator's attempt history on."""
    u = env.unwrapped
    rows = []

    def on_step(env):
        cr = u.sim.contact_results()
        walls = set(u.fixture_geoms)
        n = sum(1 for i in range(cr.n) if "peg" in (cr.body_a[i], cr.body_b[i])
                and (cr.names_a[i] in walls or cr.names_b[i] in walls) and cr.phi[i] <= 0.0)
        rows.append((u.sim.t, n, u.view.insertion.depth))

    env.reset(seed=seed)
    u.sim.integrator.history = []  # what Simulator(record=True) sets: the Python loop keeps every attempt
    _, _, _, success = episode(env, seed, on_step)
    accepted = np.array([(t, dt) for t, dt, ok, _ in u.sim.history if ok], dtype=float)
    u.sim.integrator.history = None
    return accepted, np.array(rows, dtype=float), success


def plot(accepted, rows, accuracy, seed, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, gridspec_kw=dict(height_ratios=(2, 1)))
    ax.semilogy(accepted[:, 0], accepted[:, 1] * 1e3, ".", ms=3)
    ax.set_ylabel("accepted step δt [ms]")
    ax.set_title(f"{ENV_ID}, ForceSearchTeacher, seed {seed}, ε = {accuracy:g}: CENIC's step size")
    bx.step(rows[:, 0], rows[:, 1], where="post", label="peg–fixture contacts (φ ≤ 0)")
    bx.set_ylabel("contacts")
    cx = bx.twinx()
    cx.plot(rows[:, 0], rows[:, 2] * 1e3, color="C1", label="tip below the fixture top [mm]")
    cx.set_ylabel("tip depth [mm]", color="C1")
    bx.set_xlabel("simulated time [s]")
    bx.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    import gymnasium as gym

    import cenic_gym  # noqa: F401

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--accuracy", type=float, default=1e-3)
    p.add_argument("--plot-seed", type=int, default=0)
    p.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    p.add_argument("--no-write", action="store_true")
    a = p.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    env = gym.make(ENV_ID, accuracy=a.accuracy)
    episode(env, 10_000)  # warm-up: every kernel the timed episodes use is loaded or compiled
    wall, sim_t, totals, successes = 0.0, 0.0, dict(steps=0, substeps=0, rejected=0, newton_iters=0), 0
    for seed in range(a.episodes):
        w, t, counts, ok = episode(env, seed)
        wall, sim_t, successes = wall + w, sim_t + t, successes + ok
        for k in totals:
            totals[k] += counts[k]
    accepted, rows, _ = step_trace(env, a.plot_seed)
    env.close()
    plot(accepted, rows, a.accuracy, a.plot_seed, PLOT)
    n = totals["steps"]
    contact = rows[:, 1] > 0
    t_rows = rows[:, 0]
    in_contact = np.interp(accepted[:, 0], t_rows, contact.astype(float)) > 0.5
    dt_free = np.median(accepted[~in_contact, 1]) if (~in_contact).any() else float("nan")
    dt_contact = np.median(accepted[in_contact, 1]) if in_contact.any() else float("nan")
    cmd = "`" + shlex.join(["python", "benchmarks/peg_speed.py", *sys.argv[1:]]) + "`"
    lines = provenance("benchmarks/peg_speed.py", cmd, time.perf_counter() - t_start, load0, ("numba", "pinocchio"),
                       note=f"; besides it: {a.note}" if a.note else "")
    lines += [f"`ForceSearchTeacher`, seeds 0–{a.episodes - 1}, ε = {a.accuracy:g}, one thread: {successes} / "
              f"{a.episodes} inserted; **{n / wall:.0f} env steps/s, {sim_t / wall:.1f}× real time** (wall of "
              f"`env.step`, the teacher excluded); per env step {totals['substeps'] / n:.2f} accepted CENIC steps, "
              f"{totals['rejected'] / n:.2f} rejected attempts, {totals['newton_iters'] / n:.1f} Newton iterations. "
              f"Step size over seed {a.plot_seed} (`peg_speed.png`): median accepted δt {dt_free * 1e3:.1f} ms "
              f"while the peg touches no wall, {dt_contact * 1e3:.1f} ms while it does; smallest "
              f"{accepted[:, 1].min() * 1e3:.2f} ms, at t = {accepted[np.argmin(accepted[:, 1]), 0]:.2f} s.", "",
              "![step size](peg_speed.png)"]
    text = "\n".join(lines)
    print(text)
    if not a.no_write:
        write_section("peg-speed", text, f"## Peg insertion: speed under the teacher and the step size ({ENV_ID})")


if __name__ == "__main__":
    main()
