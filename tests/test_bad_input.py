"""Malformed model input fails at the entry point with a clear exception naming the bad value (issue 9, item 6).

One table: each row calls a public entry point (SceneBuilder, the shapes, ContactMaterial, add_robot with a small
URDF / MJCF / SRDF written into tmp_path) with one bad value and gives the exception it must raise and text the
message must contain. The kinds (cenic_gym.errors): TypeError for a wrong type, ValueError for a wrong shape or a
non-finite pose, ModelError (a ValueError) for a model that cannot be simulated: a mass, size, inertia or material
out of range, a flat mesh, a zero ground normal, joint limits lower > upper, a missing or malformed model file.
Never a raw AttributeError / ZeroDivisionError / Qhull error from deep inside, a crash, or silent acceptance.
"""
import numpy as np
import pinocchio as pin
import pytest
import scipy.spatial  # noqa: F401 - the hull checks' import (0.6 s) once here, not in the first mesh case

from cenic_gym import (Box, Capsule, ContactMaterial, ConvexMesh, Cylinder, HalfSpace, ModelError, SceneBuilder,
                       Sphere)

NAN, INF = float("nan"), float("inf")

# Two links on two revolute joints; every number can be replaced by a bad one.
URDF = """<robot name="r">
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
  </link>
  <link name="arm">
    <inertial><mass value="{mass}"/><inertia ixx="{ixx}" iyy="0.01" izz="0.01" ixy="{ixy}" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="{radius}"/></geometry></collision>
  </link>
  <link name="hand">
    <inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry>{hand}</geometry></collision>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.2"/>
    <axis xyz="{axis}"/><limit lower="{lower}" upper="{upper}" effort="{effort}" velocity="1"/>
    <dynamics damping="{damping}"/></joint>
  <joint name="j2" type="revolute"><parent link="arm"/><child link="hand"/><origin xyz="0 0 0.2"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>
"""
GOOD = dict(mass="1", ixx="0.01", ixy="0", radius="0.05", axis="0 0 1", lower="-1", upper="1", effort="10",
            damping="0.1", hand='<box size="0.05 0.05 0.05"/>')

MJCF = """<mujoco model="m"><compiler angle="radian"/><worldbody>
  <body name="b" pos="0 0 1"><joint name="j" type="hinge" axis="{axis}" range="{range}"/>
    <inertial pos="0 0 0" mass="{mass}" diaginertia="0.1 0.1 0.1"/>
    <geom name="g" type="sphere" size="0.1" mass="{gmass}"/></body></worldbody></mujoco>
"""
MJCF_GOOD = dict(axis="0 0 1", range="-1 1", mass="1", gmass="1")


def urdf(tmp, text=None, **bad):
    """Path of a URDF in tmp: the good two-joint robot with ``bad`` substituted (or ``text`` verbatim)."""
    p = tmp / "robot.urdf"
    p.write_text(URDF.format(**{**GOOD, **bad}) if text is None else text)
    return str(p)


def mjcf(tmp, **bad):
    p = tmp / "robot.xml"
    p.write_text(MJCF.format(**{**MJCF_GOOD, **bad}))
    return str(p)


def flat_mesh_urdf(tmp):
    """A URDF whose hand collides through a flat square mesh (two triangles in z = 0)."""
    obj = tmp / "flat.obj"
    obj.write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0.1 0.1 0\nf 1 2 3\nf 2 4 3\n")
    return urdf(tmp, hand=f'<mesh filename="{obj}"/>')


def srdf(tmp, text):
    p = tmp / "robot.srdf"
    p.write_text(text)
    return str(p)


def body(**kw):
    """add_body of a 10 cm ball with 1 kg, with ``kw`` replacing any argument."""
    args = dict(name="ball", shapes=Sphere(0.1), mass=1.0)
    args.update(kw)
    return SceneBuilder().add_body(**args)


def robot(tmp, **kw):
    return SceneBuilder().add_robot(urdf(tmp), **kw)


SQUARE = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]
NOT_A_ROTATION = [[2, 0, 0], [0, 2, 0], [0, 0, 2]]
MIRROR = [[1, 0, 0], [0, 1, 0], [0, 0, -1]]

CASES = [
    # -- ground --------------------------------------------------------------------------------------------------
    ("ground: zero normal", lambda t: SceneBuilder().add_ground(normal=(0, 0, 0)), ModelError, "normal=(0, 0, 0)"),
    ("ground: NaN normal", lambda t: SceneBuilder().add_ground(normal=(0, NAN, 1)), ValueError, "normal"),
    ("ground: normal of 2", lambda t: SceneBuilder().add_ground(normal=(0, 1)), ValueError, "(0, 1)"),
    ("ground: NaN height", lambda t: SceneBuilder().add_ground(height=NAN), ValueError, "height must be finite"),
    ("ground: text height", lambda t: SceneBuilder().add_ground(height="0"), TypeError, "height"),
    ("ground: text material", lambda t: SceneBuilder().add_ground("steel"), TypeError, "'steel'"),
    ("ground: name 0", lambda t: SceneBuilder().add_ground(name=0), TypeError, "ground name"),
    # -- rotations (quaternion xyzw, rpy, matrix) ---------------------------------------------------------------
    ("rotation: zero quaternion", lambda t: body(rotation=(0, 0, 0, 0)), ValueError, "(0, 0, 0, 0)"),
    ("rotation: NaN quaternion", lambda t: body(rotation=(0, 0, NAN, 1)), ValueError, "rotation must be finite"),
    ("rotation: infinite rpy", lambda t: body(rotation=(0, INF, 0)), ValueError, "inf"),
    ("rotation: scaled matrix", lambda t: body(rotation=NOT_A_ROTATION), ValueError, str(NOT_A_ROTATION)),
    ("rotation: mirror", lambda t: body(rotation=MIRROR), ValueError, ("determinant +1", str(MIRROR))),
    ("rotation: (2,) vector", lambda t: body(rotation=(1, 2)), ValueError, "(1, 2)"),
    ("rotation: text", lambda t: body(rotation="abc"), TypeError, ("rotation", "'abc'")),
    ("rotation: fixed zero quaternion", lambda t: SceneBuilder().add_fixed("w", Sphere(0.1), rotation=[0, 0, 0, 0]),
     ValueError, "[0, 0, 0, 0]"),
    ("rotation: robot zero quaternion", lambda t: robot(t, rotation=(0, 0, 0, 0)), ValueError, "(0, 0, 0, 0)"),
    # -- convex meshes ---------------------------------------------------------------------------------------------
    ("mesh: coplanar", lambda t: ConvexMesh(SQUARE), ModelError, ("ConvexMesh.vertices", "flat")),
    ("mesh: collinear", lambda t: ConvexMesh([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]]), ModelError, "flat"),
    ("mesh: repeated point", lambda t: ConvexMesh([[1, 2, 3]] * 5), ModelError, "5 points"),
    ("mesh: 1 nm thick", lambda t: ConvexMesh(SQUARE + [[0.5, 0.5, 1e-9]]), ModelError, "1e-09 m thick"),
    ("mesh: flat, as a body", lambda t: body(shapes=ConvexMesh(SQUARE)), ModelError, "flat"),
    ("mesh: 3 points", lambda t: ConvexMesh(np.zeros((3, 3))), ValueError, "(3, 3)"),
    ("mesh: text", lambda t: ConvexMesh("abc"), TypeError, "'abc'"),
    ("mesh: NaN vertex", lambda t: ConvexMesh(SQUARE + [[0, 0, NAN]]), ValueError, "vertex 4 = [0.0, 0.0, nan]"),
    # -- primitive shapes --------------------------------------------------------------------------------------------
    ("Sphere: text radius", lambda t: Sphere("0.1"), TypeError, ("Sphere.radius", "'0.1'")),
    ("Sphere: bool radius", lambda t: Sphere(True), TypeError, "True"),
    ("Sphere: 0-d array radius", lambda t: Sphere(np.array(-0.1)), ModelError, "array(-0.1)"),
    ("Box: zero side", lambda t: Box((0.1, 0.1, 0.0)), ModelError, "Box.lengths[2] must be finite and > 0, got 0.0"),
    ("Box: one number", lambda t: Box(0.1), ValueError, ("Box.lengths", "0.1")),
    ("Box: text", lambda t: Box("abc"), TypeError, "'abc'"),
    ("Capsule: NaN length", lambda t: Capsule(0.1, NAN), ModelError, ("Capsule.length", "nan")),
    ("Cylinder: None radius", lambda t: Cylinder(None, 0.1), TypeError, ("Cylinder.radius", "None")),
    # -- materials -----------------------------------------------------------------------------------------------
    ("material: mu_d > mu_s", lambda t: ContactMaterial(mu_static=0.3, mu_dynamic=0.5), ModelError,
     ("mu_dynamic=0.5", "mu_static=0.3")),
    ("material: text stiffness", lambda t: ContactMaterial(stiffness="1e5"), TypeError, "'1e5'"),
    ("material: bool stiffness", lambda t: ContactMaterial(stiffness=True), TypeError, "True"),
    ("material: zero stiffness", lambda t: ContactMaterial(stiffness=0.0), ModelError, "stiffness"),
    ("material: negative dissipation", lambda t: ContactMaterial(dissipation=-1.0), ModelError, "-1.0"),
    ("material: infinite friction", lambda t: ContactMaterial(mu_static=INF), ModelError, "inf"),
    # -- add_body / add_fixed arguments --------------------------------------------------------------------------
    ("body: shape as text", lambda t: body(shapes="sphere"), TypeError, "'sphere'"),
    ("body: name 3", lambda t: body(name=3), TypeError, ("body name", "3")),
    ("body: empty name", lambda t: body(name=""), ValueError, "''"),
    ("body: material as text", lambda t: body(material="steel"), TypeError, ("material", "'steel'")),
    ("body: position as text", lambda t: body(position="abc"), TypeError, ("position", "'abc'")),
    ("body: position of 2", lambda t: body(position=(0, 1)), ValueError, ("position", "(0, 1)")),
    ("body: NaN velocity", lambda t: body(velocity=(NAN, 0, 0)), ValueError, "velocity"),
    ("body: text angular velocity", lambda t: body(angular_velocity="w"), TypeError, "angular_velocity"),
    ("body: mass as text", lambda t: body(mass="1"), TypeError, ("mass", "'1'")),
    ("body: zero density", lambda t: body(mass=None, density=0.0), ModelError, ("density", "0.0")),
    ("body: mass and inertia", lambda t: body(inertia=pin.Inertia.FromSphere(1.0, 0.1)), ValueError,
     "not both"),
    ("body: inertia as text", lambda t: body(mass=None, inertia="I"), TypeError, "'I'"),
    ("body: negative inertia mass", lambda t: body(mass=None, inertia=pin.Inertia(-1.0, np.zeros(3), np.eye(3))),
     ModelError, "-1.0"),
    ("body: NaN centre of mass", lambda t: body(mass=None, inertia=pin.Inertia(1.0, np.array([NAN, 0, 0]), np.eye(3))),
     ValueError, "centre of mass"),
    ("body: flat inertia", lambda t: body(mass=None, inertia=pin.Inertia(1.0, np.zeros(3), np.diag([1, 1, 0.0]))),
     ModelError, "positive definite"),
    ("body: shape without placement", lambda t: body(shapes=[Sphere(0.1)]), TypeError, "shapes[0]"),
    ("body: placement as text", lambda t: body(shapes=[(Sphere(0.1), "X")]), TypeError, "'X'"),
    ("body: no shapes", lambda t: body(shapes=[]), ValueError, "[]"),
    ("body: half-space", lambda t: body(shapes=HalfSpace()), ValueError, "HalfSpace"),
    ("fixed: name 3", lambda t: SceneBuilder().add_fixed(3, Sphere(0.1)), TypeError, ("geometry name", "3")),
    ("fixed: shape as text", lambda t: SceneBuilder().add_fixed("w", "box"), TypeError, "'box'"),
    ("fixed: material as text", lambda t: SceneBuilder().add_fixed("w", Sphere(0.1), material="steel"), TypeError,
     "'steel'"),
    ("builder: gravity as text", lambda t: SceneBuilder(gravity="down"), TypeError, ("gravity", "'down'")),
    ("builder: zero stiction tolerance", lambda t: SceneBuilder(stiction_tolerance=0.0), ModelError,
     ("stiction_tolerance", "0.0")),
    # -- couplers and collision filters --------------------------------------------------------------------------
    ("coupler: float index", lambda t: robot(t).add_coupler(1.0, 2), TypeError, ("joint0", "1.0")),
    ("coupler: unknown joint", lambda t: robot(t).add_coupler("r/j1", "nope"), ValueError, ("joint1", "'nope'")),
    ("coupler: text ratio", lambda t: robot(t).add_coupler("r/j1", "r/j2", ratio="2"), TypeError, "'2'"),
    ("coupler: infinite offset", lambda t: robot(t).add_coupler("r/j1", "r/j2", offset=INF), ValueError, "inf"),
    ("disable_collision: indices", lambda t: SceneBuilder().add_ground().disable_collision(0, 1), TypeError,
     ("geom_a", "0")),
    ("disable_collision: unknown name", lambda t: SceneBuilder().add_ground().disable_collision("ground", "grund"),
     ValueError, "'grund'"),
    # -- robot files -----------------------------------------------------------------------------------------------
    ("urdf: negative mass", lambda t: SceneBuilder().add_robot(urdf(t, mass="-1")), ModelError,
     ("link 'arm'", "-1.0")),
    ("urdf: indefinite inertia", lambda t: SceneBuilder().add_robot(urdf(t, ixx="-0.5")), ModelError,
     ("link 'arm'", "positive semi-definite", "-0.5")),
    ("urdf: inertia off-diagonal too large", lambda t: SceneBuilder().add_robot(urdf(t, ixy="0.5")), ModelError,
     ("link 'arm'", "0.5")),
    ("urdf: lower > upper", lambda t: SceneBuilder().add_robot(urdf(t, lower="1", upper="-1")), ModelError,
     ("joint 'j1'", "1.0 > upper limit -1.0")),
    ("urdf: mass as text", lambda t: SceneBuilder().add_robot(urdf(t, mass="heavy")), ModelError,
     ("link 'arm'", "'heavy'")),
    ("urdf: NaN radius", lambda t: SceneBuilder().add_robot(urdf(t, radius="nan")), ModelError, "'nan'"),
    ("urdf: negative radius", lambda t: SceneBuilder().add_robot(urdf(t, radius="-0.05")), ModelError,
     ("'arm_0'", "-0.05")),
    ("urdf: negative effort", lambda t: SceneBuilder().add_robot(urdf(t, effort="-5")), ModelError,
     ("joint 'j1'", "-5.0")),
    ("urdf: negative damping", lambda t: SceneBuilder().add_robot(urdf(t, damping="-1")), ModelError,
     ("joint 'j1'", "-1.0")),
    ("urdf: zero axis", lambda t: SceneBuilder().add_robot(urdf(t, axis="0 0 0")), ModelError,
     ("joint 'j1'", "'0 0 0'")),
    ("urdf: two-number axis", lambda t: SceneBuilder().add_robot(urdf(t, axis="0 1")), ModelError, "'0 1'"),
    ("urdf: flat mesh", lambda t: SceneBuilder().add_robot(flat_mesh_urdf(t)), ModelError, ("'hand_0'", "flat")),
    ("urdf: missing file", lambda t: SceneBuilder().add_robot(str(t / "nope.urdf")), ModelError, "nope.urdf"),
    ("urdf: malformed XML", lambda t: SceneBuilder().add_robot(urdf(t, text='<robot name="r"><link name="a">')),
     ModelError, ("robot.urdf", "malformed XML")),
    ("urdf: not a URDF", lambda t: SceneBuilder().add_robot(urdf(t, text="<html/>")), ModelError, "robot.urdf"),
    ("srdf: missing file", lambda t: robot(t, srdf=str(t / "nope.srdf")), ModelError, "nope.srdf"),
    ("srdf: malformed XML", lambda t: robot(t, srdf=srdf(t, "<robot><group_state")), ModelError, "robot.srdf"),
    ("srdf: text joint value", lambda t: robot(t, q0="up", srdf=srdf(
        t, '<robot name="r"><group_state name="up" group="g"><joint name="j1" value="high"/></group_state></robot>')),
     ModelError, ("'up'", "'high'")),
    ("mjcf: negative mass", lambda t: SceneBuilder().add_robot(mjcf(t, mass="-1")), ModelError, ("body 'b'", "-1.0")),
    ("mjcf: negative geom mass", lambda t: SceneBuilder().add_robot(mjcf(t, gmass="-2")), ModelError,
     ("body 'b'", "-2.0")),
    ("mjcf: lower > upper", lambda t: SceneBuilder().add_robot(mjcf(t, range="1 -1")), ModelError,
     ("joint 'j'", "1.0 > upper limit -1.0")),
    ("mjcf: zero axis", lambda t: SceneBuilder().add_robot(mjcf(t, axis="0 0 0")), ModelError, "'0 0 0'"),
    # -- add_robot arguments -------------------------------------------------------------------------------------
    ("robot: 3", lambda t: SceneBuilder().add_robot(3), TypeError, ("robot", "3")),
    ("robot: name 5", lambda t: robot(t, name=5), TypeError, ("robot name", "5")),
    ("robot: name with /", lambda t: robot(t, name="a/b"), ValueError, "'a/b'"),
    ("robot: material as text", lambda t: robot(t, material="steel"), TypeError, "'steel'"),
    ("robot: position as text", lambda t: robot(t, position="abc"), TypeError, "'abc'"),
    ("robot: srdf 5", lambda t: robot(t, srdf=5), TypeError, ("srdf", "5")),
    ("robot: package_dirs 5", lambda t: robot(t, package_dirs=5), TypeError, ("package_dirs", "5")),
    ("robot: self_collision as text", lambda t: robot(t, self_collision="no"), TypeError, "'no'"),
    ("robot: exclude_links 5", lambda t: robot(t, exclude_links=5), TypeError, ("exclude_links", "5")),
    ("robot: armature as text", lambda t: robot(t, armature="a"), TypeError, "'a'"),
    ("robot: negative damping", lambda t: robot(t, damping={"j2": -1.0}), ModelError, ("'j2'", "-1.0")),
    ("robot: q0 value as text", lambda t: robot(t, q0={"j1": "up"}), TypeError, ("q0['j1']", "'up'")),
    ("robot: q0 as text array", lambda t: robot(t, q0=["a", "b"]), TypeError, ("q0", "['a', 'b']")),
]


@pytest.mark.timeout(5)
@pytest.mark.parametrize("fn, exc, texts", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_bad_input_raises_clearly(tmp_path, fn, exc, texts):
    with pytest.raises(exc) as e:
        fn(tmp_path)
    for text in (texts,) if isinstance(texts, str) else texts:
        assert text in str(e.value), (text, str(e.value))


def test_missing_model_file_is_also_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        SceneBuilder().add_robot(str(tmp_path / "nope.urdf"))


@pytest.mark.timeout(5)
def test_the_good_inputs_of_the_table_are_accepted(tmp_path):
    """The table's files and arguments with the bad value put back build a system (so each row fails for its one
    bad value); a ground facing down is the lower half-space turned over, not silently the upper one."""
    s = SceneBuilder().add_robot(urdf(tmp_path)).add_coupler("r/j1", "r/j2", ratio=2.0).build()
    assert (s.nq, len(s.couplers)) == (2, 1)
    s = SceneBuilder().add_robot(mjcf(tmp_path)).build()
    assert s.nq == 1
    body(rotation=(0, 0, 0, 2.0), shapes=ConvexMesh(SQUARE + [[0.5, 0.5, 1.0]]))
    ground = SceneBuilder().add_ground(normal=(0, 0, -3)).geometries[0]
    np.testing.assert_allclose(ground.placement.rotation[:, 2], [0, 0, -1], atol=1e-15)
