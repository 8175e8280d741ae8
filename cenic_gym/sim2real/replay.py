"""Real-log replay: a recorded robot log's commands replayed in simulation through the env's own controllers, with
the tracking error over time.

Log format (CSV with a header row, or NPZ), one row per control period of the robot's control computer:

=================================  ===========  ===============================================================
CSV column / NPZ key               unit         meaning
=================================  ===========  ===============================================================
``t``                              s            time of the row, strictly increasing
``q/<joint>``  (NPZ ``q`` (T, n))  rad or m     measured position of each controlled joint
``v/<joint>``  (NPZ ``v`` (T, n))  rad/s, m/s   measured velocity of each controlled joint
``cmd/<joint>`` (NPZ ``cmd``)      rad or m     position set-point sent to that joint's controller, held from
                                                this row's time to the next row's (zero-order hold)
``pose/<body>/{x,y,z,qx,qy,qz,qw}``  m, -       optional: world pose of a free object (NPZ ``pose/<body>`` (T, 7))
=================================  ===========  ===============================================================

The controlled joints are those of the env's joint controllers, in their order (:func:`controlled_joints`; for
CenicFranka-v0: ``panda_joint1`` … ``panda_joint7`` and ``panda_finger_joint1``, one finger's opening [m]; the
other finger mimics it). Velocity set-points are 0 and the controllers' gains are the env's (the same controller
as in training). An NPZ may carry ``joints`` (n names) to be checked against the env's.

Replay: the simulator starts at the first row (joint positions and velocities, object poses at rest; objects
without a pose keep the env's reset pose for ``seed``), each row's command is held until the next row's time
(``Simulator.advance_to``), and the simulated joints and objects are compared with the log's at every row.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import parameters
from ..model import matrix_to_quat_xyzw
from .rollout import make_env

POSE = ("x", "y", "z", "qx", "qy", "qz", "qw")


class LogError(ValueError):
    """A log that cannot be replayed; the message names the problem (column, row, expected shape)."""


@dataclass
class RobotLog:
    """t (T,) [s]; q, v (T, n) controlled-joint positions and velocities; cmd (T, n) position set-points;
    poses: {body: (T, 7) [x, y, z, qx, qy, qz, qw]}; joints: the n joint names."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    cmd: np.ndarray
    joints: tuple
    poses: dict = field(default_factory=dict)

    def save(self, path):
        """Write as CSV (``.csv``) or NPZ (``.npz``) in the documented format."""
        path = Path(path)
        if path.suffix.lower() == ".npz":
            np.savez(path, t=self.t, q=self.q, v=self.v, cmd=self.cmd, joints=np.array(self.joints),
                     **{f"pose/{b}": p for b, p in self.poses.items()})
            return
        if path.suffix.lower() != ".csv":
            raise ValueError(f"log file {str(path)!r} must end in .csv or .npz")
        header = ["t"] + [f"{k}/{j}" for k in ("q", "v", "cmd") for j in self.joints]
        header += [f"pose/{b}/{c}" for b in self.poses for c in POSE]
        data = np.column_stack([self.t, self.q, self.v, self.cmd, *self.poses.values()])
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            for row in data:
                w.writerow([repr(float(x)) for x in row])


def controlled_joints(env):
    """(joint names, q indices, v indices, [(controller, slice into the log's columns)]) of the env's joint
    controllers, in order: the columns a log must have (:func:`cenic_gym.parameters.controlled_joints`)."""
    u = env.unwrapped
    entries = parameters.controlled_joints(u.sim)
    if not entries:
        raise ValueError(f"{u.spec.id if u.spec else type(u).__name__} has no joint controllers to replay commands on")
    parts, start = [], 0
    for i, (_, _, s, _) in enumerate(entries):
        if i + 1 == len(entries) or entries[i + 1][2] is not s:
            parts.append((s, slice(start, i + 1)))
            start = i + 1
    return (tuple(n for n, *_ in entries), np.array([s.qidx[k] for _, _, s, k in entries]),
            np.array([iv for _, iv, _, _ in entries]), parts)


def _read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise LogError(f"{path}: empty file (expected a header row: t, q/<joint>, v/<joint>, cmd/<joint>, ...)")
    header = [h.strip() for h in rows[0]]
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise LogError(f"{path}: duplicate columns {dup}")
    data = np.full((len(rows) - 1, len(header)), np.nan)
    for i, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise LogError(f"{path}: row {i + 1} has {len(row)} values, the header has {len(header)} columns")
        for j, x in enumerate(row):
            try:
                data[i, j] = float(x)
            except ValueError:
                raise LogError(f"{path}: row {i + 1}, column {header[j]!r}: {x!r} is not a number") from None
    return {h: data[:, j] for j, h in enumerate(header)}


def load_log(path, joints):
    """Read and check a log (CSV or NPZ) for the controlled ``joints`` (names, in order). Raises :class:`LogError`
    naming the problem: missing columns or keys, a wrong joint count, NaN or inf (column and row), time not
    strictly increasing (row), fewer than two rows, a non-unit quaternion."""
    path = Path(path)
    if not path.is_file():
        raise LogError(f"no log file {str(path)!r}")
    joints = tuple(joints)
    n = len(joints)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        cols = _read_csv(path)
        groups = {k: [f"{k}/{j}" for j in joints] for k in ("q", "v", "cmd")}
        missing = [c for c in ["t", *sum(groups.values(), [])] if c not in cols]
        if missing:
            for k in ("q", "v", "cmd"):
                have = sorted(c for c in cols if c.startswith(f"{k}/"))
                if have and len(have) != n:
                    raise LogError(f"{path}: wrong joint count: {len(have)} '{k}/' columns, the env controls {n} "
                                   f"joints {list(joints)}; missing columns {missing}")
            raise LogError(f"{path}: missing columns {missing} (expected t, q/<joint>, v/<joint>, cmd/<joint> for "
                           f"joints {list(joints)})")
        extra = sorted(c for c in cols if c.split("/")[0] in ("q", "v", "cmd") and c not in sum(groups.values(), []))
        if extra:
            raise LogError(f"{path}: wrong joint count: columns {extra} name joints the env does not control "
                           f"(it controls {list(joints)})")
        arrays = {"t": cols["t"], **{k: np.column_stack([cols[c] for c in g]) for k, g in groups.items()}}
        bodies = sorted({c.split("/")[1] for c in cols if c.startswith("pose/")})
        for b in bodies:
            need = [f"pose/{b}/{c}" for c in POSE]
            miss = [c for c in need if c not in cols]
            if miss:
                raise LogError(f"{path}: pose of {b!r} is missing columns {miss}")
            arrays[f"pose/{b}"] = np.column_stack([cols[c] for c in need])
    elif suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
        missing = [k for k in ("t", "q", "v", "cmd") if k not in arrays]
        if missing:
            raise LogError(f"{path}: missing keys {missing} (expected t, q, v, cmd; optional pose/<body>, joints)")
        if "joints" in arrays and tuple(str(x) for x in arrays["joints"]) != joints:
            raise LogError(f"{path}: joints {list(arrays['joints'])} do not match the env's controlled joints "
                           f"{list(joints)} (wrong joint count or order)")
        bodies = sorted(k.split("/", 1)[1] for k in arrays if k.startswith("pose/"))
    else:
        raise LogError(f"{path}: unknown log format {suffix!r} (expected .csv or .npz)")
    t = np.asarray(arrays["t"], dtype=float).reshape(-1)
    T = t.shape[0]
    if T < 2:
        raise LogError(f"{path}: {T} row(s); a replay needs at least 2")
    out = {}
    for k in ("q", "v", "cmd"):
        a = np.asarray(arrays[k], dtype=float)
        if a.ndim != 2 or a.shape[0] != T:
            raise LogError(f"{path}: {k!r} has shape {a.shape}, expected ({T}, {n}) (one row per time)")
        if a.shape[1] != n:
            raise LogError(f"{path}: wrong joint count: {k!r} has {a.shape[1]} columns, the env controls {n} joints "
                           f"{list(joints)}")
        out[k] = a
    poses = {}
    for b in bodies:
        p = np.asarray(arrays[f"pose/{b}"], dtype=float)
        if p.shape != (T, 7):
            raise LogError(f"{path}: pose/{b} has shape {p.shape}, expected ({T}, 7) [x, y, z, qx, qy, qz, qw]")
        poses[b] = p
    for name, a in [("t", t[:, None]), *out.items(), *((f"pose/{b}", p) for b, p in poses.items())]:
        bad = np.argwhere(~np.isfinite(a))
        if bad.size:
            r, c = bad[0]
            col = name if a.shape[1] == 1 else (f"{name}/{joints[c]}" if name in out else f"{name}/{POSE[c]}")
            raise LogError(f"{path}: NaN or inf in column {col!r} at row {r} ({len(bad)} bad value(s) in all)")
    dt = np.diff(t)
    if np.any(dt <= 0):
        r = int(np.argmax(dt <= 0)) + 1
        raise LogError(f"{path}: time is not strictly increasing: row {r} has t = {float(t[r])!r} after "
                       f"t = {float(t[r - 1])!r}")
    for b, p in poses.items():
        norm = np.linalg.norm(p[:, 3:], axis=1)
        if np.any(np.abs(norm - 1) > 1e-3):
            r = int(np.argmax(np.abs(norm - 1) > 1e-3))
            raise LogError(f"{path}: pose/{b} quaternion at row {r} has norm {norm[r]:.4g}, expected 1")
    return RobotLog(t, out["q"], out["v"], out["cmd"], joints, poses)


@dataclass
class ReplayResult:
    """t (T,) [s]; q, v (T, n): simulated controlled joints; q_err, v_err (T, n): simulated − logged;
    pose_err: {body: (T,) position error [m]}; joints; rows: rows replayed (T, fewer after a sim failure);
    sim_failure: reason or None; accuracy / fixed_step of the replay."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    q_err: np.ndarray
    v_err: np.ndarray
    pose_err: dict
    joints: tuple
    sim_failure: str | None
    accuracy: float
    fixed_step: float | None

    def summary(self):
        """Max and RMS of |q_err| over time and joints, max |v_err|, max object position error."""
        return dict(rows=len(self.t), max_q_err=float(np.max(np.abs(self.q_err))),
                    rms_q_err=float(np.sqrt(np.mean(self.q_err ** 2))), max_v_err=float(np.max(np.abs(self.v_err))),
                    max_pose_err={b: float(np.max(e)) for b, e in self.pose_err.items()},
                    sim_failure=self.sim_failure)


def set_log_state(sim, log, row, qidx, vidx, object_v=None):
    """Put ``sim`` in the logged state of ``row``: controlled joints' q (within the model's position limits: a noisy
    reading past a limit would start the near-rigid limit constraint with an impulse no step size resolves) and v
    (mimic joints follow their leader), the logged objects' poses (velocities ``object_v[body][row]``, else 0) and
    the time; other DOFs keep their positions, at rest."""
    system = sim.system
    m = system.model
    q, v = sim.q, np.zeros(system.nv)
    q[qidx] = np.clip(log.q[row], m.lowerPositionLimit[qidx], m.upperPositionLimit[qidx])
    v[vidx] = log.v[row]
    controlled = set(qidx.tolist())
    for q0, q1, v0, v1, r, off in zip(system.coupler_q0, system.coupler_q1, system.coupler_v0, system.coupler_v1,
                                      system.coupler_ratio, system.coupler_offset):
        if q1 in controlled and q0 not in controlled:  # mimic joints follow their leader
            q[q0], v[v0] = r * q[q1] + off, r * v[v1]
        elif q0 in controlled and q1 not in controlled:
            q[q1], v[v1] = (q[q0] - off) / r, v[v0] / r
    for b, p in log.poses.items():
        if b not in system.body_names:
            raise LogError(f"log has a pose of {b!r}, which is not a free body of the env (free bodies: "
                           f"{system.body_names})")
        q[system.q_slice(b)] = p[row]
        if object_v is not None:
            v[system.v_slice(b)] = object_v[b][row]
    sim.set_state(q=q, v=v, t=log.t[row])


def replay(env_id, log, accuracy=1e-3, fixed_step=None, seed=0, env_kwargs=None):
    """Replay ``log`` (a :class:`RobotLog` or a path) in ``env_id``'s simulator at ``accuracy`` (or ``fixed_step``):
    see the module docstring. Returns a :class:`ReplayResult`."""
    from ..errors import SimulationError

    kw = dict(env_kwargs or {}, accuracy=accuracy)
    if fixed_step is not None:
        kw["fixed_step"] = fixed_step
    env = make_env(env_id, **kw)
    env.reset(seed=seed)
    joints, qidx, vidx, parts = controlled_joints(env)
    if not isinstance(log, RobotLog):
        log = load_log(log, joints)
    elif tuple(log.joints) != joints:
        raise LogError(f"log joints {list(log.joints)} do not match the env's controlled joints {list(joints)}")
    sim = env.unwrapped.sim
    set_log_state(sim, log, 0, qidx, vidx)
    T = len(log.t)
    qs, vs, poses = [sim.q[qidx].copy()], [sim.v[vidx].copy()], {b: [sim.body_pose(b)[0]] for b in log.poses}
    failure = None
    for k in range(T - 1):
        for ctrl, sl in parts:
            ctrl.set_target(q_d=log.cmd[k, sl], v_d=0.0)
        try:
            sim.advance_to(float(log.t[k + 1]), inputs_changed=True)  # new commands: a control period starts
        except (SimulationError, FloatingPointError) as e:
            failure = f"{type(e).__name__} at t = {log.t[k]:g} s (row {k}): {e}"
            break
        qs.append(sim.q[qidx].copy())
        vs.append(sim.v[vidx].copy())
        for b in log.poses:
            poses[b].append(sim.body_pose(b)[0])
    rows = len(qs)
    q, v = np.array(qs), np.array(vs)
    pose_err = {b: np.linalg.norm(np.array(p) - log.poses[b][:rows, :3], axis=1) for b, p in poses.items()}
    env.close()
    return ReplayResult(log.t[:rows].copy(), q, v, q - log.q[:rows], v - log.v[:rows], pose_err, joints, failure,
                        accuracy, fixed_step)


def record_log(env, policy, seed, max_steps=None, bodies=None):
    """A :class:`RobotLog` of one episode of ``policy`` in ``env`` (our simulator as the "robot"): each row the
    state at the start of a control period and the controller set-points held over it; the last row repeats the
    last set-points. ``bodies``: free bodies whose poses to log (default: all)."""
    u = env.unwrapped
    joints, qidx, vidx, parts = controlled_joints(env)
    bodies = list(u.sim.system.body_names if bodies is None else bodies)
    obs, _ = env.reset(seed=int(seed))
    policy.reset(env)

    def pose(b):
        p, R = u.sim.body_pose(b)
        return np.concatenate([p, matrix_to_quat_xyzw(R)])

    rows = []
    state = (u.sim.t, u.sim.q[qidx].copy(), u.sim.v[vidx].copy(), [pose(b) for b in bodies])
    steps = 0
    while True:
        obs, _, term, trunc, info = env.step(policy(obs))
        steps += 1
        if "sim_failure" in info:
            break
        cmd = np.concatenate([np.broadcast_to(np.asarray(c.q_d, float), (sl.stop - sl.start,)) for c, sl in parts])
        rows.append((*state, cmd))
        state = (u.sim.t, u.sim.q[qidx].copy(), u.sim.v[vidx].copy(), [pose(b) for b in bodies])
        if term or trunc or (max_steps is not None and steps >= max_steps):
            break
    rows.append((*state, rows[-1][4]))
    t = np.array([r[0] for r in rows])
    return RobotLog(t, np.array([r[1] for r in rows]), np.array([r[2] for r in rows]), np.array([r[4] for r in rows]),
                    joints, {b: np.array([r[3][i] for r in rows]) for i, b in enumerate(bodies)})
