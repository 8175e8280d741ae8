"""Stable-Baselines3 adapter: :class:`SB3VecEnv`, an SB3 ``VecEnv`` over a :class:`~cenic_gym.vector.RayVectorEnv`.

Needs the ``train`` extra (stable-baselines3). SB3's reset semantics: a sub-env that is done is reset inside
``step_wait``; the observation returned is the first of its new episode, the final one is in
``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]`` is True when the episode was truncated (time
limit, solver failure ``info["sim_failure"]``, env exception ``info["env_error"]``, dead actor
``info["actor_restarted"]``) rather than terminated, so SB3 bootstraps from the final observation.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import iterate
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from .vector import RayVectorEnv


class SB3VecEnv(VecEnv):
    """SB3 ``VecEnv`` over ``venv`` (a :class:`RayVectorEnv` in ``SAME_STEP`` autoreset mode). ``seed(s)`` then
    ``reset()`` seeds sub-env i with s + i, as SB3's ``DummyVecEnv`` does."""

    def __init__(self, venv: RayVectorEnv):
        if not isinstance(venv, RayVectorEnv) or venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError(f"SB3VecEnv needs a RayVectorEnv with autoreset_mode=SAME_STEP, got {venv!r}")
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions = None

    def reset(self):
        options = [o for o in self._options if o]
        if any(o != options[0] for o in options[1:]) or (options and len(options) != self.num_envs):
            raise ValueError(f"SB3VecEnv passes one reset options dict to every sub-env, got {self._options!r}")
        obs, _ = self.venv.reset(seed=list(self._seeds), options=options[0] if options else None)
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions):
        self._actions = actions

    def step_wait(self):
        r = self.venv.step_packed(self._actions)
        dones = r.terminated | r.truncated
        infos = []
        for i, info in enumerate(r.infos):
            if dones[i]:
                info = dict(info)
                final = info.pop("final_obs", None)  # absent when the sub-env's reset failed: its last obs
                info["terminal_observation"] = final if final is not None else \
                    next(itertools.islice(iterate(self.venv.single_observation_space, r.obs), i, None))
                info.pop("final_info", None)
                info["TimeLimit.truncated"] = bool(r.truncated[i] and not r.terminated[i])
            infos.append(info)
        return r.obs, r.rewards.astype(np.float32), dones, infos

    def close(self):
        self.venv.close()

    def get_attr(self, attr_name, indices=None):
        return list(self.venv.get_attr(attr_name, indices=indices))

    def set_attr(self, attr_name, value, indices=None):
        self.venv.set_attr(attr_name, value, indices=indices)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        return list(self.venv.call(method_name, *method_args, indices=indices, **method_kwargs))

    def env_is_wrapped(self, wrapper_class, indices=None):
        return list(self.venv.is_wrapped(wrapper_class, indices=indices))


def make_sb3_vec_env(env: str | Callable[[], gym.Env], num_envs: int, **kwargs) -> SB3VecEnv:
    """An :class:`SB3VecEnv` of ``num_envs`` sub-envs in Ray actors; ``kwargs`` as :class:`RayVectorEnv` (the
    autoreset mode is always SAME_STEP)."""
    if "autoreset_mode" in kwargs:
        raise ValueError("the SB3 adapter always uses autoreset_mode=SAME_STEP (SB3's semantics)")
    return SB3VecEnv(RayVectorEnv(env, num_envs, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs))
