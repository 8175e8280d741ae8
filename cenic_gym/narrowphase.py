"""Narrow-phase contact generation between pairs of geometries.

Two paths:

* ``collide_primitives`` -- numba kernels for the analytic primitive pairs
  (half-space, sphere, box, capsule; cylinder vs half-space and box).
  Allocation-free apart from a few tiny fixed-size local arrays.
* ``coal_contacts`` -- plain-Python fallback through coal (GJK/EPA + contact
  patches) for every other pair (cylinders vs spheres, capsules and cylinders;
  convex meshes).

Conventions (all quantities in world frame, SI units):

* Geometry pose: rotation ``R`` (3x3, columns = local axes in world) and
  position ``p`` (3,), so ``x_world = R @ x_local + p``.
* Sizes (``size`` float64[3]): HALFSPACE unused (solid is local z <= 0, outward
  normal local +z); SPHERE ``[r]``; BOX half extents ``[hx, hy, hz]``;
  CAPSULE / CYLINDER ``[r, half_length]`` along local z.
* A contact between A and B is ``(point, normal, phi)``: ``phi`` is the signed
  distance in metres (negative = penetration), ``normal`` the unit vector from A
  to B (moving B along +normal increases phi) and ``point`` the midpoint of the
  two witness points.  Only contacts with ``phi < margin`` are reported, at most
  ``MAX_PAIR_CONTACTS`` per pair.
"""

import functools
import math

import numpy as np
from numba import njit

import coal  # convex meshes and the remaining cylinder pairs (the fallback path)


def _settle_coal_state():
    """Put coal's process-wide state where every process has it, for bit-identical results across processes.

    coal 3.0.3 keeps hidden process-wide state that changes the last bits of later queries: a Convex-Box collision
    and its contact patch come out different (1e-15 m in depth and normal, a different patch) once the process has
    run a Box-Box or Capsule-Box GJK query (distance or collision), and stay so (a one-way switch; Sphere-Box or
    Convex-Box queries do not flip it). So the same simulation gave different bits depending on what the process
    had computed before, e.g. building an Allegro model, whose self-collision filter runs Box-Box distances: a
    fresh Ray worker and a long-lived process disagreed. One Box-Box distance at import flips every process the
    same way. Regression test: tests/test_state.py::test_building_another_robot_first_does_not_change_a_run."""
    coal.distance(coal.Box(0.1, 0.1, 0.1), coal.Transform3s(), coal.Box(0.1, 0.1, 0.1),
                  coal.Transform3s(np.eye(3), np.array([0.0, 0.0, 0.3])), coal.DistanceRequest(),
                  coal.DistanceResult())


_settle_coal_state()

HALFSPACE = 0
SPHERE = 1
BOX = 2
CAPSULE = 3
CYLINDER = 4
CONVEX = 5

MAX_PAIR_CONTACTS = 8

_TINY = 1e-12  # lengths below this (m) are treated as zero
_AXIS_EPS = 1e-6  # |a x b| below this: cross-product SAT axis skipped
_FACE_BIAS = 1e-7  # m; an edge-edge SAT axis must beat the best face axis by this
_DEPTH_TOL = 1e-9  # m; tolerance when checking that a manifold holds the deepest point
_PARALLEL_SIN2 = 1e-4  # sin^2 of the angle under which two capsules count as parallel
_FACE_COS = 1.0 - 1e-6  # |cos| above which a normal counts as a box face normal


# ---------------------------------------------------------------------------
# small vector helpers (3-vectors as float64 arrays)
# ---------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, error_model="numpy")
def _norm(a):
    return np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(cache=True, error_model="numpy")
def _dist(a, b):
    """Euclidean distance |a - b| without a temporary array."""
    d0 = a[0] - b[0]
    d1 = a[1] - b[1]
    d2 = a[2] - b[2]
    return np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)


@njit(cache=True, error_model="numpy")
def _cross(a, b):
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


@njit(cache=True, error_model="numpy", inline="always")
def _clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@njit(cache=True, error_model="numpy", inline="always")
def _sign(x):
    """+1 for x >= 0, -1 otherwise (never 0, so it can pick a box feature)."""
    return 1.0 if x >= 0.0 else -1.0


@njit(cache=True, error_model="numpy", inline="always")
def _col(R, j):
    """Column j of R (local axis j expressed in world)."""
    out = np.empty(3)
    out[0] = R[0, j]
    out[1] = R[1, j]
    out[2] = R[2, j]
    return out


@njit(cache=True, error_model="numpy")
def _to_local(R, p, x):
    """World point x -> local coordinates R^T (x - p)."""
    out = np.empty(3)
    d0 = x[0] - p[0]
    d1 = x[1] - p[1]
    d2 = x[2] - p[2]
    for i in range(3):
        out[i] = R[0, i] * d0 + R[1, i] * d1 + R[2, i] * d2
    return out


@njit(cache=True, error_model="numpy")
def _rot_t(R, v):
    """World direction v -> local direction R^T v."""
    out = np.empty(3)
    for i in range(3):
        out[i] = R[0, i] * v[0] + R[1, i] * v[1] + R[2, i] * v[2]
    return out


@njit(cache=True, error_model="numpy")
def _rot(R, v):
    """Local direction v -> world direction R v."""
    out = np.empty(3)
    for i in range(3):
        out[i] = R[i, 0] * v[0] + R[i, 1] * v[1] + R[i, 2] * v[2]
    return out


@njit(cache=True, error_model="numpy")
def _to_world(R, p, x):
    """Local point x -> world point R x + p."""
    out = _rot(R, x)
    out[0] += p[0]
    out[1] += p[1]
    out[2] += p[2]
    return out


@njit(cache=True, error_model="numpy", inline="always")
def _unit(k):
    """Unit vector along axis k."""
    e = np.zeros(3)
    e[k] = 1.0
    return e


@njit(cache=True, error_model="numpy")
def _any_perp(u):
    """Some unit vector perpendicular to the unit vector u."""
    if abs(u[0]) < 0.57735:
        a = np.array([1.0, 0.0, 0.0])
    elif abs(u[1]) < 0.57735:
        a = np.array([0.0, 1.0, 0.0])
    else:
        a = np.array([0.0, 0.0, 1.0])
    w = _cross(u, a)
    return w / _norm(w)


@njit(cache=True, error_model="numpy")
def _emit(out_p, out_n, out_phi, k, point, normal, phi):
    """Write one contact into row k of the output buffers."""
    for i in range(3):
        out_p[k, i] = point[i]
        out_n[k, i] = normal[i]
    out_phi[k] = phi


@njit(cache=True, error_model="numpy")
def _emit_guard(out_p, out_n, out_phi, k0, n, point, normal, phi):
    """Append a contact (or overwrite the shallowest one when the pair is full).

    Used to make sure the deepest contact of a pair is always part of its
    manifold.  Returns the new number of contacts.
    """
    if n < MAX_PAIR_CONTACTS:
        _emit(out_p, out_n, out_phi, k0 + n, point, normal, phi)
        return n + 1
    worst = k0
    for i in range(k0 + 1, k0 + n):
        if out_phi[i] > out_phi[worst]:
            worst = i
    _emit(out_p, out_n, out_phi, worst, point, normal, phi)
    return n


# ---------------------------------------------------------------------------
# closest-point primitives
# ---------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _closest_segments(c1, u1, h1, c2, u2, h2):
    """Closest points of segments c1 + s u1, |s| <= h1 and c2 + t u2, |t| <= h2.

    u1, u2 are unit vectors.  Returns the parameters (s, t) (metres along the
    axes).  Parallel segments give one of the (many) closest pairs.
    """
    r0 = c1[0] - c2[0]
    r1 = c1[1] - c2[1]
    r2 = c1[2] - c2[2]
    b = _dot(u1, u2)
    c = u1[0] * r0 + u1[1] * r1 + u1[2] * r2
    f = u2[0] * r0 + u2[1] * r1 + u2[2] * r2
    denom = 1.0 - b * b
    if denom > 1e-14:
        s = _clamp((b * f - c) / denom, -h1, h1)
    else:
        s = 0.0
    t = f + b * s
    if t < -h2:
        t = -h2
        s = _clamp(b * t - c, -h1, h1)
    elif t > h2:
        t = h2
        s = _clamp(b * t - c, -h1, h1)
    return s, t


@njit(cache=True, error_model="numpy")
def _box_edge(h, axis, idx):
    """Edge idx (0..3) parallel to local `axis` of a box with half extents h.

    Returns (center (3,) in box frame, half length)."""
    j = (axis + 1) % 3
    k = (axis + 2) % 3
    c = np.zeros(3)
    c[j] = h[j] if (idx & 1) else -h[j]
    c[k] = h[k] if (idx & 2) else -h[k]
    return c, h[axis]


@njit(cache=True, error_model="numpy")
def _segment_box_distance(c, u, hs, H):
    """Distance between segment c + s u (|s| <= hs) and an axis-aligned box.

    Everything in the box frame; the box has half extents H.  Only valid when
    the segment does not cross the box interior (checked by the caller with
    SAT).  Returns (d, point on box, point on segment).
    """
    best = np.inf
    wbox = np.zeros(3)
    wseg = np.zeros(3)
    # segment end points vs box
    for sgn in (-1.0, 1.0):
        e = c + sgn * hs * u
        cl = np.empty(3)
        for i in range(3):
            cl[i] = _clamp(e[i], -H[i], H[i])
        d = _dist(e, cl)
        if d < best:
            best = d
            wbox[:] = cl
            wseg[:] = e
    # segment interior vs the 12 box edges
    ax = np.zeros(3)
    for axis in range(3):
        ax[:] = 0.0
        ax[axis] = 1.0
        for idx in range(4):
            ec, eh = _box_edge(H, axis, idx)
            s, t = _closest_segments(c, u, hs, ec, ax, eh)
            d0 = c[0] + s * u[0] - ec[0] - t * ax[0]
            d1 = c[1] + s * u[1] - ec[1] - t * ax[1]
            d2 = c[2] + s * u[2] - ec[2] - t * ax[2]
            d = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if d < best:
                best = d
                for i in range(3):
                    wbox[i] = ec[i] + t * ax[i]
                    wseg[i] = c[i] + s * u[i]
    return best, wbox, wseg


@njit(cache=True, error_model="numpy")
def box_separation(hA, RA, pA, hB, RB, pB):
    """A lower bound of the distance between two oriented boxes (half extents h, rotation R, centre p): the
    largest gap between their projections on the 15 separating axes (≤ 0 when they overlap). Projections are
    1-Lipschitz, so any positive gap bounds the Euclidean distance from below."""
    best = -np.inf
    d = np.empty(3)
    for i in range(3):
        d[i] = pB[i] - pA[i]
    L = np.empty(3)
    for k in range(15):
        if k < 3:
            for i in range(3):
                L[i] = RA[i, k]
        elif k < 6:
            for i in range(3):
                L[i] = RB[i, k - 3]
        else:
            a = (k - 6) // 3
            b = (k - 6) % 3
            L[0] = RA[1, a] * RB[2, b] - RA[2, a] * RB[1, b]
            L[1] = RA[2, a] * RB[0, b] - RA[0, a] * RB[2, b]
            L[2] = RA[0, a] * RB[1, b] - RA[1, a] * RB[0, b]
            nl = math.sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2])
            if nl < 1e-9:
                continue
            for i in range(3):
                L[i] /= nl
        ra = 0.0
        rb = 0.0
        for j in range(3):
            ra += hA[j] * abs(RA[0, j] * L[0] + RA[1, j] * L[1] + RA[2, j] * L[2])
            rb += hB[j] * abs(RB[0, j] * L[0] + RB[1, j] * L[1] + RB[2, j] * L[2])
        gap = abs(d[0] * L[0] + d[1] * L[1] + d[2] * L[2]) - ra - rb
        if gap > best:
            best = gap
    return best


@njit(cache=True, error_model="numpy")
def _box_box_distance(hA, RA, pA, hB, RB, pB):
    """Exact distance between two *disjoint* boxes (caller checks with SAT).

    Minimum over vertex-box (both ways) and edge-edge pairs.  Returns
    (d, witness on A, witness on B), witnesses in world frame.
    """
    # B expressed in A's frame: axes C[:, j], centre t
    C = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            C[i, j] = RA[0, i] * RB[0, j] + RA[1, i] * RB[1, j] + RA[2, i] * RB[2, j]
    t = _to_local(RA, pA, pB)
    best = np.inf
    wa = np.zeros(3)
    wb = np.zeros(3)
    v = np.empty(3)
    cl = np.empty(3)
    va = np.empty(3)
    vb = np.empty(3)
    for corner in range(8):
        s0 = 1.0 if corner & 1 else -1.0
        s1 = 1.0 if corner & 2 else -1.0
        s2 = 1.0 if corner & 4 else -1.0
        # vertex of B vs box A (A frame)
        for i in range(3):
            v[i] = t[i] + C[i, 0] * s0 * hB[0] + C[i, 1] * s1 * hB[1] + C[i, 2] * s2 * hB[2]
            cl[i] = _clamp(v[i], -hA[i], hA[i])
        d = _dist(v, cl)
        if d < best:
            best = d
            wa[:] = cl
            wb[:] = v
        # vertex of A vs box B (B frame, then back to A frame)
        va[0] = s0 * hA[0]
        va[1] = s1 * hA[1]
        va[2] = s2 * hA[2]
        for j in range(3):
            vb[j] = C[0, j] * (va[0] - t[0]) + C[1, j] * (va[1] - t[1]) + C[2, j] * (va[2] - t[2])
            cl[j] = _clamp(vb[j], -hB[j], hB[j])
        d = _dist(vb, cl)
        if d < best:
            best = d
            wa[:] = va
            for i in range(3):
                wb[i] = t[i] + C[i, 0] * cl[0] + C[i, 1] * cl[1] + C[i, 2] * cl[2]
    # edge-edge: 12 x 12 pairs, edge centres precomputed (A frame)
    cenA = np.empty((12, 3))
    cenB = np.empty((12, 3))
    cbl = np.empty(3)
    for ax in range(3):
        j = (ax + 1) % 3  # _box_edge's centre, without its temporary
        k = (ax + 2) % 3
        for idx in range(4):
            e = 4 * ax + idx
            cenA[e, ax] = 0.0
            cenA[e, j] = hA[j] if (idx & 1) else -hA[j]
            cenA[e, k] = hA[k] if (idx & 2) else -hA[k]
            cbl[ax] = 0.0
            cbl[j] = hB[j] if (idx & 1) else -hB[j]
            cbl[k] = hB[k] if (idx & 2) else -hB[k]
            for i in range(3):
                cenB[e, i] = t[i] + C[i, 0] * cbl[0] + C[i, 1] * cbl[1] + C[i, 2] * cbl[2]
    axA = np.zeros(3)
    axB = np.empty(3)
    ca = np.empty(3)  # the current edges' centres, copied by element: a row view per pair costs a reference count
    cb = np.empty(3)
    for ia in range(3):
        axA[:] = 0.0
        axA[ia] = 1.0
        for ib in range(3):
            for i in range(3):
                axB[i] = C[i, ib]
            for ea in range(4 * ia, 4 * ia + 4):
                for i in range(3):
                    ca[i] = cenA[ea, i]
                for eb in range(4 * ib, 4 * ib + 4):
                    for i in range(3):
                        cb[i] = cenB[eb, i]
                    s, u = _closest_segments(ca, axA, hA[ia], cb, axB, hB[ib])
                    d0 = cb[0] + u * axB[0] - ca[0] - s * axA[0]
                    d1 = cb[1] + u * axB[1] - ca[1] - s * axA[1]
                    d2 = cb[2] + u * axB[2] - ca[2] - s * axA[2]
                    d = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                    if d < best:
                        best = d
                        for i in range(3):
                            wa[i] = ca[i] + s * axA[i]
                            wb[i] = cb[i] + u * axB[i]
    return best, _to_world(RA, pA, wa), _to_world(RA, pA, wb)


# ---------------------------------------------------------------------------
# pair kernels.  Each has the signature
#   (size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0) -> n
# with A of the lower type code; normals point from A to B.
# ---------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _halfspace_sphere(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Half-space A vs sphere B: one contact below the sphere centre. (Scalars, no temporary arrays: this pair runs
    for every foot of a legged robot at every state.)"""
    n0, n1, n2 = R_a[0, 2], R_a[1, 2], R_a[2, 2]
    r = size_b[0]
    phi = n0 * (p_b[0] - p_a[0]) + n1 * (p_b[1] - p_a[1]) + n2 * (p_b[2] - p_a[2]) - r
    if phi >= margin:
        return 0
    s = r + 0.5 * phi
    out_p[k0, 0], out_p[k0, 1], out_p[k0, 2] = p_b[0] - s * n0, p_b[1] - s * n1, p_b[2] - s * n2
    out_n[k0, 0], out_n[k0, 1], out_n[k0, 2] = n0, n1, n2
    out_phi[k0] = phi
    return 1


@njit(cache=True, error_model="numpy")
def _halfspace_box(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Half-space A vs box B: every box corner with phi < margin (<= 8). (Scalars, no temporary arrays: most calls
    find no corner below the margin.)"""
    n0, n1, n2 = R_a[0, 2], R_a[1, 2], R_a[2, 2]
    base = n0 * (p_b[0] - p_a[0]) + n1 * (p_b[1] - p_a[1]) + n2 * (p_b[2] - p_a[2])
    # signed extent of each half axis along n
    e0 = size_b[0] * (n0 * R_b[0, 0] + n1 * R_b[1, 0] + n2 * R_b[2, 0])
    e1 = size_b[1] * (n0 * R_b[0, 1] + n1 * R_b[1, 1] + n2 * R_b[2, 1])
    e2 = size_b[2] * (n0 * R_b[0, 2] + n1 * R_b[1, 2] + n2 * R_b[2, 2])
    cnt = 0
    for corner in range(8):
        s0 = 1.0 if corner & 1 else -1.0
        s1 = 1.0 if corner & 2 else -1.0
        s2 = 1.0 if corner & 4 else -1.0
        phi = base + s0 * e0 + s1 * e1 + s2 * e2
        if phi < margin:
            k = k0 + cnt
            h = 0.5 * phi
            for i in range(3):
                vi = (p_b[i] + s0 * size_b[0] * R_b[i, 0] + s1 * size_b[1] * R_b[i, 1]
                      + s2 * size_b[2] * R_b[i, 2])
                out_p[k, i] = vi - h * R_a[i, 2]
                out_n[k, i] = R_a[i, 2]
            out_phi[k] = phi
            cnt += 1
    return cnt


@njit(cache=True, error_model="numpy")
def _halfspace_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Half-space A vs capsule B: one contact per segment end with phi < margin."""
    n = _col(R_a, 2)
    axis = _col(R_b, 2)
    r = size_b[0]
    cnt = 0
    for sgn in (-1.0, 1.0):
        e = p_b + sgn * size_b[1] * axis
        phi = _dot(n, e - p_a) - r
        if phi < margin:
            _emit(out_p, out_n, out_phi, k0 + cnt, e - (r + 0.5 * phi) * n, n, phi)
            cnt += 1
    return cnt


@njit(cache=True, error_model="numpy")
def _halfspace_cylinder(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Half-space A vs cylinder B.

    For each cap, four rim points 90 deg apart, starting at the rim point
    deepest in the half-space, each reported with its own depth if < margin.
    Standing on a cap -> 4 points; lying on the side -> the deepest rim point of
    each cap (2 points); tilted -> the deepest rim points within margin.
    """
    n = _col(R_a, 2)
    a = _col(R_b, 2)
    r = size_b[0]
    hl = size_b[1]
    # direction in the cap plane that points most into the half-space
    down = _dot(n, a) * a - n
    ln = _norm(down)
    if ln > 1e-9:
        u = down / ln
    else:
        u = _col(R_b, 0)
    w = _cross(a, u)
    cnt = 0
    # deepest cap first so that a truncated manifold keeps the deepest points
    first = -1.0 if _dot(n, a) >= 0.0 else 1.0
    for sgn in (first, -first):
        cc = p_b + sgn * hl * a
        for q in range(4):
            if q == 0:
                v = cc + r * u
            elif q == 1:
                v = cc + r * w
            elif q == 2:
                v = cc - r * w
            else:
                v = cc - r * u
            phi = _dot(n, v - p_a)
            if phi < margin:
                _emit(out_p, out_n, out_phi, k0 + cnt, v - 0.5 * phi * n, n, phi)
                cnt += 1
    return cnt


@njit(cache=True, error_model="numpy")
def _spheres(ca, ra, cb, rb, fallback, margin, out_p, out_n, out_phi, k):
    """Contact between spheres (ca, ra) and (cb, rb); normal A->B.

    `fallback` is the normal used when the centres coincide.  Returns 0 or 1."""
    diff = cb - ca
    dist = _norm(diff)
    phi = dist - ra - rb
    if phi >= margin:
        return 0
    if dist > _TINY:
        n = diff / dist
    else:
        n = fallback.copy()
    point = ca + (ra + 0.5 * phi) * n
    _emit(out_p, out_n, out_phi, k, point, n, phi)
    return 1


@njit(cache=True, error_model="numpy")
def _sphere_sphere(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Sphere A vs sphere B: one contact on the centre line."""
    return _spheres(p_a, size_a[0], p_b, size_b[0], np.array([0.0, 0.0, 1.0]), margin,
                    out_p, out_n, out_phi, k0)


@njit(cache=True, error_model="numpy")
def _sphere_box(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Sphere A vs box B: closest point on the box, or the nearest face if the
    centre is inside the box (deep penetration). In scalars, without a call or a temporary array, with one exit:
    so LLVM's pruning removes every reference count of its arguments (docs/performance.md, "The convex solve");
    a fingertip against a link or the cube is the commonest pair of the Allegro hand."""
    r = size_a[0]
    d0 = p_a[0] - p_b[0]
    d1 = p_a[1] - p_b[1]
    d2 = p_a[2] - p_b[2]
    q0 = R_b[0, 0] * d0 + R_b[1, 0] * d1 + R_b[2, 0] * d2  # sphere centre in the box frame
    q1 = R_b[0, 1] * d0 + R_b[1, 1] * d1 + R_b[2, 1] * d2
    q2 = R_b[0, 2] * d0 + R_b[1, 2] * d1 + R_b[2, 2] * d2
    e0 = q0 - _clamp(q0, -size_b[0], size_b[0])  # from the closest box point to the centre
    e1 = q1 - _clamp(q1, -size_b[1], size_b[1])
    e2 = q2 - _clamp(q2, -size_b[2], size_b[2])
    dist = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    if dist > _TINY:
        phi = dist - r
        u0 = e0 / dist
        u1 = e1 / dist
        u2 = e2 / dist
        n0 = R_b[0, 0] * u0 + R_b[0, 1] * u1 + R_b[0, 2] * u2  # box -> sphere
        n1 = R_b[1, 0] * u0 + R_b[1, 1] * u1 + R_b[1, 2] * u2
        n2 = R_b[2, 0] * u0 + R_b[2, 1] * u1 + R_b[2, 2] * u2
    else:
        # centre inside: push out through the closest face
        best = 0
        qb = q0
        pen = size_b[0] - abs(q0)
        p1 = size_b[1] - abs(q1)
        if p1 < pen:
            pen = p1
            best = 1
            qb = q1
        p2 = size_b[2] - abs(q2)
        if p2 < pen:
            pen = p2
            best = 2
            qb = q2
        phi = -pen - r
        sg = _sign(qb)
        n0 = sg * R_b[0, best]
        n1 = sg * R_b[1, best]
        n2 = sg * R_b[2, best]
    n = 0
    if phi < margin:
        c = r + 0.5 * phi
        out_p[k0, 0] = p_a[0] - c * n0
        out_p[k0, 1] = p_a[1] - c * n1
        out_p[k0, 2] = p_a[2] - c * n2
        out_n[k0, 0] = -n0
        out_n[k0, 1] = -n1
        out_n[k0, 2] = -n2
        out_phi[k0] = phi
        n = 1
    # every array read once more at the exit: numba releases them all there, in one place, where LLVM's pruning
    # pairs each release with its count at entry (released where each path last uses them, none would be paired)
    live = p_a.size + size_b.size + R_b.size + out_p.size + out_n.size + out_phi.size
    return n + 0 * live


@njit(cache=True, error_model="numpy")
def _sphere_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Sphere A vs capsule B: sphere vs closest point of the capsule segment."""
    axis = _col(R_b, 2)
    t = _clamp(_dot(p_a - p_b, axis), -size_b[1], size_b[1])
    q = p_b + t * axis
    return _spheres(p_a, size_a[0], q, size_b[0], _any_perp(axis), margin,
                    out_p, out_n, out_phi, k0)


@njit(cache=True, error_model="numpy")
def _capsule_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Capsule A vs capsule B.

    Closest points of the two segments; for (nearly) parallel overlapping
    segments, two contacts at the ends of the overlap (plus the closest pair if
    it is deeper than both, i.e. the segments cross at a small angle)."""
    ra = size_a[0]
    ha = size_a[1]
    rb = size_b[0]
    hb = size_b[1]
    ua = _col(R_a, 2)
    ub = _col(R_b, 2)
    cr = _cross(ua, ub)
    sin2 = _dot(cr, cr)
    if sin2 > 1e-12:
        fallback = cr / np.sqrt(sin2)
    else:
        fallback = _any_perp(ua)
    s, t = _closest_segments(p_a, ua, ha, p_b, ub, hb)
    qa = p_a + s * ua
    qb = p_b + t * ub
    cnt = 0
    if sin2 < _PARALLEL_SIN2 and ha > 0.0 and hb > 0.0:
        rel = p_b - p_a
        s1 = _dot(rel + hb * ub, ua)
        s2 = _dot(rel - hb * ub, ua)
        lo = max(-ha, min(s1, s2))
        hi = min(ha, max(s1, s2))
        if hi - lo > 1e-9 * (1.0 + ha):
            for sa in (lo, hi):
                pa = p_a + sa * ua
                tb = _clamp(_dot(pa - p_b, ub), -hb, hb)
                pb = p_b + tb * ub
                cnt += _spheres(pa, ra, pb, rb, fallback, margin, out_p, out_n, out_phi, k0 + cnt)
            phi_c = _norm(qb - qa) - ra - rb
            deeper = True
            for i in range(k0, k0 + cnt):
                if out_phi[i] <= phi_c + _DEPTH_TOL:
                    deeper = False
            if deeper:
                cnt += _spheres(qa, ra, qb, rb, fallback, margin, out_p, out_n, out_phi, k0 + cnt)
            return cnt
    return _spheres(qa, ra, qb, rb, fallback, margin, out_p, out_n, out_phi, k0)


@njit(cache=True, error_model="numpy")
def _clip_polygon(poly, m, axis, side, limit, out):
    """Sutherland-Hodgman: keep the part of polygon poly[:m] with
    side * x[axis] <= limit.  Writes into out, returns the new vertex count."""
    cnt = 0
    cap = out.shape[0]
    for e in range(m):
        nx = (e + 1) % m
        dc = side * poly[e, axis] - limit
        dn = side * poly[nx, axis] - limit
        if dc <= 0.0 and cnt < cap:
            for i in range(3):  # by element: a row view per vertex costs a reference count
                out[cnt, i] = poly[e, i]
            cnt += 1
        if ((dc < 0.0 and dn > 0.0) or (dc > 0.0 and dn < 0.0)) and cnt < cap:
            tpar = dc / (dc - dn)
            for i in range(3):
                out[cnt, i] = poly[e, i] + tpar * (poly[nx, i] - poly[e, i])
            cnt += 1
    return cnt


@njit(cache=True, error_model="numpy")
def _box_box(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Box A vs box B: separating-axis test over the 15 axes.

    * best axis a face normal: the incident face of the other box is clipped
      against the side planes of the reference face (Sutherland-Hodgman), each
      clipped vertex gets its own depth along the reference normal (<= 8 pts);
    * best axis an edge-edge cross product: one contact between the two edges.
    For separated boxes (within margin) the exact distance is computed by
    feature enumeration; if it is not realised along the best face axis
    (edge/vertex proximity) a single closest-point contact is returned.
    """
    hA = size_a
    hB = size_b
    C = np.empty((3, 3))  # C[:, j] = B axis j in A frame
    for i in range(3):
        for j in range(3):
            C[i, j] = R_a[0, i] * R_b[0, j] + R_a[1, i] * R_b[1, j] + R_a[2, i] * R_b[2, j]
    t = np.empty(3)  # B's centre in A's frame (_to_local written out: a call that allocates counts its arguments)
    d0 = p_b[0] - p_a[0]
    d1 = p_b[1] - p_a[1]
    d2 = p_b[2] - p_a[2]
    for i in range(3):
        t[i] = R_a[0, i] * d0 + R_a[1, i] * d1 + R_a[2, i] * d2

    best_s = -np.inf
    kind = -1  # 0: face of A, 1: face of B, 2: edge-edge
    bi = 0
    bj = 0
    bL = np.zeros(3)  # best axis in A frame, oriented A -> B
    L = np.empty(3)
    # faces of A
    for i in range(3):
        rb = hB[0] * abs(C[i, 0]) + hB[1] * abs(C[i, 1]) + hB[2] * abs(C[i, 2])
        s = abs(t[i]) - hA[i] - rb
        if s >= margin:
            return 0
        if s > best_s:
            best_s = s
            kind = 0
            bi = i
            bL[:] = 0.0
            bL[i] = _sign(t[i])
    # faces of B
    for j in range(3):
        ra = hA[0] * abs(C[0, j]) + hA[1] * abs(C[1, j]) + hA[2] * abs(C[2, j])
        dist = t[0] * C[0, j] + t[1] * C[1, j] + t[2] * C[2, j]
        s = abs(dist) - ra - hB[j]
        if s >= margin:
            return 0
        if s > best_s:
            best_s = s
            kind = 1
            bj = j
            sg = _sign(dist)
            for i in range(3):
                bL[i] = sg * C[i, j]
    # edge-edge axes: e_i x C[:, j]
    for i in range(3):
        for j in range(3):
            c0 = C[0, j]
            c1 = C[1, j]
            c2 = C[2, j]
            if i == 0:
                L[0] = 0.0
                L[1] = -c2
                L[2] = c1
            elif i == 1:
                L[0] = c2
                L[1] = 0.0
                L[2] = -c0
            else:
                L[0] = -c1
                L[1] = c0
                L[2] = 0.0
            ln = _norm(L)
            if ln < _AXIS_EPS:
                continue
            L /= ln
            ra = hA[0] * abs(L[0]) + hA[1] * abs(L[1]) + hA[2] * abs(L[2])
            rb = 0.0
            for k in range(3):
                rb += hB[k] * abs(L[0] * C[0, k] + L[1] * C[1, k] + L[2] * C[2, k])
            dist = _dot(t, L)
            s = abs(dist) - ra - rb
            if s >= margin:
                return 0
            if s > best_s + _FACE_BIAS:
                best_s = s
                kind = 2
                bi = i
                bj = j
                bL[:] = _sign(dist) * L
    nw = np.empty(3)  # world normal A -> B (_rot written out)
    for i in range(3):
        nw[i] = R_a[i, 0] * bL[0] + R_a[i, 1] * bL[1] + R_a[i, 2] * bL[2]

    separated = best_s >= 0.0
    wa_x = np.zeros(3)
    wb_x = np.zeros(3)
    if separated:
        d, wa_x, wb_x = _box_box_distance(hA, R_a, p_a, hB, R_b, p_b)
        if d >= margin:
            return 0
        phi_x = d
        if kind == 2 or d > best_s + _DEPTH_TOL:
            # closest features are not face-aligned: single exact contact
            if d > _TINY:
                n1 = (wb_x - wa_x) / d
            else:
                n1 = nw
            _emit(out_p, out_n, out_phi, k0, 0.5 * (wa_x + wb_x), n1, d)
            return 1
    else:
        phi_x = best_s

    if kind == 2:
        # penetrating edge-edge: closest points of the two supporting edges
        ca = np.empty(3)
        for k in range(3):
            ca[k] = 0.0 if k == bi else _sign(bL[k]) * hA[k]
        ua = np.zeros(3)
        ua[bi] = 1.0
        cb = t.copy()
        ub = np.empty(3)
        for k in range(3):
            sk = 0.0 if k == bj else _sign(bL[0] * C[0, k] + bL[1] * C[1, k] + bL[2] * C[2, k])
            for i in range(3):
                cb[i] -= sk * hB[k] * C[i, k]
        for i in range(3):
            ub[i] = C[i, bj]
        s, u = _closest_segments(ca, ua, hA[bi], cb, ub, hB[bj])
        mid = 0.5 * ((ca + s * ua) + (cb + u * ub))
        _emit(out_p, out_n, out_phi, k0, _to_world(R_a, p_a, mid), nw, best_s)
        return 1

    # face contact: reference box (owner of the face axis) and incident box
    if kind == 0:
        hR = hA
        RR = R_a
        pR = p_a
        hI = hB
        RI = R_b
        pI = p_b
        iref = bi
        n_ref = nw  # outward normal of the reference face, towards the other box
        n_out = nw
    else:
        hR = hB
        RR = R_b
        pR = p_b
        hI = hA
        RI = R_a
        pI = p_a
        iref = bj
        n_ref = -nw
        n_out = nw
    sr = _sign(n_ref[0] * RR[0, iref] + n_ref[1] * RR[1, iref] + n_ref[2] * RR[2, iref])

    # incident face: the face of the incident box most anti-parallel to n_ref
    kinc = 0
    best_c = -1.0
    for k in range(3):
        ck = abs(n_ref[0] * RI[0, k] + n_ref[1] * RI[1, k] + n_ref[2] * RI[2, k])
        if ck > best_c:
            best_c = ck
            kinc = k
    sk = _sign(n_ref[0] * RI[0, kinc] + n_ref[1] * RI[1, kinc] + n_ref[2] * RI[2, kinc])
    k1 = (kinc + 1) % 3
    k2 = (kinc + 2) % 3
    poly = np.empty((12, 3))
    tmp = np.empty((12, 3))
    v = np.empty(3)
    for c in range(4):
        a1 = 1.0 if (c == 0 or c == 3) else -1.0
        a2 = 1.0 if c < 2 else -1.0
        for i in range(3):
            v[i] = (pI[i] - sk * hI[kinc] * RI[i, kinc] + a1 * hI[k1] * RI[i, k1]
                    + a2 * hI[k2] * RI[i, k2])
        d0 = v[0] - pR[0]
        d1 = v[1] - pR[1]
        d2 = v[2] - pR[2]
        for i in range(3):  # in the reference frame (_to_local, without its temporary)
            poly[c, i] = RR[0, i] * d0 + RR[1, i] * d1 + RR[2, i] * d2
    m = np.int64(4)  # not Literal[int](4): one _clip_polygon specialization
    for ax in range(3):
        if ax == iref:
            continue
        m = _clip_polygon(poly, m, ax, 1.0, hR[ax], tmp)
        m = _clip_polygon(tmp, m, ax, -1.0, hR[ax], poly)

    cnt = np.int64(0)  # not Literal[int](0), for which numba would compile _emit_guard once more
    min_phi = np.inf
    for e in range(m):
        phi = sr * poly[e, iref] - hR[iref]
        if phi < margin and cnt < MAX_PAIR_CONTACTS:
            half = 0.5 * phi
            for i in range(3):  # _to_world of the vertex, moved half the depth back along n_ref
                pw = RR[i, 0] * poly[e, 0] + RR[i, 1] * poly[e, 1] + RR[i, 2] * poly[e, 2] + pR[i]
                out_p[k0 + cnt, i] = pw - half * n_ref[i]
                out_n[k0 + cnt, i] = n_out[i]
            out_phi[k0 + cnt] = phi
            cnt += 1
            min_phi = min(min_phi, phi)
    if cnt == 0 or min_phi > phi_x + _DEPTH_TOL:
        # deepest point lies outside the reference face: add it explicitly
        if separated:
            pt = 0.5 * (wa_x + wb_x)
        else:
            for i in range(3):
                v[i] = pI[i]
                for k in range(3):
                    sgk = _sign(n_ref[0] * RI[0, k] + n_ref[1] * RI[1, k] + n_ref[2] * RI[2, k])
                    v[i] -= sgk * hI[k] * RI[i, k]
            pt = v - 0.5 * phi_x * n_ref
        cnt = _emit_guard(out_p, out_n, out_phi, k0, cnt, pt, n_out, phi_x)
    return cnt


@njit(cache=True, error_model="numpy")
def _face_slab_range(c, u, lo, hi, H, kf):
    """The part [lo', hi'] of [lo, hi] where the line c + t u (box frame) lies over box face kf, i.e. within the
    slabs |x_j| <= H_j, j != kf; empty (lo' > hi') where it misses them."""
    for j in range(3):
        if j == kf:
            continue
        if abs(u[j]) < _TINY:
            if abs(c[j]) > H[j]:
                return 1.0, -1.0
        else:
            t1 = (-H[j] - c[j]) / u[j]
            t2 = (H[j] - c[j]) / u[j]
            lo = max(lo, min(t1, t2))
            hi = min(hi, max(t1, t2))
    return lo, hi


@njit(cache=True, error_model="numpy")
def _box_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Box A vs capsule B (segment vs box, then inflate by the radius).

    SAT over the 3 box face normals and the 3 (box edge x segment) axes decides
    overlap; a separated segment gets the exact closest points by feature
    enumeration.  If the contact normal is a box face normal, the segment is
    clipped to that face and each clipped end point is reported with its own
    depth (two points for a capsule lying on a face); otherwise one contact.
    """
    H = size_a
    r = size_b[0]
    hs = size_b[1]
    q = _to_local(R_a, p_a, p_b)  # capsule centre in box frame
    u = _rot_t(R_a, _col(R_b, 2))  # capsule axis in box frame

    best_s = -np.inf
    kind = -1  # 0: box face, 2: box edge x segment
    bk = 0
    bL = np.zeros(3)
    for k in range(3):
        s = abs(q[k]) - H[k] - hs * abs(u[k])
        if s >= margin + r:
            return 0
        if s > best_s:
            best_s = s
            kind = 0
            bk = k
            bL[:] = 0.0
            bL[k] = _sign(q[k])
    ek = np.zeros(3)
    for k in range(3):
        ek[:] = 0.0
        ek[k] = 1.0
        L = _cross(ek, u)
        ln = _norm(L)
        if ln < _AXIS_EPS:
            continue
        L /= ln
        dist = _dot(q, L)
        s = abs(dist) - (H[0] * abs(L[0]) + H[1] * abs(L[1]) + H[2] * abs(L[2]))
        if s >= margin + r:
            return 0
        if s > best_s + _FACE_BIAS:
            best_s = s
            kind = 2
            bk = k
            bL[:] = _sign(dist) * L

    if best_s >= 0.0:
        d, wbox, wseg = _segment_box_distance(q, u, hs, H)
        phi0 = d - r
        if phi0 >= margin:
            return 0
        if d > _TINY:
            n_loc = (wseg - wbox) / d
        else:
            n_loc = bL.copy()
        face_ok = True
    else:
        phi0 = best_s - r
        n_loc = bL.copy()
        if kind == 0:
            # deepest segment end point along -n, projected on the face
            e = q - _sign(_dot(u, n_loc)) * hs * u
            wbox = e - best_s * n_loc
            face_ok = True
        else:
            # box edge supporting the axis vs the segment
            ec = np.empty(3)
            for i in range(3):
                ec[i] = 0.0 if i == bk else _sign(n_loc[i]) * H[i]
            eb = _unit(bk)
            s, tt = _closest_segments(q, u, hs, ec, eb, H[bk])
            wbox = ec + tt * eb
            face_ok = False
    n_w = _rot(R_a, n_loc)
    point0 = _to_world(R_a, p_a, wbox + 0.5 * phi0 * n_loc)

    # face manifold
    kf = np.int64(0)  # not Literal[int](0), for which numba would compile _face_slab_range once more
    for k in range(1, 3):
        if abs(n_loc[k]) > abs(n_loc[kf]):
            kf = k
    if not (face_ok and abs(n_loc[kf]) > _FACE_COS):
        _emit(out_p, out_n, out_phi, k0, point0, n_w, phi0)
        return 1
    sg = _sign(n_loc[kf])
    nf = _unit(kf) * sg
    nf_w = _rot(R_a, nf)
    lo, hi = _face_slab_range(q, u, -hs, hs, H, kf)
    cnt = np.int64(0)  # not Literal[int](0), for which numba would compile _emit_guard once more
    min_phi = np.inf
    if hi >= lo:
        npts = 2 if hi - lo > 1e-9 else 1
        for ii in range(npts):
            tau = lo if ii == 0 else hi
            x = q + tau * u
            phi = sg * x[kf] - H[kf] - r
            if phi < margin:
                xb = x.copy()
                xb[kf] = sg * H[kf]
                pw = _to_world(R_a, p_a, xb + 0.5 * phi * nf)
                _emit(out_p, out_n, out_phi, k0 + cnt, pw, nf_w, phi)
                cnt += 1
                min_phi = min(min_phi, phi)
    if cnt == 0 or min_phi > phi0 + _DEPTH_TOL:
        cnt = _emit_guard(out_p, out_n, out_phi, k0, cnt, point0, n_w, phi0)
    return cnt


# ---------------------------------------------------------------------------
# box vs cylinder.  Everything in the box frame: the box is axis-aligned at the
# origin with half extents H; the cylinder has centre q, unit axis a, radius r
# and half length hl.  The signed distance is max over unit directions L of the
# projection gap (its exact value for both separated and penetrating convex
# shapes): separated shapes get the exact distance by features, penetrating ones
# the best of the candidate axes, refined by translating apart along the axis.
# ---------------------------------------------------------------------------

_GOLDEN_ITERS = 64  # golden-section steps along a box edge: bracket shrinks by 0.618^64 ~ 4e-14
_REFINE_ITERS = 24  # translate-apart refinements of a penetration direction
_REFINE_GAP = 1e-5  # m; separation left after a translate-apart step
_CAP_SIDES = 8  # the cap face is clipped as a regular octagon of rim points (coal's patch of a cap has eight too:
# the same stiffness of a cap pressed on a face as the coal fallback gave; four halve it)
_CAP_COS = 0.7071067811865476  # |cos| (axis vs face normal) from which the cap, not the side, meets a face


@njit(cache=True, error_model="numpy")
def _cyl_extent(L, a, r, hl):
    """Half width [m] of a centred cylinder (axis a, radius r, half length hl) along the unit direction L (the
    sine as |a x L|: sqrt(1 - c^2) loses half the digits near the axis)."""
    s0 = a[1] * L[2] - a[2] * L[1]
    s1 = a[2] * L[0] - a[0] * L[2]
    s2 = a[0] * L[1] - a[1] * L[0]
    return r * np.sqrt(s0 * s0 + s1 * s1 + s2 * s2) + hl * abs(_dot(a, L))


@njit(cache=True, error_model="numpy")
def _box_cyl_gap(H, q, a, r, hl, L):
    """Gap [m] between the projections of the box and the cylinder on the unit axis L (oriented box -> cylinder):
    at most their distance, and their signed distance is its maximum over L."""
    return _dot(q, L) - (H[0] * abs(L[0]) + H[1] * abs(L[1]) + H[2] * abs(L[2])) - _cyl_extent(L, a, r, hl)


@njit(cache=True, error_model="numpy")
def _cyl_point_distance(x0, x1, x2, q, a, r, hl):
    """Distance [m] from the point (x0, x1, x2) to the solid cylinder (0 inside)."""
    v0 = x0 - q[0]
    v1 = x1 - q[1]
    v2 = x2 - q[2]
    z = v0 * a[0] + v1 * a[1] + v2 * a[2]
    w0 = v0 - z * a[0]
    w1 = v1 - z * a[1]
    w2 = v2 - z * a[2]
    dr = max(0.0, np.sqrt(w0 * w0 + w1 * w1 + w2 * w2) - r)
    dz = max(0.0, abs(z) - hl)
    return np.sqrt(dr * dr + dz * dz)


@njit(cache=True, error_model="numpy")
def _cyl_closest(x, q, a, r, hl, y):
    """Write into y the point of the solid cylinder nearest to x (x itself when inside)."""
    v = x - q
    z = _dot(v, a)
    zc = _clamp(z, -hl, hl)
    rho = 0.0
    for i in range(3):
        rho += (v[i] - z * a[i]) ** 2
    rho = np.sqrt(rho)
    s = r / rho if rho > r else 1.0
    for i in range(3):
        y[i] = q[i] + zc * a[i] + s * (v[i] - z * a[i])


@njit(cache=True, error_model="numpy")
def _edge_cyl_distance(c, k, h, q, a, r, hl, best):
    """Distance [m] from the box edge c + t e_k (|t| <= h) to the cylinder and the minimizing t, or (inf, 0) when
    it cannot be below ``best``. Along the edge the distance is at least its distance to the cylinder's axis segment
    minus r, with equality where the closest axis point lies strictly between the caps (the edge then faces the
    side): that case is exact at once. Otherwise (the caps' rims or an edge inside the cylinder) the distance to a
    convex set is convex along a segment, and a golden-section search finds its minimum."""
    e = np.zeros(3)
    e[k] = 1.0
    ts, tz = _closest_segments(c, e, h, q, a, hl)
    d_axis = 0.0
    for i in range(3):
        d_axis += (c[i] + ts * e[i] - q[i] - tz * a[i]) ** 2
    d_axis = np.sqrt(d_axis)
    if d_axis - r >= best:
        return np.inf, 0.0
    if abs(tz) < hl and d_axis > r:
        return d_axis - r, ts
    g = 0.6180339887498949
    lo = -h
    hi = h
    t1 = hi - g * (hi - lo)
    t2 = lo + g * (hi - lo)
    p = c.copy()
    p[k] = c[k] + t1
    f1 = _cyl_point_distance(p[0], p[1], p[2], q, a, r, hl)
    p[k] = c[k] + t2
    f2 = _cyl_point_distance(p[0], p[1], p[2], q, a, r, hl)
    for _ in range(_GOLDEN_ITERS):
        if f1 <= f2:
            hi = t2
            t2 = t1
            f2 = f1
            t1 = hi - g * (hi - lo)
            p[k] = c[k] + t1
            f1 = _cyl_point_distance(p[0], p[1], p[2], q, a, r, hl)
        else:
            lo = t1
            t1 = t2
            f1 = f2
            t2 = lo + g * (hi - lo)
            p[k] = c[k] + t2
            f2 = _cyl_point_distance(p[0], p[1], p[2], q, a, r, hl)
    t = 0.5 * (lo + hi)
    p[k] = c[k] + t
    return _cyl_point_distance(p[0], p[1], p[2], q, a, r, hl), t


@njit(cache=True, error_model="numpy")
def _cyl_face_support(H, q, a, r, hl, k, s, y):
    """Write into y a point of the cylinder lowest towards the box face x_k = s H_k (its support point along
    -s e_k); where that support is a whole cap or side line, the one nearest the face rectangle."""
    c = -s * a[k]  # axis . support direction
    if abs(c) > 1e-12:
        zc = _sign(c) * hl
    else:  # a side line parallel to the face: the part of it over the face rectangle, if any
        lo, hi = _face_slab_range(q, a, -hl, hl, H, k)
        zc = 0.5 * (lo + hi) if hi >= lo else 0.0
    wperp = np.empty(3)
    for i in range(3):
        wperp[i] = -c * a[i]
    wperp[k] -= s
    ln = _norm(wperp)
    if ln > 1e-12:
        for i in range(3):
            y[i] = q[i] + zc * a[i] + r * wperp[i] / ln
        return
    # a cap parallel to the face: its point nearest the rectangle
    t = np.empty(3)
    for i in range(3):
        cc = q[i] + zc * a[i]
        t[i] = cc if i == k else _clamp(cc, -H[i], H[i])
        t[i] -= cc
    ta = _dot(t, a)
    for i in range(3):
        t[i] -= ta * a[i]
    lt = _norm(t)
    sc = r / lt if lt > r else 1.0
    for i in range(3):
        y[i] = q[i] + zc * a[i] + sc * t[i]


@njit(cache=True, error_model="numpy")
def _box_cyl_distance(H, q, a, r, hl, x, y):
    """Distance [m] between the box and a cylinder *disjoint* from it; writes the witness points x (on the box)
    and y (on the cylinder). The box's nearest point lies in a face (then the cylinder's lowest point towards
    that face lies over it and the distance is the face's gap) or on one of the 12 edges."""
    kb = np.int64(0)  # not Literal[int](0), for which numba would compile _cyl_face_support once more
    gb = -np.inf
    for k in range(3):
        g = abs(q[k]) - H[k] - r * np.sqrt(a[(k + 1) % 3] ** 2 + a[(k + 2) % 3] ** 2) - hl * abs(a[k])
        if g > gb:
            gb = g
            kb = k
    if gb > 0.0:
        s = _sign(q[kb])
        _cyl_face_support(H, q, a, r, hl, kb, s, y)
        inside = True
        for j in range(3):
            if j != kb and abs(y[j]) > H[j]:
                inside = False
        if inside:
            for i in range(3):
                x[i] = y[i]
            x[kb] = s * H[kb]
            return gb
    bound = np.sqrt(r * r + hl * hl)
    best = np.inf
    c = np.empty(3)
    for axis in range(3):
        j1 = (axis + 1) % 3
        j2 = (axis + 2) % 3
        for idx in range(4):
            c[axis] = 0.0
            c[j1] = H[j1] if (idx & 1) else -H[j1]
            c[j2] = H[j2] if (idx & 2) else -H[j2]
            # lower bound: distance from the cylinder's centre to the edge minus its bounding radius
            e0 = c[j1] - q[j1]
            e1 = c[j2] - q[j2]
            ez = max(0.0, abs(q[axis]) - H[axis])
            if np.sqrt(e0 * e0 + e1 * e1 + ez * ez) - bound >= best:
                continue
            d, t = _edge_cyl_distance(c, axis, H[axis], q, a, r, hl, best)
            if d < best:
                best = d
                for i in range(3):
                    x[i] = c[i]
                x[axis] += t
    _cyl_closest(x, q, a, r, hl, y)
    return best


@njit(cache=True, error_model="numpy")
def _box_cyl_depth(H, q, a, r, hl, L, g):
    """Refine a penetration axis L (gap g < 0 along it, oriented box -> cylinder): translate the cylinder apart
    along L until it is _REFINE_GAP clear, take the normal of the then exact distance as the next axis. The
    overlap along that normal is never larger (it is o(L) + _REFINE_GAP - distance), so the gap only grows, to a
    direction where translating apart ends on the same normal: the minimum translation. Returns (gap, axis)."""
    x = np.empty(3)
    y = np.empty(3)
    qs = np.empty(3)
    n = np.empty(3)
    L = L.copy()
    for _ in range(_REFINE_ITERS):
        shift = _REFINE_GAP - g
        for i in range(3):
            qs[i] = q[i] + shift * L[i]
        d = _box_cyl_distance(H, qs, a, r, hl, x, y)
        if d <= _TINY:
            break
        dn = _dist(y, x)
        for i in range(3):
            n[i] = (y[i] - x[i]) / dn
        gn = _box_cyl_gap(H, q, a, r, hl, n)
        if gn <= g + 1e-14:
            break
        g = gn
        L[:] = n
    return g, L


@njit(cache=True, error_model="numpy")
def _polish_axis(H, q, a, r, hl, L, g):
    """Pattern search for a larger projection gap around the unit axis L (gap g): steps of angle h along eight
    tangent directions, halved when none gains, from 1e-2 down to 1e-12 rad. The gap is concave but not smooth
    (box edges, the cylinder's rims), where the translate-apart iteration slows; this finishes its last digits.
    Returns (gap, axis)."""
    t1 = _any_perp(L)
    t2 = _cross(L, t1)
    M = np.empty(3)
    h = 1e-2
    while h > 1e-12:
        moved = False
        for k in range(8):
            c = np.cos(0.25 * np.pi * k)
            sn = np.sin(0.25 * np.pi * k)
            for i in range(3):
                M[i] = L[i] + h * (c * t1[i] + sn * t2[i])
            M /= _norm(M)
            gm = _box_cyl_gap(H, q, a, r, hl, M)
            if gm > g:
                g = gm
                L = M.copy()
                t1 = _any_perp(L)
                t2 = _cross(L, t1)
                moved = True
                break
        if not moved:
            h *= 0.5
    return g, L


@njit(cache=True, error_model="numpy")
def _box_cylinder(size_a, R_a, p_a, size_b, R_b, p_b, margin, out_p, out_n, out_phi, k0):
    """Box A vs cylinder B.

    Signed distance and normal: projection gaps on the candidate axes (box faces, cylinder axis, box edge x
    axis, the radial directions of the box vertices) bound the distance from below and reject far pairs;
    disjoint shapes get the exact distance by features (`_box_cyl_distance`), penetrating ones the minimum
    translation (`_box_cyl_depth` from every candidate: the overlap has local minima over the directions). Manifold: a normal along a box face normal clips
    the cylinder's feature facing that face against it -- the cap (a regular octagon of rim points) when the
    axis is within 45 deg of the normal, else the side line (two points) -- each point with its own depth; any
    other normal gives the single deepest contact, which every manifold contains.
    """
    H = size_a
    r = size_b[0]
    hl = size_b[1]
    q = _to_local(R_a, p_a, p_b)
    a = _rot_t(R_a, _col(R_b, 2))

    best_g = -np.inf
    bL = np.zeros(3)
    cand_L = np.zeros((15, 3))  # candidate axes, oriented box -> cylinder
    cand_ok = np.zeros(15, dtype=np.bool_)
    L = np.empty(3)
    for cand in range(15):
        if cand < 3:
            L[:] = 0.0
            L[cand] = 1.0
        elif cand == 3:
            L[:] = a
        elif cand < 7:
            k = cand - 4
            L[:] = 0.0
            L[k] = 1.0
            L = _cross(L, a)
        else:
            v = cand - 7
            for i in range(3):
                L[i] = (H[i] if (v >> i) & 1 else -H[i]) - q[i]
            L -= _dot(L, a) * a
        ln = _norm(L)
        if ln < _AXIS_EPS:
            continue
        L /= ln
        if _dot(q, L) < 0.0:
            L = -L
        g = _box_cyl_gap(H, q, a, r, hl, L)
        if g >= margin:
            return 0
        cand_L[cand] = L
        cand_ok[cand] = True
        if g > best_g:
            best_g = g
            bL[:] = L

    x = np.empty(3)
    y = np.empty(3)
    n_loc = bL.copy()
    d = _box_cyl_distance(H, q, a, r, hl, x, y)
    separated = best_g > 0.0
    if not separated and d > _TINY:
        # disjoint iff the witnesses' direction separates (containment or overlap give a negative gap there)
        dn = _dist(y, x)
        for i in range(3):
            n_loc[i] = (y[i] - x[i]) / dn
        separated = _box_cyl_gap(H, q, a, r, hl, n_loc) >= d - 1e-9
    if separated:
        if d >= margin:
            return 0
        phi0 = d
        if d > _TINY:
            dn = _dist(y, x)
            for i in range(3):
                n_loc[i] = (y[i] - x[i]) / dn
        else:
            n_loc[:] = bL
        pt = 0.5 * (x + y)
    else:
        # the overlap has local minima over the directions: refine from every candidate, keep the shallowest
        phi0 = -np.inf
        for cand in range(15):
            if cand_ok[cand]:
                g, Lr = _box_cyl_depth(H, q, a, r, hl, cand_L[cand], _box_cyl_gap(H, q, a, r, hl, cand_L[cand]))
                if g > phi0:
                    phi0 = g
                    n_loc = Lr
        phi0, n_loc = _polish_axis(H, q, a, r, hl, n_loc, phi0)
        # witnesses: the closest points once the cylinder is translated apart along the normal until (just) clear
        shift = 1e-9 - phi0
        d = _box_cyl_distance(H, q + shift * n_loc, a, r, hl, x, y)
        pt = 0.5 * (x + y - shift * n_loc)
    n_w = _rot(R_a, n_loc)
    point0 = _to_world(R_a, p_a, pt)

    kf = np.int64(0)  # not Literal[int](0), for which numba would compile _face_slab_range once more
    for k in range(1, 3):
        if abs(n_loc[k]) > abs(n_loc[kf]):
            kf = k
    if abs(n_loc[kf]) <= _FACE_COS:
        _emit(out_p, out_n, out_phi, k0, point0, n_w, phi0)
        return 1
    # face manifold: the cylinder's feature facing box face kf, clipped to it
    sg = _sign(n_loc[kf])
    nf = _unit(kf) * sg
    nf_w = _rot(R_a, nf)
    cnt = np.int64(0)  # not Literal[int](0), for which numba would compile _emit_guard once more
    min_phi = np.inf
    ca = _dot(a, nf)
    if abs(ca) >= _CAP_COS:
        cc = q - _sign(ca) * hl * a  # centre of the cap facing the face
        down = ca * a - nf  # in the cap plane, towards the face
        ld = _norm(down)
        u = down / ld if ld > 1e-9 else _rot_t(R_a, _col(R_b, 0))
        u -= _dot(u, a) * a
        u /= _norm(u)
        w = _cross(a, u)
        poly = np.empty((2 * _CAP_SIDES, 3))
        tmp = np.empty((2 * _CAP_SIDES, 3))
        for e in range(_CAP_SIDES):
            th = 2.0 * np.pi * e / _CAP_SIDES
            cs = np.cos(th)
            sn = np.sin(th)
            for i in range(3):
                poly[e, i] = cc[i] + r * (cs * u[i] + sn * w[i])
        m = np.int64(_CAP_SIDES)
        for ax in range(3):
            if ax == kf:
                continue
            m = _clip_polygon(poly, m, ax, 1.0, H[ax], tmp)
            m = _clip_polygon(tmp, m, ax, -1.0, H[ax], poly)
        for ii in range(min(m, MAX_PAIR_CONTACTS)):
            e = ii if m <= MAX_PAIR_CONTACTS else (ii * m) // MAX_PAIR_CONTACTS  # evenly spread when clipped to more
            phi = sg * poly[e, kf] - H[kf]
            if phi < margin:
                pw = _to_world(R_a, p_a, poly[e])
                _emit(out_p, out_n, out_phi, k0 + cnt, pw - 0.5 * phi * nf_w, nf_w, phi)
                cnt += 1
                min_phi = min(min_phi, phi)
    else:
        # the side line facing the face, clipped to the face's extent
        wr = ca * a - nf
        wr /= _norm(wr)
        base = q + r * wr
        lo, hi = _face_slab_range(base, a, -hl, hl, H, kf)
        if hi >= lo:
            npts = 2 if hi - lo > 1e-9 else 1
            for ii in range(npts):
                tau = lo if ii == 0 else hi
                xs = base + tau * a
                phi = sg * xs[kf] - H[kf]
                if phi < margin:
                    pw = _to_world(R_a, p_a, xs)
                    _emit(out_p, out_n, out_phi, k0 + cnt, pw - 0.5 * phi * nf_w, nf_w, phi)
                    cnt += 1
                    min_phi = min(min_phi, phi)
    if cnt == 0 or min_phi > phi0 + _DEPTH_TOL:
        cnt = _emit_guard(out_p, out_n, out_phi, k0, cnt, point0, n_w, phi0)
    return cnt


# ---------------------------------------------------------------------------
# public dispatch
# ---------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def numba_supports(type_a, type_b):
    """True if `collide_primitives` handles the pair (either order)."""
    lo = min(type_a, type_b)
    hi = max(type_a, type_b)
    if lo < 0 or hi > CYLINDER:
        return False
    if lo == HALFSPACE:
        return True
    if lo == SPHERE:
        return hi == SPHERE or hi == BOX or hi == CAPSULE
    if lo == BOX:
        return hi == BOX or hi == CAPSULE or hi == CYLINDER
    if lo == CAPSULE:
        return hi == CAPSULE
    return False


@njit(cache=True, error_model="numpy")
def collide_primitives(type_a, size_a, R_a, p_a, type_b, size_b, R_b, p_b, margin,
                       out_p, out_n, out_phi, k0):
    """Contacts between primitive geometries A and B (world frame, metres).

    Writes n contacts into out_p[k0:k0+n] (points), out_n[k0:k0+n] (unit
    normals from A to B) and out_phi[k0:k0+n] (signed distances, < margin)
    and returns n (0..MAX_PAIR_CONTACTS).  The caller guarantees room for
    MAX_PAIR_CONTACTS rows from k0.  Unsupported pairs (see
    `numba_supports`) return 0.

    The pair kernels take the lower type code first: a pair given the other way round is swapped here and its
    normals turned back. One level of dispatch, not a sorting call around a dispatching one: every compiled call
    that can raise increments and decrements the reference count of each of its nine array arguments
    (docs/performance.md, "The convex solve").
    """
    # A constant k0 (e.g. a caller's ``n = 0``) is typed Literal[int](0) before int64: without this, numba compiles
    # the whole pair-kernel tree below twice (compile time only; the values are the same).
    k0 = np.int64(k0)
    flip = type_a > type_b
    if flip:
        lo, s_lo, R_lo, p_lo, hi, s_hi, R_hi, p_hi = type_b, size_b, R_b, p_b, type_a, size_a, R_a, p_a
    else:
        lo, s_lo, R_lo, p_lo, hi, s_hi, R_hi, p_hi = type_a, size_a, R_a, p_a, type_b, size_b, R_b, p_b
    n = 0
    if lo == HALFSPACE:
        if hi == SPHERE:
            n = _halfspace_sphere(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
        elif hi == BOX:
            n = _halfspace_box(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
        elif hi == CAPSULE:
            n = _halfspace_capsule(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
        elif hi == CYLINDER:
            n = _halfspace_cylinder(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
    elif lo == SPHERE:
        if hi == SPHERE:
            n = _sphere_sphere(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
        elif hi == BOX:
            n = _sphere_box(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
        elif hi == CAPSULE:
            n = _sphere_capsule(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
    elif lo == BOX:
        if hi == BOX:
            n = _box_box(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
        elif hi == CAPSULE:
            n = _box_capsule(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
        elif hi == CYLINDER:
            n = _box_cylinder(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
    elif lo == CAPSULE and hi == CAPSULE:
        n = _capsule_capsule(s_lo, R_lo, p_lo, s_hi, R_hi, p_hi, margin, out_p, out_n, out_phi, k0)
    if flip:
        for k in range(k0, k0 + n):
            for i in range(3):
                out_n[k, i] = -out_n[k, i]
    return n


# ---------------------------------------------------------------------------
# coal fallback
# ---------------------------------------------------------------------------


def make_coal_shape(geom_type, size, vertices=None):
    """coal collision geometry (in the geometry's local frame) for a geom type.

    CONVEX needs `vertices` (N, 3) in the local frame; its convex hull is built
    with qhull through coal.
    """
    size = np.asarray(size, dtype=np.float64)
    if geom_type == HALFSPACE:
        return coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    if geom_type == SPHERE:
        return coal.Sphere(float(size[0]))
    if geom_type == BOX:
        return coal.Box(2.0 * float(size[0]), 2.0 * float(size[1]), 2.0 * float(size[2]))
    if geom_type == CAPSULE:
        return coal.Capsule(float(size[0]), 2.0 * float(size[1]))
    if geom_type == CYLINDER:
        return coal.Cylinder(float(size[0]), 2.0 * float(size[1]))
    if geom_type == CONVEX:
        if vertices is None:
            raise ValueError("CONVEX geometry needs vertices")
        pts = coal.StdVec_Vec3s()
        for v in np.asarray(vertices, dtype=np.float64).reshape(-1, 3):
            pts.append(np.ascontiguousarray(v))
        # keep_triangles=True requires qhull's "Qt" option
        return coal.Convex.convexHull(pts, True, "Qt")
    raise ValueError(f"unknown geometry type {geom_type}")


def _transform(R, p):
    return coal.Transform3s(np.ascontiguousarray(R, dtype=np.float64),
                            np.ascontiguousarray(p, dtype=np.float64).reshape(3))


def _coal_collide(shape_a, Ta, shape_b, Tb, margin):
    req = coal.CollisionRequest()
    req.security_margin = float(margin)
    req.num_max_contacts = 1
    req.enable_contact = True
    res = coal.CollisionResult()
    coal.collide(shape_a, Ta, shape_b, Tb, req, res)
    if not res.isCollision() or res.numContacts() == 0:
        return None
    return res


def _coal_patch(shape_a, Ta, shape_b, Tb, res, max_points):
    """(points list, normal, depth) of coal's contact patch of a collision result, None if it has none."""
    preq = coal.ContactPatchRequest(1)
    pres = coal.ContactPatchResult(preq)
    coal.computeContactPatch(shape_a, Ta, shape_b, Tb, res, preq, pres)
    if pres.numContactPatches() == 0:
        return None
    patch = pres.getContactPatch(0)
    m = patch.size()
    if m == 0:
        return None
    pts = [np.array(patch.getPoint(i), dtype=np.float64) for i in _patch_subset(m, max_points)]
    return pts, np.array(patch.getNormal(), dtype=np.float64), float(patch.penetration_depth)


@functools.lru_cache(maxsize=256)
def _patch_subset(m, max_points):
    """Indices (a tuple) of the at most ``max_points`` points kept of a patch of m: all, or evenly spread (patch
    points are ordered around the polygon)."""
    if m <= max_points:
        return tuple(range(m))
    return tuple(int(i) for i in np.unique(np.round(np.linspace(0, m, max_points, endpoint=False)).astype(int)))


def coal_contacts(shape_a, R_a, p_a, shape_b, R_b, p_b, margin, max_points=MAX_PAIR_CONTACTS):
    """Contacts between two coal geometries, same convention as
    `collide_primitives`.

    coal conventions (checked in tests): ``Contact.normal`` points from o1 to
    o2, ``nearest_points[0]`` lies on o1 and ``[1]`` on o2, ``pos`` is their
    midpoint, and ``penetration_depth`` is the *signed* distance (negative when
    penetrating), i.e. exactly our phi.  The contact patch (coal 3) gives
    several points for face contacts; they all carry the patch depth.

    Returns (points (n, 3), normals (n, 3), phi (n,)), n <= max_points.
    """
    Ta = _transform(R_a, p_a)
    Tb = _transform(R_b, p_b)
    empty = (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))
    res = _coal_collide(shape_a, Ta, shape_b, Tb, margin)
    if res is None:
        return empty
    c = res.getContact(0)
    phi = float(c.penetration_depth)
    if phi >= margin:
        return empty
    nrm = np.array(c.normal, dtype=np.float64)
    pts = [np.array(c.pos, dtype=np.float64)]
    if max_points > 1:
        patch = _coal_patch(shape_a, Ta, shape_b, Tb, res, max_points)
        if patch is not None and len(patch[0]) == 1:
            # coal 3 sometimes returns a single rim point for a flat face (e.g. a cylinder's end cap when the
            # normal points along its −z axis) but the full polygon with the shapes swapped: try that order too
            res_s = _coal_collide(shape_b, Tb, shape_a, Ta, margin)
            swapped = None if res_s is None else _coal_patch(shape_b, Tb, shape_a, Ta, res_s, max_points)
            if swapped is not None and len(swapped[0]) > 1:
                patch = (swapped[0], -swapped[1], swapped[2])
        if patch is not None:
            pts, nrm, phi = patch
    n = len(pts)
    points = np.array(pts).reshape(n, 3)
    normals = np.empty((n, 3))
    normals[:] = nrm
    phis = np.full(n, phi)
    return points, normals, phis
