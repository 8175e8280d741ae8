"""CenicPegInsertion-v0: the wrist sensor against statics, scenery moved per episode and its snapshots, the teacher
inserting without tunnelling or deep penetration at the task's accuracy, and bad options named.

The env's generic contracts (Gymnasium's checker, determinism, pickling, bad kwargs) are ``tests/test_envs.py``'s,
which runs every registered id; the Whitney two-point analysis is ``tests/test_peg_physics.py``."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym.envs.peg_insertion import ForceSearchTeacher

G = 9.81


def _env(**kw):
    return gym.make("CenicPegInsertion-v0", **kw)


def test_wrist_sensor_reads_the_held_pegs_weight():
    """The arm holds still in free air: the tool receives the peg's weight through the pads (−m g in the world's
    z) and its moment about the sensor's origin, r × F with r the sensor → peg centre of mass, in the sensor's axes."""
    env = _env()
    env.reset(seed=0)
    u = env.unwrapped
    for _ in range(10):
        env.step(np.zeros(6, np.float32))
    w = u.sensor.read(u.sim)
    origin, R = u.sim.body_pose("panda/panda_hand")
    p_peg, _ = u.sim.body_pose("peg")
    weight = np.array([0.0, 0.0, -u.config["peg_mass"] * G])
    np.testing.assert_allclose(R @ w.force, weight, atol=2e-3)
    np.testing.assert_allclose(R @ w.torque, np.cross(p_peg - origin, weight), atol=2e-4)


def test_the_fixture_moves_per_episode_and_snapshots_keep_it():
    """Each reset draws the hole's pose; a snapshot taken in one episode, restored in another, brings its fixture
    back and continues bit for bit; a geometry that moves with a body cannot be placed."""
    env = _env()
    u = env.unwrapped
    env.reset(seed=0)
    p0 = u.sim.geometry_pose("fixture0")[0]
    for _ in range(5):
        env.step(np.full(6, 0.3, np.float32))
    snap = u.get_state()
    ref = [env.step(np.full(6, -0.2, np.float32))[0] for _ in range(5)]
    env.reset(seed=1)
    assert np.linalg.norm(u.sim.geometry_pose("fixture0")[0] - p0) > 1e-3
    u.set_state(snap)
    np.testing.assert_array_equal(u.sim.geometry_pose("fixture0")[0], p0)
    again = [env.step(np.full(6, -0.2, np.float32))[0] for _ in range(5)]
    for a, b in zip(ref, again):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="moves with a body"):
        u.sim.set_geometry_pose("peg/0", (0.0, 0.0, 0.0))


def _peg_fixture_penetration(u):
    cr = u.sim.contact_results()
    walls = set(u.fixture_geoms)
    pen = [-cr.phi[i] for i in range(cr.n) if "peg" in (cr.body_a[i], cr.body_b[i])
           and (cr.names_a[i] in walls or cr.names_b[i] in walls)]
    return max(pen, default=0.0)


@pytest.mark.parametrize("seed", [5000, 5001])
def test_teacher_inserts_without_tunnelling_at_the_tasks_accuracy(seed):
    """Two seeds of the teacher (its rate on 50 held-out episodes: benchmarks/RESULTS.md, "Learning: the peg
    insertion"): the peg ends
    ≥ 20 mm deep and upright; the peg–fixture contacts never penetrate more than 0.1 mm (the issue's bound at
    ε = 1e-3) and the tip is never inside a wall's material."""
    env = _env()
    obs, _ = env.reset(seed=seed)
    u = env.unwrapped
    teacher = ForceSearchTeacher(env)
    c = u.config
    deepest, done, info = 0.0, False, {}
    while not done:
        obs, _, terminated, truncated, info = env.step(teacher(obs))
        done = terminated or truncated
        deepest = max(deepest, _peg_fixture_penetration(u))
        ins = u.view.insertion
        in_wall = ins.depth > 1e-3 and u.inner_radius + 1e-3 < ins.d_xy < u.inner_radius + c["fixture_wall"]
        assert not in_wall, (ins, u.sim.t)
    assert info["is_success"] and not terminated, info
    assert u.view.insertion.depth >= c["insert_depth"] and u.view.insertion.tilt < math.radians(5.0)
    assert deepest <= 1e-4, deepest


@pytest.mark.parametrize("kwargs, match", [
    (dict(clearance=5e-5), r"clearance must be a diametral gap in \[1e-4, 5e-3\] m, got 5e-05"),
    (dict(insert_depth=0.03), r"insert_depth=0.03 must not exceed hole_depth=0.025"),
    (dict(grasp_offset=0.08), r"grasp_offset=0.08 must be less than peg_length=0.07"),
    (dict(camera_error=(1e-3, -1.0)), r"camera_error must hold finite numbers >= 0"),
])
def test_bad_task_options_raise_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _env(**kwargs)
