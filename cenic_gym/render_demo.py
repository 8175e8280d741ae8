"""``cenic-gym demo ENV_ID``: run an episode of a registered env with its scripted policy (random actions where the
task has none) or a trained one (``--policy``), write an MP4 of it and the CENIC plots (step size, real-time rate
and contact force over time).

The plots are in :mod:`cenic_gym.plots` (plain functions of recorded numbers, usable from benchmarks).
"""
from __future__ import annotations

import importlib
import importlib.util
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .plots import plot_cenic_run

MAX_DEMO_STEPS = 200


@dataclass
class EnvDemoResult:
    """One demo episode. history: CENIC's (t, δt, accepted, error) per attempted step; t_end [s], rates (simulated /
    wall time of each env step), normal_force [N] (sum of |normal force| over the contacts of each env step's last
    accepted CENIC step); render_s: wall time spent rendering; policy: "scripted", "random" or "learned (<path>)"; success: the last
    step's ``info["is_success"]``."""

    env_id: str
    steps: int
    history: list
    t_end: np.ndarray
    rates: np.ndarray
    normal_force: np.ndarray
    sim_wall_s: float
    render_s: float
    policy: str
    success: bool
    stats: dict


def scripted_policy(env_id, env):
    """The task's scripted policy for ``env_id`` (None if it has none)."""
    from .envs import SCRIPTED_POLICIES, scripted_policy_class

    return scripted_policy_class(env_id)(env) if env_id in SCRIPTED_POLICIES else None


def learned_policy(path):
    """(policy, env options) of a trained policy: ``path`` is a policy folder holding ``model.zip`` (e.g.
    ``training/policies/CenicFranka-v0``) or a checkpoint file; the env options are its run's (``run.json``)."""
    from .sim2real.policy import load_policy
    from .train.common import RunSpec

    p = Path(path)
    model = p / "model.zip" if p.is_dir() else p
    if not model.exists():
        raise ValueError(f"policy {str(path)!r}: no such file or folder (a policy folder with model.zip, or a .zip)")
    spec = RunSpec.find(model)
    return load_policy(str(model), spec.env_id), spec


def run_env_demo(env_id, video="cenic_demo.mp4", plot="cenic_demo.png", duration=None, accuracy=1e-3, seed=0,
                 width=640, height=480, policy=None):
    """Run ``env_id`` for ``duration`` simulated seconds (rounded to whole env steps, at least one; default: the
    episode, at most :data:`MAX_DEMO_STEPS` steps) at CENIC accuracy ``accuracy``; write the frames to ``video``
    (MP4 at the env's control rate, None: no video) and the
    CENIC plots to ``plot`` (None: no plot). ``policy``: a trained policy (:func:`learned_policy`; the env gets its
    run's options) instead of the task's scripted one. Returns an :class:`EnvDemoResult`."""
    import gymnasium as gym

    import cenic_gym  # noqa: F401  (registers the envs)

    if env_id not in gym.registry or not env_id.startswith("Cenic"):
        known = sorted(k for k in gym.registry if k.startswith("Cenic"))
        raise ValueError(f"unknown env {env_id!r}; choose one of {known}")
    learned, env_kwargs = None, {}
    if policy is not None:
        learned, spec = learned_policy(policy)
        if spec.env_id != env_id:
            raise ValueError(f"policy {str(policy)!r} was trained on {spec.env_id}, not {env_id}")
        env_kwargs = spec.options_without_accuracy()
    env = gym.make(env_id, **env_kwargs, accuracy=accuracy, render_mode="rgb_array" if video else None,
                   render_width=width, render_height=height)
    u = env.unwrapped
    if duration is None:
        steps = min(env.spec.max_episode_steps or MAX_DEMO_STEPS, MAX_DEMO_STEPS)
    elif isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration > 0 \
            and np.isfinite(duration):
        steps = max(1, round(duration / u.control_period))
    else:
        raise ValueError(f"duration must be a finite number > 0 [s], got {duration!r}")
    def start():
        """Reset the episode, the policy and the action sampler to the seed: the same episode every time."""
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        if learned is not None:
            learned.reset(env)
            return obs, learned, f"learned ({policy})"
        scripted = scripted_policy(env_id, env)
        if scripted is not None:
            scripted.reset()
        return obs, scripted, "random" if scripted is None else "scripted"

    def act(act_policy, obs):
        return act_policy(obs) if act_policy is not None else env.action_space.sample()

    # warm-up: the same episode once, untimed and not rendered, so that every kernel the timed episode reaches is
    # loaded (or compiled) before its clock starts (the episode is deterministic: same seed, same policy)
    w0 = time.perf_counter()
    obs, act_policy, kind = start()
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(act(act_policy, obs))
        if terminated or truncated:
            break
    warmup_s = time.perf_counter() - w0
    obs, act_policy, kind = start()
    before = u.sim.stats.copy()  # cumulative counters: the timed episode's are the difference
    u.sim.integrator.history = []  # record every attempted CENIC step of the episode (Simulator(record=True))
    frames, t_end, rates, force = [], [], [], []
    render_s, sim_s, success = 0.0, 0.0, False
    if video:
        w0 = time.perf_counter()
        frames.append(env.render())
        render_s += time.perf_counter() - w0
    for _ in range(steps):
        action = act(act_policy, obs)
        t0, w0 = u.sim.t, time.perf_counter()
        obs, _, terminated, truncated, info = env.step(action)
        wall = time.perf_counter() - w0
        sim_s += wall
        t_end.append(u.sim.t)
        rates.append((u.sim.t - t0) / max(wall, 1e-12))
        c = u.sim.contact_results()
        force.append(float(np.abs(np.einsum("ij,ij->i", c.force, c.normal)).sum()))
        success = bool(info.get("is_success", False))
        if video:
            w0 = time.perf_counter()
            frames.append(env.render())
            render_s += time.perf_counter() - w0
        if terminated or truncated:
            break
    st = u.sim.stats
    dts = [h[1] for h in u.sim.history if h[2]]  # the timed episode's accepted steps
    stats = dict(sim_time=u.sim.t, accepted=st.accepted - before.accepted, rejected=st.rejected - before.rejected,
                 newton_iters=st.newton_iters - before.newton_iters, min_dt=min(dts, default=math.inf),
                 max_dt=max(dts, default=0.0), warmup_s=warmup_s)
    result = EnvDemoResult(env_id, len(t_end), list(u.sim.history), np.array(t_end), np.array(rates),
                           np.array(force), sim_s, render_s, kind,
                           success, stats)
    env.close()
    if video:
        write_video(frames, video, fps=1.0 / u.control_period)
    if plot:
        plot_cenic_run(result.history, result.t_end, result.rates, result.normal_force,
                       f"CENIC, {env_id}, ε = {accuracy:g}", plot)
    return result


def write_video(frames, path, fps):
    """Frames (each (h, w, 3) uint8) to an H.264 MP4 at ``fps`` [1/s] through imageio-ffmpeg."""
    import imageio.v2 as imageio

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with imageio.get_writer(str(path), fps=fps, codec="libx264", quality=7, macro_block_size=8) as w:
        for f in frames:
            w.append_data(f)


def main_env_demo(parser, a):
    """``cenic-gym demo ENV_ID``: check the arguments (parser.error exits with status 2), run, print statistics."""
    import gymnasium as gym

    import cenic_gym  # noqa: F401

    known = sorted(k for k in gym.registry if k.startswith("Cenic"))
    if a.env not in known:
        parser.error(f"argument ENV_ID: unknown env {a.env!r}; choose one of {known}")
    for module in ("mujoco", "imageio", "imageio_ffmpeg"):  # found, not imported (MUJOCO_GL is set later)
        if importlib.util.find_spec(module) is None:
            parser.error(f"the ENV_ID demo needs {module}: pip install 'cenic-gym[render]'")
    video = a.video
    if not video.lower().endswith(".mp4"):
        parser.error(f"argument --video: {video!r} must end in .mp4")
    try:
        r = run_env_demo(a.env, video, a.out, a.duration, a.accuracy, seed=a.seed, policy=a.policy)
    except (ValueError, FileNotFoundError) as e:
        parser.error(str(e))
    st = r.stats
    print(f"{a.env}: {st['sim_time']:g} s simulated ({r.steps} env steps) at accuracy {a.accuracy:g}, "
          f"{r.policy} policy, success at the end: {r.success}")
    print(f"  CENIC steps accepted {st['accepted']}, rejected {st['rejected']}, Newton iterations "
          f"{st['newton_iters']}; step size min {st['min_dt']:.3g} s, max {st['max_dt']:.3g} s")
    print(f"  warm-up (the same episode once, untimed: numba compile or cache load) {st['warmup_s']:.2f} s")
    print(f"  wall: simulation {r.sim_wall_s:.2f} s (real-time rate {st['sim_time'] / max(r.sim_wall_s, 1e-12):.2f}x), "
          f"rendering {r.render_s:.2f} s ({1e3 * r.render_s / max(r.steps + 1, 1):.0f} ms/frame); "
          f"peak contact normal force {r.normal_force.max(initial=0.0):.1f} N")
    print(f"  video written to {video}")
    print(f"  plot written to {a.out}")
    return 0
