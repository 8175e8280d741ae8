"""Scene files (URDF/MJCF) and meshes of cenic-gym's tasks; shipped in the wheel as ``cenic_gym.assets``."""
