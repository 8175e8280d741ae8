"""RLlib PPO (new API stack, env runners) on a cenic-gym env:

    python training/rllib_ppo.py [ENV] [--workers N] [--steps N] [--out DIR] [--resume CKPT]

The same as ``cenic-gym train ENV --algo ppo --backend rllib ...``; hyperparameters: cenic_gym/train/configs.py.
ENV defaults to CenicFranka-v0.
"""
import sys

from cenic_gym.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = ["CenicFranka-v0", *args]
    sys.exit(main(["train", *args, "--algo", "ppo", "--backend", "rllib"]))
