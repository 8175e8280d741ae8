"""Training on cenic-gym envs: SB3 PPO / SAC (+ HER for goal-conditioned envs) and RLlib PPO (new API stack).

Per-env hyperparameters live in :mod:`cenic_gym.train.configs`; :func:`train` runs one of them and writes a run
folder (``run.json``, TensorBoard logs in ``tb/``, checkpoints, evaluations, the final model); :func:`evaluate`
plays episodes of a checkpoint. Needs the ``train`` extra (and ``ray`` for workers or the rllib backend). The
``cenic-gym train`` / ``eval`` commands (:mod:`cenic_gym.train.cli`) and the scripts in ``training/`` call these.
"""
from __future__ import annotations

from pathlib import Path

from .common import EvalResult, RunSpec, check_positive_int
from .configs import ALGOS, BACKENDS, CONFIGS, RecipeError, apply_hyperparams, get_config
from .finetune import INIT_ALGOS, init_model_path


def _backend(name):
    if name == "sb3":
        from . import sb3_backend

        return sb3_backend
    if name == "rllib":
        from . import rllib_backend

        return rllib_backend
    raise ValueError(f"unknown backend {name!r}; choose one of {list(BACKENDS)}")


def train(env_id: str, algo: str = "ppo", backend: str = "sb3", *, steps: int | None = None, workers: int = 0,
          num_envs: int | None = None, out: str | Path = "runs/run", seed: int = 0, resume: str | None = None,
          progress: bool = True, verbose: int = 0, env_kwargs: dict | None = None, hyperparams=None,
          init: str | Path | None = None, callbacks: list | None = None) -> Path:
    """Train ``algo`` on ``env_id`` with ``backend`` ("sb3" or "rllib"); returns the final checkpoint's path.

    ``steps``: env steps in all (default: the config's; a resumed run counts the checkpoint's); ``workers``: Ray
    actors / env runners (0: sample in this process); ``num_envs``: sub-envs (default: the config's, at least
    ``workers``); ``out``: the run folder; ``resume``: a checkpoint of this run to continue from (or the run folder: its newest complete checkpoint); ``env_kwargs``:
    env options on top of the recipe's, for training and evaluation; ``hyperparams``: config entries to change
    (``{"eval_every": 1000}`` or ``["gamma=0.99", "sb3.batch_size=512"]``: :func:`configs.apply_hyperparams`);
    ``init``: a shipped policy (folder or ``model.zip``) whose actor and normalization the run starts from
    (:mod:`cenic_gym.train.finetune`); ``callbacks``: SB3 callbacks added to the run's (sb3 backend). Unknown env, algo, backend or hyperparameter → ValueError naming it."""
    if algo not in ALGOS:
        raise ValueError(f"unknown algo {algo!r}; choose one of {list(ALGOS)}")
    module = _backend(backend)
    if backend == "rllib" and algo != "ppo":
        raise ValueError(f"the rllib backend trains ppo only, got algo={algo!r}; use backend='sb3' for {algo}")
    if algo == "dagger":  # its own loop; what it saves is an SB3 model (evaluated by the sb3 backend)
        from . import dagger as module
    cfg = get_config(env_id, algo)
    if env_kwargs:
        if not isinstance(env_kwargs, dict):
            raise ValueError(f"env_kwargs must be a dict of env options, got {env_kwargs!r}")
        cfg["env_kwargs"] = {**cfg["env_kwargs"], **env_kwargs}
    apply_hyperparams(cfg, algo, hyperparams or {})
    steps = check_positive_int("steps", cfg["steps"] if steps is None else steps)
    workers = check_positive_int("workers", workers, minimum=0)
    n = max(cfg["num_envs"], workers) if num_envs is None else check_positive_int("num_envs", num_envs)
    if resume is not None and not Path(resume).exists():
        raise FileNotFoundError(f"checkpoint to resume {str(resume)!r} does not exist")
    if resume is not None and Path(resume).is_dir() and backend == "sb3" and algo != "dagger":
        from .sb3_backend import latest_checkpoint

        found = latest_checkpoint(resume)
        if found is None:
            raise FileNotFoundError(f"no complete checkpoint in {str(resume)!r}/checkpoints to resume")
        resume = str(found)
    if init is not None:
        if algo not in INIT_ALGOS or backend != "sb3":
            raise RecipeError(f"--init fine-tunes with the sb3 backend and one of {list(INIT_ALGOS)}, got algo "
                             f"{algo!r}, backend {backend!r}")
        if "init" not in cfg:
            raise RecipeError(f"the {algo} recipe of {env_id} has no 'init' entry (exploration noise, critic warm-up) "
                             "for --init")
        init = str(init_model_path(init))
    cfg.update(steps=steps, num_envs=n)
    spec = RunSpec(env_id, algo, backend, cfg["env_kwargs"], seed, steps, workers, n, cfg["train_env_kwargs"],
                   init=init, recipe=cfg)
    if env_kwargs:
        _check_env_kwargs(spec)
    extra = {} if callbacks is None else dict(callbacks=callbacks)
    return module.train(spec, cfg, Path(out), resume=resume, progress=progress, verbose=verbose, **extra)


def _check_env_kwargs(spec: RunSpec):
    """Build the evaluation and training envs once: a bad env option of the user's fails here, naming itself, not
    in a worker or at the first evaluation."""
    import gymnasium as gym

    import cenic_gym  # noqa: F401

    for kwargs in [spec.env_kwargs] + ([spec.training_env_kwargs()] if spec.train_env_kwargs else []):
        try:
            gym.make(spec.env_id, **kwargs).close()
        except (TypeError, ValueError) as e:
            raise RecipeError(f"env options {kwargs} of {spec.env_id}: {e}") from e


def evaluate(checkpoint: str | Path, episodes: int = 10, seed: int = 0) -> EvalResult:
    """Deterministic episodes of a checkpoint written by :func:`train` (an SB3 ``.zip`` or an RLlib checkpoint
    folder; its run folder's ``run.json`` names the env and backend)."""
    check_positive_int("episodes", episodes)
    spec = RunSpec.find(checkpoint)
    return _backend(spec.backend).evaluate(str(checkpoint), spec, episodes, seed)


__all__ = ["ALGOS", "BACKENDS", "CONFIGS", "EvalResult", "RecipeError", "RunSpec", "evaluate", "get_config", "train"]
