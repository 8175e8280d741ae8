"""Drake (pydrake 1.51) versions of a cenic-gym scene: continuous MultibodyPlant + CENIC integrator, and discrete
SAP. Built joint by joint and geometry by geometry from the cenic-gym MultibodySystem (Pinocchio model + geometry
list), so both engines see the same bodies, inertias, joints (axes, limits, damping, couplers), shapes, poses,
materials, candidate collision pairs and initial state.

Contact: point contact (``contact_model="point"``), compliant, per-geometry ``point_contact_stiffness`` and
``hunt_crossley_dissipation`` equal to cenic-gym's per-geometry values; Drake combines them with the same rules
(stiffness in series, d = (k2 d1 + k1 d2)/(k1 + k2), μ = 2μ1μ2/(μ1 + μ2)), so every pair gets cenic-gym's pair
values. SAP ignores H&C and reads ``relaxation_time`` (combined as τ = τ1 + τ2): each geometry gets τ/2 with
τ = c / k from peer_common.linear_damping.

Drake's point contact reports ONE point per geometry pair (the deepest). A box resting on a face would then
stand on one corner at a time, whereas cenic-gym (and MuJoCo) use a multi-point manifold. Boxes are therefore
given 8 tiny corner spheres (radius ``CORNER_RADIUS``, centred CORNER_RADIUS inside each corner so that the
sphere's support point is the corner for a face-down box) that collide with the fixed geometry (ground, walls);
the Box shape itself collides only with other moving bodies (one point per box-box / box-sphere pair).

Collision filtering reproduces cenic-gym's candidate pairs exactly: every geometry pair that is not in
``system.pairs`` is excluded (Drake's own adjacent-body filter is switched off).

Joint PD control (``controller`` dict, see peer_scenarios): CENIC gets a ``PidController`` (ki = 0) on the actuation
input, which the CENIC integrator linearizes and treats implicitly (effort limits from the JointActuators); SAP
uses the plant's own implicit PD actuators (``PdControllerGains``) with a fixed desired state.
"""
from __future__ import annotations

import time

import numpy as np
from pydrake.common import MemoryFile
from pydrake.geometry import (AddContactMaterial, Box, Capsule, CollisionFilterDeclaration, Convex, Cylinder,
                              GeometrySet, HalfSpace, InMemoryMesh, ProximityProperties, Sphere)
from pydrake.math import RigidTransform, RotationMatrix
from pydrake.multibody.plant import AddMultibodyPlant, CoulombFriction, MultibodyPlantConfig
from pydrake.multibody.tree import (FixedOffsetFrame, PdControllerGains, PrismaticJoint, RevoluteJoint,
                                    RotationalInertia, SpatialInertia)
from pydrake.systems.analysis import ApplySimulatorConfig, Simulator, SimulatorConfig
from pydrake.systems.controllers import PidController
from pydrake.systems.framework import DiagramBuilder, EventStatus
from pydrake.systems.primitives import ConstantVectorSource
from scipy.spatial import ConvexHull

from cenic_gym import narrowphase as nph

from peer_common import quat_xyzw_to_R, scene_joints_cached

CORNER_RADIUS = 1e-4  # [m]


def _X(R, p):
    return RigidTransform(RotationMatrix(np.asarray(R, float)), np.asarray(p, float))


def _props(mat, tau=None):
    props = ProximityProperties()
    AddContactMaterial(dissipation=float(mat.dissipation), point_stiffness=float(mat.stiffness),
                       friction=CoulombFriction(float(mat.mu_static), float(mat.mu_dynamic)), properties=props)
    if tau is not None:
        props.AddProperty("material", "relaxation_time", float(tau))
    return props


def _convex(vertices, name):
    """Drake Convex from a vertex list (an in-memory OBJ of its convex hull)."""
    v = np.asarray(vertices, float)
    hull = ConvexHull(v)
    lines = [f"v {x:.17g} {y:.17g} {z:.17g}" for x, y, z in v]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in hull.simplices]
    return Convex(InMemoryMesh(mesh_file=MemoryFile("\n".join(lines) + "\n", ".obj", name)))


def _shape(sh, name):
    t = sh.geom_type
    if t == nph.HALFSPACE:
        return HalfSpace()
    if t == nph.SPHERE:
        return Sphere(float(sh.radius))
    if t == nph.BOX:
        return Box(*map(float, sh.lengths))
    if t == nph.CAPSULE:
        return Capsule(float(sh.radius), float(sh.length))
    if t == nph.CYLINDER:
        return Cylinder(float(sh.radius), float(sh.length))
    if t == nph.CONVEX:
        return _convex(sh.vertices, name)
    raise NotImplementedError(f"peer Drake scene: shape {type(sh).__name__} not translated")


class DrakeScene:
    """One Drake diagram for a cenic-gym system. ``kind`` = "cenic" (time_step = 0) or "sap" (time_step = h)."""

    def __init__(self, system, kind="cenic", time_step=0.0, sap_tau=0.0, controller=None):
        self.system = system
        self.kind = kind
        self.joints = scene_joints_cached(system)
        builder = DiagramBuilder()
        cfg = MultibodyPlantConfig(time_step=float(time_step), contact_model="point",
                                   stiction_tolerance=float(system.stiction_tolerance),
                                   adjacent_bodies_collision_filters=False)
        if kind == "sap":
            cfg.discrete_contact_approximation = "sap"
        plant, scene_graph = AddMultibodyPlant(cfg, builder)  # the plant is named "plant", as CENIC requires
        plant.mutable_gravity_field().set_gravity_vector(np.array(system.model.gravity.linear))
        m = system.model

        # -- bodies and joints --------------------------------------------------------------------------------
        bodies = {0: plant.world_body()}
        djoints = {}
        for ji in self.joints:
            I = ji.inertia
            rot = RotationalInertia(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])
            body = plant.AddRigidBody(ji.name, SpatialInertia.MakeFromCentralInertia(ji.mass, ji.com, rot))
            bodies[ji.joint] = body
            if ji.kind == "free":
                continue  # Drake makes a joint-less root body a quaternion floating body
            if ji.armature != 0.0:
                raise NotImplementedError(f"joint {ji.name!r}: armature is not translated to Drake")
            parent = bodies[ji.parent]
            Fp = plant.AddFrame(FixedOffsetFrame(f"{ji.name}/parent", parent.body_frame(),
                                                 _X(ji.X_pj.rotation, ji.X_pj.translation)))
            J = RevoluteJoint if ji.kind == "revolute" else PrismaticJoint
            joint = plant.AddJoint(J(ji.name, Fp, body.body_frame(), ji.axis, damping=ji.damping))
            joint.set_position_limits([ji.lower], [ji.upper])
            djoints[ji.joint] = joint
        for cp in getattr(system, "couplers", []) or []:
            plant.AddCouplerConstraint(djoints[cp.joint0], djoints[cp.joint1], float(cp.ratio), float(cp.offset))
        self.actuated = []
        if controller is not None:
            for jid, e in zip(controller["joints"], controller["effort"]):
                act = plant.AddJointActuator(f"{m.names[jid]}/actuator", djoints[jid], float(e))
                self.actuated.append(jid)
                if kind == "sap":
                    k = self.actuated.index(jid)
                    act.set_controller_gains(PdControllerGains(p=float(controller["kp"][k]),
                                                               d=float(controller["kd"][k])))

        # -- geometry -----------------------------------------------------------------------------------------
        tau_geom = 0.5 * sap_tau if kind == "sap" else None
        gid_of = []  # (drake id, cenic geometry index, role) with role "shape" or "corner"
        for i, g in enumerate(system.geometries):
            props = _props(g.material, tau_geom)
            body = bodies[g.joint]
            R, p = g.placement.rotation, g.placement.translation
            gid = plant.RegisterCollisionGeometry(body, _X(R, p), _shape(g.shape, g.name), g.name, props)
            gid_of.append((gid, i, "shape"))
            if g.joint != 0 and g.shape.geom_type == nph.BOX:
                h = 0.5 * np.asarray(g.shape.lengths, float)
                for c in range(8):
                    s = np.array([1.0 if c & 1 else -1.0, 1.0 if c & 2 else -1.0, 1.0 if c & 4 else -1.0])
                    pc = s * (h - CORNER_RADIUS)
                    cid = plant.RegisterCollisionGeometry(body, _X(R, p + R @ pc), Sphere(CORNER_RADIUS),
                                                          f"{g.name}/corner{c}", props)
                    gid_of.append((cid, i, "corner"))
        plant.Finalize()

        # -- collision filter: exactly cenic-gym's candidate pairs ---------------------------------------------
        allowed = {(int(a), int(b)) for a, b in np.asarray(system.pairs).reshape(-1, 2)}
        static = [g.joint == 0 for g in system.geometries]
        is_box = [g.shape.geom_type == nph.BOX for g in system.geometries]
        decl = CollisionFilterDeclaration()
        n_excl = 0
        for x in range(len(gid_of)):
            ga, ia, ra = gid_of[x]
            for y in range(x + 1, len(gid_of)):
                gb, ib, rb = gid_of[y]
                if system.geometries[ia].joint == system.geometries[ib].joint:
                    continue  # same body: SceneGraph never collides them
                ok = (min(ia, ib), max(ia, ib)) in allowed
                if ok and (ra == "corner" or rb == "corner"):
                    other, role_other = (ib, rb) if ra == "corner" else (ia, ra)
                    ok = static[other] and role_other == "shape"  # corners only against fixed geometry
                elif ok and ra == "shape" and rb == "shape":
                    # a moving box meets fixed geometry through its corners, not through the Box shape
                    if (is_box[ia] and not static[ia] and static[ib]) or (is_box[ib] and not static[ib] and static[ia]):
                        ok = False
                if not ok:
                    decl.ExcludeBetween(GeometrySet(ga), GeometrySet(gb))
                    n_excl += 1
        if n_excl:
            scene_graph.collision_filter_manager().Apply(decl)

        # -- control ------------------------------------------------------------------------------------------
        if controller is not None:
            nq, nv = plant.num_positions(), plant.num_velocities()
            na = len(self.actuated)
            qd = np.concatenate([controller["q_target"], np.zeros(na)])
            if kind == "sap":
                plant_inst = plant.get_joint(djoints[self.actuated[0]].index()).model_instance()
                builder.Connect(builder.AddSystem(ConstantVectorSource(qd)).get_output_port(),
                                plant.get_desired_state_input_port(plant_inst))
                builder.Connect(builder.AddSystem(ConstantVectorSource(np.zeros(na))).get_output_port(),
                                plant.get_actuation_input_port())
            else:
                P = np.zeros((2 * na, nq + nv))
                for k, jid in enumerate(self.actuated):
                    P[k, djoints[jid].position_start()] = 1.0
                    P[na + k, nq + djoints[jid].velocity_start()] = 1.0
                pid = builder.AddSystem(PidController(P, np.asarray(controller["kp"], float), np.zeros(na),
                                                      np.asarray(controller["kd"], float)))
                builder.Connect(plant.get_state_output_port(), pid.get_input_port_estimated_state())
                builder.Connect(builder.AddSystem(ConstantVectorSource(qd)).get_output_port(),
                                pid.get_input_port_desired_state())
                builder.Connect(pid.get_output_port_control(), plant.get_actuation_input_port())
        self.diagram = builder.Build()
        self.plant = plant
        self.bodies = bodies
        self.djoints = djoints
        self.time_step = float(time_step)

    # -- state ------------------------------------------------------------------------------------------------
    def _to_drake(self, q, v):
        plant = self.plant
        qd = np.zeros(plant.num_positions())
        vd = np.zeros(plant.num_velocities())
        for ji in self.joints:
            if ji.kind == "free":
                b = self.bodies[ji.joint]
                i, k = b.floating_positions_start(), b.floating_velocities_start_in_v()
                x, y, z, w = q[ji.iq + 3:ji.iq + 7]
                qd[i:i + 4] = [w, x, y, z]
                qd[i + 4:i + 7] = q[ji.iq:ji.iq + 3]
                R = quat_xyzw_to_R(x, y, z, w)
                vd[k:k + 3] = R @ v[ji.iv + 3:ji.iv + 6]
                vd[k + 3:k + 6] = v[ji.iv:ji.iv + 3]
            else:
                jt = self.djoints[ji.joint]
                qd[jt.position_start()] = q[ji.iq]
                vd[jt.velocity_start()] = v[ji.iv]
        return qd, vd

    def _from_drake(self, qd, vd):
        q = np.zeros(self.system.nq)
        v = np.zeros(self.system.nv)
        for ji in self.joints:
            if ji.kind == "free":
                b = self.bodies[ji.joint]
                i, k = b.floating_positions_start(), b.floating_velocities_start_in_v()
                w, x, y, z = qd[i:i + 4]
                n = np.sqrt(w * w + x * x + y * y + z * z)
                q[ji.iq:ji.iq + 3] = qd[i + 4:i + 7]
                q[ji.iq + 3:ji.iq + 7] = np.array([x, y, z, w]) / n
                R = quat_xyzw_to_R(x, y, z, w)
                v[ji.iv:ji.iv + 3] = vd[k + 3:k + 6]
                v[ji.iv + 3:ji.iv + 6] = R.T @ vd[k:k + 3]
            else:
                jt = self.djoints[ji.joint]
                q[ji.iq] = qd[jt.position_start()]
                v[ji.iv] = vd[jt.velocity_start()]
        return q, v

    def new_simulator(self, accuracy=None, max_step=0.1):
        """A fresh Simulator + context at the cenic-gym initial state (not timed by callers)."""
        sim = Simulator(self.diagram)
        ctx = sim.get_mutable_context()
        pc = self.plant.GetMyMutableContextFromRoot(ctx)
        qd, vd = self._to_drake(self.system.q0, self.system.v0)
        self.plant.SetPositions(pc, qd)
        self.plant.SetVelocities(pc, vd)
        if self.kind == "cenic":
            ApplySimulatorConfig(SimulatorConfig(integration_scheme="cenic", accuracy=float(accuracy),
                                                 max_step_size=float(max_step), use_error_control=True), sim)
        sim.Initialize()
        return sim

    def gym_state(self, sim):
        """(q, v) in cenic-gym coordinates from a Drake simulator."""
        pc = self.plant.GetMyContextFromRoot(sim.get_context())
        return self._from_drake(self.plant.GetPositions(pc), self.plant.GetVelocities(pc))

    # -- runs -------------------------------------------------------------------------------------------------
    def timed_run(self, t_end, accuracy=None):
        """Wall time of AdvanceTo(t_end) from the initial state (construction and Initialize excluded)."""
        sim = self.new_simulator(accuracy)
        t0 = time.perf_counter()
        sim.AdvanceTo(float(t_end))
        wall = time.perf_counter() - t0
        q, v = self.gym_state(sim)
        return dict(wall=wall, q=q, v=v, **self.counters(sim))

    def counters(self, sim):
        if self.kind == "cenic":
            it = sim.get_integrator()
            summary = dict(it.GetStatisticsSummary())
            return dict(accepted=it.get_num_steps_taken(),
                        rejected=it.get_num_step_shrinkages_from_error_control()
                        + it.get_num_step_shrinkages_from_substep_failures(),
                        newton=summary.get("cenic_total_solver_iterations", 0),
                        factorizations=summary.get("cenic_total_hessian_factorizations", 0),
                        min_dt=it.get_smallest_adapted_step_size_taken(),
                        max_dt=it.get_largest_step_size_taken())
        steps = int(round(sim.get_context().get_time() / self.time_step))  # fixed steps (discrete updates)
        return dict(accepted=steps, rejected=0, newton=0, factorizations=0, min_dt=self.time_step,
                    max_dt=self.time_step)

    def monitored_run(self, t_end, penetration, accuracy=None):
        """Untimed run that evaluates the penetration metric after every step (Simulator monitor)."""
        sim = self.new_simulator(accuracy)
        worst = [0.0]
        plant = self.plant

        def monitor(root_context):
            pc = plant.GetMyContextFromRoot(root_context)
            q, _ = self._from_drake(plant.GetPositions(pc), plant.GetVelocities(pc))
            worst[0] = max(worst[0], penetration.penetration(q))
            return EventStatus.Succeeded()

        sim.set_monitor(monitor)
        sim.AdvanceTo(float(t_end))
        q, v = self.gym_state(sim)
        return dict(q=q, v=v, penetration=worst[0])

    def sampled_run(self, times, accuracy=None):
        """cenic-gym q at the given times, advancing in chunks (AdvanceTo lands on each time)."""
        sim = self.new_simulator(accuracy)
        out = []
        for t in times:
            if t > 0:
                sim.AdvanceTo(float(t))
            out.append(self.gym_state(sim)[0])
        return np.array(out), self.counters(sim)
