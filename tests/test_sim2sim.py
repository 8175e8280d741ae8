"""Sim-to-sim (issue 16): a policy on the same seeded episodes in cenic-gym and with MuJoCo as the physics, end
to end on tiny policies (the scripted Franka expert, the open-loop Go1 trot, a PPO trained for 64 steps and
exported to ONNX), a few env steps each; the MuJoCo episode's state is MuJoCo's, and in free motion the two
simulators agree to MuJoCo's time-discretization error (a convergence check)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cenic_gym import cli
from cenic_gym.envs import go1_constants as gc
from cenic_gym.mujoco_model import RenderError, import_mujoco
from cenic_gym.sim2real import sim2sim as s2s
from cenic_gym.sim2real.policy import load_policy
from cenic_gym.sim2real.rollout import make_env

try:  # through cenic_gym.render: MUJOCO_GL=egl is set before the first import (rendering tests need it)
    import_mujoco()
except RenderError:
    pytest.skip("needs mujoco (pip install 'cenic-gym[render]')", allow_module_level=True)


def test_franka_scripted_episode_in_both_simulators():
    env = make_env("CenicFranka-v0")
    ep = s2s.compare_episode(env, load_policy("scripted", "CenicFranka-v0"), seed=3, max_steps=4)
    assert ep.cenic.steps == ep.peer.steps == 4 and ep.peer.sim_failure is None
    assert ep.divergence.shape == (5,) and ep.divergence[0] == 0.0 and ep.one_step.shape == (4,)
    assert set(ep.bodies) == {"box"}
    # the runs differ (MuJoCo really was the physics) but not by much over 0.2 s of free arm motion
    assert 0.0 < ep.divergence.max() < 2e-2, ep.divergence  # different simulators, but close in free motion
    assert env.unwrapped.sim.__class__.__name__ == "Simulator"  # the env's simulator is put back
    again = s2s.compare_episode(env, load_policy("scripted", "CenicFranka-v0"), seed=3, max_steps=4)
    np.testing.assert_array_equal(again.peer.q, ep.peer.q)  # deterministic: same seed, same MuJoCo episode
    np.testing.assert_array_equal(again.divergence, ep.divergence)


def test_free_motion_gap_shrinks_with_mujocos_timestep():
    """One control period of the Franka from the same state (arm moving, box at rest): MuJoCo's prediction
    approaches CENIC's (ε = 1e-6) as MuJoCo's step shrinks, roughly first order (semi-implicit Euler)."""
    env = make_env("CenicFranka-v0", accuracy=1e-6)
    u = env.unwrapped
    env.reset(seed=0)
    u._apply_action(np.array([0.6, -0.6, 0.6, 0.6, -0.6, 0.6, 0.6, 1.0]))
    q0, v0, t0 = u.sim.q.copy(), u.sim.v.copy(), u.sim.t
    gaps = []
    physics = [s2s.MujocoPhysics(u.sim, h) for h in (2e-3, 5e-4)]
    u.sim.advance_to(t0 + u.control_period)
    arm = u.arm_q
    for p in physics:
        q = p.one_period(q0, v0, t0, t0 + u.control_period)
        gaps.append(np.abs(q[arm] - u.sim.q[arm]).max())
    assert gaps[1] < 0.4 * gaps[0] and gaps[1] < 2e-4, gaps


def test_mujoco_state_reaches_the_env():
    """During the MuJoCo run the env's observation is computed from MuJoCo's state: the simulator's q after a
    step equals MuJoCo's qpos (reordered)."""
    env = make_env("CenicQuadruped-v0")
    env.reset(seed=1)
    u = env.unwrapped
    physics = s2s.MujocoPhysics(u.sim)
    real, u.sim = u.sim, physics
    try:
        obs, _, _, _, info = env.step(np.zeros(12, np.float32))
    finally:
        u.sim = real
    q, v = physics.model.state(physics.data)
    np.testing.assert_array_equal(u.sim.q, q)
    np.testing.assert_array_equal(u.sim.v, v)
    assert info["sim"]["substeps"] == 20 and u.sim.contact_results().n >= 4  # 1 ms steps; feet on the ground
    np.testing.assert_allclose(obs[9:21], q[u.leg_q] - gc.NOMINAL, atol=1e-6)  # joint positions, float32


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory):
    """PPO on CenicQuadruped-v0 for 64 steps, exported to ONNX: a tiny trained policy."""
    import torch
    from stable_baselines3 import PPO

    from cenic_gym.sim2real.export import export_policy

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("quad")
    model = PPO("MlpPolicy", make_env("CenicQuadruped-v0", max_episode_steps=16), n_steps=32, batch_size=32,
                n_epochs=1, policy_kwargs=dict(net_arch=[16]), seed=0, device="cpu")
    model.learn(64)
    model.save(folder / "quad.zip")
    export_policy(folder / "quad.zip", folder, "CenicQuadruped-v0")
    return folder / "quad.onnx"


def test_sim2sim_cli_with_an_exported_policy(tiny_onnx, tmp_path, capsys):
    out = tmp_path
    assert cli.main(["sim2real", "sim2sim", "--env", "CenicQuadruped-v0", "--policy", str(tiny_onnx), "--episodes",
                     "2", "--max-steps", "5", "--plot", str(out / "s2s.png"), "--xml", str(out / "scene.xml"),
                     "--log", str(out / "s2s.jsonl")]) == 0
    text = capsys.readouterr().out
    assert "| CenicQuadruped-v0 | quad | MuJoCo 0.001 s, implicitfast | 2 |" in text and "go1/root_joint:" in text
    rows = [json.loads(x) for x in (out / "s2s.jsonl").read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1] and all(r["steps_peer"] == 5 for r in rows)
    assert all(r["peer_failure"] is None and r["max_divergence"] > 0 for r in rows)
    assert (out / "s2s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    xml = (out / "scene.xml").read_text()
    assert "<mujoco" in xml and xml.count('biastype="affine"') == 12  # the 12 joint PDs: position actuators


def test_unmapped_controllers_name_the_part():
    from cenic_gym import JointPID, Simulator

    system = make_env("CenicFranka-v0").unwrapped.system
    pid = JointPID(system, [0, 1], kp=100.0, ki=10.0, kd=10.0)
    with pytest.raises(NotImplementedError, match="external system JointPID has no MuJoCo counterpart"):
        s2s.MujocoPhysics(Simulator(system, external=[pid]))


def test_peer_scene_holds_the_episodes_fixture_pose():
    """CenicPegInsertion-v0 draws the fixture's pose per episode (``Simulator.set_geometry_pose``): the generated
    MuJoCo scene places each wall where the simulator has it, not where the system was built, and the peg's
    teacher episode runs in MuJoCo from there."""
    env = make_env("CenicPegInsertion-v0")
    env.reset(seed=1)
    u = env.unwrapped
    physics = s2s.MujocoPhysics(u.sim)
    model, data = physics.model.model, physics.data
    physics.mujoco.mj_kinematics(model, data)
    built = {g.name: g.placement for g in u.sim.system.geometries}
    for name in u.fixture_geoms:
        p, R = u.sim.geometry_pose(name)
        assert np.linalg.norm(p - built[name].translation) > 1e-3  # the episode moved it
        gid = model.geom(name).id
        np.testing.assert_allclose(data.geom_xpos[gid], p, atol=1e-12)
        np.testing.assert_allclose(data.geom_xmat[gid].reshape(3, 3), R, atol=1e-12)
    ep = s2s.compare_episode(env, load_policy("scripted", "CenicPegInsertion-v0"), seed=1, max_steps=3)
    assert ep.peer.steps == 3 and ep.peer.sim_failure is None
