"""The MultibodySystem -> Drake mapping (cenic_gym.drake_model) checked against Pinocchio and analytic answers:
masses, the mass matrix with armature, gravity forces and body poses at random configurations, joint axes and
limits, the pair set, materials and couplers for the Panda (CenicFranka-v0) and the Go1 (CenicQuadruped-v0); a
spinning free fall against the analytic answer, converging with Drake's step; the contact forces of a resting box
against its weight; bad input named. Skipped only where pydrake is not installed (the one allowed skip)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from cenic_gym import Box, ContactMaterial, SceneBuilder
from cenic_gym import drake_model as dm
from cenic_gym.model import quat_xyzw_to_matrix
from cenic_gym.peer_map import MappingError, scene_joints
from cenic_gym.sim2real.rollout import make_env

try:
    dm.import_drake()
except dm.DrakeMissing:
    pytest.skip("needs pydrake (pip install 'cenic-gym[peers]')", allow_module_level=True)


@pytest.fixture(scope="module", params=["CenicFranka-v0", "CenicQuadruped-v0"])
def mapped(request):
    env = make_env(request.param)
    env.reset(seed=0)
    system = env.unwrapped.sim.system
    return request.param, system, dm.DrakeModel(system, 1e-3)


def _configurations(system, n, seed=0):
    """n random configurations inside the joint limits (±2 where a joint has none)."""
    m = system.model
    rng = np.random.default_rng(seed)
    lo, hi = np.maximum(m.lowerPositionLimit, -2.0), np.minimum(m.upperPositionLimit, 2.0)
    return [pin.normalize(m, lo + rng.uniform(size=m.nq) * (hi - lo)) for _ in range(n)]


def _velocity_map(model, q):
    """T (nv_drake, nv): Drake's v = T v_ours at q (a free body's angular velocity turned to the world)."""
    nv = model.system.nv
    return np.column_stack([model.to_drake(q, np.eye(nv)[i])[1] for i in range(nv)])


def test_mass_matrix_gravity_and_poses_agree_with_pinocchio(mapped):
    """M(q) (with the armature as Drake's reflected rotor inertia), the gravity forces and every body's world pose
    at random configurations, in our coordinates; the state conversion round-trips exactly."""
    _, system, model = mapped
    m, d = system.model, system.model.createData()
    plant, ctx = model.plant, model.diagram.CreateDefaultContext()
    pc = model.plant_context(ctx)
    rng = np.random.default_rng(1)
    for q in _configurations(system, 3):
        v = rng.normal(size=m.nv)
        model.set_state(ctx, q, v)
        q2, v2 = model.state(ctx)
        np.testing.assert_allclose(q2, q, atol=1e-15)
        np.testing.assert_allclose(v2, v, atol=1e-14)
        T = _velocity_map(model, q)
        M = T.T @ plant.CalcMassMatrix(pc) @ T
        M_pin = pin.crba(m, d, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        np.testing.assert_allclose(M, M_pin, atol=1e-10 * np.abs(M_pin).max())
        np.testing.assert_allclose(np.diag(M) - np.diag(pin.crba(m, d, q) - np.diag(m.armature)), m.armature,
                                   atol=1e-10 * np.abs(M_pin).max())  # the armature is on the diagonal
        g = pin.computeGeneralizedGravity(m, d, q)
        np.testing.assert_allclose(-T.T @ plant.CalcGravityGeneralizedForces(pc), g, atol=1e-9 * np.abs(g).max())
        pin.forwardKinematics(m, d, q)
        for ji in model.joints:
            X = plant.EvalBodyPoseInWorld(pc, model.bodies[ji.joint])
            np.testing.assert_allclose(X.translation(), d.oMi[ji.joint].translation, atol=1e-12, err_msg=ji.name)
            np.testing.assert_allclose(X.rotation().matrix(), d.oMi[ji.joint].rotation, atol=1e-12, err_msg=ji.name)


def test_bodies_joints_limits_and_actuators(mapped):
    _, system, model = mapped
    m, plant = system.model, model.plant
    for ji in scene_joints(system):
        body = model.bodies[ji.joint]
        assert body.default_mass() == pytest.approx(ji.mass, rel=1e-14), ji.name
        np.testing.assert_allclose(body.default_com(), ji.com, atol=1e-15)
        joint = model.djoints[ji.joint]
        assert joint.name() == ji.name
        if ji.kind == "free":
            assert joint.type_name() == "quaternion_floating"
            continue
        axis = joint.revolute_axis() if ji.kind == "revolute" else joint.translation_axis()
        np.testing.assert_allclose(axis, ji.axis, atol=1e-15, err_msg=ji.name)
        np.testing.assert_array_equal(joint.position_lower_limits(), [m.lowerPositionLimit[ji.iq]])
        np.testing.assert_array_equal(joint.position_upper_limits(), [m.upperPositionLimit[ji.iq]])
        assert joint.default_damping() == m.damping[ji.iv]
    # one actuator per joint with armature (its rotor inertia), none with gains (no actuators were asked for)
    armed = [ji for ji in scene_joints(system) if ji.kind != "free" and ji.armature > 0]
    assert plant.num_actuators() == len(armed)
    for k, ji in enumerate(armed):
        act = plant.get_joint_actuator(plant.GetJointActuatorIndices()[k])
        assert act.joint().name() == ji.name and act.default_reflected_inertia() == ji.armature
        assert not act.has_controller() and model.actuator_dofs[k] == ji.iv


def test_pairs_materials_and_couplers(mapped):
    """Drake's collision candidates are exactly our candidate pairs (a moving box meets fixed geometry through its
    corner spheres), every geometry carries its material, and the coupler is a Drake coupler constraint."""
    _, system, model = mapped
    inspector = model.scene_graph.model_inspector()
    geoms = system.geometries
    candidates = inspector.GetCollisionCandidates()
    ours = {(min(int(a), int(b)), max(int(a), int(b))) for a, b in np.asarray(system.pairs).reshape(-1, 2)}
    theirs = {(min(model.geom_index[a], model.geom_index[b]), max(model.geom_index[a], model.geom_index[b]))
              for a, b in candidates}
    assert theirs == ours and len(candidates) == model.n_allowed_pairs
    for a, b in candidates:  # corners only against fixed geometry, never the moving Box shape itself
        na, nb = inspector.GetName(a), inspector.GetName(b)
        ia, ib = model.geom_index[a], model.geom_index[b]
        for n, i, j in ((na, ia, ib), (nb, ib, ia)):
            if isinstance(geoms[i].shape, Box) and geoms[i].joint != 0:
                assert ("/corner" in n) == (geoms[j].joint == 0), (na, nb)
    for gid, i in model.geom_index.items():
        props = inspector.GetProximityProperties(gid)
        mat = geoms[i].material
        assert props.GetProperty("material", "point_contact_stiffness") == mat.stiffness
        assert props.GetProperty("material", "hunt_crossley_dissipation") == mat.dissipation
        f = props.GetProperty("material", "coulomb_friction")
        assert (f.static_friction(), f.dynamic_friction()) == (mat.mu_static, mat.mu_dynamic)
    assert model.plant.num_constraints() == len(system.couplers)


def _box_scene(z, stiffness=1e5, dissipation=0.0):
    mat = ContactMaterial(stiffness=stiffness, dissipation=dissipation, mu_static=0.8, mu_dynamic=0.8)
    b = SceneBuilder()
    b.add_ground(mat, name="ground")
    b.add_body("box", Box((0.2, 0.1, 0.05)), mass=2.0, position=(0.0, 0.0, z), material=mat)
    return b.build()


def test_spinning_free_fall_against_the_analytic_answer():
    """A box thrown up spinning about its principal z axis, no contact for 0.3 s: Drake (SAP, lagged) keeps the
    spin exactly (torque-free rotation about a principal axis) and the centre follows the parabola to its
    first-order time-stepping error, which shrinks 4x with a 4x smaller step (the attitude to Drake's quaternion
    update error, < 1e-5)."""
    system = _box_scene(2.0)
    q0, v0 = system.q0.copy(), np.zeros(system.nv)
    v0[:3], v0[5] = (0.5, -0.2, 1.0), 3.0  # world linear velocity [m/s], body angular velocity [rad/s]
    T, g = 0.3, np.asarray(system.model.gravity.linear)
    errors = []
    for h in (1e-3, 2.5e-4):
        model = dm.DrakeModel(system, h)
        sim = model.simulator()
        model.set_state(sim.get_mutable_context(), q0, v0)
        sim.AdvanceTo(T)
        q, v = model.state(sim.get_context())
        p_exact = q0[:3] + v0[:3] * T + 0.5 * g * T ** 2
        errors.append(np.abs(q[:3] - p_exact).max())
        np.testing.assert_allclose(v[:3], v0[:3] + g * T, atol=1e-12)  # exact: constant gravity
        np.testing.assert_allclose(v[3:], v0[3:], atol=1e-12)
        c, s = np.cos(3.0 * T), np.sin(3.0 * T)
        np.testing.assert_allclose(quat_xyzw_to_matrix(q[3:]), [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-5)
    assert errors[0] == pytest.approx(0.5 * 9.81 * T * 1e-3, rel=0.05)  # symplectic Euler: g T h / 2
    assert errors[1] == pytest.approx(errors[0] / 4, rel=0.05)


def test_contact_results_carry_the_weight_of_a_resting_box():
    """A 2 kg box settles face down on the ground: its 4 bottom corner spheres touch (our convention: normal from A
    to B, force on B), the forces add up to its weight, φ < 0 by about weight / (4 k) and the slip speed is ~0."""
    system = _box_scene(0.025, stiffness=1e5, dissipation=10.0)
    model = dm.DrakeModel(system, 1e-3)
    sim = model.simulator()
    model.set_state(sim.get_mutable_context(), system.q0, np.zeros(system.nv))
    sim.AdvanceTo(1.0)
    cr = model.contact_results(sim.get_context())
    assert cr.n == 4 and set(cr.names_a) | set(cr.names_b) == {"ground", "box/0"}
    on_box = sum((f if nb == "box/0" else -f) for f, nb in zip(cr.force, cr.names_b))
    np.testing.assert_allclose(on_box, [0.0, 0.0, 2.0 * 9.81], atol=1e-6 * 2 * 9.81)
    for n, na in zip(cr.normal, cr.names_a):
        np.testing.assert_allclose(n, [0, 0, 1] if na == "ground" else [0, 0, -1], atol=1e-9)
    k_pair = 1e5 / 2  # two geometries of k = 1e5 in series
    np.testing.assert_allclose(cr.phi, -2.0 * 9.81 / 4 / k_pair, rtol=1e-3)
    assert np.all(cr.slip_speed < 1e-6)


def test_bad_input_names_the_value():
    system = _box_scene(1.0)
    with pytest.raises(MappingError, match="no Drake counterpart"):
        dm.drake_shape(object(), "x")
    with pytest.raises(ValueError, match="time_step must be"):
        dm.DrakeModel(system, -1.0)
    with pytest.raises(ValueError, match="approximation='sap'"):
        dm.DrakeModel(system, 1e-3, approximation="sap")
    with pytest.raises(ValueError, match="shapes must hold one shape per geometry"):
        dm.DrakeModel(system, 1e-3, shapes=[])
    with pytest.raises(ValueError, match="integrator='cenic' needs a continuous plant"):
        dm.DrakeModel(system, 1e-3).simulator("cenic")
    with pytest.raises(MappingError, match="PD actuator on joint 1"):
        dm.DrakeModel(system, 1e-3, actuators=[dm.PdActuator(1, 1.0, 1.0, 1.0)])  # the box's free joint
