"""Where the time goes: profiles of clutter and the sphere drop at ε = 1e-3 (after a warm-up).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/profile_scenes.py

These two scenes are free bodies, which the integrator steps in one compiled call per ``advance_to`` by default
(``cenic.advance_free_bodies``: closed-form dynamics, no Python per step; timed per attempted step in the summary
next to the Python loop). The views below profile the Python step loop, the one every articulated system runs (the
envs), on these scenes. Per attempted step, :meth:`cenic_gym.cenic.CenicIntegrator.step` makes these calls from
Python (everything else runs inside them):

- ``_prepare`` (once for x^n when it is new, once for the midpoint state): ``pin.crba`` (WORLD convention:
  kinematics, joint Jacobians and M), ``pin.nonLinearEffects`` and one numba call ``prepare_kernel`` (contact query +
  lagged state terms);
  ``ContactQuery.coal_fallback`` + ``state_terms`` only when some pair needs coal (not in these scenes);
- ``_full_and_half``: one numba call ``icf_full_and_half`` (full step + first half step: two ``icf_step``, each
  building A, r, calling ``solver.solve`` and integrating q);
- ``_icf``: one numba call ``icf_step_at`` (second half step: one ``icf_step``);
- ``max_abs_diff`` (numba) for the error estimate; ``pin.integrate`` only for joints ``integrate_q`` cannot handle.

Five views, written as text under ``benchmarks/profiles/`` and summarised on stdout:

1. ``leaf_timing``: every numba kernel and Pinocchio call that the integrator makes from Python (``LEAVES``) is
   replaced by a timing shim (perf_counter); per primitive: calls, total, µs per call and share of ``wall_total``.
   Everything not in a leaf is Python glue (step control, ``_gain_pool``, array allocation, dataclasses, timers).
   The leaves are module globals looked up at call time by ``cenic.py``, so patching ``cenic_gym.cenic.<name>``
   reaches them; numba code that calls a kernel (``icf_full_and_half`` -> ``icf_step``) is not affected.
2. cProfile (``-s cumtime`` and ``tottime`` listings) with the same leaves wrapped in named Python shims
   (``<label>:1(...)`` rows), so that every numba dispatcher and Boost.Python function gets one unambiguous row with
   its call count (cProfile lists a numba dispatcher under its Python definition, e.g. ``cenic.py:68(prepare_kernel)``
   = compiled code + dispatch; the shim row's extra cumulative time is the shim itself).
3. Inside ``solver.solve``: ``solve`` is called from numba (``icf_step``), so it cannot be patched from Python.
   Instead the Python-level calls of ``icf_step_at`` and ``icf_full_and_half`` are recorded (every k-th), each convex
   problem is rebuilt from their arguments and the cache they name (:func:`kernel_arrays`) exactly as ``icf_step``
   does (A = M + δt diag(damping),
   r = M v^n − δt bias, the warm start, the four constraint pools as tuples, copied out of the per-cache buffers),
   and ``slv.solve``, ``slv.cost_gradient_hessian``, ``slv.cholesky_within``, ``slv._cholesky_solve`` and
   ``slv.exact_line_search`` are replayed in compiled loops (numba has no wall clock in nopython mode), then scaled
   by each problem's own Newton / factorization counters. The replay is the first solve of each problem
   (``solve``); a friction re-solve (``solve_coulomb`` moving the friction bounds to the step's own normal
   impulses) is not replayed, so a re-solved problem's counters differ from its replay's ("same Newton path" below).
4. The compiled loop's attempt (sphere drop in contact): its kernels (closed-form dynamics, ``prepare_kernel``,
   ``icf_full_and_half``, ``icf_step_at``) each timed in a numba loop on the arguments the compiled loop passes.
5. Micro-timings (sphere drop, in flight and in contact): the statements of the per-step path (``_prepare``,
   ``_full_and_half``, ``_icf``, a whole accepted step from a restored state, each Pinocchio call, each numba call
   with the run's arguments, and the dispatch cost of no-op numba functions taking the same arguments),
   via ``timeit``.

The sphere drop is short (~10 ms for 2 s), so it is repeated ``DROP_REPEATS`` times inside views 1 and 2; view 1
keeps the best of ``TRIALS`` runs (the machine may be shared).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import cProfile  # noqa: E402
import io  # noqa: E402
import math  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

from bench_common import git_rev, threads  # noqa: E402
import cenic_gym.cenic as cenic_mod  # noqa: E402
import cenic_gym.contact as contact_mod  # noqa: E402
import cenic_gym.solver as slv  # noqa: E402
from cenic_gym import Simulator, scenes  # noqa: E402
from cenic_gym.contact import compute_kinematics_and_inertia  # noqa: E402

OUT = Path(__file__).resolve().parent / "profiles"
EPS = 1e-3
DROP_REPEATS = 20
TRIALS = 3  # leaf timing: best of this many runs (each of the scene's repeats)

CASES = [
    ("clutter", scenes.clutter, 2.0, 1),
    ("sphere_drop", lambda: scenes.sphere_drop(height=1.0, mass=0.1, stiffness=1e3, dissipation=0.0), 2.0,
     DROP_REPEATS),
]

# (namespace, attribute, label) of every non-Python leaf the integrator calls from Python
LEAVES = [
    (pin, "computeJointJacobians", "pin.computeJointJacobians"),
    (pin, "crba", "pin.crba"),
    (pin, "nonLinearEffects", "pin.nonLinearEffects"),
    (pin, "integrate", "pin.integrate"),
    (cenic_mod, "prepare_kernel", "numba cenic.prepare_kernel"),
    (cenic_mod, "icf_full_and_half", "numba cenic.icf_full_and_half"),
    (cenic_mod, "icf_step_at", "numba cenic.icf_step_at"),
    (cenic_mod, "max_abs_diff", "numba cenic.max_abs_diff"),
    (cenic_mod, "state_terms", "numba cenic.state_terms (coal path)"),
    (contact_mod.ContactQuery, "coal_fallback", "ContactQuery.coal_fallback"),
]
# leaves that belong to one phase of IntegratorStats, for the per-attempt summary
PIN_LEAVES = {"pin.computeJointJacobians", "pin.crba", "pin.nonLinearEffects", "pin.integrate"}
NUMBA_LEAVES = {"numba cenic.prepare_kernel", "numba cenic.icf_full_and_half", "numba cenic.icf_step_at",
                "numba cenic.max_abs_diff", "numba cenic.state_terms (coal path)"}


def python_loop_sim(factory):
    """A simulator of the scene on the Python step loop (``CenicIntegrator.step``), the loop profiled here: these
    scenes are free bodies, which run the compiled loop (``cenic.advance_free_bodies``) by default; the Python loop
    is the one every articulated system (the envs) runs."""
    sim = Simulator(factory(), accuracy=EPS)
    sim.integrator._compiled_loop = False
    return sim


def warm_up():
    """Load / compile every numba specialization before any leaf is patched (a patched global would break a
    compilation that happens while it is patched)."""
    for _, factory, _, _ in CASES:
        python_loop_sim(factory).advance_to(0.6)
        Simulator(factory(), accuracy=EPS).advance_to(0.6)


def run_case(factory, t_end, repeats, compiled=False):
    """Returns summed IntegratorStats counters and wall times over the repeats (Python loop unless ``compiled``)."""
    tot = defaultdict(float)
    for _ in range(repeats):
        sim = Simulator(factory(), accuracy=EPS) if compiled else python_loop_sim(factory)
        sim.advance_to(t_end)
        st = sim.stats
        for k in ("wall_total", "wall_geometry", "wall_dynamics", "wall_solver", "accepted", "rejected", "solves",
                  "geometry_queries", "newton_iters", "line_search_iters", "factorizations", "sim_time"):
            tot[k] += getattr(st, k)
    return tot


class Patched:
    """Replace the leaves by wrappers for the duration of a with-block."""

    def __init__(self, make):
        self.make = make

    def __enter__(self):
        self.saved = [(ns, attr, getattr(ns, attr)) for ns, attr, _ in LEAVES]
        for (ns, attr, label), (_, _, fn) in zip(LEAVES, self.saved):
            setattr(ns, attr, self.make(label, fn))
        return self

    def __exit__(self, *exc):
        for ns, attr, fn in self.saved:
            setattr(ns, attr, fn)


# -- 1. leaf timing -----------------------------------------------------------------------------------------------
def _timed(fn, slot):
    pc = time.perf_counter

    def timed(*a, **k):
        t0 = pc()
        try:
            return fn(*a, **k)
        finally:
            slot[0] += 1
            slot[1] += pc() - t0
    return timed


def shim_cost(n=200000):
    """Extra wall time of one call through the timing shim [s], measured on a 3-argument no-op numba function."""
    import timeit

    from numba import njit

    @njit
    def noop(a, b, c):
        return 0

    x = np.zeros(3)
    noop(x, x, x)
    shimmed = _timed(noop, [0, 0.0])
    plain = min(timeit.repeat(lambda: noop(x, x, x), number=n, repeat=5)) / n
    timed = min(timeit.repeat(lambda: shimmed(x, x, x), number=n, repeat=5)) / n
    return timed - plain


def leaf_timing(name, factory, t_end, repeats, trials=TRIALS):
    """Best of ``trials``: the unpatched run with the smallest wall_total and the shimmed run (with its leaf
    accumulators) with the smallest wall_total (the machine is shared; the minimum is the least disturbed)."""
    best = None
    base = None
    for _ in range(trials):
        b = run_case(factory, t_end, repeats)  # unpatched, for the overhead of the shims
        if base is None or b["wall_total"] < base["wall_total"]:
            base = b
        acc = defaultdict(lambda: [0, 0.0])

        def make(label, fn):
            return _timed(fn, acc[label])

        with Patched(make):
            tot = run_case(factory, t_end, repeats)
        if best is None or tot["wall_total"] < best[0]["wall_total"]:
            best = (tot, acc)
    tot, acc = best
    wall = tot["wall_total"]
    attempts = tot["accepted"] + tot["rejected"]
    lines = [f"# {name}, ε={EPS:g}, {t_end:g} s simulated x {repeats}, best of {trials} trials: wall_total "
             f"{wall:.4f} s with shims ({base['wall_total']:.4f} s without), accepted {tot['accepted']:.0f}, rejected "
             f"{tot['rejected']:.0f}, solves {tot['solves']:.0f}, geometry queries {tot['geometry_queries']:.0f}",
             f"{'primitive':40s} {'calls':>8s} {'total s':>9s} {'us/call':>9s} {'calls/att':>9s} "
             f"{'us/att':>8s} {'share':>7s}"]
    leaf_sum = 0.0
    rows = []
    per_att = defaultdict(float)
    for label, (n, t) in sorted(acc.items(), key=lambda kv: -kv[1][1]):
        if n == 0:
            continue
        leaf_sum += t
        rows.append((label, n, t))
        kind = "pin" if label in PIN_LEAVES else "numba" if label in NUMBA_LEAVES else "other"
        per_att[kind] += t
        per_att[kind + "_calls"] += n
        lines.append(f"{label:40s} {n:8d} {t:9.4f} {1e6 * t / n:9.1f} {n / attempts:9.2f} "
                     f"{1e6 * t / attempts:8.1f} {100 * t / wall:6.1f}%")
    called = {label for label, _, _ in rows}
    lines.append("not called: " + (", ".join(lb for _, _, lb in LEAVES if lb not in called) or "-"))
    glue = wall - leaf_sum
    lines.append(f"{'Python glue (wall_total - leaves)':40s} {'':8s} {glue:9.4f} {'':9s} {'':9s} "
                 f"{1e6 * glue / attempts:8.1f} {100 * glue / wall:6.1f}%")
    shim = shim_cost()
    ncalls = sum(n for _, n, _ in rows)
    lines.append(
        f"per attempted step ({attempts:.0f} attempts, {tot['solves'] / attempts:.2f} solves, "
        f"{tot['geometry_queries'] / attempts:.2f} state evaluations each): {1e6 * wall / attempts:.1f} us with "
        f"shims, {1e6 * base['wall_total'] / attempts:.1f} us without = "
        f"Pinocchio {1e6 * per_att['pin'] / attempts:.1f} us ({per_att['pin_calls'] / attempts:.1f} calls) + "
        f"numba {1e6 * per_att['numba'] / attempts:.1f} us ({per_att['numba_calls'] / attempts:.1f} calls) + "
        f"other leaves {1e6 * per_att['other'] / attempts:.1f} us + Python glue {1e6 * glue / attempts:.1f} us "
        f"(a shim costs {1e6 * shim:.2f} us per call, measured on a no-op: {1e6 * shim * ncalls / attempts:.1f} us "
        f"per attempt, part in the leaf rows, part in the glue; the with/without difference of this run is "
        f"{1e6 * (wall - base['wall_total']) / attempts:.1f} us per attempt incl. run-to-run noise)")
    lines.append(f"per accepted step {1e6 * base['wall_total'] / tot['accepted']:.1f} us (no shims); per simulated "
                 f"second {1e3 * base['wall_total'] / base['sim_time']:.3f} ms (no shims); IntegratorStats per "
                 f"attempt: geometry {1e6 * tot['wall_geometry'] / attempts:.1f} us, dynamics "
                 f"{1e6 * tot['wall_dynamics'] / attempts:.1f} us, solver {1e6 * tot['wall_solver'] / attempts:.1f} "
                 f"us; per solve {1e6 * tot['wall_solver'] / tot['solves']:.1f} us (wall_solver)")
    return "\n".join(lines), dict(rows=rows, wall=wall, glue=glue, tot=tot, base=base)


# -- 2. cProfile ----------------------------------------------------------------------------------------------------
def named_shim(label, fn):
    ident = "".join(c if c.isalnum() else "_" for c in label)
    ns = {"_f": fn}
    exec(compile(f"def {ident}(*a, **k):\n    return _f(*a, **k)\n", f"<{label}>", "exec"), ns)
    return ns[ident]


def cprofile(name, factory, t_end, repeats):
    pr = cProfile.Profile()
    with Patched(named_shim):
        pr.enable()
        tot = run_case(factory, t_end, repeats)
        pr.disable()
    texts = {}
    for key in ("cumulative", "tottime"):
        s = io.StringIO()
        ps = pstats.Stats(pr, stream=s).strip_dirs().sort_stats(key)
        ps.print_stats(35)
        texts[key] = s.getvalue()
    return texts, tot


# -- 3. inside solver.solve ----------------------------------------------------------------------------------------
def _copy(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple):
        return tuple(_copy(y) for y in x)
    return x


def _problem(q, v0, M, bias, damping, dt, vs, dscale, contacts, limits, gains, couplers, tol, reuse, v_start, blocks):
    """The convex problem icf_step hands to solve: (v warm start, A, r, dscale, dt, vs, pools..., tol, reuse, the
    factorization's block partition)."""
    A = M + dt * np.diag(damping)
    r = M @ v0 - dt * bias
    return (np.array(v_start, dtype=float), A, r, dscale.copy(), float(dt), float(vs), _copy(contacts),
            _copy(limits), _copy(gains), _copy(couplers), float(tol), bool(reuse), blocks.copy())


def kernel_arrays(it, state):
    """The named arrays behind a solve kernel's arguments (:func:`cenic_gym.cenic.icf_step_at`,
    :func:`~cenic_gym.cenic.icf_full_and_half` take them as two structrefs): (M, dscale, contact pool, limit pool,
    coupler pool) of the integrator's cache whose :class:`~cenic_gym.cenic.StateArgs` is ``state``, as views."""
    c = next((c for c in (it.start, it.mid) if state is c.args), None)
    if c is None:
        raise LookupError("the StateArgs of the call belongs to neither of the integrator's caches")
    return c.M, c.dscale, c.contact_pool, c.limit_pool, c.coupler_pool


def record_problems(factory, t_end, every):
    """Run the scene once with the Python-level icf_step_at / icf_full_and_half wrapped; every ``every``-th convex
    problem is copied out. Returns (problems, stats of the run)."""
    problems = []
    count = [0]
    # compile first: a kernel compiled while the module globals below are patched would see the Python wrappers
    run_case(factory, t_end, 1)
    orig_step, orig_fh = cenic_mod.icf_step_at, cenic_mod.icf_full_and_half
    sim = python_loop_sim(factory)
    it = sim.integrator

    def take():
        count[0] += 1
        return count[0] % every == 0

    def rec_step(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains, v, q_out):
        M, dscale, contacts, limits, couplers = kernel_arrays(it, state)
        prob = _problem(q, v0, M, bias, it.damping, dt, vs, dscale, contacts, limits, gains, couplers, tol, reuse,
                        v, it._blocks) if take() else None
        ok = orig_step(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains, v, q_out)
        if prob is not None:
            problems.append((prob, it._solve_stats.copy()))
        return ok

    def rec_fh(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains_full, gains_half, v_full, q_full,
               v_half, q_half):
        M, dscale, contacts, limits, couplers = kernel_arrays(it, state)
        full = _problem(q, v0, M, bias, it.damping, dt, vs, dscale, contacts, limits, gains_full, couplers, tol,
                        reuse, v0, it._blocks) if take() else None
        want_half = take()
        res = orig_fh(state, n, work, q, v0, bias, dt, vs, tol, reuse, integrate, gains_full, gains_half, v_full,
                      q_full, v_half, q_half)
        stats = it._solve_stats
        if full is not None:  # its counters were overwritten by the half step's (unless that did not run)
            problems.append((full, None if res[0] else stats.copy()))
        if want_half and res[0]:  # the call does not touch M, bias or the pools; the half step starts here
            problems.append((_problem(q, v0, M, bias, it.damping, 0.5 * dt, vs, dscale, contacts, limits, gains_half,
                                      couplers, tol, reuse, 0.5 * (v0 + v_full), it._blocks), stats.copy()))
        return res

    cenic_mod.icf_step_at, cenic_mod.icf_full_and_half = rec_step, rec_fh
    try:
        sim.advance_to(t_end)
    finally:
        cenic_mod.icf_step_at, cenic_mod.icf_full_and_half = orig_step, orig_fh
    return problems, sim.stats


def _compiled_loops():
    from numba import njit

    from cenic_gym.icf import ContactPool, CouplerPool, GainPool, LimitPool

    cgh = slv.cost_gradient_hessian
    ls = slv.exact_line_search
    csol = slv._cholesky_solve
    cvel = slv.constraint_velocities
    solve = slv.solve
    chol = slv.cholesky_within

    @njit
    def named(prob):
        """The recorded problem with its four pools named again (they were copied as plain tuples)."""
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, blocks) = prob
        return (v0, A, r, dscale, dt, vs, ContactPool(*contacts), LimitPool(*limits), GainPool(*gains),
                CouplerPool(*couplers), tol, reuse, blocks)

    @njit
    def loop_solve(prob, reps):
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, blocks) = named(prob)
        nv = v0.shape[0]
        L = np.zeros((nv, nv))
        stats = np.zeros(4, dtype=np.int64)
        for _ in range(reps):
            v = v0.copy()
            solve(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, L, blocks, stats)
        return stats

    @njit
    def loop_cgh(prob, reps):
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, blocks) = named(prob)
        nv = v0.shape[0]
        grad = np.empty(nv)
        H = np.empty((nv, nv))
        s = 0.0
        for _ in range(reps):
            s += cgh(v0, A, r, dt, vs, contacts, limits, gains, couplers, grad, H, True, blocks)
        return s, grad, H

    @njit
    def loop_chol(prob, H, reps):
        """The factorization as solve() does it: the blocks the pools can couple, then cholesky_within."""
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, blocks) = named(prob)
        s = 0.0
        L = np.empty(H.shape)
        nb = max(blocks.shape[0] - 1, 1)
        mask, shared = np.empty((nb, nb), dtype=np.bool_), np.empty(nb, dtype=np.int64)
        for _ in range(reps):
            chol(H, blocks, L, slv.coupled_blocks(contacts, couplers, blocks), mask, shared)
            s += L[0, 0]
        return s

    @njit
    def loop_csolve(L, g, blocks, mask, reps):
        s = 0.0
        for _ in range(reps):
            s += csol(L, g, blocks, mask)[0]
        return s

    @njit
    def loop_ls(prob, p, dl0, reps):
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, blocks) = named(prob)
        Jc, cols, ncols, nc = contacts.Jc, contacts.cols, contacts.ncols, contacts.n
        vc = np.empty((nc, 3))
        uc = np.empty((nc, 3))
        nv = v0.shape[0]
        grad = np.empty(nv)
        Ap = np.empty(nv)  # the line search's workspace
        quad = slv.quadratic_cost(v0, A, r, blocks, grad, Ap)
        l0 = slv.pool_costs(v0, A, dt, vs, contacts, limits, gains, couplers, quad, grad, np.empty((nv, nv)), False)
        it = 0
        s = 0.0
        for _ in range(reps):
            cvel(v0, Jc, cols, ncols, nc, vc)
            cvel(p, Jc, cols, ncols, nc, uc)
            a, k = ls(v0, p, A, r, vc, uc, dt, vs, contacts, limits, gains, couplers, l0, dl0, quad, blocks, Ap)
            s += a
            it = k
        return s, it

    return loop_solve, loop_cgh, loop_chol, loop_csolve, loop_ls


def _time_loop(fn, *a, reps):
    fn(*a, 1)  # compile / warm
    t0 = time.perf_counter()
    res = fn(*a, reps)
    return (time.perf_counter() - t0) / reps, res


def solver_breakdown(name, factory, t_end, every, reps):
    problems, st = record_problems(factory, t_end, every)
    loop_solve, loop_cgh, loop_chol, loop_csolve, loop_ls = _compiled_loops()
    tot = defaultdict(float)
    nv_seen, nc_seen = [], []
    checked = same = 0
    for prob, expected in problems:
        nc = int(prob[6][10])
        nv = prob[0].shape[0]
        t_solve, stats = _time_loop(loop_solve, prob, reps=reps)
        ni, nls, nf = int(stats[0]), int(stats[1]), int(stats[2])
        if expected is not None:  # the rebuilt problem must take the same Newton path as in the run
            checked += 1
            same += bool(np.array_equal(stats, expected))
        t_cgh, (_, grad, H) = _time_loop(loop_cgh, prob, reps=reps)
        Lf = np.zeros_like(H)
        try:
            mask = slv.cholesky(H, prob[12], Lf)
        except np.linalg.LinAlgError:
            continue
        t_chol, _ = _time_loop(loop_chol, prob, H, reps=reps)
        t_cs, _ = _time_loop(loop_csolve, Lf, -grad, prob[12], mask, reps=reps)
        t_ls = 0.0
        if ni > 0:
            p = np.linalg.solve(H, -grad)
            dl0 = float(grad @ p)
            if not dl0 < 0:
                continue
            t_ls, _ = _time_loop(loop_ls, prob, p, dl0, reps=reps)
        nv_seen.append(nv)
        nc_seen.append(nc)
        tot["n"] += 1
        tot["solve"] += t_solve
        # model of one solve: (ni+1) cost/grad/Hessian evaluations, nf Cholesky, ni triangular solves, ni line searches
        tot["cgh"] += (ni + 1) * t_cgh
        tot["chol"] += nf * t_chol
        tot["csolve"] += ni * t_cs
        tot["ls"] += ni * t_ls
        tot["ni"] += ni
        tot["nf"] += nf
        tot["nls"] += nls
        tot["t_cgh"] += t_cgh
        tot["t_chol"] += t_chol
        tot["t_cs"] += t_cs
        if ni > 0:
            tot["t_ls"] += t_ls
            tot["n_ls"] += 1
    n = max(tot["n"], 1)
    model = tot["cgh"] + tot["chol"] + tot["csolve"] + tot["ls"]
    lines = [
        f"# inside solver.solve, {name} ε={EPS:g}: {tot['n']:.0f} of {st.solves} convex problems replayed (every "
        f"{every}th Python-level icf_step_at / icf_full_and_half solve, rebuilt from their arguments), {reps} reps each; "
        f"nv = {nv_seen[0] if nv_seen else '?'}, contacts per problem: median "
        f"{np.median(nc_seen) if nc_seen else 0:.0f}, max {max(nc_seen) if nc_seen else 0}; Newton iterations per "
        f"problem {tot['ni'] / n:.2f}, factorizations {tot['nf'] / n:.2f}, line-search iterations per Newton "
        f"{tot['nls'] / max(tot['ni'], 1):.2f}; replay check: {same} of {checked} problems with in-run counters "
        f"reproduce them exactly (Newton, line search, factorizations, converged)",
        f"replayed slv.solve: {1e6 * tot['solve'] / n:.2f} us mean; in-run wall_solver per solve "
        f"{1e6 * st.wall_solver / st.solves:.2f} us (incl. A/r assembly and q integration in icf_step, the numba "
        f"dispatch of icf_full_and_half / icf_step_at and the Python of _full_and_half / _icf / the gain pools)",
        f"per call: cost+gradient+Hessian {1e6 * tot['t_cgh'] / n:.2f} us, Cholesky (slv.cholesky_within, with coupled_blocks) "
        f"{1e6 * tot['t_chol'] / n:.2f} us, two triangular solves {1e6 * tot['t_cs'] / n:.2f} us, line search "
        f"(incl. 2 constraint_velocities) {1e6 * tot['t_ls'] / max(tot['n_ls'], 1):.2f} us",
        "share of the modelled solve time (counts from each problem's own Newton/factorization counters):",
    ]
    for key, label in (("cgh", "cost + gradient + Hessian assembly"), ("chol", "Cholesky factorization"),
                       ("csolve", "triangular solves (_cholesky_solve)"), ("ls", "exact line search")):
        lines.append(f"  {label:40s} {100 * tot[key] / max(model, 1e-30):5.1f}%")
    lines.append(f"  model / replayed solve time = {model / max(tot['solve'], 1e-30):.2f}")
    return "\n".join(lines), dict(tot=tot, model=model, stats=st)


# -- 4. micro-timings of the per-step Python path -------------------------------------------------------------------
def _noop(arity):
    """A numba no-op of ``arity`` positional arguments: the dispatch cost of a call with them. (Not ``*args``: numba
    types a star-args call through Python when an argument has no type fingerprint, e.g. a structref, which costs
    ~100 µs per call and measures nothing the integrator does.)"""
    from numba import njit

    names = ", ".join(f"a{i}" for i in range(arity))
    namespace = {}
    exec(f"def noop({names}):\n    return 0", namespace)
    return njit(namespace["noop"])


def micro_timings(n=20000):
    import timeit

    noop0 = _noop(0)

    factory = CASES[1][1]
    out = ["# micro-timings of the per-step path, sphere drop (nv = 6), timeit means"]
    for label, t_state in (("in flight", 0.2), ("in contact", 0.46)):
        sim = python_loop_sim(factory)
        sim.advance_to(t_state)
        it = sim.integrator
        m, d = it.model, it.data
        q0, v0, z0, dt0 = it.q.copy(), it.v.copy(), it.z.copy(), it.dt
        t0 = it.t
        c = it.start
        it._prepare(c, q0, v0, z0, t0, dt0)
        dt = dt0
        q_full, v_full, q_half, v_half, z_half, ok = it._full_and_half(c, dt)
        mid = it.mid
        it._prepare(mid, q_half, v_half, z_half, t0 + 0.5 * dt, 0.5 * dt)
        q1, _, _, _ = it._icf(mid, 0.5 * dt, v_full)
        # arguments exactly as _prepare / _full_and_half / _icf build them
        Jw, M_upper = compute_kinematics_and_inertia(m, d, q0)
        prep_args = (q0, v0, Jw, M_upper, dt, it.vs, it._state_args(c))
        gains, _, _ = it._gain_pool(c, dt)
        gains = cenic_mod.pool_args(gains)
        fh_out = tuple(np.empty(x) for x in (q0.shape[0], v0.shape[0], q0.shape[0], v0.shape[0]))
        fh_args = (it._state_args(c), c.contacts.n, it._workspace(), c.q, c.v, c.bias, dt, it.vs, it._tol,
                   it.hessian_reuse, it._numba_integrate, gains, gains, fh_out[1], fh_out[0], fh_out[3], fh_out[2])
        v_tmp, q_tmp = np.empty(v0.shape[0]), np.empty(q0.shape[0])
        step_args = (it._state_args(mid), mid.contacts.n, it._workspace(), mid.q, mid.v, mid.bias, 0.5 * dt, it.vs,
                     it._tol, it.hessian_reuse, it._numba_integrate, gains, v_tmp, q_tmp)
        noop_prep, noop_fh, noop_step, noop1 = _noop(len(prep_args)), _noop(len(fh_args)), _noop(len(step_args)), \
            _noop(1)
        for f, a in ((noop_fh, fh_args), (noop_prep, prep_args), (noop_step, step_args)):
            f(*a)
        noop1(c.query.packed)
        it._prepare(mid, q_half, v_half, z_half, t0 + 0.5 * dt, 0.5 * dt)  # the mid state again (step_call)
        noop0()
        attempts = []
        nka = len(c.query.packed)

        def whole_step():
            it.q, it.v, it.z, it.t, it.dt = q0, v0, z0, t0, dt0
            it.start.valid = False
            r0 = it._stats.rejected
            it.step(t0 + 1.0)
            attempts.append(1 + it._stats.rejected - r0)

        def sequence():  # the calls of one attempt in step()'s order, without step()'s own Python
            qf, vf, qh, vh, zh, _ = it._full_and_half(c, dt)
            it._prepare(mid, qh, vh, zh, t0 + 0.5 * dt, 0.5 * dt)
            qn, _, _, _ = it._icf(mid, 0.5 * dt, vf)
            cenic_mod.adjust_step_size(dt, cenic_mod.max_abs_diff(qn, qf), EPS, 1e-9, 0.1)

        def sequence_with_start():
            it._prepare(c, q0, v0, z0, t0, dt)
            sequence()

        def fh_call():
            return cenic_mod.icf_full_and_half(*fh_args)

        def step_call():
            v_tmp[:] = v_full
            return cenic_mod.icf_step_at(*step_args)

        stmts = [
            ("whole step: restore x^n + CenicIntegrator.step (until accepted)", whole_step),
            ("same calls in sequence: _prepare x 2, _full_and_half, _icf, ...", sequence_with_start),
            ("  the same without the _prepare of x^n (a rejected attempt)", sequence),
            ("CenicIntegrator._prepare(cache, q, v, z, t, lookahead)", lambda: it._prepare(c, q0, v0, z0, t0, dt)),
            ("  pin.crba(model, data, q, WORLD): kinematics, J and M", lambda: pin.crba(m, d, q0, pin.Convention.WORLD)),
            ("  pin.nonLinearEffects(model, data, q, v).copy()", lambda: pin.nonLinearEffects(m, d, q0, v0).copy()),
            ("  numba prepare_kernel(...) as in the run", lambda: cenic_mod.prepare_kernel(*prep_args)),
            ("  numba no-op, same args (4 arrays, 2 floats, a structref)", lambda: noop_prep(*prep_args)),
            (f"  numba no-op, 1 arg: the packed query buffers ({nka} elements)", lambda: noop1(c.query.packed)),
            ("CenicIntegrator._full_and_half(cache, dt)", lambda: it._full_and_half(c, dt)),
            ("  numba icf_full_and_half(...) as in the run", fh_call),
            ("  numba no-op, same args (2 structrefs, 2 gain pools)", lambda: noop_fh(*fh_args)),
            ("  CenicIntegrator._gain_pool(cache, dt)", lambda: it._gain_pool(c, dt)),
            ("CenicIntegrator._icf(cache, dt, v_guess)", lambda: it._icf(mid, 0.5 * dt, v_full)),
            ("  numba icf_step_at(...) as in the run", step_call),
            ("  numba no-op, same args", lambda: noop_step(*step_args)),
            ("numba max_abs_diff(q1, q_full)", lambda: cenic_mod.max_abs_diff(q1, q_full)),
            ("adjust_step_size(...)", lambda: cenic_mod.adjust_step_size(dt, 1e-4, EPS, 1e-9, 0.1)),
            ("numba no-op, 0 args", noop0),
            ("4 x np.empty(n)", lambda: (np.empty(7), np.empty(6), np.empty(7), np.empty(6))),
            ("time.perf_counter()", time.perf_counter),
        ]
        out.append(f"## {label} (t = {t_state} s, δt = {dt0:.3g} s, contacts at x^n = {c.contacts.n}, "
                   f"at the midpoint = {mid.contacts.n})")
        res = {}
        for name, fn in stmts:
            for _ in range(50):
                fn()
            k = n // 4 if name.startswith(("whole", "same calls", "  the same")) else n
            attempts.clear()
            t = min(timeit.repeat(fn, number=k, repeat=3)) / k
            extra = (f"  ({np.mean(attempts):.2f} attempts per call)" if attempts and name.startswith("whole")
                     else "")
            out.append(f"  {name:62s} {1e6 * t:7.2f} us{extra}")
            res[name.split("(")[0].strip()] = t
        parts = (2 * res["CenicIntegrator._prepare"] + res["CenicIntegrator._full_and_half"]
                 + res["CenicIntegrator._icf"] + res["numba max_abs_diff"] + res["adjust_step_size"])
        out.append(f"  sum of the parts timed alone (2 x _prepare + _full_and_half + _icf + max_abs_diff + "
                   f"adjust_step_size): {1e6 * parts:.2f} us; in sequence they cost "
                   f"{1e6 * (res['same calls in sequence: _prepare x 2, _full_and_half, _icf, ...'] - parts):+.2f} us "
                   f"more than alone (interleaved calls slow each other down; the cause, e.g. CPU caches, is not "
                   f"isolated here)")
        it.q, it.v, it.z, it.t, it.dt = q0, v0, z0, t0, dt0
    return "\n".join(out)


def compiled_loop_timing(name, factory, t_end, repeats, trials=TRIALS):
    """The same runs on the compiled step loop (the default for these scenes): µs per attempted step, best of
    ``trials``, next to the Python loop's (leaf_timing)."""
    best = min((run_case(factory, t_end, repeats, compiled=True) for _ in range(trials)),
               key=lambda tot: tot["wall_total"])
    py = min((run_case(factory, t_end, repeats) for _ in range(trials)), key=lambda tot: tot["wall_total"])

    def per_attempt(tot):
        return 1e6 * tot["wall_total"] / max(tot["accepted"] + tot["rejected"], 1)

    return (f"## {name}: compiled step loop (cenic.advance_free_bodies), ε={EPS:g}, {t_end:g} s x {repeats}, best of "
            f"{trials}\n{per_attempt(best):.1f} µs per attempted step ({best['accepted']:.0f} accepted, "
            f"{best['rejected']:.0f} rejected); Python loop {per_attempt(py):.1f} µs (× {per_attempt(py) / per_attempt(best):.2f})")


def _part_loops():
    """numba loops that call each kernel of a compiled attempt ``reps`` times on fixed arguments (numba has no clock
    in nopython mode: the loop is timed from Python)."""
    from numba import njit

    from cenic_gym.free_bodies import free_body_dynamics

    @njit
    def dynamics(q, v, params, Jw, M, bias, reps):
        for _ in range(reps):
            free_body_dynamics(q, v, params, Jw, M, bias)

    @njit
    def prepare(q, v, Jw, M, h, vs, state, reps):
        n = 0
        for _ in range(reps):
            n, _, _ = cenic_mod.prepare_kernel(q, v, Jw, M, h, vs, state)
        return n

    @njit
    def full_and_half(state, n, work, q, v, bias, h, vs, tol, reuse, integrate, gains, reps):
        vf, qf, vh, qh = np.empty_like(v), np.empty_like(q), np.empty_like(v), np.empty_like(q)
        for _ in range(reps):
            cenic_mod.icf_full_and_half(state, n, work, q, v, bias, h, vs, tol, reuse, integrate, gains, gains, vf,
                                        qf, vh, qh)

    @njit
    def step_at(state, n, work, q, v, bias, h, vs, tol, reuse, integrate, gains, reps):
        v1, q1 = np.empty_like(v), np.empty_like(q)
        for _ in range(reps):
            v1[:] = v
            cenic_mod.icf_step_at(state, n, work, q, v, bias, h, vs, tol, reuse, integrate, gains, v1, q1)

    return dynamics, prepare, full_and_half, step_at


def compiled_attempt_parts(reps=20000, trials=TRIALS):
    """The kernels of one attempt of the compiled loop (``cenic.advance_free_bodies``), sphere drop in contact: each
    timed in a numba loop on the arguments the loop passes (best of ``trials``), µs per call."""
    dynamics, prepare, full_and_half, step_at = _part_loops()
    sim = Simulator(CASES[1][1](), accuracy=EPS)
    sim.advance_to(0.452)  # the ball in contact with the ground
    it = sim.integrator
    params, (Jw, M, bias), _ = it._free_body_work
    q, v, h = it.q.copy(), it.v.copy(), it.dt
    state, work = it._state_args(it.start), it._workspace()
    gains = cenic_mod.pool_args(it._no_gain)
    dynamics(q, v, params, Jw, M, bias, 1)
    n = prepare(q, v, Jw, M, h, it.vs, state, 1)
    flags = (it.vs, it._tol, it.hessian_reuse, it._numba_integrate, gains)
    rows = [("free_body_dynamics (one state)", dynamics, (q, v, params, Jw, M, bias)),
            ("prepare_kernel (one state)", prepare, (q, v, Jw, M, h, it.vs, state)),
            ("icf_full_and_half (two solves)", full_and_half, (state, n, work, q, v, bias, h) + flags),
            ("icf_step_at (one solve, from x^n)", step_at, (state, n, work, q, v, bias, 0.5 * h) + flags)]
    out = [f"# compiled attempt, sphere drop in contact (t = {it.t:.3f} s, {n} contact, δt = {1e3 * h:.3g} ms): "
           f"each kernel in a numba loop of {reps} calls, best of {trials}"]
    total = 0.0
    for label, loop, args in rows:
        loop(*args, 10)
        best = math.inf
        for _ in range(trials):
            t0 = time.perf_counter()
            loop(*args, reps)
            best = min(best, (time.perf_counter() - t0) / reps)
        weight = 2 if "one state" in label else 1  # two states per attempt
        total += weight * best
        out.append(f"  {label:<40s} {1e6 * best:7.2f} us")
    out.append(f"  one attempt = 2 dynamics + 2 prepare + full_and_half + step_at: {1e6 * total:.2f} us")
    return "\n".join(out)


def header():
    return (f"# profile_scenes.py, git {git_rev()}, "
            f"{time.strftime('%Y-%m-%d %H:%M %Z')}, 1-minute load average {os.getloadavg()[0]:.2f} at start, "
            f"{threads()}")


def main():
    OUT.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    summary = [header()]
    print(summary[0], flush=True)
    warm_up()
    print(f"warm-up {time.perf_counter() - t0:.2f} s", flush=True)
    for name, factory, t_end, reps in CASES:
        run_case(factory, t_end, 1)  # settle caches for this scene
        text, _ = leaf_timing(name, factory, t_end, reps)
        summary.append(text)
        text = compiled_loop_timing(name, factory, t_end, reps)
        summary.append(text)
        print(text, "\n", flush=True)
        print(text, "\n", flush=True)
        texts, tot = cprofile(name, factory, t_end, reps)
        for key, s in texts.items():
            (OUT / f"{name}_cprofile_{key}.txt").write_text(
                f"# cProfile of {name}, ε={EPS:g}, {t_end:g} s x {reps} (leaves wrapped in named shims); "
                f"wall_total under the profiler {tot['wall_total']:.3f} s\n" + s)
        print(f"cProfile ({name}, sorted by tottime):\n" + "\n".join(texts["tottime"].splitlines()[:30]) + "\n",
              flush=True)
    for name, factory, t_end, every, reps in (("clutter", scenes.clutter, 2.0, 10, 20),
                                              ("sphere_drop", CASES[1][1], 2.0, 3, 2000)):
        text, _ = solver_breakdown(name, factory, t_end, every, reps)
        summary.append(text)
        print(text, "\n", flush=True)
    text = compiled_attempt_parts()
    summary.append(text)
    print(text, "\n", flush=True)
    text = micro_timings()
    summary.append(text)
    print(text, flush=True)
    summary.append(f"# 1-minute load average at the end {os.getloadavg()[0]:.2f}; "
                   f"total {time.perf_counter() - t0:.0f} s")
    (OUT / "summary.txt").write_text("\n\n".join(summary) + "\n")
    print(f"\nwrote {OUT}/ ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
