"""Tests for cenic_gym.narrowphase: analytic primitive contacts, the A->B normal
convention, randomized agreement with coal, and the coal fallback."""

import coal
import numpy as np
import pytest

from cenic_gym.narrowphase import (BOX, CAPSULE, CONVEX, CYLINDER, HALFSPACE, MAX_PAIR_CONTACTS, SPHERE,
                                   coal_contacts, collide_primitives, make_coal_shape, numba_supports)

I3 = np.eye(3)
Z3 = np.zeros(3)
K0 = 3  # write contacts at an offset to check that k0 is honoured
TYPE_NAMES = {HALFSPACE: "halfspace", SPHERE: "sphere", BOX: "box", CAPSULE: "capsule", CYLINDER: "cylinder"}


def rot(axis, angle):
    """Rotation matrix about `axis` by `angle` (rad), Rodrigues."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.ascontiguousarray(I3 + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K)


def rand_rot(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.ascontiguousarray([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def collide(ta, sa, Ra, pa, tb, sb, Rb, pb, margin=0.01):
    """Run collide_primitives into sentinel-filled buffers; return (points, normals, phi)."""
    out_p = np.full((K0 + MAX_PAIR_CONTACTS + 2, 3), 7.0)
    out_n = np.full_like(out_p, 7.0)
    out_phi = np.full(out_p.shape[0], 7.0)
    n = collide_primitives(ta, np.asarray(sa, float), np.ascontiguousarray(Ra, float), np.asarray(pa, float),
                           tb, np.asarray(sb, float), np.ascontiguousarray(Rb, float), np.asarray(pb, float),
                           float(margin), out_p, out_n, out_phi, K0)
    assert 0 <= n <= MAX_PAIR_CONTACTS
    # rows outside [K0, K0 + n) untouched
    assert np.all(out_p[:K0] == 7.0) and np.all(out_p[K0 + n:] == 7.0)
    assert np.all(out_phi[:K0] == 7.0) and np.all(out_phi[K0 + n:] == 7.0)
    p, nn, phi = out_p[K0:K0 + n].copy(), out_n[K0:K0 + n].copy(), out_phi[K0:K0 + n].copy()
    if n:
        assert np.allclose(np.linalg.norm(nn, axis=1), 1.0)
        assert np.all(phi < margin)
    return p, nn, phi


def collide_both(ta, sa, Ra, pa, tb, sb, Rb, pb, margin=0.01):
    """Contacts for (A, B); also checks the (B, A) call: same points and phi, flipped normals.

    Mixed-type pairs are swapped internally, so both calls must agree exactly.  Same-type
    pairs are not swapped; for them (e.g. nearly parallel capsules, whose manifold is built
    along A's axis) only the deepest phi must agree."""
    p, n, phi = collide(ta, sa, Ra, pa, tb, sb, Rb, pb, margin)
    p2, n2, phi2 = collide(tb, sb, Rb, pb, ta, sa, Ra, pa, margin)
    if ta != tb or len(phi) <= 1:
        assert len(phi2) == len(phi)
    if ta != tb and len(phi):  # same contacts, possibly in another order
        assert_same_rows(np.c_[p2, -n2, phi2], np.c_[p, n, phi], atol=1e-9)
    elif len(phi):
        assert len(phi2) > 0 and phi2.min() == pytest.approx(phi.min(), abs=1e-9)
        if len(phi) == 1:
            np.testing.assert_allclose(n2[0], -n[0], atol=1e-9)
    return p, n, phi


def assert_same_rows(actual, expected, atol=1e-9):
    """Rows of `actual` equal the rows of `expected` up to order."""
    actual = np.atleast_2d(actual)
    expected = np.atleast_2d(expected)
    assert actual.shape == expected.shape, (actual, expected)
    used = set()
    for row in expected:
        d = np.linalg.norm(actual - row, axis=1)
        d[list(used)] = np.inf
        i = int(np.argmin(d))
        assert d[i] < atol, (row, actual)
        used.add(i)


# ---------------------------------------------------------------------------
# dispatch table
# ---------------------------------------------------------------------------

SUPPORTED = {(HALFSPACE, HALFSPACE), (HALFSPACE, SPHERE), (HALFSPACE, BOX), (HALFSPACE, CAPSULE),
             (HALFSPACE, CYLINDER), (SPHERE, SPHERE), (SPHERE, BOX), (SPHERE, CAPSULE), (CAPSULE, CAPSULE),
             (BOX, BOX), (BOX, CAPSULE), (BOX, CYLINDER)}


def test_numba_supports_table():
    for a in range(6):
        for b in range(6):
            expected = (min(a, b), max(a, b)) in SUPPORTED
            assert numba_supports(a, b) == expected, (a, b)
    assert numba_supports(CYLINDER, BOX) and not numba_supports(CYLINDER, SPHERE)
    assert not numba_supports(CONVEX, HALFSPACE)


def test_halfspace_halfspace_and_unsupported_return_zero():
    s = np.array([0.3, 0.4, 0.5])
    assert len(collide(HALFSPACE, s, I3, Z3, HALFSPACE, s, rot([1, 0, 0], 2.0), Z3, 1.0)[2]) == 0
    assert len(collide(CYLINDER, s, I3, Z3, SPHERE, s, I3, Z3, 1.0)[2]) == 0
    assert len(collide(CONVEX, s, I3, Z3, SPHERE, s, I3, Z3, 1.0)[2]) == 0


# ---------------------------------------------------------------------------
# analytic cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("phi_true", [0.02, 0.0, -0.03])
def test_halfspace_sphere_tilted(phi_true):
    R = rot([1, 0.3, 0], 0.5)
    p0 = np.array([0.2, -0.1, 0.3])
    n = R[:, 2]
    r = 0.25
    c = p0 + np.array([0.3, 0.2, 0.0]) @ (I3 - np.outer(n, n)) + (r + phi_true) * n
    p, nn, phi = collide_both(HALFSPACE, Z3, R, p0, SPHERE, [r, 0, 0], I3, c, margin=0.05)
    assert len(phi) == 1
    assert phi[0] == pytest.approx(phi_true, abs=1e-12)
    np.testing.assert_allclose(nn[0], n, atol=1e-12)
    np.testing.assert_allclose(p[0], c - (r + phi_true / 2) * n, atol=1e-12)
    # beyond the margin: nothing
    assert len(collide(HALFSPACE, Z3, R, p0, SPHERE, [r, 0, 0], I3, c + 0.1 * n, margin=0.05)[2]) == 0


def test_sphere_sphere():
    ca, cb = np.array([0.1, 0.2, 0.3]), np.array([0.1, 0.2, 0.3]) + 0.7 * np.array([0.6, 0.0, 0.8])
    p, n, phi = collide_both(SPHERE, [0.4, 0, 0], I3, ca, SPHERE, [0.35, 0, 0], I3, cb, margin=0.0)
    assert phi[0] == pytest.approx(-0.05)
    np.testing.assert_allclose(n[0], [0.6, 0.0, 0.8])
    wa, wb = ca + 0.4 * n[0], cb - 0.35 * n[0]
    np.testing.assert_allclose(p[0], 0.5 * (wa + wb))
    assert len(collide(SPHERE, [0.4, 0, 0], I3, ca, SPHERE, [0.25, 0, 0], I3, cb, margin=0.04)[2]) == 0
    p, n, phi = collide(SPHERE, [0.4, 0, 0], I3, ca, SPHERE, [0.25, 0, 0], I3, cb, margin=0.06)
    assert phi[0] == pytest.approx(0.05)


@pytest.mark.parametrize("case", ["face", "edge", "corner", "deep"])
def test_sphere_box_regions(case):
    h = np.array([0.5, 0.3, 0.2])
    Rb = rot([0.2, 1, 0.4], 0.7)
    pb = np.array([0.3, -0.2, 0.1])
    r = 0.1
    if case == "face":  # above the +z face
        q = np.array([0.1, 0.1, 0.2 + 0.08])
        d_true, n_loc = 0.08 - r, np.array([0, 0, 1.0])
    elif case == "edge":  # beyond the (+x, +z) edge
        q = np.array([0.5 + 0.06, 0.0, 0.2 + 0.08])
        d_true, n_loc = 0.1 - r, np.array([0.6, 0, 0.8])
    elif case == "corner":
        off = np.array([1.0, -2.0, 2.0]) / 3.0 * 0.09
        q = np.array([0.5, -0.3, 0.2]) + off
        d_true, n_loc = 0.09 - r, off / 0.09
    else:  # centre inside, closest face is -y (0.05 away)
        q = np.array([0.1, -0.25, 0.0])
        d_true, n_loc = -0.05 - r, np.array([0, -1.0, 0])
    c = Rb @ q + pb
    p, n, phi = collide_both(SPHERE, [r, 0, 0], I3, c, BOX, h, Rb, pb, margin=0.01)
    assert len(phi) == 1
    assert phi[0] == pytest.approx(d_true, abs=1e-12)
    # normal from sphere (A) to box (B): opposite of the outward box normal
    np.testing.assert_allclose(n[0], -(Rb @ n_loc), atol=1e-12)
    np.testing.assert_allclose(p[0], c - (r + d_true / 2) * (Rb @ n_loc), atol=1e-12)


def test_box_resting_flat_on_halfspace():
    h = np.array([0.4, 0.3, 0.2])
    Rb = rot([0, 0, 1], 0.3)
    pb = np.array([1.0, 2.0, 0.2 - 0.004])
    p, n, phi = collide_both(HALFSPACE, Z3, I3, Z3, BOX, h, Rb, pb, margin=0.01)
    assert len(phi) == 4
    np.testing.assert_allclose(phi, -0.004, atol=1e-12)
    np.testing.assert_allclose(n, np.tile([0, 0, 1.0], (4, 1)))
    corners = np.array([Rb @ (h * [sx, sy, -1]) + pb for sx in (-1, 1) for sy in (-1, 1)])
    assert_same_rows(p, corners - [0, 0, -0.002])
    # margin larger than the box: all 8 corners
    assert len(collide(HALFSPACE, Z3, I3, Z3, BOX, h, Rb, pb, margin=1.0)[2]) == 8


def test_box_tilted_on_halfspace_low_corners_only():
    h = np.array([0.5, 0.3, 0.2])
    Rb = rot([0, 1, 0], 0.2)  # tilted about y: the -x... corners go down on one side
    pb = np.array([0.0, 0.0, 0.25])
    corners = np.array([Rb @ (h * [sx, sy, sz]) + pb for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    margin = 0.02
    expected = corners[corners[:, 2] < margin]
    assert len(expected) == 2  # only the two lowest corners (one edge)
    p, n, phi = collide_both(HALFSPACE, Z3, I3, Z3, BOX, h, Rb, pb, margin=margin)
    assert len(phi) == 2
    assert_same_rows(np.c_[p[:, :2], phi], np.c_[expected[:, :2], expected[:, 2]])


def test_capsule_on_halfspace_flat_and_tilted():
    r, hl = 0.1, 0.4
    Rc = rot([0, 1, 0], np.pi / 2)  # lying along world x
    p, n, phi = collide_both(HALFSPACE, Z3, I3, Z3, CAPSULE, [r, hl, 0], Rc, [0.3, 0, r - 0.01], margin=0.005)
    assert len(phi) == 2
    np.testing.assert_allclose(phi, -0.01)
    assert_same_rows(p, [[0.3 - hl, 0, -0.005], [0.3 + hl, 0, -0.005]])
    # tilted 30 deg: the low end touches, the high end is far above the margin
    Rt = rot([0, 1, 0], np.pi / 3)
    low_end = np.array([0, 0, 0.5]) - hl * Rt[:, 2]
    p, n, phi = collide_both(HALFSPACE, Z3, I3, Z3, CAPSULE, [r, hl, 0], Rt, [0, 0, 0.5 - low_end[2] + r - 0.002],
                             margin=0.01)
    assert len(phi) == 1 and phi[0] == pytest.approx(-0.002)
    # a tilted halfspace
    Rh = rot([1, 1, 0], 0.4)
    nh = Rh[:, 2]
    pc = (hl + r + 0.005) * nh + 0.2 * Rh[:, 0]  # standing on the tilted plane, 5 mm above it
    p, n, phi = collide_both(HALFSPACE, Z3, Rh, Z3, CAPSULE, [r, hl, 0], Rh, pc, margin=0.01)
    assert len(phi) == 1 and phi[0] == pytest.approx(0.005)
    np.testing.assert_allclose(n[0], nh)


def test_cylinder_standing_on_halfspace():
    r, hl = 0.2, 0.3
    p, n, phi = collide_both(HALFSPACE, Z3, I3, Z3, CYLINDER, [r, hl, 0], rot([0, 0, 1], 0.4),
                             [0.1, 0.2, hl - 0.003], margin=0.01)
    assert len(phi) == 4
    np.testing.assert_allclose(phi, -0.003, atol=1e-12)
    np.testing.assert_allclose(p[:, 2], -0.0015, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(p[:, :2] - [0.1, 0.2], axis=1), r)
    # not collinear: spans an area
    assert np.linalg.matrix_rank(p[1:, :2] - p[0, :2], tol=1e-6) == 2


def test_cylinder_lying_on_halfspace():
    r, hl = 0.2, 0.3
    Rc = rot([1, 0, 0], np.pi / 2)  # axis along world -y
    p, n, phi = collide_both(HALFSPACE, Z3, I3, Z3, CYLINDER, [r, hl, 0], Rc, [0.0, 0.0, r - 0.002], margin=0.01)
    assert len(phi) == 2
    np.testing.assert_allclose(phi, -0.002, atol=1e-12)
    assert_same_rows(p, [[0, -hl, -0.001], [0, hl, -0.001]], atol=1e-12)


def test_cylinder_tilted_on_halfspace():
    r, hl, tilt = 0.5, 0.05, np.pi / 6  # a disk tilted by 30 deg
    Rc = rot([0, 1, 0], tilt)
    a = Rc[:, 2]
    down = np.array([np.cos(tilt), 0, -np.sin(tilt)])  # in-cap direction towards the ground
    zc = hl * np.cos(tilt) + r * np.sin(tilt) - 0.001  # bottom rim point 1 mm deep
    pc = np.array([0, 0, zc])
    bottom = pc - hl * a + r * down
    top = pc + hl * a + r * down
    assert bottom[2] == pytest.approx(-0.001)
    p, n, phi = collide_both(HALFSPACE, Z3, I3, Z3, CYLINDER, [r, hl, 0], Rc, pc, margin=0.1)
    assert len(phi) == 2  # deepest rim point of each cap; other rim points are > margin
    assert_same_rows(np.c_[p[:, :2], phi], [[*bottom[:2], bottom[2]], [*top[:2], top[2]]], atol=1e-12)


def test_box_on_box_face_contact():
    hA, hB = np.array([1.0, 1.0, 0.5]), np.array([0.3, 0.2, 0.25])
    pB = np.array([0.1, -0.2, 0.5 + 0.25 - 0.01])
    p, n, phi = collide_both(BOX, hA, I3, Z3, BOX, hB, I3, pB, margin=0.005)
    assert len(phi) >= 4
    np.testing.assert_allclose(phi, -0.01, atol=1e-12)
    np.testing.assert_allclose(n, np.tile([0, 0, 1.0], (len(phi), 1)), atol=1e-12)
    corners = np.array([[pB[0] + sx * 0.3, pB[1] + sy * 0.2, 0.5 - 0.005] for sx in (-1, 1) for sy in (-1, 1)])
    assert_same_rows(p, corners)
    # slightly tilted top box: each bottom corner gets its own depth
    Rt = rot([0, 1, 0], 0.02)
    cB = np.array([Rt @ (hB * [sx, sy, -1]) + pB for sx in (-1, 1) for sy in (-1, 1)])
    p, n, phi = collide_both(BOX, hA, I3, Z3, BOX, hB, Rt, pB, margin=0.05)
    assert len(phi) == 4
    assert_same_rows(np.c_[p[:, :2], phi], np.c_[cB[:, :2], cB[:, 2] - 0.5], atol=1e-12)
    # separated face contact within the margin: still a manifold, positive phi
    p, n, phi = collide_both(BOX, hA, I3, Z3, BOX, hB, I3, pB + [0, 0, 0.03], margin=0.05)
    assert len(phi) == 4
    np.testing.assert_allclose(phi, 0.02, atol=1e-12)
    assert len(collide(BOX, hA, I3, Z3, BOX, hB, I3, pB + [0, 0, 0.07], margin=0.05)[2]) == 0


def test_rotated_small_box_on_large_box_gives_its_corners():
    hA, hB = np.array([1.0, 1.0, 0.5]), np.array([0.25, 0.25, 0.25])
    Rb = rot([0, 0, 1], np.pi / 4)
    pB = np.array([0.2, 0.1, 0.75 - 0.004])
    p, n, phi = collide_both(BOX, hA, I3, Z3, BOX, hB, Rb, pB, margin=0.01)
    assert len(phi) == 4
    np.testing.assert_allclose(phi, -0.004, atol=1e-12)
    corners = np.array([Rb @ (hB * [sx, sy, -1]) + pB for sx in (-1, 1) for sy in (-1, 1)])
    assert_same_rows(p, corners + [0, 0, 0.002], atol=1e-12)


def test_box_edge_on_edge_crossing_gives_one_point():
    h = np.array([0.5, 0.5, 0.5])
    Ra = rot([1, 0, 0], np.pi / 4)  # top edge along x at z = sqrt(2)/2
    Rb = rot([0, 1, 0], np.pi / 4)  # bottom edge along y
    s2 = np.sqrt(0.5)
    pB = np.array([0.05, -0.03, 2 * s2 - 0.01])
    p, n, phi = collide_both(BOX, h, Ra, Z3, BOX, h, Rb, pB, margin=0.005)
    assert len(phi) == 1
    assert phi[0] == pytest.approx(-0.01, abs=1e-12)
    np.testing.assert_allclose(n[0], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(p[0], [0.05, 0.0, s2 - 0.005], atol=1e-12)
    # separated edge-edge within margin
    p, n, phi = collide_both(BOX, h, Ra, Z3, BOX, h, Rb, pB + [0, 0, 0.03], margin=0.05)
    assert len(phi) == 1 and phi[0] == pytest.approx(0.02, abs=1e-12)


def test_capsules_parallel_and_crossing():
    r = 0.1
    Rx = rot([0, 1, 0], np.pi / 2)  # axis along x
    p, n, phi = collide_both(CAPSULE, [r, 0.5, 0], Rx, Z3, CAPSULE, [r, 0.4, 0], Rx, [0.3, 0, 0.19], margin=0.01)
    assert len(phi) == 2
    np.testing.assert_allclose(phi, -0.01, atol=1e-12)
    np.testing.assert_allclose(n, [[0, 0, 1], [0, 0, 1]], atol=1e-12)
    assert_same_rows(p, [[-0.1, 0, 0.095], [0.5, 0, 0.095]], atol=1e-12)
    # crossing at 90 deg: one point
    Ry = rot([1, 0, 0], np.pi / 2)
    p, n, phi = collide_both(CAPSULE, [r, 0.5, 0], Rx, Z3, CAPSULE, [r, 0.4, 0], Ry, [0.3, 0.1, 0.19], margin=0.01)
    assert len(phi) == 1 and phi[0] == pytest.approx(-0.01)
    np.testing.assert_allclose(p[0], [0.3, 0, 0.095], atol=1e-12)


def test_sphere_capsule():
    Rc = rot([0, 1, 0], np.pi / 2)
    # beyond the +x end of the segment
    p, n, phi = collide_both(SPHERE, [0.2, 0, 0], I3, [0.6, 0, 0.25], CAPSULE, [0.1, 0.5, 0], Rc, Z3, margin=0.0)
    d = np.hypot(0.1, 0.25)
    assert len(phi) == 1 and phi[0] == pytest.approx(d - 0.3)
    np.testing.assert_allclose(n[0], -np.array([0.1, 0, 0.25]) / d)
    # above the segment interior
    p, n, phi = collide_both(SPHERE, [0.2, 0, 0], I3, [0.2, 0.25, 0], CAPSULE, [0.1, 0.5, 0], Rc, Z3, margin=0.0)
    assert phi[0] == pytest.approx(-0.05)
    np.testing.assert_allclose(n[0], [0, -1, 0], atol=1e-12)


def test_box_capsule_cases():
    H = np.array([1.0, 0.5, 0.25])
    r, hl = 0.1, 0.3
    Rx = rot([0, 1, 0], np.pi / 2)
    # lying flat on the top face: two points, one per segment end
    p, n, phi = collide_both(BOX, H, I3, Z3, CAPSULE, [r, hl, 0], Rx, [0.2, 0.1, 0.25 + r - 0.004], margin=0.01)
    assert len(phi) == 2
    np.testing.assert_allclose(phi, -0.004, atol=1e-12)
    np.testing.assert_allclose(n, [[0, 0, 1]] * 2, atol=1e-12)
    assert_same_rows(p, [[0.2 - hl, 0.1, 0.248], [0.2 + hl, 0.1, 0.248]], atol=1e-12)
    # overhanging the +x side: the segment is clipped at the face boundary
    p, n, phi = collide_both(BOX, H, I3, Z3, CAPSULE, [r, hl, 0], Rx, [1.1, 0.1, 0.25 + r + 0.004], margin=0.01)
    assert len(phi) == 2
    np.testing.assert_allclose(phi, 0.004, atol=1e-12)
    assert_same_rows(p, [[0.8, 0.1, 0.252], [1.0, 0.1, 0.252]], atol=1e-12)
    # standing on the top face: one point
    p, n, phi = collide_both(BOX, H, I3, Z3, CAPSULE, [r, hl, 0], I3, [0.2, 0.1, 0.25 + hl + r - 0.003], margin=0.01)
    assert len(phi) == 1 and phi[0] == pytest.approx(-0.003)
    np.testing.assert_allclose(p[0], [0.2, 0.1, 0.2485], atol=1e-12)
    # lying across the top (+x, +z) edge, parallel to it (along y) and beyond it: edge contact
    Ry = rot([1, 0, 0], np.pi / 2)
    c = np.array([1.0, 0.0, 0.25]) + 0.15 * np.array([0.6, 0, 0.8])
    p, n, phi = collide_both(BOX, H, I3, Z3, CAPSULE, [r, hl, 0], Ry, c, margin=0.1)
    assert np.min(phi) == pytest.approx(0.05, abs=1e-12)
    np.testing.assert_allclose(n[np.argmin(phi)], [0.6, 0, 0.8], atol=1e-12)


# ---------------------------------------------------------------------------
# box vs cylinder (the suction cups against boxes)
# ---------------------------------------------------------------------------

CUP = np.array([0.015, 0.0095, 0.0])  # the suction cup cylinder: radius, half length [m]
TOP = np.array([0.05, 0.04, 0.025])  # a box's half extents [m]


def _placed(dirn, R, target, sa=TOP, sb=CUP, start=0.2):
    """Cylinder centre along the unit direction dirn from the box centre at (about) coal distance `target`; None
    where coal's EPA fails on the way."""
    p = start * dirn
    for _ in range(6):
        d, _ = coal_signed_distance(make_coal_shape(BOX, sa), I3, Z3, make_coal_shape(CYLINDER, sb), R, p)
        if d < -1e300:
            return None
        p = p + (target - d) * dirn
    return p


def _feature_case(case, rng):
    """(cylinder rotation, unit direction from the box centre) of one contact feature case."""
    tilt = rng.uniform(0.2, 1.2)
    if case == "cap-face":
        R = rot(rng.normal(size=3), rng.choice([0.0, 1e-6, 1e-3])) @ rot([1, 0, 0], rng.choice([0.0, np.pi]))
        d = np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), 1.0])
    elif case == "rim-face":
        R = rot([rng.normal(), rng.normal(), 0], tilt)
        d = np.array([rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), 1.0])
    elif case == "side-face":
        R = rot(rng.normal(size=3), rng.choice([0.0, 1e-5])) @ rot([0, 0, 1], rng.uniform(0, np.pi)) @ rot(
            [1, 0, 0], np.pi / 2)
        d = np.array([rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), 1.0])
    elif case in ("rim-edge", "side-edge"):
        R = rot(rng.normal(size=3), tilt) if case == "rim-edge" else rot([0, 1, 0], np.pi / 2) @ rot(
            [1, 0, 0], rng.uniform(-0.5, 0.5))
        d = np.array([rng.uniform(-0.3, 0.3), 1.0, 1.0]) * [1, TOP[1], TOP[2]] / TOP[1]
        d[1:] += rng.uniform(0.0, 0.5, 2)
    else:  # vertex
        R = rand_rot(rng)
        d = TOP / TOP[2] + rng.uniform(0.0, 0.5, 3)
    return np.ascontiguousarray(R), d / np.linalg.norm(d)


@pytest.mark.parametrize("case", ["cap-face", "rim-face", "side-face", "rim-edge", "side-edge", "vertex"])
def test_box_cylinder_matches_coal_by_feature(case):
    """Every feature pairing, separated and penetrating: the deepest contact has coal's signed distance (GJK /
    EPA) and normal, every reported contact is within the margin, and a separated pair's normal certifies its
    distance (the two shapes' projections on it are that far apart; coal's own normals on a curved shape are
    good to ~1e-4 only, so this is the sharper check)."""
    rng = np.random.default_rng(sum(map(ord, case)))
    margin = 2e-3
    checked = 0
    while checked < 25:
        R, dirn = _feature_case(case, rng)
        pb = _placed(dirn, R, rng.uniform(-3e-3, 1.8e-3))
        if pb is None:
            continue
        d, res = coal_signed_distance(make_coal_shape(BOX, TOP), I3, Z3, make_coal_shape(CYLINDER, CUP), R, pb)
        assert d < margin - 1e-7
        p, n, phi = collide_both(BOX, TOP, I3, Z3, CYLINDER, CUP, R, pb, margin)
        assert len(phi) >= 1 and np.all(phi < margin)
        i = np.argmin(phi)
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-12)
        if d > 0:
            assert phi[i] == pytest.approx(d, abs=1e-10)
            gap = np.dot(pb, n[i]) - np.abs(n[i]) @ TOP - CUP[0] * np.linalg.norm(np.cross(R[:, 2], n[i])) \
                - CUP[1] * abs(np.dot(R[:, 2], n[i]))
            assert gap == pytest.approx(phi[i], abs=1e-9)
        else:  # minimum translation: coal's EPA and ours agree to 0.1 um
            assert phi[i] == pytest.approx(d, abs=1e-7)
        np.testing.assert_allclose(n[i], res.normal, atol=1e-3)
        checked += 1


@pytest.mark.parametrize("flip", [False, True])
@pytest.mark.parametrize("phi0", [8e-4, -3e-4])
def test_cylinder_cap_flat_on_box_face_is_a_symmetric_patch(phi0, flip):
    """A cap resting flat on a face: the octagon of rim points, all at the cap's depth, centred on the axis (equal
    depths, so the patch exerts no torque: a cup standing flat does not rock), normals along the face normal."""
    r, hl = CUP[0], CUP[1]
    xy = np.array([0.01, -0.005])
    for yaw in (0.0, 0.3, 1.1):
        R = rot([0, 0, 1], yaw) @ (rot([1, 0, 0], np.pi) if flip else I3)
        pc = np.array([xy[0], xy[1], TOP[2] + hl + phi0])
        p, n, phi = collide_both(BOX, TOP, I3, Z3, CYLINDER, CUP, R, pc, margin=1e-3)
        assert len(phi) == 8
        np.testing.assert_allclose(phi, phi0, atol=1e-15)
        np.testing.assert_allclose(n, [[0, 0, 1]] * 8, atol=1e-15)
        np.testing.assert_allclose(p[:, 2], TOP[2] + 0.5 * phi0, atol=1e-15)
        np.testing.assert_allclose(p[:, :2].mean(axis=0), xy, atol=1e-15)
        np.testing.assert_allclose(np.linalg.norm(p[:, :2] - xy, axis=1), r, atol=1e-15)
    # tilted by 1 mrad: every rim point at its own height above the face
    R = rot([1, 1, 0], 1e-3)
    pc = np.array([xy[0], xy[1], TOP[2] + hl + phi0])
    p, n, phi = collide(BOX, TOP, I3, Z3, CYLINDER, CUP, R, pc, margin=2e-3)
    rim = p + 0.5 * phi[:, None] * n  # back on the cylinder
    np.testing.assert_allclose(np.linalg.norm(rim - (pc - hl * R[:, 2]), axis=1), r, atol=1e-12)
    np.testing.assert_allclose(phi, rim[:, 2] - TOP[2], atol=1e-15)
    assert len(phi) == 8 and phi.min() < phi0 < phi.max()


def test_cylinder_cap_over_a_box_edge_is_clipped_to_the_face():
    """A cap half over the +x edge: the patch is the octagon clipped to the face (its five rim points on or over the
    face), all at the cap's depth; beyond the margin nothing, just inside it the full octagon."""
    r, hl = CUP[0], CUP[1]
    pc = np.array([TOP[0], 0.0, TOP[2] + hl + 5e-4])
    R = rot([0, 0, 1], np.pi / 4)
    p, n, phi = collide_both(BOX, TOP, I3, Z3, CYLINDER, CUP, R, pc, margin=1e-3)
    s = r / np.sqrt(2)
    z = TOP[2] + 2.5e-4
    assert_same_rows(p, [[TOP[0], r, z], [TOP[0] - s, s, z], [TOP[0] - r, 0, z], [TOP[0] - s, -s, z],
                         [TOP[0], -r, z]], atol=1e-15)
    np.testing.assert_allclose(phi, 5e-4, atol=1e-15)
    for gap, count in ((1e-3 * (1 + 1e-9), 0), (1e-3 * (1 - 1e-9), 8)):
        pc = np.array([0.0, 0.0, TOP[2] + hl + gap])
        _, _, phi = collide_both(BOX, TOP, I3, Z3, CYLINDER, CUP, I3, pc, margin=1e-3)
        assert len(phi) == count and np.all(phi < 1e-3)


def test_cylinder_side_on_box_face_gives_the_clipped_line():
    """Lying on its side across a face: two contacts at the ends of the touching line (clipped to the face where
    the cylinder overhangs), each at its own depth."""
    r, hl = CUP[0], CUP[1]
    Rx = rot([0, 1, 0], np.pi / 2)  # axis along x
    p, n, phi = collide_both(BOX, TOP, I3, Z3, CYLINDER, CUP, Rx, [0.01, 0.02, TOP[2] + r - 2e-4], margin=1e-3)
    assert len(phi) == 2
    np.testing.assert_allclose(phi, -2e-4, atol=1e-15)
    np.testing.assert_allclose(n, [[0, 0, 1]] * 2, atol=1e-15)
    assert_same_rows(p, [[0.01 - hl, 0.02, TOP[2] - 1e-4], [0.01 + hl, 0.02, TOP[2] - 1e-4]], atol=1e-15)
    p, n, phi = collide_both(BOX, TOP, I3, Z3, CYLINDER, CUP, Rx, [TOP[0], 0.02, TOP[2] + r - 2e-4], margin=1e-3)
    assert_same_rows(p, [[TOP[0] - hl, 0.02, TOP[2] - 1e-4], [TOP[0], 0.02, TOP[2] - 1e-4]], atol=1e-15)


def test_box_cylinder_containment():
    """Deep overlaps, where no feature of one touches the other's boundary: the minimum translation out."""
    H = np.array([0.2, 0.3, 0.4])
    # a small cylinder inside the box, nearest the +x face: out through it
    _, n, phi = collide(BOX, H, I3, Z3, CYLINDER, [0.05, 0.1, 0], I3, [0.1, 0.0, 0.0], margin=1e-3)
    assert phi.min() == pytest.approx(-(0.2 - 0.1 + 0.05), abs=1e-12)
    np.testing.assert_allclose(n[np.argmin(phi)], [1, 0, 0], atol=1e-12)
    # a small box inside a big cylinder, 0.2 m off its axis along +y: the box leaves through the near (+y) side,
    # i.e. the cylinder moves along -y
    _, n, phi = collide(BOX, [0.01, 0.01, 0.01], I3, Z3, CYLINDER, [0.5, 0.5, 0], I3, [0.0, -0.2, 0.0], margin=1e-3)
    assert phi.min() == pytest.approx(-(0.5 - 0.2 + 0.01), abs=1e-12)
    np.testing.assert_allclose(n[np.argmin(phi)], [0, -1, 0], atol=1e-12)


# ---------------------------------------------------------------------------
# normal convention: moving B along +normal increases phi
# ---------------------------------------------------------------------------

PAIRS = [(HALFSPACE, SPHERE), (HALFSPACE, BOX), (HALFSPACE, CAPSULE), (HALFSPACE, CYLINDER), (SPHERE, SPHERE),
         (SPHERE, BOX), (SPHERE, CAPSULE), (CAPSULE, CAPSULE), (BOX, BOX), (BOX, CAPSULE), (BOX, CYLINDER)]


def rand_size(t, rng):
    if t == SPHERE:
        return np.array([rng.uniform(0.1, 0.5), 0, 0])
    if t == BOX:
        return rng.uniform(0.1, 0.5, 3)
    if t in (CAPSULE, CYLINDER):
        return np.array([rng.uniform(0.05, 0.3), rng.uniform(0.05, 0.5), 0])
    return np.zeros(3)


def rand_pose_pair(ta, rng, structured=False):
    """Random rotations for A and B and a position of B near A."""

    def R():
        if not structured:
            return rand_rot(rng)
        base = rot([1, 0, 0], rng.integers(4) * np.pi / 2) @ rot([0, 0, 1], rng.integers(4) * np.pi / 2)
        k = rng.integers(4)
        if k == 1:
            return rot(rng.normal(size=3), 1e-7) @ base
        if k == 2:
            return rot(rng.normal(size=3), 1e-3) @ base
        if k == 3:
            return rot([0, 0, 1], np.pi / 4) @ base
        return base

    Ra, Rb = R(), R()
    pb = rng.uniform(-0.6, 0.6, 3)
    if structured:
        pb = rng.uniform(-0.3, 0.3, 3)
        pb[rng.integers(3)] = rng.choice([-1, 1]) * rng.uniform(0.2, 1.0)
    if ta == HALFSPACE:  # B near the boundary plane
        pb = Ra @ np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), rng.uniform(-0.2, 0.7)])
    return np.ascontiguousarray(Ra), np.ascontiguousarray(Rb), np.zeros(3), pb


@pytest.mark.parametrize("ta,tb", PAIRS, ids=[f"{TYPE_NAMES[a]}-{TYPE_NAMES[b]}" for a, b in PAIRS])
def test_normal_points_from_a_to_b(ta, tb):
    rng = np.random.default_rng(1 + 10 * ta + tb)
    checked = 0
    for _ in range(60):
        sa, sb = rand_size(ta, rng), rand_size(tb, rng)
        Ra, Rb, pa, pb = rand_pose_pair(ta, rng)
        p, n, phi = collide_both(ta, sa, Ra, pa, tb, sb, Rb, pb, margin=0.2)
        if len(phi) == 0:
            continue
        i = np.argmin(phi)
        eps = 1e-6
        _, _, phi_plus = collide(ta, sa, Ra, pa, tb, sb, Rb, pb + eps * n[i], margin=0.3)
        # signed distance grows at unit rate along the normal of its deepest contact
        assert (phi_plus.min() - phi[i]) / eps == pytest.approx(1.0, abs=1e-3)
        checked += 1
    assert checked >= 10


# ---------------------------------------------------------------------------
# randomized agreement with coal
# ---------------------------------------------------------------------------


def coal_signed_distance(ga, Ra, pa, gb, Rb, pb):
    """coal's signed distance (GJK, or EPA when penetrating) and the DistanceResult."""
    req = coal.DistanceRequest()
    req.gjk_tolerance = 1e-10
    req.epa_tolerance = 1e-10
    req.gjk_max_iterations = 1000
    req.epa_max_iterations = 1000
    res = coal.DistanceResult()
    d = coal.distance(ga, coal.Transform3s(Ra, pa), gb, coal.Transform3s(Rb, pb), req, res)
    return d, res


@pytest.mark.parametrize("structured", [False, True], ids=["random", "degenerate"])
@pytest.mark.parametrize("ta,tb", PAIRS, ids=[f"{TYPE_NAMES[a]}-{TYPE_NAMES[b]}" for a, b in PAIRS])
def test_min_phi_matches_coal(ta, tb, structured):
    rng = np.random.default_rng(100 + 10 * ta + tb + 1000 * structured)
    margin = 0.1
    tol = 1e-6
    hits = 0
    for _ in range(150):
        sa, sb = rand_size(ta, rng), rand_size(tb, rng)
        Ra, Rb, pa, pb = rand_pose_pair(ta, rng, structured)
        d, res = coal_signed_distance(make_coal_shape(ta, sa), Ra, pa, make_coal_shape(tb, sb), Rb, pb)
        if d < -1e300:  # coal's EPA failed (it returns -DBL_MAX): no reference
            continue
        p, n, phi = collide_both(ta, sa, Ra, pa, tb, sb, Rb, pb, margin)
        if d < margin - tol:
            hits += 1
            assert len(phi) > 0, d
            assert phi.min() == pytest.approx(d, abs=tol)
            if not structured:  # unique closest points: same normal and point as coal
                i = np.argmin(phi)
                np.testing.assert_allclose(n[i], res.normal, atol=1e-4)
                np.testing.assert_allclose(p[i], 0.5 * (res.getNearestPoint1() + res.getNearestPoint2()), atol=1e-4)
        elif d > margin + tol:
            assert len(phi) == 0
    assert hits >= 30


# ---------------------------------------------------------------------------
# coal conventions and fallback
# ---------------------------------------------------------------------------


def test_coal_contact_convention():
    """coal: normal from o1 to o2, nearest_points[0] on o1, penetration_depth = signed distance."""
    s = coal.Sphere(0.5)
    req = coal.CollisionRequest()
    req.security_margin = 0.2
    for x, d in [(0.9, -0.1), (1.1, 0.1)]:
        res = coal.CollisionResult()
        coal.collide(s, coal.Transform3s(), s, coal.Transform3s(I3, np.array([x, 0, 0])), req, res)
        c = res.getContact(0)
        np.testing.assert_allclose(c.normal, [1, 0, 0])
        assert c.penetration_depth == pytest.approx(d)
        np.testing.assert_allclose(c.getNearestPoint1(), [0.5, 0, 0])
        np.testing.assert_allclose(c.getNearestPoint2(), [x - 0.5, 0, 0])
        np.testing.assert_allclose(c.pos, [x / 2, 0, 0])


def cube_mesh(h=0.5):
    return np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (-h, h)])


def test_coal_convex_cube_on_halfspace():
    cube = make_coal_shape(CONVEX, Z3, cube_mesh(0.5))
    hs = make_coal_shape(HALFSPACE, Z3)
    Rc = rot([0, 0, 1], 0.3)
    pc = np.array([0.2, 0.1, 0.5 - 0.01])
    p, n, phi = coal_contacts(hs, I3, Z3, cube, Rc, pc, margin=0.02)
    assert 4 <= len(phi) <= MAX_PAIR_CONTACTS
    np.testing.assert_allclose(phi, -0.01, atol=1e-9)
    np.testing.assert_allclose(n, np.tile([0, 0, 1.0], (len(phi), 1)), atol=1e-9)
    corners = np.array([Rc @ [sx * 0.5, sy * 0.5, -0.5] + pc for sx in (-1, 1) for sy in (-1, 1)])
    for c in corners:  # every bottom corner is a contact (midpoint 5 mm above it)
        assert np.min(np.linalg.norm(p - (c + [0, 0, 0.005]), axis=1)) < 1e-9
    # reversed order: normals flip, depths unchanged
    p2, n2, phi2 = coal_contacts(cube, Rc, pc, hs, I3, Z3, margin=0.02)
    assert len(phi2) == len(phi)
    np.testing.assert_allclose(n2, -n, atol=1e-9)
    np.testing.assert_allclose(phi2, phi, atol=1e-9)
    # separated within margin: positive phi; beyond the margin: nothing
    _, _, phi3 = coal_contacts(hs, I3, Z3, cube, Rc, pc + [0, 0, 0.02], margin=0.02)
    assert len(phi3) >= 4 and np.allclose(phi3, 0.01)
    assert len(coal_contacts(hs, I3, Z3, cube, Rc, pc + [0, 0, 0.04], margin=0.02)[2]) == 0


def test_coal_fallback_agrees_with_numba_kernels():
    """coal_contacts on primitive shapes gives the same deepest phi and normal as the numba kernel."""
    rng = np.random.default_rng(7)
    for ta, tb in [(HALFSPACE, BOX), (BOX, BOX), (SPHERE, CAPSULE), (BOX, CAPSULE), (BOX, CYLINDER)]:
        for _ in range(20):
            sa, sb = rand_size(ta, rng), rand_size(tb, rng)
            Ra, Rb, pa, pb = rand_pose_pair(ta, rng)
            p, n, phi = collide(ta, sa, Ra, pa, tb, sb, Rb, pb, margin=0.05)
            pc, nc, phic = coal_contacts(make_coal_shape(ta, sa), Ra, pa, make_coal_shape(tb, sb), Rb, pb, 0.05)
            if abs(phi.min(initial=1.0) - 0.05) < 1e-5 or abs(phic.min(initial=1.0) - 0.05) < 1e-5:
                continue  # on the margin boundary: either answer is right
            assert (len(phi) == 0) == (len(phic) == 0)
            if len(phi) == 0:
                continue
            assert phic.min() == pytest.approx(phi.min(), abs=1e-5)
            # coal.collide's EPA at its default tolerance gives a curved shape's normal to ~1e-3 only (the kernel's
            # normals are checked at tight coal tolerances in test_min_phi_matches_coal)
            np.testing.assert_allclose(nc[0], n[np.argmin(phi)], atol=5e-3 if tb == CYLINDER else 1e-3)


def test_coal_cylinder_on_box_patch():
    box = make_coal_shape(BOX, [1.0, 1.0, 0.5])
    cyl = make_coal_shape(CYLINDER, [0.3, 0.5, 0])
    p, n, phi = coal_contacts(box, I3, Z3, cyl, I3, np.array([0.2, 0, 0.99]), 0.05)
    assert 3 <= len(phi) <= MAX_PAIR_CONTACTS
    np.testing.assert_allclose(phi, -0.01, atol=1e-6)
    np.testing.assert_allclose(n, np.tile([0, 0, 1.0], (len(phi), 1)), atol=1e-6)
    assert np.linalg.matrix_rank(p[1:, :2] - p[0, :2], tol=1e-6) == 2
    p, n, phi = coal_contacts(box, I3, Z3, cyl, I3, np.array([0.2, 0, 0.99]), 0.05, max_points=3)
    assert len(phi) <= 3
    with pytest.raises(ValueError):
        make_coal_shape(CONVEX, Z3)


def test_coal_patch_of_cylinder_cap_does_not_depend_on_pair_order():
    """coal 3 returns one rim point for a cylinder's end cap on a box when the normal points along the cylinder's
    −z axis; coal_contacts retries swapped and gets the full polygon in both orders."""
    cyl = make_coal_shape(CYLINDER, np.array([0.012, 0.01, 0]))
    box = make_coal_shape(BOX, np.array([0.05, 0.05, 0.025]))
    I = np.eye(3)
    pc, pb = np.array([0.02, 0.02, 0.0096]), np.array([0, 0, -0.025])
    p1, n1, phi1 = coal_contacts(cyl, I, pc, box, I, pb, 1e-3)
    p2, n2, phi2 = coal_contacts(box, I, pb, cyl, I, pc, 1e-3)
    assert len(phi1) == len(phi2) >= 4
    np.testing.assert_allclose(n1[0], [0, 0, -1], atol=1e-9)
    np.testing.assert_allclose(n2[0], [0, 0, 1], atol=1e-9)
    np.testing.assert_allclose(phi1, -4e-4, atol=1e-9)
    np.testing.assert_allclose(np.sort(p1[:, 0]), np.sort(p2[:, 0]), atol=1e-9)


def test_box_separation_is_a_lower_bound_of_the_distance():
    """The oriented-box broad phase of coal pairs never culls a pair closer than its margin: the SAT gap is at
    most the true distance (coal) and equals it for face-separated boxes."""
    from cenic_gym.narrowphase import box_separation
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(3)
    for _ in range(300):
        hA, hB = rng.uniform(0.01, 0.2, 3), rng.uniform(0.01, 0.2, 3)
        RA, RB = Rotation.random(random_state=rng).as_matrix(), Rotation.random(random_state=rng).as_matrix()
        pA, pB = rng.uniform(-0.3, 0.3, 3), rng.uniform(-0.3, 0.3, 3)
        gap = box_separation(hA, RA, pA, hB, RB, pB)
        res = coal.DistanceResult()
        d = coal.distance(coal.Box(*(2 * hA)), coal.Transform3s(RA, pA), coal.Box(*(2 * hB)),
                          coal.Transform3s(RB, pB), coal.DistanceRequest(), res)
        assert gap <= max(d, 0.0) + 1e-9
    gap = box_separation(np.full(3, 0.1), I3, Z3, np.full(3, 0.1), I3, np.array([0.5, 0, 0]))
    assert gap == pytest.approx(0.3)


def test_sphere_box_kernel_makes_no_reference_counts():
    """The fingertip pair is written so that LLVM's pruning removes every reference count of its arrays (scalars,
    no call that can raise, one exit; docs/performance.md "The convex solve"): its compiled body calls no
    NRT_incref. Compiled afresh here (numba cannot show the IR of cached code)."""
    from numba import njit

    from cenic_gym import narrowphase as nph

    kernel = njit(error_model="numpy")(nph._sphere_box.py_func)
    out_p, out_n, out_phi = np.zeros((8, 3)), np.zeros((8, 3)), np.zeros(8)
    n = kernel(np.array([0.01, 0.0, 0.0]), np.eye(3), np.array([0.0, 0.0, 0.025]), np.full(3, 0.02), np.eye(3),
               np.zeros(3), 1e-3, out_p, out_n, out_phi, np.int64(0))
    assert n == 1 and out_phi[0] == pytest.approx(-0.005)
    assert out_n[0] == pytest.approx([0.0, 0.0, -1.0])  # sphere A above box B: A -> B is down
    body = list(kernel.inspect_llvm().values())[0].split("define ")[1]
    assert "@NRT_incref" not in body
