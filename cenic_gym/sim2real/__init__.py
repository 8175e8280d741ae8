"""Sim-to-real evaluation of policies on cenic-gym tasks (issue 16).

* :mod:`.policy`      the ``Policy`` protocol (obs -> action) and loaders: scripted expert, SB3, ONNX, TorchScript
* :mod:`.accuracy`    the accuracy sweep (ε and fixed δt): success, return, final-state divergence, the
                      numerical-artifact flag
* :mod:`.robustness`  perturbation sweeps (obs noise, latency, gains, effort limits, friction, mass, pushes)
* :mod:`.replay`      robot-log format, checks, replay through the env's controllers, tracking error; record_log
* :mod:`.export`      SB3 -> ONNX / TorchScript with normalization folded in, and the 1e-5 check
* :mod:`.runtime`     a standalone onnxruntime runner (numpy + onnxruntime only)
* :mod:`.sim2sim`     the same seeded episodes with MuJoCo as the physics (scene from :mod:`cenic_gym.mujoco_model`)
* :mod:`.report`      Markdown + PNG report;  :mod:`.cli`  ``cenic-gym sim2real ...``

Nothing heavy is imported here: torch, Stable-Baselines3 and onnxruntime load only where used.
"""
