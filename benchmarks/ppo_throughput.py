"""Where the CPU of SB3 PPO training goes on CenicFranka-v0 (config ``PICK_PLACE_PPO``), in process or over Ray
workers, and which setting gives the most env steps per wall-second on an idle machine with ``--cores`` cores.

    python benchmarks/ppo_throughput.py [--settings 0x8 2x8 2x16 2x32] [--iterations 2] [--cores 2] [--out FILE]

A setting ``WxN`` is ``W`` Ray workers (0: SB3's ``DummyVecEnv`` in this process) and ``N`` sub-envs, with
``n_steps = 2048 // N`` so that every PPO iteration collects the config's 2048 env steps (``n_steps x num_envs``);
the other PPO settings are the config's. After one untimed iteration, each timed iteration is split into the
rollout (``collect_rollouts``: env steps, policy inference, Ray) and the update (``train``: 10 epochs of minibatch
SGD), with CPU time (user + system, /proc) of the driver (this process) per phase, of each actor process, and of
Ray's other processes (raylet, gcs_server, agents, monitors). The machine may be shared with other jobs, so the
idle-machine wall time is *estimated* from CPU times: in process, the driver's CPU time; with workers, per
iteration ``max over actors of actor CPU + driver CPU in the rollout`` (the driver's policy inference and Ray calls
run while the actors wait, the actors run in parallel, one core each) ``+ driver CPU in the update`` (actors
idle), and ``Ray's other processes' CPU / cores`` on top. The measured wall rates are printed beside the estimate
with the load average.

No RESULTS.md section: it prints its table and writes the raw numbers to ``--out`` (default
``benchmarks/ppo_throughput.json``). The default run (four settings, three PPO iterations each) takes about 2–3
minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from bench_common import REPO, git_rev, machine_line
from ray_scaling import actor_pids, cpu_by_group, cpu_s, ray_processes

ENV_ID = "CenicFranka-v0"


def run_setting(workers, num_envs, iterations, seed=0):
    """CPU and wall seconds per phase of ``iterations`` timed PPO iterations (after one untimed)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecNormalize

    from cenic_gym.train import RunSpec, get_config, sb3_backend
    from cenic_gym.train.common import limit_threads

    cfg = get_config(ENV_ID, "ppo")
    limit_threads()
    spec = RunSpec(ENV_ID, "ppo", "sb3", cfg["env_kwargs"], seed, 0, workers, num_envs, cfg["train_env_kwargs"])
    venv = sb3_backend.make_vec_env(spec)
    if cfg.get("normalize"):
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False)
    kwargs = dict(cfg["sb3"], n_steps=2048 // num_envs)
    me = os.getpid()

    def snapshot():
        return dict(t=time.perf_counter(), driver=cpu_s(me), groups=cpu_by_group(procs))

    marks = []

    class Marks(BaseCallback):
        def _on_rollout_start(self):
            marks.append(("rollout", snapshot()))

        def _on_rollout_end(self):
            marks.append(("update", snapshot()))

        def _on_step(self):
            return True

    try:
        inner = venv.venv if isinstance(venv, VecNormalize) else venv
        pids = actor_pids(inner.venv.venv) if workers else []
        procs = {**ray_processes(), **{p: f"actor{j}" for j, p in enumerate(pids)}} if workers else {me: "driver"}
        model = PPO("MlpPolicy", venv, seed=seed, verbose=0, **kwargs)
        model.learn(total_timesteps=(iterations + 1) * 2048 + 1, callback=Marks())
        marks.append(("end", snapshot()))
    finally:
        venv.close()
    out = []
    # marks: rollout_0, update_0, rollout_1, update_1, ..., (rollout_n+1 start, then end)
    for it in range(1, iterations + 1):
        r0, u0, r1 = marks[2 * it][1], marks[2 * it + 1][1], marks[2 * it + 2][1]
        d = {"rollout_wall_s": u0["t"] - r0["t"], "update_wall_s": r1["t"] - u0["t"],
             "driver_rollout_cpu_s": u0["driver"] - r0["driver"], "driver_update_cpu_s": r1["driver"] - u0["driver"]}
        d["actors_cpu_s"] = [r1["groups"][f"actor{j}"] - r0["groups"][f"actor{j}"] for j in range(len(pids))]
        d["ray_other_cpu_s"] = sum(r1["groups"][g] - r0["groups"][g] for g in r1["groups"]
                                   if g != "driver" and not g.startswith("actor"))
        out.append(d)
    return out


def estimate(d, cores):
    """Idle-machine wall seconds of one iteration, from its CPU times (module docstring)."""
    if not d["actors_cpu_s"]:
        return d["driver_rollout_cpu_s"] + d["driver_update_cpu_s"]
    return max(d["actors_cpu_s"]) + d["driver_rollout_cpu_s"] + d["driver_update_cpu_s"] + \
        d["ray_other_cpu_s"] / cores


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--settings", nargs="+", default=["0x8", "2x8", "2x16", "2x32"])
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "ppo_throughput.json"))
    a = p.parse_args()
    from cenic_gym.vector import init_ray

    result = dict(machine=machine_line(), code=git_rev(), load_before=os.getloadavg(), settings={})
    for s in a.settings:
        workers, n = (int(x) for x in s.split("x"))
        if workers:
            init_ray(num_cpus=a.cores)
        its = run_setting(workers, n, a.iterations)
        est = [2048 / estimate(d, a.cores) for d in its]
        wall = [2048 / (d["rollout_wall_s"] + d["update_wall_s"]) for d in its]
        result["settings"][s] = dict(iterations=its, est_idle_env_steps_per_s=est, measured_env_steps_per_s=wall,
                                     load=os.getloadavg()[0])
        last = its[-1]
        print(f"{s}: estimated idle {', '.join(f'{x:.0f}' for x in est)} env steps/s (measured "
              f"{', '.join(f'{x:.0f}' for x in wall)} "
              f"at load {os.getloadavg()[0]:.2f}); per iteration of 2048 env steps: driver CPU rollout "
              f"{last['driver_rollout_cpu_s']:.2f} s, update {last['driver_update_cpu_s']:.2f} s; actors CPU "
              f"{[round(x, 2) for x in last['actors_cpu_s']]} s; Ray's other processes {last['ray_other_cpu_s']:.2f} s",
              flush=True)
    result["load_after"] = os.getloadavg()
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
