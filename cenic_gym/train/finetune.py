"""Fine-tuning a shipped policy with off-policy RL: ``cenic-gym train ENV --algo sac --init training/policies/ENV``.

What the cloned policies give and what they lack: their actor (an SB3 SAC actor fitted by DAgger to a teacher's
actions) and their observation normalization are ready to act, but the actor's noise head was never fitted (only its
mean was) and there is no critic. Starting RL from them naively (a random critic steering a good actor, SAC's initial
entropy weight, uniform random actions before ``learning_starts``) unlearns the policy before the critic knows
anything. The recipe here follows WSRL (Zhou et al. 2024, "Efficient Online Reinforcement Learning Fine-Tuning Need
Not Retain Offline Data") and IBRL/PA-RL's warm start:

1. the new learner's actor is the shipped actor (weights copied; its architecture must match the recipe's), its
   noise head set to a constant exploration noise ``init["std"]`` (the Gaussian's std before the tanh);
2. the observation normalization is the shipped one, frozen (the actor was fitted to it);
3. the loaded actor acts from the first step (not uniform random actions), and for the first
   ``init["learning_starts"]`` env steps nothing learns: the replay buffer fills with its own episodes;
4. for the first ``init["critic_warmup"]`` learner updates only the critic learns (the actor's and the entropy
   weight's rates are 0), so that the actor follows a critic that has seen its data;
5. then SAC / TQC on the task's reward, the actor's loss plus ``init["prior_weight"]`` × the mean squared distance
   of its mean action from the shipped actor's on a replay batch (0: plain SAC). Without it the first Go1 run
   (5 000 steps, 5 000 critic updates) fell from 0.80 to 0.00 evaluation success within 15 000 actor updates: a
   critic fitted on one policy's data steers the actor off it (the collapse WSRL and Cal-QL describe); the pull
   towards the prior keeps the policy where the critic has data while it improves on it.

No demonstrations and no teacher are used (``"demos": 0``, ``"teacher": false`` in ``learning_reward.json``).
"""
from __future__ import annotations

import math
from pathlib import Path

from .configs import RecipeError

INIT_ALGOS = ("sac", "tqc")  # torch learners whose actor is SB3's SAC actor: what the shipped policies are
MODEL_FILE = "model.zip"


def init_model_path(init) -> Path:
    """The SB3 model of ``--init``: a policy folder's ``model.zip``, or a ``.zip`` itself."""
    p = Path(init)
    path = p / MODEL_FILE if p.is_dir() else p
    if not path.is_file() or path.suffix != ".zip":
        raise RecipeError(f"--init {str(init)!r}: no SB3 model there (a policy folder with {MODEL_FILE}, or a "
                                ".zip)")
    return path


def load_init(init):
    """(actor state dict, the policy's observation normalizer or None) of the policy at ``init``."""
    from stable_baselines3 import SAC

    from ..sim2real.policy import load_sb3

    model, norm = load_sb3(init_model_path(init))
    if not isinstance(model, SAC):
        raise RecipeError(f"--init {str(init)!r} is a {type(model).__name__} model; fine-tuning starts from an SAC "
                         "actor (what DAgger and SAC train)")
    return model.actor.state_dict(), norm


def warm_started(cls):
    """``cls`` (SAC or TQC) with the warm start of this module: the policy acts from the first step, and during the
    first ``warmup_updates`` updates only the critic learns."""

    class WarmStarted(cls):
        warmup_updates = 0

        def _sample_action(self, learning_starts, action_noise=None, n_envs=1):
            return super()._sample_action(0, action_noise, n_envs)  # the loaded actor acts, never uniform noise

        def _update_learning_rate(self, optimizers):
            super()._update_learning_rate(optimizers)
            if self._n_updates < self.warmup_updates:
                for optimizer in optimizers:
                    if optimizer is not self.critic.optimizer:
                        for group in optimizer.param_groups:
                            group["lr"] = 0.0  # Adam with rate 0 leaves the actor and the entropy weight as they are

    WarmStarted.__name__ = WarmStarted.__qualname__ = f"WarmStarted{cls.__name__}"
    return WarmStarted


def pull_towards_prior(model, actor_state, weight, batch_size):
    """Add ``weight`` × ‖μ(s) − μ₀(s)‖² (mean over a replay batch and the actions; μ₀ the shipped actor's mean) to
    every actor update of ``model``: its gradient is added before the actor's optimizer steps."""
    import copy

    import torch
    import torch.nn.functional as F

    prior = copy.deepcopy(model.actor)
    prior.load_state_dict(actor_state)
    prior.requires_grad_(False)
    optimizer = model.actor.optimizer
    step = optimizer.step

    def regularized_step(*args, **kwargs):
        if weight > 0.0 and model._n_updates >= model.warmup_updates:
            obs = model.replay_buffer.sample(batch_size, env=model._vec_normalize_env).observations
            with torch.no_grad():
                target = prior(obs, deterministic=True)
            (weight * F.mse_loss(model.actor(obs, deterministic=True), target)).backward()
        return step(*args, **kwargs)

    optimizer.step = regularized_step
    return model


def start_from(model, actor_state, init_cfg):
    """Copy the shipped actor into ``model`` (its noise head set to ``init_cfg["std"]``) and arm the warm start."""
    import torch

    try:
        model.actor.load_state_dict(actor_state)
    except RuntimeError as e:
        raise RecipeError(f"the shipped actor does not fit the recipe's actor (sb3.policy_kwargs.net_arch): {e}") from e
    with torch.no_grad():
        model.actor.log_std.weight.zero_()
        model.actor.log_std.bias.fill_(math.log(init_cfg["std"]))
    model.warmup_updates = int(init_cfg["critic_warmup"])
    return model
