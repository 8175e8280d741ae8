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
``<contact><exclude>``) live here; :meth:`cenic_gym.model.SceneBuilder.add_robot` does the merging.
"""
from __future__ import annotations

import functools
import math
import os
import site
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .model import Box, Capsule, ConvexMesh, Cylinder, Sphere

ERD_PACKAGE = "example-robot-data"
_ROBOTS_SUBDIR = Path("cmeel.prefix") / "share" / "example-robot-data" / "robots"
ENV_VAR = "CENIC_EXAMPLE_ROBOT_DATA"  # optional override: the .../example-robot-data/robots directory


class RobotDataNotFoundError(FileNotFoundError):
    """The ``example-robot-data`` files (or one of them) could not be found."""


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


def mesh_hull_vertices(geometry):
    """Vertices of the convex hull of a coal BVH mesh (already scaled by the loader), via coal's qhull."""
    geometry.buildConvexHull(False, "Qt")
    pts = np.array(geometry.convex.points(), dtype=float).reshape(-1, 3)
    return pts


def shape_from_coal(geometry, name="?"):
    """Our shape for a coal collision geometry: primitives map 1:1, meshes become their convex hull
    (:class:`~cenic_gym.model.ConvexMesh`); ellipsoids and cones are approximated by convex polytopes."""
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
        try:
            return ConvexMesh(mesh_hull_vertices(geometry))
        except Exception as e:  # noqa: BLE001 - qhull failures: flat or degenerate meshes
            raise ValueError(f"collision mesh of geometry {name!r} could not be convexified: {e}") from e
    if isinstance(geometry, coal.ConvexBase):
        return ConvexMesh(np.array(geometry.points(), dtype=float).reshape(-1, 3))
    if isinstance(geometry, coal.Ellipsoid):
        return ConvexMesh(_sphere_points() * np.asarray(geometry.radii, dtype=float))
    if isinstance(geometry, coal.Cone):
        r, h = float(geometry.radius), float(geometry.halfLength)
        ang = np.linspace(0.0, 2.0 * math.pi, 24, endpoint=False)
        base = np.stack([r * np.cos(ang), r * np.sin(ang), np.full_like(ang, -h)], axis=1)
        return ConvexMesh(np.vstack([base, [[0.0, 0.0, h]]]))
    raise ValueError(f"collision geometry {name!r} of type {type(geometry).__name__} is not supported on robots "
                     f"(use spheres, boxes, capsules, cylinders, ellipsoids, cones or meshes)")


# --------------------------------------------------------------------------------------------------------------
# Small XML parsers
# --------------------------------------------------------------------------------------------------------------


def _parse(path):
    try:
        return ET.parse(str(path)).getroot()
    except ET.ParseError as e:
        raise ValueError(f"cannot parse {path}: {e}") from e


def urdf_mimics(path):
    """URDF ``<mimic>`` tags: list of (driven joint, source joint, multiplier, offset) —
    q_driven = multiplier q_source + offset (defaults 1 and 0)."""
    out = []
    for j in _parse(path).iter("joint"):
        m = j.find("mimic")
        if m is None or j.get("name") is None:
            continue
        out.append((j.get("name"), m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0))))
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
            coef = [float(x) for x in j.get("polycoef", "0 1 0 0 0").split()]
            if any(abs(c) > 0 for c in coef[2:]):
                raise ValueError(f"MJCF joint equality {j1!r}-{j2!r}: only linear polycoef is supported, got {coef}")
            out.append((j1, j2, coef[1] if len(coef) > 1 else 1.0, coef[0]))
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
            vals[j.get("name")] = np.array([float(x) for x in j.get("value", "").split()], dtype=float)
    return states


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
