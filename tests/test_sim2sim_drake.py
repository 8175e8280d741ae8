"""Sim-to-sim with Drake as the second simulator (issue 16): the scripted Franka expert and the Go1 trot end to end
for a few env steps (Drake's state is the env's, the env's simulator is put back, runs are deterministic), the
free-motion check (the gap to Drake's own CENIC shrinks as our ε tightens: the mapping, the PD and inverse-dynamics
laws and the free bodies agree in the limit), the CLI, and bad input named. Skipped only where pydrake is not
installed (the one allowed skip)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cenic_gym import cli
from cenic_gym.drake_model import DrakeMissing, import_drake
from cenic_gym.sim2real import sim2sim as s2s
from cenic_gym.sim2real.policy import load_policy
from cenic_gym.sim2real.rollout import make_env

try:
    import_drake()
except DrakeMissing:
    pytest.skip("needs pydrake (pip install 'cenic-gym[peers]')", allow_module_level=True)


def test_franka_scripted_episode_in_drake():
    env = make_env("CenicFranka-v0")
    ep = s2s.compare_episode(env, load_policy("scripted", "CenicFranka-v0"), seed=3, max_steps=4, peer="drake")
    assert ep.cenic.steps == ep.peer.steps == 4 and ep.peer.sim_failure is None
    assert ep.divergence.shape == (5,) and ep.divergence[0] == 0.0 and ep.one_step.shape == (4,)
    assert set(ep.bodies) == {"box"} and ep.bodies["box"][0] < 1e-4  # the box rests on the table in both
    assert 0.0 < ep.divergence.max() < 2e-2, ep.divergence  # different simulators, close in free arm motion
    assert env.unwrapped.sim.__class__.__name__ == "Simulator"  # the env's simulator is put back
    system = env.unwrapped.sim.system
    (c,) = system.couplers  # Drake's coupler constraint holds the fingers together
    qa, qb = system.model.idx_qs[c.joint0], system.model.idx_qs[c.joint1]
    assert abs(ep.peer.q[qa] - (c.ratio * ep.peer.q[qb] + c.offset)) < 1e-6
    again = s2s.compare_episode(env, load_policy("scripted", "CenicFranka-v0"), seed=3, max_steps=4, peer="drake")
    np.testing.assert_array_equal(again.peer.q, ep.peer.q)  # deterministic: same seed, same Drake episode
    np.testing.assert_array_equal(again.divergence, ep.divergence)


def test_drake_state_contacts_and_efforts_reach_the_env():
    """Drake's CENIC as the physics of the Go1 for one env step: the env's state is Drake's, the feet's contacts
    carry the robot's weight roughly (it stands), the PD efforts come from Drake's actuators."""
    env = make_env("CenicQuadruped-v0")
    env.reset(seed=1)
    u = env.unwrapped
    physics = s2s.DrakePhysics(u.sim, integrator="cenic")
    real, u.sim = u.sim, physics
    try:
        _, _, _, _, info = env.step(np.zeros(12, np.float32))
    finally:
        u.sim = real
    q, v = physics.model.state(physics.context)
    np.testing.assert_array_equal(u.sim.q, q)
    np.testing.assert_array_equal(u.sim.v, v)
    cr = u.sim.contact_results()
    feet = [n for n in cr.names_a + cr.names_b if n.endswith("foot_0")]
    assert len(set(feet)) == 4 and info["sim"]["substeps"] > 0
    weight = sum(I.mass for I in u.sim.system.model.inertias) * 9.81
    up = sum(f[2] if na == "ground" else -f[2] for f, na in zip(cr.force, cr.names_a))
    assert 0.3 * weight < up < 3.0 * weight, (up, weight)
    (efforts,) = u.sim.get_state().efforts
    assert efforts.shape == (12,) and np.all(np.abs(efforts) <= u.sim.external[0].effort_limit + 1e-9)
    assert np.any(efforts != 0.0)


@pytest.mark.parametrize("env_id, ratio, tight", [("CenicQuadruped-v0", 0.1, 1e-4), ("CenicFranka-v0", 0.2, 1.5e-4)])
def test_free_motion_gap_to_drake_cenic_shrinks_with_our_accuracy(env_id, ratio, tight):
    """No contact (free bodies raised 2 m): one control period of Drake's CENIC at ε = 1e-7 against ours at
    ε = 1e-4 and 1e-6. The Go1 (implicit PDs, free base, armature) converges to Drake's trajectory; the Franka down
    to Drake's hold of the inverse-dynamics PD (0.25 ms, ~4e-5 rad)."""
    gaps = s2s.free_motion_gaps(env_id, (1e-4, 1e-6), peer="drake", integrator="cenic", accuracy=1e-7,
                                timestep=2.5e-4)
    assert gaps[1] < ratio * gaps[0] and gaps[1] < tight, gaps  # measured: Go1 7.0e-4 -> 5.8e-5, Franka 6.0e-4 -> 7.2e-5


def test_sim2sim_cli_with_drake(tmp_path, capsys):
    log = tmp_path / "s2s.jsonl"
    assert cli.main(["sim2real", "sim2sim", "--env", "CenicQuadruped-v0", "--policy", "trot", "--episodes", "2",
                     "--max-steps", "3", "--peer", "drake", "--log", str(log)]) == 0
    assert "| CenicQuadruped-v0 | trot (TrotGait) | Drake SAP (lagged) 0.001 s | 2 |" in capsys.readouterr().out
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1] and all(r["peer"] == "drake" and r["steps_peer"] == 3 for r in rows)
    with pytest.raises(SystemExit, match="accuracy=0.001 needs Drake's integrator 'cenic'"):
        cli.main(["sim2real", "sim2sim", "--env", "CenicQuadruped-v0", "--policy", "trot", "--peer", "drake",
                  "--accuracy", "1e-3"])


def test_bad_input_names_the_value():
    from cenic_gym import JointPID, Simulator

    with pytest.raises(ValueError, match=r"peer='bullet' is not one of \['drake', 'mujoco'\]"):
        s2s.sim2sim("CenicQuadruped-v0", load_policy("trot", "CenicQuadruped-v0"), [0], peer="bullet")
    system = make_env("CenicFranka-v0").unwrapped.system
    with pytest.raises(NotImplementedError, match="external system JointPID has no Drake counterpart"):
        s2s.DrakePhysics(Simulator(system, external=[JointPID(system, [0, 1], kp=100.0, ki=10.0, kd=10.0)]))
    with pytest.raises(ValueError, match="integrator='rk4' is not one of"):
        s2s.DrakePhysics(Simulator(system), integrator="rk4")
    with pytest.raises(ValueError, match="timestep must be"):
        s2s.DrakePhysics(Simulator(system), timestep=0.0)
