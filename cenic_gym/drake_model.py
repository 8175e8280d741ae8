"""The one mapping from a :class:`~cenic_gym.model.MultibodySystem` to a Drake ``MultibodyPlant`` (written once,
tested in ``tests/test_drake_model.py``): the second physics peer of sim-to-sim evaluation
(:mod:`cenic_gym.sim2real.sim2sim`), next to :mod:`cenic_gym.mujoco_model`; the joint description both read is
:func:`cenic_gym.peer_map.scene_joints`.

What maps to what (pydrake 1.51; every length in m, angle in rad, mass in kg):

=====================================  =========================================================================
cenic-gym (Pinocchio / coal)           Drake
=====================================  =========================================================================
joint j and the rigid body it carries  rigid body ``body_name(j)`` (body frame = our joint frame) in the model
                                       instance "cenic_gym", joined to its parent through a fixed offset frame
                                       at the joint placement
free body (on the world)               ``QuaternionFloatingJoint``: q = [quaternion (w, x, y, z), p], v = [world
                                       angular velocity, world linear velocity]; ours q = [p, quaternion (x, y,
                                       z, w)], v = [world linear velocity, body angular velocity]
                                       (:meth:`DrakeModel.to_drake` / :meth:`DrakeModel.from_drake`)
revolute / prismatic joint             ``RevoluteJoint`` / ``PrismaticJoint`` along the same axis, ``damping``,
                                       position limits
armature (reflected inertia) [kg m²]   a ``JointActuator`` on the joint with rotor inertia = armature, gear
                                       ratio 1 (Drake's reflected inertia ρ² I_r, on the mass matrix diagonal as
                                       ours); effort limit +inf unless the joint is PD-controlled
inertia (mass, com, rotational         ``SpatialInertia.MakeFromCentralInertia`` (about the com, body frame)
inertia about the com)
geometry (Sphere, Box, Capsule,        collision geometry of the same shape and placement on the same body
Cylinder, ConvexMesh, HalfSpace)       (Drake's Box takes full lengths, Capsule / Cylinder a radius and a full
                                       length, as ours; a convex mesh as an in-memory OBJ of its hull)
contact material (k [N/m], H&C d       per geometry ``point_contact_stiffness`` = k, ``hunt_crossley_dissipation``
[s/m], μ_s, μ_d)                       = d, ``CoulombFriction(μ_s, μ_d)``: Drake combines them with our rules
                                       (k in series, d = (k₂d₁ + k₁d₂)/(k₁ + k₂), μ = 2μ₁μ₂/(μ₁ + μ₂); physics
                                       notes §2.2), so every pair gets our pair values. Point contact
                                       (``contact_model="point"``, hydroelastic off).
box on a moving body                   Drake's point contact gives one point per geometry pair where ours gives a
                                       manifold: the box also gets 8 corner spheres (radius ``CORNER_RADIUS``,
                                       their support points at the corners, same material) which alone meet
                                       the fixed geometry (ground, table); the Box shape meets moving geometry
candidate pairs (``system.pairs``)     every other pair is excluded by a collision filter (Drake's adjacent-body
                                       filter off): the same pair set
coupler q0 = ρ q1 + offset             ``AddCouplerConstraint`` (a holonomic constraint, solved by SAP / CENIC)
JointPD (K_p, K_d, ± effort limit)     a PD-controlled ``JointActuator`` (``PdControllerGains``; set-points on
                                       the desired-state input, (q_d, v_d)): τ = clamp(−K_p (q − q_d) −
                                       K_d (v − v_d), ± e), treated implicitly by Drake's SAP / CENIC solvers
                                       as by ours
gravity                                the plant's gravity field
=====================================  =========================================================================

Time stepping: ``time_step`` > 0 gives a discrete plant solved by Drake's SAP solver with its ``lagged`` (default) or
``similar`` contact approximation — both model Hunt & Crossley dissipation with our k and d (the ICF paper's
contact model is Drake's lagged one), so no linear-damper substitute is needed (Drake's "sap" approximation would
need one); ``time_step`` = 0 gives a continuous plant for Drake's own error-controlled CENIC integrator
(:meth:`DrakeModel.simulator`).

``pydrake`` is imported only when a model is built, by :func:`import_drake` (``pip install 'cenic-gym[peers]'``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import CenicError
from .model import Box, Capsule, ConvexMesh, Cylinder, HalfSpace, Sphere, _convex_hull, quat_xyzw_to_matrix
from .peer_map import MappingError, body_name, scene_joints

CORNER_RADIUS = 1e-4  # [m] the corner spheres of a box on a moving body
APPROXIMATIONS = ("lagged", "similar")  # Drake's discrete contact approximations with Hunt & Crossley dissipation
INSTANCE = "cenic_gym"


class DrakeMissing(CenicError, RuntimeError):
    """``pydrake`` is not installed (``pip install 'cenic-gym[peers]'``)."""


def import_drake():
    """``pydrake``, or :class:`DrakeMissing` saying how to install it."""
    try:
        import pydrake
        import pydrake.multibody.plant  # noqa: F401 (the part the mapping needs)
    except ImportError as e:
        raise DrakeMissing(f"Drake is needed here ({e}); install it with pip install 'cenic-gym[peers]'") from None
    return pydrake


def drake_shape(shape, name):
    """The pydrake.geometry shape of one of our shapes (same sizes; a ConvexMesh as a Convex of its hull, from an
    in-memory OBJ named ``name``); :class:`MappingError` for an unknown shape."""
    from pydrake.common import MemoryFile
    from pydrake.geometry import Box as DBox
    from pydrake.geometry import Capsule as DCapsule
    from pydrake.geometry import Convex, InMemoryMesh
    from pydrake.geometry import Cylinder as DCylinder
    from pydrake.geometry import HalfSpace as DHalfSpace
    from pydrake.geometry import Sphere as DSphere

    if isinstance(shape, Sphere):
        return DSphere(float(shape.radius))
    if isinstance(shape, Box):
        return DBox(*map(float, shape.lengths))
    if isinstance(shape, Capsule):
        return DCapsule(float(shape.radius), float(shape.length))
    if isinstance(shape, Cylinder):
        return DCylinder(float(shape.radius), float(shape.length))
    if isinstance(shape, HalfSpace):
        return DHalfSpace()
    if isinstance(shape, ConvexMesh):
        v = np.asarray(shape.vertices, dtype=float)
        hull = _convex_hull(v, name)
        lines = [f"v {x!r} {y!r} {z!r}" for x, y, z in v.tolist()]
        lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in hull.simplices.tolist()]
        return Convex(InMemoryMesh(mesh_file=MemoryFile("\n".join(lines) + "\n", ".obj", name)))
    raise MappingError(f"shape {shape!r} has no Drake counterpart (known: Sphere, Box, Capsule, Cylinder, "
                       "ConvexMesh, HalfSpace)")


def box_corners(lengths):
    """(8, 3) centres [m] of the corner spheres of a box of full side ``lengths``, in the box frame: each
    CORNER_RADIUS inside its corner along every axis, so a face-down box touches a plane at its corners."""
    h = 0.5 * np.asarray(lengths, dtype=float) - CORNER_RADIUS
    signs = np.array([[1.0 if c & 1 else -1.0, 1.0 if c & 2 else -1.0, 1.0 if c & 4 else -1.0] for c in range(8)])
    return signs * h


@dataclass
class PdActuator:
    """A joint PD Drake applies (implicitly): Pinocchio joint ``joint``, gains K_p [N m/rad or N/m], K_d [N m s/rad
    or N s/m], effort limit [N m or N] (inf: none)."""

    joint: int
    kp: float
    kd: float
    effort_limit: float


class DrakeModel:
    """A Drake diagram (MultibodyPlant + SceneGraph) of ``system`` (the mapping in the module docstring) with the
    state conversion both ways and our view of its contacts.

    time_step [s]: > 0 a discrete plant (SAP, ``approximation`` "lagged" or "similar"), 0 a continuous one (for
    Drake's CENIC integrator); shapes: one shape per geometry replacing the built ones (a simulator's current
    shapes); materials: one dict (stiffness, dissipation, mu_static, mu_dynamic) per geometry (None: the built
    ones); actuators: :class:`PdActuator` per PD-controlled joint; placements: one pin.SE3 per geometry replacing
    the built ones (a simulator's current ones: scenery moved per episode). Inertias are read from ``system.model``.

    Attributes: ``plant``, ``diagram``, ``joints`` (scene_joints), ``actuator_dofs`` (our v index per Drake
    actuator, in actuator order), ``pd_actuators`` (the Drake actuator index of each ``actuators`` entry),
    ``geom_index`` (our geometry index per Drake collision geometry id)."""

    def __init__(self, system, time_step=1e-3, shapes=None, materials=None, actuators=(), approximation="lagged",
                 placements=None):
        import_drake()
        from pydrake.geometry import (AddContactMaterial, CollisionFilterDeclaration, GeometrySet,
                                      ProximityProperties)
        from pydrake.geometry import Sphere as DSphere
        from pydrake.math import RigidTransform, RotationMatrix
        from pydrake.multibody.plant import AddMultibodyPlant, CoulombFriction, MultibodyPlantConfig
        from pydrake.multibody.tree import (FixedOffsetFrame, PdControllerGains, PrismaticJoint,
                                            QuaternionFloatingJoint, RevoluteJoint, RotationalInertia,
                                            SpatialInertia)
        from pydrake.systems.framework import DiagramBuilder

        if not (isinstance(time_step, (int, float)) and math.isfinite(time_step) and time_step >= 0):
            raise ValueError(f"time_step must be a finite number >= 0 [s] (0: continuous), got {time_step!r}")
        if approximation not in APPROXIMATIONS:
            raise ValueError(f"approximation={approximation!r} is not one of {APPROXIMATIONS}")
        geoms = system.geometries
        shapes = [g.shape for g in geoms] if shapes is None else list(shapes)
        if len(shapes) != len(geoms):
            raise ValueError(f"shapes must hold one shape per geometry ({len(geoms)}), got {len(shapes)}")
        placements = [g.placement for g in geoms] if placements is None else list(placements)
        if len(placements) != len(geoms):
            raise ValueError(f"placements must hold one pin.SE3 per geometry ({len(geoms)}), got {len(placements)}")
        materials = [vars(g.material) for g in geoms] if materials is None else list(materials)
        if len(materials) != len(geoms):
            raise ValueError(f"materials must hold one dict per geometry ({len(geoms)}), got {len(materials)}")
        self.system, self.time_step = system, float(time_step)
        self.joints = scene_joints(system)

        def X(placement):
            return RigidTransform(RotationMatrix(np.asarray(placement.rotation, float)),
                                  np.asarray(placement.translation, float))

        builder = DiagramBuilder()
        cfg = MultibodyPlantConfig(time_step=self.time_step, contact_model="point",
                                   stiction_tolerance=float(system.stiction_tolerance),
                                   adjacent_bodies_collision_filters=False,
                                   use_sampled_output_ports=False)  # contacts / efforts of the current state
        if self.time_step > 0:
            cfg.discrete_contact_approximation = approximation
        plant, scene_graph = AddMultibodyPlant(cfg, builder)  # named "plant", as Drake's CENIC integrator needs
        plant.mutable_gravity_field().set_gravity_vector(np.array(system.model.gravity.linear, dtype=float))
        inst = plant.AddModelInstance(INSTANCE)
        self.instance = inst

        bodies, djoints = {0: plant.world_body()}, {}
        for ji in self.joints:
            I = ji.inertia
            rot = RotationalInertia(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])
            body = plant.AddRigidBody(ji.name, inst, SpatialInertia.MakeFromCentralInertia(ji.mass, ji.com, rot))
            bodies[ji.joint] = body
            parent = bodies[ji.parent]
            frame = plant.AddFrame(FixedOffsetFrame(f"{ji.name}/parent", parent.body_frame(), X(ji.X_pj)))
            if ji.kind == "free":
                joint = QuaternionFloatingJoint(ji.name, frame, body.body_frame())
            elif ji.kind == "revolute":
                joint = RevoluteJoint(ji.name, frame, body.body_frame(), ji.axis, damping=ji.damping)
            else:
                joint = PrismaticJoint(ji.name, frame, body.body_frame(), ji.axis, damping=ji.damping)
            djoints[ji.joint] = plant.AddJoint(joint)
            if ji.kind != "free":
                djoints[ji.joint].set_position_limits([ji.lower], [ji.upper])
        for c in getattr(system, "couplers", []) or []:
            plant.AddCouplerConstraint(djoints[c.joint0], djoints[c.joint1], float(c.ratio), float(c.offset))

        # actuators: every PD-controlled joint and every joint with armature (its reflected inertia)
        pd = {}
        for a in actuators:
            if a.joint in pd or a.joint not in djoints or djoints[a.joint].num_velocities() != 1:
                raise MappingError(f"PD actuator on joint {a.joint} ({body_name(system, a.joint)!r}): not a single "
                                   "1-DOF joint of the system, or controlled twice")
            pd[a.joint] = a
        self.actuator_dofs, self.pd_actuators, index = [], [], {}
        for ji in self.joints:
            if ji.kind == "free" or (ji.joint not in pd and ji.armature == 0.0):
                continue
            a = pd.get(ji.joint)
            act = plant.AddJointActuator(f"{ji.name}/actuator", djoints[ji.joint],
                                         math.inf if a is None else float(a.effort_limit))
            act.set_default_rotor_inertia(float(ji.armature))
            act.set_default_gear_ratio(1.0)
            if a is not None:
                act.set_controller_gains(PdControllerGains(p=float(a.kp), d=float(a.kd)))
            index[ji.joint] = len(self.actuator_dofs)
            self.actuator_dofs.append(ji.iv)
        self.pd_actuators = [index[a.joint] for a in actuators]
        self.actuator_dofs = np.array(self.actuator_dofs, dtype=np.int64)

        # geometry (corners of boxes on moving bodies: see the module docstring)
        ids, roles = [], []  # per Drake geometry: its id; (our index, "shape" | "corner")
        for i, (g, shape, mat, placement) in enumerate(zip(geoms, shapes, materials, placements)):
            props = ProximityProperties()
            AddContactMaterial(dissipation=float(mat["dissipation"]), point_stiffness=float(mat["stiffness"]),
                               friction=CoulombFriction(float(mat["mu_static"]), float(mat["mu_dynamic"])),
                               properties=props)
            body, Xg = bodies[g.joint], X(placement)
            ids.append(plant.RegisterCollisionGeometry(body, Xg, drake_shape(shape, g.name), g.name, props))
            roles.append((i, "shape"))
            if g.joint != 0 and isinstance(shape, Box):
                for c, p in enumerate(box_corners(shape.lengths)):
                    Xc = Xg.multiply(RigidTransform(p))
                    ids.append(plant.RegisterCollisionGeometry(body, Xc, DSphere(CORNER_RADIUS),
                                                               f"{g.name}/corner{c}", props))
                    roles.append((i, "corner"))
        plant.Finalize()
        self.geom_index = {gid: i for gid, (i, _) in zip(ids, roles)}

        # the candidate pairs and no other: exclude everything, then allow each allowed Drake pair
        fixed = [g.joint == 0 for g in geoms]
        per_geom = {}
        for gid, (i, role) in zip(ids, roles):
            per_geom.setdefault(i, []).append((gid, role))
        allow = []
        for a, b in np.asarray(system.pairs).reshape(-1, 2).tolist():
            # a moving box meets fixed geometry through its corners only, moving geometry through its Box shape
            wanted = {i: ("corner" if (fixed[a] or fixed[b]) and len(per_geom[i]) > 1 else "shape") for i in (a, b)}
            allow += [(ga, gb) for ga, ra in per_geom[a] if ra == wanted[a]
                      for gb, rb in per_geom[b] if rb == wanted[b]]
        everything = GeometrySet(ids)
        manager = scene_graph.collision_filter_manager()
        manager.Apply(CollisionFilterDeclaration().ExcludeWithin(everything))
        declaration = CollisionFilterDeclaration()
        for ga, gb in allow:
            declaration.AllowBetween(GeometrySet(ga), GeometrySet(gb))
        manager.Apply(declaration)
        self.n_allowed_pairs = len(allow)

        self.diagram = builder.Build()
        self.plant, self.scene_graph = plant, scene_graph
        self.bodies, self.djoints = bodies, djoints

    # -- state -----------------------------------------------------------------------------------------------
    def to_drake(self, q, v):
        """Drake's (q, v) of our (q, v) (see the module docstring for the free-body layouts)."""
        qd, vd = np.zeros(self.plant.num_positions()), np.zeros(self.plant.num_velocities())
        for ji in self.joints:
            jt = self.djoints[ji.joint]
            i, k = jt.position_start(), jt.velocity_start()
            if ji.kind == "free":
                x, y, z, w = q[ji.iq + 3:ji.iq + 7]
                qd[i:i + 4] = [w, x, y, z]
                qd[i + 4:i + 7] = q[ji.iq:ji.iq + 3]
                vd[k:k + 3] = quat_xyzw_to_matrix(q[ji.iq + 3:ji.iq + 7]) @ v[ji.iv + 3:ji.iv + 6]
                vd[k + 3:k + 6] = v[ji.iv:ji.iv + 3]
            else:
                qd[i], vd[k] = q[ji.iq], v[ji.iv]
        return qd, vd

    def from_drake(self, qd, vd):
        """Our (q, v) of Drake's (q, v) (free-body quaternions normalized)."""
        q, v = np.zeros(self.system.nq), np.zeros(self.system.nv)
        for ji in self.joints:
            jt = self.djoints[ji.joint]
            i, k = jt.position_start(), jt.velocity_start()
            if ji.kind == "free":
                w, x, y, z = qd[i:i + 4]
                quat = np.array([x, y, z, w]) / math.sqrt(w * w + x * x + y * y + z * z)
                q[ji.iq:ji.iq + 3] = qd[i + 4:i + 7]
                q[ji.iq + 3:ji.iq + 7] = quat
                v[ji.iv:ji.iv + 3] = vd[k + 3:k + 6]
                v[ji.iv + 3:ji.iv + 6] = quat_xyzw_to_matrix(quat).T @ vd[k:k + 3]
            else:
                q[ji.iq], v[ji.iv] = qd[i], vd[k]
        return q, v

    def plant_context(self, root_context):
        """The plant's context inside a diagram (root) context."""
        return self.plant.GetMyMutableContextFromRoot(root_context)

    def set_state(self, root_context, q, v):
        """Write our (q, v) into the plant's state."""
        pc = self.plant_context(root_context)
        qd, vd = self.to_drake(np.asarray(q, float), np.asarray(v, float))
        self.plant.SetPositions(pc, qd)
        self.plant.SetVelocities(pc, vd)

    def state(self, root_context):
        """Our (q, v) of the plant's state."""
        pc = self.plant_context(root_context)
        return self.from_drake(self.plant.GetPositions(pc), self.plant.GetVelocities(pc))

    def simulator(self, integrator="discrete", accuracy=1e-3, max_step=0.1):
        """A Drake Simulator of the diagram: "discrete" (the plant's own fixed steps; a discrete plant) or "cenic"
        (Drake's error-controlled CENIC integrator at ``accuracy``, steps ≤ ``max_step`` [s]; a continuous
        plant)."""
        from pydrake.systems.analysis import ApplySimulatorConfig, Simulator, SimulatorConfig

        if integrator not in ("discrete", "cenic"):
            raise ValueError(f"integrator={integrator!r} is not one of ('discrete', 'cenic')")
        if (integrator == "cenic") != (self.time_step == 0):
            raise ValueError(f"integrator={integrator!r} needs a {'continuous' if integrator == 'cenic' else 'discrete'}"
                             f" plant, this one has time_step={self.time_step:g}")
        sim = Simulator(self.diagram)
        if integrator == "cenic":
            ApplySimulatorConfig(SimulatorConfig(integration_scheme="cenic", accuracy=float(accuracy),
                                                 max_step_size=float(max_step), use_error_control=True), sim)
        return sim

    def force_to_drake(self, q, tau):
        """Drake's generalized force of our generalized force ``tau`` (nv,) at our configuration q (a free body's
        torque [N m] turned from its body frame to the world, as its angular velocity)."""
        return self.to_drake(np.asarray(q, float), np.asarray(tau, float))[1]

    def contact_results(self, root_context):
        """Drake's current point contacts as our :class:`~cenic_gym.cenic.ContactResults` (our geometry indices
        (a box's corners count as the box), normal from A to B, force on B [N], φ = −depth [m], slip speed [m/s])."""
        from .cenic import ContactResults

        pc = self.plant_context(root_context)
        cr = self.plant.get_contact_results_output_port().Eval(pc)
        n = cr.num_point_pair_contacts()
        if n == 0:
            return ContactResults.empty()
        info = [cr.point_pair_contact_info(i) for i in range(n)]
        pairs = [c.point_pair() for c in info]  # per contact of one state (a handful), once per control period
        ga = np.array([self.geom_index[p.id_A] for p in pairs], dtype=np.int64)
        gb = np.array([self.geom_index[p.id_B] for p in pairs], dtype=np.int64)
        point = np.array([c.contact_point() for c in info]).reshape(n, 3)
        normal = -np.array([p.nhat_BA_W for p in pairs]).reshape(n, 3)
        phi = -np.array([p.depth for p in pairs])
        force = np.array([c.contact_force() for c in info]).reshape(n, 3)
        slip = np.array([c.slip_speed() for c in info])
        geoms = self.system.geometries
        names = tuple(g.name for g in geoms)
        bodies = tuple(body_name(self.system, g.joint) for g in geoms)
        return ContactResults(point, normal, phi, force, slip, ga, gb, tuple(names[i] for i in ga),
                              tuple(names[i] for i in gb), tuple(bodies[i] for i in ga), tuple(bodies[i] for i in gb))
