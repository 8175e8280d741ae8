"""argparse types shared by every ``cenic-gym`` subcommand (:mod:`cenic_gym.cli`, :mod:`cenic_gym.train.cli`,
:mod:`cenic_gym.sim2real.cli`): a bad value fails at parse time with a message naming it."""
from __future__ import annotations

import argparse
import math


def positive_number(upper=None):
    """argparse type: a finite float > 0 (and <= upper)."""

    def parse(text):
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (math.isfinite(x) and x > 0):
            raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
        if upper is not None and x > upper:
            raise argparse.ArgumentTypeError(f"must be <= {upper:g}, got {text!r}")
        return x

    return parse


def integer_at_least(minimum):
    """argparse type: a whole number >= minimum."""

    def parse(text):
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return n

    return parse


def env_options(text):
    """argparse type: a JSON object of env options, e.g. '{"task": "reach"}'."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"expected a JSON object of env options, got {text!r}: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object of env options, got {text!r}")
    return value
