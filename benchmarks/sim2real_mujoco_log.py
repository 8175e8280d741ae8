"""A robot log made by MuJoCo, replayed in cenic-gym: the sim-to-sim gap of CenicFranka-v0 (issue 16).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_mujoco_log.py [--seed 0]

(needs ``mujoco``: ``pip install -e .[peers]``.) MuJoCo stands in for the real robot:

1. ``record_log``: the scripted expert runs one CenicFranka-v0 episode at ε = 1e-5 (seed ``--seed``, 200 steps,
   10 s: approach, grasp, lift, carry, place, release); its controller set-points per 0.05 s period are the
   commands of the log (``cenic_gym.sim2real.replay`` format).
2. The same commands are sent open loop to a MuJoCo model generated from our MultibodySystem
   (``benchmarks/peers/peer_mujoco.py``: same bodies, inertias, armature, joint limits, collision shapes, μ, the
   finger coupler; MuJoCo's default contact softness), 1 ms steps, implicitfast integrator, with the same control
   laws: the arm's inverse-dynamics PD (τ = RNEA(q, v, K_p (q_d − q) − K_d v) on the arm, Pinocchio on the
   nominal model, clamped to the URDF effort limits) applied as ``qfrc_applied`` every MuJoCo step; the finger's
   PD (K_p, K_d, ±20 N) as a MuJoCo ``<position>`` actuator (its damping implicit, as in CENIC). MuJoCo's states
   at the control periods make the "robot log".
3. ``replay``: cenic-gym replays both logs at ε = 1e-3 and 1e-5. Replaying its own log measures the replay path
   (zero at the log's ε); replaying MuJoCo's measures the modeling gap between the two simulators (contact
   compliance, friction model, integrator), which does not shrink with ε.

Writes ``benchmarks/sim2real_mujoco_log.png`` (tracking error over time) and the ``sim2real-mujoco-log`` section of
``benchmarks/RESULTS.md``.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

from bench_common import git_rev, machine_line, replace_marked_section, versions  # noqa: E402
from cenic_gym.sim2real.policy import load_policy  # noqa: E402
from cenic_gym.sim2real.replay import RobotLog, controlled_joints, record_log, replay  # noqa: E402
from cenic_gym.sim2real.report import plot_replay, replay_table  # noqa: E402
from cenic_gym.sim2real.rollout import make_env  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from peer_mujoco import MujocoScene  # noqa: E402

HERE = Path(__file__).resolve().parent
ENV_ID = "CenicFranka-v0"
MJ_DT = 1e-3


def mujoco_log(env, log):
    """Send ``log``'s commands open loop to MuJoCo (see the module docstring); returns MuJoCo's log."""
    u = env.unwrapped
    system = u.system
    joints, qidx, vidx, parts = controlled_joints(env)
    arm, grip = u.arm, u.grip
    finger_joint = system.model.getJointId("panda/panda_finger_joint1")
    ctrl = dict(joints=[finger_joint], kp=np.atleast_1d(grip.kp), kd=np.atleast_1d(grip.kd),
                effort=np.atleast_1d(grip.effort_limit), q_target=np.atleast_1d(log.cmd[0, 7]))
    scene = MujocoScene(system, MJ_DT, variant="default", controller=ctrl)
    scene.model.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    q0, v0 = u.sim.q.copy(), np.zeros(system.nv)
    q0[qidx], v0[vidx] = log.q[0], log.v[0]
    for q0i, q1i, r, off in zip(system.coupler_q0, system.coupler_q1, system.coupler_ratio, system.coupler_offset):
        q0[q0i] = r * q0[q1i] + off
    for b, p in log.poses.items():
        q0[system.q_slice(b)] = p[0]
    d = scene.new_data(q0, v0)
    model, data = system.model, system.model.createData()
    arm_v = np.asarray(arm.dofs)
    arm_q = np.asarray(arm.qidx)
    lim = np.asarray(arm.effort_limit)
    arm_adr = [scene.vadr[[ji.iv for ji in scene.joints].index(i)] for i in arm_v]
    rows_q, rows_v, rows_p = [log.q[0]], [log.v[0]], {b: [log.poses[b][0]] for b in log.poses}
    unstable = False
    for k in range(len(log.t) - 1):
        q_d = log.cmd[k, :7]
        d.ctrl[:] = log.cmd[k, 7]
        for _ in range(int(round((log.t[k + 1] - log.t[k]) / MJ_DT))):
            q, v = scene.gym_state(d)
            a = np.zeros(model.nv)
            a[arm_v] = arm.kp * (q_d - q[arm_q]) - arm.kd * v[arm_v]
            tau = np.clip(pin.rnea(model, data, q, v, a)[arm_v], -lim, lim)
            d.qfrc_applied[:] = 0.0
            d.qfrc_applied[arm_adr] = tau
            mujoco.mj_step(scene.model, d)
        unstable |= scene.unstable(d)
        q, v = scene.gym_state(d)
        rows_q.append(q[qidx])
        rows_v.append(v[vidx])
        for b in log.poses:
            qb = q[system.q_slice(b)]
            rows_p[b].append(qb.copy())
    return RobotLog(log.t.copy(), np.array(rows_q), np.array(rows_v), log.cmd.copy(), joints,
                    {b: np.array(p) for b, p in rows_p.items()}), unstable


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-write", action="store_true")
    a = p.parse_args(argv)
    t0 = time.time()
    start = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load0 = os.getloadavg()[0]
    env = make_env(ENV_ID, accuracy=1e-5)
    own = record_log(env, load_policy("scripted", ENV_ID), a.seed)
    mj, unstable = mujoco_log(env, own)
    results = []
    for name, log in (("cenic-gym ε = 1e-5 log", own), ("MuJoCo log", mj)):
        for acc in (1e-3, 1e-5):
            results.append((name, replay(ENV_ID, log, accuracy=acc)))
    box_gap = np.linalg.norm(mj.poses["box"][:, :3] - own.poses["box"][:, :3], axis=1)
    k5 = int(np.argmin(np.abs(own.t - 5.0)))  # mid-carry
    held = (f"Finger opening (per finger) mid-carry (t = {own.t[k5]:.1f} s): cenic-gym {own.q[k5, 7] * 1e3:.1f} mm, "
            f"MuJoCo {mj.q[k5, 7] * 1e3:.1f} mm (the box is {env.unwrapped.box_dims[1] * 1e3:.0f} mm wide: in MuJoCo "
            f"the pads close {(own.q[k5, 7] - mj.q[k5, 7]) * 1e3:.1f} mm further, into the box). Final box "
            f"centre height: cenic-gym {own.poses['box'][-1, 2] * 1e3:.0f} mm, "
            f"MuJoCo {mj.poses['box'][-1, 2] * 1e3:.0f} mm (upright: {env.unwrapped.box_dims[2] * 500:.0f} mm).")
    table = replay_table([r for _, r in results]).splitlines()
    table[0] = "| log | " + table[0][2:]
    table[1] = "|---" + table[1]
    for i, (name, _) in enumerate(results):
        table[2 + i] = f"| {name} " + table[2 + i]
    cmd = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_mujoco_log.py" + \
        (f" --seed {a.seed}" if a.seed else "")
    body = "\n".join([
        "_Generated by `benchmarks/sim2real_mujoco_log.py`; do not edit by hand (rerun the command)._", "",
        f"- Command: `{cmd}`",
        f"- Date: {start}; total runtime {time.time() - t0:.0f} s (1-minute load average {load0:.2f} at start, "
        f"{os.getloadavg()[0]:.2f} at end; the machine was shared)",
        f"- Machine: {machine_line()}",
        f"- {versions('numba', ('pinocchio (pin)', 'pin'), 'numpy', 'mujoco')}; code: git {git_rev()}", "",
        f"The scripted expert's commands of one `{ENV_ID}` episode (seed {a.seed}, {len(own.t)} rows, 10 s: grasp, "
        "carry, place, release) recorded at ε = 1e-5; the same commands sent open loop to MuJoCo (scene generated "
        "from our model by `benchmarks/peers/peer_mujoco.py`, MuJoCo's default contact parameters, 1 ms, "
        "implicitfast; same control laws: see the script's docstring); both logs replayed by "
        "`cenic_gym.sim2real.replay` (errors over every row; joints in rad, the finger in m).",
        f"MuJoCo run unstable (mjWARN_BADQACC or NaN): {unstable}. Box position, MuJoCo log vs cenic-gym log: "
        f"max {box_gap.max() * 1e3:.1f} mm, final {box_gap[-1] * 1e3:.1f} mm. {held}", "",
        *table, "",
        "Replaying our own ε = 1e-5 log at ε = 1e-5 reproduces it exactly (the replay path is the env's own); at "
        "ε = 1e-3 the error is the integration error. The MuJoCo log's error barely moves between ε = 1e-3 and "
        "1e-5: it is the modeling gap between the simulators, not numerical error. Plot: "
        "`benchmarks/sim2real_mujoco_log.png`."])
    print(body)
    if not a.no_write:
        plot_replay(results[-1][1], HERE / "sim2real_mujoco_log.png",
                    title=f"MuJoCo log replayed in cenic-gym (ε = 1e-5), {ENV_ID} seed {a.seed}")
        res = HERE / "RESULTS.md"
        heading = f"## Sim-to-sim: a MuJoCo log replayed in cenic-gym ({ENV_ID})"
        res.write_text(replace_marked_section(res.read_text(), "sim2real-mujoco-log", body, heading=heading))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
