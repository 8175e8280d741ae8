"""One evaluation episode: a policy drives an env from ``reset(seed=...)``; an optional perturbation is applied to
the simulator after the reset (and pushes during the episode). Returns what every sweep tabulates."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import pinocchio as pin

from cenic_gym.env import episode_success


@dataclass
class EpisodeResult:
    """seed; success: :func:`cenic_gym.env.episode_success`; ret: undiscounted return; steps: env steps taken;
    q, v: the final generalized positions and velocities (the simulator's, noise-free); t [s]: final simulated time;
    terminated; sim_failure: the reason string or None; substeps: accepted CENIC steps in total; wall_s [s]: wall
    time of the episode (policy included); perturbation: what was applied (for the log, with the seed);
    max_penetration [m]: the deepest contact over the episode's accepted states (``info["sim"]``); goals: the goals
    reached (``info["successes"]``) of a task that counts them, else None."""

    seed: int
    success: bool
    ret: float
    steps: int
    q: np.ndarray
    v: np.ndarray
    t: float
    terminated: bool
    sim_failure: str | None
    substeps: int
    wall_s: float
    perturbation: dict = field(default_factory=dict)
    max_penetration: float = 0.0
    goals: int | None = None

    def row(self):
        """A flat, JSON-able dict of the scalars (for logs)."""
        return dict(seed=self.seed, success=self.success, ret=self.ret, steps=self.steps, t=self.t,
                    terminated=self.terminated, sim_failure=self.sim_failure, substeps=self.substeps,
                    wall_s=self.wall_s, perturbation=self.perturbation, max_penetration=self.max_penetration,
                    goals=self.goals)


def make_env(env_id, **kwargs):
    """``gym.make(env_id, **kwargs)`` (the Gymnasium wrappers included: the time limit ends episodes)."""
    import cenic_gym  # noqa: F401  (registers the envs)

    return gym.make(env_id, **kwargs)


def run_episode(env, policy, seed, perturbation=None, max_steps=None):
    """Run ``policy`` on ``env`` from ``env.reset(seed=seed)`` until termination, truncation or ``max_steps`` env
    steps. ``perturbation`` (a :class:`~cenic_gym.sim2real.robustness.Perturbation` or None) is applied to the
    simulator right after the reset (``apply(env)``) and asked before every step (``before_step(env, k)``)."""
    if max_steps is not None and (not isinstance(max_steps, (int, np.integer)) or max_steps < 1):
        raise ValueError(f"max_steps must be an integer >= 1 or None, got {max_steps!r}")
    u = env.unwrapped
    w0 = time.perf_counter()
    obs, _ = env.reset(seed=int(seed))
    if perturbation is not None:
        perturbation.apply(env)
    policy.reset(env)
    ret, steps, substeps, penetration = 0.0, 0, 0, 0.0
    terminated, failure, goals = False, None, None
    while True:
        if perturbation is not None:
            perturbation.before_step(env, steps)
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        steps += 1
        ret += float(reward)
        substeps += int(info["sim"]["substeps"])
        penetration = max(penetration, float(info["sim"]["max_penetration"]))
        goals = info.get("successes", goals)
        if "sim_failure" in info:
            failure = str(info["sim_failure"])
        if terminated or truncated or (max_steps is not None and steps >= max_steps):
            break
    return EpisodeResult(int(seed), episode_success(info, goals), ret, steps, u.sim.q.copy(), u.sim.v.copy(),
                         float(u.sim.t), bool(terminated), failure, substeps, time.perf_counter() - w0,
                         {} if perturbation is None else perturbation.describe(), penetration, goals)


def state_divergence(model, q_ref, q):
    """‖pin.difference(model, q_ref, q)‖∞ [m, rad]: how far a final configuration is from a reference one, in the
    units of CENIC's ε (free-body rotations compared on the manifold)."""
    return float(np.max(np.abs(pin.difference(model, np.asarray(q_ref, float), np.asarray(q, float)))))


def summarize(results):
    """success rate, mean return, mean steps, substeps per step, sim failures, the deepest penetration [m] and (for a
    task that counts goals, else None) the goals per episode of a list of EpisodeResult."""
    n = len(results)
    if n == 0:
        raise ValueError("summarize: no episodes")
    steps = sum(r.steps for r in results)
    goals = [r.goals for r in results if r.goals is not None]
    return dict(episodes=n, success_rate=sum(r.success for r in results) / n,
                mean_return=float(np.mean([r.ret for r in results])),
                mean_steps=steps / n, substeps_per_step=sum(r.substeps for r in results) / max(steps, 1),
                sim_failures=sum(r.sim_failure is not None for r in results),
                max_penetration=max(r.max_penetration for r in results),
                mean_goals=float(np.mean(goals)) if goals else None,
                wall_s=float(sum(r.wall_s for r in results)))
