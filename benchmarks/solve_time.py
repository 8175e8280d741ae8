"""CPU time per convex solve on captured env problems, for the code tree on PYTHONPATH (A/B of solver kernels).

    for t in <before-tree> <after-tree> <after-tree> <before-tree>; do
        PYTHONPATH=$t NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/solve_time.py; done

Captures the full-step problems of ``--steps`` random env steps (:func:`icf_phase_profile.capture`, default
CenicAllegro-v0 at ε = 1e-3, seed 0), keeps every ``--every``-th, and times :func:`cenic_gym.solver.solve` (the
lagged solve) and :func:`cenic_gym.solver.solve_coulomb` (with the friction re-solves) on all of them in numba loops,
best of 3 (``time.thread_time``). Only ``solve`` and ``solve_coulomb`` of the tree under test are called, so any two
trees with these signatures compare. The printed checksum (Σ of the solutions' first entries) must be the same
for both trees when the change is meant to be bit-identical.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from cenic_gym import solver as slv
from cenic_gym.icf import ContactPool, CouplerPool, GainPool, LimitPool
from icf_phase_profile import capture


@njit  # not cached: numba's cache does not see a change in the other tree's solver module
def repeat_solve(v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, friction_tol, reps,
                 lagged):
    """Solve the problem ``reps`` times from the warm start v0 (``lagged``: plain solve, else solve_coulomb).
    Returns Σ v[0] over the repetitions."""
    contacts, limits = ContactPool(*contacts), LimitPool(*limits)
    gains, couplers = GainPool(*gains), CouplerPool(*couplers)
    nv = v0.shape[0]
    L = np.zeros((nv, nv))
    stats = np.zeros(4, dtype=np.int64)
    fn_used = np.empty(max(contacts.n, 1))
    work = slv.new_newton_workspace(nv, contacts.Jc.shape[0], slv.NO_BLOCKS)
    v = np.empty(nv)
    acc = 0.0
    for _ in range(reps):
        v[:] = v0
        if lagged:
            slv.solve(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, L, slv.NO_BLOCKS, stats)
        else:
            slv.solve_coulomb(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, L, slv.NO_BLOCKS,
                              stats, friction_tol, fn_used, work)
        acc += v[0]
    return acc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="CenicAllegro-v0")
    ap.add_argument("--accuracy", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    problems, _ = capture(args.env, args.accuracy, args.steps, 0)
    problems = problems[::args.every]
    for lagged, name in ((True, "solve (lagged)"), (False, "solve_coulomb")):
        repeat_solve(*problems[0], 1, lagged)
        best = np.inf
        for _ in range(3):
            t0 = time.thread_time()
            chk = sum(repeat_solve(*p, args.reps, lagged) for p in problems)
            best = min(best, time.thread_time() - t0)
        print(f"{name}: {1e6 * best / (args.reps * len(problems)):.2f} µs per solve over {len(problems)} problems, "
              f"checksum {chk!r}")


if __name__ == "__main__":
    main()
