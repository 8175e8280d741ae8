"""``cenic-gym`` subcommands for envs and training: ``list``, ``train``, ``eval``, ``bench``.

    cenic-gym list                          registered envs, one line each
    cenic-gym train ENV [--algo A] [--backend sb3|rllib] [--workers N] [--steps N] [--out DIR] [--resume CKPT]
        [--env-kwargs JSON] [--hyperparams KEY=VALUE ...] [--init POLICY]
    cenic-gym eval CHECKPOINT [--episodes N]   plain episode evaluation of a training checkpoint
    cenic-gym bench ENV [--steps N]         env steps/s with random actions, in this process, one thread

:func:`add_subcommands` adds them to the main parser (``cenic_gym/cli.py``); each sets ``func``. Heavy imports
(torch, SB3, Ray) happen only when a command runs.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium as gym

from ..argtypes import env_options, integer_at_least
from .configs import ALGOS, BACKENDS, CONFIGS, DEFAULT_ALGOS, RecipeError, default_algo
from .finetune import INIT_ALGOS


def cenic_ids():
    """The registered cenic-gym env ids (``import cenic_gym`` registers them)."""
    import cenic_gym  # noqa: F401

    return sorted(k for k in gym.registry if k.startswith("Cenic"))


def describe(env_id):
    """One line: id, episode length, the task module's one-line summary and the id's fixed options."""
    spec = gym.spec(env_id)
    module = spec.entry_point.split(":")[0]
    import importlib

    doc = (importlib.import_module(module).__doc__ or "").strip().splitlines()
    summary = doc[0].split(": ", 1)[-1] if doc else ""
    extra = f" [{', '.join(f'{k}={v}' for k, v in spec.kwargs.items())}]" if spec.kwargs else ""
    return f"{env_id:20s} {spec.max_episode_steps:5d} steps  {summary}{extra}"


def bench(env_id, steps=200, seed=0, env_kwargs=None):
    """Random-action env steps/s in this process. The same ``steps`` steps (same seed) run once untimed first, so
    that every kernel the timed run reaches is loaded or compiled before the clock starts."""
    env = gym.make(env_id, **(env_kwargs or {}))

    def run():
        env.action_space.seed(seed)
        env.reset(seed=seed)
        substeps, sim_time, t0 = 0, 0.0, time.perf_counter()
        for _ in range(steps):
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            substeps += info["sim"]["substeps"]
            sim_time += env.unwrapped.control_period
            if terminated or truncated:
                env.reset()
        return substeps, sim_time, time.perf_counter() - t0

    run()  # warm-up
    substeps, sim_time, wall = run()
    env.close()
    return dict(steps_per_s=steps / wall, realtime_factor=sim_time / wall, substeps_per_step=substeps / steps,
                wall_s=wall)


def _list(a):
    for env_id in cenic_ids():
        print(describe(env_id))
    return 0


def _train(a):
    from . import train
    from .common import ensure_ray

    if a.algo is None:
        a.algo = default_algo(a.env)
    if a.algo not in CONFIGS[a.env]:
        a.parser.error(f"argument --algo: {a.algo!r} has no config for {a.env}; choose one of {sorted(CONFIGS[a.env])}")
    if a.backend == "rllib" and a.algo != "ppo":
        a.parser.error(f"argument --backend: rllib trains ppo only, got --algo {a.algo}; use --backend sb3 for sac")
    if a.address is not None:
        ensure_ray(a.address)
    if a.init is not None and a.algo not in INIT_ALGOS:
        a.parser.error(f"argument --init: fine-tuning runs {', '.join(INIT_ALGOS)}, got --algo {a.algo}")
    out = a.out or f"runs/{a.env}_{a.algo}_{a.backend}"
    try:
        path = train(a.env, a.algo, a.backend, steps=a.steps, workers=a.workers, num_envs=a.num_envs, out=out,
                     seed=a.seed, resume=a.resume, progress=not a.no_progress, verbose=a.verbose,
                     env_kwargs=a.env_kwargs, hyperparams=a.hyperparams, init=a.init)
    except RecipeError as e:
        a.parser.error(str(e))
    print(f"final checkpoint: {path}")
    print(f"TensorBoard: tensorboard --logdir {Path(out) / 'tb'}")
    return 0


def _eval(a):
    from . import evaluate

    if not Path(a.checkpoint).exists():
        a.parser.error(f"argument CHECKPOINT: {a.checkpoint!r} does not exist")
    result = evaluate(a.checkpoint, episodes=a.episodes, seed=a.seed)
    print(f"{a.checkpoint}: {result.summary()}")
    return 0


def _bench(a):
    r = bench(a.env, a.steps, a.seed)
    print(f"{a.env}: {r['steps_per_s']:.1f} env steps/s, real-time factor {r['realtime_factor']:.2f}, "
          f"{r['substeps_per_step']:.1f} CENIC steps per env step ({a.steps} random-action steps, one process)")
    return 0


def add_subcommands(sub):
    """Add ``list``, ``train``, ``eval`` and ``bench`` to the ``cenic-gym`` subparsers ``sub``."""
    ids = cenic_ids()
    p = sub.add_parser("list", help="list the registered envs, one line each")
    p.set_defaults(func=_list, parser=p)

    p = sub.add_parser("train", help="train a policy (PPO, SAC, TQC, CrossQ, DroQ, DAgger; SB3, SBX or RLlib)",
                       description="Train with the per-env config of cenic_gym/train/configs.py; writes run.json, "
                                   "TensorBoard logs (tb/), checkpoints, evaluations and the final model to --out.")
    p.add_argument("env", choices=sorted(CONFIGS), metavar="ENV", help=f"one of {', '.join(sorted(CONFIGS))}")
    defaults = ", ".join(f"{env} {algo}" for env, algo in DEFAULT_ALGOS.items())
    p.add_argument("--algo", choices=ALGOS, default=None,
                   help=f"{', '.join(ALGOS)} (default: the env's recipe: {defaults}; ppo for the others)")
    p.add_argument("--backend", choices=BACKENDS, default="sb3", help="sb3 or rllib (default: sb3)")
    p.add_argument("--workers", type=integer_at_least(0), default=0,
                   help="Ray actors / env runners, one CPU each (0: step the envs in this process; default 0)")
    p.add_argument("--steps", type=integer_at_least(1), default=None, help="env steps (default: the config's)")
    p.add_argument("--num-envs", type=integer_at_least(1), default=None, help="sub-envs (default: the config's)")
    p.add_argument("--out", default=None, help="run folder (default: runs/ENV_ALGO_BACKEND)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", default=None, metavar="CHECKPOINT",
                   help="continue from a checkpoint of this run (checkpoints/model_<n>_steps.zip); --steps counts all")
    p.add_argument("--env-kwargs", type=env_options, default=None, metavar="JSON",
                   help='env options for training and evaluation, on top of the recipe\'s, e.g. \'{"accuracy": 1e-2}\'')
    p.add_argument("--hyperparams", nargs="+", default=None, metavar="KEY=VALUE",
                   help="recipe entries to change: a config entry (steps=..., eval_every=...), a dotted path "
                        "(sb3.policy_kwargs.net_arch=[64,64], init.std=0.2) or a keyword of the algorithm (gamma=0.99)")
    p.add_argument("--init", default=None, metavar="POLICY",
                   help=f"fine-tune: start from a shipped policy's actor and normalization (a folder such as "
                        f"training/policies/ENV, or a model.zip); --algo {' or '.join(INIT_ALGOS)}")
    p.add_argument("--address", default=None, help="Ray cluster to join (ray.init(address=...)), e.g. auto")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--verbose", type=int, default=0, choices=(0, 1, 2))
    p.set_defaults(func=_train, parser=p)

    p = sub.add_parser("eval", help="evaluate a training checkpoint: return and success rate over episodes")
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="an SB3 .zip or an RLlib checkpoint folder of a run")
    p.add_argument("--episodes", type=integer_at_least(1), default=10)
    p.add_argument("--seed", type=int, default=0, help="episode k is reset with seed + k")
    p.set_defaults(func=_eval, parser=p)

    p = sub.add_parser("bench", help="env steps/s with random actions (one process, one thread)")
    p.add_argument("env", choices=ids, metavar="ENV", help=f"one of {', '.join(ids)}")
    p.add_argument("--steps", type=integer_at_least(1), default=200)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_bench, parser=p)
    return sub


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="cenic-gym")
    add_subcommands(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args()
    sys.exit(args.func(args))
