"""DAgger (Ross, Gordon & Bagnell 2011, "A Reduction of Imitation Learning and Structured Prediction to No-Regret
Online Learning"): a policy network learns from a scripted teacher that can act from any state.

Each round plays ``episodes_per_round`` training episodes in which every step's action is the teacher's with
probability β (β = ``beta0`` · ``beta_decay`` ** round) and the network's otherwise (plus Gaussian noise of std
``noise``), records the teacher's action at every visited state, adds them to the data set (all rounds aggregated)
and fits the network to the whole set by regression (``gradient_steps`` Adam steps of ``batch_size`` samples, mean
squared error of the deterministic action). Round 0 (β = 1) is plain behaviour cloning of the teacher's own
episodes; later rounds visit the states the network's own mistakes lead to, which is what plain cloning never sees.
With ``polish`` (dict of ``gradient_steps``, ``batch_size``, ``lr_end``) the last round ends with a further fit to
the whole set whose learning rate falls from ``learning_rate`` to ``lr_end`` along a cosine: at a constant rate the
weights the run stops at are one noisy iterate, not the fit's minimum.

The network is an SB3 ``SAC`` actor (squashed Gaussian, [256, 256] by default; its mean is the action), so the saved
``model.zip`` is an ordinary SB3 model: ``cenic-gym eval``, ``cenic_gym.sim2real`` (export, reports) and a later
SAC fine-tuning (``--resume``) read it as any SAC model. Observations are normalized by a ``VecNormalize`` whose
statistics are those of the aggregated data set (saved beside every checkpoint).

The teacher is ``cfg["dagger"]["teacher"]``, a ``"module:Class"`` built as ``Class(env)`` on the training env and
called after each step with no argument (it reads the env's state). Imitation libraries exist (``imitation``) but
pin gymnasium 0.29 and stable-baselines3 2.2, which this package's gymnasium 1.x and SB3 2.3+ exclude.
"""
from __future__ import annotations

import importlib
import json
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from .common import RunSpec, limit_threads, normalizer_path, record_evaluation, run_episodes

MODEL_FILE = "model.zip"
EVAL_SEED_OFFSET = 1_000_003  # periodic evaluation episodes: held-out seeds (as the SB3 backend's)
TRAIN_SEED_OFFSET = 7_919  # training episode k is reset with seed * 100_003 + TRAIN_SEED_OFFSET + k


def teacher_class(name: str):
    """The class of a ``"module:Class"`` teacher spec."""
    module, _, cls = name.partition(":")
    if not cls:
        raise ValueError(f"dagger teacher must be 'module:Class', got {name!r}")
    return getattr(importlib.import_module(module), cls)


class DaggerState:
    """What a checkpoint holds besides the network and the normalizer: the data set and the counters."""

    def __init__(self, obs_dim, act_dim):
        self.obs = np.zeros((0, obs_dim), np.float32)
        self.act = np.zeros((0, act_dim), np.float32)
        self.round = 0
        self.steps = 0
        self.episodes = 0
        self.wall = 0.0  # training wall time [s] before this process (resume)
        self.evals = dict(timesteps=[], results=[], ep_lengths=[], successes=[], wall=[])

    def add(self, obs, act):
        self.obs = np.concatenate([self.obs, np.asarray(obs, np.float32)])
        self.act = np.concatenate([self.act, np.asarray(act, np.float32)])

    def save(self, path: Path):
        np.savez_compressed(path, obs=self.obs, act=self.act)
        counters = dict(round=self.round, steps=self.steps, episodes=self.episodes, wall=self.wall, evals=self.evals)
        path.with_suffix(".json").write_text(json.dumps(counters))

    @staticmethod
    def load(path: Path) -> DaggerState:
        data = np.load(path)
        state = DaggerState(data["obs"].shape[1], data["act"].shape[1])
        state.obs, state.act = data["obs"], data["act"]
        for k, v in json.loads(path.with_suffix(".json").read_text()).items():
            setattr(state, k, v)
        return state


def data_path(checkpoint) -> Path:
    """The data set saved with an SB3 checkpoint ``model_<n>_steps.zip`` (or ``model.zip``): ``dagger_<stem>.npz``."""
    p = Path(checkpoint)
    return p.with_name(f"dagger_{p.stem}.npz")


def _make_env(spec: RunSpec, training: bool):
    import cenic_gym  # noqa: F401  (registers the ids)

    return gym.make(spec.env_id, **(spec.training_env_kwargs() if training else spec.env_kwargs))


def train(spec: RunSpec, cfg: dict, out_dir: Path, resume: str | None = None, progress: bool = True,
          verbose: int = 0) -> Path:
    """DAgger on ``spec.env_id`` for ``spec.steps`` env steps; writes into ``out_dir`` what the SB3 backend writes
    (``run.json``, ``tb/``, ``checkpoints/``, ``eval/evaluations.npz`` with a ``wall`` column, ``model.zip`` and
    ``model.vecnormalize.pkl``) plus each checkpoint's data set (``dagger_<checkpoint stem>.npz`` and ``.json``)."""
    import torch
    import torch.nn.functional as F
    from stable_baselines3 import SAC
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    limit_threads()
    if spec.workers != 0 or spec.num_envs != 1:
        raise ValueError(f"dagger steps one env in this process (its teacher reads that env's state); got "
                         f"workers={spec.workers}, num_envs={spec.num_envs}")
    d = cfg["dagger"]
    out_dir = Path(out_dir)
    spec.save(out_dir)
    (out_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    (out_dir / "eval").mkdir(parents=True, exist_ok=True)
    env = _make_env(spec, training=True)
    teacher = teacher_class(d["teacher"])(env)
    holder = DummyVecEnv([lambda: _make_env(spec, training=False)])  # spaces for SB3; never stepped
    if resume is not None:
        model = SAC.load(resume, env=holder, device="cpu")
        norm = VecNormalize.load(str(normalizer_path(resume)), holder)
        state = DaggerState.load(data_path(resume))
    else:
        model = SAC("MlpPolicy", holder, seed=spec.seed, device="cpu", verbose=verbose, **cfg["sb3"])
        norm = VecNormalize(holder, training=False, norm_obs=True, norm_reward=False)
        state = DaggerState(env.observation_space.shape[0], env.action_space.shape[0])
    norm.training = False
    actor = model.actor
    optimizer = actor.optimizer  # SB3's Adam, saved in model.zip with its moments: a resumed run continues it
    if resume is None:
        for group in optimizer.param_groups:
            group["lr"] = d["learning_rate"]
    logger = configure(str(out_dir / "tb" / f"{spec.algo}_{spec.seed}"), ["tensorboard"])
    t_start = time.perf_counter()

    def act(obs):
        o = torch.as_tensor(norm.normalize_obs(np.asarray(obs, np.float32))[None], dtype=torch.float32)
        with torch.no_grad():
            return actor(o, deterministic=True)[0].numpy()

    def fit(rng, gradient_steps, batch_size, lr_end=None):
        """``gradient_steps`` Adam steps on the aggregated set; with ``lr_end`` the rate falls from
        ``learning_rate`` to ``lr_end`` along a cosine (the polish), and is restored afterwards."""
        obs = torch.as_tensor(norm.normalize_obs(state.obs), dtype=torch.float32)
        target = torch.as_tensor(state.act, dtype=torch.float32)
        losses = []
        for k in range(gradient_steps):
            if lr_end is not None:
                lr = lr_end + 0.5 * (d["learning_rate"] - lr_end) * (1.0 + np.cos(np.pi * k / gradient_steps))
                for group in optimizer.param_groups:
                    group["lr"] = lr
            idx = torch.as_tensor(rng.integers(0, len(obs), batch_size))
            loss = F.mse_loss(actor(obs[idx], deterministic=True), target[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        if lr_end is not None:
            for group in optimizer.param_groups:
                group["lr"] = d["learning_rate"]
        return float(np.mean(losses))

    def evaluate_now():
        result = run_episodes(act, lambda: _make_env(spec, training=False), cfg["eval_episodes"],
                              spec.seed + EVAL_SEED_OFFSET)
        record_evaluation(state.evals, state.steps, result, out_dir, logger,
                          wall=state.wall + time.perf_counter() - t_start)
        return result

    def checkpoint(path: Path):
        model.save(path)
        norm.save(str(normalizer_path(path)))
        saved_wall = state.wall
        state.wall = saved_wall + time.perf_counter() - t_start
        state.save(data_path(path))
        state.wall = saved_wall

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=spec.steps, initial=state.steps, unit="step")
    next_eval = (state.steps // cfg["eval_every"] + 1) * cfg["eval_every"]
    next_ckpt = (state.steps // cfg["checkpoint_every"] + 1) * cfg["checkpoint_every"]
    try:
        while state.steps < spec.steps:
            beta = d["beta0"] * d["beta_decay"] ** state.round
            rng = np.random.default_rng([spec.seed, state.round])  # per round: a resumed run continues bit for bit
            obs_round, act_round, n_round = [], [], 0
            for _ in range(d["episodes_per_round"]):
                obs, _ = env.reset(seed=spec.seed * 100_003 + TRAIN_SEED_OFFSET + state.episodes)
                state.episodes += 1
                teacher.reset()
                done = False
                while not done:
                    label = teacher()
                    obs_round.append(obs)
                    act_round.append(label)
                    use_teacher = state.round == 0 or rng.uniform() < beta
                    a = label if use_teacher else act(obs)
                    if d["noise"] > 0.0:
                        a = a + rng.normal(0.0, d["noise"], a.shape)
                    obs, _, terminated, truncated, _ = env.step(np.clip(a, -1.0, 1.0).astype(np.float32))
                    done = terminated or truncated
                    n_round += 1
            state.add(obs_round, act_round)
            state.steps += n_round
            if bar is not None:
                bar.update(n_round)
            norm.obs_rms.mean = state.obs.mean(axis=0).astype(np.float64)
            norm.obs_rms.var = state.obs.var(axis=0).astype(np.float64)
            norm.obs_rms.count = float(len(state.obs))
            loss = fit(rng, d["gradient_steps"], d["batch_size"])
            polish = d.get("polish")
            if polish and state.steps >= spec.steps:  # the last round: the final fit, its rate annealed
                loss = fit(rng, polish["gradient_steps"], polish["batch_size"], polish["lr_end"])
                logger.record("dagger/polish_loss", loss)
            state.round += 1
            logger.record("dagger/beta", beta)
            logger.record("dagger/loss", loss)
            logger.record("dagger/samples", len(state.obs))
            logger.record("time/wall", state.wall + time.perf_counter() - t_start)
            if state.steps >= next_eval or state.steps >= spec.steps:
                result = evaluate_now()
                next_eval += cfg["eval_every"] * max(1, (state.steps - next_eval) // cfg["eval_every"] + 1)
                if verbose:
                    print(f"round {state.round} steps {state.steps} beta {beta:.3f} loss {loss:.4f} "
                          f"eval {result.summary()}", flush=True)
            logger.dump(state.steps)
            if state.steps >= next_ckpt:
                checkpoint(out_dir / "checkpoints" / f"model_{state.steps}_steps.zip")
                next_ckpt += cfg["checkpoint_every"] * max(1, (state.steps - next_ckpt) // cfg["checkpoint_every"] + 1)
        path = out_dir / MODEL_FILE
        checkpoint(path)
    finally:
        if bar is not None:
            bar.close()
        env.close()
        holder.close()
    return path

