"""Vacuum gripper: an array of spring-loaded bellows cups with a suction force element (CENIC §VII-D1, Fig. 13).

**The gripper** (URDF in ``assets/``, shipped as ``cenic_gym.assets``, written by :func:`gripper_urdf`) is a gantry: a fixed root link
``gantry`` at the pose given to :func:`add_suction_gripper`, prismatic joints ``x``, ``y``, ``z`` (world axes)
carrying the ``tool`` plate (1 kg, 12 × 12 × 2 cm box), and under the plate a ``rows × cols`` array of cups (4 cm
pitch; ``yaw=True`` adds a revolute ``yaw`` joint above the tool). Each cup (link ``cup_<i>``, 20 g) is a cylinder
(radius 15 mm, 19 mm long) whose lip is a ring of 6 spheres
(radius 1.5 mm, reaching 1 mm below the cylinder's bottom face: the lip plane, 20 mm below the cup top), on a
prismatic joint ``cup_<i>`` along the tool's z axis: q > 0 compresses the bellows (the cup moves up towards the
plate), q < 0 extends it; the joint limits are the bellows stroke (±5 mm). The lip spheres give every cup a
well-defined multi-point contact with flat faces, 1 mm proud of the cylinder's face (whose own contact with a box,
eight rim points from the numba box–cylinder kernel, stays speculative while the lips seal). The frame
``cup_<i>_mouth`` sits at the centre of the lip plane with its z axis pointing out of the mouth. The bellows spring is an implicit :class:`~cenic_gym.external.JointPD` with
q_d = 0 on the cup joints (:func:`cup_springs`; 1000 N/m, 1 N s/m); the gantry is positioned by a stiff implicit
JointPD with gravity feed-forward (:func:`gantry_pd`; 2e4 N/m, 600 N s/m; change its ``q_d`` to move or lift).

**Suction** (:class:`SuctionGripper`, an :class:`~cenic_gym.external.ExternalSystem`). Cup i sucks at its mouth
point C_i with mouth axis â_i (the mouth frame's z axis, out of the mouth). For every geometry G of every object
body (free bodies; by default all of them) let d be the signed distance from C_i to G [m] (negative when C_i is
inside G), N the closest point of G's boundary and n̂ G's outward normal at N (n̂ = (C − N)/d for d > 0; always
N = C − d n̂). The force on the object at N and its reaction on the cup at C are

    f_G = s · f(d) · max(0, −n̂·â) · n̂          [N, world frame]          f_cup = −f_G

    f(d) = f_max                                                   d ≤ d_sat
    f(d) = f_max · (d_sat/d − d_sat/d_cut) / (1 − d_sat/d_cut)       d_sat < d < d_cut
    f(d) = 0                                                       d ≥ d_cut

with s = 1 when the gripper is ``on``, 0 when off. f is the inverse-distance law f_max d_sat / d (CENIC: "a force
on nearby objects inversely proportional to distance"), saturated at f_max for d ≤ d_sat (a sealed cup: f_max is
the vacuum pressure times the cup area) and shifted by a constant so that it falls continuously to 0 at the cut-off
d_cut (no force jump). Defaults: f_max = 50 N per cup (≈ 71 kPa on the 15 mm cup), d_sat = 5 mm, d_cut = 5 cm.
The factor max(0, cos θ) = max(0, −n̂·â) makes suction directional: full strength straight in front of the mouth,
none beside or behind the cup. The pair is central (along C–N) and equal and opposite, so it exerts no net force or
torque on the system. Generalized forces use world Jacobians of the two points: τ = J_N,objᵀ f_G + J_C,cupᵀ f_cup
on ``dofs`` = the gantry joints, the cup joints and the object bodies' velocities (no effort limits).

**Seal/leak model** (``seal=True``, default). A cup only builds its vacuum where its lip meets the surface. Lip
points P_j = C + r (cos φ_j û + sin φ_j ŵ), j = 0 … 23 (r = 13.5 mm, the lip spheres' centre circle; û, ŵ the
mouth frame's x, y axes) at distance d_j from G have the relative gap e_j = d_j − d; each seals with the weight
w(e) = 1 for e ≤ seal_gap (0.5 mm), 0 for e ≥ leak_gap (2 mm), linear between, and the seal fraction
σ = mean_j w(e_j) multiplies the force: f_G = s · f(d) · max(0, cos θ) · σ · n̂. A flat face parallel to the mouth
gives σ = 1; a cup centred on a straight edge σ ≈ 0.52 (half its lip over the void, plus the points within
seal_gap of the edge); a face tilted by θ seals the points with r cos φ sin θ < 2 mm (σ = 1 up to 2°, ≈ 0.7 at
15°). **Payload** (:meth:`SuctionGripper.payload`): a sealed cup holds f_max / g statically (5.1 kg at 50 N) on a
level face; a cup with seal fraction σ holds σ f_max / g, so an off-centre pick with cups over an edge fails when
m g > Σ σ_i f_max (``tests/test_suction_env.py``). Dynamic loads (a box released from the air, fast lifts) need
margin, as on hardware.

**Shadowing.** The nearest object takes a cup's air flow: a pair whose distance exceeds that cup's nearest facing
pair (f > 0) by Δ gets the weight clamp(1 − Δ / shadow, 0, 1) (shadow = 5 mm), so a cup holding one box does not
pull its neighbours through it.

Distances: numba narrow phase (a zero-radius sphere at C and at the lip points against spheres, boxes, capsules;
one numba call for all cup–geometry pairs); coal (a 1 µm sphere, its radius added back) for cylinders and meshes.

**Time integration.** By default implicit: linearized about the predicted configuration q̃ = q^n ⊕ δt v^n (CENIC
§V-C, eq. 26–29). The diagonal ∂τ_i/∂q_i is analytic (:func:`_diagonal_kernel`, one numba call on the pair
records: the distance's gradient is the normal, the normal turns with the geometry and, over an edge, vertex or
curved surface, with the mouth's relative motion; the seal fraction moves with the lip points on the sloped part of
their weight; the shadowing weight with the distance to the nearest pair) for spheres, boxes and capsules, instead
of 1 + len(dofs) Python evaluations of the law (14 for one box), which stay the fallback for pairs with a coal
geometry (cylinders, meshes); off, or nothing within d_cut, costs nothing.
Suction is attractive and grows as the gap closes — a negative stiffness — so the diagonal of −∂τ/∂v is ≤ 0 for
approach motions, and those DOFs get C = 0: the law is then evaluated at q̃ (an explicit predictor) and error
control keeps the steps small while the gap closes. Positive entries (the centring stiffness f/ρ of a curved
object or an edge moving sideways under a cup) are kept. ``implicit=False`` gives the plain explicit treatment
τ = g(q^n) used by most simulators (CENIC Fig. 13b).
"""
from __future__ import annotations

import math
import tempfile
from importlib import resources
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
from numba import njit

from . import narrowphase as nph
from .contact import compute_kinematics
from .kinematics import joint_poses_from_q
from .external import ExternalSystem, JointPD, Linearization
from .builder import SceneBuilder
from .model import JOINT_GENERAL, Box, ContactMaterial, quat_xyzw_to_matrix

ASSET_DIR = Path(str(resources.files("cenic_gym.assets")))
DEFAULT_URDF = ASSET_DIR / "suction_gripper_2x2.urdf"

# Default geometry and masses of the gripper (SI units); the shipped URDFs are gripper_urdf(rows, cols).
CUP_RADIUS = 0.015  # [m]
CUP_LENGTH = 0.020  # [m] cup top to lip plane
CUP_MASS = 0.020  # [kg]
CUP_PITCH = 0.040  # [m] centre-to-centre
LIP_SPHERES = 6  # contact spheres on the lip
LIP_RADIUS = 0.0015  # [m]
LIP_DROP = 0.001  # [m] the lip spheres reach this far below the cylinder's bottom face
BELLOWS_GAP = 0.005  # [m] between the cup top and the plate at q = 0
STROKE = (-0.005, 0.005)  # [m] cup joint limits: extension (q < 0), compression (q > 0)
PLATE_SIZE = (0.12, 0.12, 0.02)  # [m] tool plate box; the tool frame is the centre of its bottom face
TOOL_MASS = 1.0  # [kg] plate
CARRIAGE_MASS = 1.0  # [kg] each of the x and y carriages
GANTRY_TRAVEL = 0.5  # [m] ± limits of the x, y, z joints

# Default suction and spring parameters.
F_MAX = 50.0  # [N] per cup, sealed (71 kPa vacuum on the 15 mm cup)
D_SAT = 5e-3  # [m] saturation distance
D_CUT = 0.05  # [m] cut-off distance
SPRING_KP = 1000.0  # [N/m] bellows spring
SPRING_KD = 1.0  # [N s/m] bellows damping
GANTRY_KP = 2.0e4  # [N/m]
GANTRY_KD = 600.0  # [N s/m]

# Seal/leak model and shadowing (module docstring).
SEAL_GAP = 0.5e-3  # [m] a lip point this much farther from the surface than the mouth still seals fully
LEAK_GAP = 2.0e-3  # [m] ... and from this relative gap on it leaks fully
LIP_CIRCLE = CUP_RADIUS - LIP_RADIUS  # [m] radius of the sampled lip circle (the lip spheres' centres)
LIP_SAMPLES = 24  # points on the lip circle
SHADOW = 5e-3  # [m] a surface this much farther than the nearest facing one gets no pull

_MOUTH_RADIUS_COAL = 1e-6  # [m] coal has no point shape: a tiny sphere, its radius added back to the distance


# --------------------------------------------------------------------------------------------------------------
# The force law
# --------------------------------------------------------------------------------------------------------------


def suction_force(d, f_max=F_MAX, d_sat=D_SAT, d_cut=D_CUT):
    """Magnitude f(d) [N] of one cup's suction at signed distance d [m] (module docstring): f_max for d ≤ d_sat,
    f_max (d_sat/d − d_sat/d_cut)/(1 − d_sat/d_cut) up to d_cut, 0 beyond. Works on arrays."""
    _check_law(f_max, d_sat, d_cut)
    d = np.asarray(d, dtype=float)
    c = d_sat / d_cut
    f = f_max * (d_sat / np.maximum(d, d_sat) - c) / (1.0 - c)
    f = np.where(d < d_cut, f, 0.0)
    return float(f) if f.ndim == 0 else f


@njit(cache=True)
def _law(d, f_max, d_sat, d_cut):
    if d >= d_cut:
        return 0.0
    c = d_sat / d_cut
    return f_max * (d_sat / max(d, d_sat) - c) / (1.0 - c)


def _check_seal(seal_gap, leak_gap, lip_radius, lip_samples, shadow):
    for name, val in (("seal_gap", seal_gap), ("leak_gap", leak_gap), ("lip_radius", lip_radius),
                      ("shadow", shadow)):
        if not (isinstance(val, (int, float, np.integer, np.floating)) and np.isfinite(val) and val > 0):
            raise ValueError(f"{name} must be finite and > 0, got {val!r}")
    if not seal_gap < leak_gap:
        raise ValueError(f"seal_gap={seal_gap!r} must be smaller than leak_gap={leak_gap!r}")
    if isinstance(lip_samples, bool) or int(lip_samples) != lip_samples or lip_samples < 3:
        raise ValueError(f"lip_samples must be an integer >= 3, got {lip_samples!r}")


def _check_law(f_max, d_sat, d_cut):
    for name, val in (("f_max", f_max), ("d_sat", d_sat), ("d_cut", d_cut)):
        if not (np.isfinite(val) and val > 0):
            raise ValueError(f"{name} must be finite and > 0, got {val!r}")
    if not d_sat < d_cut:
        raise ValueError(f"d_sat={d_sat!r} must be smaller than d_cut={d_cut!r}")


# --------------------------------------------------------------------------------------------------------------
# The gripper model (URDF)
# --------------------------------------------------------------------------------------------------------------


def _inertial(mass, ixx, iyy, izz, z=0.0):
    return (f'    <inertial><origin xyz="0 0 {z:.9g}"/><mass value="{mass:.9g}"/>'
            f'<inertia ixx="{ixx:.9g}" ixy="0" ixz="0" iyy="{iyy:.9g}" iyz="0" izz="{izz:.9g}"/></inertial>\n')


def cup_positions(rows=2, cols=2, pitch=CUP_PITCH):
    """(rows·cols, 2) x, y of the cup axes in the tool frame [m], row-major, centred on the tool."""
    xs = (np.arange(rows) - 0.5 * (rows - 1)) * pitch
    ys = (np.arange(cols) - 0.5 * (cols - 1)) * pitch
    return np.array([(x, y) for x in xs for y in ys], dtype=float).reshape(-1, 2)


def gripper_urdf(rows=2, cols=2, cup_radius=CUP_RADIUS, cup_length=CUP_LENGTH, cup_mass=CUP_MASS,
                 pitch=CUP_PITCH, stroke=STROKE, bellows_gap=BELLOWS_GAP, lip_spheres=LIP_SPHERES,
                 lip_radius=LIP_RADIUS, lip_drop=LIP_DROP, plate_size=PLATE_SIZE, tool_mass=TOOL_MASS,
                 carriage_mass=CARRIAGE_MASS, travel=GANTRY_TRAVEL, gantry_mass=0.0, yaw=False):
    """URDF text of a gantry suction gripper with a rows × cols cup array (module docstring).

    Frames: ``gantry`` (root; welded to the world by ``add_robot(..., base="fixed", position=...)``), prismatic
    ``x``, ``y``, ``z`` → ``tool`` (frame at the centre of the plate's bottom face), prismatic ``cup_<i>`` (axis +z,
    limits = ``stroke``) → ``cup_<i>`` (frame at the centre of its cylinder) → fixed ``cup_<i>_mouth`` (centre of
    the lip plane, ``cup_length`` below the cup top, z axis out of the mouth). Cup inertia: a solid cylinder of
    ``cup_radius`` × ``cup_length``. ``gantry_mass`` [kg]: mass of the root link (0: none, for a fixed base; give
    it a mass to use the gripper with ``base="free"``, else the free root and the x, y, z joints are redundant
    and the mass matrix is singular). ``yaw``: a revolute joint ``yaw`` (axis +z, ±π) between the z carriage
    (``carriage_z``, ``carriage_mass``) and the tool, so the tool turns about the vertical."""
    if rows < 1 or cols < 1 or int(rows) != rows or int(cols) != cols:
        raise ValueError(f"rows and cols must be positive integers, got {rows!r}, {cols!r}")
    if pitch <= 2 * cup_radius:
        raise ValueError(f"pitch={pitch!r} must exceed the cup diameter {2 * cup_radius!r}")
    lo, hi = stroke
    if not lo < 0 < hi or hi > bellows_gap:
        raise ValueError(f"stroke must satisfy lower < 0 < upper <= bellows_gap, got {stroke!r}, gap {bellows_gap!r}")
    if not 0 <= lip_drop < lip_radius < cup_radius:
        raise ValueError("need 0 <= lip_drop < lip_radius < cup_radius")
    r, L, m = cup_radius, cup_length, cup_mass
    Lb = L - lip_drop  # cylinder length; its centre is the cup frame
    ixx = m * (3 * r * r + L * L) / 12.0
    izz = 0.5 * m * r * r
    px, py, pz = plate_size
    out = [f'<?xml version="1.0"?>\n<!-- Generated by cenic_gym.suction.gripper_urdf(rows={rows}, cols={cols}'
           f'{", yaw=True" if yaw else ""}); '
           'do not edit by hand. -->\n',
           f'<robot name="suction_gripper_{rows}x{cols}{"_yaw" if yaw else ""}">\n',
           '  <link name="gantry"/>\n' if gantry_mass <= 0 else
           '  <link name="gantry">\n' + _inertial(gantry_mass, 1e-2, 1e-2, 1e-2) + '  </link>\n']
    chain = [("x", "1 0 0", "gantry", "carriage_x"), ("y", "0 1 0", "carriage_x", "carriage_y"),
             ("z", "0 0 1", "carriage_y", "carriage_z" if yaw else "tool")]
    for name, axis, parent, child in chain:
        out.append(f'  <joint name="{name}" type="prismatic">\n    <parent link="{parent}"/><child link="{child}"/>'
                   f'<axis xyz="{axis}"/>\n    <limit lower="{-travel:.9g}" upper="{travel:.9g}" effort="1000" '
                   f'velocity="10"/>\n  </joint>\n')
    if yaw:
        out.append('  <joint name="yaw" type="revolute">\n    <parent link="carriage_z"/><child link="tool"/>'
                   f'<axis xyz="0 0 1"/>\n    <limit lower="{-math.pi:.9g}" upper="{math.pi:.9g}" effort="100" '
                   'velocity="10"/>\n  </joint>\n')
    for c in ("carriage_x", "carriage_y") + (("carriage_z",) if yaw else ()):
        out.append(f'  <link name="{c}">\n' + _inertial(carriage_mass, 1e-3, 1e-3, 1e-3) + '  </link>\n')
    tm = tool_mass
    out.append('  <link name="tool">\n'
               + _inertial(tm, tm * (py * py + pz * pz) / 12, tm * (px * px + pz * pz) / 12,
                           tm * (px * px + py * py) / 12, z=0.5 * pz)
               + f'    <collision><origin xyz="0 0 {0.5 * pz:.9g}"/><geometry><box size="{px:.9g} {py:.9g} '
                 f'{pz:.9g}"/></geometry></collision>\n  </link>\n')
    zc = -(bellows_gap + 0.5 * Lb)
    z_lip = 0.5 * Lb - L  # lip plane in the cup frame
    for i, (x, y) in enumerate(cup_positions(rows, cols, pitch)):
        out.append(f'  <joint name="cup_{i}" type="prismatic">\n    <parent link="tool"/><child link="cup_{i}"/>'
                   f'<origin xyz="{x:.9g} {y:.9g} {zc:.9g}"/><axis xyz="0 0 1"/>\n'
                   f'    <limit lower="{lo:.9g}" upper="{hi:.9g}" effort="1000" velocity="10"/>\n  </joint>\n')
        out.append(f'  <link name="cup_{i}">\n' + _inertial(m, ixx, ixx, izz, z=0.5 * Lb - 0.5 * L)
                   + f'    <collision><geometry><cylinder radius="{r:.9g}" length="{Lb:.9g}"/></geometry>'
                     '</collision>\n')
        for k in range(lip_spheres):
            a = 2 * math.pi * k / lip_spheres
            rr = r - lip_radius
            out.append(f'    <collision><origin xyz="{rr * math.cos(a):.9g} {rr * math.sin(a):.9g} '
                       f'{z_lip + lip_radius:.9g}"/><geometry><sphere radius="{lip_radius:.9g}"/></geometry>'
                       '</collision>\n')
        out.append('  </link>\n')
        out.append(f'  <joint name="cup_{i}_mouth_fixed" type="fixed">\n    <parent link="cup_{i}"/>'
                   f'<child link="cup_{i}_mouth"/><origin xyz="0 0 {z_lip:.9g}" rpy="3.14159265358979 0 0"/>\n'
                   f'  </joint>\n  <link name="cup_{i}_mouth"/>\n')
    out.append('</robot>\n')
    return "".join(out)


def gripper_urdf_path(rows=2, cols=2, yaw=False):
    """Path of the shipped URDF for a rows × cols array with the default parameters (2×2 and 3×3 ship in
    ``assets/``, and 2×2 with the yaw joint); other variants are written to a temporary file."""
    p = ASSET_DIR / f"suction_gripper_{rows}x{cols}{'_yaw' if yaw else ''}.urdf"
    if p.is_file():
        return p
    tmp = Path(tempfile.mkdtemp(prefix="cenic_suction_")) / p.name
    tmp.write_text(gripper_urdf(rows, cols, yaw=yaw))
    return tmp


def add_suction_gripper(builder: SceneBuilder, name="gripper", position=(0.0, 0.0, 0.3), grid=(2, 2), urdf=None,
                        material=ContactMaterial(stiffness=1e5, dissipation=10.0, mu_static=1.0), base="fixed"):
    """Add the gripper to ``builder`` with ``add_robot``: ``base="fixed"`` welds the gantry root at ``position``
    [m] (world-aligned; the tool frame is there when the gantry joints are 0); ``base="free"`` lets the whole
    gripper float (tests). ``urdf``: a gripper file (default: the shipped one for ``grid``). Returns ``builder``.
    With the default geometry the cup mouths are at :func:`mouth_height` (position_z) when all joints are 0."""
    path = Path(urdf) if urdf is not None else gripper_urdf_path(*grid)
    builder.add_robot(str(path), name=name, base=base, position=position, material=material, self_collision=False)
    return builder


def mouth_height(tool_z, bellows_gap=BELLOWS_GAP, cup_length=CUP_LENGTH):
    """World z [m] of the cup mouths (lip plane) at q = 0 for a tool frame at height tool_z (default geometry)."""
    return tool_z - bellows_gap - cup_length


def cup_joint_names(system, gripper="gripper"):
    info = system.robot(gripper)
    return [j for j in info.joints if j.startswith("cup_")]


def cup_springs(system, gripper="gripper", kp=SPRING_KP, kd=SPRING_KD, implicit=True):
    """The bellows springs: implicit JointPD on the cup joints, q_d = 0, no effort limit."""
    dofs = system.robot_v_indices(gripper, cup_joint_names(system, gripper))
    return JointPD(system, dofs, kp, kd, q_d=0.0, effort_limit=np.inf, implicit=implicit)


def gantry_pd(system, gripper="gripper", kp=GANTRY_KP, kd=GANTRY_KD, q_d=(0.0, 0.0, 0.0), gravity_compensation=True):
    """Implicit JointPD on the gantry joints x, y, z (set-points ``q_d`` [m] relative to the root pose). The z joint
    gets a feed-forward force equal to the weight of everything it carries (tool and cups), so the empty tool sits
    at its set-point."""
    dofs = system.robot_v_indices(gripper, ["x", "y", "z"])
    tau_ff = np.zeros(3)
    if gravity_compensation:
        m = system.model
        jz = system.robot_joint_ids(gripper, ["z"])[0]
        carried = sum(m.inertias[j].mass for j in range(1, m.njoints) if jz in list(m.supports[j]))
        tau_ff[2] = -carried * float(m.gravity.linear[2])
    return JointPD(system, dofs, kp, kd, q_d=q_d, tau_ff=tau_ff, effort_limit=np.inf)


# --------------------------------------------------------------------------------------------------------------
# The suction force element
# --------------------------------------------------------------------------------------------------------------


@njit(cache=True)
def _seal_weight(e, e_seal, e_leak):
    """Share [0, 1] of one lip sample in the seal: 1 up to a relative gap e = e_seal [m], 0 from e_leak on, linear
    between."""
    if e <= e_seal:
        return 1.0
    if e >= e_leak:
        return 0.0
    return (e_leak - e) / (e_leak - e_seal)


@njit(cache=True)
def _point_distance(P, gt, gs, gR, gp, margin, zero, eye, out_p, out_n, out_phi):
    """Signed distance [m] from the point P to a geometry and the unit normal from P towards it (in out_n[0]);
    inf (and out_n untouched) when it is ≥ margin."""
    m = nph.collide_primitives(nph.SPHERE, zero, eye, P, gt, gs, gR, gp, margin, out_p, out_n, out_phi,
                               np.int64(0))  # int64 as find_contacts passes it: one compilation
    return out_phi[0] if m > 0 else np.inf


@njit(cache=True)
def _pair_geometry(Ck, Ak, Uk, Wk, gt, gs, gR, gp, d_cut, seal, lip_r, nlip, e_seal, e_leak,
                   zero, eye, out_p, out_n, out_phi, res):
    """One cup–geometry pair: res = (d, N (3), n̂ (3), cos θ, σ, s_n (3), s_m (3), m). Returns False when d ≥ d_cut.

    σ (seal fraction): the mean of :func:`_seal_weight` over ``nlip`` points P_j of the lip circle (radius lip_r
    about the mouth C in the mouth plane, spanned by U, W) of their relative gap e_j = d_j − d, d_j the lip point's
    distance to the geometry (e_j = ∞ beyond d + e_leak). 1 when the whole lip faces the surface as closely as the
    mouth does (a flat face parallel to the mouth plane), ½ for a cup centred on a straight edge.

    For σ's derivative (:func:`_diagonal_kernel`): over the m lip points on the sloped part of the weight
    (e_seal < e_j < e_leak), s_n = Σ n̂_j and s_m = Σ P_j × n̂_j [m] (n̂_j the geometry's outward normal at P_j's
    closest point), so that Σ_j ḋ_j = s_n·v + s_m·ω for a relative twist (v at the world origin, ω) of the cup."""
    d = _point_distance(Ck, gt, gs, gR, gp, d_cut, zero, eye, out_p, out_n, out_phi)
    if not d < d_cut:
        return False
    cos = 0.0
    for i in range(3):
        n_i = -out_n[0, i]  # out_n points from the mouth towards the object; n̂ is the object's outward normal
        res[1 + i] = Ck[i] - d * n_i
        res[4 + i] = n_i
        cos -= n_i * Ak[i]
    for i in range(9, 16):
        res[i] = 0.0
    sigma = 1.0
    if seal:
        acc = 0.0
        P = np.empty(3)
        for j in range(nlip):
            a = 2.0 * math.pi * j / nlip
            ca, sa = math.cos(a), math.sin(a)
            for i in range(3):
                P[i] = Ck[i] + lip_r * (ca * Uk[i] + sa * Wk[i])
            dj = _point_distance(P, gt, gs, gR, gp, d + e_leak, zero, eye, out_p, out_n, out_phi)
            if dj < np.inf:
                e = dj - d
                acc += _seal_weight(e, e_seal, e_leak)
                if e_seal < e < e_leak:
                    n0, n1, n2 = -out_n[0, 0], -out_n[0, 1], -out_n[0, 2]
                    res[9] += n0
                    res[10] += n1
                    res[11] += n2
                    res[12] += P[1] * n2 - P[2] * n1
                    res[13] += P[2] * n0 - P[0] * n2
                    res[14] += P[0] * n1 - P[1] * n0
                    res[15] += 1.0
        sigma = acc / nlip
    res[0] = d
    res[7] = cos
    res[8] = sigma
    return True


@njit(cache=True)
def _normal_rate(C, d, nh, gt, gs, gR, gp, K):
    """K (3, 3) [1/m]: the rate of the outward normal n̂ at the closest point of a sphere, box or capsule to the point
    C (distance d [m]) as C moves relative to the geometry, dn̂ = K ċ_rel (ċ_rel: C's velocity relative to the
    geometry frame; the geometry's own rotation adds ω × n̂). On a face, or with C inside: 0. Closest point on an
    edge (a box edge along ê, a capsule's side along its axis): (I − n̂n̂ᵀ − êêᵀ)/ρ; on a vertex, sphere or capsule
    end: (I − n̂n̂ᵀ)/ρ, with ρ the distance from C to the centre of curvature (d for box edges and vertices, d + r
    for spheres and capsules)."""
    for a in range(3):
        for b in range(3):
            K[a, b] = 0.0
    e0, e1, e2 = 0.0, 0.0, 0.0
    rho = 0.0
    edge = False
    if gt == nph.SPHERE:
        rho = d + gs[0]
    elif gt == nph.CAPSULE:
        t = (C[0] - gp[0]) * gR[0, 2] + (C[1] - gp[1]) * gR[1, 2] + (C[2] - gp[2]) * gR[2, 2]
        rho = d + gs[0]
        if abs(t) < gs[1]:
            edge = True
            e0, e1, e2 = gR[0, 2], gR[1, 2], gR[2, 2]
    elif gt == nph.BOX and d > 0.0:
        out = 0
        free = -1
        for j in range(3):
            qj = (C[0] - gp[0]) * gR[0, j] + (C[1] - gp[1]) * gR[1, j] + (C[2] - gp[2]) * gR[2, j]
            if abs(qj) > gs[j]:
                out += 1
            else:
                free = j
        if out >= 2:
            rho = d
        if out == 2:
            edge = True
            e0, e1, e2 = gR[0, free], gR[1, free], gR[2, free]
    if not rho > 0.0:
        return
    e = (e0, e1, e2)
    for a in range(3):
        for b in range(3):
            k = (1.0 if a == b else 0.0) - nh[a] * nh[b]
            if edge:
                k -= e[a] * e[b]
            K[a, b] = k / rho


@njit(cache=True)
def _shadow(n, rec_cup, rec_d, rec_f, rec_n, shadow, rec_w, rec_F):
    """Shadowing: each cup pulls on the surfaces facing it (f > 0) that are nearest to its mouth; a surface
    farther than the nearest one by Δ gets the weight w = clamp(1 − Δ/shadow, 0, 1) (the nearest object takes the
    air flow; continuous in Δ). Writes w and f_G = w f n̂."""
    for r in range(n):
        dmin = np.inf
        for s in range(n):
            if rec_cup[s] == rec_cup[r] and rec_f[s] > 0.0 and rec_d[s] < dmin:
                dmin = rec_d[s]
        w = 1.0
        if dmin < np.inf:
            w = min(1.0, max(0.0, 1.0 - (rec_d[r] - dmin) / shadow))
        rec_w[r] = w
        for i in range(3):
            rec_F[r, i] = w * rec_f[r] * rec_n[r, i]


@njit(cache=True)
def _pairs_kernel(C, A, U, W, gtype, gsize, gR, gp, gbound, skip, f_max, d_sat, d_cut, seal, lip_r, nlip, e_seal,
                  e_leak, out_p, out_n, out_phi, rec_cup, rec_geom, rec_d, rec_N, rec_n, rec_cos, rec_sig, rec_f,
                  rec_sn, rec_sm, rec_m, rec_K):
    """All cup–geometry pairs closer than d_cut handled by the numba narrow phase (``skip``: geometries left to
    coal). Writes the records (cup, local geometry index, d, N, n̂, cos θ, σ, f = f(d) max(0, cos θ) σ) and the
    data of their derivative (the lip sums s_n, s_m, m of :func:`_pair_geometry` and the normal rate K of
    :func:`_normal_rate`) and returns their number (shadowing is applied by :func:`_shadow` afterwards)."""
    zero = np.zeros(3)
    eye = np.eye(3)
    res = np.empty(16)
    n = 0
    for k in range(C.shape[0]):
        for g in range(gtype.shape[0]):
            if skip[g]:
                continue
            dx = C[k, 0] - gp[g, 0]
            dy = C[k, 1] - gp[g, 1]
            dz = C[k, 2] - gp[g, 2]
            if math.sqrt(dx * dx + dy * dy + dz * dz) - gbound[g] >= d_cut:
                continue
            if not _pair_geometry(C[k], A[k], U[k], W[k], gtype[g], gsize[g], gR[g], gp[g], d_cut, seal, lip_r,
                                  nlip, e_seal, e_leak, zero, eye, out_p, out_n, out_phi, res):
                continue
            rec_cup[n] = k
            rec_geom[n] = g
            rec_d[n] = res[0]
            for i in range(3):
                rec_N[n, i] = res[1 + i]
                rec_n[n, i] = res[4 + i]
                rec_sn[n, i] = res[9 + i]
                rec_sm[n, i] = res[12 + i]
            rec_cos[n] = res[7]
            rec_sig[n] = res[8]
            rec_m[n] = res[15]
            rec_f[n] = _law(res[0], f_max, d_sat, d_cut) * max(0.0, res[7]) * res[8]
            _normal_rate(C[k], res[0], rec_n[n], gtype[g], gsize[g], gR[g], gp[g], rec_K[n])
            n += 1
    return n


@njit(cache=True)
def _frames(joint_R, joint_p, cup_joint, mouth_local, axis_local, u_local, w_local, geom_joint, gR_local, gp_local,
            C, A, U, W, gR, gp):
    """World mouth points C, mouth axes A and lip-plane axes U, W of the cups, and world poses (gR, gp) of the target
    geometries, from the world poses (joint_R, joint_p) of their joints and their local placements."""
    for k in range(cup_joint.shape[0]):
        j = cup_joint[k]
        R = joint_R[j]
        for a in range(3):
            C[k, a] = joint_p[j, a]
            A[k, a] = 0.0
            U[k, a] = 0.0
            W[k, a] = 0.0
            for b in range(3):
                C[k, a] += R[a, b] * mouth_local[k, b]
                A[k, a] += R[a, b] * axis_local[k, b]
                U[k, a] += R[a, b] * u_local[k, b]
                W[k, a] += R[a, b] * w_local[k, b]
    for g in range(geom_joint.shape[0]):
        j = geom_joint[g]
        R = joint_R[j]
        for a in range(3):
            gp[g, a] = joint_p[j, a]
            for b in range(3):
                gp[g, a] += R[a, b] * gp_local[g, b]
                gR[g, a, b] = R[a, 0] * gR_local[g, 0, b] + R[a, 1] * gR_local[g, 1, b] + R[a, 2] * gR_local[g, 2, b]


@njit(cache=True)
def _accumulate(J, joint_cols, joint_ncols, cup_joint, geom_joint, C, rec_cup, rec_geom, rec_N, rec_F, n, tau):
    """tau (nv,) += Σ_pairs J_N,objᵀ f_G − J_C,cupᵀ f_G (world Jacobian J at the origin: wrench (f, p × f))."""
    for r in range(n):
        for side in range(2):
            if side == 0:
                j = geom_joint[rec_geom[r]]
                p0, p1, p2 = rec_N[r, 0], rec_N[r, 1], rec_N[r, 2]
                s = 1.0
            else:
                j = cup_joint[rec_cup[r]]
                p0, p1, p2 = C[rec_cup[r], 0], C[rec_cup[r], 1], C[rec_cup[r], 2]
                s = -1.0
            f0, f1, f2 = s * rec_F[r, 0], s * rec_F[r, 1], s * rec_F[r, 2]
            m0 = p1 * f2 - p2 * f1
            m1 = p2 * f0 - p0 * f2
            m2 = p0 * f1 - p1 * f0
            for ic in range(joint_ncols[j]):
                c = joint_cols[j, ic]
                tau[c] += (J[0, c] * f0 + J[1, c] * f1 + J[2, c] * f2 + J[3, c] * m0 + J[4, c] * m1 + J[5, c] * m2)


@njit(cache=True)
def _law_slope(d, f_max, d_sat, d_cut):
    """f'(d) [N/m] of :func:`_law` (0 where it is flat: saturated or beyond the cut-off)."""
    if d <= d_sat or d >= d_cut:
        return 0.0
    return -f_max * d_sat / (d * d) / (1.0 - d_sat / d_cut)


@njit(cache=True)
def _diagonal_kernel(dofs, J, cup_moves, geom_moves, C, A, f_max, d_sat, d_cut, seal, nlip, e_seal, e_leak, shadow,
                     n, rec_cup, rec_geom, rec_d, rec_N, rec_n, rec_cos, rec_sig, rec_f, rec_w, rec_F, rec_sn, rec_sm,
                     rec_m, rec_K, out):
    """out[k] = ∂τ_i/∂q_i (i = dofs[k]) along column i of the world Jacobian J, analytic: column i moves the cups
    and geometries it carries with the twist (v, ω) = J[:, i] (s_c, s_g = 1 when it moves the pair's cup, geometry),
    u(p) = v + ω × p. Per pair, with the cup's velocity relative to the geometry at the mouth ċ = (s_c − s_g) u(C):

        ḋ = n̂·ċ                    (the distance's gradient is the outward normal)
        n̂̇ = s_g ω × n̂ + K ċ        (K: :func:`_normal_rate`)        â̇ = s_c ω × â        cos̄θ = −(n̂̇·â + n̂·â̇)
        σ̇ = −(s_c − s_g)(s_n·v + s_m·ω − m n̂·u(C)) / (nlip (e_leak − e_seal))   (the sloped lip points' ḋ_j − ḋ)
        ḟ = f'(d) ḋ c σ + f(d) ċos σ + f(d) c σ̇    (c = max(0, cos θ); ċos counts where cos θ > 0)
        ẇ = −(ḋ − ḋ_min)/shadow on the shadowing ramp (d_min: the cup's nearest facing pair)
        Ḟ = ẇ f n̂ + w ḟ n̂ + w f n̂̇,    Ṅ = s_c u(C) − ḋ n̂ − d n̂̇

    and τ_i = Σ_pairs s_g F·u(N) − s_c F·u(C) gives ∂τ_i/∂q_i = Σ s_g (Ḟ·u(N) + F·(ω × Ṅ)) − s_c (Ḟ·u(C) +
    F·(ω × s_c u(C))). Exact where the law is differentiable (away from the kinks of the saturation, the seal
    weights, the clamp of the shadowing and the closest-feature switches)."""
    kseal = 1.0 / (nlip * (e_leak - e_seal)) if seal else 0.0
    dd = np.empty(n)
    dn = np.empty((n, 3))
    df = np.empty(n)
    uC = np.empty(3)
    uN = np.empty(3)
    rel = np.empty(3)
    for k in range(dofs.shape[0]):
        i = dofs[k]
        out[k] = 0.0
        involved = False
        for r in range(n):
            if cup_moves[rec_cup[r], i] or geom_moves[rec_geom[r], i]:
                involved = True
        if not involved:
            continue
        v0, v1, v2, w0, w1, w2 = J[0, i], J[1, i], J[2, i], J[3, i], J[4, i], J[5, i]
        # per pair: ḋ, n̂̇, ḟ (before shadowing)
        for r in range(n):
            c, g = rec_cup[r], rec_geom[r]
            sc = 1.0 if cup_moves[c, i] else 0.0
            sg = 1.0 if geom_moves[g, i] else 0.0
            if sc == sg and sc == 0.0:
                dd[r] = 0.0
                df[r] = 0.0
                dn[r, 0] = dn[r, 1] = dn[r, 2] = 0.0
                continue
            Cr = C[c]
            uC[0] = v0 + w1 * Cr[2] - w2 * Cr[1]
            uC[1] = v1 + w2 * Cr[0] - w0 * Cr[2]
            uC[2] = v2 + w0 * Cr[1] - w1 * Cr[0]
            nh = rec_n[r]
            for a in range(3):
                rel[a] = (sc - sg) * uC[a]
            dd[r] = nh[0] * rel[0] + nh[1] * rel[1] + nh[2] * rel[2]
            # n̂̇ = s_g ω × n̂ + K ċ
            dn[r, 0] = sg * (w1 * nh[2] - w2 * nh[1])
            dn[r, 1] = sg * (w2 * nh[0] - w0 * nh[2])
            dn[r, 2] = sg * (w0 * nh[1] - w1 * nh[0])
            for a in range(3):
                dn[r, a] += rec_K[r, a, 0] * rel[0] + rec_K[r, a, 1] * rel[1] + rec_K[r, a, 2] * rel[2]
            cos = rec_cos[r]
            cpos = max(0.0, cos)
            dcpos = 0.0
            if cos > 0.0:
                Ax = A[c]
                # â̇ = s_c ω × â
                da0 = sc * (w1 * Ax[2] - w2 * Ax[1])
                da1 = sc * (w2 * Ax[0] - w0 * Ax[2])
                da2 = sc * (w0 * Ax[1] - w1 * Ax[0])
                dcpos = -(dn[r, 0] * Ax[0] + dn[r, 1] * Ax[1] + dn[r, 2] * Ax[2]
                          + nh[0] * da0 + nh[1] * da1 + nh[2] * da2)
            sig = rec_sig[r]
            dsig = 0.0
            if kseal > 0.0 and rec_m[r] > 0.0:
                sn, sm = rec_sn[r], rec_sm[r]
                lip = sn[0] * v0 + sn[1] * v1 + sn[2] * v2 + sm[0] * w0 + sm[1] * w1 + sm[2] * w2
                mouth = nh[0] * uC[0] + nh[1] * uC[1] + nh[2] * uC[2]
                dsig = -(sc - sg) * kseal * (lip - rec_m[r] * mouth)
            d = rec_d[r]
            L = _law(d, f_max, d_sat, d_cut)
            df[r] = _law_slope(d, f_max, d_sat, d_cut) * dd[r] * cpos * sig + L * dcpos * sig + L * cpos * dsig
        # shadowing and the generalized force
        acc = 0.0
        for r in range(n):
            c, g = rec_cup[r], rec_geom[r]
            sc = 1.0 if cup_moves[c, i] else 0.0
            sg = 1.0 if geom_moves[g, i] else 0.0
            if sc == 0.0 and sg == 0.0:
                continue
            dmin = np.inf
            smin = -1
            for s in range(n):
                if rec_cup[s] == c and rec_f[s] > 0.0 and rec_d[s] < dmin:
                    dmin = rec_d[s]
                    smin = s
            dw = 0.0
            if smin >= 0:
                wr = 1.0 - (rec_d[r] - dmin) / shadow
                if 0.0 < wr < 1.0:
                    dw = -(dd[r] - dd[smin]) / shadow
            w, f, nh, Fr = rec_w[r], rec_f[r], rec_n[r], rec_F[r]
            Cr, Nr = C[c], rec_N[r]
            uC[0] = v0 + w1 * Cr[2] - w2 * Cr[1]
            uC[1] = v1 + w2 * Cr[0] - w0 * Cr[2]
            uC[2] = v2 + w0 * Cr[1] - w1 * Cr[0]
            dF0 = (dw * f + w * df[r]) * nh[0] + w * f * dn[r, 0]
            dF1 = (dw * f + w * df[r]) * nh[1] + w * f * dn[r, 1]
            dF2 = (dw * f + w * df[r]) * nh[2] + w * f * dn[r, 2]
            if sg > 0.0:
                uN[0] = v0 + w1 * Nr[2] - w2 * Nr[1]
                uN[1] = v1 + w2 * Nr[0] - w0 * Nr[2]
                uN[2] = v2 + w0 * Nr[1] - w1 * Nr[0]
                # Ṅ = s_c u(C) − ḋ n̂ − d n̂̇
                d = rec_d[r]
                N0 = sc * uC[0] - dd[r] * nh[0] - d * dn[r, 0]
                N1 = sc * uC[1] - dd[r] * nh[1] - d * dn[r, 1]
                N2 = sc * uC[2] - dd[r] * nh[2] - d * dn[r, 2]
                acc += dF0 * uN[0] + dF1 * uN[1] + dF2 * uN[2]
                acc += Fr[0] * (w1 * N2 - w2 * N1) + Fr[1] * (w2 * N0 - w0 * N2) + Fr[2] * (w0 * N1 - w1 * N0)
            if sc > 0.0:
                acc -= dF0 * uC[0] + dF1 * uC[1] + dF2 * uC[2]
                acc -= (Fr[0] * (w1 * uC[2] - w2 * uC[1]) + Fr[1] * (w2 * uC[0] - w0 * uC[2])
                        + Fr[2] * (w0 * uC[1] - w1 * uC[0]))
        out[k] = acc


@dataclass
class SuctionPair:
    """One cup–geometry interaction at a configuration (world frame, SI)."""

    cup: int  # cup index
    geom: int  # geometry index in the system
    distance: float  # d [m]
    mouth: np.ndarray  # C (3,)
    point: np.ndarray  # N (3,), closest point of the object
    normal: np.ndarray  # n̂ (3,), the object's outward normal at N
    cos_theta: float  # −n̂·â
    seal: float  # σ ∈ [0, 1], the seal fraction (1 without the seal model)
    shadow: float  # w ∈ [0, 1], the shadowing weight
    force: np.ndarray  # f_G (3,) on the object [N] (as if on); −f_G acts on the cup


class SuctionGripper(ExternalSystem):
    """Suction of the cups of a gripper added with :func:`add_suction_gripper` on object bodies (module docstring).

    system:   the MultibodySystem; gripper: the robot name (its frames ``cup_<i>_mouth`` are the mouths);
    objects:  names of free bodies (``add_body``) that can be sucked (default: all of them).
    f_max [N], d_sat [m], d_cut [m]: the force law :func:`suction_force` (per cup).
    seal:     the seal/leak model (default on): the force scales with the seal fraction σ of the lip.
    seal_gap, leak_gap [m]: a lip point seals fully up to a relative gap seal_gap, not at all from leak_gap on.
    lip_radius [m], lip_samples: the lip circle sampled for σ (default: the lip spheres' centre circle, 24 points).
    shadow [m]: a surface farther from a mouth than the nearest facing one by this much gets no pull.
    on:       suction on (True) or off (False: no force, objects are released). A plain attribute; switch it
              between ``advance_to`` calls.
    implicit: linearized (CENIC §V-C, default; the diagonal of −∂τ/∂v, analytic: :func:`_diagonal_kernel`) or explicit
              (τ = g(q^n)).
    """

    def __init__(self, system, gripper="gripper", objects=None, f_max=F_MAX, d_sat=D_SAT, d_cut=D_CUT, on=True,
                 implicit=True, seal=True, seal_gap=SEAL_GAP, leak_gap=LEAK_GAP, lip_radius=LIP_CIRCLE,
                 lip_samples=LIP_SAMPLES, shadow=SHADOW):
        _check_law(f_max, d_sat, d_cut)
        _check_seal(seal_gap, leak_gap, lip_radius, lip_samples, shadow)
        self.f_max, self.d_sat, self.d_cut = float(f_max), float(d_sat), float(d_cut)
        self.seal = bool(seal)
        self.seal_gap, self.leak_gap, self.lip_radius = float(seal_gap), float(leak_gap), float(lip_radius)
        self.lip_samples, self.shadow = int(lip_samples), float(shadow)
        self.on = bool(on)
        self.system = system
        m = self.model = system.model
        self.data = m.createData()
        info = system.robot(gripper)
        mouths = sorted((ln for ln in info.links if ln.startswith("cup_") and ln.endswith("_mouth")),
                        key=lambda s: int(s[4:-6]) if s[4:-6].isdigit() else s)
        if not mouths:
            raise ValueError(f"robot {gripper!r} has no cup mouth frames (cup_<i>_mouth)")
        self.mouth_names = mouths
        frames = [m.frames[system.frame_id(f"{gripper}/{ln}")] for ln in mouths]
        self.cup_joint = np.array([f.parentJoint for f in frames], dtype=np.int64)
        self.mouth_local = np.array([f.placement.translation for f in frames], dtype=float).reshape(-1, 3)
        self.axis_local = np.array([f.placement.rotation[:, 2] for f in frames], dtype=float).reshape(-1, 3)
        self.u_local = np.array([f.placement.rotation[:, 0] for f in frames], dtype=float).reshape(-1, 3)
        self.w_local = np.array([f.placement.rotation[:, 1] for f in frames], dtype=float).reshape(-1, 3)
        names = list(system.body_names) if objects is None else ([objects] if isinstance(objects, str) else
                                                                  list(objects))
        ojoints = [system.joint_id(n) for n in names]
        self.geoms = np.array([i for i, g in enumerate(system.geometries) if g.joint in ojoints], dtype=np.int64)
        g = self.geoms
        self._gtype = system.geom_type[g].copy()
        self._gsize = system.geom_size[g].copy()
        self._gbound = system.geom_bound[g].copy()
        self._gjoint = system.geom_joint[g].copy()
        self._gR_local = system.geom_R[g].copy()
        self._gp_local = system.geom_p[g].copy()
        self._shapes = [system.geometries[i].shape for i in g]
        self._coal_shapes = [system.coal_shapes[i] for i in g]
        self._coal = np.array([not nph.numba_supports(nph.SPHERE, int(t)) for t in self._gtype], dtype=np.bool_)
        cols = set()
        for j in list(self.cup_joint) + ojoints:
            cols.update(int(c) for c in system.joint_cols[j, :system.joint_ncols[j]])
        super().__init__(np.array(sorted(cols), dtype=np.int64), None, implicit)
        nv = m.nv
        self._cup_moves = np.zeros((len(self.cup_joint), nv), dtype=np.bool_)
        for k, j in enumerate(self.cup_joint):
            self._cup_moves[k, system.joint_cols[j, :system.joint_ncols[j]]] = True
        self._geom_moves = np.zeros((len(g), nv), dtype=np.bool_)
        for k, j in enumerate(self._gjoint):
            self._geom_moves[k, system.joint_cols[j, :system.joint_ncols[j]]] = True
        # workspaces
        nc, ng = len(self.cup_joint), len(g)
        cap = max(1, nc * ng)
        self._C = np.zeros((nc, 3))
        self._A = np.zeros((nc, 3))
        self._U = np.zeros((nc, 3))
        self._W = np.zeros((nc, 3))
        self._gR = np.zeros((ng, 3, 3))
        self._gp = np.zeros((ng, 3))
        self._op = np.zeros((nph.MAX_PAIR_CONTACTS, 3))
        self._on = np.zeros((nph.MAX_PAIR_CONTACTS, 3))
        self._ophi = np.zeros(nph.MAX_PAIR_CONTACTS)
        # cup, geom, d, N, n̂, cos, σ, f (before shadowing), w, f_G
        self._rec = (np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap), np.zeros((cap, 3)),
                     np.zeros((cap, 3)), np.zeros(cap), np.zeros(cap), np.zeros(cap), np.zeros(cap),
                     np.zeros((cap, 3)))
        # derivative data of each record: lip sums s_n, s_m, their count m, normal rate K (_pairs_kernel)
        self._drec = (np.zeros((cap, 3)), np.zeros((cap, 3)), np.zeros(cap), np.zeros((cap, 3, 3)))
        # joint poses from q in numba (free bodies and 1-DOF joints, as the contact query); any other joint the
        # cups or targets hang on from Pinocchio's data
        self._jR = np.zeros((m.njoints, 3, 3))
        self._jp = np.zeros((m.njoints, 3))
        self._oMi_joints = sorted(int(j) for j in set(self.cup_joint) | set(self._gjoint)
                                  if system.joint_kind[j] == JOINT_GENERAL)
        self._n = 0
        self._J = None
        self._tau = np.zeros(nv)
        self._coal_mouth = nph.make_coal_shape(nph.SPHERE, np.array([_MOUTH_RADIUS_COAL, 0.0, 0.0]))

    @property
    def n_cups(self):
        return len(self.cup_joint)

    def payload(self, gravity=9.81, cups=None):
        """Documented static payload [kg]: the largest mass the cups hold against ``gravity`` [m/s²] on a flat,
        level top face, pulled straight up with no acceleration: Σ σ_i f_max / g over the sealed cups (σ_i = 1 on
        a flat face; ``cups`` default: all of them). Per cup: f_max / g (5.1 kg at the default 50 N)."""
        n = self.n_cups if cups is None else cups
        return n * self.f_max / gravity

    # -- geometry ----------------------------------------------------------------------------------------------
    def _local_index(self, geom):
        if isinstance(geom, str):
            names = [self.system.geometries[i].name for i in self.geoms]
            if geom not in names:
                raise ValueError(f"geometry {geom!r} is not a suction target; targets: {names}")
            return names.index(geom)
        hits = np.flatnonzero(self.geoms == int(geom))
        if len(hits) == 0:
            raise ValueError(f"geometry index {geom!r} is not a suction target")
        return int(hits[0])

    def set_geometry_shape(self, geom, shape):
        """Resize a target geometry (name or system index), as ``Simulator.set_geometry_shape`` does for contact:
        call both (the suction keeps its own copy). ``shape``: a shape of the same kind."""
        i = self._local_index(geom)
        if type(shape) is not type(self._shapes[i]):
            raise TypeError(f"geometry {geom!r} is a {type(self._shapes[i]).__name__}; got {shape!r}")
        self._shapes[i] = shape
        self._gsize[i] = shape.size()
        self._gbound[i] = shape.bounding_radius()
        if self._coal[i]:
            self._coal_shapes[i] = nph.make_coal_shape(shape.geom_type, shape.size(), getattr(shape, "vertices", None))

    def _find_pairs(self, q):
        """Records of all pairs within d_cut at q (free bodies and 1-DOF joints posed from q in numba, bit for bit
        Pinocchio's; Pinocchio's forward kinematics in self.data up to date for any other joint). Returns their
        number."""
        s = self.system
        jR, jp = self._jR, self._jp
        oMi = self.data.oMi
        for j in self._oMi_joints:  # first: 1-DOF children read their parents' poses
            M = oMi[j]
            jR[j] = M.rotation
            jp[j] = M.translation
        joint_poses_from_q(q, s.joint_kind, s.joint_idx_q, s.joint_parent, s.joint_axis, s.joint_place_R,
                           s.joint_place_p, jR, jp)
        _frames(jR, jp, self.cup_joint, self.mouth_local, self.axis_local, self.u_local, self.w_local, self._gjoint,
                self._gR_local, self._gp_local, self._C, self._A, self._U, self._W, self._gR, self._gp)
        cup, geom, d, N, nrm, cos, sig, f, w, F = self._rec
        n = _pairs_kernel(self._C, self._A, self._U, self._W, self._gtype, self._gsize, self._gR, self._gp,
                          self._gbound, self._coal, self.f_max, self.d_sat, self.d_cut, self.seal, self.lip_radius,
                          self.lip_samples, self.seal_gap, self.leak_gap, self._op, self._on, self._ophi,
                          cup, geom, d, N, nrm, cos, sig, f, *self._drec)
        self._n_numba = n
        if self._coal.any():
            n = self._coal_pairs(n)
        _shadow(n, cup, d, f, nrm, self.shadow, w, F)
        self._n = n
        return n

    def _coal_distance(self, P, g, margin):
        """(d, n̂ from P towards the geometry) by coal (d = inf beyond margin)."""
        _, normal, phi = nph.coal_contacts(self._coal_mouth, np.eye(3), P, self._coal_shapes[g], self._gR[g],
                                           self._gp[g], margin - _MOUTH_RADIUS_COAL, max_points=1)
        if len(phi) == 0:
            return np.inf, None
        return float(phi[0]) + _MOUTH_RADIUS_COAL, normal[0]

    def _coal_pairs(self, n):
        cup, geom, dd, N, nrm, cos, sig, f, _, _ = self._rec
        for g in np.flatnonzero(self._coal):
            for k in range(self.n_cups):
                C = self._C[k]
                if np.linalg.norm(C - self._gp[g]) - self._gbound[g] >= self.d_cut:
                    continue
                d, normal = self._coal_distance(C, g, self.d_cut)
                if not d < self.d_cut:
                    continue
                nh = -normal
                c = -float(nh @ self._A[k])
                s = 1.0
                if self.seal:
                    acc = 0.0
                    for j in range(self.lip_samples):
                        a = 2.0 * math.pi * j / self.lip_samples
                        P = C + self.lip_radius * (math.cos(a) * self._U[k] + math.sin(a) * self._W[k])
                        dj, _ = self._coal_distance(P, g, d + self.leak_gap)
                        if dj < np.inf:
                            acc += _seal_weight(dj - d, self.seal_gap, self.leak_gap)
                    s = acc / self.lip_samples
                cup[n], geom[n], dd[n], N[n], nrm[n], cos[n], sig[n] = k, g, d, C - d * nh, nh, c, s
                f[n] = suction_force(d, self.f_max, self.d_sat, self.d_cut) * max(0.0, c) * s
                n += 1
        return n

    def pairs(self, q):
        """The cup–geometry interactions at q (list of :class:`SuctionPair`; forces as if the gripper were on)."""
        pin.forwardKinematics(self.model, self.data, q)
        n = self._find_pairs(q)
        cup, geom, d, N, nrm, cos, sig, _, w, F = self._rec
        return [SuctionPair(int(cup[i]), int(self.geoms[geom[i]]), float(d[i]), self._C[cup[i]].copy(),
                            N[i].copy(), nrm[i].copy(), float(cos[i]), float(sig[i]), float(w[i]), F[i].copy())
                for i in range(n)]

    def cup_forces(self, q, pairs=None):
        """(n_cups,) magnitude [N] of each cup's total pull at q (0 when off): |Σ_pairs f_G| per cup. ``pairs``: the
        :meth:`pairs` at q when the caller has them already (no second evaluation)."""
        out = np.zeros(self.n_cups)
        if not self.on:
            return out
        tot = np.zeros((self.n_cups, 3))
        for p in self.pairs(q) if pairs is None else pairs:
            tot[p.cup] += p.force
        return np.linalg.norm(tot, axis=1)

    def mouth_distances(self, q, pairs=None):
        """(n_cups,) distance [m] from each cup mouth to the nearest target surface (d_cut when none is nearer).
        ``pairs``: the :meth:`pairs` at q when the caller has them already (no second evaluation)."""
        out = np.full(self.n_cups, self.d_cut)
        for p in self.pairs(q) if pairs is None else pairs:
            out[p.cup] = min(out[p.cup], p.distance)
        return out

    # -- the external system -------------------------------------------------------------------------------------
    def get_params(self):
        return dict(super().get_params(), on=self.on, f_max=self.f_max, d_sat=self.d_sat, d_cut=self.d_cut,
                    seal=self.seal, seal_gap=self.seal_gap, leak_gap=self.leak_gap, shapes=tuple(self._shapes))

    def set_params(self, params):
        super().set_params(params)
        self.on = bool(params["on"])
        self.f_max, self.d_sat, self.d_cut = (float(params[k]) for k in ("f_max", "d_sat", "d_cut"))
        self.seal = bool(params["seal"])
        self.seal_gap, self.leak_gap = float(params["seal_gap"]), float(params["leak_gap"])
        for i, shape in enumerate(params["shapes"]):
            if shape is not self._shapes[i]:
                self.set_geometry_shape(int(self.geoms[i]), shape)

    def setpoint_vector(self):
        """[on] (1.0 or 0.0)."""
        return np.array([1.0 if self.on else 0.0])

    def set_setpoint_vector(self, x):
        if len(x) != 1 or x[0] not in (0.0, 1.0):
            raise ValueError(f"SuctionGripper set-point must be [0.0] or [1.0] (off/on), got {x!r}")
        self.on = bool(x[0])

    def output(self, t, z, q, v):
        """Generalized forces on ``dofs`` [N, N m] at q (0 when off)."""
        if not self.on:
            self._n = 0
            return np.zeros(self.dofs.shape[0])
        s = self.system
        J = self._J = compute_kinematics(self.model, self.data, q)  # forward kinematics + world joint Jacobians
        n = self._find_pairs(q)
        tau = self._tau
        tau[:] = 0.0
        cup, geom, _, N, _, _, _, _, _, F = self._rec
        _accumulate(J, s.joint_cols, s.joint_ncols, self.cup_joint, self._gjoint, self._C, cup, geom, N, F, n, tau)
        return tau[self.dofs]

    def diagonal_derivative(self, q):
        """(len(dofs),) ∂τ_i/∂q_i [N/m, N m/rad] along each dof's own column of the world Jacobian at q, analytic
        (:func:`_diagonal_kernel`; the pairs must all be numba geometries: spheres, boxes, capsules). Evaluates
        the law at q first."""
        self.output(0.0, np.zeros(0), q, np.zeros(self.model.nv))
        if self._n > self._n_numba:
            raise ValueError("diagonal_derivative: a coal geometry (cylinder or mesh) is within d_cut of a cup; "
                             "its derivative is not analytic (linearize() differences the law instead)")
        return self._diagonal()

    def _diagonal(self):
        """∂τ_i/∂q_i of the pairs of the last :meth:`output` (numba geometries only)."""
        out = np.zeros(self.dofs.shape[0])
        n = self._n
        if n:
            _diagonal_kernel(self.dofs, self._J, self._cup_moves, self._geom_moves, self._C, self._A, self.f_max,
                             self.d_sat, self.d_cut, self.seal, self.lip_samples, self.seal_gap, self.leak_gap,
                             self.shadow, n, *self._rec, *self._drec, out)
        return out

    def linearize(self, t, z, q, v, dt, qtilde):
        """CENIC eq. 26–29 with C_ii = max(0, −δt ∂τ_i/∂q_i) from the analytic :func:`_diagonal_kernel` at
        q̃ = q ⊕ δt v (one law evaluation and one numba kernel instead of 1 + len(dofs) evaluations; suction off or
        no surface within d_cut: C = 0 at once). Pairs with coal geometries (cylinders, meshes) fall back to the base
        class' forward differences of the whole law."""
        if not self.implicit:
            return super().linearize(t, z, q, v, dt, qtilde)
        if not self.on:
            zero = np.zeros(self.dofs.shape[0])
            return Linearization(self.dofs, zero, zero.copy(), self.effort_limit, np.zeros((0, v.shape[0])),
                                 np.zeros(0))
        q0 = qtilde(v)
        g0 = self.output(t + dt, z, q0, v)
        if self._n > self._n_numba:  # coal pairs: forward differences of the whole law
            return super().linearize(t, z, q, v, dt, qtilde)
        c = np.maximum(-dt * self._diagonal(), 0.0)
        b = g0 + c * v[self.dofs]
        return Linearization(self.dofs, c, b, self.effort_limit, np.zeros((0, v.shape[0])), np.zeros(0))

    def generalized_force(self, q):
        """The full (nv,) generalized force at q (for analysis)."""
        out = np.zeros(self.model.nv)
        out[self.dofs] = self.output(0.0, np.zeros(0), q, np.zeros(self.model.nv))
        return out


# --------------------------------------------------------------------------------------------------------------
# The reference scene (tests, benchmark)
# --------------------------------------------------------------------------------------------------------------


@dataclass
class SuctionScene:
    """A gripper over a box: the system and its external systems (pass ``external`` to the Simulator)."""

    system: object
    suction: SuctionGripper
    springs: JointPD
    gantry: JointPD
    mouth_z: float  # [m] world height of the cup mouths at q = 0
    box_size: tuple

    @property
    def external(self):
        return [self.gantry, self.springs, self.suction]

    def box_top(self, q):
        """World z [m] of the centre of the box's top face (its body +z face)."""
        sl = self.system.q_slice("box")
        qb = q[sl]
        R = quat_xyzw_to_matrix(qb[3:7])
        return float(qb[2] + 0.5 * self.box_size[2] * R[2, 2])

    def mouth_heights(self, q):
        """World z [m] of each cup mouth."""
        pin.forwardKinematics(self.system.model, self.suction.data, q)
        return np.array([(self.suction.data.oMi[int(j)].act(self.suction.mouth_local[k]))[2]
                         for k, j in enumerate(self.suction.cup_joint)])


def suction_scene(gap=0.01, box_mass=0.5, box_size=(0.1, 0.1, 0.05), tool_z=0.3, grid=(2, 2), ground=True,
                  gravity=(0.0, 0.0, -9.81), implicit=True, f_max=F_MAX, d_sat=D_SAT, d_cut=D_CUT,
                  material=ContactMaterial(stiffness=1e5, dissipation=10.0, mu_static=1.0), base="fixed", urdf=None):
    """The Fig. 13 analogue: the gripper (tool frame at height ``tool_z`` [m]) and a box of ``box_mass`` [kg] and
    ``box_size`` [m] centred under it, its top face ``gap`` [m] below the cup mouths; ground at z = 0 (``ground``).
    ``base``, ``urdf``: as in :func:`add_suction_gripper` (a free base needs a URDF with ``gantry_mass`` > 0).
    Suction parameters as in :class:`SuctionGripper`; springs and gantry PD with their defaults."""
    b = SceneBuilder(gravity=gravity)
    if ground:
        b.add_ground(material)
    add_suction_gripper(b, position=(0.0, 0.0, tool_z), grid=grid, urdf=urdf, material=material, base=base)
    mz = mouth_height(tool_z)
    b.add_body("box", Box(tuple(box_size)), mass=box_mass, position=(0.0, 0.0, mz - gap - 0.5 * box_size[2]),
               material=material)
    sys = b.build()
    suction = SuctionGripper(sys, "gripper", ["box"], f_max=f_max, d_sat=d_sat, d_cut=d_cut, implicit=implicit)
    return SuctionScene(sys, suction, cup_springs(sys), gantry_pd(sys), mz, tuple(box_size))


__all__ = ["ASSET_DIR", "DEFAULT_URDF", "SuctionGripper", "SuctionPair", "SuctionScene", "add_suction_gripper",
           "cup_positions", "cup_springs", "gantry_pd", "gripper_urdf", "gripper_urdf_path", "mouth_height",
           "suction_force", "suction_scene"]
