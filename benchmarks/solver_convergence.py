"""Why convex solves fail on an env (issue 12/18: CenicAllegro-v0's rejected steps): counts per env step.

    python benchmarks/solver_convergence.py [--steps 200] [--seeds 1] [--accuracy 1e-3] [--case CenicAllegro-v0:scripted ...]

Works on any code tree whose ``cenic_gym`` is on ``PYTHONPATH`` (to compare before/after trees). For each case
(env id and policy: ``random`` = seeded uniform actions, ``scripted`` = the task's scripted policy, as in
``step_size_analysis.py``), ``gym.make(id, accuracy=ε)``, then for each of ``--seeds`` episodes s = 0, 1, …:
``reset(seed=s)`` and ``--steps`` env steps (an episode that ends early restarts with seed 1000 + k). The
trajectories are chaotic (contacts), so a code change that alters any solve visits other states after a few env
steps; several seeds average that out. The integrator's solve kernels (``cenic.icf_full_and_half``, ``cenic.icf_step``) are wrapped
so that every failed solve (the step is rejected with error = ∞) is replayed from its inputs in Python and
classified:

* ``newton``: the plain lagged solve (:func:`cenic_gym.solver.solve`) did not converge in
  ``MAX_NEWTON_ITERATIONS`` (or hit a non-finite value);
* ``bounds``: the lagged solve converged, but the friction-bound iteration of
  :func:`cenic_gym.solver.solve_coulomb` ended without agreement after ``MAX_FRICTION_SOLVES`` solves (issue 10).

Columns (per env step): attempts, rejected, failed (of which newton / bounds), convex solves, friction re-solves
(solves beyond each solve's first), Newton iterations, line-search iterations per Newton iteration, and the p50 / p90
/ max of Newton iterations per convex solve *call* (a call = the solves of one step size, re-solves included).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import cenic_gym  # noqa: E402,F401  (registers the envs)
from cenic_gym import cenic  # noqa: E402
from cenic_gym import solver as slv  # noqa: E402
from cenic_gym.icf import ContactPool, CouplerPool, GainPool, LimitPool  # noqa: E402
from env_throughput import RandomPolicy, load  # noqa: E402
from step_size_analysis import SCRIPTED_ALL  # noqa: E402

DEFAULT_CASES = ["CenicAllegro-v0:random", "CenicAllegro-v0:scripted"]


def replay_cause(q, v0, M, bias, damping, dt, vs, dscale, contacts, limits, gains, couplers, tol, warm):
    """'newton' or 'bounds' (see the module docstring) for a failed solve of size dt from its inputs (the contact
    pool with its lagged f_n0, as it was before the solve)."""
    nv = v0.shape[0]
    A = M + np.diag(dt * damping)
    r = M @ v0 - dt * bias
    v, stats, L = warm.copy(), np.zeros(4, dtype=np.int64), np.zeros((nv, nv))
    slv.solve(v, A, r, dscale, dt, vs, ContactPool(*contacts), LimitPool(*limits), GainPool(*gains),
              CouplerPool(*couplers), tol, False, L, stats)
    return "bounds" if stats[slv.CONVERGED] == 1 else "newton"


def snapshot(pool):
    return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in pool)


class Recorder:
    """Wraps the integrator's solve kernels; counts Newton iterations per call and the causes of failures."""

    def __init__(self):
        self.newton_per_call = []
        self.causes = {"newton": 0, "bounds": 0}
        self._full_and_half = cenic.icf_full_and_half
        self._step = cenic.icf_step
        self._icf = cenic.CenicIntegrator._icf

    def install(self):
        rec = self

        def full_and_half(q, v0, M, bias, damping, dt, vs, dscale, contacts, limits, gains_full, gains_half,
                          couplers, tol, reuse, L, stats, totals, *rest):
            before, t0 = snapshot(contacts), totals.copy()
            v_full = rest[2]
            ok_full, ok_half = rec._full_and_half(q, v0, M, bias, damping, dt, vs, dscale, contacts, limits,
                                                  gains_full, gains_half, couplers, tol, reuse, L, stats, totals,
                                                  *rest)
            rec.newton_per_call.append(int(totals[1] - t0[1]))
            if not ok_full:
                rec.causes[replay_cause(q, v0, M, bias, damping, dt, vs, dscale, before, limits, gains_full,
                                        couplers, tol, v0)] += 1
            elif not ok_half:
                rec.causes[replay_cause(q, v0, M, bias, damping, 0.5 * dt, vs, dscale, before, limits, gains_half,
                                        couplers, tol, 0.5 * (v0 + v_full))] += 1
            return ok_full, ok_half

        def step(q, v0, M, bias, damping, dt, vs, dscale, contacts, limits, gains, couplers, tol, reuse, L, stats,
                 totals, integrate, plan, v, *rest):
            before, warm, t0 = snapshot(contacts), v.copy(), totals.copy()
            ok = rec._step(q, v0, M, bias, damping, dt, vs, dscale, contacts, limits, gains, couplers, tol, reuse, L,
                           stats, totals, integrate, plan, v, *rest)
            rec.newton_per_call.append(int(totals[1] - t0[1]))
            if not ok:
                rec.causes[replay_cause(q, v0, M, bias, damping, dt, vs, dscale, before, limits, gains, couplers,
                                        tol, warm)] += 1
            return ok

        def icf(integrator, *args, **kwargs):  # icf_step is also called inside icf_full_and_half (numba): swap
            cenic.icf_step = step              # the Python-level name only around the Python-level call
            try:
                return rec._icf(integrator, *args, **kwargs)
            finally:
                cenic.icf_step = rec._step

        cenic.icf_full_and_half = full_and_half
        cenic.CenicIntegrator._icf = icf

    def remove(self):
        cenic.icf_full_and_half = self._full_and_half
        cenic.icf_step = self._step
        cenic.CenicIntegrator._icf = self._icf


def run_case(env_id, policy, steps, accuracy, seeds=1):
    env = gym.make(env_id, accuracy=accuracy)
    it = env.unwrapped.sim.integrator
    pol = RandomPolicy(env, 0) if policy == "random" else load(SCRIPTED_ALL[env_id])(env)
    rec = Recorder()
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
    n = float(steps * seeds)
    d = {k: getattr(s, k) - getattr(s0, k) for k in ("accepted", "rejected", "solves", "solver_failures",
                                                      "newton_iters", "line_search_iters", "friction_solves")}
    per_call = np.array(rec.newton_per_call)
    return dict(case=f"{env_id} {policy}", attempts=(d["accepted"] + d["rejected"]) / n, rejected=d["rejected"] / n,
                failed=d["solver_failures"] / n, newton_fail=rec.causes["newton"] / n,
                bounds_fail=rec.causes["bounds"] / n, solves=d["solves"] / n, resolves=d["friction_solves"] / n,
                newton=d["newton_iters"] / n, ls=d["line_search_iters"] / max(d["newton_iters"], 1),
                p50=np.percentile(per_call, 50), p90=np.percentile(per_call, 90), pmax=per_call.max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=1, help="episodes (reset seeds 0 … seeds−1) of --steps each")
    ap.add_argument("--accuracy", type=float, default=1e-3)
    ap.add_argument("--case", action="append", help="EnvId:random|scripted (repeatable)")
    args = ap.parse_args()
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
        r = run_case(env_id, policy, args.steps, args.accuracy, args.seeds)
        print(f"| {r['case']} | {r['attempts']:.2f} | {r['rejected']:.2f} | {r['failed']:.3f} | "
              f"{r['newton_fail']:.3f} | {r['bounds_fail']:.3f} | {r['solves']:.2f} | {r['resolves']:.2f} | "
              f"{r['newton']:.1f} | {r['ls']:.2f} | {r['p50']:.0f} / {r['p90']:.0f} / {r['pmax']:.0f} |", flush=True)
    print(f"\n{time.perf_counter() - t_start:.0f} s; load average at start {load0:.2f}, at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
