"""MuJoCo versions of a cenic-gym scene, generated as MJCF from the cenic-gym MultibodySystem (same bodies,
inertias, joints with axes / limits / damping / couplers, shapes, poses, initial state). Solver settings are MuJoCo's
defaults (Newton, pyramidal cones, Euler integrator, tolerance 1e-8, 100 iterations); only ``opt.timestep``, the
contact parameters and, for robots, ``filterparent`` are set.

Contact parameter variants (see README.md, "MuJoCo"):

* ``matched``: direct-format ``solref = (-κ, -β)`` per geometry with κ = k · A and β = c · A, where k is cenic-gym's
  pair stiffness [N/m], c the linear damping standing in for H&C (peer_common.linear_damping) and A [1/kg] the
  normal inverse mass of the geometry's lowest point towards the ground at the initial configuration
  (peer_common.contact_inverse_mass: 1/m for a free sphere, 4/m for a face-down cube corner). Constant impedance
  ``solimp = (0.95, 0.95, 0.001, 0.5, 2)``, so the constraint dynamics read a1 = 0.05 a0 - κ r - β v: the spring
  and damper per unit mass match ours, but 95 % of the non-contact load is carried without penetration and friction
  is a soft constraint. Fixed geometry gets (-1e-12, -1e-12): MuJoCo uses the element-wise minimum of two direct
  solrefs, so the moving geometry's values win.
* ``default``: MuJoCo's default solref (0.02, 1) and solimp (0.9, 0.95, 0.001, 0.5, 2) (what the CENIC paper ran).

condim 3, friction = (μ_dynamic, 0, 0) on every geom (MuJoCo takes the max over the pair, all equal here).
Collision pairs: body pairs with no candidate geometry pair in cenic-gym are excluded (``<contact><exclude>``) and
MuJoCo's parent-child filter is off, so the pair set matches cenic-gym's at body level. Joint PD control:
``<position>`` actuators (kp, kv, forcerange = ± effort limit), explicit as in MuJoCo's Euler integrator.
"""
from __future__ import annotations

import time

import mujoco
import numpy as np
import pinocchio as pin

from cenic_gym import narrowphase as nph

from peer_common import contact_inverse_mass, ground_normal, scene_joints_cached

SOLIMP_MATCHED = (0.95, 0.95, 0.001, 0.5, 2.0)


def _quat_wxyz(R):
    q = pin.Quaternion(np.asarray(R, float))
    return (q.w, q.x, q.y, q.z)


def _f(x):
    return " ".join(f"{float(v):.17g}" for v in np.ravel(x))


def _safe(name):
    return name.replace("/", "__")


def mjcf(system, timestep, variant="matched", damping_c=0.0, controller=None):
    joints = scene_joints_cached(system)
    by_joint = {ji.joint: ji for ji in joints}
    children = {}
    for ji in joints:
        children.setdefault(ji.parent, []).append(ji)
    articulated = any(ji.kind != "free" for ji in joints)
    normal = ground_normal(system)
    g = np.array(system.model.gravity.linear)
    assets = []
    opt = f"  <option timestep='{timestep:.17g}' gravity='{_f(g)}'>"
    lines = ["<mujoco model='cenic_gym_peer'>", "  <compiler angle='radian'/>", opt + ("<flag filterparent='disable'/>" if articulated else "")
             + "</option>"]

    def geom_xml(i):
        geo = system.geometries[i]
        sh = geo.shape
        R, p = geo.placement.rotation, geo.placement.translation
        t = sh.geom_type
        extra = ""
        if t == nph.HALFSPACE:
            typ, size = "plane", "0 0 1"
        elif t == nph.SPHERE:
            typ, size = "sphere", _f([sh.radius])
        elif t == nph.BOX:
            typ, size = "box", _f(0.5 * np.asarray(sh.lengths, float))
        elif t in (nph.CAPSULE, nph.CYLINDER):
            typ, size = ("capsule" if t == nph.CAPSULE else "cylinder"), _f([sh.radius, 0.5 * sh.length])
        elif t == nph.CONVEX:
            mesh = f"mesh{i}"
            assets.append(f"    <mesh name='{mesh}' vertex='{_f(sh.vertices)}'/>")
            typ, size, extra = "mesh", None, f" mesh='{mesh}'"
        else:
            raise NotImplementedError(f"peer MuJoCo scene: shape {type(sh).__name__} not translated")
        mat = geo.material
        attrs = (f"name='{_safe(geo.name)}' type='{typ}'" + (f" size='{size}'" if size else "") + extra
                 + f" pos='{_f(p)}' quat='{_f(_quat_wxyz(R))}' condim='3' friction='{mat.mu_dynamic:.17g} 0 0'")
        if variant == "matched":
            k_pair = 0.5 * mat.stiffness  # both sides carry 2k in these scenes -> pair k (series rule)
            if geo.joint == 0:
                attrs += " solref='-1e-12 -1e-12'"
            else:
                A = contact_inverse_mass(system, system.q0, i, normal)
                attrs += f" solref='{-k_pair * A:.17g} {-damping_c * A:.17g}'"
            attrs += f" solimp='{_f(SOLIMP_MATCHED)}'"
        return f"<geom {attrs}/>"

    geoms_of = {}
    for i, geo in enumerate(system.geometries):
        geoms_of.setdefault(geo.joint, []).append(i)

    def body_xml(ji, indent):
        pad = " " * indent
        I = ji.inertia
        out = [f"{pad}<body name='{_safe(ji.name)}' pos='{_f(ji.X_pj.translation)}' "
               f"quat='{_f(_quat_wxyz(ji.X_pj.rotation))}'>"]
        if ji.kind == "free":
            out.append(f"{pad}  <freejoint name='{_safe(ji.name)}'/>")
        else:
            typ = "hinge" if ji.kind == "revolute" else "slide"
            lim = ""
            if np.isfinite(ji.lower) or np.isfinite(ji.upper):
                lo = ji.lower if np.isfinite(ji.lower) else -1e10
                hi = ji.upper if np.isfinite(ji.upper) else 1e10
                lim = f" limited='true' range='{lo:.17g} {hi:.17g}'"
            out.append(f"{pad}  <joint name='{_safe(ji.name)}' type='{typ}' axis='{_f(ji.axis)}'{lim} "
                       f"damping='{ji.damping:.17g}' armature='{ji.armature:.17g}'/>")
        out.append(f"{pad}  <inertial pos='{_f(ji.com)}' mass='{ji.mass:.17g}' "
                   f"fullinertia='{_f([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}'/>")
        for i in geoms_of.get(ji.joint, []):
            out.append(f"{pad}  " + geom_xml(i))
        for ch in children.get(ji.joint, []):
            out += body_xml(ch, indent + 2)
        out.append(f"{pad}</body>")
        return out

    world = ["  <worldbody>"]
    for i in geoms_of.get(0, []):
        world.append("    " + geom_xml(i))
    for ji in children.get(0, []):
        world += body_xml(ji, 4)
    world.append("  </worldbody>")

    # contact exclusions at body level: pairs of bodies without any candidate geometry pair
    cand = {(min(system.geometries[a].joint, system.geometries[b].joint),
             max(system.geometries[a].joint, system.geometries[b].joint)) for a, b in np.asarray(system.pairs).reshape(-1, 2)}
    with_geoms = sorted(j for j in geoms_of if j != 0)
    excl = []
    if articulated:
        for x, ja in enumerate(with_geoms):
            for jb in with_geoms[x + 1:]:
                if (ja, jb) not in cand:
                    excl.append(f"    <exclude body1='{_safe(by_joint[ja].name)}' body2='{_safe(by_joint[jb].name)}'/>")
    eq = []
    for cp in getattr(system, "couplers", []) or []:
        eq.append(f"    <joint joint1='{_safe(by_joint[cp.joint0].name)}' joint2='{_safe(by_joint[cp.joint1].name)}' "
                  f"polycoef='{cp.offset:.17g} {cp.ratio:.17g} 0 0 0'/>")
    act = []
    if controller is not None:
        for k, jid in enumerate(controller["joints"]):
            e = controller["effort"][k]
            act.append(f"    <position joint='{_safe(by_joint[jid].name)}' kp='{controller['kp'][k]:.17g}' "
                       f"kv='{controller['kd'][k]:.17g}' forcelimited='true' forcerange='{-e:.17g} {e:.17g}'/>")
    if assets:
        lines += ["  <asset>", *assets, "  </asset>"]
    lines += world
    if excl:
        lines += ["  <contact>", *excl, "  </contact>"]
    if eq:
        lines += ["  <equality>", *eq, "  </equality>"]
    if act:
        lines += ["  <actuator>", *act, "  </actuator>"]
    lines.append("</mujoco>")
    return "\n".join(lines)


class MujocoScene:
    def __init__(self, system, timestep, variant="matched", damping_c=0.0, controller=None):
        self.system = system
        self.joints = scene_joints_cached(system)
        self.timestep = float(timestep)
        self.controller = controller
        self.xml = mjcf(system, timestep, variant, damping_c, controller)
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.qadr = [int(self.model.jnt_qposadr[self.model.joint(_safe(ji.name)).id]) for ji in self.joints]
        self.vadr = [int(self.model.jnt_dofadr[self.model.joint(_safe(ji.name)).id]) for ji in self.joints]

    def new_data(self, q=None, v=None):
        """MuJoCo data at the cenic-gym state (q, v) (default: the system's initial state)."""
        d = mujoco.MjData(self.model)
        q0 = self.system.q0 if q is None else q
        v0 = self.system.v0 if v is None else v
        for ji, ia, iv in zip(self.joints, self.qadr, self.vadr):
            if ji.kind == "free":
                x, y, z, w = q0[ji.iq + 3:ji.iq + 7]
                d.qpos[ia:ia + 3] = q0[ji.iq:ji.iq + 3]
                d.qpos[ia + 3:ia + 7] = [w, x, y, z]
                d.qvel[iv:iv + 6] = v0[ji.iv:ji.iv + 6]  # [world linear, body-frame angular], as cenic-gym
            else:
                d.qpos[ia] = q0[ji.iq]
                d.qvel[iv] = v0[ji.iv]
        if self.controller is not None:
            d.ctrl[:] = self.controller["q_target"]
        mujoco.mj_forward(self.model, d)
        return d

    def gym_state(self, d):
        q = np.zeros(self.system.nq)
        v = np.zeros(self.system.nv)
        for ji, ia, iv in zip(self.joints, self.qadr, self.vadr):
            if ji.kind == "free":
                w, x, y, z = d.qpos[ia + 3:ia + 7]
                n = np.sqrt(w * w + x * x + y * y + z * z)
                q[ji.iq:ji.iq + 3] = d.qpos[ia:ia + 3]
                q[ji.iq + 3:ji.iq + 7] = np.array([x, y, z, w]) / n
                v[ji.iv:ji.iv + 6] = d.qvel[iv:iv + 6]
            else:
                q[ji.iq] = d.qpos[ia]
                v[ji.iv] = d.qvel[iv]
        return q, v

    def nsteps(self, t_end):
        return int(round(t_end / self.timestep))

    @staticmethod
    def unstable(d):
        return int(d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number) > 0 or not np.all(np.isfinite(d.qpos))

    def timed_run(self, t_end):
        d = self.new_data()
        n = self.nsteps(t_end)
        t0 = time.perf_counter()
        mujoco.mj_step(self.model, d, nstep=n)
        wall = time.perf_counter() - t0
        q, v = self.gym_state(d)
        return dict(wall=wall, q=q, v=v, accepted=n, rejected=0, unstable=self.unstable(d))

    def monitored_run(self, t_end, penetration):
        d = self.new_data()
        worst = 0.0
        for _ in range(self.nsteps(t_end)):
            mujoco.mj_step(self.model, d)
            q, _ = self.gym_state(d)
            worst = max(worst, penetration.penetration(q))
        q, v = self.gym_state(d)
        return dict(q=q, v=v, penetration=worst, unstable=self.unstable(d))
