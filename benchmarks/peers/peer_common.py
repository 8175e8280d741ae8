"""Engine-independent pieces of the peer benchmark: the free bodies of a cenic-gym scene, state conversion
targets, physical metrics (energy, penetration) evaluated the same way for every engine, the 1-D reference
solution of the sphere drop, and the H&C -> linear damper mapping used for the engines without Hunt & Crossley.

Every engine's state is converted to cenic-gym coordinates before a metric is computed:
q = [p (m, world), quaternion (x, y, z, w)] and v = [world linear velocity of the body origin, body-frame
angular velocity] per free body (cenic_gym.model.free_body_joint), so the metrics are one code path.
"""
from __future__ import annotations

import math

import coal
import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp

from cenic_gym import mujoco_model as cg_mujoco
from cenic_gym import narrowphase as nph

G = 9.81


# ---------------------------------------------------------------------------------------------------------------
# Scene introspection
# ---------------------------------------------------------------------------------------------------------------
# one description of a system's joints for every peer (and the package's MuJoCo mapping)
JointInfo, scene_joints = cg_mujoco.JointInfo, cg_mujoco.scene_joints


FreeBody = JointInfo


def free_bodies(system):
    """The free-body joints (free bodies of add_body and free robot bases)."""
    return [ji for ji in scene_joints(system) if ji.kind == "free"]


def quat_xyzw_to_R(qx, qy, qz, qw):
    return pin.Quaternion(qw, qx, qy, qz).normalized().toRotationMatrix()


_SJ_CACHE: dict = {}


def scene_joints_cached(system):
    key = id(system)
    if key not in _SJ_CACHE:
        _SJ_CACHE[key] = (system, scene_joints(system))
    return _SJ_CACHE[key][1]


def free_bodies_cached(system):
    return [ji for ji in scene_joints_cached(system) if ji.kind == "free"]


def body_positions(system, q):
    """(n_free, 3) world positions of the free bodies' origins."""
    return np.array([q[b.iq:b.iq + 3] for b in free_bodies_cached(system)]).reshape(-1, 3)


def ground_normal(system):
    """Outward normal of the first half-space of the scene (world z if there is none)."""
    for g in system.geometries:
        if g.shape.geom_type == nph.HALFSPACE and g.joint == 0:
            return np.array(g.placement.rotation[:, 2])
    return np.array([0.0, 0.0, 1.0])


def support_point_local(shape, direction):
    """Point of a shape (in its own frame) furthest along ``direction`` (shape frame)."""
    d = np.asarray(direction, float)
    t = shape.geom_type
    if t == nph.SPHERE:
        return shape.radius * d / np.linalg.norm(d)
    if t == nph.BOX:
        return 0.5 * np.asarray(shape.lengths, float) * np.where(d >= 0, 1.0, -1.0)
    if t in (nph.CAPSULE, nph.CYLINDER):
        r, h = shape.radius, 0.5 * shape.length
        ax = np.array([0.0, 0.0, h if d[2] >= 0 else -h])
        dxy = np.array([d[0], d[1], 0.0])
        nxy = np.linalg.norm(dxy)
        if t == nph.CAPSULE:
            return ax + r * d / np.linalg.norm(d)
        return ax + (r * dxy / nxy if nxy > 1e-12 else 0.0)
    if t == nph.CONVEX:
        v = shape.vertices
        return v[int(np.argmax(v @ d))]
    return np.zeros(3)


def contact_inverse_mass(system, q, geom_index, normal):
    """Normal inverse mass A = nᵀ J M⁻¹ Jᵀ n [1/kg] of a contact at the geometry's support point along −normal
    (its lowest point towards the ground) at configuration q: what MuJoCo divides its per-unit-mass stiffness by.
    A free sphere: 1/m; a face-down cube at a corner: 4/m."""
    model = system.model
    data = model.createData()
    g = system.geometries[geom_index]
    pin.forwardKinematics(model, data, q)
    pin.computeJointJacobians(model, data, q)
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    oMj = data.oMi[g.joint]
    Rg = oMj.rotation @ g.placement.rotation
    pg = oMj.act(g.placement.translation)
    p = pg + Rg @ support_point_local(g.shape, Rg.T @ (-np.asarray(normal)))
    J = pin.getJointJacobian(model, data, g.joint, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    Jp = J[:3] - pin.skew(p - oMj.translation) @ J[3:]
    w = Jp.T @ np.asarray(normal)
    return float(w @ np.linalg.solve(M, w))


# ---------------------------------------------------------------------------------------------------------------
# Physical metrics, identical for all engines
# ---------------------------------------------------------------------------------------------------------------
def mechanical_energy(system, q, v):
    """Kinetic + gravitational potential energy [J] (potential zero at z = 0); contact spring energy excluded."""
    model = system.model
    data = model.createData()
    ke = pin.computeKineticEnergy(model, data, q, v)
    pe = pin.computePotentialEnergy(model, data, q)
    return float(ke + pe)


class Penetration:
    """Largest penetration over the candidate geometry pairs of a scene at a configuration q (cenic-gym
    coordinates), with coal's signed distance on the scene's true shapes (half-spaces, spheres, boxes, capsules,
    cylinders, convex hulls) and Pinocchio forward kinematics. A bounding-sphere test skips far pairs. Used on the
    states of every peer engine, so Drake's box corner spheres are measured as the boxes they stand for."""

    def __init__(self, system):
        self.system = system
        self.model = system.model
        self.data = system.model.createData()
        self.geoms = system.geometries
        self.shapes = system.coal_shapes
        self.pairs = np.asarray(system.pairs).reshape(-1, 2)
        self.bound = np.array([g.shape.bounding_radius() for g in self.geoms])

    def _poses(self, q):
        pin.forwardKinematics(self.model, self.data, q)
        out = []
        for g in self.geoms:
            M = self.data.oMi[g.joint] * g.placement
            out.append((M.rotation.copy(), M.translation.copy()))
        return out

    def min_distance(self, q):
        """Most negative signed distance over the candidate pairs (+inf when no pair is within its bound)."""
        poses = self._poses(q)
        best = math.inf
        for a, b in self.pairs:
            Ra, pa = poses[a]
            Rb, pb = poses[b]
            fa, fb = math.isfinite(self.bound[a]), math.isfinite(self.bound[b])
            if fa and fb:
                if np.linalg.norm(pa - pb) > self.bound[a] + self.bound[b]:
                    continue
            elif fa or fb:  # half-space vs bounded shape
                (Rh, ph), ps, r = ((poses[a], pb, self.bound[b]) if not fa else (poses[b], pa, self.bound[a]))
                if float(Rh[:, 2] @ (ps - ph)) > r:
                    continue
            # fresh request/result per query: reused ones carry GJK state (guess, support hints) from earlier
            # pairs, and after a diverged run's huge coordinates that state gave wrong depths for later queries
            d = coal.distance(self.shapes[a], coal.Transform3s(Ra, pa), self.shapes[b], coal.Transform3s(Rb, pb),
                              coal.DistanceRequest(), coal.DistanceResult())
            best = min(best, float(d))
        return best

    def penetration(self, q):
        d = self.min_distance(q)
        return max(0.0, -d) if math.isfinite(d) else 0.0


# ---------------------------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------------------------
def sphere_drop_reference(times, height, radius, mass, k, d, g=G):
    """Exact (rtol 1e-11) solution of the 1-D bouncing ball with cenic-gym's continuous contact law
    f_n = k (−φ)_+ (1 − d φ̇)_+, φ = z − r, integrated piecewise with events at φ = 0. Returns (z(times), ż(times))."""
    times = np.asarray(times, dtype=float)
    t0, y0 = 0.0, np.array([height + radius, 0.0])
    z_out = np.empty_like(times)
    zd_out = np.empty_like(times)
    t_end = float(times.max())

    def flight(t, y):
        return [y[1], -g]

    def contact(t, y):
        phi = y[0] - radius
        f = k * max(-phi, 0.0) * max(1.0 - d * y[1], 0.0)
        return [y[1], -g + f / mass]

    def hit(t, y):
        return y[0] - radius

    hit.terminal = True
    segs = []
    in_contact = False
    while t0 < t_end:
        hit.direction = 1.0 if in_contact else -1.0
        fun = contact if in_contact else flight
        max_step = 0.02 * math.sqrt(mass / k) if in_contact else np.inf
        sol = solve_ivp(fun, (t0, t_end), y0, method="DOP853", rtol=1e-11, atol=1e-13, events=hit,
                        dense_output=True, max_step=max_step)
        segs.append((t0, sol.t[-1], sol.sol))
        if sol.status == 1 and sol.t[-1] < t_end:  # event: switch phase
            y0 = sol.y[:, -1].copy()
            if abs(y0[1]) < 1e-9 and not in_contact:  # resting: stay in contact from now on
                pass
            t0 = sol.t[-1]
            in_contact = not in_contact
            if t0 >= t_end:
                break
        else:
            break
    for i, t in enumerate(times):
        for a, b, s in segs:
            if a - 1e-15 <= t <= b + 1e-15:
                y = s(t)
                z_out[i], zd_out[i] = y[0], y[1]
                break
        else:
            y = segs[-1][2](min(t, segs[-1][1]))
            z_out[i], zd_out[i] = y[0], y[1]
    return z_out, zd_out


# ---------------------------------------------------------------------------------------------------------------
# H&C -> linear (Kelvin-Voigt) damper, for Drake SAP (relaxation time) and MuJoCo (direct solref damping)
# ---------------------------------------------------------------------------------------------------------------
def _restitution(k, m, v0, hc_d=None, c=None):
    """Coefficient of restitution of a 1-D impact at speed v0 on a spring k (no gravity) with either H&C
    dissipation f = k x (1 + d ẋ)_+ or a linear damper f = (k x + c ẋ)_+ (x = penetration, force never pulls)."""
    def rhs(t, y):
        x, xd = y
        if hc_d is not None:
            f = k * max(x, 0.0) * max(1.0 + hc_d * xd, 0.0)
        else:
            f = max(k * x + c * xd, 0.0) if x > 0 else 0.0
        return [xd, -f / m]

    def out(t, y):
        return y[0]

    out.terminal = True
    out.direction = -1
    w = math.sqrt(k / m)
    sol = solve_ivp(rhs, (0.0, 200.0 / w), [0.0, v0], events=out, rtol=1e-10, atol=1e-14, max_step=0.01 / w)
    if sol.status != 1:  # never left (overdamped creep back): no rebound
        return 0.0
    return max(0.0, -sol.y[1, -1] / v0)


def linear_damping(k, m_eff, hc_d, v_ref=None, rest_penetration=None):
    """Linear damping c [N s/m] that stands in for Hunt & Crossley dissipation hc_d [s/m] on a contact of
    stiffness k [N/m] and effective mass m_eff [kg].

    * impact scenes (v_ref given): the c whose restitution at the impact speed v_ref equals H&C's (bisection);
    * resting scenes (rest_penetration given): H&C linearised about the rest penetration δ, c = k hc_d δ.
    Returns (c, restitution_HC or None)."""
    if hc_d == 0.0:
        return 0.0, (1.0 if v_ref else None)
    if rest_penetration is not None:
        return k * hc_d * rest_penetration, None
    e_target = _restitution(k, m_eff, v_ref, hc_d=hc_d)
    c_crit = 2.0 * math.sqrt(k * m_eff)
    lo, hi = 0.0, c_crit
    while _restitution(k, m_eff, v_ref, c=hi) > e_target and hi < 1e4 * c_crit:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _restitution(k, m_eff, v_ref, c=mid) > e_target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi), e_target


def box_corner_inverse_mass(lengths, mass):
    """Mean over the three face normals of the normal inverse mass 1/m + |r x n|²_{I⁻¹} at a box corner
    (a cube: 4/m). MuJoCo's stiffness is per unit mass in constraint space, so k / m_eff -> k * this."""
    L = np.asarray(lengths, float)
    h = 0.5 * L
    Idiag = mass / 12.0 * np.array([L[1] ** 2 + L[2] ** 2, L[0] ** 2 + L[2] ** 2, L[0] ** 2 + L[1] ** 2])
    vals = []
    for axis in range(3):
        n = np.zeros(3)
        n[axis] = 1.0
        r = -h.copy()
        rn = np.cross(r, n)
        vals.append(1.0 / mass + float(np.sum(rn**2 / Idiag)))
    return float(np.mean(vals))
