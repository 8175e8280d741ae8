"""Reference scenes with known answers (physics-notes §5.6), shared by the tests, the demo and the benchmarks.

Every function returns a :class:`~cenic_gym.model.MultibodySystem`; all numbers are SI. Where a scene's
material is stated, both the ground and the bodies get it, so the combined pair material (springs in series,
harmonic-mean friction, physics-notes §2.2) has stiffness k/2 and the stated μ.
"""
from __future__ import annotations

import math

import numpy as np

from .model import Box, ContactMaterial, SceneBuilder, Sphere


def free_fall(mass=1.0, height=1.0):
    """A sphere in free fall (no ground)."""
    b = SceneBuilder()
    b.add_body("ball", Sphere(0.05), mass=mass, position=(0, 0, height))
    return b.build()


def sphere_drop(height=1.0, radius=0.05, mass=0.1, stiffness=1e3, dissipation=0.0, mu=0.5):
    """CENIC Fig. 8: a ball dropped on the ground; its lowest point starts ``height`` above the ground.
    ``stiffness`` is the combined pair stiffness [N/m]."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    b.add_body("ball", Sphere(radius), mass=mass, position=(0, 0, height + radius), material=mat)
    return b.build()


def incline(angle_deg=20.0, mu=0.5, mu_dynamic=None, mass=1.0, side=0.1, stiffness=1e5, dissipation=10.0):
    """Box of side ``side`` resting on a half-space tilted by ``angle_deg`` about the world y axis; the slope
    rises towards +x (descends towards −x). The box starts at its static equilibrium penetration. ``stiffness`` per pair point."""
    th = math.radians(angle_deg)
    n = np.array([-math.sin(th), 0.0, math.cos(th)])  # outward normal; the slope goes down towards −x
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu,
                          mu_dynamic=mu if mu_dynamic is None else mu_dynamic)
    b = SceneBuilder()
    b.add_ground(mat, normal=n)
    R = _rot_y(-th)
    sag = mass * 9.81 * math.cos(th) / (4 * stiffness)  # 4 corners
    pos = (0.5 * side - sag) * n
    b.add_body("box", Box((side, side, side)), mass=mass, position=pos, rotation=R, material=mat)
    return b.build()


def _rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def sliding_box(v0=1.0, mu=0.5, mu_dynamic=None, mass=1.0, side=0.1, stiffness=1e5, dissipation=10.0):
    """A box resting on flat ground (at its static sag) with initial horizontal speed v0 along +x."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu,
                          mu_dynamic=mu if mu_dynamic is None else mu_dynamic)
    b = SceneBuilder()
    b.add_ground(mat)
    sag = mass * 9.81 / (4 * stiffness)
    b.add_body("box", Box((side, side, side)), mass=mass, position=(0, 0, 0.5 * side - sag),
               velocity=(v0, 0, 0), material=mat)
    return b.build()


def rolling_sphere(U0=2.0, mu=0.5, radius=0.025, mass=0.5, stiffness=1e5, dissipation=10.0):
    """ICF §XI-B: a sphere launched along the ground at U0 without spin; slides, then rolls after 2U0/(7μg)."""
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    sag = mass * 9.81 / stiffness
    b.add_body("ball", Sphere(radius), mass=mass, position=(0, 0, radius - sag), velocity=(U0, 0, 0), material=mat)
    return b.build()


def clutter(n_objects=20, stiffness=1e5, dissipation=50.0, mu=0.5, seed=0, bin_inner=0.5, wall=0.05,
            wall_height=0.5, drop_height=0.1):
    """CENIC hard clutter: alternating 10 cm boxes (1 kg) and 10 cm spheres (0.524 kg) dropped into an open bin
    (floor = ground half-space, four fixed box walls), a 3 x 3 grid per layer, layers 14 cm apart, poses jittered
    with ``seed`` (no initial overlaps). ``stiffness`` is the combined pair stiffness [N/m]."""
    rng = np.random.default_rng(seed)
    mat = ContactMaterial(stiffness=2 * stiffness, dissipation=dissipation, mu_static=mu)
    b = SceneBuilder()
    b.add_ground(mat)
    half = 0.5 * bin_inner
    for i, (x, y, lx, ly) in enumerate([(half + wall / 2, 0, wall, bin_inner + 2 * wall),
                                        (-half - wall / 2, 0, wall, bin_inner + 2 * wall),
                                        (0, half + wall / 2, bin_inner, wall),
                                        (0, -half - wall / 2, bin_inner, wall)]):
        b.add_fixed(f"wall{i}", Box((lx, ly, wall_height)), position=(x, y, wall_height / 2), material=mat)
    per_side = max(1, int((bin_inner - 0.02) // 0.15))  # 3 x 3 per layer in a 0.5 m bin
    per_layer = per_side * per_side
    spacing = 0.15
    for i in range(n_objects):
        layer, k = divmod(i, per_layer)
        x = (k % per_side - 0.5 * (per_side - 1)) * spacing + rng.uniform(-0.005, 0.005)
        y = (k // per_side - 0.5 * (per_side - 1)) * spacing + rng.uniform(-0.005, 0.005)
        z = drop_height + 0.14 * layer
        rot = rng.uniform(-0.15, 0.15, size=3)
        if (k + layer) % 2 == 0:  # checkerboard: columns alternate boxes and spheres
            b.add_body(f"box{i}", Box((0.1, 0.1, 0.1)), mass=1.0, position=(x, y, z), rotation=rot, material=mat)
        else:
            b.add_body(f"sphere{i}", Sphere(0.05), mass=0.524, position=(x, y, z), material=mat)
    return b.build()
