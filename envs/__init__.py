"""The cenic-gym tasks, one module each (shipped in the wheel as ``cenic_gym.envs``; registered with Gymnasium on
``import cenic_gym``)."""
