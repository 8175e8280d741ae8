"""What the training backends share: the run record (``run.json``), thread limits, Ray start-up, and plain
episode evaluation of a policy (return, success rate, length)."""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

from cenic_gym.env import episode_success

RUN_FILE = "run.json"
THREAD_VARS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


@dataclass
class RunSpec:
    """What a training run is (saved as ``run.json`` in its output folder; ``eval CHECKPOINT`` reads it)."""

    env_id: str
    algo: str
    backend: str
    env_kwargs: dict = field(default_factory=dict)
    seed: int = 0
    steps: int = 0
    workers: int = 0
    num_envs: int = 1
    train_env_kwargs: dict = field(default_factory=dict)  # training envs only, on top of env_kwargs
    init: str | None = None  # the policy a fine-tuning run started from (``--init``), else None
    recipe: dict = field(default_factory=dict)  # the resolved config the run trained with (--hyperparams applied)

    def training_env_kwargs(self) -> dict:
        """``gym.make`` kwargs of the training envs (evaluation uses ``env_kwargs`` alone)."""
        return {**self.env_kwargs, **self.train_env_kwargs}

    def options_without_accuracy(self) -> dict:
        """The evaluation env options less ``accuracy``: for tools that set the accuracy themselves (demo, sweeps)."""
        return {k: v for k, v in self.env_kwargs.items() if k != "accuracy"}

    def save(self, out_dir: Path):
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / RUN_FILE).write_text(json.dumps(asdict(self), indent=2))

    @staticmethod
    def find(checkpoint: str | os.PathLike) -> RunSpec:
        """The run record of ``checkpoint`` (a file or folder inside a run folder, up to 3 levels down)."""
        p = Path(checkpoint).resolve()
        if not p.exists():
            raise FileNotFoundError(f"checkpoint {str(checkpoint)!r} does not exist")
        for folder in [p, *p.parents][:4]:
            f = folder / RUN_FILE
            if f.is_file():
                return RunSpec(**json.loads(f.read_text()))
        raise FileNotFoundError(f"no {RUN_FILE} beside or above {str(checkpoint)!r}: not a cenic-gym training "
                                "checkpoint (cenic-gym train writes one into its --out folder)")


def limit_threads():
    """One thread for torch and the numeric libraries in this process (two threads make SB3 PPO ~15x slower on a
    2-core machine); the environment variables also reach processes started from here (Ray workers)."""
    for k, v in THREAD_VARS.items():
        os.environ.setdefault(k, v)
    import torch

    torch.set_num_threads(1)


def ensure_ray(address: str | None = None):
    """Start (or join, with ``address``) Ray if it is not running; workers inherit one-thread settings."""
    from cenic_gym.vector import init_ray

    init_ray(address, runtime_env={"env_vars": dict(THREAD_VARS)})


def check_positive_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def normalizer_path(checkpoint) -> Path:
    """Where the observation-normalization statistics of an SB3 checkpoint are: ``<stem>.vecnormalize.pkl`` beside
    it (the final ``model.zip``; what ``cenic_gym.sim2real`` loads too), else SB3's checkpoint name
    (``model_<n>_steps.zip`` -> ``model_vecnormalize_<n>_steps.pkl``)."""
    p = Path(checkpoint)
    beside = p.with_name(p.stem + ".vecnormalize.pkl")
    if beside.is_file() or not p.name.startswith("model_"):
        return beside
    return p.with_name(p.name.replace("model_", "model_vecnormalize_", 1)).with_suffix(".pkl")


@dataclass
class EvalResult:
    """Plain evaluation: ``returns`` and ``lengths`` per episode, ``successes`` (:func:`cenic_gym.env.
    episode_success`), ``terms``: per episode, the sum of each reward term the env reports as
    ``info["reward/<name>"]`` (``{}`` for envs that report none), ``goals``: per episode, the goals reached
    (``info["successes"]``) of a task that counts them, else None; ``success_steps``: per successful episode, the
    env steps until the success it ended with began (the first step from which ``info["is_success"]`` held to the
    end: the episode's length for a task that ends on success; for a task that counts goals, the step of the
    first), None for the others."""

    returns: list
    lengths: list
    successes: list
    terms: list = field(default_factory=list)
    goals: list = field(default_factory=list)
    success_steps: list = field(default_factory=list)
    terminated: list = field(default_factory=list)  # per episode: the task ended it (a fall, a drop), not the clock

    @property
    def median_success_steps(self):
        """Median env steps to success over the successful episodes (None if none succeeded)."""
        steps = [n for n in self.success_steps if n is not None]
        return float(np.median(steps)) if steps else None

    @property
    def mean_goals(self):
        """Goals per episode, or None for a task that does not count goals."""
        counted = [g for g in self.goals if g is not None]
        return float(np.mean(counted)) if counted else None

    def mean_terms(self):
        """Each reward term's episode sum, averaged over the episodes."""
        names = sorted({k for t in self.terms for k in t})
        return {k: float(np.mean([t.get(k, 0.0) for t in self.terms])) for k in names}

    @property
    def mean_return(self):
        return float(np.mean(self.returns))

    @property
    def success_rate(self):
        return float(np.mean(self.successes))

    def summary(self):
        goals = "" if self.mean_goals is None else f", goals per episode {self.mean_goals:.2f}"
        return (f"{len(self.returns)} episodes: return {self.mean_return:.3f} ± {float(np.std(self.returns)):.3f}, "
                f"success rate {self.success_rate:.2f}{goals}, length {float(np.mean(self.lengths)):.1f}")


def run_episodes(policy: Callable, make_env: Callable[[], gym.Env], episodes: int, seed: int = 0,
                 close: bool = True, on_reset: Callable[[gym.Env], None] | None = None) -> EvalResult:
    """Run ``episodes`` episodes of ``policy(obs) -> action`` in one env (seeds ``seed``, ``seed + 1``, ...); the
    env is closed afterwards unless ``close`` is False (an env kept for the next call); ``on_reset(env)`` is called
    after every reset (a scripted teacher that keeps per-episode state resets there)."""
    check_positive_int("episodes", episodes)
    env = make_env()
    returns, lengths, successes, terms, goals, success_steps, terminated = [], [], [], [], [], [], []
    try:
        for k in range(episodes):
            obs, info = env.reset(seed=seed + k)
            if on_reset is not None:
                on_reset(env)
            total, n, done, sums, reached, since, first_goal = 0.0, 0, False, {}, None, None, None
            while not done:
                obs, r, ended, truncated, info = env.step(policy(obs))
                total, n, done = total + float(r), n + 1, ended or truncated
                since = (since or n) if info.get("is_success", False) else None
                reached = info.get("successes", reached)
                first_goal = first_goal or (n if reached else None)
                for key, value in info.items():
                    if key.startswith("reward/"):
                        sums[key[7:]] = sums.get(key[7:], 0.0) + float(value)
            if not math.isfinite(total):
                raise FloatingPointError(f"episode {k} returned a non-finite return {total}")
            returns.append(total)
            lengths.append(n)
            successes.append(episode_success(info, reached))
            terms.append(sums)
            goals.append(reached)
            success_steps.append(None if not successes[-1] else first_goal if reached is not None else since)
            terminated.append(bool(ended))
    finally:
        if close:
            env.close()
    return EvalResult(returns, lengths, successes, terms, goals, success_steps, terminated)


EVAL_FILE = "evaluations.npz"


def record_evaluation(evals: dict, steps: int, result: EvalResult, out_dir: Path, logger, **columns):
    """Append one periodic evaluation (env steps, per-episode returns, lengths, successes, goals of a task that
    counts them, and ``columns``: wall s, ...) to ``evals``, the columns of ``out_dir/eval/evaluations.npz``, save
    them there and log the means to ``logger`` (SB3's)."""
    evals.setdefault("timesteps", []).append(int(steps))
    evals.setdefault("results", []).append([float(r) for r in result.returns])
    evals.setdefault("ep_lengths", []).append([int(n) for n in result.lengths])
    evals.setdefault("successes", []).append([bool(s) for s in result.successes])
    if result.mean_goals is not None:  # a task that counts its goals (CenicAllegro-v0)
        evals.setdefault("goals", []).append([0 if g is None else int(g) for g in result.goals])
        logger.record("eval/goals", result.mean_goals)
    for key, value in columns.items():
        evals.setdefault(key, []).append(value)
    (Path(out_dir) / "eval").mkdir(parents=True, exist_ok=True)
    np.savez(Path(out_dir) / "eval" / EVAL_FILE, **{k: np.array(v) for k, v in evals.items()})
    logger.record("eval/mean_reward", result.mean_return)
    logger.record("eval/success_rate", result.success_rate)
