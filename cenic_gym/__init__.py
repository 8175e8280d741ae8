"""cenic-gym: robot-learning environments on CENIC (Convex Error-controlled Numerical Integration for Contact).

Engine layout (named as in the papers): :mod:`~cenic_gym.model` (multibody system and shapes),
:mod:`~cenic_gym.builder` (scenes in code), :mod:`~cenic_gym.contact` / :mod:`~cenic_gym.narrowphase` (geometry -> contacts), :mod:`~cenic_gym.kinematics`
(contact Jacobians), :mod:`~cenic_gym.icf` (the convex problem's potentials), :mod:`~cenic_gym.solver` (Newton with
exact line search), :mod:`~cenic_gym.cenic` (the error-controlled integrator), :mod:`~cenic_gym.external`
(implicit controllers and force elements), :mod:`~cenic_gym.robots` (robot model files), :mod:`~cenic_gym.simulator`
(API).
"""
from . import _numba_cache  # noqa: F401  (first: keys the kernels' numba cache by the sources they import)
from .cenic import IntegratorStats
from .errors import (AccuracyNotMetError, CenicError, ModelError, ModelFileNotFoundError, RobotDataNotFoundError,
                     SimulationError, SolverFailure)
from .external import ExternalSystem, InverseDynamicsPD, JointFriction, JointPD, JointPID
from .builder import SceneBuilder
from .model import (Box, Capsule, ContactMaterial, ConvexMesh, Coupler, Cylinder, HalfSpace, MultibodySystem, RobotInfo,
                    Sphere)
from .simulator import SimState, Simulator
from .suction import SuctionGripper


def _version():
    """The version in pyproject.toml (the single source): from the installed package's metadata; for a source
    checkout used without installing, read from the pyproject.toml beside the package; else "0+unknown"."""
    import importlib.metadata
    import os
    import re

    try:
        return importlib.metadata.version("cenic-gym")
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml")) as f:
            text = f.read()
    except OSError:
        return "0+unknown"
    m = re.search(r'(?ms)^\[project\]\s*$.*?^version\s*=\s*"([^"]+)"', text)
    return m.group(1) if m else "0+unknown"


__version__ = _version()


def _register_envs():
    """Register the tasks with Gymnasium (ids -> ``cenic_gym.envs.<module>``; imported lazily by ``gym.make``)."""
    import gymnasium

    from gymnasium.envs.registration import WrapperSpec

    # the goal-conditioned id: its GoalEnv API (compute_reward, ...) also on the wrapper gym.make returns
    goal_api = (WrapperSpec("GoalEnvAPI", "cenic_gym.env:GoalEnvAPI", {}),)
    specs = [("CenicFranka-v0", "franka_box:FrankaBoxEnv", 200, {}, ()),
             ("CenicFrankaGoal-v0", "franka_box:FrankaBoxGoalEnv", 200, {"goal_conditioned": True,
                                                                        "reward_type": "sparse"}, goal_api),
             ("CenicQuadruped-v0", "quadruped:QuadrupedEnv", 1000, {}, ()),
             ("CenicAllegro-v0", "allegro_cube:AllegroCubeEnv", 400, {}, ()),
             ("CenicSuction-v0", "suction_pick:SuctionPickEnv", 200, {}, ()),
             ("CenicPegInsertion-v0", "peg_insertion:PegInsertionEnv", 200, {}, ())]
    for env_id, entry, steps, kwargs, wrappers in specs:
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=f"cenic_gym.envs.{entry}", max_episode_steps=steps,
                               kwargs=kwargs, additional_wrappers=wrappers)


_register_envs()

__all__ = ["AccuracyNotMetError", "CenicError", "ModelError", "SolverFailure", "Box", "Capsule", "ContactMaterial", "ConvexMesh", "Coupler", "Cylinder", "ExternalSystem", "HalfSpace",
           "IntegratorStats", "InverseDynamicsPD", "JointFriction", "JointPD", "JointPID",
           "MultibodySystem", "RobotInfo", "SceneBuilder", "SimState", "SimulationError", "Simulator", "Sphere",
           "SuctionGripper"]
