"""RLlib PPO on the new API stack: env runners (Ray actors, one CPU each) make our registered ids with
``gym.make``; TensorBoard scalars, checkpoints, periodic evaluation with success rate, progress bar, resume."""
from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np

from .common import EvalResult, RunSpec, ensure_ray, limit_threads, run_episodes

CHECKPOINT_DIR = "checkpoint"
MODULE_PATH = ("learner_group", "learner", "rl_module", "default_policy")


def make_env(env_config):
    """RLlib's env creator (runs in every env runner): one torch thread, our ids registered, ``gym.make(env_id,
    **kwargs)``; dict observations (goal-conditioned envs) are flattened for RLlib's default models."""
    import torch

    import cenic_gym  # noqa: F401  (registers the ids in this worker)

    torch.set_num_threads(1)
    env = gym.make(env_config["env_id"], **env_config.get("kwargs", {}))
    if isinstance(env.observation_space, gym.spaces.Dict):
        env = gym.wrappers.FlattenObservation(env)
    return env


def build_config(spec: RunSpec, cfg: dict):
    """The ``PPOConfig`` of a run: env registered under its own id, ``spec.workers`` env runners (0: sample in this
    process) with ``num_envs / workers`` sub-envs each."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    if spec.algo != "ppo":
        raise ValueError(f"the rllib backend trains ppo only, got algo={spec.algo!r}; use --backend sb3 for sac")
    register_env(spec.env_id, make_env)
    per_runner = math.ceil(spec.num_envs / max(spec.workers, 1))
    return (PPOConfig()
            .environment(spec.env_id, env_config={"env_id": spec.env_id, "kwargs": spec.training_env_kwargs()})
            .env_runners(num_env_runners=spec.workers, num_envs_per_env_runner=per_runner,
                         num_cpus_per_env_runner=1, rollout_fragment_length="auto")
            .learners(num_learners=0)
            .training(**cfg["rllib"])
            .debugging(seed=spec.seed))


def _scalars(result, prefix=""):
    for k, v in result.items():
        if isinstance(v, dict):
            yield from _scalars(v, f"{prefix}{k}/")
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v):
            yield f"{prefix}{k}", float(v)


def train(spec: RunSpec, cfg: dict, out_dir: Path, resume: str | None = None, progress: bool = True,
          verbose: int = 0) -> Path:
    """Train RLlib PPO for ``spec.steps`` env steps; writes into ``out_dir``: ``run.json``, ``tb/`` (every scalar of
    each iteration's result, plus ``eval/mean_reward`` and ``eval/success_rate``), ``checkpoints/steps_<n>/`` and
    ``checkpoint/`` (the final one, returned)."""
    from torch.utils.tensorboard import SummaryWriter
    from tqdm import tqdm

    limit_threads()
    ensure_ray()
    out_dir = Path(out_dir)
    spec.save(out_dir)
    algo = build_config(spec, cfg).build_algo()
    if resume is not None:
        algo.restore_from_path(str(Path(resume).resolve()))
    writer = SummaryWriter(str(out_dir / "tb"))
    bar = tqdm(total=spec.steps, disable=not progress, unit="step", desc=f"rllib ppo {spec.env_id}")
    done = 0  # env steps sampled by this call
    next_eval, next_ckpt = cfg["eval_every"], cfg["checkpoint_every"]
    try:
        while done < spec.steps:
            result = algo.train()
            runners = result.get("env_runners", {})
            n = int(runners.get("num_env_steps_sampled", 0))
            if n <= 0:
                raise RuntimeError(f"an RLlib iteration sampled no env steps: {sorted(runners)}")
            done += n
            lifetime = int(runners.get("num_env_steps_sampled_lifetime", done))
            bar.update(n)
            for k, v in _scalars(result):
                writer.add_scalar(k, v, lifetime)
            if done >= next_ckpt:
                algo.save_to_path(str((out_dir / "checkpoints" / f"steps_{lifetime}").resolve()))
                next_ckpt += cfg["checkpoint_every"]
            if done >= next_eval:
                ev = evaluate_module(algo.get_module(), spec, cfg["eval_episodes"])
                writer.add_scalar("eval/mean_reward", ev.mean_return, lifetime)
                writer.add_scalar("eval/success_rate", ev.success_rate, lifetime)
                if verbose:
                    bar.write(f"eval at {lifetime} steps: {ev.summary()}")
                next_eval += cfg["eval_every"]
        path = (out_dir / CHECKPOINT_DIR).resolve()
        algo.save_to_path(str(path))
    finally:
        bar.close()
        writer.close()
        algo.stop()
    return path


def _policy(module):
    import torch

    dist_cls = module.get_inference_action_dist_cls()

    def policy(obs):
        with torch.no_grad():
            out = module.forward_inference({"obs": torch.as_tensor(np.asarray(obs, np.float32)[None])})
            action = dist_cls.from_logits(out["action_dist_inputs"]).to_deterministic().sample()
        return np.clip(action.numpy()[0], -1.0, 1.0)

    return policy


def evaluate_module(module, spec: RunSpec, episodes: int, seed: int = 0) -> EvalResult:
    return run_episodes(_policy(module), lambda: make_env({"env_id": spec.env_id, "kwargs": spec.env_kwargs}),
                        episodes, seed)


def evaluate(checkpoint: str, spec: RunSpec, episodes: int, seed: int = 0) -> EvalResult:
    """Deterministic episodes of the policy in the RLlib checkpoint folder ``checkpoint`` (no Ray needed)."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    limit_threads()
    path = Path(checkpoint).resolve().joinpath(*MODULE_PATH)
    if not path.is_dir():
        raise FileNotFoundError(f"{str(checkpoint)!r} is not an RLlib algorithm checkpoint (no {path})")
    return evaluate_module(RLModule.from_checkpoint(str(path)), spec, episodes, seed)
