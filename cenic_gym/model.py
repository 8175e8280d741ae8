"""Multibody systems: a Pinocchio model plus collision geometry with contact materials.

A :class:`MultibodySystem` holds

* ``model`` — a ``pinocchio.Model`` (SI units, world z up, gravity ``model.gravity``). Free bodies use
  :func:`free_body_joint` (q = [position (m), quaternion (x, y, z, w)], v = [world linear velocity (m/s),
  body-frame angular velocity (rad/s)]); fixed bodies hang on the universe joint 0.
* the collision geometries as flat arrays (struct of arrays), each geometry attached to one joint with a
  constant placement in that joint's frame, and a :class:`ContactMaterial`;
* the candidate collision pairs (same-joint and fixed/fixed pairs are filtered out);
* joint position limits of 1-DOF joints (for the near-rigid limit constraints of CENIC §IV-D);
* couplers q[i0] = ρ q[i1] + offset between 1-DOF joints (URDF ``<mimic>``, docs/physics.md §2.8) as flat arrays;
* the robots merged from model files (:class:`RobotInfo`: their joints' q/v indices, links, geometries).

Scenes are built in code with :class:`cenic_gym.builder.SceneBuilder`; robots come from URDF (+ SRDF) or MJCF files
with its ``add_robot`` (:mod:`cenic_gym.robots`, presets of the ``example-robot-data`` package). This module imports
neither (model ← robots ← builder). Shapes, materials and the builder's methods check their arguments when called: TypeError for a wrong type,
ValueError for a wrong shape or a non-finite pose, :class:`~cenic_gym.errors.ModelError` for a model that cannot be
simulated; each message names the argument and its value.
Shape conventions (half extents, local z axes) are those of :mod:`cenic_gym.narrowphase`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from numba import njit

from . import narrowphase as nph
from .errors import ModelError

# --------------------------------------------------------------------------------------------------------------
# Argument checks. Public entry points validate here, so a bad input fails at once with the argument's name and its
# value: TypeError for a wrong type, ValueError for a wrong shape or a non-finite pose, ModelError (a ValueError)
# for a model that cannot be simulated (a mass, size or material out of range, a flat mesh, a zero ground normal).
# --------------------------------------------------------------------------------------------------------------


def _numbers(value, name, what="numbers"):
    """``value`` as a float array; TypeError naming ``name`` unless it holds only real numbers (bools, strings,
    None, ragged nesting and other objects are refused; ``what`` says what was expected)."""
    try:
        raw = np.asarray(value)
    except ValueError:  # ragged nesting
        raw = np.asarray(None)
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be {what}, got {value!r}")
    return raw.astype(float)


def _real(value, name):
    """A real number (a Python or NumPy int or float, or a 0-d array; not a bool) as a float, possibly non-finite."""
    x = _numbers(value, name, "a real number")
    if x.shape != ():
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(x)


def _positive(value, name):
    """A model quantity (mass [kg], length [m], stiffness [N/m], ...) that must be finite and > 0, as a float."""
    x = _real(value, name)
    if not (math.isfinite(x) and x > 0.0):
        raise ModelError(f"{name} must be finite and > 0, got {value!r}")
    return x


def _nonnegative(value, name):
    """A model quantity (dissipation [s/m], friction coefficient, ...) that must be finite and >= 0, as a float."""
    x = _real(value, name)
    if not (math.isfinite(x) and x >= 0.0):
        raise ModelError(f"{name} must be finite and >= 0, got {value!r}")
    return x


def _finite(value, name):
    """A finite real number (e.g. a height [m] or a coupler ratio) as a float; ValueError if it is not finite."""
    x = _real(value, name)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return x


def _vec3(value, name):
    """A finite 3-vector (position [m], velocity [m/s], direction, ...) as a float array (3,)."""
    a = _numbers(value, name, "a 3-vector of numbers")
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be a finite 3-vector, got {value!r}")
    return a


def matrix_to_quat_xyzw(R):
    """Unit quaternion (x, y, z, w) (4,) of a rotation matrix R (3, 3), by Eigen's conversion: bit for bit what
    ``pin.Quaternion(R).coeffs()`` gives. Use this, not ``pin.Quaternion(R)``: that constructor leaks 80 bytes of
    native memory per call (eigenpy 3.13 / pinocchio 4.1; repro: benchmarks/upstream_quaternion_leak.py), which an
    env observing a pose every step turns into ~0.2 MB per 1000 steps (benchmarks/memory_growth.py)."""
    return pin.SE3ToXYZQUAT(pin.SE3(np.asarray(R, dtype=np.float64), np.zeros(3)))[3:]


@njit(cache=True, inline="always")
def quat_to_rot(x, y, z, w, R, normalize=True):
    """R (3, 3) ← rotation matrix of the quaternion (x, y, z, w) (numba: the kernels' form), normalized here unless
    ``normalize`` is False (then it is Eigen's ``Quaternion::toRotationMatrix``, which Pinocchio applies to the raw
    q, bit for bit)."""
    if normalize:
        n = math.sqrt(x * x + y * y + z * z + w * w)
        x, y, z, w = x / n, y / n, z / n, w / n
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - z * w)
    R[0, 2] = 2 * (x * z + y * w)
    R[1, 0] = 2 * (x * y + z * w)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - x * w)
    R[2, 0] = 2 * (x * z - y * w)
    R[2, 1] = 2 * (y * z + x * w)
    R[2, 2] = 1 - 2 * (x * x + y * y)


def quat_xyzw_to_matrix(quat):
    """Rotation matrix (3, 3) of a quaternion (x, y, z, w) (4,) of any non-zero norm: the inverse of
    :func:`matrix_to_quat_xyzw`, and the one quaternion → rotation map of the package (:func:`quat_to_rot`)."""
    R = np.empty((3, 3))
    quat_to_rot(float(quat[0]), float(quat[1]), float(quat[2]), float(quat[3]), R)
    return R


def _rotation(rotation, name="rotation"):
    """Rotation matrix (3, 3) of ``rotation``: None (identity), a rotation matrix (3, 3), roll-pitch-yaw (3,) [rad]
    or a quaternion (x, y, z, w) (4,) of any non-zero norm (it is normalized). Non-finite values, a zero quaternion
    or a matrix that is not orthonormal with determinant +1 raise ValueError naming ``name``."""
    if rotation is None:
        return np.eye(3)
    what = "a 3x3 rotation matrix, rpy (3,) [rad] or a quaternion xyzw (4,)"
    R = _numbers(rotation, name, what)
    if R.shape not in ((3, 3), (3,), (4,)):
        raise ValueError(f"{name} must be {what}, got {rotation!r}")
    if not np.all(np.isfinite(R)):
        raise ValueError(f"{name} must be finite, got {rotation!r}")
    if R.shape == (4,):
        norm = float(np.linalg.norm(R))
        if norm < 1e-6:
            raise ValueError(f"{name}: a quaternion xyzw must be non-zero (it is normalized), got {rotation!r}")
        return quat_xyzw_to_matrix(R)
    if R.shape == (3,):
        return pin.rpy.rpyToMatrix(R)
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0.0:
        raise ValueError(f"{name} must be a rotation matrix (orthonormal, determinant +1), got {rotation!r}")
    return R


def _name(value, what):
    """A non-empty string naming something (a body, a geometry); TypeError / ValueError naming ``what``."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {value!r}")
    if not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _check_inertia(mass, inertia, where, rigid=True):
    """Check a body's mass [kg] and rotational inertia (3, 3) [kg m^2] about its centre of mass; ModelError naming
    ``where`` and the values. rigid: a body on its own (mass > 0, inertia positive definite and satisfying the
    triangle inequality λ_max <= λ_1 + λ_2, like :meth:`~cenic_gym.simulator.Simulator.set_body_inertia`); else one
    link of a model file (mass >= 0, inertia positive semi-definite: massless links and point masses are common)."""
    mass = _real(mass, f"{where}: mass")
    ok = mass > 0.0 if rigid else mass >= 0.0
    if not (math.isfinite(mass) and ok):
        raise ModelError(f"{where}: mass must be finite and {'>' if rigid else '>='} 0 kg, got {mass!r}")
    inertia = _numbers(inertia, f"{where}: inertia", "a 3x3 array of numbers")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ModelError(f"{where}: inertia must be a finite 3x3 matrix, got {inertia.tolist()!r}")
    ev = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    scale = float(np.abs(ev).max())
    if rigid and not (ev[0] > 0.0 and ev[2] <= ev[0] + ev[1] + 1e-12 * ev[2]):
        raise ModelError(f"{where}: inertia must be positive definite and satisfy the triangle inequality, "
                         f"got eigenvalues {ev.tolist()!r} kg m^2")
    if not rigid and ev[0] < -1e-9 * scale:
        raise ModelError(f"{where}: inertia must be positive semi-definite, got {inertia.tolist()!r} "
                         f"(eigenvalues {ev.tolist()!r} kg m^2)")


# Thinnest convex hull accepted, relative to its extent: coal 3.0's qhull (coal.Convex.convexHull, "Qt") crashes the
# process on plates thinner than ~5e-8 of their size; 1e-6 of a metre is a micrometre.
MIN_RELATIVE_THICKNESS = 1e-6


def _convex_hull(points, name):
    """scipy convex hull of ``points`` (N, 3) [m]; ModelError naming ``name`` if they span no volume (coplanar,
    collinear or repeated points: a flat or degenerate mesh) or the hull is thinner than
    :data:`MIN_RELATIVE_THICKNESS` of its extent, instead of a raw Qhull error, a ZeroDivisionError or a crash in
    coal. Thickness: the smallest width of the hull across one of its faces."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points)
    except QhullError as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ModelError(f"{name}: the {len(points)} points are flat or degenerate (coplanar, collinear or repeated), "
                         f"their convex hull has no volume ({first})") from None
    v = points[hull.vertices]
    extent = float(np.ptp(v, axis=0).max())
    proj = hull.equations[:, :3] @ v.T  # (faces, vertices): heights along each face's unit normal
    thickness = float((proj.max(axis=1) - proj.min(axis=1)).min())
    if not thickness >= MIN_RELATIVE_THICKNESS * extent:
        raise ModelError(f"{name}: the convex hull of the {len(points)} points is nearly flat: {thickness!r} m thick "
                         f"for an extent of {extent!r} m (at least {MIN_RELATIVE_THICKNESS:g} of it is needed)")
    return hull


# --------------------------------------------------------------------------------------------------------------
# Contact materials
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContactMaterial:
    """Compliant point-contact material (ICF §VI, CENIC §III-B).

    stiffness:   k [N/m], per contact point (a box resting on its face has 4 corner points, so 4k in total).
    dissipation: Hunt–Crossley d [s/m]: f_n = k (-phi)_+ (1 - d v_n)_+.
    mu_static, mu_dynamic: Coulomb coefficients, 0 <= mu_dynamic <= mu_static; mu_dynamic defaults to mu_static.
    The Lagged friction coefficient falls from mu_static at rest to mu_dynamic when sliding
    (:func:`cenic_gym.icf.stribeck_mu`), and pairs combine both by harmonic means, which keep that order.

    Values are stored as floats; a non-number raises TypeError, a value out of range :class:`ModelError`.
    """

    stiffness: float = 1.0e5
    dissipation: float = 0.0
    mu_static: float = 0.5
    mu_dynamic: float | None = None

    def __post_init__(self):
        if self.mu_dynamic is None:
            object.__setattr__(self, "mu_dynamic", self.mu_static)
        object.__setattr__(self, "stiffness", _positive(self.stiffness, "ContactMaterial.stiffness"))
        for name in ("dissipation", "mu_static", "mu_dynamic"):
            object.__setattr__(self, name, _nonnegative(getattr(self, name), f"ContactMaterial.{name}"))
        if self.mu_dynamic > self.mu_static:
            raise ModelError(f"ContactMaterial.mu_dynamic={self.mu_dynamic!r} exceeds mu_static={self.mu_static!r}: "
                             f"sliding friction cannot exceed static friction (mu_dynamic <= mu_static)")


def _material(value, name="material"):
    """``value`` if it is a :class:`ContactMaterial`, else TypeError naming ``name``."""
    if not isinstance(value, ContactMaterial):
        raise TypeError(f"{name} must be a ContactMaterial, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------------------------
# Shapes (dimensions in m; every shape's frame is at its centre, axes as documented). Dimensions are checked and
# stored as floats when a shape is made: TypeError for a non-number, ModelError for a size <= 0 or non-finite.
# --------------------------------------------------------------------------------------------------------------


def _positive_fields(shape):
    """``__post_init__`` of the primitive shapes: every field is a length [m], finite and > 0, stored as a float."""
    for f in dataclasses.fields(shape):
        name = f"{type(shape).__name__}.{f.name}"
        object.__setattr__(shape, f.name, _positive(getattr(shape, f.name), name))


@dataclass(frozen=True)
class Sphere:
    radius: float

    geom_type = nph.SPHERE
    __post_init__ = _positive_fields

    def size(self):
        return np.array([self.radius, 0.0, 0.0])

    def volume(self):
        return 4.0 / 3.0 * math.pi * self.radius**3

    def inertia(self, mass):
        return pin.Inertia.FromSphere(mass, self.radius)

    def bounding_radius(self):
        return self.radius

    def local_box(self):
        """(centre, half extents) of the bounding box in the shape frame [m]."""
        return np.zeros(3), np.full(3, self.radius)


@dataclass(frozen=True)
class Box:
    """Box with full side lengths ``size`` = (lx, ly, lz) [m] along its local axes."""

    lengths: tuple

    geom_type = nph.BOX

    def __post_init__(self):
        ln = _numbers(self.lengths, "Box.lengths", "three lengths [m]")
        if ln.shape != (3,):
            raise ValueError(f"Box.lengths must be three lengths [m], got {self.lengths!r}")
        object.__setattr__(self, "lengths", tuple(_positive(float(x), f"Box.lengths[{i}]") for i, x in enumerate(ln)))

    def size(self):
        return 0.5 * np.asarray(self.lengths, dtype=float)

    def volume(self):
        return float(np.prod(self.lengths))

    def inertia(self, mass):
        return pin.Inertia.FromBox(mass, *map(float, self.lengths))

    def bounding_radius(self):
        return float(np.linalg.norm(self.size()))

    def local_box(self):
        return np.zeros(3), self.size()


@dataclass(frozen=True)
class Capsule:
    """Capsule: a segment of length ``length`` along local z swept by a sphere of ``radius``."""

    radius: float
    length: float

    geom_type = nph.CAPSULE
    __post_init__ = _positive_fields

    def size(self):
        return np.array([self.radius, 0.5 * self.length, 0.0])

    def volume(self):
        return math.pi * self.radius**2 * (self.length + 4.0 / 3.0 * self.radius)

    def inertia(self, mass):
        return pin.Inertia.FromCapsule(mass, self.radius, self.length)

    def bounding_radius(self):
        return 0.5 * self.length + self.radius

    def local_box(self):
        return np.zeros(3), np.array([self.radius, self.radius, 0.5 * self.length + self.radius])


@dataclass(frozen=True)
class Cylinder:
    """Cylinder of ``radius`` and ``length`` along local z."""

    radius: float
    length: float

    geom_type = nph.CYLINDER
    __post_init__ = _positive_fields

    def size(self):
        return np.array([self.radius, 0.5 * self.length, 0.0])

    def volume(self):
        return math.pi * self.radius**2 * self.length

    def inertia(self, mass):
        return pin.Inertia.FromCylinder(mass, self.radius, self.length)

    def bounding_radius(self):
        return math.hypot(self.radius, 0.5 * self.length)

    def local_box(self):
        return np.zeros(3), np.array([self.radius, self.radius, 0.5 * self.length])


@dataclass(frozen=True, eq=False)
class ConvexMesh:
    """Convex hull of ``vertices`` (N, 3) [m] in the shape frame (handled by coal).

    The hull must be a solid: flat or degenerate point sets (coplanar, collinear, repeated) raise ModelError."""

    vertices: np.ndarray

    geom_type = nph.CONVEX

    def __post_init__(self):
        v = _numbers(self.vertices, "ConvexMesh.vertices", "an (N, 3) array of numbers [m]")
        if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4:
            raise ValueError(f"ConvexMesh.vertices must be a finite (N>=4, 3) array, got shape {v.shape}")
        bad = np.flatnonzero(~np.all(np.isfinite(v), axis=1))
        if bad.size:
            raise ValueError(f"ConvexMesh.vertices must be finite, got vertex {bad[0]} = {v[bad[0]].tolist()!r}")
        object.__setattr__(self, "vertices", v)
        _convex_hull(v, "ConvexMesh.vertices")

    def size(self):
        return np.zeros(3)

    def _mass_properties(self):
        """Volume, centroid and unit-density inertia about the centroid of the convex hull (tetrahedra fan)."""
        hull = _convex_hull(self.vertices, "ConvexMesh.vertices")
        c0 = self.vertices[hull.vertices].mean(axis=0)
        vol = 0.0
        first = np.zeros(3)
        second = np.zeros((3, 3))
        canon = np.array([[2, 1, 1], [1, 2, 1], [1, 1, 2]]) / 120.0
        for simplex in hull.simplices:
            a, b, c = (self.vertices[i] - c0 for i in simplex)
            det = np.dot(a, np.cross(b, c))
            if det < 0:  # orient outward relative to the interior point c0
                b, c = c, b
                det = -det
            vt = det / 6.0
            vol += vt
            first += vt * (a + b + c) / 4.0
            E = np.stack([a, b, c], axis=1)
            second += det * E @ canon @ E.T
        com = first / vol
        second_c = second - vol * np.outer(com, com)  # about the centroid
        inertia = np.trace(second_c) * np.eye(3) - second_c
        return vol, com + c0, inertia / vol

    def volume(self):
        return self._mass_properties()[0]

    def inertia(self, mass):
        _, com, unit_inertia = self._mass_properties()
        return pin.Inertia(mass, com, mass * unit_inertia)

    def bounding_radius(self):
        return float(np.max(np.linalg.norm(self.vertices, axis=1)))

    def local_box(self):
        lo, hi = self.vertices.min(axis=0), self.vertices.max(axis=0)
        return 0.5 * (lo + hi), 0.5 * (hi - lo)


@dataclass(frozen=True)
class HalfSpace:
    """Solid below the local plane z = 0 (outward normal +z). Only on fixed bodies."""

    geom_type = nph.HALFSPACE

    def size(self):
        return np.zeros(3)

    def bounding_radius(self):
        return math.inf

    def local_box(self):
        return np.zeros(3), np.full(3, np.inf)


SHAPES = (Sphere, Box, Capsule, Cylinder, ConvexMesh, HalfSpace)


# --------------------------------------------------------------------------------------------------------------
# The system
# --------------------------------------------------------------------------------------------------------------

JOINT_FIXED, JOINT_ROOT_FREE, JOINT_GENERAL = 0, 1, 2
# 1-DOF joints whose world pose :func:`cenic_gym.kinematics.joint_poses_from_q` computes from q and the parent's
# pose (the other non-root joints, JOINT_GENERAL, are copied from Pinocchio's ``data.oMi``)
(JOINT_REVOLUTE_X, JOINT_REVOLUTE_Y, JOINT_REVOLUTE_Z, JOINT_REVOLUTE_AXIS,
 JOINT_PRISMATIC_X, JOINT_PRISMATIC_Y, JOINT_PRISMATIC_Z, JOINT_PRISMATIC_AXIS) = range(3, 11)
_ONE_DOF_KINDS = {"JointModelRX": JOINT_REVOLUTE_X, "JointModelRY": JOINT_REVOLUTE_Y, "JointModelRZ": JOINT_REVOLUTE_Z,
                  "JointModelRevoluteUnaligned": JOINT_REVOLUTE_AXIS, "JointModelPX": JOINT_PRISMATIC_X,
                  "JointModelPY": JOINT_PRISMATIC_Y, "JointModelPZ": JOINT_PRISMATIC_Z,
                  "JointModelPrismaticUnaligned": JOINT_PRISMATIC_AXIS}


def free_body_joint():
    """The 6-DOF joint of a free body: translation then a spherical joint (Pinocchio composite).

    q = [p (m, parent frame), quaternion (x, y, z, w)], v = [ṗ (m/s, parent frame), ω (rad/s, body frame)].
    Unlike Pinocchio's free-flyer (body-frame linear velocity), the linear velocity carries no Coriolis term
    ω × v: treated explicitly in a semi-implicit step that term is an explicit Euler rotation of v, which grows
    |v| by √(1 + (ω δt)²) per step and pumps energy into spinning, rolling bodies. ``pin.integrate`` then advances
    p + δt ṗ and R exp(δt ω) (no screw motion) — consistent with the contact Jacobians of the convex step."""
    jm = pin.JointModelComposite(2)
    jm.addJoint(pin.JointModelTranslation())
    jm.addJoint(pin.JointModelSpherical())
    return jm


def is_free_body_joint(joint):
    return joint.shortname() == "JointModelComposite" and joint.nq == 7 and joint.nv == 6


@dataclass
class Geometry:
    name: str
    shape: object
    joint: int  # Pinocchio joint index (0 = world)
    placement: pin.SE3  # shape frame in the joint frame
    material: ContactMaterial


@dataclass(frozen=True)
class Coupler:
    """Holonomic coupler between two 1-DOF joints (docs/physics.md §2.8): c = q[joint0] − ratio q[joint1] − offset = 0.

    joint0 is the driven joint (URDF ``<mimic>``: the mimicking joint), joint1 the source (the mimicked joint)."""

    joint0: int  # Pinocchio joint index of the driven joint
    joint1: int  # Pinocchio joint index of the source joint
    ratio: float  # ρ
    offset: float  # [m or rad]


@dataclass(frozen=True)
class RobotInfo:
    """What :meth:`cenic_gym.builder.SceneBuilder.add_robot` added. Joint/frame/geometry names in the model are ``"<name>/<file name>"``.

    joints: the robot's joints except a free base, in model order, with their file names (unprefixed);
    joint_ids / q_indices / v_indices: their Pinocchio joint indices and their (concatenated) indices into q, v;
    base_joint: the free base's joint index (its q = [p, quat xyzw], v = [world ṗ, body ω]), 0 for a fixed base;
    links: names of the robot's links (BODY frames, unprefixed); geometries: names of its collision geometries."""

    name: str
    source: str
    base: str
    base_joint: int
    joints: tuple
    joint_ids: np.ndarray
    q_indices: np.ndarray
    v_indices: np.ndarray
    links: tuple
    geometries: tuple


@dataclass
class MultibodySystem:
    """Pinocchio model + collision geometry as flat arrays. Build with :class:`cenic_gym.builder.SceneBuilder`."""

    model: pin.Model
    geometries: list
    q0: np.ndarray  # default configuration (nq,)
    v0: np.ndarray  # default generalized velocity (nv,)
    body_names: list = field(default_factory=list)
    disabled_pairs: set = field(default_factory=set)
    stiction_tolerance: float = 1.0e-4  # v_s [m/s] (ICF §V-B)
    couplers: list = field(default_factory=list)  # of Coupler
    robots: dict = field(default_factory=dict)  # name -> RobotInfo

    def __post_init__(self):
        m = self.model
        g = self.geometries
        ng = len(g)
        self.geom_type = np.array([geo.shape.geom_type for geo in g], dtype=np.int64)
        self.geom_size = np.array([geo.shape.size() for geo in g], dtype=float).reshape(ng, 3)
        self.geom_joint = np.array([geo.joint for geo in g], dtype=np.int64)
        self.geom_R = np.array([geo.placement.rotation for geo in g], dtype=float).reshape(ng, 3, 3)
        self.geom_p = np.array([geo.placement.translation for geo in g], dtype=float).reshape(ng, 3)
        self.geom_bound = np.array([geo.shape.bounding_radius() for geo in g], dtype=float)
        # local bounding boxes (centre, half extents in the geometry frame) for the broad phase of coal pairs
        boxes = [geo.shape.local_box() for geo in g]
        self.geom_box_c = np.array([b[0] for b in boxes], dtype=float).reshape(ng, 3)
        self.geom_box_h = np.array([b[1] for b in boxes], dtype=float).reshape(ng, 3)
        self.geom_k = np.array([geo.material.stiffness for geo in g], dtype=float)
        self.geom_d = np.array([geo.material.dissipation for geo in g], dtype=float)
        self.geom_mu_s = np.array([geo.material.mu_static for geo in g], dtype=float)
        self.geom_mu_d = np.array([geo.material.mu_dynamic for geo in g], dtype=float)
        self.coal_shapes = [
            nph.make_coal_shape(geo.shape.geom_type, geo.shape.size(), getattr(geo.shape, "vertices", None))
            for geo in g
        ]
        self.pairs = self._candidate_pairs()
        # Joint bookkeeping for the kinematics kernels.
        nj = m.njoints
        self.joint_kind = np.full(nj, JOINT_GENERAL, dtype=np.int64)
        self.joint_kind[0] = JOINT_FIXED
        self.joint_idx_q = np.array([m.idx_qs[j] if j > 0 else 0 for j in range(nj)], dtype=np.int64)
        # forward kinematics of the 1-DOF joints in numba: parent, placement in the parent joint's frame, axis
        self.joint_parent = np.array([m.parents[j] if j > 0 else 0 for j in range(nj)], dtype=np.int64)
        self.joint_place_R = np.array([m.jointPlacements[j].rotation for j in range(nj)], dtype=float).reshape(nj, 3, 3)
        self.joint_place_p = np.array([m.jointPlacements[j].translation for j in range(nj)], dtype=float).reshape(nj, 3)
        self.joint_axis = np.zeros((nj, 3))
        for j in range(1, nj):
            name = m.joints[j].shortname()
            if is_free_body_joint(m.joints[j]) and m.parents[j] == 0 and m.jointPlacements[j].isIdentity():
                self.joint_kind[j] = JOINT_ROOT_FREE
            elif name in _ONE_DOF_KINDS:
                self.joint_kind[j] = _ONE_DOF_KINDS[name]
                if name.endswith("Unaligned"):
                    self.joint_axis[j] = m.joints[j].extract().axis
        # joints whose pose is copied from Pinocchio (ContactQuery.sync_joint_poses) before each query
        self.general_joints = [j for j in range(1, nj) if self.joint_kind[j] == JOINT_GENERAL]
        # Columns of the generalized velocity each joint's motion depends on (its support), padded with -1.
        support = [self._support_columns(j) for j in range(nj)]
        width = max(1, max(len(s) for s in support))
        self.joint_cols = np.full((nj, width), -1, dtype=np.int64)
        self.joint_ncols = np.zeros(nj, dtype=np.int64)
        for j, s in enumerate(support):
            self.joint_cols[j, : len(s)] = s
            self.joint_ncols[j] = len(s)
        self.max_contact_cols = 2 * width
        self._limits()
        self._couplers()

    # -- construction helpers ---------------------------------------------------------------------------------
    def _support_columns(self, j):
        m = self.model
        cols = []
        for a in m.supports[j]:
            if a == 0:
                continue
            cols.extend(range(m.idx_vs[a], m.idx_vs[a] + m.nvs[a]))
        return sorted(cols)

    def _candidate_pairs(self):
        pairs = []
        g = self.geometries
        for a in range(len(g)):
            for b in range(a + 1, len(g)):
                ja, jb = g[a].joint, g[b].joint
                if ja == jb:
                    continue
                if self._is_static(ja) and self._is_static(jb):
                    continue
                if (g[a].name, g[b].name) in self.disabled_pairs or (g[b].name, g[a].name) in self.disabled_pairs:
                    continue
                if self.geom_type_of(a) == nph.HALFSPACE and self.geom_type_of(b) == nph.HALFSPACE:
                    continue
                pairs.append((a, b))
        return np.array(pairs, dtype=np.int64).reshape(-1, 2)

    def geom_type_of(self, i):
        return self.geometries[i].shape.geom_type

    def _is_static(self, j):
        return j == 0

    def _limits(self):
        """1-DOF joints (revolute, prismatic, ...) with q̇ = v and finite position limits."""
        m = self.model
        iq, iv, lo, hi = [], [], [], []
        for j in range(1, m.njoints):
            if m.nqs[j] == 1 and m.nvs[j] == 1:
                a, b = m.lowerPositionLimit[m.idx_qs[j]], m.upperPositionLimit[m.idx_qs[j]]
                if np.isfinite(a) or np.isfinite(b):
                    iq.append(m.idx_qs[j])
                    iv.append(m.idx_vs[j])
                    lo.append(a if np.isfinite(a) else -np.inf)
                    hi.append(b if np.isfinite(b) else np.inf)
        self.limit_q = np.array(iq, dtype=np.int64)
        self.limit_v = np.array(iv, dtype=np.int64)
        self.limit_lower = np.array(lo, dtype=float)
        self.limit_upper = np.array(hi, dtype=float)

    def _couplers(self):
        """Flat coupler arrays: c = q[coupler_q0] − coupler_ratio q[coupler_q1] − coupler_offset = 0,
        ċ = v[coupler_v0] − coupler_ratio v[coupler_v1] (1-DOF joints, q̇ = v)."""
        m = self.model
        cs = self.couplers
        self.coupler_q0 = np.array([m.idx_qs[c.joint0] for c in cs], dtype=np.int64)
        self.coupler_v0 = np.array([m.idx_vs[c.joint0] for c in cs], dtype=np.int64)
        self.coupler_q1 = np.array([m.idx_qs[c.joint1] for c in cs], dtype=np.int64)
        self.coupler_v1 = np.array([m.idx_vs[c.joint1] for c in cs], dtype=np.int64)
        self.coupler_ratio = np.array([c.ratio for c in cs], dtype=float)
        self.coupler_offset = np.array([c.offset for c in cs], dtype=float)

    # -- conveniences -----------------------------------------------------------------------------------------
    @property
    def nq(self):
        return self.model.nq

    @property
    def nv(self):
        return self.model.nv

    def joint_id(self, body_name):
        """Pinocchio joint index of a body added with :meth:`cenic_gym.builder.SceneBuilder.add_body`."""
        if not self.model.existJointName(body_name):
            raise KeyError(f"no body/joint named {body_name!r}; known: {list(self.model.names)[1:]}")
        return self.model.getJointId(body_name)

    def q_slice(self, body_name):
        j = self.joint_id(body_name)
        return slice(self.model.idx_qs[j], self.model.idx_qs[j] + self.model.nqs[j])

    def v_slice(self, body_name):
        j = self.joint_id(body_name)
        return slice(self.model.idx_vs[j], self.model.idx_vs[j] + self.model.nvs[j])

    def frame_id(self, frame_name):
        """Pinocchio frame index (robot links: ``"<robot>/<link>"``)."""
        if not self.model.existFrame(frame_name):
            raise KeyError(f"no frame named {frame_name!r}")
        return self.model.getFrameId(frame_name)

    def robot(self, name) -> RobotInfo:
        if name not in self.robots:
            raise KeyError(f"no robot named {name!r}; robots: {sorted(self.robots)}")
        return self.robots[name]

    def _robot_joints(self, robot, joints):
        info = self.robot(robot)
        if joints is None:
            return [int(j) for j in info.joint_ids]
        if isinstance(joints, str):
            joints = [joints]
        ids = []
        for jn in joints:
            full = jn if self.model.existJointName(jn) and jn.startswith(f"{robot}/") else f"{robot}/{jn}"
            if not self.model.existJointName(full):
                raise KeyError(f"robot {robot!r} has no joint {jn!r}; joints: {list(info.joints)}")
            ids.append(self.model.getJointId(full))
        return ids

    def robot_joint_ids(self, robot, joints=None):
        """Joint indices of a robot's joints (names as in its file, or prefixed); all but a free base by default."""
        return np.array(self._robot_joints(robot, joints), dtype=np.int64)

    def robot_q_indices(self, robot, joints=None):
        """Indices into q of a robot's joints (concatenated, in the given order)."""
        m = self.model
        idx = [np.arange(m.idx_qs[j], m.idx_qs[j] + m.nqs[j]) for j in self._robot_joints(robot, joints)]
        return np.concatenate(idx).astype(np.int64) if idx else np.zeros(0, dtype=np.int64)

    def robot_v_indices(self, robot, joints=None):
        """Indices into v of a robot's joints (concatenated, in the given order), e.g. for actuation."""
        m = self.model
        idx = [np.arange(m.idx_vs[j], m.idx_vs[j] + m.nvs[j]) for j in self._robot_joints(robot, joints)]
        return np.concatenate(idx).astype(np.int64) if idx else np.zeros(0, dtype=np.int64)

    def free_body_force(self, q, body_name, force, torque=(0.0, 0.0, 0.0), out=None):
        """Generalized force (nv,) of a world-frame force [N] at a free body's origin and a world torque [N m]:
        [f; Rᵀ τ] (the free-body joint's linear velocity is world-frame, its angular velocity body-frame)."""
        qb = q[self.q_slice(body_name)]
        R = quat_xyzw_to_matrix(qb[3:7])
        tau = np.zeros(self.nv) if out is None else out
        sl = self.v_slice(body_name)
        tau[sl] += np.concatenate([np.asarray(force, float), R.T @ np.asarray(torque, float)])
        return tau
