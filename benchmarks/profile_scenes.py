"""Where the time goes: profiles of clutter and the sphere drop at ε = 1e-3 (after a warm-up).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/profile_scenes.py

Four views, written as text under ``benchmarks/profiles/`` and summarised on stdout:

1. ``leaf_timing``: every numba kernel and Pinocchio call that the integrator makes from Python is wrapped in a
   timing shim (perf_counter, ~0.2 µs per call); per primitive: calls, total, µs per call and share of
   ``wall_total``. Everything not in a leaf is Python glue (step control, array allocation, dataclasses, timers).
2. cProfile (``-s cumtime`` and ``tottime`` listings) with the same leaves wrapped in named Python shims, because
   cProfile cannot see calls into numba dispatchers or Boost.Python functions (their time would otherwise be
   charged to the calling Python function).
3. Inside the single numba ``solver.solve`` call (clutter only): a sample of the convex problems met during the run
   is replayed in compiled loops to time its parts (cost + gradient + Hessian assembly, dense Cholesky, triangular
   solves, line search) and scaled by the run's counters.

4. Micro-timings (sphere drop): the cost of single statements of the per-step Python path (numba dispatch of a
   30-argument call, ``_prepare``, ``_icf``, ``ContactQuery.query``, small numpy expressions), via ``timeit``.
The sphere drop is short (~35 ms for 2 s), so it is repeated ``DROP_REPEATS`` times inside each profile.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

import cenic_gym.cenic as cenic_mod  # noqa: E402
import cenic_gym.contact as contact_mod  # noqa: E402
import cenic_gym.solver as slv  # noqa: E402
from cenic_gym import Simulator, scenes  # noqa: E402

OUT = Path(__file__).resolve().parent / "profiles"
EPS = 1e-3
DROP_REPEATS = 20

CASES = [
    ("clutter", scenes.clutter, 2.0, 1),
    ("sphere_drop", lambda: scenes.sphere_drop(height=1.0, mass=0.1, stiffness=1e3, dissipation=0.0), 2.0,
     DROP_REPEATS),
]

# (module, attribute, label) of every non-Python leaf the integrator calls from Python
LEAVES = [
    (pin, "computeJointJacobians", "pin.computeJointJacobians"),
    (pin, "crba", "pin.crba"),
    (pin, "nonLinearEffects", "pin.nonLinearEffects"),
    (pin, "integrate", "pin.integrate"),
    (slv, "solve", "numba solver.solve"),
    (cenic_mod, "contact_lagged_params", "numba icf.contact_lagged_params"),
    (cenic_mod, "prepare_kernel", "numba cenic.prepare_kernel"),
    (contact_mod, "joint_poses_from_q", "numba kinematics.joint_poses_from_q"),
    (contact_mod, "geometry_poses", "numba kinematics.geometry_poses"),
    (contact_mod, "geometry_speeds", "numba kinematics.geometry_speeds"),
    (contact_mod, "find_contacts", "numba contact.find_contacts"),
    (contact_mod, "contact_jacobians", "numba kinematics.contact_jacobians"),
]


def warm_up():
    Simulator(scenes.clutter(), accuracy=EPS).advance_to(0.05)
    Simulator(scenes.sphere_drop(), accuracy=EPS).advance_to(0.05)


def run_case(factory, t_end, repeats):
    """Returns summed wall_total, accepted, rejected, solves, geometry_queries over the repeats."""
    tot = defaultdict(float)
    for _ in range(repeats):
        sim = Simulator(factory(), accuracy=EPS)
        sim.advance_to(t_end)
        st = sim.stats
        for k in ("wall_total", "wall_geometry", "wall_dynamics", "wall_solver", "accepted", "rejected", "solves",
                  "geometry_queries", "newton_iters", "line_search_iters", "factorizations"):
            tot[k] += getattr(st, k)
    return tot


class Patched:
    """Replace the leaves by wrappers for the duration of a with-block."""

    def __init__(self, make):
        self.make = make

    def __enter__(self):
        self.saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in LEAVES]
        for (mod, attr, label), (_, _, fn) in zip(LEAVES, self.saved):
            setattr(mod, attr, self.make(label, fn))
        return self

    def __exit__(self, *exc):
        for mod, attr, fn in self.saved:
            setattr(mod, attr, fn)


# -- 1. leaf timing -----------------------------------------------------------------------------------------------
def leaf_timing(name, factory, t_end, repeats):
    acc = defaultdict(lambda: [0, 0.0])
    pc = time.perf_counter

    def make(label, fn):
        slot = acc[label]

        def timed(*a, **k):
            t0 = pc()
            try:
                return fn(*a, **k)
            finally:
                slot[0] += 1
                slot[1] += pc() - t0
        return timed

    base = run_case(factory, t_end, repeats)  # unpatched, for the overhead of the shims
    with Patched(make):
        tot = run_case(factory, t_end, repeats)
    wall = tot["wall_total"]
    lines = [f"# {name}, ε={EPS:g}, {t_end:g} s simulated x {repeats}: wall_total {wall:.4f} s with shims "
             f"({base['wall_total']:.4f} s without), accepted {tot['accepted']:.0f}, rejected {tot['rejected']:.0f}, "
             f"solves {tot['solves']:.0f}, geometry queries {tot['geometry_queries']:.0f}",
             f"{'primitive':40s} {'calls':>8s} {'total s':>9s} {'us/call':>9s} {'share':>7s}"]
    leaf_sum = 0.0
    rows = []
    for label, (n, t) in sorted(acc.items(), key=lambda kv: -kv[1][1]):
        leaf_sum += t
        rows.append((label, n, t))
        lines.append(f"{label:40s} {n:8d} {t:9.4f} {1e6 * t / max(n, 1):9.1f} {100 * t / wall:6.1f}%")
    glue = wall - leaf_sum
    lines.append(f"{'Python glue (wall_total - leaves)':40s} {'':8s} {glue:9.4f} {'':9s} {100 * glue / wall:6.1f}%")
    lines.append(f"per accepted step: {1e6 * wall / tot['accepted']:.1f} us total, "
                 f"{1e6 * glue / tot['accepted']:.1f} us Python glue; per attempted step "
                 f"{1e6 * glue / (tot['accepted'] + tot['rejected']):.1f} us glue; per solve "
                 f"{1e6 * tot['wall_solver'] / tot['solves']:.1f} us (wall_solver); per geometry query "
                 f"{1e6 * tot['wall_geometry'] / tot['geometry_queries']:.1f} us (wall_geometry), "
                 f"{1e6 * tot['wall_dynamics'] / tot['geometry_queries']:.1f} us (wall_dynamics)")
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
def solver_breakdown(factory, t_end, every=10):
    from numba import njit

    samples = []
    count = [0]
    orig = slv.solve

    def recording(*a):
        count[0] += 1
        rec = count[0] % every == 0
        if rec:
            a0 = tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a)
        orig(*a)
        if rec:
            samples.append((a0, a[-1].copy()))

    slv.solve = recording
    try:
        sim = Simulator(factory(), accuracy=EPS)
        sim.advance_to(t_end)
    finally:
        slv.solve = orig
    st = sim.stats

    cgh = slv.cost_gradient_hessian
    ls = slv.exact_line_search
    csol = slv._cholesky_solve
    cvel = slv.constraint_velocities

    # numba has no wall clock in nopython mode, so time each part as its own compiled loop.
    @njit
    def loop_solve(args, reps):
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, L, stats) = args
        for _ in range(reps):
            v = v0.copy()
            slv.solve(v, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, L, stats)
        return stats[0]

    @njit
    def loop_cgh(args, reps):
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, L, stats) = args
        nv = v0.shape[0]
        grad = np.empty(nv)
        H = np.empty((nv, nv))
        s = 0.0
        for _ in range(reps):
            s += cgh(v0, A, r, dt, vs, contacts, limits, gains, couplers, grad, H, True)
        return s, grad, H

    @njit
    def loop_chol(H, reps):
        s = 0.0
        for _ in range(reps):
            L = np.linalg.cholesky(H)
            s += L[0, 0]
        return s

    @njit
    def loop_csolve(L, g, reps):
        s = 0.0
        for _ in range(reps):
            s += csol(L, g)[0]
        return s

    @njit
    def loop_ls(args, p, dl0, reps):
        (v0, A, r, dscale, dt, vs, contacts, limits, gains, couplers, tol, reuse, L, stats) = args
        Jc, cols, ncols, nc = contacts[0], contacts[1], contacts[2], contacts[10]
        vc = np.empty((nc, 3))
        uc = np.empty((nc, 3))
        it = 0
        s = 0.0
        for _ in range(reps):
            cvel(v0, Jc, cols, ncols, nc, vc)
            cvel(p, Jc, cols, ncols, nc, uc)
            a, k = ls(v0, p, A, r, vc, uc, dt, vs, contacts, limits, gains, couplers, dl0)
            s += a
            it = k
        return s, it

    def timeit(fn, *a, reps):
        fn(*a, 1)  # compile / warm
        t0 = time.perf_counter()
        res = fn(*a, reps)
        return (time.perf_counter() - t0) / reps, res

    tot = defaultdict(float)
    nv_seen, nc_seen = [], []
    for args, stats_after in samples:
        args = tuple(args)
        nc = int(args[6][10])
        nv = args[0].shape[0]
        nv_seen.append(nv)
        nc_seen.append(nc)
        reps = 20
        t_solve, _ = timeit(loop_solve, args, reps=reps)
        t_cgh, (_, grad, H) = timeit(loop_cgh, args, reps=reps)
        try:
            Lf = np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            continue
        t_chol, _ = timeit(loop_chol, H, reps=reps)
        t_cs, _ = timeit(loop_csolve, Lf, -grad, reps=reps)
        p = np.linalg.solve(H, -grad)
        dl0 = float(grad @ p)
        if not dl0 < 0:
            continue
        t_ls, (_, ls_it) = timeit(loop_ls, args, p, dl0, reps=reps)
        ni, nls, nf = int(stats_after[0]), int(stats_after[1]), int(stats_after[2])
        tot["n"] += 1
        tot["solve"] += t_solve
        # model of one solve: (ni+1) cost/grad/Hessian evaluations, nf Cholesky, ni triangular solves, ni line searches
        tot["cgh"] += (ni + 1) * t_cgh
        tot["chol"] += nf * t_chol
        tot["csolve"] += ni * t_cs
        tot["ls"] += ni * t_ls
        tot["t_cgh"] += t_cgh
        tot["t_chol"] += t_chol
        tot["t_cs"] += t_cs
        tot["t_ls"] += t_ls
        tot["ls_it"] += ls_it
    n = max(tot["n"], 1)
    model = tot["cgh"] + tot["chol"] + tot["csolve"] + tot["ls"]
    lines = [
        f"# inside solver.solve, clutter ε={EPS:g}: {len(samples)} of {st.solves} solves replayed (every {every}th); "
        f"nv = {nv_seen[0] if nv_seen else '?'}, contacts per solve: median {np.median(nc_seen):.0f}, "
        f"max {max(nc_seen) if nc_seen else 0}",
        f"replayed full solve: {1e6 * tot['solve'] / n:.1f} us mean (in-run wall_solver per solve "
        f"{1e6 * st.wall_solver / st.solves:.1f} us incl. pin.integrate and Python)",
        f"per call: cost+gradient+Hessian {1e6 * tot['t_cgh'] / n:.1f} us, dense Cholesky (np.linalg.cholesky) "
        f"{1e6 * tot['t_chol'] / n:.1f} us, two triangular solves {1e6 * tot['t_cs'] / n:.1f} us, line search "
        f"(incl. 2 constraint_velocities) {1e6 * tot['t_ls'] / n:.1f} us",
        "share of the modelled solve time (counts from each sample's own Newton/factorization counters):",
    ]
    for key, label in (("cgh", "cost + gradient + Hessian assembly"), ("chol", "dense Cholesky factorization"),
                       ("csolve", "triangular solves (_cholesky_solve)"), ("ls", "exact line search")):
        lines.append(f"  {label:40s} {100 * tot[key] / model:5.1f}%")
    lines.append(f"  model / replayed solve time = {model / tot['solve']:.2f}")
    return "\n".join(lines), dict(tot=tot, model=model)


# -- 4. micro-timings of the per-step Python path -------------------------------------------------------------------
def micro_timings(n=20000):
    import timeit

    from numba import njit

    factory = CASES[1][1]
    out = ["# micro-timings of the per-step Python path, sphere drop (nv = 6), timeit means"]
    for label, t_state in (("in flight", 0.2), ("in contact", 0.46)):
        sim = Simulator(factory(), accuracy=EPS)
        sim.advance_to(t_state)
        it = sim.integrator
        rec = {}
        orig = slv.solve

        def capture(*a):
            rec["a"] = a
            return orig(*a)

        slv.solve = capture
        try:
            it.start.valid = False
            it.step(t_state + 1.0)
        finally:
            slv.solve = orig
        a = rec["a"]
        c = it.start
        m, d = it.model, it.data
        q, v = it.q.copy(), it.v.copy()
        v0 = a[0].copy()

        @njit
        def noop(*args):
            return 0

        noop(*a)

        def solve_call():
            a[0][:] = v0
            orig(*a)

        Jw = pin.computeJointJacobians(m, d, q)
        stmts = [
            ("CenicIntegrator.step (until accepted)", lambda: (setattr(it.start, "valid", False),
                                                                       it.step(it.t + it.dt))),
            ("CenicIntegrator._prepare", lambda: it._prepare(c, q, v, it.z, 0.0, 0.01)),
            ("  ContactQuery.query", lambda: c.query.query(q, v, d, Jw, 0.01)),
            ("CenicIntegrator._icf", lambda: it._icf(c, 0.01, v)),
            ("  numba solver.solve call (as in the run)", solve_call),
            ("  numba dispatch of a no-op with the same 30 args", lambda: noop(*a)),
            ("  cache.M @ cache.v - dt * nle", lambda: c.M @ c.v - 0.01 * c.nle),
            ("  self.damping.any()", lambda: it.damping.any()),
            ("  pin.integrate(model, q, dt * v)", lambda: pin.integrate(m, q, 0.01 * v)),
            ("  np.array(v_guess, dtype=float)", lambda: np.array(v, dtype=float)),
            ("step: float(np.max(np.abs(q1 - q_full)))", lambda: float(np.max(np.abs(q - q)))),
            ("time.perf_counter()", time.perf_counter),
        ]
        out.append(f"## {label} (t = {t_state} s, contacts = {c.contacts.n})")
        for name, fn in stmts:
            fn()
            t = timeit.timeit(fn, number=n) / n
            out.append(f"  {name:52s} {1e6 * t:7.2f} us")
    return "\n".join(out)


def main():
    OUT.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    warm_up()
    print(f"warm-up {time.perf_counter() - t0:.2f} s", flush=True)
    summary = []
    for name, factory, t_end, reps in CASES:
        run_case(factory, t_end, 1)  # settle caches for this scene
        text, _ = leaf_timing(name, factory, t_end, reps)
        summary.append(text)
        print(text, "\n", flush=True)
        texts, tot = cprofile(name, factory, t_end, reps)
        for key, s in texts.items():
            (OUT / f"{name}_cprofile_{key}.txt").write_text(
                f"# cProfile of {name}, ε={EPS:g}, {t_end:g} s x {reps} (leaves wrapped in named shims); "
                f"wall_total under the profiler {tot['wall_total']:.3f} s\n" + s)
        print(f"cProfile ({name}, sorted by tottime):\n" + "\n".join(texts["tottime"].splitlines()[:30]) + "\n",
              flush=True)
    text, _ = solver_breakdown(scenes.clutter, 2.0)
    summary.append(text)
    print(text, "\n", flush=True)
    text = micro_timings()
    summary.append(text)
    print(text, flush=True)
    (OUT / "summary.txt").write_text("\n\n".join(summary) + "\n")
    print(f"\nwrote {OUT}/ ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
