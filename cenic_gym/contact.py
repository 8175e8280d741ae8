"""Contact geometry: configuration q -> ContactSet (structure of arrays, world frame).

One query per convex solve (ICF §III-B): joint poses (numba from q for free bodies and
1-DOF joints, Pinocchio for the rest),
geometry poses, a bounding-sphere broad phase over the candidate pairs and the narrow phase of
:mod:`cenic_gym.narrowphase` — primitive pairs in one numba call, other pairs (convex meshes, cylinders against
anything but half-spaces and boxes) through coal with contact patches. Pair materials combine as in Drake (docs/physics.md §2.2).

Contact convention: normal n̂ points from geometry A to geometry B, φ < 0 is penetration, the point is the midpoint
of the witness points, and the relative-velocity Jacobian gives v_c = v_B − v_A at that point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numba import njit

from . import narrowphase as nph
from .kinematics import contact_jacobians, geometry_poses, geometry_speeds, joint_poses_from_q

DEFAULT_MARGIN = 1.0e-3  # [m] speculative contacts up to this distance (ICF §X-A uses up to 10 cm)


@njit(cache=True)
def _combine(k1, d1, m1, k2, d2, m2):
    k = k1 * k2 / (k1 + k2)
    d = (k2 * d1 + k1 * d2) / (k1 + k2)
    mu = 2.0 * m1 * m2 / (m1 + m2) if m1 + m2 > 0.0 else 0.0
    return k, d, mu


@njit(cache=True)
def find_contacts(pairs, gtype, gsize, gR, gp, gbound, gjoint, gk, gd, gmus, gmud, base_margin, gspeed, lookahead,
                  out_p, out_n, out_phi, out_ga, out_gb, out_ja, out_jb, out_k, out_d, out_mus, out_mud,
                  fallback, pair_margin, gbox_c, gbox_h):
    """Broad phase (bounding spheres, half-space planes) + numba narrow phase over all candidate pairs.

    A pair's speculative margin is ``base_margin + lookahead * (speed_a + speed_b)``: any pair that could touch
    within the next ``lookahead`` seconds is included, so fast bodies cannot pass into each other unseen between
    two geometry queries (speculative contacts cost nothing until the step would close their gap, ICF §III-B).
    Pairs that pass the broad phase but need coal are flagged in ``fallback`` once their oriented bounding boxes
    (``gbox_c``, ``gbox_h`` in the geometry frames) are also within the margin. Returns the number of contacts."""
    n = np.int64(0)  # not Literal[int](0), for which numba would compile collide_primitives once more
    ca = np.empty(3)
    cb = np.empty(3)
    for ip in range(pairs.shape[0]):
        a = pairs[ip, 0]
        b = pairs[ip, 1]
        fallback[ip] = 0
        margin = base_margin + lookahead * (gspeed[a] + gspeed[b])
        pair_margin[ip] = margin
        ta = gtype[a]
        tb = gtype[b]
        if ta == nph.HALFSPACE or tb == nph.HALFSPACE:
            h, o = (a, b) if ta == nph.HALFSPACE else (b, a)
            dist = (gR[h, 0, 2] * (gp[o, 0] - gp[h, 0]) + gR[h, 1, 2] * (gp[o, 1] - gp[h, 1])
                    + gR[h, 2, 2] * (gp[o, 2] - gp[h, 2])) - gbound[o]
        else:
            dx = gp[a, 0] - gp[b, 0]
            dy = gp[a, 1] - gp[b, 1]
            dz = gp[a, 2] - gp[b, 2]
            dist = np.sqrt(dx * dx + dy * dy + dz * dz) - gbound[a] - gbound[b]
        if dist > margin:
            continue
        if not nph.numba_supports(ta, tb):
            if ta == nph.HALFSPACE or tb == nph.HALFSPACE:
                h, o = (a, b) if ta == nph.HALFSPACE else (b, a)
                gap = 0.0  # plane to box: n·(c − p) − Σ h_j |n·axis_j|
                for i in range(3):
                    ci = gp[o, i] + gR[o, i, 0] * gbox_c[o, 0] + gR[o, i, 1] * gbox_c[o, 1] + gR[o, i, 2] * gbox_c[o, 2]
                    gap += gR[h, i, 2] * (ci - gp[h, i])
                for j in range(3):
                    gap -= gbox_h[o, j] * abs(gR[h, 0, 2] * gR[o, 0, j] + gR[h, 1, 2] * gR[o, 1, j]
                                              + gR[h, 2, 2] * gR[o, 2, j])
            else:
                for i in range(3):
                    ca[i] = gp[a, i] + gR[a, i, 0] * gbox_c[a, 0] + gR[a, i, 1] * gbox_c[a, 1] + gR[a, i, 2] * gbox_c[a, 2]
                    cb[i] = gp[b, i] + gR[b, i, 0] * gbox_c[b, 0] + gR[b, i, 1] * gbox_c[b, 1] + gR[b, i, 2] * gbox_c[b, 2]
                gap = nph.box_separation(gbox_h[a], gR[a], ca, gbox_h[b], gR[b], cb)
            if gap <= margin:
                fallback[ip] = 1
            continue
        m = nph.collide_primitives(ta, gsize[a], gR[a], gp[a], tb, gsize[b], gR[b], gp[b], margin,
                                   out_p, out_n, out_phi, n)
        if m == 0:
            continue
        k, d, mus = _combine(gk[a], gd[a], gmus[a], gk[b], gd[b], gmus[b])
        _, _, mud = _combine(gk[a], gd[a], gmud[a], gk[b], gd[b], gmud[b])
        for c in range(n, n + m):
            out_ga[c] = a
            out_gb[c] = b
            out_ja[c] = gjoint[a]
            out_jb[c] = gjoint[b]
            out_k[c] = k
            out_d[c] = d
            out_mus[c] = mus
            out_mud[c] = mud
        n += m
    return n


@dataclass
class ContactSet:
    """Contacts of one configuration; every array has ``n`` valid leading rows (world frame, SI units)."""

    n: int
    point: np.ndarray  # (n, 3) [m]
    normal: np.ndarray  # (n, 3) unit, from A to B
    phi: np.ndarray  # (n,) signed distance [m]
    geom_a: np.ndarray
    geom_b: np.ndarray
    joint_a: np.ndarray
    joint_b: np.ndarray
    stiffness: np.ndarray  # [N/m]
    dissipation: np.ndarray  # [s/m]
    mu_static: np.ndarray
    mu_dynamic: np.ndarray
    Jc: np.ndarray  # (n, 3, m) compact relative-velocity Jacobians
    cols: np.ndarray  # (n, m) generalized-velocity columns of Jc
    ncols: np.ndarray  # (n,)

    def copy(self):
        return ContactSet(self.n, *(getattr(self, f).copy() for f in self.__dataclass_fields__ if f != "n"))


# The argument order of :func:`_query_kernel` (None: the margin scalar). Names are ContactQuery workspace
# attributes or MultibodySystem attributes; :attr:`ContactQuery.kernel_args` holds their views in this order.
_QUERY_FIELDS = (
    "joint_kind", "joint_idx_q", "joint_cols", "joint_ncols", "joint_R", "joint_p",
    "geom_joint", "geom_R", "geom_p", "geom_bound", "geom_Rw", "geom_pw", "geom_speed",
    "pairs", "geom_type", "geom_size", "geom_k", "geom_d", "geom_mu_s", "geom_mu_d", None,
    "_p", "_n", "_phi", "_ga", "_gb", "_ja", "_jb", "_k", "_d", "_mus", "_mud", "_fallback", "_pair_margin",
    "_Jc", "_cols", "_ncols", "geom_box_c", "geom_box_h",
    "joint_parent", "joint_axis", "joint_place_R", "joint_place_p")
_GEOM_R, _GEOM_P = _QUERY_FIELDS.index("geom_R"), _QUERY_FIELDS.index("geom_p")


class ContactQuery:
    """Reusable workspace for contact queries of one :class:`~cenic_gym.model.MultibodySystem`."""

    def __init__(self, system, margin=DEFAULT_MARGIN):
        if not (np.isfinite(margin) and margin >= 0):
            raise ValueError(f"contact margin must be >= 0, got {margin!r}")
        self.system = system
        self.margin = float(margin)
        s = system
        nj = s.model.njoints
        ng = len(s.geometries)
        cap = max(8, nph.MAX_PAIR_CONTACTS * len(s.pairs))
        self.capacity = cap
        mc = s.max_contact_cols
        npairs = len(s.pairs)
        work = dict(
            joint_R=np.zeros((nj, 3, 3)), joint_p=np.zeros((nj, 3)), geom_Rw=np.zeros((ng, 3, 3)),
            geom_pw=np.zeros((ng, 3)), geom_speed=np.zeros(ng),
            # this query's own copy of the per-geometry materials and sizes (domain randomization changes these, not
            # the system)
            geom_k=s.geom_k, geom_d=s.geom_d, geom_mu_s=s.geom_mu_s, geom_mu_d=s.geom_mu_d,
            geom_size=s.geom_size, geom_bound=s.geom_bound, geom_box_c=s.geom_box_c, geom_box_h=s.geom_box_h,
            _p=np.zeros((cap, 3)), _n=np.zeros((cap, 3)), _phi=np.zeros(cap),
            _ga=np.zeros(cap, dtype=np.int64), _gb=np.zeros(cap, dtype=np.int64),
            _ja=np.zeros(cap, dtype=np.int64), _jb=np.zeros(cap, dtype=np.int64),
            _k=np.zeros(cap), _d=np.zeros(cap), _mus=np.zeros(cap), _mud=np.zeros(cap),
            _fallback=np.zeros(npairs, dtype=np.int64), _pair_margin=np.zeros(npairs),
            _Jc=np.zeros((cap, 3, mc)), _cols=np.zeros((cap, mc), dtype=np.int64), _ncols=np.zeros(cap, dtype=np.int64))
        # Everything _query_kernel needs besides (q, v, Jw, lookahead), in its order. Passing 39 arrays to numba
        # costs ~75 ns each per call (argument typing), so they live in one float and one int buffer,
        # packed = (F, I, L, margin), whose views (``kernel_args``) reach numba once per cached state, inside its
        # StateArgs (cenic.new_state_args). The workspace attributes (``work``) are the same views
        # (:meth:`_bind_views`); they are not pickled but rebuilt from the buffers, so that a pickled or deep-copied
        # query writes where its kernel reads.
        arrays = [None if name is None else work[name] if name in work else getattr(s, name)
                  for name in _QUERY_FIELDS]
        F, I, L, views = pack_arrays(arrays)
        self._fields = tuple(None if a is None else (a.ndim, a.dtype.kind == "i") for a in views)
        self._work = tuple(work)
        self.packed = (F, I, L, self.margin)
        self._bind_views()
        self.shapes = [g.shape for g in s.geometries]
        self.coal_shapes = list(s.coal_shapes)

    def _bind_views(self):
        """(Re)create the workspace views into the packed buffers and ``kernel_args``, the argument tuple of
        :func:`_query_kernel` after (q, v, Jw, lookahead): views of the buffers in the order of ``_QUERY_FIELDS``,
        the margin in its place (read by ``cenic.new_state_args``; made here rather than in numba, where a reshape
        compiles numba's shape-error messages and the string formatting under them on a cold start); forget the
        cached ContactSet."""
        F, I, L, margin = self.packed
        args = []
        for k, field in enumerate(self._fields):
            if field is None:
                args.append(margin)
                continue
            ndim, is_int = field
            shape = tuple(int(x) for x in L[k, 1:1 + ndim])
            args.append((I if is_int else F)[L[k, 0]:L[k, 0] + math.prod(shape)].reshape(shape))
        self.kernel_args = tuple(args)
        for name in self._work:
            setattr(self, name, self.kernel_args[_QUERY_FIELDS.index(name)])
        self._last_n = -1
        self._last_set = None

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in self._work and k != "kernel_args"}
        state["_last_n"], state["_last_set"] = -1, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._bind_views()

    def set_shape(self, i, shape):
        """Give geometry i a new shape of the same kind (its size, bounds and coal shape), next query on."""
        self.geom_size[i] = shape.size()
        self.geom_bound[i] = shape.bounding_radius()
        self.geom_box_c[i], self.geom_box_h[i] = shape.local_box()
        self.coal_shapes[i] = nph.make_coal_shape(shape.geom_type, shape.size(), getattr(shape, "vertices", None))
        self.shapes[i] = shape

    def placement(self, i):
        """(R (3, 3), p (3,)) of geometry i in its joint's frame (the world's for fixed geometry), views."""
        return self.kernel_args[_GEOM_R][i], self.kernel_args[_GEOM_P][i]

    def set_placement(self, i, R, p):
        """Place geometry i at (R, p) in its joint's frame, next query on."""
        self.kernel_args[_GEOM_R][i] = R
        self.kernel_args[_GEOM_P][i] = p

    def set_material(self, geoms, stiffness=None, dissipation=None, mu_static=None, mu_dynamic=None):
        """Overwrite the materials of geometries ``geoms`` (indices) in this query (next query on)."""
        for arr, val in ((self.geom_k, stiffness), (self.geom_d, dissipation), (self.geom_mu_s, mu_static),
                         (self.geom_mu_d, mu_dynamic)):
            if val is not None:
                arr[geoms] = val

    def sync_joint_poses(self, data):
        """Copy the poses of the joints the kinematics kernel does not compute (``system.general_joints``: neither
        fixed, root free bodies nor 1-DOF revolute/prismatic joints) from Pinocchio's data."""
        for j in self.system.general_joints:
            M = data.oMi[j]
            self.joint_R[j] = M.rotation
            self.joint_p[j] = M.translation

    def coal_fallback(self, n, Jw):
        """Append the contacts of the pairs the kernel flagged for coal (and their Jacobians); returns the new n."""
        s = self.system
        n0 = n
        n = self._coal_pairs(n)
        contact_jacobians(Jw, s.joint_cols, s.joint_ncols, self._ja[n0:], self._jb[n0:], self._p[n0:], n - n0,
                          self._Jc[n0:], self._cols[n0:], self._ncols[n0:])
        return n

    def contact_set(self, n):
        """The first n contacts of the workspace as a ContactSet of views (valid until the next query)."""
        if n == self._last_n:  # the same views of the same buffers
            return self._last_set
        self._last_n = n
        self._last_set = ContactSet(n, self._p[:n], self._n[:n], self._phi[:n], self._ga[:n], self._gb[:n],
                                    self._ja[:n], self._jb[:n], self._k[:n], self._d[:n], self._mus[:n],
                                    self._mud[:n], self._Jc[:n], self._cols[:n], self._ncols[:n])
        return self._last_set

    def _coal_pairs(self, n):
        """Narrow phase through coal for the flagged pairs (convex meshes, cylinders against curved shapes)."""
        s = self.system
        for ip in np.flatnonzero(self._fallback):
            a, b = s.pairs[ip]
            pts, nrm, phi = nph.coal_contacts(self.coal_shapes[a], self.geom_Rw[a], self.geom_pw[a],
                                              self.coal_shapes[b], self.geom_Rw[b], self.geom_pw[b],
                                              self._pair_margin[ip])
            m = len(phi)
            if m == 0:
                continue
            m = min(m, self.capacity - n)
            sl = slice(n, n + m)
            self._p[sl], self._n[sl], self._phi[sl] = pts[:m], nrm[:m], phi[:m]
            self._ga[sl], self._gb[sl] = a, b
            self._ja[sl], self._jb[sl] = s.geom_joint[a], s.geom_joint[b]
            gk, gd = self.geom_k, self.geom_d
            k, d, mus = _combine(gk[a], gd[a], self.geom_mu_s[a], gk[b], gd[b], self.geom_mu_s[b])
            _, _, mud = _combine(gk[a], gd[a], self.geom_mu_d[a], gk[b], gd[b], self.geom_mu_d[b])
            self._k[sl], self._d[sl], self._mus[sl], self._mud[sl] = k, d, mus, mud
            n += m
        return n


def pack_arrays(arrays):
    """Copy float and int arrays (None: a placeholder) into one float64 and one int64 buffer. Returns
    (F, I, L, views): L[k] = (offset, d0, d1, d2) of array k in its buffer and views[k] its view there."""
    arrays = [None if a is None else np.ascontiguousarray(a) for a in arrays]
    is_int = [a is not None and np.issubdtype(a.dtype, np.integer) for a in arrays]
    L = np.zeros((len(arrays), 4), dtype=np.int64)
    size = [0, 0]  # float, int
    for k, a in enumerate(arrays):
        if a is not None:
            L[k, 0] = size[is_int[k]]
            L[k, 1:1 + a.ndim] = a.shape
            size[is_int[k]] += a.size
    F = np.zeros(size[0])
    I = np.zeros(size[1], dtype=np.int64)
    views = []
    for k, a in enumerate(arrays):
        if a is None:
            views.append(None)
            continue
        view = (I if is_int[k] else F)[L[k, 0]:L[k, 0] + a.size].reshape(a.shape)
        view[...] = a
        views.append(view)
    return F, I, L, views


@njit(cache=True)
def query_contacts(args, n):
    """The first n contacts of a query, as (Jc, cols, ncols, normal, φ, k, d, μ_s, μ_d, n): views of the argument
    tuple of :func:`_query_kernel` (:attr:`ContactQuery.kernel_args`)."""
    return (args[34][:n], args[35][:n], args[36][:n], args[22][:n], args[23][:n], args[28][:n], args[29][:n],
            args[30][:n], args[31][:n], n)


@njit(cache=True, inline="always")
def _query_kernel(q, v, Jw, lookahead, state):
    """A whole query in compiled code (inlined into ``cenic.prepare_kernel``): poses, speed bounds, broad + narrow
    phase and the contact Jacobians of the numba-handled pairs. ``state.query`` = :attr:`ContactQuery.kernel_args`
    (``state``: the :class:`cenic_gym.cenic.StateArgs` of the query's state; read and unpacked here at once, so that
    numba counts its 42 arrays once). Returns (contacts, pairs left to coal)."""
    (joint_kind, joint_idx_q, joint_cols, joint_ncols, joint_R, joint_p,
     geom_joint, geom_R, geom_p, geom_bound, geom_Rw, geom_pw, geom_speed,
     pairs, gtype, gsize, gk, gd, gmus, gmud, margin,
     out_p, out_n, out_phi, out_ga, out_gb, out_ja, out_jb, out_k, out_d, out_mus, out_mud,
     fallback, pair_margin, Jc, cols, ncols, gbox_c, gbox_h,
     joint_parent, joint_axis, joint_place_R, joint_place_p) = state.query
    joint_poses_from_q(q, joint_kind, joint_idx_q, joint_parent, joint_axis, joint_place_R, joint_place_p, joint_R,
                       joint_p)
    geometry_poses(joint_R, joint_p, geom_joint, geom_R, geom_p, geom_Rw, geom_pw)
    geometry_speeds(Jw, v, joint_cols, joint_ncols, geom_joint, geom_pw, geom_bound, geom_speed)
    n = find_contacts(pairs, gtype, gsize, geom_Rw, geom_pw, geom_bound, geom_joint, gk, gd, gmus, gmud, margin,
                      geom_speed, lookahead, out_p, out_n, out_phi, out_ga, out_gb, out_ja, out_jb,
                      out_k, out_d, out_mus, out_mud, fallback, pair_margin, gbox_c, gbox_h)
    contact_jacobians(Jw, joint_cols, joint_ncols, out_ja, out_jb, out_p, n, Jc, cols, ncols)
    return n, np.count_nonzero(fallback)


def compute_kinematics(model, data, q):
    """Forward kinematics and the world joint Jacobians at q (one Pinocchio call); returns data.J (6, nv)."""
    return _world_jacobians(pin.computeJointJacobians(model, data, q))


def compute_kinematics_and_inertia(model, data, q):
    """:func:`compute_kinematics` and the joint-space inertia matrix M(q) in one Pinocchio pass: ``pin.crba`` in the
    WORLD convention fills data.oMi and data.J as ``computeJointJacobians`` does (bit-identical: tested) on its way
    to M. Returns (J (6, nv), M (nv, nv), upper triangle only). The LOCAL convention's M differs from this one in
    round-off (~1e-16 relative); two passes cost 3.2 µs on Go1 where this one costs 2.5."""
    M_upper = pin.crba(model, data, q, pin.Convention.WORLD)
    return _world_jacobians(data.J), M_upper


def _world_jacobians(J):
    """Pinocchio's data.J as (6, nv): eigenpy returns a 6 x 1 matrix as a 1-d array (single-DOF systems)."""
    return J if J.ndim == 2 else J.reshape(6, -1)
