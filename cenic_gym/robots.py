"""Robots from model files: the ``example-robot-data`` package, presets, URDF/SRDF/MJCF helpers.

The PyPI package ``example-robot-data`` (a cmeel wheel) installs its files under
``<site-packages>/cmeel.prefix/share/example-robot-data/robots/<package>/...``; meshes are referenced as
``package://example-robot-data/robots/...``, so the mesh package root for Pinocchio's ``package_dirs`` is
``<site-packages>/cmeel.prefix/share``.

    from cenic_gym.robots import robot_file, PRESETS
    robot_file("panda_description", "urdf/panda.urdf")      # -> Path
    SceneBuilder().add_robot("panda")                       # preset: URDF + SRDF + default pose

The conversion of collision geometry (coal primitives and meshes -> our shapes) and the small XML parsers
(URDF ``<mimic>``, SRDF ``<disable_collisions>`` / ``<group_state>``, MJCF ``<equality><joint>`` /
``<contact><exclude>``) live here, and so do the checks of a model file before Pinocchio reads it (:func:`check_urdf`,
:func:`check_mjcf`; Pinocchio drops what it cannot parse or accepts negative masses silently) and the merging of a
robot into a scene (:func:`add_robot`, called by :meth:`cenic_gym.builder.SceneBuilder.add_robot`). A missing file or
a model that cannot be simulated raises :class:`~cenic_gym.errors.ModelError` naming the file, link or joint and value.
"""
from __future__ import annotations

import functools
import math
import os
import site
import sys
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from . import narrowphase as nph
from .errors import ModelError, ModelFileNotFoundError, RobotDataNotFoundError
from .model import (Box, Capsule, ContactMaterial, ConvexMesh, Cylinder, Geometry, RobotInfo, Sphere, _check_inertia,
                    _convex_hull, _material, _name, _nonnegative, _numbers, _rotation, _vec3, free_body_joint,
                    is_free_body_joint)

ERD_PACKAGE = "example-robot-data"
_ROBOTS_SUBDIR = Path("cmeel.prefix") / "share" / "example-robot-data" / "robots"
ENV_VAR = "CENIC_EXAMPLE_ROBOT_DATA"  # optional override: the .../example-robot-data/robots directory


# --------------------------------------------------------------------------------------------------------------
# Locating example-robot-data
# --------------------------------------------------------------------------------------------------------------


def _candidate_dirs():
    """Directories that may hold ``example-robot-data/robots``, most specific first."""
    cands = []
    env = os.environ.get(ENV_VAR)
    if env:
        cands.append(Path(env))
    try:  # the installed distribution's own record (pip, uv, ...)
        from importlib import metadata

        dist = metadata.distribution(ERD_PACKAGE)
        cands.append(Path(dist.locate_file(_ROBOTS_SUBDIR)))
    except Exception:  # noqa: BLE001 - not installed, or an odd installer: fall back to scanning
        pass
    roots = []
    try:
        roots += list(site.getsitepackages())
    except AttributeError:  # pragma: no cover - some virtualenvs
        pass
    try:
        roots.append(site.getusersitepackages())
    except AttributeError:  # pragma: no cover
        pass
    roots += [p for p in sys.path if p]
    for r in roots:
        cands.append(Path(r) / _ROBOTS_SUBDIR)
    # conda / ROS style installs: <prefix>/share/example-robot-data/robots
    for prefix in (sys.prefix, os.environ.get("CONDA_PREFIX")):
        if prefix:
            cands.append(Path(prefix) / "share" / "example-robot-data" / "robots")
    return cands


@functools.lru_cache(maxsize=None)
def example_robot_data_dir() -> Path:
    """The ``.../example-robot-data/robots`` directory of the installed ``example-robot-data`` package.

    Raises :class:`RobotDataNotFoundError` (a FileNotFoundError) saying how to install it when it is missing."""
    seen = []
    for c in _candidate_dirs():
        if c in seen:
            continue
        seen.append(c)
        if c.is_dir() and any(c.glob("*_description")):
            return c.resolve()
    raise RobotDataNotFoundError(
        f"the robot model files of the '{ERD_PACKAGE}' package were not found (looked in {len(seen)} places, "
        f"e.g. {', '.join(str(s) for s in seen[:3])}). Install them with:  pip install {ERD_PACKAGE}  "
        f"(or point the {ENV_VAR} environment variable at its .../example-robot-data/robots directory)")


def package_share_dir() -> Path:
    """Mesh package root for ``package_dirs``: ``package://example-robot-data/...`` resolves below it."""
    return example_robot_data_dir().parent.parent


def robot_file(package, relpath) -> Path:
    """Path of a file of the example-robot-data package, e.g. ``robot_file("go1_description", "urdf/go1.urdf")``."""
    root = example_robot_data_dir()
    path = root / package / relpath
    if not path.is_file():
        pkg = root / package
        if not pkg.is_dir():
            known = sorted(p.name for p in root.iterdir() if p.is_dir())
            raise RobotDataNotFoundError(f"example-robot-data has no robot package {package!r} (in {root}); "
                                         f"known: {known}")
        files = sorted(str(p.relative_to(pkg)) for p in pkg.rglob("*") if p.suffix.lower() in (".urdf", ".srdf",
                                                                                             ".xml", ".sdf"))
        raise RobotDataNotFoundError(f"no file {relpath!r} in example-robot-data package {package!r} ({pkg}); "
                                     f"model files there: {files}")
    return path


# --------------------------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RobotPreset:
    """A robot of example-robot-data with the files and defaults we use.

    q0: name of an SRDF ``<group_state>`` used as the default initial configuration (None: neutral, clipped).
    exclude_links: links whose collision geometry is dropped by default (placeholder shapes)."""

    package: str
    urdf: str
    srdf: str | None = None
    base: str = "fixed"
    q0: str | None = None
    description: str = ""
    exclude_links: tuple = ()

    def urdf_path(self) -> Path:
        return robot_file(self.package, self.urdf)

    def srdf_path(self) -> Path | None:
        return None if self.srdf is None else robot_file(self.package, self.srdf)


PRESETS = {
    # panda.urdf: arm links as (convex) STL collision meshes, hand mesh, fingers as 4 boxes each (flat pads to
    # grasp with). panda_collision.urdf (below) is the same robot with cylinders + spheres everywhere.
    "panda": RobotPreset("panda_description", "urdf/panda.urdf", "srdf/panda.srdf", "fixed", "default",
                         "Franka Emika Panda with hand: 7 arm joints + 2 prismatic fingers (finger 2 mimics 1)"),
    "panda_primitives": RobotPreset("panda_description", "urdf/panda_collision.urdf", "srdf/panda.srdf", "fixed",
                                    "default", "Panda with cylinder + sphere collision geometry only"),
    "allegro": RobotPreset("allegro_hand_description", "urdf/allegro_right_hand.urdf", None, "fixed", None,
                           "Wonik Allegro right hand: 16 revolute joints, boxes + fingertip spheres"),
    # go1.urdf gives 9 sensor links (cameras, IMU, ultrasound) 1 mm collision boxes, some 3-9 cm outside the trunk
    # box: pin-like contact points, dropped by default.
    "go1": RobotPreset("go1_description", "urdf/go1.urdf", "srdf/go1.srdf", "free", "standing",
                       "Unitree Go1 quadruped: free base + 12 revolute joints, primitive collision shapes",
                       ("camera_chin", "camera_face", "camera_left", "camera_rearDown", "camera_right", "imu_link",
                        "ultraSound_face", "ultraSound_left", "ultraSound_right")),
}
PRESETS["allegro_right"] = PRESETS["allegro"]


# --------------------------------------------------------------------------------------------------------------
# Collision geometry: coal -> our shapes
# --------------------------------------------------------------------------------------------------------------


def _sphere_points(n_lat=8, n_lon=16):
    pts = [(0.0, 0.0, 1.0), (0.0, 0.0, -1.0)]
    for i in range(1, n_lat):
        th = math.pi * i / n_lat
        for k in range(n_lon):
            ph = 2.0 * math.pi * k / n_lon
            pts.append((math.sin(th) * math.cos(ph), math.sin(th) * math.sin(ph), math.cos(th)))
    return np.array(pts)


def mesh_hull_vertices(geometry, name="mesh"):
    """Vertices of the convex hull of a coal BVH mesh (already scaled by the loader), via coal's qhull. A flat or
    degenerate mesh (which crashes coal's qhull) raises :class:`ModelError` naming ``name`` first."""
    _convex_hull(np.asarray(geometry.vertices(), dtype=float).reshape(-1, 3), name)
    geometry.buildConvexHull(False, "Qt")
    pts = np.array(geometry.convex.points(), dtype=float).reshape(-1, 3)
    return pts


def shape_from_coal(geometry, name="?"):
    """Our shape for a coal collision geometry: primitives map 1:1, meshes become their convex hull
    (:class:`~cenic_gym.model.ConvexMesh`); ellipsoids and cones are approximated by convex polytopes.
    A size out of range or a flat mesh raises :class:`ModelError` naming the geometry."""
    try:
        return _shape_from_coal(geometry, name)
    except (ModelError, TypeError) as e:
        raise ModelError(f"collision geometry {name!r}: {e}") from None


def _shape_from_coal(geometry, name):
    import coal

    if isinstance(geometry, coal.Sphere):
        return Sphere(float(geometry.radius))
    if isinstance(geometry, coal.Box):
        return Box(tuple(2.0 * np.asarray(geometry.halfSide, dtype=float)))
    if isinstance(geometry, coal.Capsule):
        return Capsule(float(geometry.radius), 2.0 * float(geometry.halfLength))
    if isinstance(geometry, coal.Cylinder):
        return Cylinder(float(geometry.radius), 2.0 * float(geometry.halfLength))
    if isinstance(geometry, coal.BVHModelBase):
        return ConvexMesh(mesh_hull_vertices(geometry, "mesh vertices"))
    if isinstance(geometry, coal.ConvexBase):
        return ConvexMesh(np.array(geometry.points(), dtype=float).reshape(-1, 3))
    if isinstance(geometry, coal.Ellipsoid):
        return ConvexMesh(_sphere_points() * np.asarray(geometry.radii, dtype=float))
    if isinstance(geometry, coal.Cone):
        r, h = float(geometry.radius), float(geometry.halfLength)
        ang = np.linspace(0.0, 2.0 * math.pi, 24, endpoint=False)
        base = np.stack([r * np.cos(ang), r * np.sin(ang), np.full_like(ang, -h)], axis=1)
        return ConvexMesh(np.vstack([base, [[0.0, 0.0, h]]]))
    raise ModelError(f"type {type(geometry).__name__} is not supported on robots (use spheres, boxes, capsules, "
                     f"cylinders, ellipsoids, cones or meshes)")


# --------------------------------------------------------------------------------------------------------------
# Small XML parsers
# --------------------------------------------------------------------------------------------------------------


def _parse(path):
    """Root element of an XML file; :class:`ModelError` naming the file and the position of a syntax error."""
    try:
        return ET.parse(str(path)).getroot()
    except ET.ParseError as e:
        raise ModelError(f"cannot parse {path}: malformed XML ({e})") from None


def _xml_numbers(el, attr, where, count=None, default=None):
    """The numbers of attribute ``attr`` of XML element ``el`` as a float array (``default`` if absent);
    :class:`ModelError` naming ``where``, the element and the text unless it is ``count`` (any number if None)
    finite numbers."""
    text = el.get(attr)
    if text is None:
        return None if default is None else np.atleast_1d(np.asarray(default, dtype=float))
    try:
        vals = np.array([float(x) for x in text.split()], dtype=float)
    except ValueError:
        vals = None
    if vals is None or (count is not None and len(vals) != count) or not np.all(np.isfinite(vals)):
        what = "finite numbers" if count is None else ("a finite number" if count == 1 else f"{count} finite numbers")
        raise ModelError(f"{where}: <{el.tag} {attr}={text!r}> must be {what}")
    return vals


def urdf_mimics(path):
    """URDF ``<mimic>`` tags: list of (driven joint, source joint, multiplier, offset) —
    q_driven = multiplier q_source + offset (defaults 1 and 0)."""
    out = []
    for j in _parse(path).iter("joint"):
        m = j.find("mimic")
        if m is None or j.get("name") is None:
            continue
        where = f"{path}: joint {j.get('name')!r}"
        out.append((j.get("name"), m.get("joint"), float(_xml_numbers(m, "multiplier", where, 1, 1.0)[0]),
                    float(_xml_numbers(m, "offset", where, 1, 0.0)[0])))
    return out


def mjcf_joint_equalities(path):
    """MJCF ``<equality><joint joint1 joint2 polycoef>`` with a linear polynomial: (driven, source, ratio,
    offset) meaning q_joint1 = polycoef[0] + polycoef[1] q_joint2. Higher-order terms must be zero."""
    out = []
    for eq in _parse(path).iter("equality"):
        for j in eq.iter("joint"):
            j1, j2 = j.get("joint1"), j.get("joint2")
            if j1 is None or j2 is None:
                continue
            where = f"{path}: joint equality {j1!r}-{j2!r}"
            coef = [float(c) for c in _xml_numbers(j, "polycoef", where, None, (0.0, 1.0, 0.0, 0.0, 0.0))]
            if any(abs(c) > 0 for c in coef[2:]):
                raise ModelError(f"{where}: only linear polycoef is supported, got {coef}")
            out.append((j1, j2, coef[1] if len(coef) > 1 else 1.0, coef[0] if coef else 0.0))
    return out


def mjcf_excludes(path):
    """MJCF ``<contact><exclude body1 body2>`` pairs of body names."""
    return [(e.get("body1"), e.get("body2")) for c in _parse(path).iter("contact") for e in c.iter("exclude")]


def srdf_disabled_links(path):
    """SRDF ``<disable_collisions link1 link2>`` pairs of link names."""
    return [(d.get("link1"), d.get("link2")) for d in _parse(path).iter("disable_collisions")]


def srdf_group_states(path):
    """SRDF ``<group_state name>``: dict state name -> {joint name: values (1-D array)}."""
    states = {}
    for gs in _parse(path).iter("group_state"):
        vals = states.setdefault(gs.get("name"), {})
        for j in gs.iter("joint"):
            where = f"{path}: group_state {gs.get('name')!r} joint {j.get('name')!r}"
            vals[j.get("name")] = _xml_numbers(j, "value", where, None, ())
    return states


# Numeric attributes of a URDF's <joint>s and of its <link>s' <inertial> and <collision> elements: (tag, attribute)
# -> how many numbers. urdfdom drops an element it cannot parse with a message on stderr and Pinocchio builds the
# model without it (a massless link, a missing collision shape), so they are checked here first.
_URDF_NUMBERS = {
    ("origin", "xyz"): 3, ("origin", "rpy"): 3, ("axis", "xyz"): 3, ("mass", "value"): 1,
    **{("inertia", k): 1 for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")},
    **{("limit", k): 1 for k in ("lower", "upper", "effort", "velocity")},
    ("dynamics", "damping"): 1, ("dynamics", "friction"): 1, ("mimic", "multiplier"): 1, ("mimic", "offset"): 1,
    ("box", "size"): 3, ("sphere", "radius"): 1, ("cylinder", "radius"): 1, ("cylinder", "length"): 1,
    ("capsule", "radius"): 1, ("capsule", "length"): 1, ("mesh", "scale"): 3,
}
_MOVING_JOINTS = ("revolute", "continuous", "prismatic", "planar")


def check_urdf(root, path):
    """Check a parsed URDF (root ``<robot>`` element) before Pinocchio reads it; :class:`ModelError` naming the link
    or joint and the value: a non-numeric or non-finite number (see ``_URDF_NUMBERS``), a negative mass, an
    inertia that is not positive semi-definite, a zero joint axis, a negative effort or velocity limit, damping or
    friction. Position limits (lower <= upper) are checked on the loaded model (:func:`check_joint_limits`)."""
    for el in root:
        if el.tag not in ("link", "joint"):
            continue
        where = f"{path}: {el.tag} {el.get('name')!r}"
        subtrees = [el] if el.tag == "joint" else el.findall("inertial") + el.findall("collision")
        nums = {}
        for sub in subtrees:
            for e in sub.iter():
                for attr in e.attrib:
                    n = _URDF_NUMBERS.get((e.tag, attr))
                    if n is not None:
                        nums[(e.tag, attr)] = _xml_numbers(e, attr, where, n)
        if el.tag == "link" and el.find("inertial") is not None:
            i = {k: float(nums.get(("inertia", k), [0.0])[0]) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
            _check_inertia(float(nums.get(("mass", "value"), [0.0])[0]),
                           [[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]],
                            [i["ixz"], i["iyz"], i["izz"]]], where, rigid=False)
        if el.tag == "joint":
            axis = nums.get(("axis", "xyz"))
            if el.get("type") in _MOVING_JOINTS and axis is not None and not np.linalg.norm(axis) > 0.0:
                raise ModelError(f"{where}: the joint axis must be non-zero, got xyz={el.find('axis').get('xyz')!r}")
            for tag, attr in (("limit", "effort"), ("limit", "velocity"), ("dynamics", "damping"),
                              ("dynamics", "friction")):
                if (tag, attr) in nums and not nums[(tag, attr)][0] >= 0.0:
                    raise ModelError(f"{where}: <{tag} {attr}> must be >= 0, got {float(nums[(tag, attr)][0])!r}")


def check_mjcf(root, path):
    """Check a parsed MJCF model before Pinocchio reads it (Pinocchio drops a negative ``<inertial mass>``
    silently); :class:`ModelError` naming the body and the value: ``<inertial>`` mass >= 0 and a positive
    semi-definite inertia (``diaginertia`` / ``fullinertia``), ``<geom>`` mass and density >= 0, finite
    ``<joint range>`` and a non-zero ``<joint axis>``."""
    for body in root.iter("body"):
        where = f"{path}: body {body.get('name')!r}"
        for ine in body.findall("inertial"):
            mass = float(_xml_numbers(ine, "mass", where, 1, 0.0)[0])
            diag = _xml_numbers(ine, "diaginertia", where, 3)
            full = _xml_numbers(ine, "fullinertia", where, 6)  # ixx iyy izz ixy ixz iyz
            I = np.diag(diag) if diag is not None else np.zeros((3, 3))
            if full is not None:
                xx, yy, zz, xy, xz, yz = full
                I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            _check_inertia(mass, I, where, rigid=False)
        for geom in body.findall("geom"):
            for attr in ("mass", "density"):
                val = _xml_numbers(geom, attr, where, 1)
                if val is not None and not val[0] >= 0.0:
                    raise ModelError(f"{where}: geom {geom.get('name')!r} {attr} must be >= 0, got {float(val[0])!r}")
        for joint in body.findall("joint"):
            jwhere = f"{path}: joint {joint.get('name')!r}"
            _xml_numbers(joint, "range", jwhere, 2)
            axis = _xml_numbers(joint, "axis", jwhere, 3)
            if axis is not None and not np.linalg.norm(axis) > 0.0:
                raise ModelError(f"{jwhere}: the joint axis must be non-zero, got axis={joint.get('axis')!r}")


def check_joint_limits(R, path):
    """Position limits of the 1-DOF joints of a loaded robot model: lower <= upper (not NaN); :class:`ModelError`
    naming the joint and both values [rad or m]."""
    for j in range(1, R.njoints):
        if R.nqs[j] == 1:
            i = R.idx_qs[j]
            lo, hi = float(R.lowerPositionLimit[i]), float(R.upperPositionLimit[i])
            if not lo <= hi:
                raise ModelError(f"{path}: joint {R.names[j]!r} has lower limit {lo!r} > upper limit {hi!r}")


def default_package_dirs(path):
    """Mesh search path for a model file: the example-robot-data share directory (if installed) and the
    file's ancestors (``package://<pkg>/...`` with ``<pkg>`` an ancestor of the model file)."""
    dirs = []
    try:
        dirs.append(str(package_share_dir()))
    except RobotDataNotFoundError:
        pass
    p = Path(path).resolve().parent
    for _ in range(4):
        dirs.append(str(p))
        p = p.parent
    return dirs


# --------------------------------------------------------------------------------------------------------------
# Robots from model files (helpers of SceneBuilder.add_robot)
# --------------------------------------------------------------------------------------------------------------

# Per-q and per-v vectors of pin.Model copied from the robot's file (those this Pinocchio has).
_Q_ATTRS = ("lowerPositionLimit", "upperPositionLimit", "positionLimitMargin")
_V_ATTRS = ("lowerEffortLimit", "upperEffortLimit", "effortLimit", "lowerVelocityLimit", "upperVelocityLimit",
            "velocityLimit", "lowerDryFrictionLimit", "upperDryFrictionLimit", "friction", "damping", "armature",
            "rotorInertia", "rotorGearRatio")


def _is_free_joint(joint):
    return joint.shortname() == "JointModelFreeFlyer" or is_free_body_joint(joint)


def _robot_name(name):
    """A robot name: a non-empty string without '/' (TypeError / ValueError otherwise)."""
    if "/" in _name(name, "robot name"):
        raise ValueError(f"robot name must not contain '/', got {name!r}")
    return name


def _package_dirs(package_dirs, path):
    """Pinocchio's mesh search path from add_robot's ``package_dirs``: None (:func:`default_package_dirs`), a
    directory, or a list of directories (str or Path); TypeError otherwise."""
    if package_dirs is None:
        return default_package_dirs(path)
    dirs = [package_dirs] if isinstance(package_dirs, (str, Path)) else package_dirs
    if not isinstance(dirs, (list, tuple)) or not all(isinstance(d, (str, Path)) for d in dirs):
        raise TypeError(f"package_dirs must be a directory or a list of directories, got {package_dirs!r}")
    return [str(d) for d in dirs]


def _load_robot_files(builder, robot, name, base, package_dirs, srdf):
    """Resolve a preset or file, check the file (:func:`check_urdf`, :func:`check_mjcf`) and build the robot's own
    Pinocchio model and collision GeometryModel; check its joint limits (:func:`check_joint_limits`)."""
    if name is not None:
        _robot_name(name)
    preset_name = None
    if isinstance(robot, RobotPreset):
        preset = robot
    elif isinstance(robot, str) and robot in PRESETS and not Path(robot).exists():
        preset, preset_name = PRESETS[robot], robot
    else:
        preset = None
    if preset is not None:
        path = preset.urdf_path()
        if srdf is None:
            srdf = preset.srdf_path()
        base = preset.base if base is None else base
    else:
        if not isinstance(robot, (str, Path)):
            raise TypeError(f"robot must be a model file path or a preset name, got {robot!r}")
        path = Path(robot)
        if not path.is_file():
            raise ModelFileNotFoundError(f"robot model file {str(robot)!r} not found (presets: {sorted(PRESETS)})")
    base = "fixed" if base is None else base
    if base not in ("fixed", "free"):
        raise ValueError(f"base must be 'fixed' or 'free', got base={base!r}")
    suffix = path.suffix.lower()
    if suffix == ".urdf":
        fmt = "urdf"
    elif suffix in (".xml", ".mjcf"):
        fmt = "mjcf"
    else:
        raise ValueError(f"unknown robot model format {path.suffix!r} of {path}: use .urdf or MJCF .xml")
    if srdf is not None:
        if not isinstance(srdf, (str, Path)):
            raise TypeError(f"srdf must be an SRDF file path, got {srdf!r}")
        srdf = Path(srdf)
        if not srdf.is_file():
            raise ModelFileNotFoundError(f"SRDF file {str(srdf)!r} not found")
        _parse(srdf)
    dirs = _package_dirs(package_dirs, path) if fmt == "urdf" else None
    (check_urdf if fmt == "urdf" else check_mjcf)(_parse(path), path)
    try:
        if fmt == "urdf":
            if base == "free":
                R = pin.buildModelFromUrdf(str(path), free_body_joint(), "root_joint")
            else:
                R = pin.buildModelFromUrdf(str(path))
            G = pin.buildGeomFromUrdf(R, str(path), pin.COLLISION, package_dirs=dirs)
        else:
            R = pin.buildModelFromMJCF(str(path))
            if base == "free" and not any(R.parents[j] == 0 and _is_free_joint(R.joints[j])
                                          for j in range(1, R.njoints)):
                R = pin.buildModelFromMJCF(str(path), free_body_joint(), "root_joint")
                R = R[0] if isinstance(R, tuple) else R
            G = pin.buildGeomFromMJCF(R, str(path), pin.COLLISION)
    except (RuntimeError, ValueError, OSError) as e:
        raise ModelError(f"cannot load robot model {path}: {e}") from None
    check_joint_limits(R, path)
    if name is None:
        name = _robot_name(preset_name or R.name or path.stem)
    if name in builder.robots or any(n.startswith(f"{name}/") or n == name for n in builder.model.names):
        raise ValueError(f"a robot or body named {name!r} already exists")
    return name, base, path, fmt, srdf, R, G


def _robot_q0(R, q0, joints, srdf):
    """Robot configuration (R.nq,) from q0 (see add_robot) and the set of joints given explicitly."""
    qR = pin.neutral(R)
    refs = R.referenceConfigurations
    if "qpos0" in refs:  # MJCF: MuJoCo's initial configuration (body poses of free joints)
        qR = np.array(refs["qpos0"], dtype=float)
    explicit = set()
    if q0 is None:
        return qR, explicit
    if isinstance(q0, str):
        if srdf is None:
            raise ValueError(f"q0={q0!r} names an SRDF group state, but no SRDF was given")
        states = srdf_group_states(srdf)
        if q0 not in states:
            raise ValueError(f"SRDF {srdf} has no group_state {q0!r}; states: {sorted(states)}")
        q0 = {jn: val for jn, val in states[q0].items() if R.existJointName(jn)
              and R.getJointId(jn) in joints}
    if isinstance(q0, dict):
        for jn, val in q0.items():
            if not R.existJointName(jn) or R.getJointId(jn) not in joints:
                raise ValueError(f"q0: no joint {jn!r} in the robot (joints: {[R.names[j] for j in joints]})")
            j = R.getJointId(jn)
            val = np.atleast_1d(_numbers(val, f"q0[{jn!r}]", f"{R.nqs[j]} number(s)"))
            if val.shape != (R.nqs[j],) or not np.all(np.isfinite(val)):
                raise ValueError(f"q0[{jn!r}] must be {R.nqs[j]} finite value(s), got {val!r}")
            qR[R.idx_qs[j]:R.idx_qs[j] + R.nqs[j]] = val
            explicit.add(j)
        return qR, explicit
    idx = [i for j in joints for i in range(R.idx_qs[j], R.idx_qs[j] + R.nqs[j])]
    arr = _numbers(q0, "q0", "None, an SRDF group state name, a dict or an array of numbers")
    if arr.shape != (len(idx),) or not np.all(np.isfinite(arr)):
        raise ValueError(f"q0 must be a finite array of the robot joints' {len(idx)} positions "
                         f"(free base excluded), got shape {arr.shape}")
    qR[idx] = arr
    return qR, set(joints)


def _clip_to_limits(R, joints, q):
    """q with the 1-DOF joints clipped to their position limits."""
    q = q.copy()
    for j in joints:
        if R.nqs[j] == 1:
            i = R.idx_qs[j]
            q[i] = min(max(q[i], R.lowerPositionLimit[i]), R.upperPositionLimit[i])
    return q


def _per_joint_values(R, joints, value, label):
    """{v index in R: value} for an override given as a number (all joints) or a dict {joint name: value}."""
    items = value.items() if isinstance(value, dict) else [(R.names[j], value) for j in joints]
    out = {}
    for jn, val in items:
        if not R.existJointName(jn) or R.getJointId(jn) not in joints:
            raise ValueError(f"{label}: no joint {jn!r} in the robot")
        val = _nonnegative(val, f"{label}[{jn!r}]")
        j = R.getJointId(jn)
        for iv in range(R.idx_vs[j], R.idx_vs[j] + R.nvs[j]):
            out[iv] = val
    return out


class _RobotGeom(NamedTuple):
    name: str  # as in the file (Pinocchio's GeometryObject name)
    shape: object
    joint: int  # joint index in the robot's own model
    link: str  # link (body frame) name
    placement: pin.SE3  # in the joint frame


def _fuse_capsules(items, tol=5e-3):
    """Replace a cylinder and two spheres of its radius centred on its end caps (same joint; centres within
    ``tol`` times the radius, radii within 1e-6) by one capsule — the pattern of e.g. example-robot-data's
    panda_collision.urdf, whose rpy angles are rounded (hand: 1e-4 m off). The capsule keeps the cylinder's name."""
    drop, out = set(), []
    spheres = [k for k, it in enumerate(items) if isinstance(it.shape, Sphere)]
    fused = {}
    for i, it in enumerate(items):
        if not isinstance(it.shape, Cylinder):
            continue
        r, L = it.shape.radius, it.shape.length
        ends = [it.placement.act(np.array([0.0, 0.0, s * 0.5 * L])) for s in (1.0, -1.0)]
        match = []
        for e in ends:
            ks = [k for k in spheres if k not in drop and items[k].joint == it.joint
                  and abs(items[k].shape.radius - r) <= 1e-6 * r
                  and np.linalg.norm(items[k].placement.translation - e) <= tol * r]
            match.append(ks[0] if ks else None)
        if None not in match and match[0] != match[1]:
            drop.update(match)
            fused[i] = it._replace(shape=Capsule(r, L))
    for i, it in enumerate(items):
        if i not in drop:
            out.append(fused.get(i, it))
    return out


def _pairs_touching_at_neutral(R, items, gnames, grjoint, skip):
    """Pairs of the robot's geometries (on different joints) that touch in the neutral configuration clipped to
    the joint limits — MoveIt's "Default" rule, for files without an SRDF (e.g. the Allegro palm box overlaps the
    thumb's second link in almost every configuration)."""
    import coal

    q = _clip_to_limits(R, range(1, R.njoints), pin.neutral(R))
    d = R.createData()
    pin.forwardKinematics(R, d, q)
    coal_shapes = [nph.make_coal_shape(it.shape.geom_type, it.shape.size(), getattr(it.shape, "vertices", None))
                   for it in items]
    X = [d.oMi[it.joint] * it.placement for it in items]
    tf = [coal.Transform3s(x.rotation, x.translation) for x in X]
    out = set()
    n = len(gnames)
    for a in range(n):
        for b in range(a + 1, n):
            if grjoint[a] == grjoint[b] or (gnames[a], gnames[b]) in skip:
                continue
            res = coal.DistanceResult()
            coal.distance(coal_shapes[a], tf[a], coal_shapes[b], tf[b], coal.DistanceRequest(), res)
            if res.min_distance <= 0.0:
                out.add((gnames[a], gnames[b]))
    return out


def _robot_disabled_pairs(R, items, path, fmt, srdf, gnames, grjoint, link_geoms, self_collision):
    """Geometry-name pairs of one robot that never collide: SRDF <disable_collisions> if an SRDF is given, else
    geometries of parent/child joints and pairs touching in the neutral configuration (MJCF: plus
    <contact><exclude>); all pairs if not self_collision."""
    out = set()
    n = len(gnames)
    if not self_collision:
        return {(gnames[a], gnames[b]) for a in range(n) for b in range(a + 1, n)}
    if srdf is not None:
        unknown = set()
        for l1, l2 in srdf_disabled_links(srdf):
            for ln in (l1, l2):
                if not R.existFrame(ln):
                    unknown.add(ln)
            out |= {(a, b) for a in link_geoms.get(l1, ()) for b in link_geoms.get(l2, ())}
        if unknown:
            warnings.warn(f"SRDF {srdf}: links {sorted(unknown)} are not in {path}")
        return out
    for a in range(n):
        for b in range(a + 1, n):
            ja, jb = grjoint[a], grjoint[b]
            if ja != jb and (R.parents[ja] == jb or R.parents[jb] == ja):
                out.add((gnames[a], gnames[b]))
    out |= _pairs_touching_at_neutral(R, items, gnames, grjoint, out)
    if fmt == "mjcf":
        for b1, b2 in mjcf_excludes(path):
            out |= {(a, b) for a in link_geoms.get(b1, ()) for b in link_geoms.get(b2, ())}
    return out


def add_robot(builder, robot, name=None, base=None, position=(0, 0, 0), rotation=None, material=ContactMaterial(),
              package_dirs=None, srdf=None, q0=None, armature=None, damping=None, self_collision=True,
              fuse_capsules=True, exclude_links=None):
    """Implementation of :meth:`cenic_gym.builder.SceneBuilder.add_robot` (see there): load the robot's files,
    check everything, then merge its kinematic tree, limits, couplers and convex collision geometry."""

    X_base = pin.SE3(_rotation(rotation), _vec3(position, "position"))  # the cheap checks first
    material = _material(material)
    for flag, value in (("self_collision", self_collision), ("fuse_capsules", fuse_capsules)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{flag} must be True or False, got {value!r}")
    rob = _load_robot_files(builder, robot, name, base, package_dirs, srdf)
    name, base, path, fmt, srdf, R, G = rob
    preset = PRESETS.get(robot) if isinstance(robot, str) and not Path(robot).exists() else (
        robot if isinstance(robot, RobotPreset) else None)
    if q0 is None and preset is not None and preset.q0 is not None and srdf is not None \
            and preset.q0 in srdf_group_states(srdf):  # the preset's named pose (if its SRDF has it)
        q0 = preset.q0

    # -- everything that can fail, before the model is touched ----------------------------------------------
    free_roots = [j for j in range(1, R.njoints) if R.parents[j] == 0 and _is_free_joint(R.joints[j])]
    if base == "fixed" and free_roots:
        raise ValueError(f"{path} has a free joint at its root ({R.names[free_roots[0]]!r}): use base='free'")
    if exclude_links is None:
        exclude_links = preset.exclude_links if preset is not None else ()
    given = exclude_links
    try:
        exclude_links = (given,) if isinstance(given, str) else tuple(given)
    except TypeError:
        exclude_links = None
    if exclude_links is None or not all(isinstance(ln, str) for ln in exclude_links):
        raise TypeError(f"exclude_links must be a link name or a list of link names, got {given!r}")
    unknown = [ln for ln in exclude_links if not R.existFrame(ln)]
    if unknown:
        raise ValueError(f"exclude_links: no links {unknown} in {path}")
    try:
        items = [_RobotGeom(go.name, shape_from_coal(go.geometry, go.name), go.parentJoint,
                            R.frames[go.parentFrame].name, go.placement) for go in G.geometryObjects
                 if R.frames[go.parentFrame].name not in exclude_links]
    except ModelError as e:
        raise ModelError(f"{path}: {e}") from None
    if fuse_capsules:
        items = _fuse_capsules(items)
    joints = [j for j in range(1, R.njoints) if j not in free_roots]
    qR, explicit = _robot_q0(R, q0, joints, srdf)
    couplers = []
    pairs = (urdf_mimics(path) if fmt == "urdf" else mjcf_joint_equalities(path))
    for driven, source, ratio, offset in pairs:
        if not (R.existJointName(driven) and R.existJointName(source)):
            warnings.warn(f"{path}: coupler {driven!r} <- {source!r} skipped: not both movable joints")
            continue
        jd, js = R.getJointId(driven), R.getJointId(source)
        for j in (jd, js):
            if not (R.nqs[j] == 1 and R.nvs[j] == 1):
                raise ValueError(f"{path}: coupled joint {R.names[j]!r} is not a 1-DOF joint")
        couplers.append((jd, js, float(ratio), float(offset)))
    qR = _clip_to_limits(R, joints, qR)
    for jd, js, ratio, offset in couplers:
        if jd not in explicit:
            qR[R.idx_qs[jd]] = ratio * qR[R.idx_qs[js]] + offset
    qR = _clip_to_limits(R, joints, qR)
    overrides = {}
    for label, value in (("armature", armature), ("damping", damping)):
        if value is not None:
            overrides[label] = _per_joint_values(R, joints, value, label)
    gnames, grjoint, link_geoms = [], [], {}
    taken = {g.name for g in builder.geometries}
    for it in items:
        gname = f"{name}/{it.name}"
        k = 1
        while gname in taken:
            gname, k = f"{name}/{it.name}_{k}", k + 1
        taken.add(gname)
        gnames.append(gname)
        grjoint.append(it.joint)
        link_geoms.setdefault(it.link, []).append(gname)
    disabled = _robot_disabled_pairs(R, items, path, fmt, srdf, gnames, grjoint, link_geoms, self_collision)

    # -- merge the kinematic tree --------------------------------------------------------------------------
    m = builder.model
    nq0, nv0 = m.nq, m.nv
    jmap = {0: 0}
    for j in range(1, R.njoints):
        full = f"{name}/{R.names[j]}"
        if j in free_roots:
            jmap[j] = m.addJoint(0, free_body_joint(), pin.SE3.Identity(), full)
        else:
            X = X_base * R.jointPlacements[j] if R.parents[j] == 0 else R.jointPlacements[j]
            jmap[j] = m.addJoint(jmap[R.parents[j]], R.joints[j], X, full)
        m.appendBodyToJoint(jmap[j], R.inertias[j], pin.SE3.Identity())
        assert m.idx_qs[jmap[j]] == nq0 + R.idx_qs[j] and m.idx_vs[jmap[j]] == nv0 + R.idx_vs[j]
    qs, vs = slice(nq0, nq0 + R.nq), slice(nv0, nv0 + R.nv)
    for attrs, sl in ((_Q_ATTRS, qs), (_V_ATTRS, vs)):
        for attr in attrs:
            if hasattr(R, attr):
                arr = np.array(getattr(m, attr), dtype=float)
                arr[sl] = np.asarray(getattr(R, attr), dtype=float)
                setattr(m, attr, arr)
    for label, vals in overrides.items():
        arr = np.array(getattr(m, label), dtype=float)
        for iv, val in vals.items():
            arr[nv0 + iv] = val
        setattr(m, label, arr)
    fmap = {0: 0}
    for fi in range(1, R.nframes):
        f = R.frames[fi]
        nf = pin.Frame(f)
        nf.name = f"{name}/{f.name}"
        nf.parentJoint = jmap[f.parentJoint]
        nf.parentFrame = fmap[f.parentFrame]
        nf.placement = X_base * f.placement if f.parentJoint == 0 else f.placement
        fmap[fi] = m.addFrame(nf, False)  # the joint inertias above already hold the fixed links

    # -- initial state -----------------------------------------------------------------------------------------
    q = qR.copy()
    for j in free_roots:
        i = R.idx_qs[j]
        X = X_base * R.jointPlacements[j] * pin.XYZQUATToSE3(qR[i:i + 7])
        q[i:i + 7] = pin.SE3ToXYZQUAT(X)
    builder.q0.append(q)
    builder.v0.append(np.zeros(R.nv))

    # -- collision geometry ----------------------------------------------------------------------------------
    for it, gname in zip(items, gnames):
        X = X_base * it.placement if it.joint == 0 else it.placement
        builder.geometries.append(Geometry(gname, it.shape, jmap[it.joint], X, material))
    builder.disabled_pairs |= disabled
    for jd, js, ratio, offset in couplers:
        builder.add_coupler(jmap[jd], jmap[js], ratio, offset)

    links = tuple(f.name for f in R.frames if f.type == pin.FrameType.BODY)
    builder.robots[name] = RobotInfo(
        name, str(path), base, jmap[free_roots[0]] if free_roots else 0,
        tuple(R.names[j] for j in joints), np.array([jmap[j] for j in joints], dtype=np.int64),
        np.array([nq0 + i for j in joints for i in range(R.idx_qs[j], R.idx_qs[j] + R.nqs[j])], dtype=np.int64),
        np.array([nv0 + i for j in joints for i in range(R.idx_vs[j], R.idx_vs[j] + R.nvs[j])], dtype=np.int64),
        links, tuple(gnames))
    return builder
