"""The MultibodySystem -> MuJoCo mapping (cenic_gym.mujoco_model) checked against Pinocchio: masses, inertias,
joint axes / limits / armature / damping, geometry sizes and world poses at random configurations, forward
kinematics to 1e-9 for the Panda (CenicFranka-v0) and the Go1 (CenicQuadruped-v0), the pair set and friction,
the coupler, the state conversion, and contact forces against the analytic weight of a resting box."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from cenic_gym import Box, ContactMaterial, SceneBuilder
from cenic_gym import mujoco_model as mm
from cenic_gym.mujoco_model import RenderError, import_mujoco
from cenic_gym.sim2real.rollout import make_env

try:  # through cenic_gym.render: MUJOCO_GL=egl is set before the first import (rendering tests need it)
    mujoco = import_mujoco()
except RenderError:
    pytest.skip("needs mujoco (pip install 'cenic-gym[render]')", allow_module_level=True)


@pytest.fixture(scope="module", params=["CenicFranka-v0", "CenicQuadruped-v0"])
def mapped(request):
    env = make_env(request.param)
    env.reset(seed=0)
    system = env.unwrapped.sim.system
    model = mm.MujocoModel(mm.build_spec(system, 1e-3), system)
    return request.param, system, model


def _configurations(system, n, seed=0):
    """n random configurations inside the joint limits (±2 where a joint has none)."""
    m = system.model
    rng = np.random.default_rng(seed)
    lo, hi = np.maximum(m.lowerPositionLimit, -2.0), np.minimum(m.upperPositionLimit, 2.0)
    out = []
    for _ in range(n):
        q = lo + rng.uniform(size=m.nq) * (hi - lo)
        out.append(pin.normalize(m, q))  # free-body quaternions made unit
    return out


def test_inertias_and_joints_agree_with_pinocchio(mapped):
    _, system, mj = mapped
    m, M = system.model, mj.model
    for ji in mm.scene_joints(system):
        b = M.body(ji.name)
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, b.iquat)
        R = R.reshape(3, 3)
        assert b.mass[0] == pytest.approx(ji.mass, rel=1e-12), ji.name
        np.testing.assert_allclose(b.ipos, ji.com, atol=1e-12, err_msg=ji.name)
        np.testing.assert_allclose(R @ np.diag(b.inertia) @ R.T, ji.inertia, atol=1e-9 * np.abs(ji.inertia).max(),
                                   err_msg=ji.name)
        j = M.joint(ji.name)
        if ji.kind == "free":
            assert j.type[0] == mujoco.mjtJoint.mjJNT_FREE
            continue
        np.testing.assert_allclose(j.axis, ji.axis, atol=1e-15, err_msg=ji.name)
        np.testing.assert_allclose(j.range, [m.lowerPositionLimit[ji.iq], m.upperPositionLimit[ji.iq]], rtol=1e-15)
        assert M.dof_armature[j.dofadr[0]] == m.armature[ji.iv] and M.dof_damping[j.dofadr[0]] == m.damping[ji.iv]


def test_forward_kinematics_and_geometry_agree_with_pinocchio(mapped):
    env_id, system, mj = mapped
    m, M = system.model, mj.model
    d, pd = mujoco.MjData(M), m.createData()
    rng = np.random.default_rng(1)
    for q in _configurations(system, 3):
        v = rng.normal(size=m.nv)
        mj.set_state(d, q, v)
        q2, v2 = mj.state(d)
        np.testing.assert_array_equal(q2, q)
        np.testing.assert_array_equal(v2, v)
        pin.forwardKinematics(m, pd, q)
        for j in range(1, m.njoints):
            b = M.body(m.names[j]).id
            np.testing.assert_allclose(d.xpos[b], pd.oMi[j].translation, atol=1e-9, err_msg=m.names[j])
            np.testing.assert_allclose(d.xmat[b].reshape(3, 3), pd.oMi[j].rotation, atol=1e-9, err_msg=m.names[j])
        for k in range(M.ngeom):
            g = system.geometries[mj.geom_index[k]]
            assert M.geom(k).name == g.name
            X = (pd.oMi[g.joint] if g.joint else pin.SE3.Identity()) * g.placement
            kind, size = mm.geom_kind_size(g.shape)
            if kind == "mesh":  # MuJoCo re-centres a mesh on its centroid: compare the vertices in the world
                mesh = M.geom_dataid[k]
                a, n = M.mesh_vertadr[mesh], M.mesh_vertnum[mesh]
                ours = g.shape.vertices @ X.rotation.T + X.translation
                theirs = M.mesh_vert[a:a + n] @ d.geom_xmat[k].reshape(3, 3).T + d.geom_xpos[k]
                gap = np.linalg.norm(theirs[:, None, :] - ours[None, :, :], axis=2).min(axis=1)
                assert gap.max() < 1e-6, (g.name, gap.max())  # MuJoCo keeps mesh vertices in float32
                continue
            np.testing.assert_allclose(d.geom_xpos[k], X.translation, atol=1e-9, err_msg=g.name)
            np.testing.assert_allclose(d.geom_xmat[k].reshape(3, 3), X.rotation, atol=1e-9, err_msg=g.name)
            if kind != "plane":
                np.testing.assert_array_equal(M.geom_size[k], size)
    assert env_id in ("CenicFranka-v0", "CenicQuadruped-v0")


def test_pairs_friction_and_couplers(mapped):
    _, system, mj = mapped
    M = mj.model
    geoms = system.geometries
    ours = {frozenset((geoms[a].name, geoms[b].name)): (a, b) for a, b in np.asarray(system.pairs).reshape(-1, 2)}
    theirs = {frozenset((M.geom(M.pair_geom1[i]).name, M.geom(M.pair_geom2[i]).name)): i for i in range(M.npair)}
    assert set(theirs) == set(ours)
    assert not np.any(M.geom_contype) and not np.any(M.geom_conaffinity)  # no contacts besides the pairs
    for key, i in theirs.items():
        a, b = ours[key]
        ma, mb = geoms[a].material.mu_dynamic, geoms[b].material.mu_dynamic
        assert M.pair_friction[i, 0] == pytest.approx(2 * ma * mb / (ma + mb), rel=1e-12)
    assert M.neq == len(system.couplers)
    for k, c in enumerate(system.couplers):
        assert M.joint(M.eq_obj1id[k]).name == system.model.names[c.joint0]
        assert M.joint(M.eq_obj2id[k]).name == system.model.names[c.joint1]
        np.testing.assert_allclose(M.eq_data[k, :2], [c.offset, c.ratio])


def test_contact_results_carry_the_weight_of_a_resting_box():
    """A 2 kg box settles on the ground in MuJoCo: the contact forces on it (our convention: force on geometry B,
    normal from A to B) add up to its weight, φ is MuJoCo's distance, and the slip speed is ~0."""
    mat = ContactMaterial(stiffness=1e5, mu_static=0.8)
    b = SceneBuilder()
    b.add_ground(mat, name="ground")
    b.add_body("box", Box((0.2, 0.1, 0.1)), mass=2.0, position=(0.0, 0.0, 0.05), material=mat)
    system = b.build()
    mj = mm.MujocoModel(mm.build_spec(system, 1e-3), system)
    d = mujoco.MjData(mj.model)
    mj.set_state(d, system.q0, np.zeros(system.nv))
    mujoco.mj_step(mj.model, d, nstep=1000)
    cr = mj.contact_results(d)
    assert cr.n == 4
    on_box = sum((f if nb == "box/0" else -f) for f, nb in zip(cr.force, cr.names_b))
    np.testing.assert_allclose(on_box, [0.0, 0.0, 2.0 * 9.81], atol=1e-6 * 2 * 9.81)
    for n, na in zip(cr.normal, cr.names_a):  # from A to B: up when the ground is A
        np.testing.assert_allclose(n, [0, 0, 1] if na == "ground" else [0, 0, -1], atol=1e-9)
    np.testing.assert_allclose(cr.phi, d.contact.dist[:4])
    assert np.all(cr.slip_speed < 1e-6)


def test_unmapped_shapes_and_bad_options_name_the_value():
    with pytest.raises(mm.MappingError, match="no MuJoCo counterpart"):
        mm.geom_kind_size(object())
    b = SceneBuilder()
    b.add_ground(ContactMaterial(), name="ground")
    system = b.build()
    with pytest.raises(ValueError, match="integrator='verlet'"):
        mm.build_spec(system, 1e-3, integrator="verlet")
    with pytest.raises(ValueError, match="timestep must be"):
        mm.build_spec(system, -1.0)
