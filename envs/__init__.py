"""The cenic-gym tasks, one module each (shipped in the wheel as ``cenic_gym.envs``; registered with Gymnasium on
``import cenic_gym``)."""

import importlib

# env id -> "module:Class" of the task's scripted (non-learned) policy: ``Class(env)``, ``.reset()`` after
# ``env.reset``, ``__call__(obs)`` -> action. Each proves its task physically solvable (benchmarks/ and RESULTS.md).
SCRIPTED_POLICIES = {"CenicFranka-v0": "cenic_gym.envs.franka_box:ScriptedExpert",
                     "CenicSuction-v0": "cenic_gym.envs.suction_pick:ScriptedPicker",
                     "CenicQuadruped-v0": "cenic_gym.envs.quadruped:TrotGait",
                     "CenicAllegro-v0": "cenic_gym.envs.allegro_cube:ScriptedRotator",
                     "CenicPegInsertion-v0": "cenic_gym.envs.peg_insertion:ForceSearchTeacher"}


def scripted_policy_class(env_id):
    """The class of ``env_id``'s scripted policy; ValueError naming the ids that have one if it has none."""
    if env_id not in SCRIPTED_POLICIES:
        raise ValueError(f"no scripted policy for {env_id!r}; envs with one: {sorted(SCRIPTED_POLICIES)}")
    module, cls = SCRIPTED_POLICIES[env_id].split(":")
    return getattr(importlib.import_module(module), cls)
