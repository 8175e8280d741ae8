"""Compile time of the numba kernels on a fresh install, and the load time of the compiled cache.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/compile_time.py [--no-write]

Every measurement is a fresh interpreter (``--child``) with a private ``NUMBA_CACHE_DIR`` (the kernels are cached in
``<dir>/cenic_gym/<module>-<key>``, see ``cenic_gym/_numba_cache.py``), on a copy of the package (``cenic_gym/``,
``envs/``, ``assets/``) taken at the start (edits of the checkout during the run change nothing); it times
``import cenic_gym`` and a first run, then the same run again in the same process (the run time without compiling or
loading). A first run is, for each env, ``gym.make`` + ``reset`` + one ``step`` (what a new user's first run does),
and for the two engine scenes the construction and ``Simulator(scene, accuracy=1e-3).advance_to(0.1)``: the demo
clutter (20 boxes and spheres in a bin) and the standing Go1 with a joint PD controller (``scenes.go1_on_ground``).
Cold: empty cache directory (a fresh install); warm: a new interpreter on the cache the cold run left; "Go1 after
clutter" runs the Go1 scene on the clutter's cache (what is left to compile for a robot once the demo ran).

The compile breakdown of the cold clutter run comes from numba's ``numba:compile`` events (one per dispatcher and
signature, nested: a callee compiles inside its caller's type inference), exclusive of the callees, and from the
``numba:run_pass`` events (compiler passes; ``native_lowering`` includes the LLVM optimization of the kernel linked
with all its callees, which numba redoes at every level of the call tree). The LLVM column counts the instructions
of the final modules of the kernels a run compiled, all of them and those of the kernels called from Python (their
modules contain every kernel below them): the difference is the code numba generated once more per level.

Writes the ``compile-time`` section of ``benchmarks/RESULTS.md`` (``bench_common.write_section``) unless
``--no-write``; a full run takes ~12 min (five cold compiles of ~2 min each on 2 cores). Partly a timing benchmark:
the cold compile time depends on the machine's load.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench_common import REPO, provenance, write_section
T_END = 0.1  # [s] simulated by each timed advance_to
ENVS = ("CenicFranka-v0", "CenicAllegro-v0", "CenicSuction-v0", "CenicQuadruped-v0")
TOP = 8  # kernels named in the section


def _exclusive(buffer, key):
    """Exclusive durations of nested start/end events: {key(event): [seconds, count]}."""
    out = collections.defaultdict(lambda: [0.0, 0])
    stack = []
    for t, e in buffer:
        if e.is_start:
            stack.append([e, t, 0.0])
            continue
        ev, t0, inner = stack.pop()
        out[key(ev)][0] += t - t0 - inner
        out[key(ev)][1] += 1
        if stack:
            stack[-1][2] += t - t0
    return out


def _llvm_instructions(buffer):
    """LLVM instructions in the final modules of the dispatchers compiled in the ``numba:compile`` events
    ``buffer``: (all, top, top kernel names), top = the dispatchers compiled from Python (outside another's
    compilation: the kernels the run calls). Each module holds the kernel linked with every kernel it calls, so
    all − top is the code numba generated again below."""
    compiled, depth = {}, 0  # dispatcher -> compiled from Python
    for _, e in buffer:
        if e.is_start:
            compiled[e.data["dispatcher"]] = compiled.get(e.data["dispatcher"], False) or depth == 0
        depth += 1 if e.is_start else -1
    total = top = 0
    names = []
    for dispatcher, is_top in compiled.items():
        n = 0
        for cres in list(dispatcher.overloads.values()):
            n += sum(1 for line in cres.library.get_llvm_str().splitlines() if line.startswith("  "))
        total += n
        if is_top:
            top += n
            names.append("{0.__module__}.{0.__qualname__}".format(dispatcher.py_func))
    return total, top, sorted(names)


def child(scene):
    """Run in a fresh interpreter: print the timings of one scene (``clutter``, ``go1``) or env id as JSON."""
    t0 = time.perf_counter()
    from numba.core import event

    import cenic_gym
    from cenic_gym import JointPD, Simulator, scenes
    t_import = time.perf_counter() - t0

    def first_run():
        """What a user's first run does: for an env, ``gym.make`` + ``reset`` + one ``step``; for a scene, its
        construction and ``Simulator(scene, accuracy=1e-3).advance_to(0.1)``."""
        if scene in ENVS:
            import gymnasium as gym

            env = gym.make(scene)
            env.reset(seed=0)
            env.action_space.seed(0)
            env.step(env.action_space.sample())
            env.close()
            return
        if scene == "clutter":
            system, external = scenes.clutter(), []
        else:
            system = scenes.go1_on_ground()
            external = [JointPD(system, system.robot_v_indices("go1"), kp=300.0, kd=5.0,
                                q_d=system.q0[system.robot_q_indices("go1")])]
        Simulator(system, accuracy=1e-3, external=external).advance_to(T_END)

    compiles, passes = event.RecordingListener(), event.RecordingListener()
    with event.install_listener("numba:compile", compiles), event.install_listener("numba:run_pass", passes):
        t0 = time.perf_counter()
        first_run()
        t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    first_run()
    t_run = time.perf_counter() - t0
    kernels = _exclusive(compiles.buffer, lambda e: "{0.__module__}.{0.__qualname__}".format(
        e.data["dispatcher"].py_func))
    llvm, llvm_top, tops = _llvm_instructions(compiles.buffer)
    by_pass = _exclusive(passes.buffer, lambda e: e.data["name"].split(" [")[0])
    print(json.dumps(dict(import_s=t_import, first_s=t_first, run_s=t_run,
                          cache=cenic_gym._numba_cache.cache_root(),
                          package=os.path.dirname(cenic_gym.__file__), kernels=kernels, passes=by_pass,
                          llvm=llvm, llvm_top=llvm_top, tops=tops)))


def run_child(scene, cache, src):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(filter(None, (src, os.environ.get(
        "PYTHONPATH")))))
    out = subprocess.run([sys.executable, __file__, "--child", scene], env=env, capture_output=True, text=True,
                         check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["cache"].startswith(cache), res["cache"]
    assert res["package"] == os.path.join(src, "cenic_gym"), res["package"]  # the snapshot, not the checkout
    print(f"  {scene:8s} first advance {res['first_s']:7.2f} s, run {res['run_s']:.2f} s, "
          f"import {res['import_s']:.2f} s, {len(res['kernels'])} dispatchers compiled", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", choices=["clutter", "go1", *ENVS], help=argparse.SUPPRESS)
    ap.add_argument("--no-write", action="store_true", help="print only, do not update benchmarks/RESULTS.md")
    ap.add_argument("--package", default=str(REPO / "cenic_gym"),
                    help="the cenic_gym package directory to measure (default: this checkout's)")
    args = ap.parse_args()
    if args.child:
        return child(args.child)

    t_start, load0 = time.time(), os.getloadavg()[0]
    runs = {}
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as src:
        ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc")
        shutil.copytree(args.package, os.path.join(src, "cenic_gym"), ignore=ignore)
        for sub in ("envs", "assets"):  # shipped as cenic_gym.envs / .assets (pyproject's package-dir)
            shutil.copytree(os.path.join(args.package, "..", sub), os.path.join(src, "cenic_gym", sub),
                            ignore=ignore, dirs_exist_ok=True)
        plan = [("clutter cold", "clutter", a), ("clutter warm", "clutter", a), ("Go1 after clutter", "go1", a)]
        plan += [(f"{env} cold", env, None) for env in ENVS]
        for label, scene, cache in plan:
            print(label, flush=True)
            with tempfile.TemporaryDirectory() as fresh:
                runs[label] = run_child(scene, cache or fresh, src)
    body = report(runs, time.time() - t_start, load0)
    print("\n" + body)
    if not args.no_write:
        write_section("compile-time", body, "## Compile time (fresh install)")


def report(runs, total, load0):
    """The ``compile-time`` section from the children's JSON (``runs``: label -> result of :func:`child`)."""
    def sig_count(r):
        return sum(c for k, (_, c) in r["kernels"].items() if k.startswith("cenic_gym."))

    rows = ["| run | import cenic_gym | first run | same, again | compile or load (difference) | "
            "cenic_gym kernel compilations | LLVM instructions: all modules / the kernels called from Python |",
            "|---|---|---|---|---|---|---|"]
    for label, r in runs.items():
        rows.append(f"| {label} | {r['import_s']:.2f} s | {r['first_s']:.2f} s | {r['run_s']:.2f} s | "
                    f"{r['first_s'] - r['run_s']:.2f} s | {sig_count(r)} | "
                    f"{r['llvm'] / 1e3:.0f} k / {r['llvm_top'] / 1e3:.0f} k |")
    cold = runs["clutter cold"]
    env_firsts = [r["first_s"] for label, r in runs.items() if label.split()[0] in ENVS]
    total_compile = sum(s for s, _ in cold["kernels"].values())
    ours = sorted(((s, c, k) for k, (s, c) in cold["kernels"].items()), reverse=True)
    top = ", ".join(f"`{k.removeprefix('cenic_gym.')}` {s:.1f} s" for s, c, k in ours[:TOP])
    multi = [f"`{k.removeprefix('cenic_gym.')}` ({c}, {s:.1f} s)" for s, c, k in ours
             if c > 1 and k.startswith("cenic_gym.")]
    modules = collections.Counter()
    for s, _, k in ours:
        modules[k.split(".")[1] if k.startswith("cenic_gym.") else "numba's own overloads"] += s
    by_module = ", ".join(f"{m} {s:.1f} s" for m, s in modules.most_common())
    passes = sorted(((s, k) for k, (s, _) in cold["passes"].items()), reverse=True)
    pass_total = sum(s for s, _ in passes) or float("nan")
    split = ", ".join(f"{k} {s:.1f} s ({100 * s / pass_total:.0f}%)" for s, k in passes[:3])
    return "\n".join([
        *provenance("benchmarks/compile_time.py",
                    "`NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/compile_time.py`", total, load0,
                    ("numba", "llvmlite", "numpy", ("pinocchio (pin)", "pin"))),
        "Each row is a fresh interpreter with a private numba cache directory: cold = empty (a fresh install), "
        "warm = the cache the cold run left; \"Go1 after clutter\" = the standing Go1 scene on the clutter's cache. "
        "First run: for a scene its construction and `advance_to(0.1)` at ε = 1e-3; for an env `gym.make` + `reset` "
        "+ one `step`. The difference column is the first run minus the same run again in the same process: the "
        "compile (cold) or load (warm) time. Cold first runs of the envs: "
        f"{min(env_firsts):.0f}–{max(env_firsts):.0f} s (target: ≤ 30 s); each compiles the integrator, the convex "
        "solver and the contact kernels it reaches, most of the time in LLVM's lowering (below).",
        "",
        *rows,
        "",
        f"- Cold clutter run: {len(cold['kernels'])} dispatchers compiled (numba's own overloads included), "
        f"{total_compile:.1f} s in all; by module: {by_module}; by compiler pass: {split}.",
        f"- Largest exclusive compile times (without the callees compiled inside them): {top}.",
        f"- LLVM code of the cold clutter run: {cold['llvm'] / 1e3:.0f} k instructions in the final modules of all "
        f"kernels compiled; the {len(cold['tops'])} kernels called from Python "
        f"({', '.join('`' + k.removeprefix('cenic_gym.') + '`' for k in cold['tops'] if k.startswith('cenic_gym.'))}"
        f"; {sum(not k.startswith('cenic_gym.') for k in cold['tops'])} of numba's own) hold "
        f"{cold['llvm_top'] / 1e3:.0f} k of them, every kernel they call linked in. The "
        f"other {100 * (1 - cold['llvm_top'] / cold['llvm']):.0f} % is those callees compiled again as modules of "
        "their own (numba compiles each kernel it meets as a module, linked with all it calls): LLVM's work, "
        "most of the compile, is the call tree's code once per level.",
        "- cenic_gym kernels compiled for more than one signature (count, seconds): "
        + (", ".join(multi) if multi else "none") + ".",
    ])


if __name__ == "__main__":
    main()
