"""Real-to-sim: joint friction, damping and armature against analytic answers; physical parameters by name (the
``physics`` option, domain randomization); the fit recovering known parameters from a log our simulator made; bad
logs and parameters rejected by name."""
import json
import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import cenic_gym  # noqa: F401
from cenic_gym import JointFriction, JointPD, Simulator, parameters
from cenic_gym.envs import panda_constants as pc
from cenic_gym.sim2real.fit import add_noise, fit, make_windows, record_commands
from cenic_gym.sim2real.replay import LogError, RobotLog, controlled_joints, set_log_state

from test_external import INERTIA, pendulum

ARM = "panda_joint[1-7]"


def _hinge(tmp_path, external, **kw):
    sys_ = pendulum(tmp_path)  # rotation about the vertical axis: no gravity torque
    return sys_, Simulator(sys_, external=external(sys_), **kw)


@pytest.mark.parametrize("tau, friction", [(0.3, 0.5), (0.8, 0.5)])
def test_joint_friction_sticks_below_and_slides_above_its_level(tmp_path, tau, friction):
    """A constant torque τ on a hinge with Coulomb friction F: at rest for τ < F (creep ≤ v_s τ / F), else
    I θ̈ = τ − F from rest: θ̇(t) = (τ − F) t / I."""
    s, sim = _hinge(tmp_path, lambda s: [JointPD(s, [0], kp=0.0, kd=0.0, tau_ff=tau),
                                         JointFriction(s, [0], friction)], accuracy=1e-6)
    sim.advance_to(1.0)
    if tau < friction:
        assert abs(sim.v[0]) <= 1e-4 * tau / friction * 1.01
        assert abs(sim.q[0]) < 1.1e-4
    else:
        assert sim.v[0] == pytest.approx((tau - friction) * 1.0 / INERTIA, rel=1e-3)


def test_joint_damping_and_armature_set_at_run_time(tmp_path):
    """τ on a hinge with armature a: θ̈ = τ / (I + a); with damping D the speed tends to τ / D."""
    s, sim = _hinge(tmp_path, lambda s: [JointPD(s, [0], kp=0.0, kd=0.0, tau_ff=0.5)], accuracy=1e-7)
    snap = sim.get_state()
    sim.set_joint_dynamics("hinge", armature=0.25)
    assert sim.joint_dynamics("p/hinge") == dict(damping=0.0, armature=0.25)
    sim.advance_to(0.4)
    assert sim.v[0] == pytest.approx(0.5 * 0.4 / (INERTIA + 0.25), rel=1e-6)
    sim.restore(snap)  # the snapshot carries the model's values back
    assert sim.joint_dynamics("hinge")["armature"] == 0.0
    sim.set_joint_dynamics(["hinge"], damping=2.0)
    sim.advance_to(5.0)  # time constant I / D = 0.125 s
    assert sim.v[0] == pytest.approx(0.5 / 2.0, rel=1e-5)
    with pytest.raises(ValueError, match="damping"):
        sim.set_joint_dynamics("hinge", damping=-1.0)
    with pytest.raises(KeyError, match="no 1-DOF joint named 'elbow'"):
        sim.set_joint_dynamics("elbow", damping=1.0)


def test_physics_option_sets_parameters_after_every_reset_and_randomization_draws_them():
    phys = {f"kd_scale/{ARM}": 1.5, "damping/panda_joint4": 2.0, f"armature/{ARM}": 0.2, "mass/box": 0.5,
            "mu/box/0": 0.8, "stiffness/box/0": 2e5, "friction": 0.3}
    env = gym.make("CenicFranka-v0", physics=phys)
    for seed in (0, 1):
        env.reset(seed=seed)
        u = env.unwrapped
        sim = u.sim
        assert np.allclose(u.arm.kd, pc.ARM_KD * 1.5) and u.grip.kd[0] == pc.GRIP_KD
        assert sim.joint_dynamics("panda_joint4") == dict(damping=2.0, armature=0.2)
        assert sim.joint_dynamics("panda_finger_joint1")["armature"] == 0.0
        assert sim.body_inertia("box")[0] == 0.5
        assert sim.geometry_material("box/0")["mu_static"] == 0.8 == sim.geometry_material("box/0")["mu_dynamic"]
        assert sim.geometry_material("box/0")["stiffness"] == 2e5
        fr = [s for s in sim.external if isinstance(s, JointFriction)][0]
        assert np.all(fr.friction == 0.3) and len(fr.dofs) == 8
    nominal = gym.make("CenicFranka-v0")
    assert not any(isinstance(s, JointFriction) for s in nominal.unwrapped.sim.external)  # nothing added
    dr = gym.make("CenicFranka-v0", domain_randomization={"mass/box": (0.3, 0.35), f"kp_scale/{ARM}": (0.9, 0.9)})
    masses = set()
    for seed in range(3):
        dr.reset(seed=seed)
        masses.add(dr.unwrapped.sim.body_inertia("box")[0])
        assert dr.unwrapped.params["arm_kp_scale"] == 1.0  # physical keys alone: the task's own draws stay off
        assert np.allclose(dr.unwrapped.arm.kp, pc.ARM_KP * 0.9)
    assert len(masses) == 3 and all(0.3 <= m <= 0.35 for m in masses)
    both = gym.make("CenicFranka-v0", domain_randomization={"box_mu": (0.9, 0.9), "damping": (0.5, 0.5)})
    both.reset(seed=0)  # a task key turns the task's ranges on (the others at their defaults)
    assert both.unwrapped.params["box_mu"] == 0.9 and both.unwrapped.params["arm_kp_scale"] != 1.0
    assert both.unwrapped.sim.joint_dynamics("panda_joint1")["damping"] == 0.5


@pytest.mark.parametrize("kwargs, match", [
    (dict(physics={"kp_scale": 0.0}), r"'kp_scale' = 0.0 is outside its physical range \(0, 10\]"),
    (dict(physics={"damping/elbow*": 1.0}), "pattern 'elbow\\*' matches none of the controlled joints"),
    (dict(physics={"mass/nobody": 1.0}), "'nobody' is not a body"),
    (dict(physics={"mu/box": 1.0}), "no geometry named 'box'"),
    (dict(physics={"gain": 1.0}), "unknown physical parameter 'gain'"),
    (dict(physics={"mass/box": "heavy"}), "must be a number"),
    (dict(physics=[1.0]), "physics must be None or a dict"),
    (dict(physics={"stiffness/box/0": math.inf}), "outside its physical range"),
    (dict(domain_randomization={"armature": (-1.0, 0.1)}), "'armature' = -1.0 is outside"),
])
def test_bad_physical_parameters_are_rejected_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make("CenicFranka-v0", **kwargs)


def _excitation(duration=1.5, dt=0.05):
    t = np.arange(int(round(duration / dt)) + 1) * dt
    arm = pc.HOME + 0.15 * np.sin(2 * math.pi * np.array([0.7, 0.9, 0.5, 0.8, 1.1, 0.6, 1.0]) * t[:, None])
    return np.column_stack([arm, np.full(t.shape, pc.FINGER_OPEN)])


def _robot_log(true, delay, accuracy=1e-5):
    robot = gym.make("CenicFranka-v0", physics=true, accuracy=accuracy)
    robot.reset(seed=0)
    u = robot.unwrapped
    cmd = _excitation()
    q = u.sim.q
    q[u.arm_q] = cmd[0, :7]
    u.sim.set_state(q=q)
    return record_commands(robot, cmd, delay=delay, bodies=[])


def test_fit_recovers_known_gains_damping_and_delay_from_a_log_our_simulator_made():
    """The "robot" is CenicFranka-v0 with K_p × 0.8, damping 1.2 N m s/rad and its commands one control period late;
    from its log (ε = 1e-5) the fit finds all three (the delay exactly), and the fitted robot replays the log."""
    true = {f"kp_scale/{ARM}": 0.8, f"damping/{ARM}": 1.2}
    log = _robot_log(true, delay=1)
    res = fit("CenicFranka-v0", log, list(true), max_delay=2, window=1.0)
    res.replayer.close()
    assert res.delay == 1
    for p in res.parameters:
        assert p.value == pytest.approx(true[p.name], rel=1e-3), p
        assert 0 < p.std < 0.01 * p.value
    assert res.replay_after["rms_q"] < 1e-3 * res.replay_before["rms_q"]
    kw = res.env_kwargs()
    assert kw["action_delay"] == 1 and kw["physics"].keys() == true.keys()
    dr = res.domain_randomization()
    for name, (lo, hi) in dr.items():
        assert lo < true[name] < hi
    env = gym.make("CenicFranka-v0", domain_randomization=dr, **kw)  # both are accepted as they are
    env.reset(seed=0)
    json.dumps(res.to_dict())
    noisy = add_noise(log, sigma_q=1e-4, sigma_v=5e-3, seed=3)
    assert not np.array_equal(noisy.q, log.q) and np.array_equal(noisy.cmd, log.cmd)


def test_a_noisy_reading_past_a_joint_limit_starts_the_replay_at_the_limit():
    """A closed finger's noisy reading below its lower limit (0 m): the window starts at the limit, not with the
    limit constraint's impulse (which no step size resolves: AccuracyNotMetError at the minimum step)."""
    env = gym.make("CenicFranka-v0", accuracy=1e-5)
    env.reset(seed=0)
    joints, qidx, vidx, _ = controlled_joints(env)
    q = env.unwrapped.sim.q[qidx]
    q[-1] = -3e-4  # the finger, 0.3 mm past its lower limit
    log = RobotLog(np.array([0.0, 0.05]), np.array([q, q]), np.zeros((2, 8)), np.array([q, q]), joints)
    sim = env.unwrapped.sim
    set_log_state(sim, log, 0, qidx, vidx)
    assert sim.q[qidx][-1] == 0.0
    sim.advance_to(0.05)


def test_fit_by_cma_es_finds_the_same_gain():
    """CMA-ES (the ``cma`` package) on the same replay loss, at a known delay, and least squares polished by CMA-ES:
    K_p × 0.8 again."""
    true = {f"kp_scale/{ARM}": 0.8}
    res = fit("CenicFranka-v0", _robot_log(true, delay=0), list(true), method="cma", delay=0, window=1.5,
              max_nfev=25)
    res.replayer.close()
    assert res.method == "cma" and res.parameters[0].value == pytest.approx(0.8, rel=1e-3)
    polished = fit("CenicFranka-v0", _robot_log(true, delay=0), list(true), method="lsq+cma", delay=0, window=1.5,
                   max_nfev=5)  # least squares, then CMA-ES from its solution
    polished.replayer.close()
    assert polished.method == "lsq+cma" and polished.parameters[0].value == pytest.approx(0.8, rel=1e-3)


def test_fit_rejects_bad_logs_and_parameters_by_name():
    log = _robot_log({}, delay=0)
    with pytest.raises(ValueError, match="unknown physical parameter 'gains'"):
        fit("CenicFranka-v0", log, ["gains"])
    with pytest.raises(ValueError, match="parameters named twice"):
        fit("CenicFranka-v0", log, ["damping", "damping"])
    with pytest.raises(ValueError, match=r"'damping' = -0.5 is outside its physical range"):
        fit("CenicFranka-v0", log, ["damping"], start={"damping": -0.5})
    with pytest.raises(ValueError, match="method must be"):
        fit("CenicFranka-v0", log, ["damping"], method="newton")
    with pytest.raises(ValueError, match="max_delay must be"):
        fit("CenicFranka-v0", log, ["damping"], max_delay=-1)
    short = RobotLog(log.t, log.q[:, :7], log.v[:, :7], log.cmd[:, :7], log.joints[:7])
    with pytest.raises(LogError, match="do not match the env's controlled joints"):
        fit("CenicFranka-v0", short, ["damping"])
    with pytest.raises(ValueError, match="window must be a duration"):
        make_windows(log.t, 0.0)
    wins = make_windows(np.arange(11) * 0.1, 0.3)
    assert [(w.start, w.stop) for w in wins] == [(0, 4), (3, 7), (6, 11)]  # consecutive, sharing a row


def test_cli_fit_on_the_shipped_example_log(tmp_path):
    """``cenic-gym sim2real fit`` on the example log (made by our nominal simulator) at its known delay, a few
    iterations: the fitted K_p scale is 1; fit.json and the plot are written; a NaN in the log is rejected naming
    the column and row. (The README runs the full search on this log and on the MuJoCo-made one.)"""
    from importlib.resources import files

    example = files("cenic_gym.sim2real") / "data" / "franka_example_log.csv"
    out = tmp_path / "fit"
    cmd = [sys.executable, "-m", "cenic_gym", "sim2real", "fit", str(example), "--env", "CenicFranka-v0",
           "--params", f"kp_scale/{ARM}", "--delay", "0", "--max-nfev", "3", "--window", "2.5", "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((out / "fit.json").read_text())
    assert res["delay"] == 0
    assert res["parameters"][0]["value"] == pytest.approx(1.0, abs=0.02)
    assert (out / "fit.png").stat().st_size > 10_000
    bad = tmp_path / "bad.csv"
    lines = example.read_text().splitlines()
    row = lines[5].split(",")
    row[3] = "nan"
    bad.write_text("\n".join(lines[:5] + [",".join(row)] + lines[6:]) + "\n")
    r = subprocess.run(cmd[:5] + [str(bad)] + cmd[6:-2], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "NaN or inf in column 'q/panda_joint3' at row 4" in r.stderr, r.stderr
