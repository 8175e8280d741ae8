"""CenicAllegro-v0 physics sanity and task logic (the env contract itself is tests/test_envs.py's, for every id).

Physical claims checked against analytic answers: a cube resting in the palm is in static equilibrium (the contact
forces on it sum to m g) and stays put (drift, speed); a fingertip pressing the cube obeys the contact law
(f_n = k_pair · penetration at rest) and the finger is in static equilibrium (PD torque + Jᵀ f = gravity torque);
random actions keep fingertip/cube penetration under 1 mm.
"""
import math

import gymnasium as gym
import numpy as np
import pinocchio as pin
import pytest

import cenic_gym  # noqa: F401  (registers the envs)
from cenic_gym.envs import allegro_constants as ac
from cenic_gym.envs.allegro_cube import (NOMINAL, OBS, PALM_FACE_Z, AllegroCubeEnv, cube_tilt, cube_yaw,
                                         level_quaternion, quat_conjugate, quat_multiply, yaw_quaternion)
from cenic_gym.model import quat_xyzw_to_matrix

G = 9.81
STILL = dict(start_yaw=(0.0, 0.0), start_position_noise=0.0)
PRESS = (0.0, 1.3, 1.2, 0.8)  # middle finger curled over the cube: its fingertip presses the top face


def make(**kw):
    return gym.make("CenicAllegro-v0", **kw).unwrapped


def contacts_on_cube(sim):
    """(geometry names touching the cube, net contact force on the cube [N], rows as (name, force on the cube,
    φ))."""
    cr = sim.contact_results()
    rows = []
    for i in range(cr.n):
        if cr.body_b[i] == "cube":
            rows.append((cr.names_a[i], cr.force[i], cr.phi[i]))
        elif cr.body_a[i] == "cube":
            rows.append((cr.names_b[i], -cr.force[i], cr.phi[i]))
    total = sum((f for _, f, _ in rows), np.zeros(3))
    return {n for n, _, _ in rows}, total, rows


def hold(env, q_target, steps):
    env.q_target = np.asarray(q_target, dtype=float).copy()
    env.pd.set_target(q_d=env.q_target)
    for _ in range(steps):
        env.step(np.zeros(16))


def test_cube_rests_in_the_palm_for_10_s():
    env = make(**STILL)
    env.reset(seed=0)
    m = env.config["cube_mass"]
    for _ in range(10):  # 0.5 s: the 4 mm release and settling
        env.step(np.zeros(16))
    p0, _ = env.sim.body_pose("cube")
    max_speed = 0.0
    for _ in range(200):  # 10 s
        _, _, term, trunc, _ = env.step(np.zeros(16))
        assert not (term or trunc)
        v, _ = env.sim.body_velocity("cube")
        max_speed = max(max_speed, float(np.linalg.norm(v)))
    p1, R = env.sim.body_pose("cube")
    assert np.linalg.norm(p1 - p0) < 1e-3
    assert max_speed < 1e-3
    # static equilibrium: the contacts carry exactly the cube's weight, on the palm (and the thumb's base box)
    names, total, rows = contacts_on_cube(env.sim)
    assert ac.PALM_GEOM in names
    np.testing.assert_allclose(total, [0.0, 0.0, m * G], atol=0.01 * m * G)
    # resting on its face: bottom within 1.5 mm of the palm face, tilt under 3°
    assert abs(p1[2] - 0.5 * env.config["cube_size"] - PALM_FACE_Z) < 1.5e-3
    assert R[2, 2] > math.cos(math.radians(3.0))


def test_fingertip_press_obeys_contact_law_and_finger_statics():
    env = make(**STILL)
    env.reset(seed=0)
    hold(env, NOMINAL, 10)
    target = NOMINAL.copy()
    target[4:8] = PRESS
    hold(env, target, 30)
    sim, system = env.sim, env.system
    names, total, rows = contacts_on_cube(sim)
    tip = ac.TIP_GEOMS[1]
    assert tip in names
    # the cube stays in static equilibrium: the fingertip's push is taken up by the palm
    m = env.config["cube_mass"]
    np.testing.assert_allclose(total, [0.0, 0.0, m * G], atol=0.02 * m * G)
    f_tip = env.tip_forces()[1]
    assert f_tip[2] < -1.0  # pressing down by more than a newton
    # contact law at rest: f_n = (k/2) (−φ) with hand and cube both of stiffness k (springs in series)
    k_pair = 0.5 * env.config["stiffness"]
    cr = sim.contact_results()
    for i in range(cr.n):
        if {cr.names_a[i], cr.names_b[i]} == {tip, "cube/0"}:
            fn = abs(float(cr.force[i] @ cr.normal[i]))
            assert fn == pytest.approx(k_pair * -cr.phi[i], rel=0.05)
            assert -cr.phi[i] < 1e-3
    # finger statics: PD torque + Σ Jᵀ f(contacts on the middle finger) = gravity torque, on its 4 joints
    model = system.model
    data = model.createData()
    q = sim.q
    pin.computeJointJacobians(model, data, q)
    pin.framesForwardKinematics(model, data, q)
    tau_contact = np.zeros(model.nv)
    for i in range(cr.n):
        for name, sign in ((cr.names_a[i], -1.0), (cr.names_b[i], 1.0)):  # cr.force acts on B
            g = next(g for g in system.geometries if g.name == name)
            if g.joint == 0:
                continue
            J = pin.getJointJacobian(model, data, g.joint, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            r = cr.point[i] - data.oMi[g.joint].translation
            J_point = J[:3] - pin.skew(r) @ J[3:]
            tau_contact += J_point.T @ (sign * cr.force[i])
    gravity = pin.computeGeneralizedGravity(model, data, q)
    tau_pd = np.zeros(model.nv)
    tau_pd[env.pd.dofs] = sim.applied_effort(env.pd)
    middle = env.hand_v[4:8]
    residual = tau_pd[middle] + tau_contact[middle] - gravity[middle]
    assert np.max(np.abs(residual)) < 0.02 * env.config["effort_limit"]
    assert np.max(np.abs(tau_pd[middle])) <= env.config["effort_limit"] + 1e-9


@pytest.mark.parametrize("seed", [0, 1])
def test_random_actions_keep_penetration_under_1_mm(seed):
    env = make()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(60):
        obs, r, term, trunc, info = env.step(rng.uniform(-1, 1, 16))
        assert np.all(np.isfinite(obs)) and math.isfinite(r) and "sim_failure" not in info
        _, _, rows = contacts_on_cube(env.sim)
        worst = max([worst] + [-phi for _, _, phi in rows])
        if term:
            env.reset(seed=seed + 100)
    assert worst < 1e-3


def test_goal_reached_counts_and_resamples():
    env = make(**STILL, goal="z")
    env.reset(seed=0, options={"goal": yaw_quaternion(0.0)})
    _, _, _, _, info = env.step(np.zeros(16))
    assert info["is_success"] and info["successes"] == 1 and info["successes_wide"] == 1
    assert info["reward/success"] == env.config["reward_scales"]["success"]
    assert env.rot_error < 0.1
    # the next goal is a new yaw about the palm normal: its rotation from the cube has only a z part
    assert not np.allclose(env.goal, yaw_quaternion(0.0))
    d = env._observe()[OBS["rotation_to_goal"]]
    assert abs(d[0]) < 0.05 and abs(d[1]) < 0.05
    # a goal 0.15 rad away counts at 0.2 rad only, once
    env.reset(seed=0, options={"goal": yaw_quaternion(0.15)})
    for _ in range(3):
        _, _, _, _, info = env.step(np.zeros(16))
        assert not info["is_success"]
    assert info["successes"] == 0 and info["successes_wide"] == 1
    assert 0.1 < info["rotation_error"] < 0.2


def test_z_goals_lie_flat_whatever_the_tilt_of_the_cube_that_reached_the_last():
    """A goal="z" goal is a yaw about the palm normal of a cube lying flat: drawn from a cube tilted when it reached
    the last goal, it drops that tilt (level_quaternion) and keeps the cube's face and yaw; a flat cube's orientation
    is its own level bit for bit (the first goal of every seed is unchanged)."""
    flat = yaw_quaternion(0.7)
    assert np.array_equal(level_quaternion(flat), flat)
    rng = np.random.default_rng(0)
    for _ in range(20):
        tilt = rng.uniform(-0.3, 0.3, 2)
        face = [quat_multiply([math.sin(math.pi / 4), 0, 0, math.cos(math.pi / 4)], flat), flat][rng.integers(2)]
        q = quat_multiply(np.array([math.sin(tilt[0] / 2), 0, 0, math.cos(tilt[0] / 2)]),
                          quat_multiply(np.array([0, math.sin(tilt[1] / 2), 0, math.cos(tilt[1] / 2)]), face))
        lq = level_quaternion(q)
        R, L = quat_xyzw_to_matrix(q), quat_xyzw_to_matrix(lq)
        assert cube_tilt(L) < 1e-7 and cube_yaw(L) == pytest.approx(cube_yaw(R), abs=0.5 * cube_tilt(R) ** 2)
        turn = quat_multiply(lq, quat_conjugate(q))
        assert 2 * math.asin(min(1.0, np.linalg.norm(turn[:3]))) == pytest.approx(cube_tilt(R), abs=1e-9)
    env = make(**STILL, goal="z")
    env.reset(seed=0)
    goal = env._sample_goal(quat_multiply(np.array([math.sin(0.05), 0, 0, math.cos(0.05)]), flat))
    assert cube_tilt(quat_xyzw_to_matrix(goal)) < 1e-7


def test_observation_holds_the_cube_pose_and_the_rotation_to_the_goal():
    """The policy sees the cube's orientation (w ≥ 0) beside the rotation to the goal: the goal follows from the
    two, q_goal = d ⊗ q_cube, while the rotation to the goal alone leaves the cube's edges unobserved."""
    env = make(goal="z")
    env.reset(seed=4)
    for _ in range(5):
        obs, *_ = env.step(env.np_random.uniform(-1.0, 1.0, 16))
        q = env.sim.q[env.cube_q]
        q_obs = obs[OBS["cube_orientation"]]
        assert q_obs[3] >= 0.0
        np.testing.assert_allclose(q_obs, q[3:7] if q[6] >= 0.0 else -q[3:7], atol=1e-6)
        np.testing.assert_allclose(obs[OBS["cube_position"]], q[:3] - env.palm_centre, atol=1e-6)
        goal = quat_multiply(obs[OBS["rotation_to_goal"]], q_obs)
        assert abs(abs(float(np.dot(goal, env.goal))) - 1.0) < 1e-5
    assert env.observation_space.shape == (OBS.size,) == (59,)


def test_drop_terminates_with_penalty():
    env = make(**STILL, cube_start=(-0.2, 0.0))  # released beyond the palm's heel: it falls
    env.reset(seed=0)
    for k in range(40):
        _, r, term, _, info = env.step(np.zeros(16))
        if term:
            break
    assert term and info["reward/drop"] == env.config["reward_scales"]["drop"]
    assert env.evaluate()["dropped"]


def test_dropping_the_cube_never_pays():
    """Holding the cube still, far from its goal, returns more than dropping it at once (the reward must not invite
    ending the episode: with the first version's −θ per step, PPO learned to drop the cube)."""
    far = yaw_quaternion(math.pi)  # the worst goal about the palm normal
    held = make(**STILL)
    held.reset(seed=0, options={"goal": far})
    dropped = make(**STILL, cube_start=(-0.2, 0.0))  # released beyond the palm's heel: it falls
    dropped.reset(seed=0, options={"goal": far})
    ret_held = ret_dropped = 0.0
    for _ in range(40):
        _, r, term, _, info = held.step(np.zeros(16))
        ret_held += r
        assert not term and 0.0 <= info["reward/orientation"] <= held.config["reward_scales"]["orientation"]
    for _ in range(40):
        _, r, term, _, _ = dropped.step(np.zeros(16))
        ret_dropped += r
        if term:
            break
    assert term and ret_held > ret_dropped


def test_privileged_observation_parts():
    env = make(**STILL, privileged_obs=True)
    obs, _ = env.reset(seed=0)
    assert obs["critic"].shape == (AllegroCubeEnv.N_CRITIC_OBS,)
    np.testing.assert_array_equal(obs["critic"][:AllegroCubeEnv.N_POLICY_OBS], obs["policy"])
    target = NOMINAL.copy()
    target[4:8] = PRESS
    hold(env, target, 30)
    critic = env._observe()["critic"]
    np.testing.assert_allclose(critic[93:105].reshape(4, 3), env.tip_forces())
    assert critic[96:99][2] < -1.0  # the middle fingertip's push
    tip, _ = env.sim.body_pose(ac.TIP_FRAMES[1])
    np.testing.assert_allclose(critic[84:87], tip - env.palm_centre)
    np.testing.assert_allclose(critic[105:108], [0.065, 0.1, 1.0])


def test_domain_randomization_resizes_the_cube():
    env = make(**STILL, domain_randomization={"cube_size": (0.06, 0.06), "cube_mass": (0.07, 0.07)})
    env.reset(seed=0)
    for _ in range(10):
        env.step(np.zeros(16))
    p, _ = env.sim.body_pose("cube")
    assert abs(p[2] - 0.03 - PALM_FACE_Z) < 1.5e-3  # rests on its face: centre half an edge above the palm
    _, total, _ = contacts_on_cube(env.sim)
    assert total[2] == pytest.approx(0.07 * G, rel=0.01)


@pytest.mark.parametrize("bad", [{"goal": (0, 0, 0, 0)}, {"goal": (1, 2)}, {"goal": (np.nan, 0, 0, 1)}])
def test_bad_goal_option_raises(bad):
    env = make()
    with pytest.raises(ValueError, match="goal"):
        env.reset(seed=0, options=bad)


@pytest.mark.parametrize("kw", [{"goal": "xyz"}, {"cube_size": -0.1}, {"kp": -1.0}, {"start_yaw": (1.0, 0.0)}])
def test_bad_task_kwargs_raise(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        make(**kw)


def test_scripted_rotator_turns_the_cube_a_quarter_turn():
    """Feasibility (issue 12, short version of benchmarks/allegro_scripted.py): the scripted feedback relay turns
    the cube ≥ 90° about the palm normal without dropping it, and then leaves it lying flat in the palm."""
    from cenic_gym.envs.allegro_cube import ScriptedRotator, rotation_episode
    env = gym.make("CenicAllegro-v0")
    policy = ScriptedRotator(env)
    # tuning seeds, not the benchmark's 0–19. 100 steps (5 s; the benchmark allows 160): the episodes are chaotic,
    # any change of a solve moves them — with the Anderson(1) friction-bound iteration both seeds reached 90° in
    # < 50 steps, with Newton's seed 117 reaches it at step 62 (at step 60: 89°, the cube tilted 16°)
    for seed in (102, 117):
        r = rotation_episode(env, policy, seed, steps=100)
        assert not r["dropped"] and not r["sim_failure"], r
        assert r["max_rotation"] >= 0.5 * math.pi, r
        assert r["rotation"] < 0.0  # clockwise, as designed
        assert r["tilt"] < math.radians(10.0), r  # resting on a face (the thumb's base box tilts it a few degrees)


def test_scripted_rotator_rejects_other_envs():
    from cenic_gym.envs.allegro_cube import ScriptedRotator
    with pytest.raises(ValueError, match="CenicAllegro"):
        ScriptedRotator(gym.make("CenicFranka-v0"))
    with pytest.raises(ValueError, match="target"):
        ScriptedRotator(gym.make("CenicAllegro-v0"), target=-1.0)
    with pytest.raises(ValueError, match="regrip"):
        ScriptedRotator(gym.make("CenicAllegro-v0"), regrip=-1)


def test_scripted_rotator_pinch_points_and_fingers():
    """Re-centring pinch (``recentre``, opt-in): for an unyawed cube the index and ring fingertip targets lie on
    the −y and +y faces (``squeeze`` inside them) 8 mm ahead of the centre; the index and ring reach them over the
    palm centre, the middle finger replaces the ring for a cube drifted 3 cm to the thumb side, no pair reaches a
    cube 6 cm further back; a recentre line off the palm raises, naming the argument."""
    from cenic_gym.envs.allegro_cube import ScriptedRotator
    env = gym.make("CenicAllegro-v0")
    env.reset(seed=0)
    policy = ScriptedRotator(env, recentre=-0.050)
    s = env.unwrapped.params["cube_size"]
    (lo, hi), n = policy._pinch_points(np.array([-0.05, 0.0, 0.0]), 0.0, policy.squeeze)
    h = 0.5 * s + policy.R_TIP - policy.squeeze
    np.testing.assert_allclose(lo, [-0.042, -h, policy.z_push], atol=1e-12)
    np.testing.assert_allclose(hi, [-0.042, h, policy.z_push], atol=1e-12)
    np.testing.assert_allclose(n, [0.0, 1.0], atol=1e-12)
    assert policy._pinch_fingers(np.array([-0.05, 0.0, 0.0]), 0.0, NOMINAL) == (0, 2)
    assert policy._pinch_fingers(np.array([-0.048, -0.032, 0.0]), 0.0, NOMINAL) == (0, 1)
    assert policy._pinch_fingers(np.array([-0.11, 0.0, 0.0]), 0.0, NOMINAL) is None
    with pytest.raises(ValueError, match="recentre"):
        ScriptedRotator(env, recentre=0.05)


def test_scripted_rotator_pinch_drags_the_cube_forward():
    """The pinch can move a drifted cube forward over the palm: seed 3 at ε = 1e-3, the first pinch ends with
    the cube centre ≥ 5 mm further towards the fingers (+x) than where it began (18.7 mm when written), not dropped
    and resting on a face. It is not reliable, which is why it is off by default: the first complete pinches of
    seeds 0–29 moved the cube by −30 … +19 mm along x, ≥ 5 mm forward in 5 of 14 (measured after the friction
    regularization became ε = v_s, 2026-12, which changed every trajectory: the example before it, seed 20, no
    longer completes a pinch in 80 steps; seed 8 before the step stretch of ``cenic.attempt_step_size``). Chaotic
    like every scripted episode: a change of a solve can move it."""
    from cenic_gym.envs.allegro_cube import ScriptedRotator
    env = gym.make("CenicAllegro-v0")
    e = env.unwrapped
    policy = ScriptedRotator(env, recentre=-0.050, pinch_open_steps=3, thumb_wall=None)  # as measured: thumb open
    obs, _ = env.reset(seed=3)
    policy.reset()
    start = None
    for _ in range(80):
        action = policy(obs)
        if policy._pinch is not None and start is None:
            start = e.sim.q[e.cube_q][:3].copy()
        if start is not None and policy._pinch is None:
            break
        obs, _, terminated, _, _ = env.step(action)
        assert not terminated
    assert start is not None and policy._pinch is None, "no complete pinch in 80 steps"
    end = e.sim.q[e.cube_q][:3]
    assert end[0] - start[0] >= 0.005, (start, end)
    assert abs(end[2] - start[2]) < 0.01, (start, end)


def test_scripted_rotator_thumb_wall_stops_the_drift_to_the_thumb_side():
    """Thumb wall (default): the thumb's fingertip stands beside the palm's −y edge at the cube's mid-height. Seed 8
    at ε = 1e-3, a failure of the open thumb (``thumb_wall=None``: the pushes carry the cube toward the thumb, centre
    y < −0.045 m, and the rotation stalls short of 90°), turns ≥ 90° with the wall, the cube staying over the palm.
    (Seeds 0–39: the open thumb ends with the cube at y = −0.019 m on average, the wall at 0.000 m.)
    A malformed wall point raises, naming the argument."""
    from cenic_gym.envs.allegro_cube import ScriptedRotator, rotation_episode
    env = gym.make("CenicAllegro-v0")
    e = env.unwrapped
    wall = ScriptedRotator(env)
    tip = wall._tip_position(3, wall.q_des[12:16])
    assert np.linalg.norm(tip - np.array(wall.thumb_wall)) < 0.015, tip  # as near as the thumb's joint limits allow
    assert tip[1] > -0.06 and 0.04 < tip[2] < 0.07, tip
    r = rotation_episode(env, ScriptedRotator(env, thumb_wall=None), 8, steps=80)
    assert r["max_rotation"] < 0.5 * math.pi and e.sim.q[e.cube_q][1] < -0.045, (r, e.sim.q[e.cube_q][:3])
    r = rotation_episode(env, wall, 8, steps=80)
    assert r["max_rotation"] >= 0.5 * math.pi and not r["dropped"], r
    assert abs(e.sim.q[e.cube_q][1]) < 0.0565, e.sim.q[e.cube_q][:3]  # over the palm (y within ±56.5 mm)
    with pytest.raises(ValueError, match="thumb_wall"):
        ScriptedRotator(env, thumb_wall=(0.0, 0.0))


def test_scripted_rotator_reach_gating_follows_the_cube():
    """Reach gating (``reach_tol``): at the start position the middle fingertip reaches the cube's front edge;
    with the cube 6 cm further back (behind every fingertip's reach, x ≈ −0.105 m) it does not; bad tolerances
    raise, naming the argument."""
    from cenic_gym.envs.allegro_cube import ScriptedRotator
    env = gym.make("CenicAllegro-v0")
    env.reset(seed=0)  # the episode's cube size
    policy = ScriptedRotator(env, reach_tol=0.008)
    centre = np.array([-0.045, 0.0, 0.0])
    q_middle = NOMINAL[4:8]
    assert policy._reaches(1, centre, math.radians(10.0), q_middle)
    assert not policy._reaches(1, centre + np.array([-0.06, 0.0, 0.0]), math.radians(10.0), q_middle)
    with pytest.raises(ValueError, match="reach_tol"):
        ScriptedRotator(env, reach_tol=0.0)


def test_mirrored_rotator_turns_counter_clockwise():
    """``mirror=True`` runs the clockwise relay in the world mirrored across the xz-plane (index and ring swap
    roles): measured on the simulator's true cube state, the cube turns counter-clockwise."""
    from cenic_gym.envs.allegro_cube import ScriptedRotator, rotation_episode
    env = gym.make("CenicAllegro-v0")
    r = rotation_episode(env, ScriptedRotator(env, mirror=True), 9, steps=60)
    assert not r["dropped"] and r["rotation"] > math.radians(60.0), r


def test_goal_rotator_reaches_z_goals():
    """The goal task's scripted policy turns the cube to the first goal (a yaw about the palm normal) within the
    0.1 rad success test; the env then draws the next goal and counts the first."""
    from cenic_gym.envs.allegro_cube import GoalRotator
    env = gym.make("CenicAllegro-v0", goal="z")
    policy = GoalRotator(env)
    # seeds 6 and 5: the goal lies 45° and 77° clockwise (reached at steps 39 and 111); seed 3: 30°
    # counter-clockwise, within ccw_within, turned by the mirrored relay (step 23)
    for seed, by, ccw in ((6, 45, False), (5, 120, False), (3, 30, True)):
        obs, _ = env.reset(seed=seed)
        policy.reset()
        first_goal = env.unwrapped.goal.copy()
        for _ in range(by):
            obs, _, terminated, truncated, info = env.step(policy(obs))
            assert not (terminated or truncated)
            if info["is_success"]:
                break
        assert info["is_success"] and info["successes"] == 1 and info["rotation_error"] < 0.1, info
        assert policy.mirror == ccw
        assert not np.allclose(env.unwrapped.goal, first_goal)  # the next goal is drawn
    with pytest.raises(ValueError, match="goal='z'"):
        GoalRotator(gym.make("CenicAllegro-v0"))


def test_tilt_guard_stops_the_pushes_on_a_tilted_cube():
    """GoalRotator's tilt guard: the cube seen turned 20° more about x (a tilt > 10°) → no finger starts a push;
    by default (``flatten_tilted``) every relay finger is free with its joint targets flat (0) and the thumb open
    (NOMINAL), so nothing props the cube up; without flattening every pushing finger retreats; the same observation
    without the guard keeps the pushes; on a flat cube all three act as the plain relay."""
    from cenic_gym.envs.allegro_cube import OBS, GoalRotator
    env = gym.make("CenicAllegro-v0", goal="z")
    flat, guarded, plain = GoalRotator(env), GoalRotator(env, flatten_tilted=False), GoalRotator(env, tilt_guard=None)
    obs, _ = env.reset(seed=6)
    for p in (flat, guarded, plain):
        p.reset()
    for _ in range(40):  # the same actions for all three (the cube lies flat: tilt < 10°)
        a = guarded(obs)
        for p in (flat, plain):
            p(obs)
            assert np.array_equal(a, p._action(p.q_des))
        if "push" in guarded.phase.values():
            break
        obs, *_ = env.step(a)
    assert "push" in guarded.phase.values() and guarded.phase == plain.phase == flat.phase
    goal = env.unwrapped.goal
    q_cube = quat_multiply(quat_conjugate(obs[OBS["rotation_to_goal"]]), goal)
    tilt = np.array([math.sin(math.radians(10.0)), 0.0, 0.0, math.cos(math.radians(10.0))])  # 20° about x
    q_tilted = quat_multiply(tilt, q_cube)
    assert cube_tilt(quat_xyzw_to_matrix(q_tilted)) > guarded.tilt_guard + 0.1
    tilted = obs.copy()
    tilted[OBS["rotation_to_goal"]] = quat_multiply(goal, quat_conjugate(q_tilted))
    pushing = [f for f, ph in guarded.phase.items() if ph == "push"]
    a = flat(tilted)
    guarded(tilted)
    plain(tilted)
    assert all(ph == "free" for ph in flat.phase.values())
    assert np.array_equal(flat.q_des[:12], np.zeros(12)) and np.array_equal(flat.q_des[12:], NOMINAL[12:])
    assert np.array_equal(a, flat._action(flat.q_des))
    assert all(guarded.phase[f] == "retreat" for f in pushing)
    assert not {"push", "approach", "clear"} & set(guarded.phase.values())
    assert "push" in plain.phase.values()
    with pytest.raises(ValueError, match="tilt_guard"):
        GoalRotator(env, tilt_guard=2.0)


def test_episode_success_counts_goals():
    """A task that counts its goals succeeds with at least one, whatever its last step says; any other task by
    its last step's is_success. Evaluations (cenic-gym eval, sim2real) report the goals per episode."""
    from cenic_gym.env import episode_success
    from cenic_gym.train.common import run_episodes
    assert episode_success({"is_success": False, "successes": 2}, goals=2)
    assert not episode_success({"is_success": False, "successes": 0}, goals=0)
    assert episode_success({"is_success": True}) and not episode_success({"is_success": False})
    from cenic_gym.envs.allegro_cube import GoalRotator
    env = gym.make("CenicAllegro-v0", goal="z", max_episode_steps=40)
    policy = GoalRotator(env)

    def act(obs):
        return policy(obs)

    result = run_episodes(act, lambda: env, 1, seed=6)  # the goal at step 39, not on the last step
    assert result.successes == [True] and result.goals == [1] and result.mean_goals == 1.0
    assert "goals per episode 1.00" in result.summary()
    from cenic_gym.sim2real.policy import ScriptedPolicy
    from cenic_gym.sim2real.rollout import run_episode, summarize
    episode = run_episode(gym.make("CenicAllegro-v0", goal="z"), ScriptedPolicy(GoalRotator), 6, max_steps=40)
    assert episode.success and episode.goals == 1 and summarize([episode])["mean_goals"] == 1.0
