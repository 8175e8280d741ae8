"""FetchReach side by side: SB3 SAC + HER on Gymnasium-Robotics' FetchReach (MuJoCo), with the hyperparameters of
our reach config, into the same JSON as ``benchmarks/learning_curve.py``.

gymnasium-robotics 1.4.2 does not build its Fetch model under mujoco 4.0.0 (the version our install uses), so this
runs in a separate venv with a mujoco 3.x::

    python -m venv /work/fetchvenv
    /work/fetchvenv/bin/pip install torch==2.13.0
    /work/fetchvenv/bin/pip install stable-baselines3==2.9.2 gymnasium==1.2.2 gymnasium-robotics==1.4.2 \\
        "mujoco>=3.2,<3.4"
    OMP_NUM_THREADS=1 /work/fetchvenv/bin/python benchmarks/fetchreach_curve.py --minutes 15

It does not import ``cenic_gym`` (its dependencies are not in that venv): the hyperparameters are read from
``cenic_gym/train/configs.py`` by path (``CONFIGS["CenicFrankaGoal-v0"]["sac"]``: SAC ``sb3`` arguments, HER,
observation normalization, evaluation every ``eval_every`` env steps on 10 deterministic episodes); the final
model then plays ``--final-episodes`` fresh episodes (seeds 1000, 1001, ...). Each evaluation (env steps, wall
seconds since the start of training, success rate, mean return), the final model's results and FetchReach's task
definition (read from the env) are merged into ``<out>.json`` under the key ``"FetchReach-v4 (MuJoCo <version>)"``;
no RESULTS.md section of its own: rerun ``benchmarks/learning_curve.py --report`` (with the project's environment)
to rewrite the ``reach-learning`` section and the plot with both runs. ``--minutes 5`` takes about 5 minutes.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shlex
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from bench_common import REPO, git_rev, machine_line

ENV_ID = "FetchReach-v4"
FINAL_SEED = 1000  # as benchmarks/learning_curve.py


def project_config():
    """``CONFIGS["CenicFrankaGoal-v0"]["sac"]`` of cenic_gym/train/configs.py, loaded by path (no package import)."""
    spec = importlib.util.spec_from_file_location("_configs", REPO / "cenic_gym" / "train" / "configs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config("CenicFrankaGoal-v0", "sac")


def fetch_task(env):
    """FetchReach's task definition, read from the env (the keys of ``learning_curve.cenic_task``)."""
    u = env.unwrapped
    return dict(goal=f"start gripper + U(±{u.target_range:g} m)³, success < {100 * u.distance_threshold:g} cm",
                action=f"Δxyz × 5 cm to the mocap, reset to the gripper before each step; gripper "
                       f"({env.action_space.shape[0]}-D)",
                period=f"{u.dt:g} s × {env.spec.max_episode_steps}",
                physics=f"{env.observation_space['observation'].shape[0]}-D; MuJoCo {u.n_substeps} × "
                        f"{1e3 * u.model.opt.timestep:g} ms")


def final_eval(model, norm, episodes):
    """The final model (deterministic, observations through the training normalization ``norm`` or None) on
    ``episodes`` fresh episodes (seeds FINAL_SEED + k): success at the episode's end, return."""
    import gymnasium as gym

    env = gym.make(ENV_ID)
    succ, rets = [], []
    for k in range(episodes):
        obs, _ = env.reset(seed=FINAL_SEED + k)
        done, ret, info = False, 0.0, {}
        while not done:
            action, _ = model.predict(norm.normalize_obs(obs) if norm is not None else obs, deterministic=True)
            obs, r, term, trunc, info = env.step(action)
            ret += float(r)
            done = term or trunc
        succ.append(float(info.get("is_success", 0.0)))
        rets.append(ret)
    env.close()
    return dict(episodes=episodes, success_rate=float(np.mean(succ)), mean_return=float(np.mean(rets)),
                std_return=float(np.std(rets)))


def train(minutes, steps, seed, eval_episodes, out_dir, final_episodes):
    """SAC + HER on FetchReach for at most ``minutes`` of wall time; returns (wall s, [evaluation dicts], config,
    final evaluation, task definition)."""
    import gymnasium as gym
    import gymnasium_robotics
    import torch
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor, VecNormalize

    torch.set_num_threads(1)
    gym.register_envs(gymnasium_robotics)
    cfg = project_config()
    make = lambda: gym.make(ENV_ID)  # noqa: E731
    venv = VecMonitor(DummyVecEnv([make]))
    eval_env = VecMonitor(DummyVecEnv([make]))
    if cfg["normalize"]:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False)
        eval_env = VecNormalize(eval_env, training=False, norm_obs=True, norm_reward=False)
    kwargs = dict(cfg["sb3"])
    her = kwargs.pop("her")
    evals = []

    class WallLimit(BaseCallback):
        """Stops training after ``minutes`` of wall time."""

        def _on_training_start(self):
            self.t0 = time.perf_counter()

        def _on_step(self):
            return time.perf_counter() - self.t0 < 60 * minutes

    class Record(BaseCallback):
        """Called by its parent EvalCallback after each evaluation: appends it to ``evals``."""

        def _on_step(self):
            p = self.parent
            evals.append(dict(steps=int(self.num_timesteps), wall_s=time.perf_counter() - clock.t0,
                              success_rate=float(np.mean(p.evaluations_successes[-1])),
                              mean_return=float(p.last_mean_reward)))
            print(evals[-1], flush=True)
            return True

    clock = WallLimit()
    recorder = Record()
    evaluate = EvalCallback(eval_env, n_eval_episodes=eval_episodes, eval_freq=cfg["eval_every"],
                            log_path=str(out_dir), deterministic=True, callback_after_eval=recorder)
    model = SAC("MultiInputPolicy", venv, seed=seed, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=her,
                **kwargs)
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps, callback=[clock, evaluate])
    wall = time.perf_counter() - t0
    model.save(out_dir / "model.zip")
    final = final_eval(model, venv if cfg["normalize"] else None, final_episodes)
    task_env = make()
    task = fetch_task(task_env)
    task_env.close()
    return wall, evals, cfg, final, task


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--final-episodes", type=int, default=30, help="fresh episodes of the final model (default 30)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "learning_curve"))
    a = p.parse_args()
    out = Path(a.out).with_suffix(".json")
    load0 = os.getloadavg()
    run_dir = REPO / "runs" / "learning_curve" / "fetchreach"
    run_dir.mkdir(parents=True, exist_ok=True)
    wall, evals, cfg, final, task = train(a.minutes, a.steps, a.seed, a.eval_episodes, run_dir, a.final_episodes)
    summary = json.loads(out.read_text()) if out.exists() else {}
    key = f"{ENV_ID} (MuJoCo {version('mujoco')})"
    for old in [k for k in summary if k.startswith(ENV_ID)]:  # one FetchReach run: the latest
        del summary[old]
    summary[key] = dict(wall_s=wall, evals=evals, env_kwargs={}, sb3=cfg["sb3"], seed=a.seed, final=final, task=task,
                        command="OMP_NUM_THREADS=1 <venv>/bin/python benchmarks/fetchreach_curve.py "
                                + shlex.join(sys.argv[1:]),
                        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                        machine=dict(machine=machine_line(), code=git_rev(), load_before=load0,
                                     load_after=os.getloadavg(),
                                     versions={k: version(k) for k in ("stable-baselines3", "torch", "gymnasium",
                                                                       "gymnasium-robotics", "mujoco")}))
    out.write_text(json.dumps(summary, indent=1))
    first90 = next((e for e in evals if e["success_rate"] >= 0.9), None)
    print(f"{key}: {wall / 60:.1f} min, {evals[-1]['steps'] if evals else 0} steps; >= 0.9 first at "
          + ("never" if first90 is None else f"{first90['steps']} steps, {first90['wall_s'] / 60:.1f} min")
          + f"; final model {final}")
    print(summary[key]["machine"])


if __name__ == "__main__":
    main()
