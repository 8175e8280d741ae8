"""Training with learners of Stable-Baselines3's API (SB3's PPO and SAC, sb3-contrib's TQC and CrossQ, SBX's JAX
SAC and CrossQ; SAC + HER for goal-conditioned envs): vector env in Ray actors (``workers`` >= 1) or in process
(``workers`` = 0), TensorBoard logs, periodic evaluation, checkpoints, progress bar, resume, fine-tuning from a
shipped policy (:mod:`cenic_gym.train.finetune`).

Evaluations and checkpoints happen between two rollouts (SB3's ``_on_rollout_start``: the previous update done, the
next env step not taken), at the first boundary at or after every ``eval_every`` / ``checkpoint_every`` env steps.
Every evaluation plays the same ``eval_episodes`` episodes (seeds ``seed + EVAL_SEED_OFFSET + k``), so the curve
compares policies, not episode draws. A checkpoint ``checkpoints/model_<n>_steps.zip`` holds the model, its
normalizer (``model_vecnormalize_<n>_steps.pkl``), for off-policy learners the replay buffer
(``model_replay_buffer_<n>_steps.npz``, its filled part; the newest checkpoint's only), and ``model_<n>_steps.run.pkl``: the run's random generators (torch,
NumPy, the action space's), the training envs' states (in-process envs: :meth:`cenic_gym.env.CenicEnv.get_state`
and the time limit's step count) and the time spent so far. ``--resume`` from it continues the run exactly: with
in-process envs (``workers`` = 0) and a torch learner the resumed run's updates, episodes and evaluations are those
of the uninterrupted run (``tests/test_training_faults.py``). With Ray workers the envs' states are not fetched:
the resumed run starts new episodes (seeded from the run's seed and the checkpoint's step).
"""
from __future__ import annotations

import math
import pickle
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper, VecMonitor, VecNormalize

from .common import (EVAL_FILE, EvalResult, RunSpec, ensure_ray, limit_threads, normalizer_path,
                     record_evaluation, run_episodes)
from .configs import learner_class
from .finetune import load_init, pull_towards_prior, start_from, warm_started

MODEL_FILE = "model.zip"
EVAL_SEED_OFFSET = 1_000_003  # periodic evaluation episodes: held-out seeds


def checkpoint_path(out_dir: Path, steps: int) -> Path:
    return Path(out_dir) / "checkpoints" / f"model_{steps}_steps.zip"


def replay_buffer_path(checkpoint) -> Path:
    p = Path(checkpoint)
    return p.with_name(p.name.replace("model_", "model_replay_buffer_", 1)).with_suffix(".npz")


BUFFER_FIELDS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def save_replay_buffer(model, path: Path):
    """The filled part of ``model``'s replay buffer (SB3 pickles the whole preallocated buffer: 1 M transitions,
    hundreds of MB, at every checkpoint). A dict-observation or HER buffer is saved by SB3 (pickle) instead."""
    from stable_baselines3.common.buffers import ReplayBuffer

    buffer = model.replay_buffer
    if type(buffer) is ReplayBuffer:
        n = buffer.buffer_size if buffer.full else buffer.pos
        arrays = {k: getattr(buffer, k)[:n] for k in BUFFER_FIELDS if getattr(buffer, k, None) is not None}
        with open(path, "wb") as f:  # np.savez adds no suffix to an open file
            np.savez(f, pos=buffer.pos, full=buffer.full, **arrays)
    else:
        model.save_replay_buffer(path.with_suffix(".pkl"))


def drop_older_buffers(path: Path):
    """Remove the replay buffers of the checkpoints before ``path``'s (a resume needs the newest one only)."""
    for old in path.parent.glob("model_replay_buffer_*_steps.*"):
        if old.stem != path.stem:
            old.unlink()


def load_replay_buffer(model, path: Path):
    """Fill ``model``'s replay buffer from :func:`save_replay_buffer`'s file."""
    if path.with_suffix(".pkl").is_file():
        model.load_replay_buffer(path.with_suffix(".pkl"))
        return
    buffer, data = model.replay_buffer, np.load(path)
    for k in BUFFER_FIELDS:
        if k in data.files:
            getattr(buffer, k)[:len(data[k])] = data[k]
    buffer.pos, buffer.full = int(data["pos"]), bool(data["full"])


def run_state_path(checkpoint) -> Path:
    return Path(checkpoint).with_suffix(".run.pkl")


def latest_checkpoint(run_dir) -> Path | None:
    """The newest complete checkpoint of a run folder (its ``.run.pkl``, written last, is there), or None."""
    done = [p.with_name(p.name.replace(".run.pkl", ".zip")) for p in Path(run_dir, "checkpoints").glob(
        "model_*_steps.run.pkl")]
    done = [p for p in done if p.is_file()]
    return max(done, key=lambda p: int(p.stem.split("_")[1])) if done else None


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
    ``DummyVecEnv`` in this process when ``workers`` is 0; wrapped in ``VecMonitor`` (episode returns in logs).
    In-process sub-env ``i`` starts from seed ``spec.seed + i``."""
    if spec.workers == 0:
        venv = DummyVecEnv([_env_factory(spec, training=True)] * spec.num_envs)
    else:
        from cenic_gym.sb3 import make_sb3_vec_env

        ensure_ray()
        per_actor = math.ceil(spec.num_envs / spec.workers)
        venv = make_sb3_vec_env(spec.env_id, spec.num_envs, env_kwargs=spec.training_env_kwargs(),
                                envs_per_actor=per_actor)
    return VecMonitor(venv)


# -- the training envs' states (exact resume of in-process envs) ---------------------------------------------------
def _wrappers(env):
    while True:
        yield env
        if not hasattr(env, "env"):
            return
        env = env.env


def _monitor(venv):
    """The ``VecMonitor`` inside ``venv``'s wrappers, or None."""
    while not isinstance(venv, VecMonitor):
        if not hasattr(venv, "venv"):
            return None
        venv = venv.venv
    return venv


def env_states(venv):
    """The in-process sub-envs' states (episode, random generator, time-limit count) and the monitor's episode
    sums, or None for Ray sub-envs."""
    base = venv.unwrapped
    if not isinstance(base, DummyVecEnv):
        return None
    monitor = _monitor(venv)
    return dict(
        envs=[(e.unwrapped.get_state(), [getattr(w, "_elapsed_steps", None) for w in _wrappers(e)])
              for e in base.envs],
        monitor=None if monitor is None else (monitor.episode_returns.copy(), monitor.episode_lengths.copy(),
                                              monitor.episode_count))


def set_env_states(venv, states):
    """Put the sub-envs of ``venv`` in ``states`` (:func:`env_states`), as if they had run to there."""
    base = venv.unwrapped
    for e, (state, elapsed) in zip(base.envs, states["envs"]):
        e.unwrapped.set_state(state)
        for w, n in zip(_wrappers(e), elapsed):
            if n is not None:
                w._elapsed_steps = n
            if hasattr(w, "_has_reset"):
                w._has_reset = True  # OrderEnforcing: the episode is under way
    base._reset_seeds()  # SB3's load seeds the envs for a next reset that the run never does
    if states["monitor"] is not None:
        monitor = _monitor(venv)
        monitor.episode_returns, monitor.episode_lengths, monitor.episode_count = states["monitor"]


def _rng_states(model):
    import torch

    return dict(torch=torch.get_rng_state(), numpy=np.random.get_state(),
                action_space=model.action_space.np_random.bit_generator.state)


def _set_rng_states(model, states):
    import torch

    torch.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    model.action_space.np_random.bit_generator.state = states["action_space"]


def deterministic(model, norm):
    """The model's deterministic action from a raw observation (normalized by ``norm`` first, if any)."""

    def act(obs):
        return model.predict(obs if norm is None else norm.normalize_obs(obs), deterministic=True)[0]

    return act


# -- the run's periodic work -----------------------------------------------------------------------------------------
class RunRecorder(BaseCallback):
    """Periodic evaluation, checkpoints and the time split of a run (an SB3 callback).

    Time: ``env_s`` is spent collecting rollouts (env steps and the policy's actions), ``learner_s`` in the
    learner's updates, ``eval_s`` / ``checkpoint_s`` in evaluations and checkpoints; ``wall`` is their sum over
    the run (resumed runs included)."""

    TIMES = ("env_s", "learner_s", "eval_s", "checkpoint_s")

    def __init__(self, spec: RunSpec, cfg: dict, out_dir: Path, venv, resume_state: dict | None, verbose: int = 0):
        super().__init__(verbose)
        self.spec, self.cfg, self.out_dir, self.venv = spec, cfg, out_dir, venv
        self.times = dict.fromkeys(self.TIMES, 0.0)
        self.evals = {}  # the columns of eval/evaluations.npz (common.record_evaluation)
        self.faults = dict(actor_restarts=0, env_errors=0)  # episodes cut short by a dead Ray actor / an env error
        saved = out_dir / "eval" / EVAL_FILE
        if resume_state is not None:
            self.times.update(resume_state["times"])
            self.faults.update(resume_state.get("faults", {}))
            if saved.is_file():  # the evaluations up to the checkpoint (a killed run may have made later ones)
                old = np.load(saved)
                keep = np.asarray(old["timesteps"]) <= resume_state["steps"]
                self.evals.update({k: [v.tolist() for v, ok in zip(old[k], keep) if ok] for k in old.files})
        self.eval_env = None
        self.mark = None

    def _lap(self, phase):
        """The time since the last mark goes to ``phase``, the phase that just ended."""
        now = time.perf_counter()
        if self.mark is not None:
            self.times[phase] += now - self.mark
        self.mark = now

    @property
    def wall(self):
        return sum(self.times.values())

    def _next(self, every):
        return (self.model.num_timesteps // every + 1) * every

    def _on_training_start(self):
        self.mark = time.perf_counter()
        self.next_eval, self.next_ckpt = self._next(self.cfg["eval_every"]), self._next(self.cfg["checkpoint_every"])

    def _on_rollout_start(self):
        self._lap("learner_s")
        steps = self.model.num_timesteps
        if steps >= self.next_eval:
            self.evaluate()
            self._lap("eval_s")
            self.next_eval = self._next(self.cfg["eval_every"])
        if steps >= self.next_ckpt:
            self.checkpoint(checkpoint_path(self.out_dir, steps))
            self._lap("checkpoint_s")
            self.next_ckpt = self._next(self.cfg["checkpoint_every"])

    def _on_rollout_end(self):
        self._lap("env_s")

    def _on_step(self):
        for info in self.locals.get("infos", ()):
            if "actor_restarted" in info or "env_error" in info:  # cenic_gym.vector: the episode reported truncated
                self.faults["actor_restarts" if "actor_restarted" in info else "env_errors"] += 1
        return True

    def _on_training_end(self):
        self._lap("learner_s")
        if self.evals.get("timesteps", [-1])[-1] < self.model.num_timesteps:
            self.evaluate()
            self._lap("eval_s")

    def evaluate(self):
        if self.eval_env is None:
            self.eval_env = _env_factory(self.spec)()
        result = run_episodes(deterministic(self.model, self.model.get_vec_normalize_env()), lambda: self.eval_env, self.cfg["eval_episodes"],
                              self.spec.seed + EVAL_SEED_OFFSET, close=False)
        record_evaluation(self.evals, self.model.num_timesteps, result, self.out_dir, self.logger, wall=self.wall,
                          updates=int(getattr(self.model, "_n_updates", 0)), env_s=self.times["env_s"],
                          learner_s=self.times["learner_s"], **self.faults)
        for k, n in self.faults.items():
            self.logger.record(f"faults/{k}", n)
        self.logger.record("time/env_share", self.times["env_s"] / max(self.wall, 1e-9))
        if self.verbose:
            print(f"{self.model.num_timesteps} steps: {result.summary()}", flush=True)

    def checkpoint(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.model.save(path)
        norm = self.model.get_vec_normalize_env()
        if norm is not None:
            norm.save(str(normalizer_path(path)))
        if getattr(self.model, "replay_buffer", None) is not None:
            save_replay_buffer(self.model, replay_buffer_path(path))
        state = dict(steps=self.model.num_timesteps, times=dict(self.times), faults=dict(self.faults),
                     rng=_rng_states(self.model),
                     envs=env_states(self.venv))
        with open(run_state_path(path), "wb") as f:
            pickle.dump(state, f)
        drop_older_buffers(replay_buffer_path(path))  # after the new checkpoint is complete

    def close(self):
        if self.eval_env is not None:
            self.eval_env.close()


class ScaleReward(VecEnvWrapper):
    """The training envs' rewards × ``scale`` for the learner (a training aid: the recipe's ``reward_scale``); the
    monitor inside logs the task's own returns, and evaluations play the unmodified task."""

    def __init__(self, venv, scale: float):
        super().__init__(venv)
        self.scale = float(scale)

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        return obs, rewards * self.scale, dones, infos


def _normalizer(venv, cfg, resume, init_norm):
    """The observation normalization of a run: the shipped policy's, frozen (``--init``); a checkpoint's
    (``--resume``); a new running mean / std (``cfg["normalize"]``); or none."""
    if resume is not None and normalizer_path(resume).is_file():
        return VecNormalize.load(str(normalizer_path(resume)), venv)
    if init_norm is not None:
        norm = VecNormalize(venv, norm_obs=True, norm_reward=False, clip_obs=init_norm.clip_obs,
                            epsilon=init_norm.epsilon)
        norm.obs_rms = init_norm.obs_rms
        norm.training = False  # the actor was fitted to these statistics
        return norm
    if cfg.get("normalize", False):
        return VecNormalize(venv, norm_obs=True, norm_reward=False)
    return venv


def learner(spec: RunSpec):
    """The learner class of a run (warm-started for ``--init`` runs)."""
    cls = learner_class(spec.algo)
    return cls if spec.init is None else warm_started(cls)


def train(spec: RunSpec, cfg: dict, out_dir: Path, resume: str | None = None, progress: bool = True,
          verbose: int = 0, callbacks: list | None = None) -> Path:
    """Train ``spec.algo`` on ``spec.env_id`` up to ``spec.steps`` env steps in all (a resumed run counts the
    checkpoint's); writes into ``out_dir``: ``run.json``, ``tb/`` (TensorBoard), ``checkpoints/``,
    ``eval/evaluations.npz`` (per evaluation: env steps, returns, lengths, successes, wall s, learner updates, time
    in the envs and in the learner) and ``model.zip`` (the final model, returned)."""
    limit_threads()
    out_dir = Path(out_dir)
    spec.save(out_dir)
    init_actor, init_norm = load_init(spec.init) if spec.init is not None else (None, None)
    venv = make_vec_env(spec)
    if cfg.get("reward_scale", 1.0) != 1.0:
        venv = ScaleReward(venv, cfg["reward_scale"])
    resume_state = None
    if resume is not None and run_state_path(resume).is_file():
        with open(run_state_path(resume), "rb") as f:
            resume_state = pickle.load(f)
    venv = _normalizer(venv, cfg, resume, None if resume is not None else init_norm)
    normalize = isinstance(venv, VecNormalize)
    cls = learner(spec)
    kwargs = dict(cfg["sb3"])
    her = kwargs.pop("her", None)
    if spec.init is not None:
        kwargs["learning_starts"] = cfg["init"]["learning_starts"]
    rec = RunRecorder(spec, cfg, out_dir, venv, resume_state, verbose)
    try:
        if resume is not None:
            model = cls.load(resume, env=venv, tensorboard_log=str(out_dir / "tb"), force_reset=resume_state is None
                             or resume_state["envs"] is None)
            if getattr(model, "replay_buffer", None) is not None:
                buffer = replay_buffer_path(resume)
                if not (buffer.is_file() or buffer.with_suffix(".pkl").is_file()):
                    raise FileNotFoundError(f"checkpoint {str(resume)!r} has no replay buffer ({buffer.name}): "
                                            "only the newest checkpoint of a run keeps one; resume from it")
                load_replay_buffer(model, buffer)
            if resume_state is not None:
                if resume_state["envs"] is not None:
                    set_env_states(venv, resume_state["envs"])
                _set_rng_states(model, resume_state["rng"])
        else:
            if her is not None:
                from stable_baselines3 import HerReplayBuffer

                kwargs.update(replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=her)
            policy = cfg.get("policy") or ("MultiInputPolicy" if isinstance(venv.observation_space, gym.spaces.Dict)
                                           else "MlpPolicy")
            model = cls(policy, venv, seed=spec.seed, tensorboard_log=str(out_dir / "tb"), verbose=verbose,
                        **kwargs)
            if init_actor is not None:
                start_from(model, init_actor, cfg["init"])
        if init_actor is not None:  # a resumed fine-tuning run keeps its pull towards the shipped actor
            pull_towards_prior(model, init_actor, cfg["init"].get("prior_weight", 0.0), model.batch_size)
        remaining = spec.steps - model.num_timesteps
        if remaining > 0:
            model.learn(total_timesteps=remaining, callback=[*(callbacks or []), rec], progress_bar=progress,
                        reset_num_timesteps=resume is None, tb_log_name=f"{spec.algo}")
        path = out_dir / MODEL_FILE
        model.save(path)
        if normalize:
            venv.save(str(normalizer_path(path)))
    finally:
        rec.close()
        venv.close()
    return path


def evaluate(checkpoint: str, spec: RunSpec, episodes: int, seed: int = 0) -> EvalResult:
    """Deterministic episodes of the model saved at ``checkpoint`` (a ``.zip``)."""
    limit_threads()
    env = DummyVecEnv([_env_factory(spec)])  # SB3 needs the env to load a model trained with HER
    model = learner_class(spec.algo).load(checkpoint, env=env, device="cpu")
    stats = normalizer_path(checkpoint)
    norm = None
    if stats.is_file():
        norm = VecNormalize.load(str(stats), env)
    env.close()
    return run_episodes(deterministic(model, norm), _env_factory(spec), episodes, seed)
