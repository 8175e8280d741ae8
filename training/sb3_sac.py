"""SB3 SAC (+ HER on goal-conditioned envs) on a cenic-gym env:

    python training/sb3_sac.py [ENV] [--workers N] [--steps N] [--out DIR] [--resume CKPT]

The same as ``cenic-gym train ENV --algo sac --backend sb3 ...``; hyperparameters: cenic_gym/train/configs.py.
ENV defaults to CenicFrankaGoal-v0.
"""
import sys

from cenic_gym.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = ["CenicFrankaGoal-v0", *args]
    sys.exit(main(["train", *args, "--algo", "sac", "--backend", "sb3"]))
