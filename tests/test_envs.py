"""The contract every registered cenic-gym env keeps: Gymnasium's checker,
determinism, state continuation, pickling, bad input, reward = sum of its terms, spaces, solver failure; plus the
task-specific feasibility checks (a scripted policy reaching success)."""
import copy
import hashlib
import pickle
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym.errors import AccuracyNotMetError

ENV_IDS = sorted(k for k in gym.registry if k.startswith("Cenic"))


def rollout(env, actions, seed=0):
    """Observations and rewards of a seeded episode under a fixed action sequence (stops at the episode's end)."""
    obs, _ = env.reset(seed=seed)
    out = [flat(obs)]
    rewards = []
    for a in actions:
        obs, r, term, trunc, _ = env.step(a)
        out.append(flat(obs))
        rewards.append(r)
        if term or trunc:
            break
    return np.concatenate(out), np.array(rewards)


def flat(obs):
    return np.concatenate([np.ravel(obs[k]) for k in sorted(obs)]) if isinstance(obs, dict) else np.ravel(obs)


def actions_for(env, n, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, env.action_space.shape).astype(np.float32) for _ in range(n)]


@pytest.fixture(params=ENV_IDS)
def env_id(request):
    return request.param


def test_envs_are_registered():
    assert {"CenicFranka-v0", "CenicFrankaGoal-v0"} <= set(ENV_IDS)


def test_gymnasium_checker_passes(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)


def test_same_seed_same_actions_bit_identical(env_id):
    env_a, env_b = gym.make(env_id), gym.make(env_id)
    acts = actions_for(env_a, 50)
    oa, ra = rollout(env_a, acts)
    ob, rb = rollout(env_b, acts)
    assert oa.tobytes() == ob.tobytes() and ra.tobytes() == rb.tobytes()
    oc, _ = rollout(env_a, acts, seed=1)
    assert oc.tobytes() != oa.tobytes()  # the seed matters


def test_get_state_set_state_and_pickle_continue_exactly(env_id):
    env = gym.make(env_id)
    acts = actions_for(env, 30)
    env.reset(seed=3)
    for a in acts[:10]:
        env.step(a)
    state = env.unwrapped.get_state()
    blob = pickle.dumps(env)
    copied = copy.deepcopy(env)
    ref = [flat(env.step(a)[0]) for a in acts[10:]]
    env.unwrapped.set_state(state)
    again = [flat(env.step(a)[0]) for a in acts[10:]]
    fresh = gym.make(env_id)
    fresh.reset(seed=99)
    fresh.unwrapped.set_state(state)
    other = [flat(fresh.step(a)[0]) for a in acts[10:]]
    unpickled = pickle.loads(blob)
    from_pickle = [flat(unpickled.step(a)[0]) for a in acts[10:]]
    from_copy = [flat(copied.step(a)[0]) for a in acts[10:]]
    for run in (again, other, from_pickle, from_copy):
        assert np.concatenate(run).tobytes() == np.concatenate(ref).tobytes()


def test_two_processes_agree(env_id):
    code = textwrap.dedent(f"""
        import hashlib, numpy as np, gymnasium as gym, cenic_gym
        env = gym.make({env_id!r})
        rng = np.random.default_rng(1)
        obs, _ = env.reset(seed=5)
        h = hashlib.sha256()
        for _ in range(20):
            obs, r, *_ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
            h.update(np.concatenate([np.ravel(obs[k]) for k in sorted(obs)]) if isinstance(obs, dict)
                     else np.ravel(obs)); h.update(np.float64(r).tobytes())
        print(h.hexdigest())
        """)
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           timeout=600).stdout.strip() for _ in range(2)]
    env = gym.make(env_id)
    rng = np.random.default_rng(1)
    env.reset(seed=5)
    h = hashlib.sha256()
    for _ in range(20):
        obs, r, *_ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        h.update(flat(obs))
        h.update(np.float64(r).tobytes())
    assert outs[0] == outs[1] == h.hexdigest()


@pytest.mark.parametrize("bad, text", [
    (lambda s: np.full(s, np.nan, np.float32), "finite"),
    (lambda s: np.zeros((s[0] + 1,), np.float32), "shape"),
    (lambda s: np.zeros((1,) + s, np.float32), "shape"),
    (lambda s: "left", "action"),
])
def test_bad_actions_raise_and_leave_the_state_unchanged(env_id, bad, text):
    env = gym.make(env_id).unwrapped  # the raw env: Gymnasium's passive checker would only warn
    env.reset(seed=0)
    env.step(np.zeros(env.action_space.shape, np.float32))
    before = pickle.dumps(env.get_state())
    with pytest.raises(ValueError, match=text):
        env.step(bad(env.action_space.shape))
    assert pickle.dumps(env.get_state()) == before


@pytest.mark.parametrize("kwargs, text", [
    (dict(no_such_option=1), "no_such_option"), (dict(accuracy=0.0), "accuracy"), (dict(accuracy=-1.0), "accuracy"),
    (dict(control_period=0.0), "control_period"), (dict(action_delay=-1), "action_delay"),
    (dict(obs_noise=-0.1), "obs_noise"), (dict(domain_randomization="yes"), "domain_randomization"),
    (dict(render_mode="rgb"), "render_mode"), (dict(render_width=0), "render_width"), (dict(accuracy="high"), "accuracy"),
])
def test_bad_kwargs_raise_naming_the_value(env_id, kwargs, text):
    with pytest.raises(ValueError, match=text):
        gym.make(env_id, **kwargs)


def test_bad_reset_options_raise(env_id):
    env = gym.make(env_id)
    with pytest.raises(ValueError, match="bogus"):
        env.reset(seed=0, options={"bogus": 1})
    with pytest.raises(ValueError, match="options"):
        env.reset(seed=0, options=[1, 2])


def test_reward_is_the_sum_of_its_terms_and_spaces_contain_observations(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=2)
    assert env.observation_space.contains(obs) and info["is_success"] is False
    for a in actions_for(env, 20, seed=4):
        obs, r, term, trunc, info = env.step(a)
        assert env.observation_space.contains(obs)
        terms = {k: v for k, v in info.items() if k.startswith("reward/")}
        assert terms and r == pytest.approx(sum(terms.values()), abs=1e-12)
        assert type(info["sim"]) is dict  # a Gymnasium vector env gathers plain dicts into arrays
        assert set(info["sim"]) == {"substeps", "rejected", "newton_iters", "min_dt", "max_penetration"}
        assert set(info["wall"]) == {"sim_s", "realtime_factor"} and info["wall"]["sim_s"] > 0.0
        assert info["sim"]["substeps"] >= 1 and isinstance(info["is_success"], bool)


def test_solver_failure_truncates_with_the_last_observation(env_id, monkeypatch):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(env.action_space.sample())

    def fail(t, on_step=None, inputs_changed=False):
        raise AccuracyNotMetError("CENIC cannot meet accuracy=0.001 at t=0.1 s: test")

    monkeypatch.setattr(env.unwrapped.sim, "advance_to", fail)
    obs2, r, term, trunc, info = env.step(env.action_space.sample())
    assert trunc and not term and "AccuracyNotMetError" in info["sim_failure"]
    assert flat(obs2).tobytes() == flat(obs).tobytes()


def test_random_actions_keep_the_state_finite_and_shallow(env_id):
    env = gym.make(env_id)
    env.reset(seed=7)
    for a in actions_for(env, 60, seed=7):
        obs, r, term, trunc, info = env.step(a)
        assert np.all(np.isfinite(flat(obs))) and np.isfinite(r)
        if term or trunc:
            break
    assert -env.unwrapped.sim.stats.min_signed_distance < 2e-3  # penetration bound of the Franka tasks: 2 mm


def test_action_delay_and_obs_noise_are_seeded():
    a = gym.make("CenicFranka-v0", action_delay=2, obs_noise=1.0)
    b = gym.make("CenicFranka-v0", action_delay=2, obs_noise=1.0)
    acts = actions_for(a, 10)
    oa, _ = rollout(a, acts)
    ob, _ = rollout(b, acts)
    assert oa.tobytes() == ob.tobytes()
    # a delay of 2 periods: the first two steps apply the neutral action, so the arm targets do not move
    env = gym.make("CenicFranka-v0", action_delay=2).unwrapped
    env.reset(seed=0)
    q_d0 = np.array(env.arm.q_d)
    env.step(np.ones(8, np.float32))
    env.step(np.ones(8, np.float32))
    assert np.array_equal(env.arm.q_d, q_d0)
    env.step(np.ones(8, np.float32))
    assert np.all(np.asarray(env.arm.q_d) > q_d0 - 1e-12) and not np.array_equal(env.arm.q_d, q_d0)


# -- CenicFranka-v0 ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scripted_expert_places_the_box(seed):
    """The task is physically solvable: a scripted IK expert succeeds (50-episode version: benchmarks/)."""
    from cenic_gym.envs.franka_box import ScriptedExpert

    env = gym.make("CenicFranka-v0")
    obs, _ = env.reset(seed=seed)
    expert = ScriptedExpert(env)
    expert.reset()
    successes, rewards = [], {}
    for k in range(200):
        obs, r, term, trunc, info = env.step(expert(obs))
        successes.append(info["is_success"])
        rewards.setdefault(expert.plan[expert.phase][0], []).append(r)
        assert not term and trunc == (k == 199)  # the time limit ends it
    assert successes[-1] and sum(successes) >= 10
    assert -env.unwrapped.sim.stats.min_signed_distance < 1e-3
    # the staged reward pays each later stage more: carrying above the target < set down < released
    assert max(rewards["carry"]) < min(rewards["lower"][-3:]) < max(rewards["lower"]) < min(rewards["retreat"][-5:])


def test_ee_delta_actions_move_the_tcp_in_the_world_frame():
    env = gym.make("CenicFranka-v0", action_type="ee_delta").unwrapped
    env.reset(seed=0)
    p0 = env.sim.body_pose("panda/panda_hand_tcp")[0]
    a = np.zeros(8, np.float32)
    a[0] = 1.0  # +x at 0.02 m per step
    for _ in range(10):
        env.step(a)
    for _ in range(10):
        env.step(np.zeros(8, np.float32))
    dp = env.sim.body_pose("panda/panda_hand_tcp")[0] - p0
    assert dp[0] == pytest.approx(0.2, abs=0.01) and abs(dp[1]) < 0.01 and abs(dp[2]) < 0.01


def test_goal_conditioned_interface_matches_gymnasium_robotics():
    env = gym.make("CenicFrankaGoal-v0")
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    u = env.unwrapped
    obs, r, *_ , info = env.step(env.action_space.sample())
    assert r == u.compute_reward(obs["achieved_goal"], obs["desired_goal"], info) == -1.0
    batch_a = np.stack([obs["achieved_goal"]] * 4)
    batch_d = np.stack([obs["desired_goal"], obs["achieved_goal"], obs["desired_goal"], obs["achieved_goal"]])
    np.testing.assert_array_equal(u.compute_reward(batch_a, batch_d, [info] * 4), [-1.0, 0.0, -1.0, 0.0])
    assert u.compute_terminated(batch_a, batch_d, [info] * 4).shape == (4,)
    reach = gym.make("CenicFrankaGoal-v0", task="reach").unwrapped
    o, _ = reach.reset(seed=0)
    np.testing.assert_allclose(o["achieved_goal"], reach.sim.body_pose("panda/panda_hand_tcp")[0], atol=1e-6)


def test_domain_randomization_changes_physics_per_episode_without_rebuilding():
    env = gym.make("CenicFranka-v0", domain_randomization=True).unwrapped
    sim = env.sim
    env.reset(seed=0)
    p0 = dict(env.params)
    env.reset(seed=1)
    assert env.sim is sim and env.params != p0
    assert sim.body_inertia("box")[0] == pytest.approx(env.params["box_mass"])
    assert sim.geometry_material("table")["mu_static"] == pytest.approx(env.params["table_mu"])
    with pytest.raises(ValueError, match="nope"):
        gym.make("CenicFranka-v0", domain_randomization={"nope": (0, 1)})


def test_scripted_expert_succeeds_under_domain_randomization():
    """Randomized box size, mass, friction and arm gains: the physics still supports the task (seeded)."""
    from cenic_gym.envs.franka_box import ScriptedExpert

    env = gym.make("CenicFranka-v0", domain_randomization=True)
    obs, _ = env.reset(seed=11)
    u = env.unwrapped
    assert u.sim.geometry_shape("box/0").lengths == pytest.approx(u.params["box_size"])
    expert = ScriptedExpert(env)
    expert.reset()
    for _ in range(200):
        obs, r, term, trunc, info = env.step(expert(obs))
    assert info["is_success"], u.evaluate()


def test_state_view_is_built_once_per_state():
    """The env reads each state through one view (``CenicEnv.view``), built after reset, after each advance and
    after ``set_state``: within a state every quantity is one object (computed once); a step, a reset or a restore
    gives a new view of the new state."""
    env = gym.make("CenicFranka-v0")
    env.reset(seed=0)
    u = env.unwrapped
    v0 = u.view
    assert u.view.contacts is v0.contacts and u.view.placement is v0.placement
    np.testing.assert_array_equal(v0.q, u.sim.q)
    snap = u.get_state()
    env.step(np.zeros(env.action_space.shape, dtype=np.float32))
    v1 = u.view
    assert v1 is not v0 and not np.array_equal(v1.q, v0.q)
    np.testing.assert_array_equal(v1.p_tcp, u.View(u).p_tcp)  # the view of the state reached
    u.set_state(snap)
    assert u.view is not v1
    np.testing.assert_array_equal(u.view.p_tcp, v0.p_tcp)
    np.testing.assert_array_equal(u.view.q, v0.q)
    env.reset(seed=1)
    assert not np.array_equal(u.view.p_box, v0.p_box)


def test_simulator_poses_follow_every_state_change():
    """``Simulator.body_pose`` is cached per integrator state (``state_id``): a step, ``set_state`` and ``restore``
    each give the pose of the new state."""
    env = gym.make("CenicFranka-v0")
    env.reset(seed=0)
    sim = env.unwrapped.sim
    snap = sim.get_state()
    p0 = sim.body_pose("box")[0]
    q = sim.q
    q[env.unwrapped.box_q.start + 2] += 0.1  # the box's z: 10 cm above the table
    sim.set_state(q=q)
    p1 = sim.body_pose("box")[0]
    assert p1[2] == pytest.approx(p0[2] + 0.1)
    sim.advance_to(sim.t + 0.05)  # it falls
    assert sim.body_pose("box")[0][2] < p1[2] - 0.005
    sim.restore(snap)
    np.testing.assert_array_equal(sim.body_pose("box")[0], p0)


def test_vector_env_gathers_the_sim_numbers_into_arrays():
    """info["sim"] is a plain dict, so Gymnasium's vector envs aggregate it per key: the substep counts of the
    sub-envs arrive as an integer array, ready to log; the wall-clock figures stay apart (info["wall"])."""
    from gymnasium.vector import SyncVectorEnv

    venv = SyncVectorEnv([lambda: gym.make("CenicFranka-v0")] * 3)
    venv.reset(seed=0)
    _, _, _, _, infos = venv.step(np.zeros((3, 8), np.float32))
    substeps = infos["sim"]["substeps"]
    assert isinstance(substeps, np.ndarray) and substeps.shape == (3,) and substeps.dtype.kind == "i"
    assert np.all(substeps >= 1) and infos["sim"]["max_penetration"].dtype == np.float64
    one = gym.make("CenicFranka-v0")
    one.reset(seed=0)
    assert one.step(np.zeros(8, np.float32))[4]["sim"]["substeps"] == substeps[0]


def test_observation_layout_is_declared_once():
    """ObsLayout: the space, noise scales, index slices and docstring table come from one declaration; packing the
    wrong number of values, or declaring a name twice, is an error naming the segments."""
    from cenic_gym.env import ObsLayout, Segment
    from cenic_gym.envs.allegro_cube import OBS as ALLEGRO
    from cenic_gym.envs.suction_pick import OBS as SUCTION

    layout = ObsLayout(Segment("p", 3, 0.002, "position [m]"), Segment("flag", 1, 0.0, "on (1) / off (0)"))
    assert layout.size == 4 and layout["flag"] == slice(3, 4)
    np.testing.assert_array_equal(layout.noise_scale, [0.002, 0.002, 0.002, 0.0])
    assert layout.space().shape == (4,)
    assert "| 0–2 | position [m] | 0.002 |" in layout.table() and "| 3 | on (1) / off (0) | 0 |" in layout.table()
    np.testing.assert_array_equal(layout.pack([1.0, 2.0, 3.0], [1.0]), [1.0, 2.0, 3.0, 1.0])
    with pytest.raises(ValueError, match="p 3, flag 1"):
        layout.pack([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="'p' declared twice"):
        ObsLayout(Segment("p", 1), Segment("p", 2))
    from cenic_gym.envs.franka_box import OBS as FRANKA
    from cenic_gym.envs.quadruped import OBS as QUADRUPED

    for env_id, obs_layout in (("CenicSuction-v0", SUCTION), ("CenicAllegro-v0", ALLEGRO), ("CenicFranka-v0", FRANKA),
                               ("CenicQuadruped-v0", QUADRUPED)):
        env = gym.make(env_id)
        assert env.observation_space.shape == (obs_layout.size,)
        assert obs_layout.table() in type(env.unwrapped).__doc__  # the docstring's table is the declaration's
