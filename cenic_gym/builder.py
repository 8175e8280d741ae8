"""Building scenes in code: :class:`SceneBuilder` assembles a :class:`~cenic_gym.model.MultibodySystem` from shapes,
free bodies, fixed geometry, couplers and robot model files.

Layering: :mod:`cenic_gym.model` holds the types (shapes, materials, the system), :mod:`cenic_gym.robots` reads URDF /
MJCF files into them, and this module builds on both; nothing below imports it.
Arguments are checked when a method is called (TypeError for a wrong type, ValueError for a wrong shape or a
non-finite pose, :class:`~cenic_gym.errors.ModelError` for a model that cannot be simulated), naming the argument.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from .errors import ModelError
from .model import (SHAPES, ContactMaterial, Coupler, Geometry, HalfSpace, MultibodySystem, RobotInfo, _check_inertia,
                    _finite, _material, _name, _positive, _rotation, _vec3, free_body_joint, matrix_to_quat_xyzw)
from .robots import add_robot


class SceneBuilder:
    """Build a :class:`MultibodySystem` from primitive and convex shapes.

    Example::

        b = SceneBuilder()
        b.add_ground(ContactMaterial(stiffness=1e5, mu_static=0.5))
        b.add_body("ball", Sphere(0.05), mass=0.5, position=(0, 0, 0.1))
        system = b.build()
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81), stiction_tolerance=1.0e-4):
        """gravity [m/s^2] (world frame); stiction_tolerance v_s [m/s] > 0 of the regularized friction (ICF §V-B)."""
        self.model = pin.Model()
        self.model.gravity = pin.Motion(_vec3(gravity, "gravity"), np.zeros(3))
        self.stiction_tolerance = _positive(stiction_tolerance, "stiction_tolerance")
        self.geometries: list[Geometry] = []
        self.q0: list[np.ndarray] = []
        self.v0: list[np.ndarray] = []
        self.body_names: list[str] = []
        self.disabled_pairs: set = set()
        self.couplers: list[Coupler] = []
        self.robots: dict[str, RobotInfo] = {}

    def _unique_geom_name(self, base):
        names = {g.name for g in self.geometries}
        if base not in names:
            return base
        i = 1
        while f"{base}_{i}" in names:
            i += 1
        return f"{base}_{i}"

    def add_ground(self, material=ContactMaterial(), height=0.0, normal=(0.0, 0.0, 1.0), name="ground"):
        """Fixed half-space whose boundary passes through ``height * e_z`` [m] with outward ``normal`` (world; any
        non-zero length, it is normalized)."""
        material = _material(material)
        height = _finite(height, "height")
        name = _name(name, "ground name")
        n = _vec3(normal, "normal")
        length = float(np.linalg.norm(n))
        if not length > 0.0:
            raise ModelError(f"ground normal must be a non-zero vector, got normal={normal!r}")
        # the rotation taking the half-space's +z to n (the half turn about x for n = -z)
        R = pin.Quaternion.FromTwoVectors(np.array([0.0, 0.0, 1.0]), n / length).toRotationMatrix()
        self.geometries.append(Geometry(self._unique_geom_name(name), HalfSpace(), 0,
                                        pin.SE3(R, np.array([0.0, 0.0, height])), material))
        return self

    def add_fixed(self, name, shape, position=(0, 0, 0), rotation=None, material=ContactMaterial()):
        """A shape welded to the world at the given pose (world frame): position [m], rotation (3x3, rpy [rad] or
        quaternion xyzw)."""
        name = _name(name, "geometry name")
        shape = self._check_shape(shape)
        pose = pin.SE3(_rotation(rotation), _vec3(position, "position"))
        material = _material(material)
        self.geometries.append(Geometry(self._unique_geom_name(name), shape, 0, pose, material))
        return self

    def add_body(self, name, shapes, mass=None, density=None, position=(0, 0, 0), rotation=None,
                 velocity=(0, 0, 0), angular_velocity=(0, 0, 0), material=ContactMaterial(), inertia=None):
        """A free rigid body (:func:`free_body_joint`) made of one or several shapes.

        shapes:   a shape, or a non-empty list of (shape, pin.SE3 placement in the body frame).
        mass [kg] or density [kg/m^3]: exactly one, unless ``inertia`` (a pin.Inertia: mass > 0, rotational
                  inertia about the centre of mass positive definite, triangle inequality) is given instead.
        position [m], rotation (3x3, rpy or quaternion xyzw): body frame in the world at t = 0.
        velocity [m/s], angular_velocity [rad/s]: world-frame initial velocity of the body origin.
        """
        name = _name(name, "body name")
        if self.model.existJointName(name):
            raise ValueError(f"a body named {name!r} already exists")
        items = self._body_shapes(shapes)
        material = _material(material)
        if inertia is None:
            if (mass is None) == (density is None):
                raise ValueError(f"body {name!r}: give exactly one of mass or density (got mass={mass!r}, density={density!r})")
            vols = np.array([s.volume() for s, _ in items])
            if density is None:
                density = _positive(mass, f"body {name!r}: mass") / vols.sum()
            density = _positive(density, f"body {name!r}: density")
            inertia = pin.Inertia.Zero()
            for (shp, X), vol in zip(items, vols):
                inertia += X.act(shp.inertia(density * vol))
        else:
            if mass is not None or density is not None:
                raise ValueError(f"body {name!r}: give either inertia or mass/density, not both "
                                 f"(got mass={mass!r}, density={density!r} and an inertia)")
            if not isinstance(inertia, pin.Inertia):
                raise TypeError(f"body {name!r}: inertia must be a pinocchio.Inertia, got {inertia!r}")
            _check_inertia(inertia.mass, inertia.inertia, f"body {name!r}")
            _vec3(inertia.lever, f"body {name!r}: centre of mass of the inertia")
        R = _rotation(rotation)  # validate everything before touching the model
        q0 = np.concatenate([_vec3(position, "position"), matrix_to_quat_xyzw(R)])  # quaternion x, y, z, w
        v0 = np.concatenate([_vec3(velocity, "velocity"), R.T @ _vec3(angular_velocity, "angular_velocity")])
        jid = self.model.addJoint(0, free_body_joint(), pin.SE3.Identity(), name)
        self.model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        self.model.addBodyFrame(name, jid, pin.SE3.Identity(), 0)
        for k, (shp, X) in enumerate(items):
            self.geometries.append(Geometry(self._unique_geom_name(f"{name}/{k}"), shp, jid, X, material))
        self.q0.append(q0)
        self.v0.append(v0)
        self.body_names.append(name)
        return self

    def add_robot(self, robot, name=None, base=None, position=(0, 0, 0), rotation=None, material=ContactMaterial(),
                  package_dirs=None, srdf=None, q0=None, armature=None, damping=None, self_collision=True,
                  fuse_capsules=True, exclude_links=None):
        """Merge a robot from a URDF (+ SRDF) or MJCF file, or a preset of :data:`cenic_gym.robots.PRESETS`.

        robot:    path of a ``.urdf`` / ``.xml`` (MJCF) file, or a preset name ("panda", "allegro", "go1", ...).
        name:     prefix of the robot's joint, frame and geometry names in the system (``"<name>/<file name>"``);
                  default: the preset's name, else the file's robot name.
        base:     "fixed": the root link is welded to the world at (position, rotation); "free": the root link
                  hangs on a :func:`free_body_joint` (named ``"<name>/root_joint"``) whose initial pose is
                  (position, rotation). Default: the preset's base, else "fixed".
        position [m], rotation (3x3, rpy or quaternion xyzw): pose of the root link in the world.
        material: the :class:`ContactMaterial` of every collision geometry of the robot.
        package_dirs: where ``package://`` mesh URIs are resolved (default: example-robot-data's share directory
                  and the file's ancestors).
        srdf:     SRDF file: its ``<disable_collisions>`` pairs are filtered out and its ``<group_state>``s can
                  be named by ``q0``. Without an SRDF, geometries of parent/child bodies and pairs that touch in the
                  neutral configuration never collide.
        q0:       initial configuration of the robot's joints (a free base's pose comes from position/rotation):
                  None (the preset's SRDF state, else the neutral configuration), the name of an SRDF group
                  state, a dict {joint name: value(s)} (others neutral; MJCF: qpos0) or an array of the joints' q
                  in model order. Values are clipped to the position limits; joints driven by a coupler (URDF ``<mimic>``)
                  follow their source unless given explicitly. v0 = 0.
        armature, damping: override the file's rotor inertia [kg m^2] / viscous damping [N m s/rad] of the
                  robot's joints: a number for all joints or a dict {joint name: value}.
        self_collision: False disables every pair of the robot's own geometries.
        fuse_capsules: a cylinder with a sphere of its radius on each end cap (one link) becomes one exact Capsule.
        exclude_links: names of links whose collision geometry is dropped (default: the preset's, e.g. the Go1's
                  1 mm sensor boxes; else none).

        Joint limits (position, velocity, effort), damping, armature and Coulomb friction of the file are kept in
        the Pinocchio model; ``<mimic>`` tags (MJCF: linear ``<equality><joint>``) become :class:`Coupler`s and
        both joints stay independent DOFs. Collision meshes become their convex hulls (:class:`ConvexMesh`).

        A missing file, malformed XML or a model that cannot be simulated (a non-numeric value, a negative mass,
        an inertia that is not positive semi-definite, lower > upper joint limits, a zero joint axis, a size
        <= 0, a flat collision mesh) raises :class:`~cenic_gym.errors.ModelError` naming the file, the link or
        joint and the value (:func:`cenic_gym.robots.check_urdf`, :func:`~cenic_gym.robots.check_mjcf`)."""
        add_robot(self, robot, name, base, position, rotation, material, package_dirs, srdf, q0, armature, damping,
                  self_collision, fuse_capsules, exclude_links)
        return self

    def _joint_index(self, joint, name="joint"):
        """Pinocchio index of a joint given by name or index (``name``: the argument, for messages)."""
        if isinstance(joint, (int, np.integer)) and not isinstance(joint, (bool, np.bool_)):
            if not 0 < int(joint) < self.model.njoints:
                raise ValueError(f"{name}: joint index {joint!r} out of range 1..{self.model.njoints - 1}")
            return int(joint)
        if not isinstance(joint, str):
            raise TypeError(f"{name} must be a joint name or index, got {joint!r}")
        if not self.model.existJointName(joint):
            raise ValueError(f"{name}: no joint named {joint!r}; known: {list(self.model.names)[1:]}")
        return self.model.getJointId(joint)

    def add_coupler(self, joint0, joint1, ratio=1.0, offset=0.0):
        """Couple two 1-DOF joints (names or indices): q[joint0] = ratio q[joint1] + offset [m or rad]
        (docs/physics.md §2.8).

        Both joints stay independent DOFs; the constraint is enforced by the solver's coupler pool."""
        j0, j1 = self._joint_index(joint0, "joint0"), self._joint_index(joint1, "joint1")
        if j0 == j1:
            raise ValueError(f"a coupler needs two different joints, got {joint0!r} twice")
        for j, given in ((j0, joint0), (j1, joint1)):
            if not (self.model.nqs[j] == 1 and self.model.nvs[j] == 1):
                raise ValueError(f"couplers need 1-DOF joints (nq = nv = 1); {given!r} has nq={self.model.nqs[j]}, "
                                 f"nv={self.model.nvs[j]}")
        ratio, offset = _finite(ratio, "coupler ratio"), _finite(offset, "coupler offset")
        self.couplers.append(Coupler(j0, j1, ratio, offset))
        return self

    def disable_collision(self, geom_a, geom_b):
        """Never collide the geometries named ``geom_a`` and ``geom_b`` (both already added)."""
        names = [g.name for g in self.geometries]
        for arg, value in (("geom_a", geom_a), ("geom_b", geom_b)):
            if _name(value, arg) not in names:
                raise ValueError(f"{arg}: no geometry named {value!r}; known: {names}")
        if geom_a == geom_b:
            raise ValueError(f"disable_collision needs two different geometries, got {geom_a!r} twice")
        self.disabled_pairs.add((geom_a, geom_b))
        return self

    @staticmethod
    def _check_shape(shape, name="shape"):
        """``shape`` if it is one of :data:`SHAPES` (whose sizes were checked when it was made), else TypeError."""
        if not isinstance(shape, SHAPES):
            raise TypeError(f"{name} must be one of {[s.__name__ for s in SHAPES]}, got {shape!r}")
        return shape

    @classmethod
    def _body_shapes(cls, shapes):
        """add_body's ``shapes`` as a list of (shape, pin.SE3 placement): one shape, or a non-empty list of pairs."""
        if not isinstance(shapes, (list, tuple)):
            items = [(cls._check_shape(shapes, "shapes"), pin.SE3.Identity())]
        elif not shapes:
            raise ValueError(f"shapes must be a shape or a non-empty list of (shape, pin.SE3) pairs, got {shapes!r}")
        else:
            items = []
            for k, item in enumerate(shapes):
                if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[1], pin.SE3)):
                    raise TypeError(f"shapes[{k}] must be a (shape, pin.SE3 placement) pair, got {item!r}")
                items.append((cls._check_shape(item[0], f"shapes[{k}][0]"), item[1]))
        for k, (shp, _) in enumerate(items):
            if isinstance(shp, HalfSpace):
                raise ValueError(f"shapes: a HalfSpace can only be fixed (use add_ground), got it as shape {k}")
        return items

    def build(self) -> MultibodySystem:
        q0 = np.concatenate(self.q0) if self.q0 else np.zeros(0)
        v0 = np.concatenate(self.v0) if self.v0 else np.zeros(0)
        return MultibodySystem(self.model, list(self.geometries), q0, v0, list(self.body_names),
                               set(self.disabled_pairs), self.stiction_tolerance, list(self.couplers),
                               dict(self.robots))
