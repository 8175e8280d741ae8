"""Where one env step goes: a profile of every registered env at ε = 1e-3, in the form of the Profile section.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/profile_envs.py [--steps 200] [--trials 3] [--top 6]
                                                   [--env ID ...] [--clock cpu|wall] [--out DIR] [--no-write]

For every Gymnasium id starting with ``Cenic`` (``env_throughput.cenic_ids``), with the task's scripted policy where
``env_throughput.SCRIPTED`` has one and with seeded random actions (both, where it has one: the speed under each, the
speed targets are set for both): ``gym.make(id, accuracy=1e-3)``, a reset and
10 untimed warm-up steps, one untimed pass, then ``--trials`` times (each from ``reset(seed=1000)``: the same
trajectory every time, the integrator is deterministic) ``--steps`` env steps without shims and with the timing
shims of ``profile_scenes.py`` (``profile_scenes.LEAVES``: every Pinocchio and numba call the integrator makes from
Python, plus ``ContactQuery.sync_joint_poses``); the run of smallest ``env.step`` time of each kind is kept. Then one
more run under cProfile (the leaves as named shims; the policy's own calls included).

Times are this thread's CPU time by default (``--clock cpu``, ``time.thread_time``): the machine is shared by several
agents (load average up to 5× its 2 cores), and wall time there mostly measures waiting for a core. Per env step:
``env.step`` (the policy excluded) = env layer (action mapping, observation, reward terms, ``evaluate()``, Gymnasium
wrappers and the bookkeeping of ``Simulator.advance_to``) + the integrator (``CenicIntegrator.advance_to``) = the
leaves + the controllers' linearization (``ExternalSystems.linearize``: Python with Pinocchio / numba inside) + the
integrator's own Python glue (the rest: step control, ``_prepare`` / ``_full_and_half`` / ``_icf`` / ``_gain_pool``
bookkeeping, timers). Writes the ``profile`` section of ``benchmarks/RESULTS.md`` (per env: ``env.step``, attempts,
and the share of each part above; the top cProfile items), and into ``--out`` (default ``benchmarks/profiles/``)
``envs_summary.txt`` (the same in µs, with calls per attempt) and ``env_<id>_cprofile_tottime.txt``;
``--no-write`` prints only. A full run takes about 1 minute; CPU time resists load, but run it on an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import pstats  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402

import cenic_gym.cenic as cenic_mod  # noqa: E402
import cenic_gym.contact as contact_mod  # noqa: E402
import cenic_gym.external as ext_mod  # noqa: E402
import env_throughput as et  # noqa: E402
import profile_scenes as ps  # noqa: E402
from bench_common import git_rev, provenance, threads, write_section  # noqa: E402

EPS = 1e-3
EPS_TEXT = f"{EPS:.0e}".replace("e-0", "e-")  # "1e-3"
LEAVES = ps.LEAVES + [(contact_mod.ContactQuery, "sync_joint_poses", "ContactQuery.sync_joint_poses"),
                      (cenic_mod, "attempt_from_start", "numba cenic.attempt_from_start"),
                      (cenic_mod, "attempt_from_mid", "numba cenic.attempt_from_mid")]
COAL = {"ContactQuery.coal_fallback", "numba cenic.state_terms (coal path)"}
# the kernels of an attempt: the Python loop's calls, and the articulated loop's two (which hold the same work)
KERNELS = {"numba cenic.icf_full_and_half", "numba cenic.icf_step_at", "numba cenic.prepare_kernel",
           "numba cenic.max_abs_diff", "numba cenic.attempt_from_start", "numba cenic.attempt_from_mid"}


class Patched(ps.Patched):
    """profile_scenes.Patched over this script's leaves, plus two gates: the integrator's ``advance_to`` adds 1 to
    ``gate[0]`` and ``ExternalSystems.linearize`` 10 while they run (and both record their time in ``acc``), so that
    a leaf counts only when the integrator calls it itself (gate == 1): Pinocchio calls of the env layer (Allegro's
    observation) and of the controllers (the suction gripper's kinematics, inside the linearization row) are not
    counted twice."""

    def __init__(self, make, gate, acc, clock):
        super().__init__(make)
        self.gate, self.acc, self.clock = gate, acc, clock

    def __enter__(self):
        leaves = LEAVES + [(cenic_mod.CenicIntegrator, "advance_to", 1), (ext_mod.ExternalSystems, "linearize", 10),
                           (ext_mod.ExternalSystems, "linearize_full_and_half", 10)]
        self.saved = [(ns, attr, getattr(ns, attr)) for ns, attr, _ in leaves]
        for (ns, attr, label), (_, _, fn) in zip(leaves, self.saved):
            setattr(ns, attr, self.make(label, fn) if isinstance(label, str) else
                    _gating(fn, self.gate, label, self.acc["integrator" if label == 1 else "linearize"], self.clock))
        return self


def _gating(fn, gate, k, slot, clock):
    """Adds k to the gate while ``fn`` runs and records its calls and time in ``slot``, unless a call with the same
    gate encloses it (``linearize_full_and_half`` may call ``linearize``: counted once)."""
    def gated(*a, **kw):
        outermost = gate[0] < k or k == 1
        gate[0] += k
        t0 = clock()
        try:
            return fn(*a, **kw)
        finally:
            if outermost:
                slot[0] += 1
                slot[1] += clock() - t0
            gate[0] -= k
    return gated


def _gated_timer(fn, slot, gate, clock):
    def timed(*a, **k):
        if gate[0] != 1:
            return fn(*a, **k)
        t0 = clock()
        try:
            return fn(*a, **k)
        finally:
            slot[0] += 1
            slot[1] += clock() - t0
    return timed


def policies_of(env_id):
    """[(policy name, policy factory)]: the task's scripted policy where it has one, then seeded random actions."""
    random = ("random", lambda e: et.RandomPolicy(e, 0))
    if env_id in et.SCRIPTED:
        return [("scripted", et.load(et.SCRIPTED[env_id])), random]
    return [random]


def run(env, make_policy, steps, clock, seed0=1000):
    """``steps`` env steps from ``reset(seed=seed0)`` (episodes restart untimed); returns (env.step time by
    ``clock``, accepted substeps, rejected attempts, env steps)."""
    policy = make_policy(env)
    obs, _ = env.reset(seed=seed0)
    policy.reset()
    total, sub, rej, episode = 0.0, 0, 0, 0
    for k in range(steps):
        action = policy(obs)
        t0 = clock()
        obs, _, term, trunc, info = env.step(action)
        total += clock() - t0
        sub += info["sim"]["substeps"]
        rej += info["sim"]["rejected"]
        if (term or trunc) and k + 1 < steps:
            episode += 1
            obs, _ = env.reset(seed=seed0 + episode)
            policy.reset()
    return total, sub, rej, steps


def timed_runs(env, make, steps, trials, clock):
    """The fastest of ``trials`` runs without shims and the fastest with the leaf shims: ((env.step time, accepted
    substeps, rejected attempts, env steps) without shims, the same with shims, {leaf: [calls, time]})."""
    plain, shimmed = None, None
    for _ in range(trials):
        r = run(env, make, steps, clock)
        if plain is None or r[0] < plain[0]:
            plain = r
        acc = defaultdict(lambda: [0, 0.0])
        gate = [0]
        with Patched(lambda label, fn: _gated_timer(fn, acc[label], gate, clock), gate, acc, clock):
            r = run(env, make, steps, clock)
        if shimmed is None or r[0] < shimmed[0][0]:
            shimmed = (r, dict(acc))
    return plain, shimmed[0], shimmed[1]


def parts(shimmed, acc):
    """Per env step [s]: env.step with shims, the integrator and its parts (the leaves, the linearization, the glue
    that is left), the env layer; calls per attempt."""
    step_time, sub, rej, n = shimmed
    attempts = sub + rej
    leaf = {label: t for label, (_, t) in acc.items()}
    calls = {label: c for label, (c, _) in acc.items()}
    out = dict(steps=n, attempts=attempts / n, rejected=rej / n, step=step_time / n, total=leaf["integrator"] / n,
               lin=leaf.get("linearize", 0.0) / n,
               fh=leaf.get("numba cenic.icf_full_and_half", 0.0) / n, icf=leaf.get("numba cenic.icf_step_at", 0.0) / n,
               prep=leaf.get("numba cenic.prepare_kernel", 0.0) / n,
               kernels=sum(t for label, t in leaf.items() if label in KERNELS) / n,
               pin=sum(t for label, t in leaf.items() if label in ps.PIN_LEAVES) / n,
               coal=sum(t for label, t in leaf.items() if label in COAL) / n,
               sync=leaf.get("ContactQuery.sync_joint_poses", 0.0) / n,
               err=leaf.get("numba cenic.max_abs_diff", 0.0) / n,
               lin_calls=calls.get("linearize", 0) / max(attempts, 1),
               prep_calls=calls.get("numba cenic.prepare_kernel", 0) / max(attempts, 1))
    out["glue"] = out["total"] - (out["kernels"] + out["pin"] + out["coal"] + out["sync"] + out["lin"])
    out["env_layer"] = out["step"] - out["total"]
    return out


def profile_env(env_id, kind, make, steps, trials, top, clock):
    """Leaf timing and cProfile of ``steps`` env steps of one env under one policy (``kind``, its factory ``make``),
    on the step loop it runs by default and, for an env on the articulated loop, again on the Python step loop
    (``CenicIntegrator.step``, where the solves and the contact queries are separate calls). Returns (dict of
    per-env-step numbers [s], cProfile text)."""
    env = gym.make(env_id, accuracy=EPS)
    integrator = env.unwrapped.sim.integrator
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(10):
        env.step(env.action_space.sample())
    run(env, make, steps, clock)  # settle caches on this trajectory
    plain, shimmed, acc = timed_runs(env, make, steps, trials, clock)
    out = dict(env=env_id, policy=kind, loop="articulated" if integrator._articulated_loop else "Python",
               step_plain=plain[0] / plain[3], **parts(shimmed, acc))
    pr = cProfile.Profile(clock)
    with Patched(ps.named_shim, [0], defaultdict(lambda: [0, 0.0]), clock):
        pr.enable()
        run(env, make, steps, clock)
        pr.disable()
    if integrator._articulated_loop:  # the same trajectory on the Python loop: the kernels' split
        integrator._articulated_loop = False
        run(env, make, steps, clock)  # its kernels' own specializations loaded
        plain, shimmed, acc = timed_runs(env, make, steps, trials, clock)
        integrator._articulated_loop = True
        out["python"] = dict(step_plain=plain[0] / plain[3], **parts(shimmed, acc))
    else:
        out["python"] = {k: out[k] for k in ("step_plain", "step", "total", "fh", "icf", "prep", "kernels", "pin",
                                             "coal", "sync", "err", "lin", "glue", "env_layer", "attempts",
                                             "rejected", "lin_calls", "prep_calls")}
    s = io.StringIO()
    pstats.Stats(pr, stream=s).strip_dirs().sort_stats("tottime").print_stats(top + 12)
    stats = pstats.Stats(pr)
    prof_total = sum(v[2] for v in stats.stats.values())  # Σ self time = the profiled time
    rows = sorted(((v[2], k) for k, v in stats.stats.items()), reverse=True)[:top]
    out["top"] = [(f"{os.path.basename(k[0])}:{k[1]}({k[2]})" if k[0] != "~" else k[2], t / prof_total)
                  for t, k in rows]
    env.close()
    return out, s.getvalue()


ROWS = [("env layer (action, observation, reward, `evaluate()`, wrappers, `Simulator.advance_to` bookkeeping)",
         "env_layer"),
        ("integrator `CenicIntegrator.advance_to`, of which:", "total"),
        ("numba `icf_full_and_half` (full + first half step: 2 solves)", "fh"),
        ("numba `icf_step_at` (second half step: 1 solve)", "icf"),
        ("numba `prepare_kernel` (joint + geometry poses, broad + narrow phase, Jacobians, lagged terms)", "prep"),
        ("Pinocchio `crba` (WORLD: kinematics, Jacobians, M) + `nonLinearEffects` (+ `integrate`)", "pin"),
        ("controllers' linearization (`ExternalSystems.linearize`, `linearize_full_and_half`)", "lin"),
        ("coal pairs (`ContactQuery.coal_fallback` + `state_terms`)", "coal"),
        ("`ContactQuery.sync_joint_poses` (Python copy of Pinocchio poses)", "sync"),
        ("numba `max_abs_diff`", "err"),
        ("integrator Python glue (`advance_to` − the rows above)", "glue")]


def tables(results):
    """The summary file's tables: each env on its default loop, then the Python step loop's split."""
    head = "| per env step | " + " | ".join(f"{r['env']} ({r['policy']})" for r in results) + " |"
    lines = ["Default loop (articulated: Pinocchio around two kernels per attempt; Python: `CenicIntegrator.step`)",
             "", head, "|---|" + "---|" * len(results)]
    lines.append("| loop; `env.step` without shims / with shims [µs] | " + " | ".join(
        f"{r['loop']}; **{1e6 * r['step_plain']:.0f}** / {1e6 * r['step']:.0f}" for r in results) + " |")
    lines.append("| attempts (rejected) per env step; µs per attempt (integrator) | " + " | ".join(
        f"{r['attempts']:.2f} ({r['rejected']:.2f}); {1e6 * r['total'] / r['attempts']:.0f}" for r in results) + " |")
    for label, key in DEFAULT_ROWS:
        lines.append(f"| {label} | " + " | ".join(_cell(r, key) for r in results) + " |")
    py = [r["python"] for r in results]
    lines += ["", "Python step loop (`CenicIntegrator.step`), the same trajectories", "", head,
              "|---|" + "---|" * len(results)]
    lines.append("| `env.step` without shims / with shims [µs] | " + " | ".join(
        f"**{1e6 * p['step_plain']:.0f}** / {1e6 * p['step']:.0f}" for p in py) + " |")
    lines.append("| attempts (rejected) per env step; µs per attempt (integrator); state evaluations and "
                 "linearizations per attempt | " + " | ".join(
                     f"{p['attempts']:.2f} ({p['rejected']:.2f}); {1e6 * p['total'] / p['attempts']:.0f}; "
                     f"{p['prep_calls']:.2f}, {p['lin_calls']:.2f}" for p in py) + " |")
    for label, key in ROWS:
        lines.append(f"| {label} | " + " | ".join(_cell(p, key) for p in py) + " |")
    top = ["", "| env | top self-time items under cProfile, default loop (share of the profiled time) |", "|---|---|"]
    for r in results:
        top.append(f"| {r['env']} ({r['policy']}) | " + ", ".join(f"`{name}` {100 * share:.0f} %"
                                                                  for name, share in r["top"]) + " |")
    return "\n".join(lines + top)


def _cell(r, key):
    return f"{1e6 * r[key]:.0f} µs ({100 * r[key] / r['step']:.0f} %)" if abs(r[key]) >= 0.5e-6 else "–"


DEFAULT_ROWS = [("env layer", "env_layer"), ("integrator `CenicIntegrator.advance_to`, of which:", "total"),
                ("numba kernels (solves, contact queries, error; articulated loop: also the joint PD's laws)",
                 "kernels"),
                ("Pinocchio `crba` + `nonLinearEffects`", "pin"),
                ("controllers' linearization (Python loop)", "lin"), ("coal pairs", "coal"),
                ("`sync_joint_poses`", "sync"), ("integrator Python glue (the rest)", "glue")]


# the section's compact table: (column, keys summed), shares of `env.step` with shims on the default loop; a column
# that is empty for every env is left out
SHARES = [("env layer", ("env_layer",)), ("numba kernels (of which the 3 solves)", ("kernels",)),
          ("Pinocchio", ("pin",)), ("controllers' linearization", ("lin",)), ("coal pairs", ("coal",)),
          ("`sync_joint_poses`", ("sync",)), ("integrator glue", ("glue",))]


def solves_share(r):
    """The 3 solves' share of ``env.step``: the articulated loop's kernels split as the Python loop's same calls
    (solves : queries : error)."""
    p = r["python"]
    return r["kernels"] * (p["fh"] + p["icf"]) / p["kernels"] / r["step"]


def section_table(results):
    """One row per env: its loop, ``env.step`` time on it and on the Python loop, attempts, and the share of each
    part (SHARES) of ``env.step`` on its loop."""
    cols = [(name, keys) for name, keys in SHARES if any(sum(r[k] for k in keys) >= 0.5e-6 for r in results)]
    lines = ["| env (policy) | loop | `env.step` [µs] | on the Python loop [µs] | attempts (rejected) / step | "
             "numba kernels [µs / env step] | " + " | ".join(name for name, _ in cols) + " |",
             "|---|" + "---|" * (5 + len(cols))]
    for r in results:
        cells = [f"{100 * sum(r[k] for k in keys) / r['step']:.0f} %" for _, keys in cols]
        cells[[name for name, _ in cols].index("numba kernels (of which the 3 solves)")] += \
            f" ({100 * solves_share(r):.0f} %)"
        lines.append(f"| {r['env']} ({r['policy']}) | {r['loop']} | **{1e6 * r['step_plain']:.0f}** | "
                     f"{1e6 * r['python']['step_plain']:.0f} | {r['attempts']:.2f} ({r['rejected']:.2f}) | "
                     f"{1e6 * r['kernels'] * r['step_plain'] / r['step']:.0f} | " + " | ".join(cells) + " |")
    return lines


def section(results, args, clock, runtime, load0):
    """The Markdown body of the ``profile`` section."""
    command = f"`python benchmarks/profile_envs.py {shlex.join(sys.argv[1:])}`".replace(" `", "`")
    return "\n".join([
        *provenance("benchmarks/profile_envs.py", command, runtime, load0, ("numba", ("pinocchio (pin)", "pin"))),
        f"ε = {EPS_TEXT}; the task's scripted policy where it has one, and seeded random actions for every env; "
        f"{args.steps} env steps from `reset(seed=1000)`, best of {args.trials}, {args.clock} time "
        f"(`{clock.__name__}`). Numba kernels [µs / env step]: their share below of `env.step` without shims, the "
        "floor that Python and Pinocchio work cannot lower. `env.step` without timing shims, on the env's default "
        "loop (articulated: each attempt is Pinocchio around two kernels; "
        "Python: `CenicIntegrator.step`, for controllers other than one joint PD) and on the Python loop (the same "
        "steps bit for bit). Shares: of `env.step` on the default loop with shims on every Pinocchio and numba call "
        "the integrator makes; the articulated loop's kernels are split into the solves as the Python loop's calls "
        "are. "
        "Env layer: action, observation, reward, `evaluate()`, wrappers; glue: the rest of "
        "`CenicIntegrator.advance_to`. Both loops in µs, with calls per attempt: "
        "`benchmarks/profiles/envs_summary.txt` (with the top self-time items under cProfile); cProfile: "
        "`env_<id>_cprofile_tottime.txt`.",
        "",
        *section_table(results),
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="env steps per run (default 200)")
    ap.add_argument("--trials", type=int, default=3, help="runs with and without shims, the fastest kept (default 3)")
    ap.add_argument("--top", type=int, default=6, help="cProfile items listed per env (default 6)")
    ap.add_argument("--env", action="append", help="only these ids (repeatable; default: every Cenic* id)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: time.thread_time (this thread's CPU time: what a shared, overloaded machine does not "
                         "inflate); wall: time.perf_counter (default cpu)")
    ap.add_argument("--out", default=str(ps.OUT), help="folder of the summary and cProfile files (default "
                                                        "benchmarks/profiles)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md and --out alone")
    args = ap.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    out = Path(args.out)
    if not args.no_write:
        out.mkdir(exist_ok=True)
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    head = (f"# profile_envs.py, git {git_rev()}, {time.strftime('%Y-%m-%d %H:%M %Z')}, 1-minute load average "
            f"{load0:.2f} at start, {threads()}, ε = {EPS:g}, {args.steps} env steps per run, best of "
            f"{args.trials}, clock {args.clock} ({clock.__name__})")
    print(head, flush=True)
    results = []
    runs = [(env_id, n, kind, make) for env_id in args.env or et.cenic_ids()
            for n, (kind, make) in enumerate(policies_of(env_id))]
    for env_id, n, kind, make in runs:
        res, text = profile_env(env_id, kind, make, args.steps, args.trials, args.top, clock)
        results.append(res)
        if not args.no_write:  # the env's first policy keeps the plain name
            (out / f"env_{env_id}{'_' + kind if n else ''}_cprofile_tottime.txt").write_text(
                f"# cProfile ({clock.__name__}) of {env_id} ({res['policy']}), ε={EPS:g}, {args.steps} env steps and "
                f"the policy's calls (leaves as named shims)\n" + text)
        print(f"{env_id} ({kind}): {1e6 * res['step_plain']:.0f} µs per env step, {res['attempts']:.2f} attempts",
              flush=True)
    text = tables(results)
    tail = (f"# 1-minute load average at the end {os.getloadavg()[0]:.2f}; total {time.perf_counter() - t0:.0f} s; "
            f"a timing shim costs {1e6 * ps.shim_cost():.2f} µs of wall time per call (no-op)")
    body = section(results, args, clock, time.perf_counter() - t0, load0)
    print("\n" + text + "\n\n" + tail + "\n\n" + body)
    if not args.no_write:
        (out / "envs_summary.txt").write_text("\n\n".join([head, text, tail]) + "\n")
        write_section("profile", body, "## Profile: where an env step goes")


if __name__ == "__main__":
    main()
