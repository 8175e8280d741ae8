"""The simulator as a library under RL use: copies continue exactly, state is complete, per-advance statistics,
what envs read (poses, velocities, efforts, contacts), time-varying set-points, domain randomization.

Scenes of the continuation test (issue "Engine ready for envs and Ray"): a Go1 standing under joint PD, a Panda
holding a box while its arm follows a piecewise-linear joint trajectory under inverse-dynamics PD, and 20 objects
dropped into a bin. Each is run to mid-run, then copied (pickle, deepcopy, get_state/restore, flat state vector,
another process) and continued; every copy must match the uninterrupted run byte for byte.
"""
import copy
import math
import pickle
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from cenic_gym import Box, InverseDynamicsPD, JointPD, SimState, Simulator, Sphere, scenes
from cenic_gym.external import PiecewiseLinear
from test_external import pendulum

G = 9.81
T_MID, T_END = 0.3, 1.3  # copy at T_MID, continue 1 s


def go1_standing():
    system = scenes.go1_on_ground()
    pd = JointPD(system, system.robot_v_indices("go1"), kp=300.0, kd=5.0,
                 q_d=system.q0[system.robot_q_indices("go1")])
    return Simulator(system, accuracy=1e-3, external=[pd])


def panda_holding_box():
    system = scenes.panda_box_grasp(lifted=0.1, finger_gap=0.0)
    arm_v = system.robot_v_indices("panda")[:7]
    q_arm = system.q0[system.robot_q_indices("panda")[:7]]
    move = PiecewiseLinear([0.0, 1.0, 2.0], [q_arm, q_arm + 0.2, q_arm])  # waves the box while holding it
    arm = InverseDynamicsPD(system, arm_v, kp=400.0, kd=40.0, q_d=move)
    grip = JointPD(system, system.robot_v_indices("panda", "panda_finger_joint1"), kp=2000.0, kd=100.0, q_d=0.0,
                   effort_limit=20.0)
    return Simulator(system, accuracy=1e-3, external=[arm, grip])


def clutter():
    return Simulator(scenes.clutter(n_objects=20), accuracy=1e-3)


SCENES = {"go1": go1_standing, "panda": panda_holding_box, "clutter": clutter}


def state_bytes(sim):
    """Every number that determines the future, as bytes (q, v, z, t, next δt)."""
    it = sim.integrator
    return b"".join(np.ascontiguousarray(a, dtype=float).tobytes() for a in (it.q, it.v, it.z, [it.t, it.dt]))


@pytest.fixture(scope="module", params=sorted(SCENES))
def reference(request):
    """(scene name, simulator at T_MID, state bytes of the uninterrupted run at T_END)."""
    sim = SCENES[request.param]()
    sim.advance_to(T_MID)
    mid = copy.deepcopy(sim)
    sim.advance_to(T_END)
    return request.param, mid, state_bytes(sim)


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "restore", "restore_copy", "state_vector"])
def test_copies_continue_bit_identically(reference, how):
    name, mid, end = reference
    sim = copy.deepcopy(mid)
    if how == "pickle":
        sim = pickle.loads(pickle.dumps(sim))
    elif how == "deepcopy":
        sim = copy.deepcopy(sim)
    elif how == "restore":  # snapshot, run elsewhere, come back
        snap = sim.get_state()
        sim.advance_to(T_MID + 0.2)
        sim.restore(snap)
    elif how == "restore_copy":  # a fresh simulator of the same scene takes the snapshot
        snap = pickle.loads(pickle.dumps(sim.get_state()))
        sim = SCENES[name]()
        sim.restore(snap)
    elif how == "state_vector":
        if name == "panda":  # time-varying set-points have no flat form
            with pytest.raises(ValueError, match="time-varying"):
                sim.get_state_vector()
            return
        x = sim.get_state_vector()
        sim.advance_to(T_MID + 0.2)
        sim.set_state_vector(x)
    sim.advance_to(T_END)
    assert state_bytes(sim) == end, f"{name}: {how} copy diverged"


def _run_in_fresh_process(code, timeout=600):
    """stdout bytes of ``code`` run by a fresh interpreter (tests/ on sys.path)."""
    prelude = f"import pickle, sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, check=True,
                          timeout=timeout).stdout


@pytest.mark.parametrize("name", sorted(SCENES))
def test_a_pickled_simulator_continues_identically_in_another_process(name, tmp_path):
    """Process A runs the scene uninterrupted and pickles it at T_MID; process B, a different interpreter, unpickles
    it and continues: the same bytes."""
    pkl = tmp_path / "sim.pkl"
    end_a = _run_in_fresh_process(f"""
        from test_state import SCENES, T_MID, T_END, state_bytes
        sim = SCENES[{name!r}]()
        sim.advance_to(T_MID)
        open({str(pkl)!r}, "wb").write(pickle.dumps(sim))
        sim.advance_to(T_END)
        sys.stdout.buffer.write(state_bytes(sim))
        """)
    end_b = _run_in_fresh_process(f"""
        from test_state import T_END, state_bytes
        sim = pickle.loads(open({str(pkl)!r}, "rb").read())
        sim.advance_to(T_END)
        sys.stdout.buffer.write(state_bytes(sim))
        """)
    assert len(end_a) > 0 and end_b == end_a


def test_building_another_robot_first_does_not_change_a_run():
    """What a process computed before must not change a simulation's bits. It did: coal keeps process-wide state
    that a Box-Box GJK query flips (building an Allegro model runs some), and a Panda run's Convex-Box contacts
    then differed in the last bit (fixed by narrowphase._settle_coal_state at import)."""
    code = """
        from test_state import T_END, panda_holding_box, state_bytes
        {pre}
        sim = panda_holding_box()
        sim.advance_to(T_END)
        sys.stdout.buffer.write(state_bytes(sim))
        """
    plain = _run_in_fresh_process(code.format(pre=""))
    after = _run_in_fresh_process(code.format(pre="from cenic_gym import SceneBuilder\n"
                                                   "        SceneBuilder().add_robot('allegro').build()"))
    assert after == plain


def test_restore_makes_results_valid_at_once():
    sim = panda_holding_box()
    sim.advance_to(0.2)
    snap = sim.get_state()
    cr, eff = sim.contact_results(), sim.applied_efforts()
    p_box = sim.body_pose("box")[0]
    fresh = panda_holding_box()
    assert fresh.contact_results().n == 0
    fresh.restore(snap)
    got = fresh.contact_results()
    assert got.n == cr.n > 0 and got.names_a == cr.names_a
    np.testing.assert_array_equal(got.force, cr.force)
    for a, b in zip(fresh.applied_efforts(), eff):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fresh.body_pose("box")[0], p_box)
    # a copy of a snapshot is independent of later changes to the simulator
    sim.external[1].set_target(q_d=0.04)
    assert snap.external[1]["targets"]["q_d"][0] == 0.0


# -- per-advance statistics -----------------------------------------------------------------------------------------

def test_advance_stats_are_per_call_values():
    sim = Simulator(scenes.sphere_drop(height=0.3), accuracy=1e-3)
    calls = [sim.advance_to(t) for t in (0.1, 0.4, 0.5)]
    total = sim.stats
    assert sum(c.accepted for c in calls) == total.accepted
    assert sum(c.rejected for c in calls) == total.rejected
    assert sum(c.newton_iters for c in calls) == total.newton_iters
    for c, dt_window in zip(calls, (0.1, 0.3, 0.1)):
        assert c.sim_time == pytest.approx(dt_window)
        assert c.min_dt <= c.mean_dt <= c.max_dt <= dt_window + 1e-15
        assert c.mean_dt == pytest.approx(c.sim_time / c.accepted)
        assert c.realtime_factor == pytest.approx(c.sim_time / c.wall_time)
    assert calls[2].min_dt > total.min_dt or calls[1].min_dt == total.min_dt  # not the cumulative minimum
    assert calls[1].min_signed_distance < 0 < calls[0].min_signed_distance  # lands at 0.22 s (+ sag)
    fixed = Simulator(scenes.free_fall(), fixed_step=0.01).advance_to(0.1)
    assert (fixed.accepted, fixed.rejected, fixed.min_dt, fixed.max_dt) == (10, 0, pytest.approx(0.01),
                                                                           pytest.approx(0.01))
    assert fixed.min_signed_distance == math.inf
    none = Simulator(scenes.free_fall()).advance_to(0.0)
    assert none.accepted == 0 and math.isnan(none.min_dt)


def test_on_step_sees_every_accepted_step():
    sim = Simulator(scenes.sphere_drop(height=0.3), accuracy=1e-3)
    seen = []
    st = sim.advance_to(0.5, on_step=lambda s: seen.append((s.t, s.body_pose("ball")[0][2])))
    assert len(seen) == st.accepted and seen[-1][0] == 0.5
    assert all(t1 > t0 for (t0, _), (t1, _) in zip(seen, seen[1:]))


# -- what envs read -------------------------------------------------------------------------------------------------

def test_link_poses_and_velocities_match_pinocchio():
    sim = panda_holding_box()
    sim.advance_to(0.5)
    m = sim.system.model
    d = m.createData()
    q, v = sim.q, sim.v
    pin.forwardKinematics(m, d, q, v)
    fid = m.getFrameId("panda/panda_hand")
    X = pin.updateFramePlacement(m, d, fid)
    V = pin.getFrameVelocity(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
    p, R = sim.body_pose("panda/panda_hand")
    lin, ang = sim.body_velocity("panda/panda_hand")
    np.testing.assert_array_equal(p, X.translation)
    np.testing.assert_array_equal(R, X.rotation)
    np.testing.assert_allclose(lin, V.linear, atol=1e-14)
    np.testing.assert_allclose(ang, V.angular, atol=1e-14)
    assert np.linalg.norm(lin) > 1e-3  # the arm is moving at 0.5 s
    # a free body: position from q, world linear velocity from v, world angular velocity R ω_body
    sl_q, sl_v = sim.system.q_slice("box"), sim.system.v_slice("box")
    pb, Rb = sim.body_pose("box")
    vb, wb = sim.body_velocity("box")
    np.testing.assert_allclose(pb, q[sl_q][:3], atol=1e-15)
    np.testing.assert_allclose(vb, v[sl_v][:3], atol=1e-14)
    np.testing.assert_allclose(wb, Rb @ v[sl_v][3:], atol=1e-14)
    with pytest.raises(KeyError, match="no_such_link"):
        sim.body_pose("no_such_link")


def gravity_torque(system, q):
    """The generalized gravity force the joint must resist at q (static balance: τ = g(q))."""
    return pin.computeGeneralizedGravity(system.model, system.model.createData(), np.asarray(q, float))


def test_applied_efforts_hold_gravity_and_saturate_at_the_limit(tmp_path):
    """A PD-held pendulum at rest needs τ = g(q) = m g l cos θ (static balance); a limit below that saturates."""
    theta = 0.6
    system = pendulum(tmp_path, axis="0 1 0")
    pd = JointPD(system, [0], kp=2000.0, kd=50.0, q_d=theta)
    sim = Simulator(system, accuracy=1e-5, external=[pd])
    sim.set_state(q=[theta])
    sim.advance_to(3.0)
    tau = gravity_torque(system, sim.q)[0]
    assert abs(tau) == pytest.approx(G * 0.5 * math.cos(sim.q[0]), rel=1e-9)
    assert sim.applied_effort(pd)[0] == pytest.approx(tau, rel=1e-6)
    weak = JointPD(system, [0], kp=2000.0, kd=50.0, q_d=theta, effort_limit=1.0)
    sim = Simulator(system, accuracy=1e-4, external=[weak])
    sim.set_state(q=[theta])
    sim.advance_to(0.05)
    assert abs(sim.applied_efforts()[0][0]) == pytest.approx(1.0)


def test_time_varying_setpoints_are_followed_within_an_advance(tmp_path):
    """A stiff PD with v_d = ramp slope tracks q_d(t) = a t with zero steady-state error (vertical axis: no
    gravity torque), checked inside one advance through on_step."""
    system = pendulum(tmp_path, axis="0 0 1")
    a = 0.5  # rad/s
    pd = JointPD(system, [0], kp=1e4, kd=200.0, q_d=PiecewiseLinear([0.0, 10.0], [[0.0], [10 * a]]), v_d=a)
    sim = Simulator(system, accuracy=1e-5, external=[pd])
    errors = []
    sim.advance_to(2.0, on_step=lambda s: errors.append(s.q[0] - a * s.t) if s.t > 0.5 else None)
    assert len(errors) > 5 and max(abs(e) for e in errors) < 1e-4


def test_contact_results_name_bodies_and_measure_slip():
    """A box sliding at 1 m/s on μ = 0.5: its four corner contacts name the box and the ground, slip at the box's
    speed, and carry friction μ m g against the motion."""
    sim = Simulator(scenes.sliding_box(v0=1.0, mu=0.5), accuracy=1e-4)
    sim.advance_to(0.05)
    cr = sim.contact_results()
    speed = np.linalg.norm(sim.body_velocity("box")[0])
    assert cr.n == 4 and set(cr.body_a + cr.body_b) == {"world", "box"}
    assert set(cr.names_a + cr.names_b) == {"ground", "box/0"}
    np.testing.assert_allclose(cr.slip_speed, speed, rtol=1e-3)
    sign = np.where(np.array(cr.body_b) == "box", 1.0, -1.0)[:, None]  # force on the box
    f = (sign * cr.force).sum(axis=0)
    assert f[2] == pytest.approx(G, rel=1e-2) and f[0] == pytest.approx(-0.5 * G, rel=1e-2)
    assert np.all(cr.penetration >= 0)


# -- domain randomization -------------------------------------------------------------------------------------------

def test_friction_setter_changes_the_deceleration_of_a_sliding_box_only_in_this_simulator():
    """Sliding box, v0 = 1 m/s: v(t) = v0 − μ g t while sliding. μ 0.5 → 0.2 on both box and ground."""
    system = scenes.sliding_box(v0=1.0, mu=0.5)
    sim = Simulator(system, accuracy=1e-4)
    sim.set_geometry_material(["box/0", "ground"], mu_static=0.2, mu_dynamic=0.2)
    sim.advance_to(0.2)
    assert sim.body_velocity("box")[0][0] == pytest.approx(1.0 - 0.2 * G * 0.2, abs=5e-3)
    assert sim.geometry_material("box/0")["mu_static"] == 0.2
    other = Simulator(system, accuracy=1e-4)  # the system keeps its defaults
    other.advance_to(0.2)
    assert other.body_velocity("box")[0][0] == pytest.approx(1.0 - 0.5 * G * 0.2, abs=5e-3)
    snap = sim.get_state()
    other.restore(snap)  # a snapshot carries the materials
    assert other.geometry_material("ground")["mu_dynamic"] == 0.2


def test_mass_setter_scales_the_static_sag():
    """A sphere resting on the ground sinks φ = −m g / k (one contact point, pair stiffness k)."""
    def sag(mass=None):
        sim = Simulator(scenes.sphere_drop(height=0.0, stiffness=1e4), accuracy=1e-5)
        if mass is not None:
            sim.set_body_inertia("ball", mass=mass)
        sim.advance_to(2.0)
        return -sim.contact_results().phi.min(), sim.body_inertia("ball")

    s1, (m1, _, I1) = sag()
    s2, (m2, _, I2) = sag(mass=0.2)
    k_pair = 1e4  # sphere_drop's stiffness is the pair's
    assert s1 == pytest.approx(m1 * G / k_pair, rel=1e-3) and s2 == pytest.approx(0.2 * G / k_pair, rel=1e-3)
    np.testing.assert_allclose(I2, I1 * 0.2 / m1)  # same shape, scaled density


def test_shape_setter_resizes_the_contact_geometry_and_snapshots_carry_it():
    """A sphere resting on the ground: its centre sits at r − m g / k. Radius 5 cm → 8 cm without a rebuild."""
    sim = Simulator(scenes.sphere_drop(height=0.0, stiffness=1e4), accuracy=1e-5)
    snap = sim.get_state()
    sim.set_geometry_shape("ball/0", Sphere(0.08))
    sim.set_state(q=np.r_[0.0, 0.0, 0.08, 0.0, 0.0, 0.0, 1.0])
    sim.advance_to(2.0)
    sag = 0.1 * G / 1e4
    assert sim.body_pose("ball")[0][2] == pytest.approx(0.08 - sag, abs=1e-7)
    assert sim.geometry_shape("ball/0") == Sphere(0.08)
    resized = sim.get_state()
    sim.restore(snap)  # back to 5 cm
    assert sim.geometry_shape("ball/0") == Sphere(0.05)
    sim.restore(resized)
    assert sim.geometry_shape("ball/0") == Sphere(0.08)
    with pytest.raises(TypeError, match="Sphere"):
        sim.set_geometry_shape("ball/0", Box((0.1, 0.1, 0.1)))


def test_gain_setter_changes_the_stiffness_seen_by_the_plant(tmp_path):
    """PD-held pendulum: the static deflection θ under gravity solves K_p (0 − θ) = g(θ) (m g l cos θ)."""
    system = pendulum(tmp_path, axis="0 1 0")
    pd = JointPD(system, [0], kp=1000.0, kd=20.0, q_d=0.0)
    sim = Simulator(system, accuracy=1e-5, external=[pd])
    sim.advance_to(3.0)
    th_stiff = sim.q[0]
    pd.set_gains(kp=100.0)
    sim.advance_to(8.0)
    th = sim.q[0]
    assert abs(th) > 5 * abs(th_stiff) > 0
    assert 100.0 * (0.0 - th) == pytest.approx(gravity_torque(system, [th])[0], rel=1e-4)


# -- bad input ------------------------------------------------------------------------------------------------------

def _sim():
    return Simulator(scenes.free_fall())


def _pd(**kw):
    return JointPD(pendulum(Path(tempfile.mkdtemp())), [0], kp=1.0, kd=1.0, **kw)


def _bad_snapshot(**kw):
    sim = _sim()
    s = sim.get_state()
    fields = dict(q=s.q, v=s.v, t=s.t, dt=s.dt, z=s.z, external=s.external, params=s.params)
    fields.update(kw)
    sim.restore(SimState(**fields))


BAD = [
    ("restore NaN dt", lambda: _bad_snapshot(dt=float("nan")), ValueError, "state.dt"),
    ("restore zero dt", lambda: _bad_snapshot(dt=0.0), ValueError, "state.dt"),
    ("restore NaN q", lambda: _bad_snapshot(q=np.full(7, np.nan)), ValueError, "state.q"),
    ("restore wrong v", lambda: _bad_snapshot(v=np.zeros(3)), ValueError, "state.v"),
    ("restore not a state", lambda: _sim().restore({"q": 1}), TypeError, "SimState"),
    ("state vector length", lambda: _sim().set_state_vector(np.zeros(3)), ValueError, "state vector"),
    ("state vector NaN", lambda: _sim().set_state_vector(np.full(15, np.nan)), ValueError, "nan"),
    ("advance to text", lambda: _sim().advance_to("1"), TypeError, "'1'"),
    ("advance to NaN", lambda: _sim().advance_to(float("nan")), ValueError, "nan"),
    ("unknown body", lambda: _sim().body_pose("nobody"), KeyError, "nobody"),
    ("unknown geometry", lambda: _sim().set_geometry_material("nogeom", mu_static=1.0), KeyError, "nogeom"),
    ("negative friction", lambda: _sim().set_geometry_material(0, mu_static=-1.0), ValueError, "-1.0"),
    ("mu_d > mu_s", lambda: _sim().set_geometry_material(0, mu_static=0.3, mu_dynamic=0.5), ValueError, "0.5"),
    ("zero stiffness", lambda: _sim().set_geometry_material(0, stiffness=0.0), ValueError, "stiffness"),
    ("negative mass", lambda: _sim().set_body_inertia("ball", mass=-1.0), ValueError, "-1.0"),
    ("bad inertia", lambda: _sim().set_body_inertia("ball", inertia=np.diag([1.0, 1.0, 3.0])), ValueError,
     "triangle"),
    ("bad gains", lambda: _pd().set_gains(kp=-1.0), ValueError, "-1.0"),
    ("bad effort limit", lambda: _pd().set_gains(effort_limit=0.0), ValueError, "0.0"),
    ("bad trajectory", lambda: PiecewiseLinear([1.0, 0.0], [[0.0], [1.0]]), ValueError, "increasing"),
    ("trajectory output", lambda: _pd(q_d=lambda t: [np.nan]).setpoints(0.0), ValueError, "nan"),
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("case, fn, exc, text", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_clearly(case, fn, exc, text):
    with pytest.raises(exc) as e:
        fn()
    assert text.lower() in str(e.value).lower(), f"{case}: message {e.value!s} does not name {text!r}"


def test_large_accuracy_is_refused_and_accuracy_one_still_simulates():
    with pytest.raises(ValueError, match="50"):
        Simulator(scenes.free_fall(), accuracy=50.0)
    sim = Simulator(scenes.sphere_drop(height=0.5), accuracy=1.0)
    sim.advance_to(1.0)
    z = sim.body_pose("ball")[0][2]
    assert 0.03 < z < 0.06 and np.all(np.isfinite(sim.q))  # fell and rests on the ground (radius 5 cm)
