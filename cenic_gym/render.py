"""Rendering of a :class:`~cenic_gym.model.MultibodySystem`: a MuJoCo *visual twin* for offscreen RGB images and a
meshcat (browser) or MuJoCo (window) live viewer.

The physics stays ours; MuJoCo only draws. :func:`visual_geoms` lists what to draw once per system: the robots'
*visual* meshes from their URDF/MJCF files (example-robot-data's Collada / STL files, read through Pinocchio and coal)
and, for everything else (free bodies, the ground, robots without visual geometry), the collision shapes themselves.
Every geometry moving with a Pinocchio joint hangs on one MuJoCo *mocap* body per joint; a frame sets those bodies to
the joints' world placements (``pin.forwardKinematics`` on the state) and runs ``mj_kinematics`` (no dynamics, no
contacts: the twin has no degrees of freedom), then ``mujoco.Renderer`` draws offscreen.

Offscreen GL: ``MUJOCO_GL=egl`` (Mesa's software EGL works without a GPU or display) unless the user set
``MUJOCO_GL`` before; it must be set before ``mujoco`` is first imported, which :func:`import_mujoco` does.

Nothing here is imported or built while an env's ``render_mode`` is None.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from .model import ConvexMesh, HalfSpace
from .mujoco_model import RenderError, add_geom, geom_kind_size, import_mujoco, quat_wxyz

DEFAULT_WIDTH, DEFAULT_HEIGHT = 640, 480  # [px]
MAX_SIZE = 4096  # [px] largest width or height of an offscreen frame
GROUND_HALF_SIZE = 25.0  # [m] half side of the drawn square of an (infinite) ground half-space
CAMERA_KEYS = ("lookat", "distance", "azimuth", "elevation", "track")
# colours (RGBA) of shapes without a colour of their own: robot links, then free bodies in turn
ROBOT_RGBA = (0.82, 0.82, 0.85, 1.0)
BODY_PALETTE = ((0.85, 0.33, 0.10, 1.0), (0.12, 0.47, 0.71, 1.0), (0.17, 0.63, 0.17, 1.0),
                (0.58, 0.40, 0.74, 1.0), (0.89, 0.47, 0.76, 1.0), (0.74, 0.74, 0.13, 1.0))
FIXED_RGBA = (0.55, 0.55, 0.58, 1.0)
# visual meshes with more faces are simplified (vertex clustering on a grid of diagonal / MESH_CELLS): software GL
# draws every triangle twice a frame (shadow map + image) and the Go1's Collada meshes have 680 k of them
MESH_FACES, MESH_CELLS = 6000, 100


# --------------------------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Marker:
    """A task marker drawn into rgb_array frames only (not part of the physics): a goal region, a target pose.
    ``kind``: "cylinder" (``size`` = (radius, half-height)), "sphere" ((radius,)) or "box" (half-extents); ``pos``
    [m] world centre; ``rgba`` colour (translucent by default)."""

    kind: str
    pos: tuple
    size: tuple
    rgba: tuple = (0.1, 0.8, 0.2, 0.45)


@dataclass(frozen=True)
class Camera:
    """A free orbit camera (MuJoCo's ``mjvCamera``): it looks at ``lookat`` [m, world frame] from ``distance`` [m],
    ``azimuth`` [deg] about world z (0: looking along +x) and ``elevation`` [deg] (negative: from above).
    ``track``: "" for a fixed camera, or the name of a joint / body whose world position is added to ``lookat``
    (the camera follows it, e.g. a walking robot's base)."""

    lookat: tuple = (0.0, 0.0, 0.0)
    distance: float = 2.0
    azimuth: float = 90.0
    elevation: float = -25.0
    track: str = ""

    @classmethod
    def from_config(cls, value, where="camera"):
        """A Camera from a dict with the keys :data:`CAMERA_KEYS` (missing ones keep the class defaults); an
        unknown key or a bad value raises ValueError naming it."""
        if isinstance(value, Camera):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be a dict with keys {list(CAMERA_KEYS)}, got {value!r}")
        unknown = set(value) - set(CAMERA_KEYS)
        if unknown:
            raise ValueError(f"{where} has unknown keys {sorted(unknown)}; known: {list(CAMERA_KEYS)}")
        v = {**cls().__dict__, **value}
        try:
            lookat = np.asarray(v["lookat"], dtype=float)
        except (TypeError, ValueError):
            lookat = None
        if lookat is None or lookat.shape != (3,) or not np.all(np.isfinite(lookat)):
            raise ValueError(f"{where}['lookat'] must be three finite numbers [m], got {v['lookat']!r}")
        for key in ("distance", "azimuth", "elevation"):
            x = v[key]
            if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not math.isfinite(x):
                raise ValueError(f"{where}['{key}'] must be a finite number, got {x!r}")
        if not v["distance"] > 0:
            raise ValueError(f"{where}['distance'] must be > 0 [m], got {v['distance']!r}")
        if not -90.0 <= v["elevation"] <= 90.0:
            raise ValueError(f"{where}['elevation'] must be in [-90, 90] degrees, got {v['elevation']!r}")
        if not isinstance(v["track"], str):
            raise ValueError(f"{where}['track'] must be a joint or body name or '', got {v['track']!r}")
        return cls(tuple(float(x) for x in lookat), float(v["distance"]), float(v["azimuth"]),
                   float(v["elevation"]), v["track"])


def check_size(width, height):
    """(width, height) of a frame [px] as ints in 1..:data:`MAX_SIZE`, else ValueError naming the value."""
    out = []
    for name, value in (("render_width", width), ("render_height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_SIZE:
            raise ValueError(f"{name} must be an integer in 1..{MAX_SIZE} [px], got {value!r}")
        out.append(int(value))
    return tuple(out)


# --------------------------------------------------------------------------------------------------------------
# What to draw
# --------------------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class VisualGeom:
    """One drawn geometry. kind: "sphere", "box", "capsule", "cylinder", "mesh" or "plane"; size (3,) [m] in
    MuJoCo's convention (radius / half lengths, as our shapes' ``size()``); vertices (n, 3) [m] and faces (m, 3) of a
    mesh in the geometry frame; joint: the Pinocchio joint it moves with (0: fixed to the world); placement: the
    geometry frame in that joint's frame; geom: index into ``system.geometries`` when it draws a collision shape
    (its size follows the simulator's current shape), -1 for a visual mesh."""

    name: str
    kind: str
    size: np.ndarray
    rgba: tuple
    joint: int
    placement: pin.SE3
    geom: int = -1
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None


def _shape_geom(name, shape, rgba, joint, placement, geom):
    """VisualGeom of one of our collision shapes (kind and size: :func:`cenic_gym.mujoco_model.geom_kind_size`; a
    half-space drawn as a square of half side :data:`GROUND_HALF_SIZE`)."""
    kind, size = geom_kind_size(shape)
    if isinstance(shape, HalfSpace):
        return VisualGeom(name, kind, np.array([GROUND_HALF_SIZE, GROUND_HALF_SIZE, 0.05]), rgba, joint,
                          placement, geom)
    if isinstance(shape, ConvexMesh):
        from scipy.spatial import ConvexHull

        hull = ConvexHull(shape.vertices)
        return VisualGeom(name, kind, size, rgba, joint, placement, geom, np.asarray(shape.vertices, float),
                          np.asarray(hull.simplices, np.int32))
    return VisualGeom(name, kind, size, rgba, joint, placement, geom)


def simplify_mesh(vertices, faces, cell):
    """Vertex clustering: vertices (n, 3) [m] merged per cubic cell of side ``cell`` [m] (their mean), faces (m, 3)
    re-indexed, collapsed and repeated faces dropped. Returns (vertices, faces); detail below ``cell`` is lost."""
    keys = np.floor(np.asarray(vertices) / cell).astype(np.int64)
    _, cluster, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    cluster = cluster.ravel()
    merged = np.zeros((counts.shape[0], 3))
    np.add.at(merged, cluster, vertices)
    merged /= counts[:, None]
    f = cluster[np.asarray(faces)]
    keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
    f = f[keep]
    _, first = np.unique(np.sort(f, axis=1), axis=0, return_index=True)
    return merged, f[np.sort(first)].astype(np.int32)


def _coal_geom(name, geometry, rgba, joint, placement):
    """VisualGeom of a coal geometry from a robot file's visual model (None: a kind we do not draw)."""
    import coal

    if isinstance(geometry, coal.BVHModelBase):
        verts = np.asarray(geometry.vertices(), dtype=float).reshape(-1, 3)
        faces = np.empty((geometry.num_tris, 3), dtype=np.int32)
        for i in range(geometry.num_tris):  # once per mesh when the twin is built (coal gives one triangle a call)
            t = geometry.tri_indices(i)
            faces[i] = (t[0], t[1], t[2])
        if faces.shape[0] > MESH_FACES:
            extent = float(np.linalg.norm(verts.max(axis=0) - verts.min(axis=0)))
            verts, faces = simplify_mesh(verts, faces, extent / MESH_CELLS)
        return VisualGeom(name, "mesh", np.zeros(3), rgba, joint, placement, -1, verts, faces)
    if isinstance(geometry, coal.Box):
        return VisualGeom(name, "box", np.asarray(geometry.halfSide, float), rgba, joint, placement)
    if isinstance(geometry, coal.Sphere):
        return VisualGeom(name, "sphere", np.array([geometry.radius, 0, 0]), rgba, joint, placement)
    if isinstance(geometry, coal.Capsule):
        return VisualGeom(name, "capsule", np.array([geometry.radius, geometry.halfLength, 0]), rgba, joint, placement)
    if isinstance(geometry, coal.Cylinder):
        return VisualGeom(name, "cylinder", np.array([geometry.radius, geometry.halfLength, 0]), rgba, joint,
                          placement)
    return None


def robot_visual_geoms(system, robot):
    """The visual geometry of ``robot`` (a name in ``system.robots``) from its model file, placed on the system's
    joints; None if the file has no visual geometry we can draw (then its collision shapes are drawn)."""
    from .robots import default_package_dirs

    info = system.robots[robot]
    path = Path(info.source)
    try:
        if path.suffix.lower() == ".urdf":
            R = pin.buildModelFromUrdf(str(path))
            V = pin.buildGeomFromUrdf(R, str(path), pin.VISUAL, package_dirs=default_package_dirs(path))
        else:
            R = pin.buildModelFromMJCF(str(path))
            V = pin.buildGeomFromMJCF(R, str(path), pin.VISUAL)
    except (RuntimeError, ValueError, OSError):
        return None
    m = system.model
    out = []
    for go in V.geometryObjects:
        frame = R.frames[go.parentFrame]
        full = f"{robot}/{frame.name}"
        if not m.existFrame(full):
            continue
        f = m.frames[m.getFrameId(full)]
        # go.placement is in the robot file's parent-joint frame; re-express it in the system's joint frame
        X = f.placement * frame.placement.inverse() * go.placement
        rgba = tuple(float(c) for c in go.meshColor)
        if np.allclose(rgba, (0.9, 0.9, 0.9, 1.0)):  # Pinocchio's default: the file gave no colour
            rgba = ROBOT_RGBA
        g = _coal_geom(f"{robot}/{go.name}", go.geometry, rgba, int(f.parentJoint), X)
        if g is not None:
            out.append(g)
    return out or None


def visual_geoms(system):
    """Everything to draw for ``system``: each robot's visual geometry (else its collision shapes) and the
    collision shapes of every other geometry (ground, fixed shapes, free bodies), in a fixed order."""
    out = []
    drawn_robots = set()
    for name in system.robots:
        geoms = robot_visual_geoms(system, name)
        if geoms is not None:
            out += geoms
            drawn_robots.add(name)
    robot_geoms = {g for r in drawn_robots for g in system.robots[r].geometries}
    all_robot_geoms = {g for info in system.robots.values() for g in info.geometries}
    colour_of_joint = {}
    for i, g in enumerate(system.geometries):
        if g.name in robot_geoms:
            continue
        if g.joint == 0:
            rgba = FIXED_RGBA
        elif g.name in all_robot_geoms:
            rgba = ROBOT_RGBA
        else:
            rgba = colour_of_joint.setdefault(g.joint, BODY_PALETTE[len(colour_of_joint) % len(BODY_PALETTE)])
        out.append(_shape_geom(g.name, g.shape, rgba, int(g.joint), g.placement, i))
    return out


# --------------------------------------------------------------------------------------------------------------
# The MuJoCo twin
# --------------------------------------------------------------------------------------------------------------


def build_twin_model(geoms, width, height):
    """The MuJoCo model of the twin: one mocap body per moving joint, the geometries on it, lights, a checker
    ground material; offscreen buffer of width × height [px]. Returns (MjModel, joints of the mocap bodies)."""
    mujoco = import_mujoco()
    spec = mujoco.MjSpec()
    spec.modelname = "cenic_twin"
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.visual.global_.offwidth, spec.visual.global_.offheight = width, height
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.5, 0.5, 0.5]
    spec.visual.quality.shadowsize = 2048
    tex = spec.add_texture(name="checker", type=mujoco.mjtTexture.mjTEXTURE_2D,
                           builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER, width=256, height=256,
                           rgb1=[0.78, 0.80, 0.82], rgb2=[0.66, 0.68, 0.70])
    mat = spec.add_material(name="ground", texrepeat=[2, 2], texuniform=True)  # 0.5 m checker squares
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
    spec.add_texture(name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX, builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
                     width=64, height=64, rgb1=[0.55, 0.65, 0.78], rgb2=[0.93, 0.94, 0.96])
    light = spec.worldbody.add_light(pos=[0.0, 0.0, 4.0], dir=[0.0, 0.0, -1.0], castshadow=True,
                                     diffuse=[0.6, 0.6, 0.6])
    if hasattr(mujoco, "mjtLightType"):  # mujoco >= 3.3.3; before that a bool ``directional``
        light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    else:
        light.directional = True
    joints = sorted({g.joint for g in geoms if g.joint != 0})
    bodies = {0: spec.worldbody}
    for j in joints:
        bodies[j] = spec.worldbody.add_body(name=f"joint{j}", mocap=True)
    for k, g in enumerate(geoms):
        look = dict(material="ground") if g.kind == "plane" else dict(rgba=list(g.rgba))
        add_geom(mujoco, spec, bodies[g.joint], g.kind, g.size, g.placement, name=f"visual{k}", vertices=g.vertices,
                 faces=g.faces, contype=0, conaffinity=0, **look)
    return spec.compile(), joints


@dataclass(eq=False)
class VisualTwin:
    """Offscreen renderer of a system: ``render(q, shapes)`` -> (height, width, 3) uint8 RGB image.

    system: the MultibodySystem; width, height [px]; camera: a :class:`Camera` (or its dict). The MuJoCo model,
    data and GL context are built here, once."""

    system: object
    width: int = DEFAULT_WIDTH
    height: int = DEFAULT_HEIGHT
    camera: Camera = field(default_factory=Camera)

    def __post_init__(self):
        self.width, self.height = check_size(self.width, self.height)
        self.camera = Camera.from_config(self.camera)
        m = self.system.model
        if self.camera.track and not (m.existJointName(self.camera.track) or m.existFrame(self.camera.track)):
            raise ValueError(f"camera['track']={self.camera.track!r} is not a joint or body of the system")
        self.mujoco = import_mujoco()
        self.geoms = visual_geoms(self.system)
        self.model, self.joints = build_twin_model(self.geoms, self.width, self.height)
        self.data = self.mujoco.MjData(self.model)
        self._kin = m.createData()
        ids = [self.model.geom(f"visual{k}").id for k in range(len(self.geoms))]  # MuJoCo orders geoms by body
        self._resizable = [(ids[k], g.geom) for k, g in enumerate(self.geoms) if g.geom >= 0 and g.kind != "plane"
                           and g.kind != "mesh"]
        # world-fixed primitives (a mesh's compiled frame is its own: MuJoCo recentres meshes)
        self._movable = [(ids[k], g.geom) for k, g in enumerate(self.geoms) if g.geom >= 0 and g.joint == 0
                         and g.kind != "mesh"]
        self._renderer = None

    def _gl(self):
        if self._renderer is None:
            try:
                self._renderer = self.mujoco.Renderer(self.model, self.height, self.width)
            except Exception as e:  # mujoco raises plain Exceptions / RuntimeErrors / ImportErrors from its GL layer
                backend = os.environ.get("MUJOCO_GL", "(unset: mujoco was imported before cenic_gym could set egl)")
                raise RenderError(
                    f"cannot create an offscreen OpenGL context with MUJOCO_GL={backend}: {type(e).__name__}: {e}. "
                    "Headless machines need MUJOCO_GL=egl and the EGL/Mesa libraries (Debian/Ubuntu: apt-get "
                    "install libegl1 libgl1-mesa-dri; or MUJOCO_GL=osmesa with libosmesa6); machines with a "
                    "display can use MUJOCO_GL=glfw.") from None
        return self._renderer

    def pose(self, q, shapes=None, placements=None):
        """Move the twin to configuration ``q`` (nq,); ``shapes``: the simulator's current collision shapes (one
        per system geometry) when they may differ from the built ones (domain randomization); ``placements``: its
        current geometry placements (:meth:`~cenic_gym.simulator.Simulator.geometry_placements`: world-fixed
        scenery moved per episode)."""
        m = self.system.model
        pin.forwardKinematics(m, self._kin, np.asarray(q, dtype=float))
        for b, j in enumerate(self.joints):
            X = self._kin.oMi[j]
            self.data.mocap_pos[b] = X.translation
            self.data.mocap_quat[b] = quat_wxyz(X.rotation)
        if shapes is not None:
            for k, i in self._resizable:
                self.model.geom_size[k] = shapes[i].size()
        if placements is not None:
            for k, i in self._movable:
                self.model.geom_pos[k] = placements[i].translation
                self.model.geom_quat[k] = quat_wxyz(placements[i].rotation)
        self.mujoco.mj_kinematics(self.model, self.data)

    def mjv_camera(self):
        """The :class:`Camera` as a ``mujoco.MjvCamera`` at the current pose (tracking applied)."""
        cam = self.mujoco.MjvCamera()
        c = self.camera
        lookat = np.array(c.lookat)
        if c.track:
            m = self.system.model
            if m.existJointName(c.track):
                lookat = lookat + self._kin.oMi[m.getJointId(c.track)].translation
            else:
                fid = m.getFrameId(c.track)
                lookat = lookat + pin.updateFramePlacement(m, self._kin, fid).translation
        cam.lookat[:] = lookat
        cam.distance, cam.azimuth, cam.elevation = c.distance, c.azimuth, c.elevation
        return cam

    def render(self, q, shapes=None, markers=(), placements=None):
        """RGB image (height, width, 3) uint8 of the system at configuration ``q``, with the task's ``markers``
        (:class:`Marker`) drawn as extra visual geometry of this frame."""
        renderer = self._gl()
        self.pose(q, shapes, placements)
        renderer.update_scene(self.data, camera=self.mjv_camera())
        mj, scene = self.mujoco, renderer.scene
        kinds = {"cylinder": mj.mjtGeom.mjGEOM_CYLINDER, "sphere": mj.mjtGeom.mjGEOM_SPHERE,
                 "box": mj.mjtGeom.mjGEOM_BOX}
        for m in markers:
            if scene.ngeom >= scene.maxgeom:
                break
            size = np.zeros(3)
            size[:len(m.size)] = m.size
            mj.mjv_initGeom(scene.geoms[scene.ngeom], kinds[m.kind], size, np.asarray(m.pos, float),
                            np.eye(3).ravel(), np.asarray(m.rgba, np.float32))
            scene.ngeom += 1
        return renderer.render()

    def close(self):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


# --------------------------------------------------------------------------------------------------------------
# Live viewers (render_mode="human")
# --------------------------------------------------------------------------------------------------------------


def _meshcat_objects(g):
    """[(meshcat geometry, pin.SE3 of it in the VisualGeom frame)] drawing one VisualGeom (meshcat's cylinders lie
    along their y axis, ours along z)."""
    import meshcat.geometry as mg

    Rx = pin.SE3(pin.utils.rotate("x", math.pi / 2), np.zeros(3))
    up = lambda h: pin.SE3(np.eye(3), np.array([0.0, 0.0, h]))  # noqa: E731
    if g.kind == "mesh":
        return [(mg.TriangularMeshGeometry(g.vertices, g.faces), pin.SE3.Identity())]
    if g.kind == "box":
        return [(mg.Box(2 * g.size), pin.SE3.Identity())]
    if g.kind == "sphere":
        return [(mg.Sphere(g.size[0]), pin.SE3.Identity())]
    if g.kind == "cylinder":
        return [(mg.Cylinder(2 * g.size[1], g.size[0]), Rx)]
    if g.kind == "capsule":
        r, h = g.size[0], g.size[1]
        return [(mg.Cylinder(2 * h, r), Rx), (mg.Sphere(r), up(h)), (mg.Sphere(r), up(-h))]
    return [(mg.Box([2 * g.size[0], 2 * g.size[1], 1e-3]), up(-5e-4))]  # plane: a thin square below z = 0


class MeshcatViewer:
    """Browser viewer (meshcat): works on remote and headless machines; open :attr:`url`. ``zmq_url``: an existing
    meshcat-server (None starts one in a subprocess). One scene node per moving joint, moved each frame."""

    def __init__(self, system, geoms, zmq_url=None):
        try:
            import meshcat
            import meshcat.geometry as mg
        except ImportError as e:
            raise RenderError(f"render_mode='human' without a display needs meshcat ({e}); pip install meshcat") \
                from None
        self.system, self.kin = system, system.model.createData()
        self.vis = meshcat.Visualizer(zmq_url=zmq_url)
        self.root = self.vis["cenic"]
        self.root.delete()
        self.joints = sorted({g.joint for g in geoms if g.joint != 0})
        for k, g in enumerate(geoms):
            colour = int(255 * g.rgba[0]) << 16 | int(255 * g.rgba[1]) << 8 | int(255 * g.rgba[2])
            material = mg.MeshLambertMaterial(color=colour, opacity=float(g.rgba[3]))
            for n, (obj, X) in enumerate(_meshcat_objects(g)):
                node = self.root[f"joint{g.joint}"][f"g{k}_{n}"]
                node.set_object(obj, material)
                node.set_transform((g.placement * X).homogeneous)

    @property
    def url(self):
        return self.vis.url()

    def show(self, q, shapes=None, placements=None):
        """Move the scene to configuration ``q`` (nq,). Shapes keep the sizes and world-fixed geometry the poses
        they had when the viewer was built."""
        pin.forwardKinematics(self.system.model, self.kin, np.asarray(q, dtype=float))
        for j in self.joints:
            self.root[f"joint{j}"].set_transform(self.kin.oMi[j].homogeneous)

    def close(self):
        """Disconnect; stop the meshcat-server this viewer started (meshcat 0.3's own ``close`` is broken)."""
        window = self.vis.window
        window.zmq_socket.close(linger=0)
        if window.server_proc is not None:
            window.server_proc.kill()
            window.server_proc.wait()


class MujocoViewer:
    """MuJoCo's interactive window (``mujoco.viewer.launch_passive``) on the twin; needs a display."""

    def __init__(self, twin):
        self.twin = twin
        import mujoco.viewer

        self.handle = mujoco.viewer.launch_passive(twin.model, twin.data)
        cam = twin.mjv_camera()
        self.handle.cam.lookat[:] = cam.lookat
        self.handle.cam.distance, self.handle.cam.azimuth = cam.distance, cam.azimuth
        self.handle.cam.elevation = cam.elevation

    def show(self, q, shapes=None, placements=None):
        with self.handle.lock():
            self.twin.pose(q, shapes, placements)
        self.handle.sync()

    def close(self):
        self.handle.close()


def has_display():
    """True when a window can be opened (an X11 or Wayland display, or macOS / Windows)."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


VIEWERS = ("auto", "meshcat", "mujoco")


def make_viewer(system, kind="auto", camera=None):
    """A live viewer: ``kind`` "mujoco" (a window; needs a display), "meshcat" (browser, headless) or "auto" (the
    window where a display exists, else meshcat)."""
    if kind not in VIEWERS:
        raise ValueError(f"viewer={kind!r} is not one of {VIEWERS}")
    if kind == "auto":
        kind = "mujoco" if has_display() else "meshcat"
    if kind == "mujoco":
        if not has_display():
            raise RenderError("viewer='mujoco' needs a display (DISPLAY / WAYLAND_DISPLAY is not set); use "
                              "viewer='meshcat' for a browser viewer on a headless machine")
        return MujocoViewer(VisualTwin(system, camera=camera or Camera()))
    viewer = MeshcatViewer(system, visual_geoms(system))
    print(f"cenic-gym: meshcat viewer at {viewer.url}", file=sys.stderr)
    return viewer
