"""numba's reference counts per env step: how many atomic increments (``NRT_incref``) an env step makes, and which
compiled function makes them.

    python benchmarks/refcounts.py [--envs CenicQuadruped-v0 CenicAllegro-v0] [--scenes sphere_drop] [--steps 3]
                                   [--top 12] [--no-write]

Why: numba increments and decrements the reference count of every array it passes, views or reads from a struct,
each an atomic operation; `perf` put the pair at 36 % of a Go1 step before the pruning work in docs/performance.md
("The convex solve": what lets LLVM's pruning remove a pair, and what does not). This counts them exactly instead
of sampling.

How: per env a child interpreter with an empty numba cache (so every kernel is compiled in it and its code library
names its functions) runs ``gym.make``, ``reset(seed=1000)`` and 50 steps of seeded random actions (a scene of
:mod:`cenic_gym.scenes`: its ``Simulator`` at ε = 1e-3 to t = 0.5 s), writes the address of every compiled
function, then waits; ``gdb`` (needed on the PATH; Linux) attaches to it and counts the return address of every call
of ``NRT_incref`` while the child runs ``--steps`` more env steps (a scene: one more simulated second) and exits. Each
return address is charged to the compiled function it lies in. Decrements are as many (every increment is
paired), so they are not counted. The code runs under the breakpoint: the counts are exact, the time is not
measured. Writes the RESULTS.md section ``refcounts``.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench_common import provenance, write_section  # noqa: E402

GDB_SCRIPT = r'''
import collections, json, os
import gdb
counts = collections.Counter()
class Count(gdb.Breakpoint):
    def stop(self):
        sp = int(gdb.parse_and_eval("$sp"))
        counts[int.from_bytes(gdb.selected_inferior().read_memory(sp, 8).tobytes(), "little")] += 1
        return False
gdb.execute("attach " + os.environ["REFCOUNT_PID"])
Count("*" + os.environ["REFCOUNT_ADDR"])
try:
    gdb.execute("continue")
except gdb.error:
    pass
with open(os.environ["REFCOUNT_OUT"], "w") as f:
    json.dump({str(k): v for k, v in counts.items()}, f)
'''


def child(name, steps, folder):
    """Runs in the child: warm up, write the compiled functions' addresses, wait for gdb, run ``steps`` env steps
    (an env id) or one simulated second (a scene of :mod:`cenic_gym.scenes`)."""
    import gc

    import gymnasium as gym
    from numba.core import codegen
    from numba.core.registry import cpu_target

    import cenic_gym.envs  # noqa: F401
    from cenic_gym import scenes
    from cenic_gym.simulator import Simulator

    if name in gym.registry:
        env = gym.make(name)
        env.reset(seed=1000)
        env.action_space.seed(0)
        for _ in range(50):
            env.step(env.action_space.sample())
        actions = [env.action_space.sample() for _ in range(steps)]

        def run():
            for action in actions:
                env.step(action)
    else:
        sim = Simulator(getattr(scenes, name)(), accuracy=1e-3)
        sim.advance_to(0.5)

        def run():
            sim.advance_to(1.5)
    engine = cpu_target.target_context.codegen()._engine._ee
    functions = {}
    for obj in gc.get_objects():
        if isinstance(obj, codegen.CPUCodeLibrary) and obj._finalized:
            for fn in obj._final_module.functions:
                if not fn.is_declaration:
                    address = engine.get_function_address(fn.name)
                    if address:
                        functions[address] = fn.name
    Path(folder, "functions.json").write_text(json.dumps(functions))
    gc.disable()
    Path(folder, "ready").write_text(str(os.getpid()))
    time.sleep(5.0)  # gdb attaches
    run()
    os._exit(0)


def short_name(mangled):
    """'cenic_gym.solver._newton' from numba's mangled symbol (the first three name parts)."""
    if not mangled.startswith("_ZN"):
        return mangled
    parts, i = [], 3
    while i < len(mangled) and mangled[i].isdigit() and len(parts) < 3:
        j = i
        while mangled[j].isdigit():
            j += 1
        length = int(mangled[i:j])
        parts.append(mangled[j:j + length])
        i = j + length
    return ".".join(parts).replace("_3clocals_3e", "<locals>")


def count(env_id, steps):
    """(increments per env step, {function: increments per env step}) of ``steps`` env steps of ``env_id``; for a
    scene pass steps=1: per simulated second."""
    folder = tempfile.mkdtemp(prefix="cenic_refcounts_")
    try:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(folder, "numba")))
        proc = subprocess.Popen([sys.executable, __file__, "--child", env_id, "--steps", str(steps),
                                 "--folder", folder], env=env)
        ready = Path(folder, "ready")
        while not ready.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"the child for {env_id} exited with {proc.returncode} before it was ready")
            time.sleep(0.2)
        functions = {int(a): name for a, name in json.loads(Path(folder, "functions.json").read_text()).items()}
        incref = [a for a, name in functions.items() if name == "NRT_incref"]
        if not incref:
            raise RuntimeError("no NRT_incref among the compiled functions: numba changed how it counts references")
        script = Path(folder, "count.py")
        script.write_text(GDB_SCRIPT)
        out = Path(folder, "counts.json")
        subprocess.run(["gdb", "-batch", "-nx", "-x", str(script)], check=True, capture_output=True,
                       env=dict(os.environ, REFCOUNT_PID=ready.read_text(), REFCOUNT_ADDR=hex(incref[0]),
                                REFCOUNT_OUT=str(out)))
        proc.wait()
        counts = {int(a): n for a, n in json.loads(out.read_text()).items()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    starts = sorted(functions)
    per_function = collections.Counter()
    for address, n in counts.items():
        k = bisect.bisect_right(starts, address) - 1
        name = short_name(functions[starts[k]]) if k >= 0 else "?"
        per_function[name] += n / steps
    return sum(counts.values()) / steps, per_function


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", nargs="+", default=["CenicQuadruped-v0", "CenicAllegro-v0"])
    ap.add_argument("--scenes", nargs="*", default=["sphere_drop"], help="functions of cenic_gym.scenes")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--no-write", action="store_true", help="print only; do not touch RESULTS.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.steps, args.folder)
        return
    if shutil.which("gdb") is None:
        raise SystemExit("refcounts.py needs gdb on the PATH")
    t0, load0 = time.time(), os.getloadavg()[0]
    rows, tops = [], []
    for env_id in [*args.envs, *args.scenes]:
        scene = env_id in args.scenes
        total, per_function = count(env_id, 1 if scene else args.steps)
        unit = "simulated second" if scene else "env step"
        print(f"{env_id}: {total:.0f} increments per {unit}")
        rows.append(f"| {env_id}{' (scene, per simulated second)' if scene else ''} | {total:.0f} |")
        top = ", ".join(f"`{name}` {n:.0f}" for name, n in per_function.most_common(args.top))
        tops.append(f"- {env_id}: {top}.")
        print(tops[-1])
    body = provenance("benchmarks/refcounts.py", "`python benchmarks/refcounts.py`",
                      time.time() - t0, load0, ["numba", "llvmlite"])
    body += [f"Atomic reference-count increments (`NRT_incref`, numba's runtime) per env step of seeded random "
             f"actions at the env's defaults (ε = 1e-3), {args.steps} steps after 50 warm-up steps (a scene: "
             "per simulated second, from t = 0.5 s, ε = 1e-3), counted "
             "exactly by a gdb breakpoint on every call (decrements are as many); each call charged to the "
             "compiled function it comes from. What lets LLVM's pruning remove a pair: docs/performance.md "
             "\"The convex solve\".", "", "| env or scene | increments per env step (scene: per simulated second) |",
             "|---|---|", *rows, "",
             f"Per function (the {args.top} largest, increments per env step or simulated second):", "", *tops]
    if not args.no_write:
        write_section("refcounts", "\n".join(body), "## numba reference counts per env step")


if __name__ == "__main__":
    main()
