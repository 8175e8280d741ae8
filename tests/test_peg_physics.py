"""A peg in two-point contact against Whitney's quasi-static analysis, and static friction that holds.

Whitney (1982, "Quasi-Static Assembly of Compliantly Supported Rigid Parts", J. Dyn. Sys. Meas. Control 104): a
peg tilted in a hole touches it at two points, its tip's corner on one wall and the hole's edge on its other side.
With Coulomb friction μ at both, a wrench applied to the peg either can be balanced by contact forces inside the two
friction cones — the peg *jams*: it stays, however hard it is pushed in that proportion — or it cannot, and the
peg moves (slides in, for the wrenches here). In the plane of the tilt each contact's cone has two edges, so the
wrenches the contacts can balance form the cone spanned by four wrenches (``contact_cone``); the jamming
boundary is that cone's face, a line in Whitney's diagram of moment / (radius · force) against lateral / axial
force, and it moves with μ and with the depth (Whitney's λ = ℓ / (μ d)). The tests push a free peg (no gravity,
:func:`cenic_gym.scenes.peg_in_channel`) with a constant wrench at its tip on both sides of that boundary, at
two friction coefficients, and check that it slides in or stays as predicted. Both sides are taken where the moment
tilts the peg further (presses it into both contacts), the region of Whitney's two-point analysis; a moment that
stands the peg up (above the boundary at μ ≳ 0.4 here) turns it out of two-point contact instead.

Static friction: a jammed peg must stay. The regularized friction ε = v_s lets a contact whose friction is used
to the fraction ρ < 1 of its cone creep at v_s ρ / √(1 − ρ²) (docs/physics.md §5.6-2); the jammed peg must creep
no faster than twice that, over a 10 s hold, at ε = 1e-3 and 1e-4 with the default step bound.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import nnls

from cenic_gym import Simulator
from cenic_gym.model import quat_xyzw_to_matrix
from cenic_gym.scenes import peg_in_channel, two_point_contact

WIDTH, CLEARANCE, DEPTH, LENGTH = 0.02, 4e-4, 0.01, 0.08
V_S = 1e-4  # the scenes' stiction tolerance [m/s]


def planar_wrench(point, force, about):
    """(f_x, f_z, τ_y) of a force (3,) at ``point`` about ``about`` (x–z plane, τ_y = r_z f_x − r_x f_z)."""
    r = point - about
    return np.array([force[0], force[2], r[2] * force[0] - r[0] * force[2]])


def contact_cone(g, mu):
    """The four wrenches (3, 4) about the tip whose non-negative combinations the two contacts can exert on the
    peg: at the corner the right wall's normal (−x) ± μ along the wall, at the edge the peg face's normal ± μ
    along the peg."""
    ez = np.array([0.0, 0.0, 1.0])
    n1 = np.array([-1.0, 0.0, 0.0])
    return np.stack([planar_wrench(g.corner, n1 + s * mu * ez, g.tip) for s in (1, -1)]
                    + [planar_wrench(g.edge, g.normal + s * mu * g.down, g.tip) for s in (1, -1)], axis=1)


def jams(g, mu, push, moment):
    """Whitney: the peg jams when the contacts can balance the applied wrench (axial push [N] down the hole,
    moment [N m] about the tip, τ_y); nnls finds the non-negative combination if there is one."""
    _, residual = nnls(contact_cone(g, mu), -np.array([0.0, -push, moment]))
    return residual < 1e-9 * push


def jamming_moment(g, mu, push):
    """The moment at which the peg starts to jam under ``push`` (bisection on :func:`jams`): below it (moments
    that tilt the peg further) it jams, above it the peg slides."""
    lo, hi = -10.0 * push * WIDTH, 10.0 * push * WIDTH  # jams at lo, not at hi (checked)
    assert jams(g, mu, push, lo) and not jams(g, mu, push, hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if jams(g, mu, push, mid) else (lo, mid)
    return 0.5 * (lo + hi)


class TipWrench:
    """A constant wrench on the peg: ``push`` [N] straight down and ``moment`` [N m] about +y, applied at the
    peg's tip centre (it moves with the peg), as the free body's generalized force (force in the world frame,
    torque in the body frame)."""

    def __init__(self, push, moment, length):
        self.force = np.array([0.0, 0.0, -push])
        self.moment = np.array([0.0, moment, 0.0])
        self.tip = np.array([0.0, 0.0, -0.5 * length])

    def __call__(self, t, q, v):
        R = quat_xyzw_to_matrix(q[3:7])
        arm = R @ self.tip
        return np.concatenate([self.force, R.T @ (np.cross(arm, self.force) + self.moment)])


def hold(mu, push, moment, duration, accuracy=1e-3):
    """Simulate the peg under the wrench; returns (tip descent [m] over ``duration``, the simulator)."""
    system, g = peg_in_channel(WIDTH, CLEARANCE, DEPTH, LENGTH, mu=mu)
    sim = Simulator(system, accuracy=accuracy, generalized_force=TipWrench(push, moment, LENGTH))
    z0 = tip_height(sim)
    sim.advance_to(duration)
    return z0 - tip_height(sim), sim


def tip_height(sim):
    p, R = sim.body_pose("peg")
    return float((p - 0.5 * LENGTH * R[:, 2])[2])


def test_the_two_point_geometry_touches_both_walls():
    g = two_point_contact(WIDTH, CLEARANCE, DEPTH)
    assert g.corner[0] == pytest.approx(0.5 * (WIDTH + CLEARANCE), abs=1e-12)
    assert DEPTH * math.sin(g.theta) + WIDTH * math.cos(g.theta) == pytest.approx(WIDTH + CLEARANCE, rel=1e-12)
    system, _ = peg_in_channel(WIDTH, CLEARANCE, DEPTH, LENGTH)
    sim = Simulator(system)
    sim.advance_to(1e-4)
    cr = sim.contact_results()  # the touching pairs and the speculative ones within the margin
    touching = np.abs(cr.phi) < 1e-6
    assert {cr.names_a[i] for i in np.flatnonzero(touching)} == {"left", "right"}
    assert np.all(cr.phi[~touching] > 1e-4)  # the other corners and edges are clear


@pytest.mark.parametrize("mu", [0.2, 0.3])
def test_the_peg_slides_in_or_jams_on_the_side_of_whitneys_boundary(mu):
    push = 5.0
    g = two_point_contact(WIDTH, CLEARANCE, DEPTH)
    boundary = jamming_moment(g, mu, push)
    margin = 0.5 * 0.5 * WIDTH * push  # half the moment of the push at the peg's radius
    for moment, stays in ((boundary + margin, False), (boundary - margin, True)):
        assert jams(g, mu, push, moment) == stays
        descent, sim = hold(mu, push, moment, 0.2)
        if stays:
            assert abs(descent) < 2e-4, (mu, moment, descent)  # jammed: it holds (creep only)
        else:
            assert descent > 5e-3, (mu, moment, descent)  # sliding in: centimetres in 0.2 s


def test_the_jamming_boundary_moves_with_friction():
    g = two_point_contact(WIDTH, CLEARANCE, DEPTH)
    b_low, b_high = jamming_moment(g, 0.2, 5.0), jamming_moment(g, 0.3, 5.0)
    assert b_low < b_high < 0.0  # a higher μ jams at a smaller moment (tilting the peg further: negative)
    # and it is a line through the origin: the ratio moment / push is what jams (Whitney's diagram)
    assert jamming_moment(g, 0.3, 10.0) == pytest.approx(2.0 * b_high, rel=1e-6)


@pytest.mark.parametrize("accuracy", [1e-3, 1e-4])
def test_a_jammed_peg_stays_jammed(accuracy):
    """10 s under a jamming wrench (the boundary's moment less half the push's at the radius): the peg creeps no faster than twice what its
    friction use predicts, v_s ρ/√(1 − ρ²) (ρ the larger of the two contacts' ‖f_t‖ / (μ f_n), measured)."""
    mu, push = 0.3, 5.0
    g = two_point_contact(WIDTH, CLEARANCE, DEPTH)
    moment = jamming_moment(g, mu, push) - 0.25 * WIDTH * push
    descent, sim = hold(mu, push, moment, 10.0, accuracy)
    cr = sim.contact_results()
    fn = np.einsum("ij,ij->i", cr.force, cr.normal)
    pressed = np.abs(fn) > 1e-6  # the speculative contacts carry nothing
    ft = np.linalg.norm(cr.force - fn[:, None] * cr.normal, axis=1)
    rho = float(np.max(ft[pressed] / (mu * np.abs(fn[pressed]))))
    creep = V_S * rho / math.sqrt(1.0 - rho * rho)
    assert descent / 10.0 < 2.0 * creep, (descent, creep, rho)
