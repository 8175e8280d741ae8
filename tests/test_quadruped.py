"""CenicQuadruped-v0 (envs/quadruped.py): physics sanity of the Go1 scene (drop, stance, penetration, drift),
traction (an open-loop trot walks forward; 20-episode version: benchmarks/quadruped_trot.py) and the task's own
options (privileged observation, commands, domain randomization, pushes, termination). The Gymnasium contract
(checker, determinism, state, pickle, bad input, reward sum, random-action penetration) is tests/test_envs.py."""
import copy
import math
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym import Simulator
from cenic_gym.envs import go1_constants as gc
from cenic_gym.envs.quadruped import TrotGait, go1_scene

ENV_ID = "CenicQuadruped-v0"


class FootPenetration:
    """on_step callback: deepest foot–ground penetration [m] and the deepest of any other robot geometry."""

    def __init__(self):
        self.foot = 0.0
        self.other = 0.0

    def __call__(self, sim):
        cr = sim.contact_results()
        for a, b, phi in zip(cr.names_a, cr.names_b, cr.phi):
            if "ground" in (a, b):
                if a in gc.FOOT_GEOMS or b in gc.FOOT_GEOMS:
                    self.foot = max(self.foot, -phi)
                else:
                    self.other = max(self.other, -phi)


def loaded_geometries(sim):
    """Names of the robot geometries the ground pushes with more than 1 N."""
    cr = sim.contact_results()
    fn = np.einsum("ij,ij->i", cr.force, cr.normal)
    return {b if a == "ground" else a for a, b, f in zip(cr.names_a, cr.names_b, fn) if f > 1.0}


def tilt(sim):
    R = sim.body_pose(gc.BASE_LINK)[1]
    return math.acos(min(1.0, R[2, 2]))


@pytest.fixture(scope="module")
def landed():
    """The Go1 dropped from a base height of 0.3 m at the nominal pose under the env's PD, ε = 1e-3, 3 s."""
    system, pd = go1_scene(height=0.30)
    sim = Simulator(system, accuracy=1e-3, max_step=0.02, external=[pd])
    pen = FootPenetration()
    sim.advance_to(3.0, on_step=pen)
    return sim, pd, pen


def test_dropped_from_30_cm_it_lands_and_stands(landed):
    sim, pd, pen = landed
    z = sim.body_pose(gc.BASE_LINK)[0][2]
    assert 0.22 < z < 0.29, z  # standing (nominal-pose legs are 0.285 m tall; the soft PD sags a little)
    assert tilt(sim) < math.radians(5)
    assert loaded_geometries(sim) == set(gc.FOOT_GEOMS)  # on its four feet, nothing else touching
    assert np.abs(sim.v).max() < 0.05  # at rest
    legs = sim.system.robot_q_indices(gc.ROBOT, gc.JOINTS)
    assert np.abs(sim.q[legs] - gc.NOMINAL).max() < 0.25  # the PD holds the pose against gravity (sag ≈ τ / K_p)


def test_foot_ground_penetration_below_2_mm_at_eps_1e3(landed):
    sim, pd, pen = landed
    print(f"deepest foot penetration {pen.foot * 1e3:.3f} mm (landing + stance), other geometries "
          f"{pen.other * 1e3:.3f} mm")
    assert 0.0 < pen.foot < 2e-3
    assert pen.other == 0.0
    assert -sim.stats.min_signed_distance < 2e-3


def test_standing_10_s_drifts_less_than_1_cm(landed):
    sim, pd, _ = landed
    sim = copy.deepcopy(sim)
    p0 = sim.body_pose(gc.BASE_LINK)[0]
    steps0 = sim.stats.accepted
    sim.advance_to(sim.t + 10.0)
    drift = np.linalg.norm(sim.body_pose(gc.BASE_LINK)[0] - p0)
    print(f"Go1 (env gains) drift over 10 s: {drift * 1e3:.2f} mm, {sim.stats.accepted - steps0} steps")
    assert drift < 0.01
    assert tilt(sim) < math.radians(5) and loaded_geometries(sim) == set(gc.FOOT_GEOMS)


def test_episodes_start_from_the_settled_stance():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=0)
    u = env.unwrapped
    assert 0.22 < u.sim.q[2] < 0.29 and tilt(u.sim) < math.radians(5)
    assert np.allclose(u.sim.q[:2], 0.0)
    assert obs.shape == (48,) and obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert np.allclose(obs[6:9], [0, 0, -1], atol=0.1)  # projected gravity
    assert np.array_equal(obs[33:45], np.zeros(12))  # no action yet
    for _ in range(10):
        obs, r, term, trunc, info = env.step(np.zeros(12, np.float32))
        assert not term and not trunc
    assert info["reward/tracking_lin_vel"] >= 0.0 and info["reward/torques"] <= 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_open_loop_trot_moves_forward(seed):
    """Traction, not gliding: sinusoidal joint targets (no feedback) walk the robot forward >= 0.1 m/s without
    falling (3 s; the 20-episode, 20 s version is benchmarks/quadruped_trot.py)."""
    env = gym.make(ENV_ID)
    obs, _ = env.reset(seed=seed, options={"command": (0.3, 0.0, 0.0)})
    u = env.unwrapped
    gait = TrotGait(env)
    gait.reset()
    p0, R0 = u.sim.body_pose(gc.BASE_LINK)
    air, slip = 0.0, 0.0
    n = 150
    for _ in range(n):
        obs, r, term, trunc, info = env.step(gait(obs))
        assert not term and not trunc
        air += info["reward/feet_air_time"]
        slip += info["reward/foot_slip"]
    forward = R0[:, 0] @ (u.sim.body_pose(gc.BASE_LINK)[0] - p0) / (n * u.control_period)
    print(f"seed {seed}: forward {forward:.3f} m/s, penetration {-u.sim.stats.min_signed_distance * 1e3:.2f} mm")
    assert forward >= 0.1
    assert tilt(u.sim) < math.radians(20)
    assert air != 0.0 and slip <= 0.0  # feet leave and touch the ground; slip is penalized
    assert -u.sim.stats.min_signed_distance < 2e-3


def test_privileged_observation_is_a_dict_that_continues_exactly():
    env = gym.make(ENV_ID, privileged_obs=True, obs_noise=1.0, domain_randomization=True)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=4)
    assert set(obs) == {"policy", "critic"} and env.observation_space.contains(obs)
    assert obs["policy"].shape == (48,) and obs["critic"].shape == (88,)
    u = env.unwrapped
    rng = np.random.default_rng(0)
    acts = [rng.uniform(-0.5, 0.5, 12).astype(np.float32) for _ in range(20)]
    for a in acts[:8]:
        obs, *_ = env.step(a)
    c = obs["critic"]
    # noise on the policy part only: the critic's copy is the truth
    assert not np.array_equal(c[:48], obs["policy"])
    assert c[48] == pytest.approx(u.sim.q[2], abs=1e-6)
    assert set(np.unique(c[49:53])) <= {0.0, 1.0}
    assert c[81] == pytest.approx(u.params["friction"]) and c[84] == pytest.approx(u.sim.body_inertia(gc.BASE_JOINT)[0])
    np.testing.assert_allclose(c[53:65].reshape(4, 3)[:, 2].sum(), 13.1 * 9.81, rtol=0.8)  # feet carry the robot
    state = u.get_state()
    blob = pickle.dumps(env)
    ref = [env.step(a)[0] for a in acts[8:]]
    u.set_state(state)
    again = [env.step(a)[0] for a in acts[8:]]
    other = pickle.loads(blob)
    third = [other.step(a)[0] for a in acts[8:]]
    for run in (again, third):
        for x, y in zip(ref, run):
            assert x["policy"].tobytes() == y["policy"].tobytes() and x["critic"].tobytes() == y["critic"].tobytes()


def test_commands_are_sampled_in_range_resampled_and_can_be_fixed():
    env = gym.make(ENV_ID, command_resample_mean=0.1).unwrapped
    lim = np.array(env.config["command_range"])
    seen = []
    obs, _ = env.reset(seed=0)
    for _ in range(40):
        seen.append(obs[45:48].copy())
        obs, *_ = env.step(np.zeros(12, np.float32))
    seen = np.array(seen)
    assert np.all(np.abs(seen) <= lim + 1e-6)
    assert len({tuple(s) for s in seen}) > 5  # redrawn every ~5 steps
    # reward uses the command the step acted on; the observation shows the next one
    obs, _ = env.reset(seed=1, options={"command": (0.4, -0.1, 0.2)})
    for _ in range(30):
        obs, *_ = env.step(np.zeros(12, np.float32))
        np.testing.assert_allclose(obs[45:48], [0.4, -0.1, 0.2], rtol=1e-6)
    with pytest.raises(ValueError, match="command"):
        env.reset(seed=0, options={"command": (1.0, np.nan, 0.0)})
    with pytest.raises(ValueError, match="command"):
        env.reset(seed=0, options={"command": (1.0, 0.0)})


def test_domain_randomization_changes_physics_per_episode_without_rebuilding():
    env = gym.make(ENV_ID, domain_randomization=True).unwrapped
    sim = env.sim
    m0 = sim.body_inertia(gc.BASE_JOINT)[0]
    env.reset(seed=0)
    p0 = dict(env.params)
    env.reset(seed=1)
    p = env.params
    assert env.sim is sim and p != p0
    assert sim.geometry_material("ground")["mu_static"] == pytest.approx(p["friction"])
    assert sim.geometry_material(gc.FOOT_GEOMS[0])["mu_static"] == pytest.approx(p["friction"])
    mass, com, _ = sim.body_inertia(gc.BASE_JOINT)
    nominal = env._nominal_inertia[0]
    assert mass == pytest.approx(nominal[0] * p["link_mass_scale"][0] + p["base_mass_add"])
    np.testing.assert_allclose(com, nominal[1] + np.array(p["base_com_offset"]))
    np.testing.assert_allclose(env.pd.kp, env.config["kp"] * p["kp_scale"])
    np.testing.assert_allclose(env.pd.kd, env.config["kd"] * p["kd_scale"])
    for _ in range(5):
        env.step(np.zeros(12, np.float32))
    # without randomization a reset restores the nominal parameters
    plain = gym.make(ENV_ID).unwrapped
    plain.reset(seed=1)
    assert plain.sim.body_inertia(gc.BASE_JOINT)[0] == pytest.approx(m0)
    assert plain.params["friction"] == plain.config["friction"]
    with pytest.raises(ValueError, match="nope"):
        gym.make(ENV_ID, domain_randomization={"nope": (0, 1)})
    narrow = gym.make(ENV_ID, domain_randomization={"friction": (0.5, 0.5)}).unwrapped
    narrow.reset(seed=3)
    assert narrow.params["friction"] == 0.5


def test_trot_walks_under_domain_randomization():
    env = gym.make(ENV_ID, domain_randomization=True)
    obs, _ = env.reset(seed=5)
    u = env.unwrapped
    gait = TrotGait(env)
    p0, R0 = u.sim.body_pose(gc.BASE_LINK)
    for _ in range(100):
        obs, r, term, trunc, info = env.step(gait(obs))
        assert not term
    assert R0[:, 0] @ (u.sim.body_pose(gc.BASE_LINK)[0] - p0) / 2.0 > 0.05


def test_pushes_kick_the_base_at_random_times():
    env = gym.make(ENV_ID, pushes=True, push_interval=(0.1, 0.1), push_velocity=(0.8, 0.8)).unwrapped
    env.reset(seed=0, options={"command": (0.0, 0.0, 0.0)})
    speeds = []
    for _ in range(12):
        env.step(np.zeros(12, np.float32))
        speeds.append(np.linalg.norm(env.sim.v[:2]))
    assert max(speeds) > 0.3  # kicked (a push every 5 steps)
    with pytest.raises(ValueError, match="push_interval"):
        gym.make(ENV_ID, push_interval=(2.0, 1.0))


def test_flipped_base_or_trunk_on_the_ground_terminates():
    env = gym.make(ENV_ID).unwrapped
    env.reset(seed=0)
    q = env.sim.q
    q[2] = 0.5
    q[3:7] = [1.0, 0.0, 0.0, 0.0]  # upside down (half turn about x), in the air
    env.sim.set_state(q=q, v=np.zeros(env.system.nv))
    obs, r, term, trunc, info = env.step(np.zeros(12, np.float32))
    assert term and info["reward/termination"] == pytest.approx(-1.0 * env.control_period)
    assert not info["is_success"] and env.evaluate()["fallen"]
    # belly flop: limp legs pointing up, the trunk drops 7 cm onto the ground
    limp = gym.make(ENV_ID, kp=0.0, kd=0.0).unwrapped
    limp.reset(seed=0)
    q = limp.sim.q
    q[limp.leg_q] = np.tile([0.0, 3.5, -0.9], 4)
    q[2] = 0.13
    limp.sim.set_state(q=q, v=np.zeros(limp.system.nv))
    for k in range(25):
        obs, r, term, trunc, info = limp.step(np.zeros(12, np.float32))
        if term:
            break
    assert term and limp.base_contact and tilt(limp.sim) < math.radians(30) and k > 3


def test_standing_still_on_a_zero_command_tracks_it():
    env = gym.make(ENV_ID, start_velocity=(0.0,) * 6)
    obs, _ = env.reset(seed=0, options={"command": (0.0, 0.0, 0.0)})
    for _ in range(50):
        obs, r, term, trunc, info = env.step(np.zeros(12, np.float32))
    assert info["is_success"] and r > 0
    assert info["reward/tracking_lin_vel"] == pytest.approx(1.0 * env.unwrapped.control_period, rel=0.05)
    tau = env.unwrapped.sim.applied_effort(env.unwrapped.pd)
    assert info["reward/torques"] == pytest.approx(
        -0.0002 * (np.linalg.norm(tau) + np.abs(tau).sum()) * env.unwrapped.control_period)


@pytest.mark.parametrize("kwargs, text", [(dict(action_scale=0.0), "action_scale"), (dict(kp=-1.0), "kp"),
                                          (dict(start_velocity=(0.1, 0.2)), "start_velocity")])
def test_bad_task_options_raise(kwargs, text):
    with pytest.raises(ValueError, match=text):
        gym.make(ENV_ID, **kwargs)


# -- terrain options -------------------------------------------------------------------------------------------
def _ground_force_on_robot(env):
    """Total contact force [N] (world frame) the terrain (geometries welded to the world) exerts on the robot."""
    u = env.unwrapped
    cr = u.sim.contact_results()
    world = [g.joint == 0 for g in u.system.geometries]
    F = np.zeros(3)
    for a, b, f in zip(cr.geom_a, cr.geom_b, cr.force):  # force acts on B
        if world[a] and not world[b]:
            F += f
        elif world[b] and not world[a]:
            F -= f
    return F


def test_standing_on_the_slope_is_a_static_balance():
    """Facing uphill on the tilted ground with zero actions, 3 s (the start transient decays): the terrain carries the robot's weight, m g
    straight up, split into a normal part m g cos s and a friction part m g sin s along the slope (ratio tan s <
    μ: it sticks), and the base does not creep."""
    s = 0.1
    env = gym.make(ENV_ID, terrain="slope", slope=s, start_yaw=(0.0, 0.0), start_velocity=(0.0,) * 6)
    env.reset(seed=0)
    u = env.unwrapped
    p0 = u.sim.body_pose(gc.BASE_LINK)[0]
    for _ in range(150):
        _, _, term, trunc, _ = env.step(np.zeros(12, np.float32))
        assert not (term or trunc)
    F = _ground_force_on_robot(env)
    mg = 9.81 * sum(u.sim.body_inertia(j)[0] for j in u._body_joints)
    n = np.array([-math.sin(s), 0.0, math.cos(s)])
    fn = F @ n
    ft = np.linalg.norm(F - fn * n)
    assert np.allclose(F, [0.0, 0.0, mg], atol=0.01 * mg), (F, mg)
    assert ft / fn == pytest.approx(math.tan(s), rel=0.02)
    assert np.linalg.norm(u.sim.body_pose(gc.BASE_LINK)[0] - p0) < 0.01


def test_tiles_are_laid_out_as_drawn_and_the_trot_crosses_them():
    """terrain="tiles": each tile's top lies at its drawn height (geometry), the layout is the seed's, and the
    open-loop trot walks over the 0–4 cm steps without falling and without a contact deeper than 2 mm."""
    from cenic_gym.envs.quadruped import TILE_THICKNESS, tile_heights

    env = gym.make(ENV_ID, terrain="tiles", start_yaw=(0.0, 0.0))
    u = env.unwrapped
    t = u.config["terrain_tiles"]
    h = tile_heights(t)
    tops = {g.name: g.placement.translation[2] + 0.5 * g.shape.lengths[2]
            for g in u.system.geometries if g.name.startswith("terrain/")}
    assert len(tops) == h.size and TILE_THICKNESS > t["max_height"]
    for name, top in tops.items():
        i, j = map(int, name.split("/")[1].split("_"))
        assert top == pytest.approx(h[i, j], abs=1e-12)
    assert not np.array_equal(h, tile_heights({**t, "seed": 1}))
    obs, _ = env.reset(seed=0)
    gait = TrotGait(env)
    u.sim.stats.min_signed_distance = math.inf
    for _ in range(100):
        obs, _, term, trunc, _ = env.step(gait(obs))
        assert not (term or trunc)
    assert -u.sim.stats.min_signed_distance < 2e-3


@pytest.mark.parametrize("kwargs, names", [(dict(terrain="mars"), "terrain"),
                                           (dict(terrain_tiles=dict(tile=0.0, extent=1.0, max_height=0.0, seed=0)),
                                            "terrain_tiles"),
                                           (dict(terrain="slope", slope=1.2), "slope")])
def test_bad_terrain_options_raise_naming_the_value(kwargs, names):
    with pytest.raises(ValueError, match=names):
        gym.make(ENV_ID, **kwargs)
