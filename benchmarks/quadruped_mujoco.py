"""CenicQuadruped-v0 side by side with MuJoCo: the same Go1, gains, start states and open-loop trot.

    python benchmarks/quadruped_mujoco.py [--episodes 5] [--steps 500]

(needs ``mujoco``: ``pip install -e .[peers]``; the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself.)

The CENIC paper claims CENIC is "competitive with discrete simulators" on a quadruped (§VII-C). This measures it
on our task: per seed, CenicQuadruped-v0 is reset (random start yaw and base velocity), and the same state, model
and joint PD are handed to MuJoCo (``benchmarks/peers/peer_mujoco.py`` generates the scene from our
MultibodySystem with ``cenic_gym.mujoco_model``: same bodies, inertias, armature, limits, collision primitives, μ;
MuJoCo's default contact softness, its Euler integrator, ``<position>`` actuators with our kp, kd and URDF effort
limits, i.e. the PD is explicit in MuJoCo and implicit in CENIC). Both run ``TrotGait`` (2 Hz, 0.3 rad; joint
targets a pure function of time, held over each 0.02 s control period) for ``--steps`` control periods. MuJoCo runs
at the time steps people use for legged robots (2 and 5 ms, Playground's Go1 uses 4 ms) and at 10 ms.

Reported per engine/setting: forward speed along the initial heading (mean and min over episodes), falls (base
tilted > 90°), the deepest robot/ground penetration (each engine's own signed distance: CENIC's
``info["sim"]["max_penetration"]``, over every accepted state, MuJoCo's ``contact.dist`` after every step), and env
steps/s: wall time per control period (CENIC: ``env.step``, the env layer included; MuJoCo: ``mj_step`` for the
period plus setting the targets, nothing else: a lower bound for a MuJoCo env). The episodes run seed by seed, every
setting's episode of one seed in turn, so that the VM's speed drift over the run falls on every setting alike.
Writes the ``quadruped-mujoco`` section of ``benchmarks/RESULTS.md`` (``--no-write``: print only); a full run takes
about 20 s. Its env steps/s column wants an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gymnasium as gym  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from bench_common import provenance, write_section  # noqa: E402
from cenic_gym.envs import go1_constants as gc  # noqa: E402  (importing cenic_gym registers the envs)
from cenic_gym.envs.quadruped import TrotGait  # noqa: E402
from cenic_gym.model import quat_xyzw_to_matrix  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from peer_mujoco import MujocoScene  # noqa: E402

ENV_ID = "CenicQuadruped-v0"
MUJOCO_STEPS = (0.002, 0.005, 0.01)  # [s]


def heading_progress(p0, R0, p1, duration):
    """(forward, lateral) mean speed [m/s] of the base along its initial heading."""
    d = p1 - p0
    return R0[:, 0] @ d / duration, R0[:, 1] @ d / duration


def tilted(R):
    """The base z axis more than 90° from vertical: the env's flip termination (``flip_tilt``)."""
    return R[2, 2] < math.cos(gc_flip_tilt())


def gc_flip_tilt():
    from cenic_gym.envs.quadruped import default_config
    return default_config()["flip_tilt"]


def cenic_episode(env, seed, steps):
    u = env.unwrapped
    obs, _ = env.reset(seed=seed)
    gait = TrotGait(env)
    gait.reset()
    p0, R0 = u.sim.body_pose(gc.BASE_JOINT)
    wall, fell, pen = 0.0, False, 0.0
    for _ in range(steps):
        a = gait(obs)
        t0 = time.perf_counter()
        obs, _, term, trunc, info = env.step(a)
        wall += time.perf_counter() - t0
        pen = max(pen, info["sim"]["max_penetration"])
        if term or trunc:
            fell = True
            break
    p1, _ = u.sim.body_pose(gc.BASE_JOINT)
    fwd, lat = heading_progress(p0, R0, p1, steps * u.control_period)
    return dict(fwd=fwd, lat=lat, fell=fell, pen=pen, wall=wall, n=steps)


def mujoco_scene(env, timestep):
    u = env.unwrapped
    c = u.config
    m = u.system.model
    joints = [m.getJointId(f"{gc.ROBOT}/{j}") for j in gc.JOINTS]
    effort = np.array([m.effortLimit[m.idx_vs[j]] for j in joints])
    ctrl = dict(joints=joints, kp=np.full(12, c["kp"]), kd=np.full(12, c["kd"]), effort=effort,
                q_target=gc.NOMINAL.copy())
    return MujocoScene(u.system, timestep, variant="default", controller=ctrl)


def mujoco_episode(scene, env, seed, steps):
    """The same start state (after ``env.reset(seed)``) and gait in MuJoCo."""
    u = env.unwrapped
    env.reset(seed=seed)
    d = scene.new_data(u.sim.q, u.sim.v)
    gait = TrotGait(env)
    iq = u.base_q.start
    q0, _ = scene.gym_state(d)
    p0, R0 = q0[iq:iq + 3].copy(), quat_xyzw_to_matrix(q0[iq + 3:iq + 7])
    lo, hi = u.q_lower, u.q_upper
    n_sub = int(round(u.control_period / scene.timestep))
    ground = np.flatnonzero(scene.model.geom_bodyid == 0)  # geometries fixed to the world
    wall, fell, pen = 0.0, False, 0.0
    for k in range(steps):
        target = np.clip(gc.NOMINAL + gait.offset((k + 1) * u.control_period), lo, hi)
        t0 = time.perf_counter()
        d.ctrl[:] = target
        for _ in range(n_sub):
            mujoco.mj_step(scene.model, d)
            if d.ncon:
                c = d.contact
                on_ground = np.isin(c.geom1[:d.ncon], ground) | np.isin(c.geom2[:d.ncon], ground)
                if on_ground.any():
                    pen = max(pen, -float(c.dist[:d.ncon][on_ground].min()))
        wall += time.perf_counter() - t0
        q, _ = scene.gym_state(d)
        if tilted(quat_xyzw_to_matrix(q[iq + 3:iq + 7])) or scene.unstable(d):
            fell = True
            break
    q, _ = scene.gym_state(d)
    fwd, lat = heading_progress(p0, R0, q[iq:iq + 3], steps * u.control_period)
    return dict(fwd=fwd, lat=lat, fell=fell, pen=pen, wall=wall, n=k + 1)


def summarize(label, rows, steps_per_period):
    fwd = np.array([r["fwd"] for r in rows])
    return dict(label=label, episodes=len(rows), fwd_mean=fwd.mean(), fwd_min=fwd.min(),
                lat=np.mean([abs(r["lat"]) for r in rows]), falls=sum(r["fell"] for r in rows),
                pen=max(r["pen"] for r in rows), sps=sum(r["n"] for r in rows) / sum(r["wall"] for r in rows),
                per_period=steps_per_period)


def report(rows, args, runtime, load0):
    head = ("| engine, setting | episodes × steps | forward m/s mean (min) | \\|lateral\\| m/s | falls | "
            "max penetration | env steps/s | steps per control period |\n|---|---|---|---|---|---|---|---|")
    lines = [f"| {r['label']} | {r['episodes']} × {args.steps} | {r['fwd_mean']:.3f} ({r['fwd_min']:.3f}) | "
             f"{r['lat']:.3f} | {r['falls']} | {1e3 * r['pen']:.2f} mm | {r['sps']:.0f} | {r['per_period']} |"
             for r in rows]
    command = f"`python benchmarks/quadruped_mujoco.py {shlex.join(sys.argv[1:])}`".replace(" `", "`")
    return "\n".join([
        *provenance("benchmarks/quadruped_mujoco.py", command, runtime, load0,
                    ("numba", "numpy", ("pinocchio (pin)", "pin"), "mujoco", "gymnasium")),
        "Same Go1 model (MJCF generated from our MultibodySystem), gains (kp 35, kd 0.5, URDF effort limits), start "
        "states (`env.reset(seed)`, seeds 0, 1, ...) and open-loop `TrotGait` targets in both engines. MuJoCo: "
        "default contact softness, Euler, explicit `<position>` actuators; CENIC: ε as given, implicit PD, the env "
        "layer included in its env steps/s. Penetration: each engine's own signed distance. Episodes run seed by seed, "
        "every setting's in turn (the VM's drift falls on all settings alike).", "",
        head, *lines])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    seeds = range(args.episodes)
    env = gym.make(ENV_ID)
    cenic_episode(env, 0, 5)  # warm-up: numba compile or cache load
    settings = [("CENIC ε = 1e-3", env, None, "adaptive"),
                ("CENIC ε = 0.01", gym.make(ENV_ID, accuracy=1e-2), None, "adaptive")]
    settings += [(f"MuJoCo h = {1e3 * h:g} ms", None, mujoco_scene(env, h),
                  int(round(env.unwrapped.control_period / h))) for h in MUJOCO_STEPS]
    episodes = {label: [] for label, *_ in settings}
    for s in seeds:  # every setting's episode of a seed in turn: the VM's drift over the run falls on all alike
        for label, e, scene, _ in settings:
            episodes[label].append(cenic_episode(e, s, args.steps) if scene is None
                                   else mujoco_episode(scene, env, s, args.steps))
    rows = [summarize(label, episodes[label], per_period) for label, _, _, per_period in settings]
    runtime = time.perf_counter() - t_start
    body = report(rows, args, runtime, load0)
    print(body)
    if not args.no_write:
        write_section("quadruped-mujoco", body, "## Quadruped: CENIC vs MuJoCo side by side")


if __name__ == "__main__":
    main()
