"""Ray scaling of RayVectorEnv on this machine: env steps/s with 1 and 2 workers (actors, one CPU each) against
in-process stepping, per-step Ray overhead, memory per actor and per env, and optionally a soak of many vector steps
with the resident memory of the driver and the actors sampled along the way.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/ray_scaling.py [--env CenicFranka-v0]
        [--envs-per-actor 16 32] [--rounds 3] [--vector-steps 60] [--soak 100000]
        [--soak-env-kwargs '{"fixed_step": 0.05}'] [--ceiling] [--out FILE.json] [--no-write]

Writes the ``ray-scaling`` section of ``benchmarks/RESULTS.md`` (``--no-write``: print only) and the raw numbers to
``--out`` (default ``benchmarks/ray_scaling.json``, replaced by each run). The default run (16 and 32 envs per actor,
3 rounds, no soak) takes about 3–5 minutes on 2 cores; ``--soak 100000`` adds about 7 minutes. A timing benchmark:
run it on an idle machine (on a shared one, read the CPU columns, not the wall-clock efficiency).

Scaling: ``w`` actors x ``envs_per_actor`` sub-envs, random actions (seeded), ``--vector-steps`` timed vector steps
after one untimed; efficiency per core = env steps/s / (w x in-process env steps/s of the *same work*: the same
w x envs_per_actor sub-envs, seeds, actions and autoresets stepped one after another in this process, which gives
bit-identical trajectories (tests/test_vector.py). A random-action env step's cost depends on its trajectory
(attempts per step vary by tens of percent between seeds), so a reference made of other episodes (e.g. one env
with seed 0) mismeasures the efficiency by as much. The in-process and the vector runs of each worker count are
measured back to back in each of ``--rounds`` rounds (the wall-clock rate of a VM drifts by ±15 % between
minutes); medians over the rounds are reported, for every ``--envs-per-actor`` value given.
Overhead: mean vector-step time of a 1-actor, 1-env RayVectorEnv minus the in-process step time of the same env
(same seed and actions), measured on CartPole-v1 (an env that costs ~10 us, so the difference is the round trip)
and on the CENIC env.
Memory: VmRSS (/proc) of each actor process with 1 and with the largest ``envs_per_actor`` envs; per env = the
difference / (envs_per_actor - 1). CPU: user + system time of the actor processes (/proc) per env step against this
process's CPU time per in-process env step (how much of an actor's CPU goes into env steps; on a shared machine the
wall-clock efficiency also measures what the other processes take), and CPU per vector step of every process
(driver, actors, raylet, gcs_server, Ray's agents and monitors: all processes this one started). Ray is started with
``cenic_gym.vector.init_ray`` (no dashboard, log forwarding, task events). Soak (``--soak N``): a 1-actor, 1-env
vector env (``--soak-env-kwargs``: a cheap configuration so that 10^5 steps fit in minutes), RSS of driver and actor
every ``N/20`` steps; growth after warm-up = last / the sample at 10 % of the run - 1.
Ceiling (``--ceiling``): the machine's own two-core scaling, without Ray: the same in-process work
(:func:`in_process_same`, ``k`` sub-envs, seed r) in one plain OS process alone, then in two plain processes at
once (both the same work, loops started together at a set time after their setup); efficiency = the sum of their
env steps/s / (2 x the alone rate). Two workers cannot beat it, since they are two such processes plus Ray.
"""
from __future__ import annotations

import argparse
import json
import importlib
import os
import shlex
import statistics
import subprocess
import sys
import time

import gymnasium as gym

from bench_common import REPO, provenance, write_section

importlib.import_module("cenic_gym")  # registers the ids


def rss_mb(pid):
    """Resident set size [MB] of process ``pid`` (VmRSS from /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_s(pid):
    """User + system CPU time [s] of process ``pid`` so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ray_processes():
    """{pid: group} of this process (``driver``) and every process it started, directly or not (Ray's
    ``gcs_server``, ``raylet``, agents, monitors and worker processes), grouped by process name."""
    import psutil

    me = psutil.Process()
    out = {me.pid: "driver"}
    for p in me.children(recursive=True):
        try:
            out[p.pid] = p.name().split(" ")[0]
        except psutil.NoSuchProcess:
            pass
    return out


def cpu_by_group(procs):
    """{group: user + system CPU s so far} of the processes ``procs`` ({pid: group}); a process gone counts 0."""
    out = {}
    for pid, group in procs.items():
        try:
            c = cpu_s(pid)
        except FileNotFoundError:
            c = 0.0
        out[group] = out.get(group, 0.0) + c
    return out


def actor_pids(venv):
    import ray

    return ray.get([a.__ray_call__.remote(lambda self: os.getpid()) for a in venv.actors])


def batched_actions(env_id, env_kwargs, n, vector_steps, seed=0):
    """``vector_steps`` + 1 batched random actions of ``n`` sub-envs, drawn as ``RayVectorEnv.action_space`` (the
    batched space, seeded with ``seed``) draws them."""
    from gymnasium.vector.utils import batch_space

    env = gym.make(env_id, **env_kwargs)
    space = batch_space(env.action_space, n)
    env.close()
    space.seed(seed)
    return [space.sample() for _ in range(vector_steps + 1)]


def in_process_same(env_id, env_kwargs, n, actions, seed=0):
    """(env steps/s, CPU s per env step) of ``n`` sub-envs stepped one after another in this process with the
    vector env's seeds (seed + i), actions and NEXT_STEP autoresets (a sub-env whose episode ended is reset on its
    next step, its action ignored); the first batch untimed."""
    envs = [gym.make(env_id, **env_kwargs) for _ in range(n)]
    for i, e in enumerate(envs):
        e.reset(seed=seed + i)
    ended = [False] * n

    def step_all(batch):
        for i, e in enumerate(envs):
            if ended[i]:
                e.reset()
                ended[i] = False
            else:
                _, _, term, trunc, _ = e.step(batch[i])
                ended[i] = term or trunc

    step_all(actions[0])
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in actions[1:]:
        step_all(batch)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    for e in envs:
        e.close()
    steps = n * (len(actions) - 1)
    return steps / dt, dc / steps


def vector_rate(env_id, env_kwargs, actors, per_actor, vector_steps, seed=0, actions=None):
    """(env steps/s, seconds per vector step, [actor RSS MB], actor CPU s per env step) of a RayVectorEnv of
    ``actors`` x ``per_actor`` (``actions``: ``vector_steps`` + 1 batches, default drawn from its action space)."""
    from cenic_gym.vector import RayVectorEnv

    venv = RayVectorEnv(env_id, actors * per_actor, env_kwargs=env_kwargs, envs_per_actor=per_actor)
    try:
        if actions is None:
            venv.action_space.seed(seed)
            actions = [venv.action_space.sample() for _ in range(vector_steps + 1)]
        venv.reset(seed=seed)
        venv.step(actions[0])
        pids = actor_pids(venv)
        procs = {**ray_processes(), **{p: "actors" for p in pids}}
        g0 = cpu_by_group(procs)
        c0 = sum(cpu_s(p) for p in pids)
        t0 = time.perf_counter()
        for batch in actions[1:vector_steps + 1]:
            venv.step(batch)
        dt = time.perf_counter() - t0
        cpu = (sum(cpu_s(p) for p in pids) - c0) / (actors * per_actor * vector_steps)
        g1 = cpu_by_group(procs)
        rss = [rss_mb(p) for p in pids]
    finally:
        venv.close()
    by_group = {g: (g1[g] - g0[g]) / vector_steps * 1e3 for g in sorted(g1)}
    return actors * per_actor * vector_steps / dt, dt / vector_steps, rss, cpu, by_group


def soak(env_id, env_kwargs, steps, samples=20, seed=0):
    from cenic_gym.vector import RayVectorEnv

    venv = RayVectorEnv(env_id, 1, env_kwargs=env_kwargs)
    out = []
    try:
        pid = actor_pids(venv)[0]
        venv.action_space.seed(seed)
        venv.reset(seed=seed)
        t0 = time.perf_counter()
        every = max(steps // samples, 1)
        for k in range(1, steps + 1):
            venv.step(venv.action_space.sample())
            if k % every == 0:
                out.append(dict(steps=k, wall_s=time.perf_counter() - t0, driver_mb=rss_mb(os.getpid()),
                                actor_mb=rss_mb(pid)))
                print(f"  soak {k}: {out[-1]}", flush=True)
    finally:
        venv.close()
    ref = next(s for s in out if s["steps"] >= steps // 10)
    growth = {f"{w}_growth": out[-1][f"{w}_mb"] / ref[f"{w}_mb"] - 1.0 for w in ("driver", "actor")}
    return dict(samples=out, warmup_steps=ref["steps"], **growth, restarts=venv.restarts)


def scaling_run(env_id, env_kwargs, k, vector_steps, rounds):
    """``rounds`` rounds of, for w = 1 and 2 workers, the same work in process then in a w x k RayVectorEnv
    (:func:`in_process_same`); per round and w the efficiency per core = vector env steps/s / (w x in-process env
    steps/s); medians over the rounds."""
    out = []
    for r in range(rounds):
        runs = {}
        for w in (1, 2):
            actions = batched_actions(env_id, env_kwargs, w * k, vector_steps, seed=r)
            base, base_cpu = in_process_same(env_id, env_kwargs, w * k, actions, seed=r)
            sps, per_step, rss, cpu, by_group = vector_rate(env_id, env_kwargs, w, k, vector_steps, seed=r,
                                                            actions=actions)
            runs[str(w)] = dict(env_steps_per_s=sps, s_per_vector_step=per_step, actor_rss_mb=rss,
                                cpu_ms_per_vector_step=by_group,
                                in_process_env_steps_per_s=base, in_process_cpu_ms_per_env_step=base_cpu * 1e3,
                                efficiency_per_core=sps / (w * base), actor_cpu_ms_per_env_step=cpu * 1e3,
                                cpu_efficiency=base_cpu / cpu)
        out.append(dict(workers=runs, load=os.getloadavg()[0]))
        print(f"{k} envs per actor, round {r}: " + "; ".join(
            f"{w} worker(s) {v['env_steps_per_s']:.1f} env steps/s vs {v['in_process_env_steps_per_s']:.1f} in "
            f"process (efficiency per core {v['efficiency_per_core']:.2f}; CPU per env step: actors "
            f"{v['actor_cpu_ms_per_env_step']:.2f} ms, in process {v['in_process_cpu_ms_per_env_step']:.2f} ms)"
            for w, v in runs.items()) + f"; load {os.getloadavg()[0]:.2f}", flush=True)
        for w, v in runs.items():
            print(f"  {w} worker(s), CPU ms per vector step by process: " + ", ".join(
                f"{g} {ms:.2f}" for g, ms in v["cpu_ms_per_vector_step"].items()), flush=True)
    med = {w: statistics.median(r["workers"][w]["efficiency_per_core"] for r in out) for w in ("1", "2")}
    print(f"{k} envs per actor: median efficiency per core over {rounds} rounds: 1 worker {med['1']:.2f}, "
          f"2 workers {med['2']:.2f}", flush=True)
    return dict(envs_per_actor=k, env=env_id, env_kwargs=env_kwargs, vector_steps=vector_steps, rounds=out,
                median_efficiency_per_core=med)


def child_rate(env_id, env_kwargs, k, vector_steps, seed, start_at):
    """Run :func:`in_process_same` in a new Python process whose timed loop starts at time ``start_at`` (epoch s);
    returns the Popen (its stdout: env steps/s)."""
    return subprocess.Popen([sys.executable, __file__, "--child", json.dumps(
        dict(env=env_id, env_kwargs=env_kwargs, k=k, vector_steps=vector_steps, seed=seed, start_at=start_at))],
        stdout=subprocess.PIPE, text=True)


def ceiling_run(env_id, env_kwargs, k, vector_steps, rounds, lead=8.0):
    """``rounds`` rounds of: the work of ``k`` sub-envs in one plain process alone, then in two plain processes at
    once (both seed r: the same work as alone); per round the efficiency per core = (sum of the two rates) /
    (2 x alone rate)."""
    out = []
    for r in range(rounds):
        alone = float(child_rate(env_id, env_kwargs, k, vector_steps, r, time.time() + lead).communicate()[0])
        start = time.time() + lead
        pair = [child_rate(env_id, env_kwargs, k, vector_steps, seed, start) for seed in (r, r)]
        rates = [float(c.communicate()[0]) for c in pair]
        out.append(dict(alone=alone, together=rates, efficiency_per_core=sum(rates) / (2 * alone),
                        load=os.getloadavg()[0]))
        print(f"ceiling without Ray, {k} envs per process, round {r}: alone {alone:.1f} env steps/s, two at once "
              f"{rates[0]:.1f} + {rates[1]:.1f} (efficiency per core {out[-1]['efficiency_per_core']:.2f}); load "
              f"{os.getloadavg()[0]:.2f}", flush=True)
    med = statistics.median(o["efficiency_per_core"] for o in out)
    print(f"ceiling without Ray, {k} envs per process: median efficiency per core over {rounds} rounds {med:.2f}",
          flush=True)
    return dict(envs_per_process=k, env=env_id, vector_steps=vector_steps, rounds=out,
                median_efficiency_per_core=med)


def child_main(arg):
    """The --child mode of :func:`child_rate`: build, wait for ``start_at``, print env steps/s."""
    c = json.loads(arg)
    actions = batched_actions(c["env"], c["env_kwargs"], c["k"], c["vector_steps"], seed=c["seed"])
    warm = gym.make(c["env"], **c["env_kwargs"])  # load the numba cache before the start time
    warm.reset(seed=c["seed"])
    warm.step(actions[0][0])
    warm.close()
    time.sleep(max(0.0, c["start_at"] - time.time()))
    print(in_process_same(c["env"], c["env_kwargs"], c["k"], actions, seed=c["seed"])[0])


def med(xs):
    return statistics.median(xs)


def kwargs_text(kwargs):
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def section(result, header):
    """The Markdown body of the ``ray-scaling`` section from a run's ``result`` (what ``--out`` holds) under the
    provenance lines ``header``."""
    lines = [*header]
    sc = result.get("scaling", {})
    if sc:
        first = next(iter(sc.values()))
        lines += [f"`{first['env']}` (`{kwargs_text(first['env_kwargs'])}`), seeded random actions, "
                  f"{first['vector_steps']} timed vector steps, medians over {len(first['rounds'])} rounds. "
                  "Efficiency per core = Ray env steps/s / (workers × in-process env steps/s of the same sub-envs, "
                  "seeds and actions, measured back to back).",
                  "CPU (/proc, user + system): the actors' per env step against the in-process loop's, and per "
                  "vector step the driver's and that of Ray's other processes (raylet, gcs_server, agents, monitors).",
                  "",
                  "| envs per actor × workers | in process [env steps/s] | Ray [env steps/s] | efficiency per core "
                  "(rounds) | CPU per env step: actors / in process [ms] | CPU per vector step: driver / Ray's "
                  "other processes [ms] |", "|---|---|---|---|---|---|"]
        for run in sc.values():
            for w in ("1", "2"):
                rs = [r["workers"][w] for r in run["rounds"]]
                other = [sum(v for g, v in r["cpu_ms_per_vector_step"].items() if g not in ("actors", "driver"))
                         for r in rs]
                lines.append(
                    f"| {run['envs_per_actor']} × {w} | {med(r['in_process_env_steps_per_s'] for r in rs):.0f} | "
                    f"{med(r['env_steps_per_s'] for r in rs):.0f} | **{run['median_efficiency_per_core'][w]:.2f}** ("
                    + " / ".join(f"{r['efficiency_per_core']:.2f}" for r in rs) + f") | "
                    f"{med(r['actor_cpu_ms_per_env_step'] for r in rs):.2f} / "
                    f"{med(r['in_process_cpu_ms_per_env_step'] for r in rs):.2f} | "
                    f"{med(r['cpu_ms_per_vector_step']['driver'] for r in rs):.1f} / {med(other):.1f} |")
    if "overhead" in result:
        over = result["overhead"]
        lines += ["", "| 1 actor × 1 env | " + " | ".join(over) + " |", "|---|" + "---|" * len(over)]
        for label, key, fmt in (("in-process env step [ms]", "in_process_ms", ".3f"),
                                ("Ray vector step [ms]", "ray_ms", ".2f"),
                                ("Ray's overhead per step [ms]", "overhead_ms", ".2f"),
                                ("actor RSS [MB]", "actor_rss_mb", ".0f")):
            lines.append(f"| {label} | " + " | ".join(f"{v[key]:{fmt}}" for v in over.values()) + " |")
    if "memory" in result:
        m = result["memory"]
        lines += ["", f"Memory: an actor holds {m['mem_actor_1env_mb']:.0f} MB with 1 env and "
                      f"{m['mem_actor_k_envs_mb']:.0f} MB with {m['envs']}: **{m['mem_per_env_mb']:.1f} MB per "
                      f"further env**; the driver {m['driver_rss_mb']:.0f} MB."]
    if "ceiling" in result:
        lines += ["", "Two-core ceiling without Ray (the same work in one plain process alone, then in two at once): "
                  "efficiency per core " + "; ".join(
                      f"{c['envs_per_process']} envs per process **{c['median_efficiency_per_core']:.2f}** ("
                      + " / ".join(f"{r['efficiency_per_core']:.2f}" for r in c["rounds"]) + ")"
                      for c in result["ceiling"].values()) + "."]
    if "soak" in result:
        so = result["soak"]
        first, last = next(s for s in so["samples"] if s["steps"] == so["warmup_steps"]), so["samples"][-1]
        lines += ["", f"Soak: {so['vector_steps']} vector steps of 1 actor × 1 env "
                      f"(`{kwargs_text(so['env_kwargs'])}`) in {so['wall_s']:.0f} s, {so['restarts']} restarts; "
                      f"after {so['warmup_steps']} warm-up steps the driver's RSS {first['driver_mb']:.1f} → "
                      f"{last['driver_mb']:.1f} MB "
                      f"(**{100 * so['driver_growth']:+.2f} %**), the actor's {first['actor_mb']:.1f} → "
                      f"{last['actor_mb']:.1f} MB (**{100 * so['actor_growth']:+.2f} %**)."]
    return "\n".join(lines)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return child_main(sys.argv[2])
    import ray

    from cenic_gym.vector import init_ray

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="CenicFranka-v0")
    p.add_argument("--env-kwargs", default="{}", help="JSON dict of gym.make kwargs for the scaling runs")
    p.add_argument("--envs-per-actor", type=int, nargs="+", default=[16, 32],
                   help="sub-envs per actor; one scaling run per value (default 16 32)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (in process, 1 worker, 2 workers)")
    p.add_argument("--vector-steps", type=int, default=60)
    p.add_argument("--soak", type=int, default=0, help="vector steps of the soak (0: none)")
    p.add_argument("--soak-env-kwargs", default='{"fixed_step": 0.05}')
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--ceiling", action="store_true",
                   help="also measure the machine's two-core scaling without Ray (two plain processes at once)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "ray_scaling.json"))
    p.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone (--out is written)")
    a = p.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    kwargs = {"max_episode_steps": 200, **json.loads(a.env_kwargs)}
    # before Ray starts, so that its idle processes do not take CPU from the plain processes
    ceiling = {f"{k}_envs_per_process": ceiling_run(a.env, kwargs, k, a.vector_steps, a.rounds)
               for k in a.envs_per_actor} if a.ceiling else None
    init_ray(num_cpus=2)
    result = {}
    if not a.skip_scaling:
        result["scaling"] = {}
        for k in a.envs_per_actor:
            result["scaling"][f"{k}_envs_per_actor"] = scaling_run(a.env, kwargs, k, a.vector_steps, a.rounds)
        over = {}
        for env_id, ekw in (("CartPole-v1", {}), (a.env, kwargs)):
            steps = 2000 if env_id == "CartPole-v1" else 200
            actions = batched_actions(env_id, ekw, 1, steps)
            inproc = 1.0 / in_process_same(env_id, ekw, 1, actions)[0]
            _, per_step, rss1, _, _ = vector_rate(env_id, ekw, 1, 1, steps, actions=actions)
            over[env_id] = dict(in_process_ms=inproc * 1e3, ray_ms=per_step * 1e3,
                                overhead_ms=(per_step - inproc) * 1e3, actor_rss_mb=rss1[0])
            print(f"overhead {env_id}: {over[env_id]}", flush=True)
        rss1 = over[a.env]["actor_rss_mb"]
        k = max(a.envs_per_actor)
        rssk = result["scaling"][f"{k}_envs_per_actor"]["rounds"][-1]["workers"]["1"]["actor_rss_mb"][0]
        result["overhead"] = over
        result["memory"] = dict(mem_per_env_mb=(rssk - rss1) / max(k - 1, 1), mem_actor_1env_mb=rss1, envs=k,
                                mem_actor_k_envs_mb=rssk, driver_rss_mb=rss_mb(os.getpid()))
        print(f"memory per env {result['memory']['mem_per_env_mb']:.1f} MB, actor with 1 env {rss1:.0f} MB, with {k} "
              f"envs {rssk:.0f} MB", flush=True)
    if ceiling:
        result["ceiling"] = ceiling
    if a.soak:
        skw = {"max_episode_steps": 200, **json.loads(a.soak_env_kwargs)}
        t0 = time.perf_counter()
        result["soak"] = dict(env=a.env, env_kwargs=skw, vector_steps=a.soak, **soak(a.env, skw, a.soak),
                              wall_s=time.perf_counter() - t0)
        print(f"soak: driver growth {result['soak']['driver_growth']:+.3%}, actor growth "
              f"{result['soak']['actor_growth']:+.3%} after {result['soak']['warmup_steps']} warm-up steps")
    ray.shutdown()
    command = f"`python benchmarks/ray_scaling.py {shlex.join(sys.argv[1:])}`".replace(" `", "`")
    result["provenance"] = provenance("benchmarks/ray_scaling.py", command, time.perf_counter() - t_start, load0,
                                      ("ray", "gymnasium", "numba"), note="; `ray.init(num_cpus=2)`, 1 CPU per actor")
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    body = section(result, result["provenance"])
    print(body)
    if not a.no_write:
        write_section("ray-scaling", body, "## Ray vector envs: scaling, overhead, memory")


if __name__ == "__main__":
    main()
