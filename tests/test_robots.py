"""Robots from model files: example-robot-data lookup, presets, limits, collision geometry, couplers, smoke runs."""
import numpy as np
import pinocchio as pin
import pytest

from cenic_gym import (Box, Capsule, ContactMaterial, ConvexMesh, Cylinder, SceneBuilder, Simulator, Sphere,
                       robots)
from cenic_gym.model import JOINT_ROOT_FREE, is_free_body_joint

PRIMITIVES = (Sphere, Box, Capsule, Cylinder, ConvexMesh)


def build(preset, ground=True, **kw):
    b = SceneBuilder()
    if ground:
        b.add_ground(ContactMaterial(stiffness=1e5, dissipation=1.0, mu_static=0.8))
    b.add_robot(preset, **kw)
    return b.build()


def reference_model(preset, free=False):
    """The robot's own Pinocchio model and collision GeometryModel, straight from the file."""
    path = str(robots.PRESETS[preset].urdf_path())
    R = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free else pin.buildModelFromUrdf(path)
    G = pin.buildGeomFromUrdf(R, path, pin.COLLISION, package_dirs=[str(robots.package_share_dir())])
    return R, G


def joint_q(system, robot, joint):
    return system.robot_q_indices(robot, [joint])[0]


# -- locating files ---------------------------------------------------------------------------------------------


def test_example_robot_data_is_found():
    root = robots.example_robot_data_dir()
    assert root.is_dir() and root.name == "robots"
    assert (robots.package_share_dir() / "example-robot-data" / "robots").is_dir()
    assert robots.robot_file("panda_description", "urdf/panda.urdf").is_file()
    for preset in robots.PRESETS.values():
        assert preset.urdf_path().is_file()
        assert preset.srdf is None or preset.srdf_path().is_file()


def test_missing_package_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(robots, "_candidate_dirs", lambda: [tmp_path / "nowhere"])
    robots.example_robot_data_dir.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="pip install example-robot-data"):
            robots.example_robot_data_dir()
        with pytest.raises(FileNotFoundError, match="pip install example-robot-data"):
            SceneBuilder().add_robot("panda")
    finally:
        monkeypatch.undo()
        robots.example_robot_data_dir.cache_clear()
    assert robots.example_robot_data_dir().is_dir()


def test_missing_files_are_named():
    with pytest.raises(FileNotFoundError, match="nope.urdf.*panda.urdf"):
        robots.robot_file("panda_description", "urdf/nope.urdf")
    with pytest.raises(FileNotFoundError, match="no robot package 'nope_description'"):
        robots.robot_file("nope_description", "urdf/x.urdf")
    with pytest.raises(FileNotFoundError, match="/no/such/robot.urdf.*presets"):
        SceneBuilder().add_robot("/no/such/robot.urdf")
    with pytest.raises(FileNotFoundError, match="SRDF"):
        SceneBuilder().add_robot("panda", srdf="/no/such.srdf")


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="base.*'floating'"):
        SceneBuilder().add_robot("panda", base="floating")
    with pytest.raises(ValueError, match="q0 must be"):
        SceneBuilder().add_robot("panda", q0=np.zeros(3))
    with pytest.raises(ValueError, match="no group_state 'nope'"):
        SceneBuilder().add_robot("panda", q0="nope")
    with pytest.raises(ValueError, match="no joint 'elbow'"):
        SceneBuilder().add_robot("panda", q0={"elbow": 0.0})
    with pytest.raises(ValueError, match="exclude_links.*'hand'"):
        SceneBuilder().add_robot("panda", exclude_links=["hand"])
    with pytest.raises(ValueError, match="armature"):
        SceneBuilder().add_robot("panda", armature=-1.0)
    b = SceneBuilder().add_robot("panda")
    with pytest.raises(ValueError, match="already exists"):
        b.add_robot("panda")
    for kw in (dict(q0="crouching"), dict(damping={"nope": 1.0}), dict(exclude_links=["nope"])):
        with pytest.raises(ValueError):
            b.add_robot("go1", **kw)
    assert b.model.nq == 9 and len(b.geometries) == 17 and len(b.q0) == 1  # failed calls leave no trace
    assert b.build().nq == 9
    with pytest.raises(ValueError, match="1-DOF"):
        SceneBuilder().add_robot("go1").add_coupler("go1/root_joint", "go1/FL_hip_joint")


# -- the three robots -----------------------------------------------------------------------------------------


def test_panda_model():
    s = build("panda", position=(0.1, 0.2, 0.0), rotation=(0.0, 0.0, 0.3))
    info = s.robot("panda")
    assert (s.nq, s.nv) == (9, 9) and info.base == "fixed" and info.base_joint == 0
    assert len(info.joints) == 9 and info.joints[-2:] == ("panda_finger_joint1", "panda_finger_joint2")
    m = s.model
    i4, if1 = joint_q(s, "panda", "panda_joint4"), joint_q(s, "panda", "panda_finger_joint1")
    assert (m.lowerPositionLimit[i4], m.upperPositionLimit[i4]) == (-3.0718, -0.0698)
    assert (m.lowerPositionLimit[if1], m.upperPositionLimit[if1]) == (0.0, 0.04)
    v = s.robot_v_indices("panda")
    np.testing.assert_array_equal(m.effortLimit[v], [87, 87, 87, 87, 12, 12, 12, 100, 100])
    np.testing.assert_array_equal(m.velocityLimit[v][:4], 2.175)
    np.testing.assert_array_equal(m.damping[v], [0.003] * 7 + [0.3] * 2)
    # default configuration: the SRDF's "default" group state; the mimic finger follows finger 1
    np.testing.assert_allclose(s.q0, [0, -0.785398, 0, -2.35619, 0, 1.5707, 0.785398, 0.001, 0.001])
    assert np.all(s.v0 == 0)
    # the limit pool sees all 9 joints; the usual joint helpers take the prefixed names
    assert len(s.limit_q) == 9
    assert s.q_slice("panda/panda_joint4") == slice(3, 4) and s.v_slice("panda/panda_finger_joint2") == slice(8, 9)
    assert s.joint_id("panda/panda_joint1") == info.joint_ids[0]
    # frames are kept, prefixed, and the base pose is applied
    d = m.createData()
    pin.framesForwardKinematics(m, d, s.q0)
    X = d.oMf[s.frame_id("panda/panda_link0")]
    np.testing.assert_allclose(X.translation, [0.1, 0.2, 0.0], atol=1e-12)
    np.testing.assert_allclose(X.rotation, pin.rpy.rpyToMatrix(np.array([0.0, 0.0, 0.3])), atol=1e-12)


def test_panda_coupler_arrays():
    b = SceneBuilder().add_robot("panda")
    s = b.build()
    f1 = joint_q(s, "panda", "panda_finger_joint1")
    f2 = joint_q(s, "panda", "panda_finger_joint2")
    np.testing.assert_array_equal(s.coupler_q0, [f2])
    np.testing.assert_array_equal(s.coupler_q1, [f1])
    np.testing.assert_array_equal(s.coupler_v0, s.robot_v_indices("panda", ["panda_finger_joint2"]))
    np.testing.assert_array_equal(s.coupler_v1, s.robot_v_indices("panda", ["panda_finger_joint1"]))
    np.testing.assert_array_equal(s.coupler_ratio, [1.0])
    np.testing.assert_array_equal(s.coupler_offset, [0.0])
    for a in (s.coupler_q0, s.coupler_v0, s.coupler_q1, s.coupler_v1):
        assert a.dtype == np.int64
    assert s.coupler_ratio.dtype == np.float64 and s.coupler_offset.dtype == np.float64
    # a code-defined coupler next to the file's; q0 of a driven joint follows its source unless given
    s2 = SceneBuilder().add_robot("panda", q0={"panda_finger_joint1": 0.03}).add_coupler(
        "panda/panda_joint7", "panda/panda_joint5", ratio=-0.5, offset=0.1).build()
    assert s2.q0[f2] == pytest.approx(0.03)
    np.testing.assert_allclose(s2.coupler_ratio, [1.0, -0.5])
    np.testing.assert_allclose(s2.coupler_offset, [0.0, 0.1])
    # no couplers: empty arrays of the right type
    s3 = SceneBuilder().add_robot("go1").build()
    assert s3.coupler_q0.shape == (0,) and s3.coupler_q0.dtype == np.int64 and s3.coupler_ratio.dtype == np.float64


def test_panda_collision_geometry_and_srdf_filter():
    s = build("panda")
    robot_geoms = [g for g in s.geometries if g.name.startswith("panda/")]
    assert len(robot_geoms) == 17
    assert all(isinstance(g.shape, PRIMITIVES) for g in robot_geoms)
    meshes = [g for g in robot_geoms if isinstance(g.shape, ConvexMesh)]
    assert len(meshes) == 9 and sum(isinstance(g.shape, Box) for g in robot_geoms) == 8
    for g in meshes:
        n = len(g.shape.vertices)
        assert 20 <= n <= 500, (g.name, n)
        ext = np.ptp(g.shape.vertices, axis=0)
        assert np.all(ext > 0.03) and np.all(ext < 0.4), (g.name, ext)
    names = {(s.geometries[a].name, s.geometries[b].name) for a, b in s.pairs}
    names |= {(b, a) for a, b in names}
    # SRDF <disable_collisions>: adjacent and never-colliding links
    for a, b in [("panda_hand_0", "panda_leftfinger_0"), ("panda_link1_0", "panda_link2_0"),
                 ("panda_leftfinger_3", "panda_rightfinger_3"), ("panda_link5_0", "panda_link7_0"),
                 ("panda_link3_0", "panda_rightfinger_2")]:
        a, b = f"panda/{a}", f"panda/{b}"
        assert (a, b) not in names and ((a, b) in s.disabled_pairs or (b, a) in s.disabled_pairs), (a, b)
    # pairs the SRDF leaves enabled
    assert ("panda/panda_link1_0", "panda/panda_link5_0") in names
    assert ("panda/panda_link2_0", "panda/panda_hand_0") in names
    assert ("ground", "panda/panda_hand_0") in names
    # the base link is welded to the world: it never meets the (also static) ground
    assert ("ground", "panda/panda_link0_0") not in names


def test_allegro_model():
    s = build("allegro", position=(0.0, 0.0, 0.3))
    info = s.robot("allegro")
    assert (s.nq, s.nv) == (16, 16) and len(info.joints) == 16
    m = s.model
    i12 = joint_q(s, "allegro", "joint_12.0")
    assert (m.lowerPositionLimit[i12], m.upperPositionLimit[i12]) == (0.263, 1.396)
    assert s.q0[i12] == 0.263  # neutral 0 clipped to the lower limit
    np.testing.assert_array_equal(m.effortLimit[info.v_indices], 15.0)
    geoms = [g for g in s.geometries if g.name.startswith("allegro/")]
    assert len(geoms) == 21
    assert sum(isinstance(g.shape, Box) for g in geoms) == 17
    assert sum(isinstance(g.shape, Sphere) for g in geoms) == 4
    # no SRDF: parent/child links and pairs touching at the neutral pose are disabled
    assert ("allegro/palm_link_0", "allegro/link_0.0_0") in s.disabled_pairs
    assert ("allegro/palm_link_0", "allegro/link_13.0_0") in s.disabled_pairs  # overlap at neutral
    names = {(s.geometries[a].name, s.geometries[b].name) for a, b in s.pairs}
    assert ("allegro/link_3.0_0", "allegro/link_7.0_0") in names  # neighbouring fingertips can touch


def test_go1_model():
    s = build("go1", position=(0.0, 0.0, 0.5), rotation=(0.0, 0.0, 0.5))
    info = s.robot("go1")
    assert (s.nq, s.nv) == (19, 18) and info.base == "free"
    j = info.base_joint
    assert is_free_body_joint(s.model.joints[j]) and s.joint_kind[j] == JOINT_ROOT_FREE
    assert s.model.names[j] == "go1/root_joint"
    np.testing.assert_allclose(s.q0[:3], [0.0, 0.0, 0.5])
    np.testing.assert_allclose(s.q0[3:7], pin.Quaternion(pin.rpy.rpyToMatrix(np.array([0, 0, 0.5]))).coeffs())
    assert len(info.joints) == 12 and len(info.v_indices) == 12
    ic = joint_q(s, "go1", "FL_calf_joint")
    assert (s.model.lowerPositionLimit[ic], s.model.upperPositionLimit[ic]) == (-2.818, -0.888)
    assert s.q0[ic] == -1.853  # SRDF "standing"
    assert s.model.effortLimit[s.robot_v_indices("go1", ["FL_calf_joint"])][0] == 35.55
    # the trunk's mass rides on the free base (URDF root link + fixed children)
    R, _ = reference_model("go1", free=True)
    assert s.model.inertias[j].mass == pytest.approx(R.inertias[1].mass)
    assert sum(i.mass for i in s.model.inertias) == pytest.approx(sum(i.mass for i in R.inertias))
    geoms = [g for g in s.geometries if g.name.startswith("go1/")]
    # 38 in the file, less the 9 placeholder 1 mm boxes of the sensor links (preset default)
    assert len(geoms) == 29 and all(isinstance(g.shape, (Box, Cylinder, Sphere)) for g in geoms)
    assert not any("camera" in g.name or "imu" in g.name for g in geoms)
    assert len(build("go1", ground=False, exclude_links=()).geometries) == 38
    feet = [g for g in geoms if "foot" in g.name]
    assert len(feet) == 4 and all(g.shape == Sphere(0.02) for g in feet)
    # body pose helpers work on the robot's base
    sim = Simulator(s)
    p, Rb = sim.body_pose("go1/root_joint")
    np.testing.assert_allclose(p, [0, 0, 0.5])


@pytest.mark.parametrize("preset", ["panda", "panda_primitives", "allegro", "go1"])
def test_geometry_poses_match_pinocchio(preset):
    """Our geometry placements (joint frame) reproduce Pinocchio's oMg, base pose included, at a random q."""
    free = robots.PRESETS[preset].base == "free"
    pos, rpy = np.array([0.3, -0.2, 0.5]), np.array([0.1, -0.2, 0.7])
    s = build(preset, ground=False, position=pos, rotation=rpy, fuse_capsules=False, exclude_links=())
    R, G = reference_model(preset, free=free)
    info = s.robot(preset)
    rng = np.random.default_rng(0)
    q = s.q0.copy()
    lo, hi = s.model.lowerPositionLimit[info.q_indices], s.model.upperPositionLimit[info.q_indices]
    q[info.q_indices] = lo + rng.random(len(lo)) * (hi - lo)
    d = s.model.createData()
    pin.forwardKinematics(s.model, d, q)
    dR, gd = R.createData(), pin.GeometryData(G)
    pin.updateGeometryPlacements(R, dR, G, gd, q)  # same q layout (FreeFlyer q = [p, quat xyzw] too)
    Xb = pin.SE3.Identity() if free else pin.SE3(pin.rpy.rpyToMatrix(rpy), pos)
    assert len(s.geometries) == G.ngeoms
    for g, ref in zip(s.geometries, gd.oMg):
        X = d.oMi[g.joint] * g.placement
        np.testing.assert_allclose(X.homogeneous, (Xb * ref).homogeneous, atol=1e-12)
    # convex hulls keep the mesh's extent
    for g, go in zip(s.geometries, G.geometryObjects):
        if isinstance(g.shape, ConvexMesh):
            go.geometry.computeLocalAABB()
            np.testing.assert_allclose(g.shape.vertices.min(0), go.geometry.aabb_local.min_, atol=1e-12)
            np.testing.assert_allclose(g.shape.vertices.max(0), go.geometry.aabb_local.max_, atol=1e-12)


def _preset_system(preset):
    """A robot preset on a free, tilted base (the suction gripper: its own free-base scene)."""
    from cenic_gym.suction import add_suction_gripper, gripper_urdf_path

    if preset == "suction":
        return add_suction_gripper(SceneBuilder(), urdf=gripper_urdf_path(2, 2, yaw=True), base="free").build()
    return build(preset, ground=False, position=np.array([0.3, -0.2, 0.5]), rotation=np.array([0.1, -0.2, 0.7]))


@pytest.mark.parametrize("preset", ["panda", "allegro", "go1", "suction"])
def test_one_dof_joint_poses_in_numba_equal_pinocchio(preset):
    """joint_poses_from_q computes the revolute (x, y, z, unaligned) and prismatic (y, z, unaligned) joints of the
    robots from q: the same world poses as Pinocchio's forward kinematics, bit for bit (so moving them out of
    ``ContactQuery.sync_joint_poses`` leaves trajectories unchanged), at random q with a free base whose
    quaternion is not exactly unit (Pinocchio does not normalise it; the base's own pose is normalised)."""
    from cenic_gym.contact import ContactQuery
    from cenic_gym.kinematics import joint_poses_from_q
    from cenic_gym.model import JOINT_REVOLUTE_X

    s = _preset_system(preset)
    m = s.model
    kinds = {m.joints[j].shortname() for j in range(1, m.njoints) if s.joint_kind[j] >= JOINT_REVOLUTE_X}
    assert not s.general_joints, [m.joints[j].shortname() for j in s.general_joints]
    query = ContactQuery(s)
    args = query.kernel_args
    d = m.createData()
    rng = np.random.default_rng(1)
    for _ in range(50):
        q = s.q0 + 0.5 * rng.standard_normal(m.nq)
        for j in range(1, m.njoints):
            if s.joint_kind[j] == JOINT_ROOT_FREE:
                i = m.idx_qs[j]
                q[i + 3:i + 7] *= (1.0 + 1e-9 * rng.standard_normal()) / np.linalg.norm(q[i + 3:i + 7])
        pin.forwardKinematics(m, d, q)
        joint_poses_from_q(q, args[0], args[1], args[39], args[40], args[41], args[42], query.joint_R, query.joint_p)
        for j in range(1, m.njoints):
            R, p = d.oMi[j].rotation, d.oMi[j].translation
            tol = 1e-8 if s.joint_kind[j] == JOINT_ROOT_FREE else 1e-12  # |quaternion| = 1 ± 1e-9: normalised here
            np.testing.assert_allclose(query.joint_R[j], R, rtol=0, atol=tol)
            np.testing.assert_allclose(query.joint_p[j], p, rtol=0, atol=tol)
            if s.joint_kind[j] >= JOINT_REVOLUTE_X:
                assert np.array_equal(query.joint_R[j], R) and np.array_equal(query.joint_p[j], p), \
                    (m.names[j], query.joint_R[j] - R, query.joint_p[j] - p)
    expected = {"panda": {"JointModelRZ", "JointModelPY", "JointModelPrismaticUnaligned"},
                "allegro": {"JointModelRZ", "JointModelRY", "JointModelRevoluteUnaligned"},
                "go1": {"JointModelRX", "JointModelRY"},
                "suction": {"JointModelPX", "JointModelPY", "JointModelPZ", "JointModelRZ"}}[preset]
    assert expected <= kinds


def test_cylinder_with_end_spheres_becomes_a_capsule():
    """panda_collision.urdf models each link as a cylinder + a sphere on each end: one capsule each."""
    import coal

    from cenic_gym import narrowphase as nph

    fused = build("panda_primitives", ground=False)
    plain = build("panda_primitives", ground=False, fuse_capsules=False)
    caps = [g for g in fused.geometries if isinstance(g.shape, Capsule)]
    assert len(caps) == len(fused.geometries) == 13 and len(plain.geometries) == 39
    assert len(fused.pairs) < len(plain.pairs) / 4
    by_name = {g.name: i for i, g in enumerate(plain.geometries)}
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = fused.q0.copy()
        info = fused.robot("panda_primitives")
        lo, hi = fused.model.lowerPositionLimit[info.q_indices], fused.model.upperPositionLimit[info.q_indices]
        q[info.q_indices] = lo + rng.random(len(lo)) * (hi - lo)
        d = fused.model.createData()
        pin.forwardKinematics(fused.model, d, q)
        n = rng.normal(size=3)
        plane = coal.Halfspace(n / np.linalg.norm(n), -2.0)

        def dist(system, i):
            g = system.geometries[i]
            X = d.oMi[g.joint] * g.placement
            res = coal.DistanceResult()
            coal.distance(system.coal_shapes[i], nph._transform(X.rotation, X.translation), plane,
                          coal.Transform3s(), coal.DistanceRequest(), res)
            return res.min_distance

        for i, g in enumerate(fused.geometries):
            base, k = g.name.rsplit("_", 1)
            union = min(dist(plain, by_name[f"{base}_{int(k) + o}"]) for o in range(3))
            assert dist(fused, i) == pytest.approx(union, abs=2e-4), g.name


def test_mesh_scale_is_applied_once(tmp_path):
    mesh = robots.robot_file("panda_description", "meshes/collision/link1.stl")
    link = ('<link name="a"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" '
            'iyz="0"/></inertial><collision><geometry><mesh filename="file://{}" scale="{}"/></geometry></collision>'
            '</link>')
    verts = []
    for scale in ("1 1 1", "2 1 0.5"):
        f = tmp_path / "m.urdf"
        f.write_text(f'<robot name="m">{link.format(mesh, scale)}</robot>')
        s = SceneBuilder().add_robot(str(f), base="free").build()
        verts.append(s.geometries[0].shape.vertices)
    np.testing.assert_allclose(np.ptp(verts[1], axis=0), np.ptp(verts[0], axis=0) * [2, 1, 0.5], rtol=1e-12)


def test_q0_armature_and_self_collision_options():
    s = SceneBuilder().add_robot("panda", q0=np.full(9, 10.0), armature=0.1, damping={"panda_joint1": 2.0}).build()
    m = s.model
    np.testing.assert_allclose(s.q0, m.upperPositionLimit)  # clipped
    np.testing.assert_allclose(m.armature, 0.1)
    assert m.damping[0] == 2.0 and m.damping[1] == 0.003
    M1 = pin.crba(m, m.createData(), s.q0)
    s0 = SceneBuilder().add_robot("panda", q0=np.full(9, 10.0)).build()
    M0 = pin.crba(s0.model, s0.model.createData(), s0.q0)
    np.testing.assert_allclose(np.diag(M1 - M0), 0.1, atol=1e-12)  # crba adds the armature to the diagonal
    s1 = build("go1", self_collision=False)
    assert all(s1.geometries[a].name == "ground" for a, _ in s1.pairs)


def test_two_robots_and_bodies_in_one_scene():
    b = SceneBuilder().add_ground()
    b.add_robot("panda", name="left", position=(0, 0.5, 0))
    b.add_robot("panda", name="right", position=(0, -0.5, 0))
    b.add_body("cube", Box((0.05, 0.05, 0.05)), mass=0.1, position=(0.5, 0, 0.025))
    s = b.build()
    assert s.nq == 9 + 9 + 7
    assert s.q_slice("cube") == slice(18, 25)
    np.testing.assert_array_equal(s.robot_q_indices("right"), np.arange(9, 18))
    np.testing.assert_array_equal(s.coupler_q0, [8, 17])
    names = {(s.geometries[a].name, s.geometries[b].name) for a, b in s.pairs}
    assert ("left/panda_hand_0", "right/panda_hand_0") in names  # the SRDF filter is per robot


def test_mjcf_robot(tmp_path):
    f = tmp_path / "arm.xml"
    f.write_text("""<mujoco model="arm"><compiler angle="radian"/><worldbody>
      <body name="base" pos="0 0 0.1"><geom name="base" type="box" size="0.05 0.05 0.05" mass="1"/>
        <body name="link1" pos="0 0 0.1">
          <joint name="j1" type="hinge" axis="0 1 0" range="-1 1" damping="0.5" armature="0.01"/>
          <geom name="l1" type="capsule" fromto="0 0 0 0 0 0.2" size="0.02" mass="0.5"/>
          <body name="f1" pos="0 0.03 0.25"><joint name="s1" type="slide" axis="0 1 0" range="0 0.04"/>
            <geom name="f1" type="box" size="0.01 0.01 0.02" mass="0.05"/></body>
          <body name="f2" pos="0 -0.03 0.25"><joint name="s2" type="slide" axis="0 -1 0" range="0 0.04"/>
            <geom name="f2" type="sphere" size="0.01" mass="0.05"/></body>
        </body></body></worldbody>
      <equality><joint joint1="s2" joint2="s1" polycoef="0.001 2 0 0 0"/></equality></mujoco>""")
    s = SceneBuilder().add_ground().add_robot(str(f)).build()
    assert (s.nq, s.nv) == (3, 3)
    assert s.model.lowerPositionLimit[0] == -1.0 and s.model.armature[0] == 0.01 and s.model.damping[0] == 0.5
    assert [type(g.shape) for g in s.geometries[1:]] == [Box, Capsule, Box, Sphere]
    assert s.geometries[2].shape == Capsule(0.02, 0.2)
    np.testing.assert_array_equal(s.coupler_q0, [2])
    np.testing.assert_array_equal(s.coupler_q1, [1])
    np.testing.assert_allclose([s.coupler_ratio[0], s.coupler_offset[0]], [2.0, 0.001])
    cube = tmp_path / "cube.xml"
    cube.write_text('<mujoco><worldbody><body name="cube" pos="0 0 0.5"><freejoint name="free"/>'
                    '<geom type="box" size="0.05 0.05 0.05" mass="1"/></body></worldbody></mujoco>')
    with pytest.raises(ValueError, match="base='free'"):
        SceneBuilder().add_robot(str(cube))
    s = SceneBuilder().add_robot(str(cube), base="free", position=(1, 0, 0)).build()
    np.testing.assert_allclose(s.q0, [1, 0, 0.5, 0, 0, 0, 1])
    assert s.joint_kind[1] == JOINT_ROOT_FREE


# -- physics smoke tests (the engine without controllers) -------------------------------------------------------


def test_go1_free_fall_moves_as_one_body():
    s = SceneBuilder().add_robot("go1", position=(0.0, 0.0, 0.5)).build()
    sim = Simulator(s, accuracy=1e-3)
    sim.advance_to(0.2)
    np.testing.assert_allclose(sim.v[:3], [0.0, 0.0, -9.81 * 0.2], atol=1e-9)
    np.testing.assert_allclose(sim.v[3:], 0.0, atol=1e-9)
    np.testing.assert_allclose(sim.q[7:], s.q0[7:], atol=1e-9)  # no joint motion without contact


def test_go1_drop_smoke():
    s = build("go1", position=(0.0, 0.0, 0.5))
    sim = Simulator(s, accuracy=1e-3)
    sim.advance_to(0.3)
    q = sim.q
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(sim.v))
    assert 0.0 < q[2] < 0.5  # the base fell and ended above the ground
    assert sim.stats.min_signed_distance > -0.02


def test_panda_gravity_smoke():
    s = build("panda")
    sim = Simulator(s, accuracy=1e-3)
    sim.advance_to(0.2)
    q = sim.q
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(sim.v))
    lo, hi = s.model.lowerPositionLimit, s.model.upperPositionLimit
    assert np.all(q > lo - 0.05) and np.all(q < hi + 0.05)  # sagging, held by the joint limits


@pytest.mark.parametrize("preset", ["panda", "allegro", "go1", "suction"])
def test_one_pinocchio_pass_gives_the_jacobians_of_compute_kinematics(preset):
    """compute_kinematics_and_inertia (pin.crba in the WORLD convention) leaves the same joint poses and world joint
    Jacobians as computeJointJacobians, bit for bit, and an M(q) equal to the LOCAL convention's to round-off."""
    from cenic_gym.contact import compute_kinematics, compute_kinematics_and_inertia

    s = _preset_system(preset)
    m = s.model
    d1, d2 = m.createData(), m.createData()
    rng = np.random.default_rng(2)
    iu = np.triu_indices(m.nv)
    for _ in range(10):
        q = pin.randomConfiguration(m, -np.ones(m.nq), np.ones(m.nq)) if preset != "go1" else \
            s.q0 + 0.3 * rng.standard_normal(m.nq)
        q = pin.normalize(m, q)
        J1 = compute_kinematics(m, d1, q).copy()
        M1 = pin.crba(m, d1, q).copy()
        J2, M2 = compute_kinematics_and_inertia(m, d2, q)
        assert J2.shape == (6, m.nv) and np.array_equal(J1, J2)
        for j in range(1, m.njoints):
            assert np.array_equal(d1.oMi[j].homogeneous, d2.oMi[j].homogeneous)
        np.testing.assert_allclose(M2[iu], M1[iu], rtol=1e-13, atol=1e-13 * np.abs(M1).max())
