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
observation normalization, evaluation every ``eval_every`` env steps on 10 deterministic episodes). Each evaluation
(env steps, wall seconds since the start of training, success rate, mean return) is merged into
``<out>.json`` under the key ``"FetchReach-v4 (MuJoCo <version>)"``; rerun ``benchmarks/learning_curve.py --plot-only``
to redraw the plot with both curves.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from bench_common import REPO, git_rev, machine_line

ENV_ID = "FetchReach-v4"


def project_config():
    """``CONFIGS["CenicFrankaGoal-v0"]["sac"]`` of cenic_gym/train/configs.py, loaded by path (no package import)."""
    spec = importlib.util.spec_from_file_location("_configs", REPO / "cenic_gym" / "train" / "configs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.get_config("CenicFrankaGoal-v0", "sac")


def train(minutes, steps, seed, eval_episodes, out_dir):
    """SAC + HER on FetchReach for at most ``minutes`` of wall time; returns (wall s, [evaluation dicts])."""
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
    return wall, evals, cfg


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--out", default=str(REPO / "benchmarks" / "learning_curve"))
    a = p.parse_args()
    out = Path(a.out).with_suffix(".json")
    load0 = os.getloadavg()
    run_dir = REPO / "runs" / "learning_curve" / "fetchreach"
    run_dir.mkdir(parents=True, exist_ok=True)
    wall, evals, cfg = train(a.minutes, a.steps, a.seed, a.eval_episodes, run_dir)
    summary = json.loads(out.read_text()) if out.exists() else {}
    key = f"{ENV_ID} (MuJoCo {version('mujoco')})"
    summary[key] = dict(wall_s=wall, evals=evals, env_kwargs={}, sb3=cfg["sb3"], seed=a.seed,
                        machine=dict(machine=machine_line(), code=git_rev(), load_before=load0,
                                     load_after=os.getloadavg(),
                                     versions={k: version(k) for k in ("stable-baselines3", "torch", "gymnasium",
                                                                       "gymnasium-robotics", "mujoco")}))
    out.write_text(json.dumps(summary, indent=1))
    first90 = next((e for e in evals if e["success_rate"] >= 0.9), None)
    print(f"{key}: {wall / 60:.1f} min, {evals[-1]['steps'] if evals else 0} steps; >= 0.9 first at "
          + ("never" if first90 is None else f"{first90['steps']} steps, {first90['wall_s'] / 60:.1f} min"))
    print(summary[key]["machine"])


if __name__ == "__main__":
    main()
