"""Stable-Baselines3 training (PPO, SAC, SAC + HER): vector env in Ray actors (``workers`` >= 1) or in process
(``workers`` = 0), TensorBoard logs, checkpoints, periodic evaluation with success rate, progress bar, resume."""
from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym

from .common import EvalResult, RunSpec, ensure_ray, limit_threads, normalizer_path, run_episodes

MODEL_FILE = "model.zip"
EVAL_SEED_OFFSET = 1_000_003  # periodic evaluation episodes: held-out seeds


def _algo_class(algo):
    from stable_baselines3 import PPO, SAC

    return {"ppo": PPO, "sac": SAC, "dagger": SAC}[algo]  # DAgger trains an SAC actor (cenic_gym.train.dagger)


def _env_factory(spec: RunSpec, training: bool = False):
    """A maker of one env: the evaluation env (``spec.env_kwargs``), or with ``training`` the training env
    (``spec.training_env_kwargs()``)."""
    kwargs = spec.training_env_kwargs() if training else spec.env_kwargs

    def make():
        import cenic_gym  # noqa: F401  (registers the ids)

        return gym.make(spec.env_id, **kwargs)

    return make


def make_vec_env(spec: RunSpec):
    """The training vector env: ``spec.num_envs`` sub-envs over ``spec.workers`` Ray actors (one CPU each), or a
    ``DummyVecEnv`` in this process when ``workers`` is 0; wrapped in ``VecMonitor`` (episode returns in logs)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    if spec.workers == 0:
        venv = DummyVecEnv([_env_factory(spec, training=True)] * spec.num_envs)
    else:
        from cenic_gym.sb3 import make_sb3_vec_env

        ensure_ray()
        per_actor = math.ceil(spec.num_envs / spec.workers)
        venv = make_sb3_vec_env(spec.env_id, spec.num_envs, env_kwargs=spec.training_env_kwargs(),
                                envs_per_actor=per_actor)
    return VecMonitor(venv)


def train(spec: RunSpec, cfg: dict, out_dir: Path, resume: str | None = None, progress: bool = True,
          verbose: int = 0, callbacks: list | None = None) -> Path:
    """Train ``spec.algo`` on ``spec.env_id`` for ``spec.steps`` env steps; writes into ``out_dir``: ``run.json``,
    ``tb/`` (TensorBoard), ``checkpoints/model_<steps>_steps.zip``, ``eval/evaluations.npz`` (returns and success
    rate of the periodic evaluations) and ``model.zip`` (the final model, returned)."""
    from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    limit_threads()
    out_dir = Path(out_dir)
    spec.save(out_dir)
    venv = make_vec_env(spec)
    eval_env = VecMonitor(DummyVecEnv([_env_factory(spec)]))
    eval_env.seed(spec.seed + EVAL_SEED_OFFSET)  # a seed stream apart from the training envs' (seed + i)
    normalize = cfg.get("normalize", False)
    if normalize:  # observation normalization (running mean/std), saved beside every checkpoint
        from stable_baselines3.common.vec_env import VecNormalize

        stats = None if resume is None else normalizer_path(resume)
        if stats is not None and stats.is_file():
            venv = VecNormalize.load(str(stats), venv)
        else:
            venv = VecNormalize(venv, norm_obs=True, norm_reward=False)
        eval_env = VecNormalize(eval_env, training=False, norm_obs=True, norm_reward=False)  # synced by EvalCallback
    n = spec.num_envs
    callbacks = [
        *(callbacks or []),
        CheckpointCallback(save_freq=max(cfg["checkpoint_every"] // n, 1), save_path=str(out_dir / "checkpoints"),
                           name_prefix="model", save_vecnormalize=normalize),
        EvalCallback(eval_env, n_eval_episodes=cfg["eval_episodes"], eval_freq=max(cfg["eval_every"] // n, 1),
                     log_path=str(out_dir / "eval"), best_model_save_path=None, deterministic=True, verbose=verbose),
    ]
    cls = _algo_class(spec.algo)
    kwargs = dict(cfg["sb3"])
    her = kwargs.pop("her", None)
    try:
        if resume is not None:
            model = cls.load(resume, env=venv, tensorboard_log=str(out_dir / "tb"))
        else:
            if her is not None:
                from stable_baselines3 import HerReplayBuffer

                kwargs.update(replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=her)
            policy = "MultiInputPolicy" if isinstance(venv.observation_space, gym.spaces.Dict) else "MlpPolicy"
            model = cls(policy, venv, seed=spec.seed, tensorboard_log=str(out_dir / "tb"), verbose=verbose,
                        **kwargs)
        model.learn(total_timesteps=spec.steps, callback=callbacks, progress_bar=progress,
                    reset_num_timesteps=resume is None, tb_log_name=f"{spec.algo}")
        path = out_dir / MODEL_FILE
        model.save(path)
        if normalize:
            venv.save(str(normalizer_path(path)))
    finally:
        venv.close()
        eval_env.close()
    return path


def evaluate(checkpoint: str, spec: RunSpec, episodes: int, seed: int = 0) -> EvalResult:
    """Deterministic episodes of the SB3 model saved at ``checkpoint`` (a ``.zip``)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    limit_threads()
    env = DummyVecEnv([_env_factory(spec)])  # SB3 needs the env to load a model trained with HER
    model = _algo_class(spec.algo).load(checkpoint, env=env, device="cpu")
    stats = normalizer_path(checkpoint)
    norm = None
    if stats.is_file():
        from stable_baselines3.common.vec_env import VecNormalize

        norm = VecNormalize.load(str(stats), env)
    env.close()

    def policy(obs):
        return model.predict(obs if norm is None else norm.normalize_obs(obs), deterministic=True)[0]

    return run_episodes(policy, _env_factory(spec), episodes, seed)
