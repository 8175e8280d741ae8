"""The attempt loop of articulated systems (CenicIntegrator._advance_articulated, issue 39): each attempt of
CenicIntegrator.step as Pinocchio's dynamics around two kernels (cenic.attempt_from_start, attempt_from_mid). It must
take the Python loop's steps bit for bit: same states, counters, contacts and applied efforts, the same exceptions."""
import copy

import gymnasium as gym
import numpy as np
import pytest

import cenic_gym.envs  # noqa: F401  (registers the envs)
from cenic_gym import (AccuracyNotMetError, ContactMaterial, Cylinder, JointPD, SceneBuilder, Simulator, scenes)
from cenic_gym.contact import ContactQuery
from cenic_gym.envs import go1_constants as gc
from cenic_gym.envs.quadruped import go1_scene

COUNTERS = ("accepted", "rejected", "solves", "newton_iters", "line_search_iters", "factorizations",
            "solver_failures", "friction_solves")


def python_loop(sim):
    """The same simulator on the Python step loop (CenicIntegrator.step)."""
    sim.integrator._articulated_loop = False
    return sim


def counters(sim):
    st = sim.integrator.stats
    return tuple(getattr(st, k) for k in COUNTERS) + (sim.integrator.dt, sim.integrator.period_dt)


def assert_same_state(a, b):
    """Bit-identical state, clock, counters, contacts of the last step and applied efforts."""
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.v, b.v)
    assert a.t == b.t and counters(a) == counters(b)
    ca, cb = a.contact_results(), b.contact_results()
    for field in ("point", "normal", "phi", "force", "slip_speed", "geom_a", "geom_b"):
        np.testing.assert_array_equal(getattr(ca, field), getattr(cb, field))
    for ea, eb in zip(a.applied_efforts(), b.applied_efforts()):
        np.testing.assert_array_equal(ea, eb)


def test_which_systems_run_the_articulated_loop():
    system, pd = go1_scene(height=0.30)
    assert Simulator(system, external=[pd]).integrator._articulated_loop
    assert Simulator(scenes.go1_on_ground()).integrator._articulated_loop  # no external system
    assert not Simulator(scenes.clutter()).integrator._articulated_loop  # free bodies: the compiled loop
    assert not Simulator(system, external=[pd], fixed_step=1e-3).integrator._articulated_loop
    assert not Simulator(system, external=[pd], generalized_force=lambda t, q, v: np.zeros(18)
                         ).integrator._articulated_loop
    pd2 = JointPD(system, pd.dofs[:3], kp=10.0, kd=1.0)
    assert not Simulator(system, external=[pd, pd2]).integrator._articulated_loop  # two systems: Python
    franka = gym.make("CenicFranka-v0").unwrapped.sim.integrator  # InverseDynamicsPD: Python
    assert not franka._articulated_loop


@pytest.mark.parametrize("env_id", ["CenicAllegro-v0", "CenicQuadruped-v0"])
def test_env_steps_are_the_python_loops(env_id):
    """Random actions from one seed: every observation, counter, contact and effort bit for bit."""
    runs = []
    for articulated in (True, False):
        env = gym.make(env_id)
        sim = env.unwrapped.sim
        assert sim.integrator._articulated_loop
        if not articulated:
            python_loop(sim)
        env.action_space.seed(3)
        obs = [env.reset(seed=11)[0]]
        for _ in range(25):
            obs.append(env.step(env.action_space.sample())[0])
        runs.append((sim, np.array(obs)))
    (a, obs_a), (b, obs_b) = runs
    np.testing.assert_array_equal(obs_a, obs_b)
    assert_same_state(a, b)
    assert counters(a)[1] > 0  # the run had rejected attempts


def go1_against_a_post():
    """The Go1 standing on its PD with a fixed cylinder touching its front-left foot: sphere against cylinder is a
    coal pair, so the contact query of every state hands that pair to coal."""
    mat = ContactMaterial(stiffness=1e5, dissipation=10.0, mu_static=1.0)
    b = SceneBuilder()
    b.add_ground(mat)
    b.add_robot("go1", name="go1", position=(0, 0, 0.30), material=mat)
    system = b.build()
    foot = Simulator(system).body_pose("go1/FL_foot")[0]
    b.add_fixed("post", Cylinder(0.03, 0.4), position=(foot[0] + 0.048, foot[1], 0.2), material=mat)
    system = b.build()
    dofs = system.robot_v_indices(gc.ROBOT, gc.JOINTS)
    return system, dofs


def test_coal_pairs_in_the_articulated_loop(monkeypatch):
    system, dofs = go1_against_a_post()
    calls = [0]
    fallback = ContactQuery.coal_fallback

    def counted(self, n, Jw):
        calls[0] += 1
        return fallback(self, n, Jw)

    monkeypatch.setattr(ContactQuery, "coal_fallback", counted)
    sims = []
    for articulated in (True, False):
        pd = JointPD(system, dofs, kp=35.0, kd=0.5, q_d=gc.NOMINAL)
        sim = Simulator(system, external=[pd])
        if not articulated:
            python_loop(sim)
        calls[0] = 0
        for k in range(1, 11):
            pd.set_target(q_d=gc.NOMINAL + 0.2 * np.sin(k))
            sim.advance_to(0.02 * k, inputs_changed=True)
        sims.append((sim, calls[0]))
    (a, calls_a), (b, calls_b) = sims
    assert calls_a == calls_b > 0
    assert "post" in a.contact_results().names_a + a.contact_results().names_b
    assert_same_state(a, b)


def test_articulated_loop_raises_as_the_python_loop():
    """An accuracy it cannot meet at min_step: the same exception, message and state after it."""
    errors, states = [], []
    for articulated in (True, False):
        system, pd = go1_scene(height=0.30)
        sim = Simulator(system, external=[pd], accuracy=1e-9, min_step=2e-3)
        if not articulated:
            python_loop(sim)
        with pytest.raises(AccuracyNotMetError) as e:
            sim.advance_to(0.5)
        errors.append(str(e.value))
        states.append(sim)
    assert errors[0] == errors[1] and "min_step=0.002" in errors[0]
    assert_same_state(*states)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_a_non_finite_gain_law_names_the_controller():
    """K_p (q_d − q) overflows: the articulated loop raises the Python loop's FloatingPointError, which names the
    controller and the values, and keeps the last state."""
    messages = []
    for articulated in (True, False):
        system, pd = go1_scene(height=0.30)
        sim = Simulator(system, external=[pd])
        if not articulated:
            python_loop(sim)
        sim.advance_to(0.02)
        q = sim.q.copy()
        pd.set_gains(kp=1e308)
        pd.set_target(q_d=gc.NOMINAL + 10.0)
        with pytest.raises(FloatingPointError, match="JointPD gave a non-finite linearization") as e:
            sim.advance_to(0.04, inputs_changed=True)
        messages.append(str(e.value).split(" at t=")[0])
        np.testing.assert_array_equal(sim.q, q)
    assert messages[0] == messages[1]


def test_copies_continue_bit_identically():
    """A deep copy after some steps rebuilds the loop's buffers and continues as the original."""
    system, pd = go1_scene(height=0.30)
    sim = Simulator(system, external=[pd])
    sim.advance_to(0.1)
    clone = copy.deepcopy(sim)
    for s in (sim, clone):
        s.external[0].set_target(q_d=gc.NOMINAL + 0.1)
        s.advance_to(0.2, inputs_changed=True)
    assert_same_state(sim, clone)
