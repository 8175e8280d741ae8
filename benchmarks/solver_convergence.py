"""Why convex solves fail on an env (issue 12/18: CenicAllegro-v0's rejected steps): counts per env step.

    python benchmarks/solver_convergence.py [--steps 200] [--seeds 1] [--accuracy 1e-3] [--case CenicAllegro-v0:scripted ...]

Works on any code tree whose ``cenic_gym`` is on ``PYTHONPATH`` (to compare before/after trees). For each case
(env id and policy: ``random`` = seeded uniform actions, ``scripted`` = the task's scripted policy, as in
``step_size_analysis.py``), ``gym.make(id, accuracy=ε)``, then for each of ``--seeds`` episodes s = 0, 1, …:
``reset(seed=s)`` and ``--steps`` env steps (an episode that ends early restarts with seed 1000 + k). The
trajectories are chaotic (contacts), so a code change that alters any solve visits other states after a few env
steps; several seeds average that out. The integrator's solve kernels (``cenic.icf_full_and_half``, ``cenic.icf_step_at``) are wrapped
so that every failed solve (the step is rejected with error = ∞) is replayed from its inputs in Python and
classified:

* ``newton``: the plain lagged solve (:func:`cenic_gym.solver.solve`) did not converge in
  ``MAX_NEWTON_ITERATIONS`` (or hit a non-finite value);
* ``bounds``: the lagged solve converged, but the friction-bound iteration of
  :func:`cenic_gym.solver.solve_coulomb` ended without agreement after ``MAX_FRICTION_SOLVES`` solves (issue 10).

``--record FILE`` pickles the inputs of every solve whose friction bounds were iterated (or that failed);
``--replay FILE …`` solves those fixed problems with the tree's ``solve_coulomb`` and counts solves, Newton and
line-search iterations, factorizations and failures — a like-for-like comparison of two trees' solvers.

Columns (per env step): attempts, rejected, failed (of which newton / bounds), convex solves, friction re-solves
(solves beyond each solve's first), Newton iterations, line-search iterations per Newton iteration, and the p50 / p90
/ max of Newton iterations per convex solve *call* (a call = the solves of one step size, re-solves included).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import pickle  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import cenic_gym  # noqa: E402,F401  (registers the envs)
from cenic_gym import cenic  # noqa: E402
from cenic_gym import solver as slv  # noqa: E402
from cenic_gym.icf import ContactPool, CouplerPool, GainPool, LimitPool  # noqa: E402
from env_throughput import RandomPolicy, load  # noqa: E402
from profile_scenes import kernel_arrays  # noqa: E402
from step_size_analysis import SCRIPTED_ALL  # noqa: E402

DEFAULT_CASES = ["CenicAllegro-v0:random", "CenicAllegro-v0:scripted"]


def make_problem(v0, M, bias, damping, dt, vs, dscale, contacts, limits, gains, couplers, tol, warm, friction_tol):
    """A solve's inputs as plain arrays (A = M + δt D, r = M v0 − δt bias; the pools as tuples of copies)."""
    copy = lambda pool: tuple(x.copy() if isinstance(x, np.ndarray) else x for x in pool)  # noqa: E731
    return dict(A=M + np.diag(dt * damping), r=M @ v0 - dt * bias, dscale=dscale.copy(), dt=dt, vs=vs,
                contacts=copy(contacts), limits=copy(limits), gains=copy(gains), couplers=copy(couplers), tol=tol,
                warm=warm.copy(), friction_tol=np.array(friction_tol, dtype=float))


def solve_problem(p, coulomb):
    """Solve a recorded problem (plain lagged solve, or solve_coulomb if ``coulomb``). Returns (stats, solves)."""
    nv = p["A"].shape[0]
    contacts = list(p["contacts"])
    contacts[8] = contacts[8].copy()  # f_n0: solve_coulomb may write the bounds into it
    pools = (ContactPool(*contacts), LimitPool(*p["limits"]), GainPool(*p["gains"]), CouplerPool(*p["couplers"]))
    v, stats, L = p["warm"].copy(), np.zeros(4, dtype=np.int64), np.zeros((nv, nv))
    if not coulomb:
        slv.solve(v, p["A"], p["r"], p["dscale"], p["dt"], p["vs"], *pools, p["tol"], False, L, slv.NO_BLOCKS, stats)
        return stats, 1
    extra = slv.solve_coulomb(v, p["A"], p["r"], p["dscale"], p["dt"], p["vs"], *pools, p["tol"], False, L,
                              slv.NO_BLOCKS, stats, p["friction_tol"], np.zeros(pools[0].n),
                              slv.new_newton_workspace(nv, pools[0].Jc.shape[0], slv.NO_BLOCKS))
    return stats, 1 + extra


def replay_cause(p):
    """'newton' or 'bounds' (see the module docstring) for a failed solve recorded by :func:`make_problem` (the
    contact pool with its lagged f_n0, as it was before the solve)."""
    stats, _ = solve_problem(p, coulomb=False)
    return "bounds" if stats[slv.CONVERGED] == 1 else "newton"


def snapshot(pool):
    return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in pool)


class Recorder:
    """Wraps the integrator's solve kernels; counts Newton iterations per call and the causes of failures."""

    def __init__(self, integrator, keep=False):
        self.it = integrator
        self.newton_per_call = []
        self.causes = {"newton": 0, "bounds": 0}
        self.keep = keep  # record the problems of every solve whose friction bounds were iterated (or that failed)
        self.problems = []
        self._full_and_half = cenic.icf_full_and_half
        self._step = cenic.icf_step_at

    def install(self):
        rec, it = self, self.it
        it._articulated_loop = False  # the Python step loop: its kernel calls are the ones wrapped here

        def full_and_half(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains_full, gains_half,
                          v_full, q_full, v_half, q_half):
            M, dscale, contacts, limits, couplers = kernel_arrays(it, state)
            totals = it._totals
            before, t0 = snapshot(contacts), totals.copy()
            ok_full, ok_half = rec._full_and_half(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate,
                                                  gains_full, gains_half, v_full, q_full, v_half, q_half)
            rec.newton_per_call.append(int(totals[1] - t0[1]))
            iterated = totals[5] > t0[5]
            if not (rec.keep and iterated) and ok_full and ok_half:
                return ok_full, ok_half
            full = make_problem(v0, M, bias, it.damping, dt, vs, dscale, before, limits, gains_full, couplers, tol,
                                v0, it._friction_tol)
            half = None
            if ok_full:
                half = make_problem(v0, M, bias, it.damping, 0.5 * dt, vs, dscale, before, limits, gains_half,
                                    couplers, tol, 0.5 * (v0 + v_full), it._friction_tol)
            if not ok_full:
                rec.causes[replay_cause(full)] += 1
            elif not ok_half:
                rec.causes[replay_cause(half)] += 1
            if rec.keep and (iterated or not (ok_full and ok_half)):
                rec.problems += [full] if half is None else [full, half]
            return ok_full, ok_half

        def step(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains, v, q_out):
            M, dscale, contacts, limits, couplers = kernel_arrays(it, state)
            totals = it._totals
            before, warm, t0 = snapshot(contacts), v.copy(), totals.copy()
            ok = rec._step(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains, v, q_out)
            rec.newton_per_call.append(int(totals[1] - t0[1]))
            if not ok or (rec.keep and totals[5] > t0[5]):
                p = make_problem(v0, M, bias, it.damping, dt, vs, dscale, before, limits, gains, couplers, tol, warm,
                                 it._friction_tol)
                if not ok:
                    rec.causes[replay_cause(p)] += 1
                if rec.keep:
                    rec.problems.append(p)
            return ok

        cenic.icf_full_and_half = full_and_half
        cenic.icf_step_at = step

    def remove(self):
        cenic.icf_full_and_half = self._full_and_half
        cenic.icf_step_at = self._step


def run_case(env_id, policy, steps, accuracy, seeds=1, record=None):
    env = gym.make(env_id, accuracy=accuracy)
    it = env.unwrapped.sim.integrator
    pol = RandomPolicy(env, 0) if policy == "random" else load(SCRIPTED_ALL[env_id])(env)
    rec = Recorder(it, keep=record is not None)
    rec.install()
    s0 = it.stats.copy()
    restarts = 0
    try:
        for seed in range(seeds):
            obs, _ = env.reset(seed=seed)
            pol.reset()
            for _ in range(steps):
                obs, _, term, trunc, info = env.step(pol(obs))
                if "sim_failure" in info:
                    raise RuntimeError(f"{env_id} {policy}: {info['sim_failure']}")
                if term or trunc:
                    restarts += 1
                    obs, _ = env.reset(seed=1000 + restarts)
                    pol.reset()
    finally:
        rec.remove()
    s = it.stats
    env.close()
    if record is not None:
        with open(record, "wb") as f:
            pickle.dump(rec.problems, f)
    n = float(steps * seeds)
    d = {k: getattr(s, k) - getattr(s0, k) for k in ("accepted", "rejected", "solves", "solver_failures",
                                                      "newton_iters", "line_search_iters", "friction_solves")}
    per_call = np.array(rec.newton_per_call)
    return dict(case=f"{env_id} {policy}", attempts=(d["accepted"] + d["rejected"]) / n, rejected=d["rejected"] / n,
                failed=d["solver_failures"] / n, newton_fail=rec.causes["newton"] / n,
                bounds_fail=rec.causes["bounds"] / n, solves=d["solves"] / n, resolves=d["friction_solves"] / n,
                newton=d["newton_iters"] / n, ls=d["line_search_iters"] / max(d["newton_iters"], 1),
                p50=np.percentile(per_call, 50), p90=np.percentile(per_call, 90), pmax=per_call.max())


def replay(paths):
    """Solve the recorded problems with this tree's solve_coulomb (fixed inputs: compare trees on the same problems)."""
    print("| problems | convex solves | Newton iterations | line-search iterations | factorizations | "
          "without agreement (bounds) or not converged |")
    print("|---" * 6 + "|")
    for path in paths:
        with open(path, "rb") as f:
            problems = pickle.load(f)
        tot = np.zeros(5, dtype=np.int64)
        for p in problems:
            stats, solves = solve_problem(p, coulomb=True)
            tot += (solves, stats[slv.NEWTON_ITERS], stats[slv.LS_ITERS], stats[slv.FACTORIZATIONS],
                    stats[slv.CONVERGED] == 0)
        print(f"| {len(problems)} ({os.path.basename(path)}) | " + " | ".join(str(int(x)) for x in tot) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=1, help="episodes (reset seeds 0 … seeds−1) of --steps each")
    ap.add_argument("--accuracy", type=float, default=1e-3)
    ap.add_argument("--case", action="append", help="EnvId:random|scripted (repeatable)")
    ap.add_argument("--record", help="pickle the inputs of every solve whose friction bounds were iterated or that "
                                     "failed to this file (one --case only)")
    ap.add_argument("--replay", nargs="+", help="only solve the problems of these --record files and count")
    args = ap.parse_args()
    if args.replay:
        replay(args.replay)
        return 0
    if args.record and len(args.case or DEFAULT_CASES) != 1:
        raise ValueError("--record needs exactly one --case")
    if args.steps < 1 or args.seeds < 1:
        raise ValueError(f"--steps and --seeds must be ≥ 1, got {args.steps} and {args.seeds}")
    load0 = os.getloadavg()[0]
    t_start = time.perf_counter()
    print(f"ε = {args.accuracy:g}, {args.seeds} × {args.steps} env steps per case, cenic_gym from "
          f"{os.path.dirname(cenic.__file__)}\n")
    print("| case | attempts | rejected | failed solves | of which Newton | of which bounds | solves | "
          "friction re-solves | Newton iters | LS / Newton | Newton per call p50 / p90 / max |")
    print("|---" * 11 + "|")
    for case in args.case or DEFAULT_CASES:
        env_id, policy = case.split(":")
        r = run_case(env_id, policy, args.steps, args.accuracy, args.seeds, args.record)
        print(f"| {r['case']} | {r['attempts']:.2f} | {r['rejected']:.2f} | {r['failed']:.3f} | "
              f"{r['newton_fail']:.3f} | {r['bounds_fail']:.3f} | {r['solves']:.2f} | {r['resolves']:.2f} | "
              f"{r['newton']:.1f} | {r['ls']:.2f} | {r['p50']:.0f} / {r['p90']:.0f} / {r['pmax']:.0f} |", flush=True)
    print(f"\n{time.perf_counter() - t_start:.0f} s; load average at start {load0:.2f}, at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
