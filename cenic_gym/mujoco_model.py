"""The one mapping from a :class:`~cenic_gym.model.MultibodySystem` to MuJoCo (written once, tested in
``tests/test_mujoco_model.py``): used by the physics twin of sim-to-sim evaluation (:mod:`cenic_gym.sim2real.sim2sim`),
the visual twin of :mod:`cenic_gym.render` (geometry and quaternion conventions) and the peer benchmarks
(``benchmarks/peers/peer_mujoco.py``).

What maps to what (built with ``mujoco.MjSpec``; every length in m, angle in rad, mass in kg):

=====================================  =========================================================================
cenic-gym (Pinocchio / coal)           MuJoCo
=====================================  =========================================================================
joint j (its rigid body: Pinocchio     body ``body_name(j)`` at the joint placement in its parent's frame; the
merges fixed links into it)            body frame is the joint frame
free body (:func:`model.free_body_      ``<freejoint>``: qpos = [p, quaternion (w, x, y, z)], qvel = [world linear
joint`, on the world)                  velocity, body angular velocity] — our v layout, our q with the quaternion
                                       reordered (x, y, z, w) -> (w, x, y, z)
revolute / prismatic joint (RX..RZ,    hinge / slide joint along the same axis; ``range`` = our position limits,
PX..PZ, unaligned)                     ``damping``, ``armature`` = the model's
inertia (mass, com, rotational         ``mass``, ``ipos``, ``fullinertia`` (explicit inertial, about the com, body
inertia about the com)                 frame)
geometry (Sphere, Box, Capsule,        geom of the same type on the joint's body at the same placement, size in
Cylinder, ConvexMesh, HalfSpace)       MuJoCo's convention (our shapes' ``size()``: radius / half lengths); a
                                       convex mesh as a mesh of its vertices (MuJoCo takes their hull); a
                                       half-space as an (infinite) plane
candidate geometry pairs               explicit ``<pair>`` per candidate pair (``system.pairs``) and no other
(``system.pairs``)                     contact (every geom has contype = conaffinity = 0): the same pair set
pair friction                          ``friction = (μ, μ, 0.005, 1e-4, 1e-4)`` per pair, μ = our pair rule
                                       2 μ_a μ_b / (μ_a + μ_b) on the dynamic coefficients; condim 3 (MuJoCo
                                       has one coefficient: no static / dynamic split)
coupler q0 = ρ q1 + offset             ``<equality><joint>`` with polycoef (offset, ρ, 0, 0, 0)
gravity                                ``opt.gravity``
=====================================  =========================================================================

Contact compliance differs between the engines by design (ours: compliant point contact k, Hunt–Crossley d;
MuJoCo: soft constraints); ``contact`` chooses MuJoCo's defaults or per-pair (solref, solimp) values.
Joint controllers are mapped by :func:`add_position_actuator` (a ``<position>`` actuator: K_p, K_v, ± effort
limit) where the caller wants MuJoCo to apply them (see :class:`MujocoModel`).

``mujoco`` is imported only when a model is built, by :func:`import_mujoco` (``MUJOCO_GL=egl`` first, as
:mod:`cenic_gym.render` needs for offscreen images).
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

from .errors import CenicError
from .model import Box, Capsule, ConvexMesh, Cylinder, HalfSpace, Sphere, matrix_to_quat_xyzw
from .peer_map import JointInfo, MappingError, body_name, pair_friction, scene_joints  # noqa: F401 (re-exported)

# the friction MuJoCo's pairs get besides the sliding μ: its defaults for torsional and rolling friction (unused
# with condim 3)
TORSION_ROLL = (0.005, 0.0001, 0.0001)
_KINDS = {Sphere: "sphere", Box: "box", Capsule: "capsule", Cylinder: "cylinder", ConvexMesh: "mesh",
          HalfSpace: "plane"}


class RenderError(CenicError, RuntimeError):
    """MuJoCo cannot start: a missing optional package (``pip install 'cenic-gym[render]'``) or, for rendering, no
    offscreen GL context."""


def import_mujoco():
    """``mujoco``, with ``MUJOCO_GL=egl`` unless the user chose a backend (it must be set before the import:
    Mesa's software EGL draws offscreen without a GPU or display)."""
    if "mujoco" not in sys.modules:
        os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        import mujoco
    except ImportError as e:
        raise RenderError(f"MuJoCo is needed here ({e}); install it with pip install 'cenic-gym[render]'") from None
    return mujoco


def quat_wxyz(R):
    """MuJoCo's quaternion (w, x, y, z) of a rotation matrix (3, 3)."""
    x, y, z, w = matrix_to_quat_xyzw(np.asarray(R, dtype=float))
    return np.array([w, x, y, z])


def geom_kind_size(shape):
    """(kind, size) of one of our shapes in MuJoCo's terms: kind "sphere", "box", "capsule", "cylinder", "mesh"
    (vertices: ``shape.vertices``) or "plane" (a half-space; size zeros: infinite); size (3,) [m] = the shape's
    ``size()`` (radius / half lengths, as MuJoCo's ``geom_size``)."""
    kind = _KINDS.get(type(shape))
    if kind is None:
        raise MappingError(f"shape {shape!r} has no MuJoCo counterpart (known: {[k.__name__ for k in _KINDS]})")
    return kind, np.asarray(shape.size(), dtype=float)


def add_geom(mujoco, spec, body, kind, size, placement, name="", vertices=None, faces=None, **attributes):
    """Add one geom of ``kind`` / ``size`` (:func:`geom_kind_size`) at ``placement`` (pin.SE3, in the body frame) to
    ``body`` of ``spec``; a mesh needs ``vertices`` (n, 3) [m] (and optional ``faces`` (m, 3)); ``attributes`` go to
    ``add_geom`` as they are (rgba, contype, friction, ...). Returns the geom."""
    types = {"sphere": mujoco.mjtGeom.mjGEOM_SPHERE, "box": mujoco.mjtGeom.mjGEOM_BOX,
             "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
             "mesh": mujoco.mjtGeom.mjGEOM_MESH, "plane": mujoco.mjtGeom.mjGEOM_PLANE}
    kw = dict(type=types[kind], pos=list(placement.translation), quat=list(quat_wxyz(placement.rotation)),
              **attributes)
    if name:
        kw["name"] = name
    if kind == "plane" and not np.any(size):
        size = np.array([0.0, 0.0, 1.0])  # infinite plane (MuJoCo draws it with 1 m grid spacing)
    kw["size"] = list(size)
    if kind == "mesh":
        mesh = spec.add_mesh(name=f"mesh{len(spec.meshes)}", uservert=np.asarray(vertices, float).ravel().tolist(),
                             **({} if faces is None else {"userface": np.asarray(faces).ravel().tolist()}))
        kw["meshname"] = mesh.name
    return body.add_geom(**kw)


def add_position_actuator(mujoco, spec, joint_name, kp, kv, effort_limit):
    """A ``<position>`` actuator on joint ``joint_name``: τ = clamp(K_p (ctrl − q) − K_v q̇, ± effort_limit)
    (no clamp for an infinite limit). ``ctrl`` = q_d + (K_d / K_p) v_d reproduces a PD with a velocity set-point."""
    act = spec.add_actuator(target=joint_name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    act.set_to_position(kp=float(kp), kv=float(kv))
    if math.isfinite(effort_limit):
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.forcerange = [-float(effort_limit), float(effort_limit)]
    return act


def build_spec(system, timestep, shapes=None, mu=None, contact=None, integrator="implicitfast", actuators=(),
               placements=None):
    """``mujoco.MjSpec`` of ``system`` (the mapping in the module docstring), MuJoCo's solver defaults otherwise.

    timestep [s]: ``opt.timestep``; shapes: one shape per geometry replacing ``system.geometries[i].shape`` (a
    simulator's current shapes after domain randomization; None: the built ones); mu (n_geom,): dynamic friction
    per geometry (None: the materials'); contact: None (MuJoCo's default solref / solimp) or a callable
    ``(geom_a, geom_b) -> (solref (2,), solimp (5,))`` per pair; integrator: "euler", "implicit", "implicitfast"
    or "rk4"; actuators: (joint name, K_p, K_v, effort limit) per ``<position>`` actuator
    (:func:`add_position_actuator`), in ctrl order; placements: one pin.SE3 per geometry replacing the built ones
    (a simulator's :meth:`~cenic_gym.simulator.Simulator.geometry_placements`: scenery moved per episode). Inertias are read from ``system.model`` (set_body_inertia
    changes it in place). Returns the spec."""
    mujoco = import_mujoco()
    integrators = {"euler": mujoco.mjtIntegrator.mjINT_EULER, "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
                   "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST, "rk4": mujoco.mjtIntegrator.mjINT_RK4}
    if integrator not in integrators:
        raise ValueError(f"integrator={integrator!r} is not one of {sorted(integrators)}")
    if not (isinstance(timestep, (int, float)) and math.isfinite(timestep) and timestep > 0):
        raise ValueError(f"timestep must be a finite number > 0 [s], got {timestep!r}")
    geoms = system.geometries
    shapes = [g.shape for g in geoms] if shapes is None else list(shapes)
    if len(shapes) != len(geoms):
        raise ValueError(f"shapes must hold one shape per geometry ({len(geoms)}), got {len(shapes)}")
    placements = [g.placement for g in geoms] if placements is None else list(placements)
    if len(placements) != len(geoms):
        raise ValueError(f"placements must hold one pin.SE3 per geometry ({len(geoms)}), got {len(placements)}")
    mu = np.array([g.material.mu_dynamic for g in geoms]) if mu is None else np.asarray(mu, dtype=float)
    spec = mujoco.MjSpec()
    spec.modelname = "cenic_gym"
    spec.compiler.degree = False  # joint ranges in rad
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.option.timestep = float(timestep)
    spec.option.gravity = list(np.asarray(system.model.gravity.linear, dtype=float))
    spec.option.integrator = integrators[integrator]
    bodies = {0: spec.worldbody}
    for ji in scene_joints(system):
        b = bodies[ji.parent].add_body(name=ji.name, pos=list(ji.X_pj.translation),
                                       quat=list(quat_wxyz(ji.X_pj.rotation)))
        if ji.kind == "free":
            b.add_freejoint(name=ji.name)
        else:
            j = b.add_joint(name=ji.name, axis=list(ji.axis), damping=ji.damping, armature=ji.armature,
                            type=mujoco.mjtJoint.mjJNT_HINGE if ji.kind == "revolute" else mujoco.mjtJoint.mjJNT_SLIDE)
            if math.isfinite(ji.lower) or math.isfinite(ji.upper):
                j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
                j.range = [ji.lower if math.isfinite(ji.lower) else -1e10,
                           ji.upper if math.isfinite(ji.upper) else 1e10]
            else:
                j.limited = mujoco.mjtLimited.mjLIMITED_FALSE
        I = ji.inertia
        b.explicitinertial = True
        b.mass = ji.mass
        b.ipos = list(ji.com)
        b.fullinertia = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        bodies[ji.joint] = b
    for i, (g, shape, placement) in enumerate(zip(geoms, shapes, placements)):
        kind, size = geom_kind_size(shape)
        add_geom(mujoco, spec, bodies[g.joint], kind, size, placement, name=g.name,
                 vertices=shape.vertices if kind == "mesh" else None, contype=0, conaffinity=0, condim=3)
    for a, b in np.asarray(system.pairs).reshape(-1, 2):
        p = spec.add_pair(geomname1=geoms[a].name, geomname2=geoms[b].name, condim=3)
        m = pair_friction(mu[a], mu[b])
        p.friction = [m, m, *TORSION_ROLL]
        if contact is not None:
            solref, solimp = contact(int(a), int(b))
            p.solref, p.solimp = list(solref), list(solimp)
    for c in getattr(system, "couplers", []) or []:
        spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, name1=body_name(system, c.joint0),
                          name2=body_name(system, c.joint1), data=[c.offset, c.ratio] + [0.0] * 10)
    for name, kp, kv, effort in actuators:
        add_position_actuator(mujoco, spec, name, kp, kv, effort)
    return spec


class MujocoModel:
    """A compiled MuJoCo model of ``system`` (:func:`build_spec`; ``spec`` kept for ``spec.to_xml()``) with the
    state conversion both ways: ``q_from``/``v_from`` index arrays such that q = qpos[q_from], v = qvel[v_from]
    (free-body quaternions reordered), and ``geom_index[k]``: our geometry index of MuJoCo geom k."""

    def __init__(self, spec, system):
        self.mujoco = import_mujoco()
        self.spec, self.system = spec, system
        self.model = spec.compile()
        m, mj = system.model, self.model
        self.q_from = np.empty(m.nq, dtype=np.int64)
        self.v_from = np.empty(m.nv, dtype=np.int64)
        for ji in scene_joints(system):
            jid = mj.joint(ji.name).id
            qa, va = int(mj.jnt_qposadr[jid]), int(mj.jnt_dofadr[jid])
            if ji.kind == "free":
                self.q_from[ji.iq:ji.iq + 7] = [qa, qa + 1, qa + 2, qa + 4, qa + 5, qa + 6, qa + 3]
                self.v_from[ji.iv:ji.iv + 6] = np.arange(va, va + 6)
            else:
                self.q_from[ji.iq], self.v_from[ji.iv] = qa, va
        self.q_to = np.argsort(self.q_from)  # qpos = q[q_to]
        self.v_to = np.argsort(self.v_from)
        names = [g.name for g in system.geometries]
        self.geom_index = np.array([names.index(mj.geom(k).name) for k in range(mj.ngeom)], dtype=np.int64)

    def set_state(self, data, q, v):
        """Write our (q, v) into ``data`` (qpos, qvel) and run ``mj_forward``."""
        data.qpos[:] = np.asarray(q, dtype=float)[self.q_to]
        data.qvel[:] = np.asarray(v, dtype=float)[self.v_to]
        self.mujoco.mj_forward(self.model, data)

    def state(self, data):
        """Our (q, v) of ``data`` (fresh arrays; quaternions as MuJoCo keeps them, normalized by its integrator)."""
        return data.qpos[self.q_from], data.qvel[self.v_from]

    def contact_results(self, data):
        """MuJoCo's current contacts as our :class:`~cenic_gym.cenic.ContactResults` (geometry indices, our
        conventions: normal from A to B, force on B [N], φ = MuJoCo's ``dist`` [m], slip speed of B relative to
        A at the contact point [m/s])."""
        from .cenic import ContactResults

        mj, mujoco = self.mujoco, self.mujoco
        n = int(data.ncon)
        if n == 0:
            return ContactResults.empty()
        con = data.contact
        g1, g2 = np.array(con.geom1[:n]), np.array(con.geom2[:n])
        frame = np.array(con.frame[:n]).reshape(n, 3, 3)
        force = np.zeros((n, 3))
        slip = np.zeros(n)
        f6 = np.zeros(6)
        jp = np.zeros((3, self.model.nv))
        jq = np.zeros((3, self.model.nv))
        b1, b2 = self.model.geom_bodyid[g1], self.model.geom_bodyid[g2]
        point = np.array(con.pos[:n])
        for i in range(n):  # per contact of one state (a handful), once per control period
            mj.mj_contactForce(self.model, data, i, f6)
            force[i] = frame[i].T @ f6[:3]  # contact frame -> world; the normal force pushes geom2 along +normal
            mujoco.mj_jac(self.model, data, jp, None, point[i], int(b2[i]))
            mujoco.mj_jac(self.model, data, jq, None, point[i], int(b1[i]))
            rel = (jp - jq) @ data.qvel
            slip[i] = float(np.linalg.norm(rel - (rel @ frame[i, 0]) * frame[i, 0]))
        ga, gb = self.geom_index[g1], self.geom_index[g2]
        geoms = self.system.geometries
        names = tuple(g.name for g in geoms)
        bodies = tuple(body_name(self.system, g.joint) for g in geoms)
        return ContactResults(point, frame[:, 0].copy(), np.array(con.dist[:n]), force, slip, ga, gb,
                              tuple(names[i] for i in ga), tuple(names[i] for i in gb),
                              tuple(bodies[i] for i in ga), tuple(bodies[i] for i in gb))

    def unstable(self, data):
        """MuJoCo gave up (mjWARN_BADQACC: it reset the state) or the state is not finite."""
        return int(data.warning[self.mujoco.mjtWarning.mjWARN_BADQACC].number) > 0 or \
            not (np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel)))
