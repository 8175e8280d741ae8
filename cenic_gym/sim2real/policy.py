"""Policies as the evaluation toolkit sees them: a callable ``obs -> action`` (numpy in, numpy out).

    policy = load_policy("scripted", env_id)       # the env's scripted policy (envs.SCRIPTED_POLICIES)
    policy = load_policy("ppo.zip", env)           # a Stable-Baselines3 model (+ ppo.vecnormalize.pkl if present)
    policy = load_policy("policy.onnx", env)       # an exported policy, run by onnxruntime
    policy = load_policy("policy.pt", env)         # an exported TorchScript policy
    policy = load_policy("rllib_checkpoint/", env) # an RLlib RLModule (+ obs_normalization.npz if present)
    policy.reset(env); action = policy(obs)

Every policy has ``name`` (for tables and plots), ``reset(env)`` (called after each ``env.reset``: a scripted policy
plans there, a stateless one ignores it) and ``__call__(obs) -> action`` (float32, the env's action shape).
Heavy libraries (torch, stable-baselines3, onnxruntime) are imported only by the policy kind that needs them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Policy(Protocol):
    """What the evaluation calls: ``reset(env)`` after every ``env.reset``, then ``policy(obs) -> action``."""

    name: str

    def reset(self, env) -> None: ...

    def __call__(self, obs) -> np.ndarray: ...


class ScriptedPolicy:
    """A scripted (non-learned) policy class built from the env, e.g. ``ScriptedExpert``: rebuilt at every
    ``reset(env)`` (it plans from the episode's start state, which it reads from the simulator, not the observation:
    observation noise does not reach it)."""

    def __init__(self, factory, name="scripted"):
        self.factory = factory
        self.name = name
        self._policy = None

    def reset(self, env):
        self._policy = self.factory(env)
        if hasattr(self._policy, "reset"):
            self._policy.reset()

    def __call__(self, obs):
        if self._policy is None:
            raise RuntimeError("ScriptedPolicy: call reset(env) after env.reset() before asking for actions")
        return np.asarray(self._policy(obs), dtype=np.float32)


class SB3Policy:
    """A Stable-Baselines3 model's deterministic action (``model.predict(obs, deterministic=True)``), with the
    observation normalized by a ``VecNormalize``'s running statistics when one is given (as at training time)."""

    def __init__(self, model, vecnormalize=None, name="sb3"):
        self.model = model
        self.vecnormalize = vecnormalize
        self.name = name

    def reset(self, env):
        pass

    def normalize(self, obs):
        """float32 observation (a dict of them for goal-conditioned envs), normalized as at training time."""
        if isinstance(obs, dict):
            obs = {k: np.asarray(v, dtype=np.float32) for k, v in obs.items()}
        else:
            obs = np.asarray(obs, dtype=np.float32)
        if self.vecnormalize is None:
            return obs
        out = self.vecnormalize.normalize_obs(obs)
        return {k: v.astype(np.float32) for k, v in out.items()} if isinstance(out, dict) else out.astype(np.float32)

    def __call__(self, obs):
        action, _ = self.model.predict(self.normalize(obs), deterministic=True)
        return np.asarray(action, dtype=np.float32)


class RLlibPolicy:
    """An RLlib (new API stack) ``RLModule``'s deterministic action: ``forward_inference`` on the (optionally
    normalized: (obs − mean) / std) observation, the action distribution's deterministic sample, then RLlib's
    default action normalization for Box spaces (``normalize_actions=True``: clip to [−1, 1], scale to the bounds)."""

    def __init__(self, module, obs_mean=None, obs_std=None, name="rllib"):
        import torch

        self.torch = torch
        self.module = module
        self.obs_mean = None if obs_mean is None else np.asarray(obs_mean, np.float32)
        self.obs_std = None if obs_std is None else np.asarray(obs_std, np.float32)
        self.name = name

    def reset(self, env):
        pass

    def __call__(self, obs):
        x = np.asarray(obs, dtype=np.float32)
        if self.obs_mean is not None:
            x = (x - self.obs_mean) / self.obs_std
        with self.torch.no_grad():
            out = self.module.forward_inference({"obs": self.torch.as_tensor(x[None])})
            dist = self.module.get_inference_action_dist_cls().from_logits(out["action_dist_inputs"])
            a = dist.to_deterministic().sample()[0].numpy().astype(np.float64)
        space = self.module.action_space
        a = space.low + 0.5 * (np.clip(a, -1.0, 1.0) + 1.0) * (space.high - space.low)
        return a.astype(np.float32)


RLLIB_MODULE_PATHS = ("", "learner_group/learner/rl_module/default_policy")  # an RLModule dir, an Algorithm's


def rllib_module_dir(path):
    """The RLModule checkpoint folder in ``path`` (an ``RLModule.save_to_path`` folder or an ``Algorithm.save``
    checkpoint), or None."""
    for sub in RLLIB_MODULE_PATHS:
        d = Path(path) / sub
        if (d / "class_and_ctor_args.pkl").is_file():
            return d
    return None


def load_rllib(path):
    """(RLModule, obs_mean or None, obs_std or None) of an RLlib checkpoint folder; observation statistics come from
    ``obs_normalization.npz`` (arrays ``mean``, ``std``) in ``path`` when present (RLlib keeps a MeanStdFilter's
    state in its connector, whose format varies between versions: save the two arrays beside the checkpoint)."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    d = rllib_module_dir(path)
    if d is None:
        raise ValueError(f"{str(path)!r} is not an RLlib RLModule or Algorithm checkpoint folder")
    module = RLModule.from_checkpoint(str(d))
    stats = Path(path) / "obs_normalization.npz"
    if stats.is_file():
        with np.load(stats) as z:
            return module, z["mean"], z["std"]
    return module, None, None


class TorchScriptPolicy:
    """An exported TorchScript policy (:func:`cenic_gym.sim2real.export.export_torchscript`): raw observation in,
    action out (normalization and clipping folded in)."""

    def __init__(self, path, name=None):
        import warnings

        import torch

        from .runtime import OBS_LAYOUT_KEY, layout_from_text

        self.torch = torch
        extra = {OBS_LAYOUT_KEY: ""}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates TorchScript, still loads it
            self.module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra).eval()
        text = extra[OBS_LAYOUT_KEY]
        text = text.decode() if isinstance(text, bytes) else text
        self.obs_layout = layout_from_text(text) if text else None
        self.name = name or Path(path).stem

    def reset(self, env):
        pass

    def __call__(self, obs):
        if isinstance(obs, dict):
            from .runtime import flatten_obs

            if self.obs_layout is None:
                raise ValueError("this policy takes flat observations (n_obs,), got a dict")
            obs = flatten_obs(obs, self.obs_layout)
        with self.torch.no_grad():
            x = self.torch.as_tensor(np.asarray(obs, dtype=np.float32)[None])
            return self.module(x)[0].numpy().astype(np.float32)


class OnnxPolicy:
    """An exported ONNX policy run by :class:`cenic_gym.sim2real.runtime.OnnxRuntimePolicy` (onnxruntime only)."""

    def __init__(self, path, name=None):
        from .runtime import OnnxRuntimePolicy

        self.runtime = OnnxRuntimePolicy(path)
        self.name = name or Path(path).stem

    def reset(self, env):
        pass

    def __call__(self, obs):
        return self.runtime(obs)


SCRIPTED = ("scripted", "trot")  # the env's scripted policy (cenic_gym.envs.SCRIPTED_POLICIES); "trot": the Go1's
DEFAULT_SCRIPTED_ENV = {"scripted": "CenicFranka-v0", "trot": "CenicQuadruped-v0"}  # when no env id is given


def load_sb3(path):
    """(model, vecnormalize or None) of an SB3 ``.zip`` (PPO, A2C, SAC, TD3, DDPG, TQC, with or without HER: the
    algorithm is read from the file's policy class); the ``VecNormalize`` statistics are loaded from
    ``<stem>.vecnormalize.pkl`` beside it, or from SB3's ``model_vecnormalize_<n>_steps.pkl`` beside a checkpoint
    ``model_<n>_steps.zip``, when present."""
    import json
    import pickle
    import zipfile

    import stable_baselines3 as sb3

    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data").decode())
    except (zipfile.BadZipFile, KeyError, ValueError):
        raise ValueError(f"{str(path)!r} is not a Stable-Baselines3 model file (a zip with a 'data' entry)") from None
    module = data.get("policy_class", {}).get("__module__", "")
    if module.startswith("stable_baselines3.sac"):
        algo = sb3.SAC
    elif module.startswith("stable_baselines3.td3"):
        algo = sb3.TD3  # DDPG shares TD3's policy: loading it as TD3 gives the same actions
    elif module == "stable_baselines3.common.policies":
        algo = sb3.PPO if "clip_range" in data else sb3.A2C
    elif module.startswith("sb3_contrib.tqc"):  # TQC's actor is SAC's: the same actions once loaded
        from sb3_contrib import TQC as algo
    else:
        raise ValueError(f"{str(path)!r}: unsupported SB3 policy class from {module!r} (PPO, A2C, SAC, TD3, DDPG, "
                         "TQC)")
    # an off-policy model trained with HER cannot be loaded without its env (SB3 asserts one for HerReplayBuffer):
    # evaluation needs no replay buffer, so load it with a one-transition default buffer instead
    custom = dict(replay_buffer_class=None, replay_buffer_kwargs={}, buffer_size=1) \
        if algo not in (sb3.PPO, sb3.A2C) else None
    model = algo.load(str(path), device="cpu", custom_objects=custom)
    from ..train.common import normalizer_path  # beside a final model.zip, or SB3's name for a checkpoint's

    norm_path = normalizer_path(path)
    vecnormalize = None
    if norm_path.exists():
        with open(norm_path, "rb") as f:
            vecnormalize = pickle.load(f)
        vecnormalize.training = False
    return model, vecnormalize


def load_policy(spec, env_id=None):
    """A :class:`Policy` from a spec: ``"scripted"`` (the scripted expert of ``env_id``), an SB3 ``.zip``, an RLlib
    checkpoint folder, an ``.onnx`` or a TorchScript ``.pt`` file. Raises ValueError naming the spec if it is none
    of these."""
    spec = str(spec)
    if spec in SCRIPTED:
        from ..envs import scripted_policy_class

        env_id = DEFAULT_SCRIPTED_ENV[spec] if env_id is None else env_id
        if spec == "trot" and env_id != "CenicQuadruped-v0":
            raise ValueError(f"policy 'trot' drives CenicQuadruped-v0, not {env_id}")
        cls = scripted_policy_class(env_id)
        return ScriptedPolicy(cls, name=f"{spec} ({cls.__name__})")
    path = Path(spec)
    if path.is_dir() and rllib_module_dir(path) is not None:
        module, mean, std = load_rllib(path)
        return RLlibPolicy(module, mean, std, name=path.name)
    if not path.is_file():
        raise ValueError(f"policy {spec!r}: not 'scripted', not an RLlib checkpoint folder and no such file")
    suffix = path.suffix.lower()
    if suffix == ".zip":
        model, norm = load_sb3(path)
        return SB3Policy(model, norm, name=path.stem)
    if suffix == ".onnx":
        return OnnxPolicy(path)
    if suffix in (".pt", ".ts"):
        return TorchScriptPolicy(path)
    raise ValueError(f"policy {spec!r}: unknown file type {suffix!r} (expected .zip (SB3), .onnx or .pt)")
