"""Policy export: a trained Stable-Baselines3 policy or RLlib RLModule as one torch module, observation
normalization (VecNormalize or saved statistics) and action clipping folded in, written as ONNX (for
:mod:`cenic_gym.sim2real.runtime`) and TorchScript; and the check that the exported file reproduces the
original policy's deterministic actions.

    module = folded_module(model, vecnormalize)      # raw obs (B, n) float32 -> action (B, m)
    export_onnx(module, n_obs, "policy.onnx"); export_torchscript(module, n_obs, "policy.pt")
    check_export(original_policy, exported_policy, observations, tol=1e-5)

Observations: a Box, or a Dict of Boxes (goal-conditioned envs), exported as the dict's entries concatenated
(:func:`obs_layout`, recorded in the file). Supported (SB3): on-policy actor-critic policies (PPO, A2C: the Gaussian mean, clipped to the action bounds, as
``predict(deterministic=True)``) and SAC / TD3 actors (squashed to [-1, 1], rescaled to the bounds); RLlib:
new-API-stack RLModules with a diagonal Gaussian (PPO's default), :func:`folded_rllib_module`. torch is imported
here only.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from .runtime import OBS_LAYOUT_KEY, layout_to_text


def obs_layout(space):
    """[(key, size), ...] of a Dict observation space of Boxes (the order of the space, which is the order SB3's
    ``CombinedExtractor`` concatenates them in); None for a Box. ValueError for anything else."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return None
    if isinstance(space, spaces.Dict) and all(isinstance(s, spaces.Box) for s in space.spaces.values()):
        return [(k, int(np.prod(s.shape))) for k, s in space.spaces.items()]
    raise ValueError(f"only Box or Dict-of-Box observation spaces can be exported, got {space!r}")


def _normalization(vecnormalize, layout, n_obs):
    """Per-element (mean, std, clip) float32 arrays of ``VecNormalize``'s observation statistics over the flat
    observation (identity and no clip where it does not normalize: no statistics, or a dict key it skips)."""
    mean, std = np.zeros(n_obs, np.float32), np.ones(n_obs, np.float32)
    clip = np.full(n_obs, np.inf, np.float32)
    if vecnormalize is None or not getattr(vecnormalize, "norm_obs", True):
        return mean, std, clip
    eps, c = vecnormalize.epsilon, float(vecnormalize.clip_obs)
    if layout is None:
        rms = vecnormalize.obs_rms
        return (rms.mean.astype(np.float32), np.sqrt(rms.var + eps).astype(np.float32),
                np.full(n_obs, c, np.float32))
    keys = vecnormalize.norm_obs_keys or [k for k, _ in layout]
    a = 0
    for key, n in layout:
        if key in keys:
            rms = vecnormalize.obs_rms[key]
            mean[a:a + n] = rms.mean.reshape(-1)
            std[a:a + n] = np.sqrt(rms.var.reshape(-1) + eps)
            clip[a:a + n] = c
        a += n
    return mean, std, clip


def folded_module(model, vecnormalize=None):
    """A ``torch.nn.Module`` mapping raw observations (B, n_obs) float32 to the deterministic actions SB3's
    ``model.predict(normalize(obs), deterministic=True)`` returns, with ``VecNormalize`` observation statistics
    ((obs − mean) / sqrt(var + ε), clipped to ±clip_obs) folded in as constants. For dict observations
    (goal-conditioned envs, SAC + HER) the input is the dict's entries concatenated in :func:`obs_layout` order
    (``module.obs_layout``), split back into the dict the policy takes inside the module."""
    import torch
    from gymnasium import spaces

    policy = model.policy
    space = policy.action_space
    if not isinstance(space, spaces.Box):
        raise ValueError(f"only Box action spaces can be exported, got {space!r}")
    layout = obs_layout(policy.observation_space)
    n_obs = int(np.prod(policy.observation_space.shape)) if layout is None else sum(n for _, n in layout)
    mean, std, clip = _normalization(vecnormalize, layout, n_obs)
    shapes = None if layout is None else [(k, policy.observation_space.spaces[k].shape) for k, _ in layout]

    class Folded(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.policy = policy
            self.register_buffer("mean", torch.as_tensor(mean))
            self.register_buffer("std", torch.as_tensor(std))
            self.register_buffer("clip", torch.as_tensor(clip))
            self.register_buffer("low", torch.as_tensor(space.low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(space.high, dtype=torch.float32))
            self.actor_critic = hasattr(policy, "mlp_extractor")
            self.squash = bool(getattr(policy, "squash_output", False)) or not self.actor_critic
            self.obs_layout = layout

        def forward(self, obs):
            x = (obs - self.mean) / self.std
            x = torch.maximum(torch.minimum(x, self.clip), -self.clip)
            if shapes is not None:  # back to the dict the policy was trained on
                parts, a = {}, 0
                for (key, shape), (_, n) in zip(shapes, layout):
                    parts[key] = x[:, a:a + n].reshape((-1,) + tuple(shape))
                    a += n
                x = parts
            if self.actor_critic:
                features = self.policy.extract_features(x, self.policy.pi_features_extractor) \
                    if not self.policy.share_features_extractor else self.policy.extract_features(x)
                a = self.policy.action_net(self.policy.mlp_extractor.forward_actor(features))
            else:
                a = self.policy.actor(x, deterministic=True) if "deterministic" in \
                    self.policy.actor.forward.__code__.co_varnames else self.policy.actor(x)
            if self.squash:
                a = self.low + 0.5 * (a + 1.0) * (self.high - self.low)
            return torch.maximum(torch.minimum(a, self.high), self.low)

    return Folded().eval()


def folded_rllib_module(module, obs_mean=None, obs_std=None):
    """A ``torch.nn.Module`` mapping raw observations (B, n_obs) to an RLlib ``RLModule``'s deterministic actions
    as :class:`~cenic_gym.sim2real.policy.RLlibPolicy` computes them (Gaussian mean, clipped to [−1, 1], scaled to
    the bounds), with the observation statistics folded in."""
    import torch
    from gymnasium import spaces

    space = module.action_space
    if not isinstance(space, spaces.Box):
        raise ValueError(f"only Box action spaces can be exported, got {space!r}")
    n_obs = int(np.prod(module.observation_space.shape))
    n_act = int(np.prod(space.shape))
    mean = np.zeros(n_obs, np.float32) if obs_mean is None else np.asarray(obs_mean, np.float32)
    std = np.ones(n_obs, np.float32) if obs_std is None else np.asarray(obs_std, np.float32)

    class FoldedRLlib(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module
            self.register_buffer("mean", torch.as_tensor(mean))
            self.register_buffer("std", torch.as_tensor(std))
            self.register_buffer("low", torch.as_tensor(space.low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(space.high, dtype=torch.float32))

        def forward(self, obs):
            out = self.module.forward_inference({"obs": (obs - self.mean) / self.std})
            a = torch.clamp(out["action_dist_inputs"][:, :n_act], -1.0, 1.0)  # DiagGaussian: [mean, log_std]
            return self.low + 0.5 * (a + 1.0) * (self.high - self.low)

    return FoldedRLlib().eval()


def _example(n_obs):
    import torch

    return torch.zeros(1, n_obs, dtype=torch.float32)


def export_onnx(module, n_obs, path, opset=17):
    """Write ``module`` as ONNX: input ``obs`` (batch, n_obs) float32, output ``action`` (batch, n_act); a module
    of dict observations records its ``obs_layout`` in the file's metadata (:mod:`~cenic_gym.sim2real.runtime`)."""
    import onnx
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (_example(n_obs),), str(path), input_names=["obs"], output_names=["action"],
                          dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}}, opset_version=opset,
                          dynamo=False)
    layout = getattr(module, "obs_layout", None)
    if layout is not None:
        graph = onnx.load(str(path))
        onnx.helper.set_model_props(graph, {OBS_LAYOUT_KEY: layout_to_text(layout)})
        onnx.save(graph, str(path))
    return path


def export_torchscript(module, n_obs, path):
    """Write ``module`` as TorchScript (traced): ``torch.jit.load(path)(obs)`` gives the actions; the
    ``obs_layout`` of dict observations goes into the file's extra file of that name."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    layout = getattr(module, "obs_layout", None)
    extra = {} if layout is None else {OBS_LAYOUT_KEY: layout_to_text(layout)}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.jit.trace(module, _example(n_obs)).save(str(path), _extra_files=extra)
    return path


def check_export(original, exported, observations, tol=1e-5):
    """Max |original(obs) − exported(obs)| over ``observations`` (rows); raises ValueError naming it and the
    observation index if above ``tol``."""
    if len(observations) and isinstance(observations[0], dict):
        obs = list(observations)
    else:
        obs = np.asarray(observations, dtype=np.float32)
        if obs.ndim != 2:
            raise ValueError(f"observations must be a non-empty (N, n_obs) array or a list of dicts, got shape "
                             f"{obs.shape}")
    if len(obs) == 0:
        raise ValueError("observations must not be empty")
    diffs = np.array([np.max(np.abs(np.asarray(original(o), np.float64) - np.asarray(exported(o), np.float64)))
                      for o in obs])
    worst = int(np.argmax(diffs))
    if not diffs[worst] <= tol:
        raise ValueError(f"exported policy differs from the original by {diffs[worst]:.3g} > tol {tol:g} at "
                         f"observation {worst}")
    return float(diffs[worst])


def collect_observations(env, policy, seeds, steps):
    """Observations met by ``policy`` in ``env`` (``steps`` per seed): the inputs for :func:`check_export`."""
    out = []
    for s in seeds:
        obs, _ = env.reset(seed=int(s))
        policy.reset(env)
        for _ in range(steps):
            out.append({k: np.asarray(x, np.float32) for k, x in obs.items()} if isinstance(obs, dict)
                       else np.asarray(obs, np.float32))
            obs, _, term, trunc, _ = env.step(policy(obs))
            if term or trunc:
                break
    return out if out and isinstance(out[0], dict) else np.array(out)


def export_policy(model_path, out_dir, env_id, seeds=(0,), steps=50, tol=1e-5, env_kwargs=None):
    """Export an SB3 ``.zip`` (and its ``<stem>.vecnormalize.pkl``) or an RLlib checkpoint folder (and its
    ``obs_normalization.npz``) to ``out_dir/<stem>.onnx`` and ``.pt``, and check both against the original on
    observations the policy meets in ``env_id`` (made with ``env_kwargs``). Returns {path: max error}."""
    from .policy import OnnxPolicy, RLlibPolicy, SB3Policy, TorchScriptPolicy, load_rllib, load_sb3, rllib_module_dir
    from .rollout import make_env

    if Path(model_path).is_dir() and rllib_module_dir(model_path) is not None:
        rl_module, mean, std = load_rllib(model_path)
        original = RLlibPolicy(rl_module, mean, std)
        module = folded_rllib_module(rl_module, mean, std)
        n_obs = int(np.prod(rl_module.observation_space.shape))
        stem = Path(model_path).name
    else:
        model, norm = load_sb3(model_path)
        original = SB3Policy(model, norm)
        module = folded_module(model, norm)
        n_obs = int(module.mean.shape[0])
        stem = Path(model_path).stem
    onnx_path = export_onnx(module, n_obs, Path(out_dir) / f"{stem}.onnx")
    ts_path = export_torchscript(module, n_obs, Path(out_dir) / f"{stem}.pt")
    env = make_env(env_id, **(env_kwargs or {}))
    obs = collect_observations(env, original, seeds, steps)
    env.close()
    return {str(onnx_path): check_export(original, OnnxPolicy(onnx_path), obs, tol),
            str(ts_path): check_export(original, TorchScriptPolicy(ts_path), obs, tol)}
