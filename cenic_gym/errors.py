"""The exceptions of cenic-gym: one family, a few meaningful kinds.

Bad arguments (a wrong value or type passed to a function) raise the built-in ``ValueError`` / ``TypeError``,
with the argument's name and the offending value in the message. Everything the library itself detects derives
from :class:`CenicError`:

* :class:`ModelError` — a model that cannot be simulated (negative mass, lower > upper joint limits, a degenerate
  mesh, a zero ground normal, a malformed URDF/MJCF). It is also a ``ValueError`` (it is a bad input).
  :class:`ModelFileNotFoundError`: a model file given by path does not exist (also a ``FileNotFoundError``);
  :class:`RobotDataNotFoundError`: the ``example-robot-data`` package's files are missing.
* :class:`SimulationError` — the integrator cannot continue, with two specific kinds:
  :class:`AccuracyNotMetError` (the error estimate stays above the accuracy down to ``min_step``) and
  :class:`SolverFailure` (a convex solve did not converge or produced a non-finite state).
"""
from __future__ import annotations


class CenicError(Exception):
    """Base of every error cenic-gym itself detects."""


class ModelError(CenicError, ValueError):
    """A model (scene, robot file, shape, material) that cannot be simulated; the message names the bad value."""


class ModelFileNotFoundError(ModelError, FileNotFoundError):
    """A robot model file (URDF, MJCF, SRDF) given by path does not exist."""


class RobotDataNotFoundError(CenicError, FileNotFoundError):
    """The ``example-robot-data`` files (or one of them) could not be found: ``pip install example-robot-data``."""


class SimulationError(CenicError, RuntimeError):
    """The integrator cannot continue from the current state."""


class AccuracyNotMetError(SimulationError):
    """The step-doubling error estimate stays above the requested accuracy down to the minimum step."""


class SolverFailure(SimulationError):
    """A convex solve did not converge, or the state or an external system's output became non-finite."""
