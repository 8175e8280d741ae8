"""Sim-to-sim with MuJoCo on CenicFranka-v0: a robot log made by MuJoCo replayed in cenic-gym, and policies run
closed loop with MuJoCo as the physics.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_mujoco.py [--seed 0] [--episodes 10]
        [--policy scripted exported.onnx ...] [--go1-episodes 5] [--go1-steps 500] [--no-write]

(needs ``mujoco``: ``pip install -e .[render]``.) MuJoCo stands in for the real robot:

1. ``record_log``: the scripted expert runs one CenicFranka-v0 episode at ε = 1e-5 (seed ``--seed``, 200 steps,
   10 s: approach, grasp, lift, carry, place, release); its controller set-points per 0.05 s period are the
   commands of the log (``cenic_gym.sim2real.replay`` format).
2. The same commands are sent open loop to a MuJoCo model generated from our MultibodySystem
   (``cenic_gym.mujoco_model``: same bodies, inertias, armature, joint limits, collision shapes and candidate
   pairs, our pair friction rule, the finger coupler; MuJoCo's default contact softness), 1 ms steps,
   implicitfast integrator, with the env's own control laws (``cenic_gym.sim2real.sim2sim.MujocoPhysics``): the
   arm's inverse-dynamics PD (τ = RNEA(q, v, K_p (q_d − q) − K_d v) on the arm, its own ``output``, clamped to
   the URDF effort limits) applied as ``qfrc_applied`` every MuJoCo step; the finger's PD (K_p, K_d, ±20 N) as a
   MuJoCo ``<position>`` actuator (its damping implicit, as in CENIC). MuJoCo's states at the control periods
   make the "robot log".
3. ``replay``: cenic-gym replays both logs at ε = 1e-3 and 1e-5. Replaying its own log measures the replay path
   (zero at the log's ε: the replay path is the env's own; at 1e-3 the error is the integration error); replaying
   MuJoCo's measures the modeling gap between the two simulators (contact compliance, friction model,
   integrator), which does not shrink with ε.
4. Free motion (the mapping and the control laws checked): the log's first 1.2 s (the arm moves above the box,
   nothing touches) sent to MuJoCo at 0.25 ms steps and replayed in cenic-gym at ε = 1e-4 … 1e-7: without contact
   the gap keeps shrinking with ε (the two simulators converge to the same trajectory), so the large gaps of 3.
   come from contact.
5. ``cenic_gym.sim2real.sim2sim``: each policy (``--policy``: ``scripted``, an SB3 .zip, an exported .onnx /
   .pt) runs the same seeded episodes closed loop in cenic-gym (ε = 1e-3) and with MuJoCo as the physics (the
   env draws the episode, maps actions to set-points and computes observations, rewards, contacts and success from
   MuJoCo's state); on CenicQuadruped-v0 the open-loop trot (``TrotGait``, 2 Hz) from ``env.reset(seed)`` (random
   start yaw and base velocity; the trot ignores the episode's random velocity command, so success is rare in both
   simulators: the base pose / velocity gap is the measure there). Columns: success in both, the final free-body
   gap, the closed-loop divergence ‖pin.difference(q_cenic, q_MuJoCo)‖∞ (the largest over an episode,
   compounding) and the one-step divergence (MuJoCo's one control period from each of CENIC's states vs CENIC's
   next state: the per-period model gap). Same as ``cenic-gym sim2real sim2sim``.

How to read it: with MuJoCo's default contact parameters (solref 0.02 s; MuJoCo scales a contact's stiffness by the
effective mass it acts on, and the fingers are light) the gripper's squeeze drives the pads into the box (the finger
opening printed in the section) and the box can end on its side after the place; in cenic-gym the pads stop at the
box faces (compliant point contact). That is a gap between contact models, not numerical error; MuJoCo's contact
parameters are its defaults, not tuned for this scene. On the Go1 the per-period model gap (mostly the feet's
contact) compounds in the closed loop.

Writes ``benchmarks/sim2real_mujoco.png`` (tracking error over time), ``benchmarks/sim2real_mujoco_sim2sim.png`` and
the ``sim2real-mujoco-log`` section of ``benchmarks/RESULTS.md``. About 3 min; not a timing benchmark.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from bench_common import provenance, write_section  # noqa: E402
from cenic_gym.errors import SimulationError  # noqa: E402
from cenic_gym.sim2real.policy import load_policy  # noqa: E402
from cenic_gym.sim2real.replay import RobotLog, controlled_joints, record_log, replay  # noqa: E402
from cenic_gym.sim2real.report import plot_replay, plot_sim2sim, replay_table  # noqa: E402
from cenic_gym.sim2real.rollout import make_env  # noqa: E402
from cenic_gym.sim2real.sim2sim import MujocoPhysics, sim2sim, sim2sim_table  # noqa: E402

HERE = Path(__file__).resolve().parent
ENV_ID = "CenicFranka-v0"
GO1_ID = "CenicQuadruped-v0"
MJ_DT = 1e-3
FREE_ROWS = 25  # the expert's first 1.2 s: the arm moves above the box, nothing touches
FREE_DT = 2.5e-4
FREE_ACCURACIES = (1e-4, 1e-5, 1e-6, 1e-7)


def mujoco_log(env, log, dt=MJ_DT):
    """Send ``log``'s commands open loop to MuJoCo at time step ``dt`` [s] (see the module docstring) through the
    env's controllers; returns (MuJoCo's log, unstable). The env's simulator holds MuJoCo's last state."""
    u = env.unwrapped
    system = u.system
    joints, qidx, vidx, _ = controlled_joints(env)
    q0, v0 = u.sim.q.copy(), np.zeros(system.nv)
    q0[qidx], v0[vidx] = log.q[0], log.v[0]
    for q0i, q1i, r, off in zip(system.coupler_q0, system.coupler_q1, system.coupler_ratio, system.coupler_offset):
        q0[q0i] = r * q0[q1i] + off
    for b, p in log.poses.items():
        q0[system.q_slice(b)] = p[0]
    u.sim.set_state(q=q0, v=v0, t=float(log.t[0]))
    twin = MujocoPhysics(u.sim, dt)
    rows_q, rows_v, rows_p = [log.q[0]], [log.v[0]], {b: [log.poses[b][0]] for b in log.poses}
    for k in range(len(log.t) - 1):
        u.arm.set_target(q_d=log.cmd[k, :7], v_d=0.0)
        u.grip.set_target(q_d=log.cmd[k, 7], v_d=0.0)
        try:
            twin.advance_to(log.t[k + 1])
        except SimulationError:
            break
        q, v = u.sim.q, u.sim.v
        rows_q.append(q[qidx])
        rows_v.append(v[vidx])
        for b in log.poses:
            rows_p[b].append(q[system.q_slice(b)].copy())
    n = len(rows_q)
    return RobotLog(log.t[:n].copy(), np.array(rows_q), np.array(rows_v), log.cmd[:n].copy(), joints,
                    {b: np.array(p) for b, p in rows_p.items()}), twin.unstable


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--episodes", type=int, default=10, help="closed-loop episodes per policy (seeds 0 … n−1)")
    p.add_argument("--policy", nargs="*", default=["scripted"], help="policies for the closed-loop runs")
    p.add_argument("--go1-episodes", type=int, default=5, help="closed-loop CenicQuadruped-v0 episodes of the "
                   "open-loop trot (0: none)")
    p.add_argument("--go1-steps", type=int, default=500, help="env steps per Go1 episode (50 per second)")
    p.add_argument("--no-write", action="store_true")
    a = p.parse_args(argv)
    t0 = time.time()
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
    held = (f"finger opening (per finger) mid-carry (t = {own.t[k5]:.1f} s): cenic-gym {own.q[k5, 7] * 1e3:.1f} mm, "
            f"MuJoCo {mj.q[k5, 7] * 1e3:.1f} mm (box {env.unwrapped.box_dims[1] * 1e3:.0f} mm wide); final box "
            f"centre height: cenic-gym {own.poses['box'][-1, 2] * 1e3:.0f} mm, "
            f"MuJoCo {mj.poses['box'][-1, 2] * 1e3:.0f} mm (upright: {env.unwrapped.box_dims[2] * 500:.0f} mm)")
    table = replay_table([r for _, r in results]).splitlines()
    table[0] = "| log | " + table[0][2:]
    table[1] = "|---" + table[1]
    for i, (name, _) in enumerate(results):
        table[2 + i] = f"| {name} " + table[2 + i]
    free = RobotLog(own.t[:FREE_ROWS], own.q[:FREE_ROWS], own.v[:FREE_ROWS], own.cmd[:FREE_ROWS], own.joints,
                    {b: p[:FREE_ROWS] for b, p in own.poses.items()})
    mj_free, _ = mujoco_log(env, free, dt=FREE_DT)
    free_gaps = ", ".join(f"{acc:g}: {replay(ENV_ID, mj_free, accuracy=acc).summary()['max_q_err']:.2e}"
                          for acc in FREE_ACCURACIES)
    closed = []
    for spec in a.policy:
        res = sim2sim(ENV_ID, load_policy(spec, ENV_ID), range(a.episodes),
                      progress=lambda seed, ep: print(f"seed {seed}: {ep.row()}", flush=True))
        closed.append(res)
    if a.go1_episodes:
        closed.append(sim2sim(GO1_ID, load_policy("trot", GO1_ID), range(a.go1_episodes), max_steps=a.go1_steps,
                              progress=lambda seed, ep: print(f"go1 seed {seed}: {ep.row()}", flush=True)))
    cmd = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_mujoco.py" + \
        (f" --seed {a.seed}" if a.seed else "") + (f" --episodes {a.episodes}" if a.episodes != 10 else "") + \
        (f" --policy {' '.join(a.policy)}" if a.policy != ["scripted"] else "") + \
        (f" --go1-episodes {a.go1_episodes}" if a.go1_episodes != 5 else "") + \
        (f" --go1-steps {a.go1_steps}" if a.go1_steps != 500 else "")
    body = "\n".join([
        *provenance("benchmarks/sim2real_mujoco.py", f"`{cmd}`", time.time() - t0, load0,
                    ("numba", ("pinocchio (pin)", "pin"), "numpy", "mujoco")),
        f"**Log replay**: the scripted expert's commands of one `{ENV_ID}` episode (seed {a.seed}, {len(own.t)} "
        "rows, 10 s) recorded at ε = 1e-5, sent open loop to MuJoCo (scene from `cenic_gym.mujoco_model`, default "
        "contact parameters, 1 ms, implicitfast, the env's control laws); both logs replayed by "
        "`cenic_gym.sim2real.replay` (errors over every row; joints in rad, the finger in m). MuJoCo unstable "
        f"(mjWARN_BADQACC or NaN): {unstable}; box position gap max {box_gap.max() * 1e3:.1f} mm, final "
        f"{box_gap[-1] * 1e3:.1f} mm; {held}. Plot: `benchmarks/sim2real_mujoco.png`.", "",
        *table, "",
        f"**Free motion** (no contact: the log's first {own.t[FREE_ROWS - 1]:.1f} s, MuJoCo at {FREE_DT * 1e3:g} ms), "
        f"max joint gap [rad] per replay ε: {free_gaps}.", "",
        "**Closed loop**: the same seeded episodes in cenic-gym (ε = 1e-3) and with MuJoCo as the physics "
        f"(`cenic_gym.sim2real.sim2sim`); `{GO1_ID}`: the open-loop trot, {a.go1_steps} steps. Divergences "
        "‖pin.difference(q_cenic, q_MuJoCo)‖∞: closed loop (largest over an episode) and one-step (one control "
        "period from CENIC's state). Plot: `benchmarks/sim2real_mujoco_sim2sim.png`.", "",
        sim2sim_table(closed)])
    print(body)
    if not a.no_write:
        plot_replay(results[-1][1], HERE / "sim2real_mujoco.png",
                    title=f"MuJoCo log replayed in cenic-gym (ε = 1e-5), {ENV_ID} seed {a.seed}")
        plot_sim2sim(closed, HERE / "sim2real_mujoco_sim2sim.png")
        write_section("sim2real-mujoco-log", body, f"## Sim-to-sim: MuJoCo ({ENV_ID}, {GO1_ID})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
