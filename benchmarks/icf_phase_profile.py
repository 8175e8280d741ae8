"""Inside the convex solve: Newton and line-search counts per solve, and the CPU time of each phase of one Newton
iteration, on problems captured from an env run (default CenicAllegro-v0 at ε = 1e-3, random actions).

    PYTHONPATH=<tree> NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/icf_phase_profile.py \
        [--env CenicAllegro-v0 | --scene "sphere clutter"] [--accuracy 1e-3] [--steps 40] [--reps 2000]

``--scene`` takes the problems of one of the peer scenes (``benchmarks/peers/peer_scenarios.py``, run over its
whole time span on the Python step loop, :func:`profile_scenes.record_problems`) instead of an env's.

The run wraps :func:`cenic_gym.cenic.icf_full_and_half` (a Python wrapper in the module namespace, so the env's
calls go through it) and keeps a copy of every full-step problem (x^n, M, bias, pools, warm start). Then, per captured
problem and in one numba loop each (no dispatch in the timing), best of 3 of ``--reps`` repetitions (CPU time,
``time.thread_time``):

* ``solve``: the whole :func:`cenic_gym.solver.solve` from the warm start (the lagged problem, no friction re-solve);
* the phases of one Newton iteration at the warm start, as :func:`cenic_gym.solver.solve` runs them: the cost,
  gradient and Hessian (``quadratic_cost``, ``start_hessian`` on the candidate blocks, ``pool_costs``), the same
  without the Hessian (what the line search and the gradient-only iterations pay), the factorization
  (``cholesky_within`` on the candidate blocks; dense for robots), the two triangular solves,
  ``constraint_velocities`` twice (v and p) and ``exact_line_search``; and, for the Hessian assembly, the contact
  pool's share (``contact_pool_cost`` with the Hessian) and one ``_line_eval``.

Counts come from the solver's own counters over the whole run (the integrator's stats: solves, Newton iterations,
line-search iterations, factorizations, friction re-solves). Nothing here changes the physics.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from numba import njit

import cenic_gym  # noqa: F401  (registers the envs)
import cenic_gym.cenic as cm
from cenic_gym import solver as slv
from cenic_gym.icf import ContactPool, CouplerPool, GainPool, LimitPool, contact_pool_cost
from profile_scenes import _problem, kernel_arrays  # the convex problem icf_step hands to solve, copied out

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from peer_scenarios import all_scenarios  # noqa: E402


def capture(env_id, accuracy, steps, seed):
    """Run ``steps`` random env steps and return (the list of captured full-step problems, the run's counters)."""
    env = gym.make(env_id, accuracy=accuracy)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    problems = []
    real = cm.icf_full_and_half
    it = env.unwrapped.sim.integrator
    it._articulated_loop = False  # the Python step loop: its kernel calls are the ones wrapped here

    def spy(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains_full, *rest):
        M, dscale, contacts, limits, couplers = kernel_arrays(it, state)
        problems.append(_problem(q, v0, M, bias, it.damping, dt, vs, dscale, contacts, limits, gains_full, couplers,
                                 tol, False, v0, it._blocks) + (it._friction_tol.copy(),))
        return real(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains_full, *rest)

    cm.icf_full_and_half = spy
    try:
        for _ in range(steps):
            env.step(env.action_space.sample())
    finally:
        cm.icf_full_and_half = real
    return problems, integrator_counts(env.unwrapped.sim.integrator.stats)


def capture_scene(name, accuracy):
    """The convex problems of the peer scene ``name`` over its time span (every full, half and second half step
    problem, with its warm start) and the run's counters."""
    from profile_scenes import record_problems
    scenario = next((sc for sc in all_scenarios() if sc.name == name), None)
    if scenario is None:
        raise ValueError(f"unknown scene {name!r}; one of {[sc.name for sc in all_scenarios()]}")
    if accuracy != 1e-3:
        raise ValueError(f"--scene runs at the accuracy of profile_scenes (1e-3), not {accuracy:g}")
    recorded, stats = record_problems(scenario.factory, scenario.t_end, 1)
    ftol = slv.coulomb_tolerance(accuracy)
    return [prob + (ftol,) for prob, _ in recorded], integrator_counts(stats)


def integrator_counts(st):
    """(solves, Newton iterations, line-search iterations, factorizations, friction re-solves) of IntegratorStats."""
    return st.solves, st.newton_iters, st.line_search_iters, st.factorizations, st.friction_solves


PHASES = ("solve_coulomb", "solve", "cost+grad+Hessian", "cost+grad", "contact pool (Hessian)", "cholesky", "triangular solves",
          "constraint velocities x2", "line search", "one line eval")


@njit  # not cached: numba's cache does not notice a change in the solver module it calls
def run_phase(which, reps, v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, blocks,
              friction_tol, stats):
    """Repeat phase ``which`` (index into PHASES) ``reps`` times on the problem; returns a checksum (keeps the
    work alive)."""
    contacts, limits = ContactPool(*contacts), LimitPool(*limits)
    gains, couplers = GainPool(*gains), CouplerPool(*couplers)
    nv = v0.shape[0]
    grad = np.empty(nv)
    H = np.empty((nv, nv))
    L = np.zeros((nv, nv))
    nc = contacts.n
    work = slv.new_newton_workspace(nv, contacts.Jc.shape[0], blocks)
    vc = np.empty((nc, 3))
    uc = np.empty((nc, 3))
    # the first Newton iteration's direction at the warm start, shared by the later phases
    l0 = slv.cost_gradient_hessian(v0, A, r, dt, vs, contacts, limits, gains, couplers, grad, H, True, blocks)
    H0 = H.copy()
    L0 = np.zeros((nv, nv))
    cand = slv.coupled_blocks(contacts, couplers, blocks)
    Av = np.empty(nv)
    mask0 = slv.cholesky(H0, blocks, L0)
    p = slv._cholesky_solve(L0, -grad, blocks, mask0)
    dl0 = grad @ p
    slv.constraint_velocities(v0, contacts.Jc, contacts.cols, contacts.ncols, nc, vc)
    slv.constraint_velocities(p, contacts.Jc, contacts.cols, contacts.ncols, nc, uc)
    Ap = A @ p
    qa, qb, qc = p @ Ap, v0 @ Ap - r @ p, 0.5 * (v0 @ (A @ v0)) - r @ v0
    acc = 0.0
    v = np.empty(nv)
    fn_used = np.empty(max(nc, 1))
    for _ in range(reps):
        if which == -1:
            v[:] = v0
            acc += slv.solve_coulomb(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, False, L,
                                     blocks, stats, friction_tol, fn_used, work)
        elif which == 0:
            v[:] = v0
            slv.solve(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, False, L, blocks, stats)
            acc += v[0]
        elif which == 1:  # as a Newton iteration of solve() assembles: A on the candidate blocks, then the pools
            quad = slv.quadratic_cost(v0, A, r, blocks, grad, Av)
            slv.start_hessian(A, H, blocks, cand)
            acc += slv.pool_costs(v0, A, dt, vs, contacts, limits, gains, couplers, quad, grad, H, True)
        elif which == 2:
            quad = slv.quadratic_cost(v0, A, r, blocks, grad, Av)
            acc += slv.pool_costs(v0, A, dt, vs, contacts, limits, gains, couplers, quad, grad, H, False)
        elif which == 3:
            acc += contact_pool_cost(contacts, v0, dt, vs, 0.0, grad, H, True)
        elif which == 4:
            slv.cholesky_within(H0, blocks, L, cand, work.mask, work.shared)  # as solve() does it
            acc += L[0, 0]
        elif which == 5:
            acc += slv._cholesky_solve(L0, grad, blocks, mask0)[0]
        elif which == 6:
            slv.constraint_velocities(v0, contacts.Jc, contacts.cols, contacts.ncols, nc, vc)
            slv.constraint_velocities(p, contacts.Jc, contacts.cols, contacts.ncols, nc, uc)
            acc += vc[0, 0] if nc else 0.0
        elif which == 7:
            a, _ = slv.exact_line_search(v0, p, vc, uc, qa, qb, qc, dt, vs, contacts, limits, gains, couplers, l0,
                                         dl0)
            acc += a
        else:
            f, _, _ = slv._line_eval(0.5, v0, p, qa, qb, qc, vc, uc, dt, vs, contacts, limits, gains, couplers)
            acc += f
    return acc


def cpu_us(which, reps, prob, stats):
    """Best of 3 CPU time [µs] of one repetition of phase ``which`` on ``prob``."""
    best = np.inf
    for _ in range(3):
        t0 = time.thread_time()
        run_phase(which - 1, reps, *prob, stats)
        best = min(best, (time.thread_time() - t0) / reps)
    return 1e6 * best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="CenicAllegro-v0")
    ap.add_argument("--scene", default=None, help="a peer scene's name instead of an env (e.g. 'sphere clutter')")
    ap.add_argument("--accuracy", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=40, help="random env steps to capture problems from")
    ap.add_argument("--reps", type=int, default=2000, help="repetitions per timed phase")
    ap.add_argument("--problems", type=int, default=12, help="captured problems to time (evenly spaced)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.scene:
        problems, tot = capture_scene(args.scene, args.accuracy)
        what = f"{args.scene} ε={args.accuracy:g}: {len(problems)} problems"
    else:
        problems, tot = capture(args.env, args.accuracy, args.steps, args.seed)
        what = f"{args.env} ε={args.accuracy:g}, {args.steps} random steps: {len(problems)} attempts"
    solves = max(tot[0], 1)
    print(f"{what}, {int(tot[0])} convex solves ({int(tot[4])} friction re-solves), per solve: Newton "
          f"{tot[1] / solves:.2f}, line-search evals {tot[2] / solves:.2f} (+1 evaluation at α_max per Newton "
          f"iteration), factorizations {tot[3] / solves:.2f}")
    pick = np.linspace(0, len(problems) - 1, min(args.problems, len(problems))).astype(int)
    stats = np.zeros(4, dtype=np.int64)
    rows = np.zeros((len(pick), len(PHASES)))
    info = []
    for k, i in enumerate(pick):
        prob = problems[i]
        for w in range(len(PHASES)):
            run_phase(w - 1, 1, *prob, stats)  # compile / warm
            rows[k, w] = cpu_us(w, args.reps, prob, stats)
        extra = run_phase(-1, 1, *prob, stats)
        info.append((prob[6][-1], prob[0].shape[0], int(stats[0]), int(stats[1]), int(stats[2]), int(extra)))
    print("problem: contacts, nv, friction re-solves R, Newton iters, LS iters, factorizations of solve_coulomb "
          "(all its solves) | µs per phase: "
          + ", ".join(PHASES))
    for k in range(len(pick)):
        print(f"  {pick[k]:4d}: nc={info[k][0]:2d} nv={info[k][1]} R={info[k][5]} N={info[k][2]} LS={info[k][3]} F={info[k][4]} | "
              + " ".join(f"{x:7.2f}" for x in rows[k]))
    med = np.median(rows, axis=0)
    print("median µs: " + ", ".join(f"{n} {x:.2f}" for n, x in zip(PHASES, med)))
    run_phase(0, 1, *problems[pick[0]], stats)  # (the lagged solve's own counts for the model line below)
    lag = []
    for i in pick:
        run_phase(0, 1, *problems[i], stats)
        lag.append((int(stats[0]), int(stats[1])))
    n_it = np.median([x[0] for x in lag])
    ls = np.median([x[1] for x in lag])
    print(f"model of one solve (median N={n_it:g}, LS={ls:g}): (N+1)·assembly {(n_it + 1) * med[2]:.1f} + N·cholesky "
          f"{n_it * med[5]:.1f} + N·triangular {n_it * med[6]:.1f} + N·Jv,Jp {n_it * med[7]:.1f} + N·line search "
          f"{n_it * med[8]:.1f} µs vs measured solve {med[1]:.1f} µs")


if __name__ == "__main__":
    main()
