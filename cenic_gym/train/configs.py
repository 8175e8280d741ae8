"""Per-env training hyperparameters (Playground ``config/`` style), kept apart from the env code.

``CONFIGS[env_id][algo]`` is a dict with:

- ``env_kwargs``: ``gym.make`` keyword arguments for training and evaluation (env options, ``max_episode_steps``);
- ``train_env_kwargs``: extra keyword arguments for the training envs only (training aids such as Franka's
  ``grasped_start`` and ``placed_start``; evaluation always runs the unmodified task of ``env_kwargs``);
- ``num_envs``: sub-envs in the vector env (spread over ``--workers`` Ray actors, or in process with 0 workers);
- ``steps``: default total env steps of ``cenic-gym train``;
- ``eval_every`` / ``eval_episodes``: periodic evaluation (env steps between evaluations, episodes per evaluation);
- ``checkpoint_every``: env steps between checkpoints;
- ``reward_scale``: the training envs' rewards × this for the learner (off-policy recipes; a training aid: the
  logged returns and every evaluation are the task's own);
- ``normalize``: SB3 observation normalization (``VecNormalize``, running mean / std; saved beside each checkpoint);
- ``policy`` (optional): the SB3 policy name (default ``MlpPolicy``, ``MultiInputPolicy`` for dict observations);
- ``sb3``: keyword arguments of the SB3 algorithm (``policy_kwargs`` included; ``her`` adds SB3's
  ``HerReplayBuffer`` with these arguments, for goal-conditioned envs with SAC);
- ``rllib``: arguments of ``PPOConfig.training`` (PPO only);
- ``init`` (runs started from a policy, ``cenic-gym train --init``; :mod:`cenic_gym.train.finetune`): ``std``, the
  actor's starting exploration noise (the cloned actors were fitted by their mean only), ``critic_warmup``, learner
  updates of the critic alone before the actor moves, ``learning_starts``, env steps the loaded actor plays before
  any update.

``LEARNERS[algo]`` names the class that runs a recipe ("module:Class", all with Stable-Baselines3's API:
stable-baselines3, sb3-contrib, SBX). ``cenic-gym train --hyperparams KEY=VALUE`` changes any entry
(:func:`apply_hyperparams`).

Numbers follow the SB3 zoo / Playground defaults for similar tasks, sized for a 2-core machine.
"""
from __future__ import annotations

import ast
import copy
import importlib
import inspect

_PPO = dict(
    num_envs=4, steps=200_000, train_env_kwargs={}, eval_every=20_000, eval_episodes=5, checkpoint_every=20_000, normalize=True,
    sb3=dict(n_steps=256, batch_size=256, n_epochs=10, learning_rate=3e-4, gamma=0.98, gae_lambda=0.95,
             clip_range=0.2, ent_coef=0.0, policy_kwargs=dict(net_arch=[256, 256])),
    rllib=dict(lr=3e-4, gamma=0.98, lambda_=0.95, clip_param=0.2, num_epochs=10, minibatch_size=256,
               train_batch_size_per_learner=1024),
)
# --init (cenic_gym.train.finetune): exploration noise 0.1 on every action (a cloned actor's noise head was never
# fitted), 10 000 env steps of the loaded actor before any update, then 20 000 updates of the critic alone, then SAC
# with the actor pulled towards the shipped one (weight 100 on the mean squared action difference). On the Go1 (with
# rewards x 50 and rate 1e-4) this kept the shipped policy's success (0.68 held-out against 0.70); 5 000 / 5 000 and
# weight 1 fell to 0.10 evaluation success within 20 000 env steps, weight 10 to 0.00 within 40 000
# (benchmarks/learning_reward.py; training/README.md "Learning from reward").
_INIT = dict(std=0.1, critic_warmup=20_000, learning_starts=10_000, prior_weight=100.0)
_SAC = dict(
    num_envs=1, steps=50_000, train_env_kwargs={}, eval_every=5_000, eval_episodes=10, checkpoint_every=10_000, normalize=False,
    sb3=dict(learning_rate=1e-3, buffer_size=1_000_000, batch_size=256, learning_starts=1_000, gamma=0.95,
             tau=0.05, train_freq=1, gradient_steps=1, policy_kwargs=dict(net_arch=[256, 256])),
    init=_INIT, reward_scale=1.0,
)

# The off-policy learners beside SAC, as changes to an env's SAC recipe (their classes: LEARNERS):
# - TQC (Kuznetsov et al. 2020, sb3-contrib): SAC with distributional critics, the top quantiles of each dropped;
# - CrossQ (Bhatt et al. 2024, sb3-contrib): SAC without target networks (no tau), batch-renormalized critics, one
#   update per sample, the actor every 3rd; critics [256, 256], not the paper's wide ones: with [1024, 1024] a
#   learner update takes 5.7x longer on one core of this CPU (9 against 51 per second, batch 256; SB3 SAC 69,
#   SBX SAC 119: benchmarks/learning_reward.py --learners);
# - DroQ ("A Walk in the Park", Smith et al. 2022; SBX's SAC): 20 updates per sample, critics with LayerNorm and
#   dropout 0.01, the actor and the entropy every 20th update;
# - sbx_sac / sbx_crossq: SAC / CrossQ in JAX (SBX), the recipes of their torch twins.
OFF_POLICY = dict(
    tqc=dict(drop=(), add=dict(top_quantiles_to_drop_per_net=2)),
    crossq=dict(drop=("tau",), add=dict(policy_delay=3, policy_kwargs=dict(net_arch=dict(pi=[256, 256],
                                                                                       qf=[256, 256])))),
    droq=dict(drop=(), add=dict(gradient_steps=20, policy_delay=20,
                                policy_kwargs=dict(net_arch=[256, 256], dropout_rate=0.01, layer_norm=True))),
    sbx_sac=dict(drop=(), add={}),
    sbx_crossq=dict(drop=("tau",), add=dict(policy_delay=3, policy_kwargs=dict(net_arch=dict(pi=[256, 256],
                                                                                           qf=[256, 256])))),
)
LEARNERS = dict(ppo="stable_baselines3:PPO", sac="stable_baselines3:SAC", dagger="stable_baselines3:SAC",
                tqc="sb3_contrib:TQC", crossq="sb3_contrib:CrossQ", droq="sbx:SAC", sbx_sac="sbx:SAC",
                sbx_crossq="sbx:CrossQ")


def off_policy(sac_recipe: dict) -> dict:
    """An env's recipes for the off-policy learners beside its SAC (``OFF_POLICY``): ``sac_recipe`` with each
    learner's changes to the algorithm's arguments (the env options, budget, evaluation, normalization and every
    shared argument kept)."""
    recipes = {}
    for algo, change in OFF_POLICY.items():
        kwargs = {k: v for k, v in copy.deepcopy(sac_recipe["sb3"]).items() if k not in change["drop"]}
        recipes[algo] = {**copy.deepcopy(sac_recipe), "sb3": {**kwargs, **copy.deepcopy(change["add"])}}
    return recipes


# PPO over Ray workers: 32 envs x 64 steps = 2048 env steps per update; with 2 workers that is 16 envs per actor, which
# makes Ray's per-call cost and the driver's policy inference per env step a quarter of 8 envs x 256 steps
# (docs/performance.md, "Ray vector envs").
_PPO_WIDE = dict(_PPO, num_envs=32, sb3=dict(_PPO["sb3"], n_steps=64, batch_size=512))

# The reach rung of CenicFrankaGoal-v0, two presets (TCP translation deltas of 5 cm per step at |a| = 1, rotation
# actions off, 50-step episodes, sparse reward):
# - REACH_TABLE: goals 10 cm above the pick-and-place target region (35-47 cm from the start TCP), success within
#   2.5 cm, deltas added to the controller's previous target (the env's defaults);
# - REACH (FetchReach's task definition): goals in a cube of half-width 15 cm around the start TCP, success within
#   5 cm, deltas added to the measured TCP (FetchReach resets its mocap to the gripper before each delta).
REACH_TABLE = dict(task="reach", action_type="ee_delta", ee_delta_scale=(0.05, 0.0), max_episode_steps=50)
REACH = dict(REACH_TABLE, ee_delta_origin="measured", reach_goal_range=0.15, goal_threshold=0.05)

# The pick-and-place with PPO or SAC (not the env's recipe: that is PICK_PLACE_DAGGER below): TCP translation deltas
# of 3 cm per step at |a| = 1 plus the gripper (rotation actions off: the hand keeps its start orientation, whose
# fingers close across a box yawed by up to 0.6 rad), 100-step (5 s) episodes, the dense staged reward. The TRAINING
# envs (PICK_PLACE_TRAIN): 40 % of the episodes start with the box already grasped (the HER paper's trick, env option
# grasped_start), 10 % with it grasped and standing on the target (placed_start: a reverse curriculum for letting go,
# which the staged reward alone never taught in a 1-hour run), and they run at accuracy 1e-2 instead of the task's
# 1e-3: twice the env steps per hour (1.0 vs 2.8 substeps per env step, benchmarks/RESULTS.md "Env throughput"), and
# the scripted expert's success and return are the same at every ε from 1e-1 to 1e-5 ("Sim-to-real: accuracy sweep").
# Evaluation runs the plain task at 1e-3. With it a 1-hour PPO run on two workers reached 0.1-0.3 evaluation success
# on the plain task (1.65 M env steps; 1 of 20 held-out episodes for its final model). 100-step episodes are
# bootstrapped from the value at the cut (_PPO_WIDE's 64-step rollouts).
PICK_PLACE = dict(action_type="ee_delta", ee_delta_scale=(0.03, 0.0), max_episode_steps=100)
PICK_PLACE_TRAIN = dict(grasped_start=0.4, placed_start=0.1, accuracy=1e-2)
PICK_PLACE_PPO = dict(_PPO_WIDE, env_kwargs=PICK_PLACE, train_env_kwargs=PICK_PLACE_TRAIN, steps=2_000_000,
                      eval_every=25_000, eval_episodes=10, checkpoint_every=200_000)
PICK_PLACE_SAC = dict(_SAC, env_kwargs=PICK_PLACE, train_env_kwargs=PICK_PLACE_TRAIN, steps=200_000,
                      eval_every=10_000, eval_episodes=10, checkpoint_every=50_000, normalize=True,
                      sb3=dict(_SAC["sb3"], learning_rate=3e-4, gamma=0.98, tau=0.005, learning_starts=5_000,
                               train_freq=2, gradient_steps=1))

# The pick-and-place by DAgger from the feedback teacher envs.franka_box.CartesianExpert (cenic_gym.train.dagger):
# TCP translation deltas of 3 cm and rotation deltas of 0.15 rad per step at |a| = 1 from the MEASURED TCP (the
# target never leads the hand by more than a step), the gripper; the task's own 200-step episodes, accuracy and
# starts for training and evaluation alike. One training aid: the training env's observations carry the task's
# observation noise (obs_noise=1: 5 mm positions, 0.01 quaternions, 0.005 rad / 0.05 rad/s joints) while the
# teacher reads the true state: the network learns to act from noisy observations (trained without it, a network of
# this recipe succeeded in 0 and 14 of 20 episodes at obs_noise=1 (two seeds); trained with it, 18-20 of 20, and
# as often as before without noise: training/README.md).
PICK_PLACE_CARTESIAN = dict(action_type="ee_delta", ee_delta_scale=(0.03, 0.15), ee_delta_origin="measured")
PICK_PLACE_DAGGER = dict(
    num_envs=1, steps=150_000, env_kwargs=PICK_PLACE_CARTESIAN, train_env_kwargs=dict(obs_noise=1.0),
    eval_every=10_000,
    eval_episodes=10, checkpoint_every=20_000, normalize=True,
    sb3=dict(policy_kwargs=dict(net_arch=[256, 256])),
    dagger=dict(teacher="cenic_gym.envs.franka_box:CartesianExpert", episodes_per_round=10, beta0=1.0,
                beta_decay=0.5, noise=0.0, gradient_steps=500, batch_size=256, learning_rate=1e-3),
)

# The suction pick-and-place by DAgger from the feedback teacher envs.suction_pick.SuctionExpert: the task's own
# action space (gantry target deltas, suction on/off), observations, starts, 200-step episodes and accuracy for
# training and evaluation alike, and no training aid. The Franka's aid (noisy observations for the network, obs_noise
# =1) slowed this task down: seed 0 reached 0.68 held-out success after 150 k env steps with it and 0.98 without,
# and the network trained without it still succeeds in 19 of 20 episodes at obs_noise=1.
SUCTION_DAGGER = dict(PICK_PLACE_DAGGER, env_kwargs={}, train_env_kwargs={},
                      dagger=dict(PICK_PLACE_DAGGER["dagger"], teacher="cenic_gym.envs.suction_pick:SuctionExpert"))

# The peg insertion by DAgger from the feedback teacher envs.peg_insertion.ForceSearchTeacher (touch down on the seen
# hole, step away from the support the wrist's moment points at until the peg drops in, push it in with a remote
# centre of compliance at the tip). The teacher acts from the observation alone (the wrist wrench, the seen hole, the
# controller's lead, the TCP pose; the grasp assumed nominal), so the network can copy it; the task's own actions,
# starts, camera error, 200-step episodes and accuracy for training and evaluation alike, and no training aid.
PEG_DAGGER = dict(PICK_PLACE_DAGGER, env_kwargs={}, train_env_kwargs={}, steps=100_000, eval_every=20_000,
                  checkpoint_every=20_000,
                  dagger=dict(PICK_PLACE_DAGGER["dagger"], teacher="cenic_gym.envs.peg_insertion:ForceSearchTeacher"))

# The Go1 joystick by DAgger from the feedback teacher envs.quadruped.GaitTeacher through the env's gait action mode
# (a trot generator driven by a stance velocity, a step offset, a posture and residual joint offsets; the phase
# observed): the task's own commands, 1000-step episodes and accuracy for training and evaluation alike, and no
# training aid. The teacher acts from the observation alone, so the network can copy it exactly; four episodes
# (4000 steps) per round.
QUADRUPED_DAGGER = dict(PICK_PLACE_DAGGER, env_kwargs=dict(action_type="gait"), train_env_kwargs={}, steps=150_000,
                        eval_every=25_000, eval_episodes=10, checkpoint_every=25_000,
                        dagger=dict(PICK_PLACE_DAGGER["dagger"], teacher="cenic_gym.envs.quadruped:GaitTeacher",
                                    episodes_per_round=4))

# The Allegro z-rotation by behaviour cloning of the feedback teacher envs.allegro_cube.GoalRotator (the finger relay
# turned towards each goal, clockwise or, for goals up to 100° the other way, mirrored; it stops at the goal's yaw and
# lets a tilted cube fall flat, fingers stretched and thumb open) through the DAgger loop with the teacher acting
# throughout (β = 1: 20 teacher episodes per round, the network refitted to all of them) on the goal task goal="z":
# the task's own actions (joint-target steps of 0.1 rad), observation (the cube's pose among it; no privileged
# state), starts, success threshold, 400-step episodes and accuracy. One training aid: DART (Laskey et al. 2017,
# "DART: Noise Injection for Robust Imitation Learning"), the teacher's executed actions perturbed by Gaussian noise
# of σ = 0.2 while its clean actions are recorded, so that the data holds the states a copy's errors lead to and the
# teacher's way back from them; DAgger with the network acting did worse (0.0-0.2). The polish: at the constant rate
# of 1e-3 the last round's network is one noisy iterate; the final fit anneals the rate to 1e-5. Three hidden layers:
# the two-layer network underfit the data set (fit error 0.056 against 0.032 on the same 755 k samples). The
# observation holds the cube's orientation since its copies were measured with and without it (the relay pushes the
# cube's edges, which the rotation to the goal alone does not show): 0.52 -> 0.63 success and 0.58 -> 0.93 goals per
# episode offline. 450 k env steps and 500 Adam steps per round: the teacher acts throughout, so the per-round fits
# only move the periodic evaluations, and three seeds take 72 min at once on 2 cores (median 0.68 success, 1.06 goals
# per episode on the 50 held-out episodes). Measurements: training/README.md, "The Allegro z-rotation"; the three
# seeds: benchmarks/learning_allegro.py.
ALLEGRO_DAGGER = dict(PICK_PLACE_DAGGER, env_kwargs=dict(goal="z"), train_env_kwargs={}, steps=450_000,
                      eval_every=50_000, eval_episodes=10, checkpoint_every=50_000,
                      sb3=dict(policy_kwargs=dict(net_arch=[512, 512, 512])),
                      dagger=dict(PICK_PLACE_DAGGER["dagger"], teacher="cenic_gym.envs.allegro_cube:GoalRotator",
                                  episodes_per_round=20, gradient_steps=500, beta_decay=1.0, noise=0.2,
                                  polish=dict(gradient_steps=20_000, batch_size=1024, lr_end=1e-5)))

# The Go1 joystick by off-policy RL on the task's reward through the gait action mode (no teacher, no
# demonstrations): the task's commands, starts, 1000-step episodes, reward and ε for training and evaluation alike.
# The reward is small per step (at most 0.03: Playground's weights per second × 0.02 s), so the entropy weight starts
# at 0.01, not SAC's 1 (which would pay randomness ~500× more than tracking at first). Fine-tuning (``--init
# training/policies/CenicQuadruped-v0``, the DAgger actor): _INIT.
QUADRUPED_SAC = dict(_SAC, env_kwargs=dict(action_type="gait"), steps=500_000, eval_every=25_000, eval_episodes=10,
                     checkpoint_every=25_000, normalize=True,
                     sb3=dict(_SAC["sb3"], learning_rate=3e-4, gamma=0.99, tau=0.005, learning_starts=5_000,
                              ent_coef="auto_0.01"))

ALLEGRO_SAC = dict(_SAC, env_kwargs={}, sb3=dict(_SAC["sb3"], gamma=0.99))
REACH_SAC = dict(_SAC, env_kwargs=REACH, normalize=True, steps=20_000, eval_every=2_000,  # the zoo's FetchReach
                 checkpoint_every=5_000, sb3=dict(_SAC["sb3"], policy_kwargs=dict(net_arch=[64, 64]),
                                                  her=dict(n_sampled_goal=4, goal_selection_strategy="future")))
SUCTION_SAC = dict(_SAC, env_kwargs={})

CONFIGS: dict[str, dict[str, dict]] = {
    "CenicFranka-v0": {
        "dagger": PICK_PLACE_DAGGER,
        "ppo": PICK_PLACE_PPO,
        "sac": PICK_PLACE_SAC,
        **off_policy(PICK_PLACE_SAC),
    },
    # reach rung of the goal-conditioned Franka with FetchReach's task definition (REACH above; REACH_TABLE for the
    # harder table-target variant: benchmarks/learning_curve.py --preset table)
    "CenicFrankaGoal-v0": {
        "sac": REACH_SAC,
        "ppo": {**_PPO, "env_kwargs": REACH},
        "tqc": off_policy(REACH_SAC)["tqc"],  # TQC + HER (the zoo's FetchReach learner); CrossQ takes no HER
    },
    "CenicQuadruped-v0": {
        "ppo": {**_PPO_WIDE, "env_kwargs": {}, "sb3": {**_PPO_WIDE["sb3"], "gamma": 0.99},
                "rllib": {**_PPO["rllib"], "gamma": 0.99},
                "eval_every": 50_000},  # an evaluation is 5 episodes of 1000 steps in the driver
        "dagger": QUADRUPED_DAGGER,
        "sac": QUADRUPED_SAC,
        **off_policy(QUADRUPED_SAC),
    },
    "CenicAllegro-v0": {
        "dagger": ALLEGRO_DAGGER,
        "ppo": {**_PPO, "env_kwargs": {}, "sb3": {**_PPO["sb3"], "gamma": 0.99}, "rllib": {**_PPO["rllib"],
                                                                                          "gamma": 0.99}},
        "sac": ALLEGRO_SAC,
        **off_policy(ALLEGRO_SAC),
    },
    "CenicPegInsertion-v0": {  # from reward: the suction's recipes as a first try (not tuned)
        "dagger": PEG_DAGGER,
        "ppo": {**_PPO_WIDE, "env_kwargs": {}},
        "sac": SUCTION_SAC,
        **off_policy(SUCTION_SAC),
    },
    "CenicSuction-v0": {
        "dagger": SUCTION_DAGGER,
        "ppo": {**_PPO_WIDE, "env_kwargs": {}},
        "sac": SUCTION_SAC,
        **off_policy(SUCTION_SAC),
    },
}

ALGOS = tuple(LEARNERS)
# the algo `cenic-gym train ENV` runs when --algo is not given: the env's recipe that learns its task; PPO elsewhere
DEFAULT_ALGOS = {"CenicFranka-v0": "dagger", "CenicFrankaGoal-v0": "sac", "CenicQuadruped-v0": "dagger",
                 "CenicAllegro-v0": "dagger", "CenicSuction-v0": "dagger", "CenicPegInsertion-v0": "dagger"}


def default_algo(env_id: str) -> str:
    """The algo of ``env_id``'s recipe (``DEFAULT_ALGOS``, else "ppo")."""
    return DEFAULT_ALGOS.get(env_id, "ppo")
BACKENDS = ("sb3", "rllib")


def get_config(env_id: str, algo: str) -> dict:
    """A deep copy of ``CONFIGS[env_id][algo]``; an unknown env or algo raises ValueError listing the choices."""
    if env_id not in CONFIGS:
        raise ValueError(f"unknown env {env_id!r}; choose one of {sorted(CONFIGS)}")
    if algo not in CONFIGS[env_id]:
        raise ValueError(f"unknown algo {algo!r} for {env_id}; choose one of {sorted(CONFIGS[env_id])}")
    return copy.deepcopy(CONFIGS[env_id][algo])


class RecipeError(ValueError):
    """A run asked for a recipe that cannot be: an unknown hyperparameter, algo or --init (the CLI prints it as a
    usage error)."""


EXTRAS = {"sb3_contrib": "cenic-gym[zoo] (sb3-contrib)", "sbx": "sbx-rl and jax<0.12 (pip install sbx-rl 'jax<0.12')",
          "stable_baselines3": "cenic-gym[train]"}


def learner_class(algo: str):
    """The class that runs ``algo``'s recipes (``LEARNERS``); ImportError naming what to install if it is absent."""
    if algo not in LEARNERS:
        raise RecipeError(f"unknown algo {algo!r}; choose one of {list(LEARNERS)}")
    module, _, name = LEARNERS[algo].partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as e:
        raise ImportError(f"algo {algo!r} runs {LEARNERS[algo]}, which needs {EXTRAS[module]}: {e}") from e


RUN_ARGS = {"self", "env", "policy", "_init_setup_model", "seed", "tensorboard_log", "verbose", "device"}  # the run's


def parse_value(text: str):
    """A ``--hyperparams`` value: a Python literal (1e-3, [64, 64], {'pi': [64]}, True, None), else the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def apply_hyperparams(cfg: dict, algo: str, hyperparams) -> dict:
    """``cfg`` (a recipe, changed in place and returned) with ``hyperparams`` applied: ``"KEY=VALUE"`` strings or a
    ``{KEY: value}`` dict. KEY is a config entry (``steps``, ``eval_every``, ``normalize``, ``env_kwargs``, …), a
    dotted path into one (``sb3.policy_kwargs.net_arch``, ``init.std``, ``env_kwargs.accuracy``), or a keyword
    argument of the learner (``gamma``: short for ``sb3.gamma``); a dict value at a dict entry updates it
    (``sb3={"n_steps": 256}`` changes n_steps and keeps the rest).
    A key that is none of these raises ValueError naming it and the choices."""
    if isinstance(hyperparams, dict):
        items = list(hyperparams.items())
    else:
        items = []
        for pair in hyperparams:
            key, sep, text = str(pair).partition("=")
            if not sep or not key:
                raise RecipeError(f"hyperparameter {pair!r} is not KEY=VALUE")
            items.append((key.strip(), parse_value(text.strip())))
    learner_args = None
    for key, value in items:
        path = key.split(".")
        if path[0] not in cfg:
            if learner_args is None:
                learner_args = set(inspect.signature(learner_class(algo).__init__).parameters) - RUN_ARGS
            if path[0] not in learner_args:
                raise RecipeError(f"unknown hyperparameter {key!r}: not a config entry ({sorted(cfg)}) nor a keyword "
                                 f"argument of {LEARNERS[algo]} ({sorted(learner_args)})")
            path = ["sb3", *path]
            cfg.setdefault("sb3", {})
        node = cfg
        for depth, part in enumerate(path[:-1]):
            if not isinstance(node.get(part, {}), dict):
                raise RecipeError(f"hyperparameter {key!r}: {'.'.join(path[:depth + 1])!r} is not a dict")
            if part not in node and not (depth >= 1 and path[0] == "sb3"):
                raise RecipeError(f"hyperparameter {key!r}: the recipe has no {'.'.join(path[:depth + 1])!r}")
            node = node.setdefault(part, {})
        if isinstance(node.get(path[-1]), dict) and isinstance(value, dict):
            node[path[-1]].update(copy.deepcopy(value))
        else:
            node[path[-1]] = copy.deepcopy(value)
    return cfg
