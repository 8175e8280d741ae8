"""Training on cenic-gym envs: SB3 PPO / SAC (+ HER for goal-conditioned envs) and RLlib PPO (new API stack).

Per-env hyperparameters live in :mod:`cenic_gym.train.configs`; :func:`train` runs one of them and writes a run
folder (``run.json``, TensorBoard logs in ``tb/``, checkpoints, evaluations, the final model); :func:`evaluate`
plays episodes of a checkpoint. Needs the ``train`` extra (and ``ray`` for workers or the rllib backend). The
``cenic-gym train`` / ``eval`` commands (:mod:`cenic_gym.train.cli`) and the scripts in ``training/`` call these.
"""
from __future__ import annotations

from pathlib import Path

from .common import EvalResult, RunSpec, check_positive_int
from .configs import ALGOS, BACKENDS, CONFIGS, get_config


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
          progress: bool = True, verbose: int = 0, overrides: dict | None = None) -> Path:
    """Train ``algo`` on ``env_id`` with ``backend`` ("sb3" or "rllib"); returns the final checkpoint's path.

    ``steps``: env steps (default: the config's); ``workers``: Ray actors / env runners (0: sample in this
    process); ``num_envs``: sub-envs (default: the config's, at least ``workers``); ``out``: the run folder;
    ``resume``: a checkpoint to continue from; ``overrides``: entries replacing the config's (e.g. ``{"eval_every":
    1000}``). Unknown env, algo or backend → ValueError listing the choices."""
    if algo not in ALGOS:
        raise ValueError(f"unknown algo {algo!r}; choose one of {list(ALGOS)}")
    module = _backend(backend)
    if backend == "rllib" and algo != "ppo":
        raise ValueError(f"the rllib backend trains ppo only, got algo={algo!r}; use backend='sb3' for {algo}")
    if algo == "dagger":  # its own loop; what it saves is an SB3 model (evaluated by the sb3 backend)
        from . import dagger as module
    cfg = get_config(env_id, algo)
    for key, value in (overrides or {}).items():
        if key not in cfg:
            raise ValueError(f"unknown config entry {key!r}; entries: {sorted(cfg)}")
        cfg[key] = {**cfg[key], **value} if isinstance(cfg[key], dict) and isinstance(value, dict) else value
    steps = check_positive_int("steps", cfg["steps"] if steps is None else steps)
    workers = check_positive_int("workers", workers, minimum=0)
    n = max(cfg["num_envs"], workers) if num_envs is None else check_positive_int("num_envs", num_envs)
    if resume is not None and not Path(resume).exists():
        raise FileNotFoundError(f"checkpoint to resume {str(resume)!r} does not exist")
    spec = RunSpec(env_id, algo, backend, cfg["env_kwargs"], seed, steps, workers, n, cfg["train_env_kwargs"])
    return module.train(spec, cfg, Path(out), resume=resume, progress=progress, verbose=verbose)


def evaluate(checkpoint: str | Path, episodes: int = 10, seed: int = 0) -> EvalResult:
    """Deterministic episodes of a checkpoint written by :func:`train` (an SB3 ``.zip`` or an RLlib checkpoint
    folder; its run folder's ``run.json`` names the env and backend)."""
    check_positive_int("episodes", episodes)
    spec = RunSpec.find(checkpoint)
    return _backend(spec.backend).evaluate(str(checkpoint), spec, episodes, seed)


__all__ = ["ALGOS", "BACKENDS", "CONFIGS", "EvalResult", "RunSpec", "evaluate", "get_config", "train"]
