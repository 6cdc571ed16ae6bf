"""The compiled check of one configuration: joint frames, link transforms, and a lower bound of
the distance between the hulls of every checked link pair, in one numba call.

The joint frames are the kernel library's (:func:`ik_node.kernels.fk.joint_frames`, on the
joints' rows of its frames form: each joint frame chosen so that the joint's axis is its z
axis, :func:`ik_node.model.fast_kinematics.axis_frames`); each link's constant transform from
its joint's frame is packed for that frame (:mod:`ik_node.collision.packing`).

Each link stands for the convex hull of its pieces' hull vertices. Per checked pair, bounds of
that hull distance in turn, from the cheapest; the first that exceeds the padding ends it:

1. the gap of the links' enclosing capsules (one per link): segment distance minus the radii;
2. where that is within ``FINE_SCREEN_M`` of the padding, the smallest gap over the capsules
   of the links' pieces (several per link: :func:`ik_node.collision.capsules.fit_capsules`);
3. where that is within the padding, GJK (Gilbert-Johnson-Keerthi) on the two hulls. Every
   support it takes (the hull vertex farthest along a direction, found by hill climbing along
   the hull's edges: on a convex hull a vertex no neighbour exceeds is the farthest) bounds the
   distance from below by the gap across the plane of that normal, ``min n.a - max n.b``; it
   stops once that exceeds the padding, once the distance of its simplex (an upper bound: a
   point of the hulls' difference) is within it, or when it converges. It starts from the
   normal that held the pair apart last (``witness``, kept in the frame of the first joint
   that moves one link against the other, where it changes least: that joint's frame above),
   else from the capsules' closest points.

So a pair is called apart only across a plane that separates its hulls by more than the
padding; GJK picks the plane, it never decides alone. The pairs still within the padding go to
python-fcl (:mod:`ik_node.collision.check`), with GJK's upper bound: where the hulls decide (a
link of one convex piece), a pair whose upper bound is within the padding is colliding.

Everything travels in three flat arrays (constants ``floats`` and ``ints``, the latter holding
every field's place first; the workspace ``work``): numba unboxes each argument on every call,
and one array costs about what a whole check of a free configuration does. The fields are
named by :data:`FLOATS`, :data:`INTS` and :data:`WORK` (packed by
:mod:`ik_node.collision.packing`); :func:`_unpack` views them as :class:`Geometry` and
:class:`Work`. Plain loops: compiled by numba through the kernel library's loader
(:func:`compiled_kernel`, GJK's functions from :mod:`ik_node.collision.gjk` compiled into it,
the library's compiled frames called), or run as Python by the tests that compare them with
numpy and python-fcl. numba's cache checks this file only: after editing ``gjk.py`` or
``ik_node/kernels/fk.py``, remove ``__pycache__/kernel.*.nb*`` beside it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import ik_node.kernels as kernels
from ik_node.collision.gjk import Hulls, _gjk, _turn, _unit
from ik_node.kernels import fk

#: Pieces' capsules are measured for pairs whose links' capsules are within the padding plus
#: this [m]; beyond, the links' capsules bound the pair (and the pair is not near enough for
#: the collision term's witnesses: :data:`ik_node.solvers.damped_jacobian.collision_term.REACH_M`).
FINE_SCREEN_M = 0.05

#: The columns of a joint's row in :data:`Geometry` ``joints``: fk's frames form (its 12, the
#: limits' two, unused here, and :data:`ik_node.kernels.fk.PRISMATIC`).
JOINT_COLUMNS = fk.PRISMATIC + 1

FLOATS = ('joints', 'T_frame_link', 'seg_a', 'seg_b', 'radius', 'link_cap', 'points')
INTS = ('parents', 'link_frame', 'cap_link', 'pair_caps', 'cap_pairs',
        'link_pairs', 'adj_start', 'adj', 'seeds')
WORK = ('frames', 'links', 'gaps', 'quats', 'witness', 'upper', 'ends', 'link_ends', 'simplex')


class Geometry(NamedTuple):
    """The constants of a checker, flat (n joints, L links, C capsules, P pairs, V hull
    vertices, S seeds per link; ``(k, m)`` arrays stored row after row)."""

    joints: np.ndarray        # (n, JOINT_COLUMNS) the joints' rows of fk's frames form
    parents: np.ndarray       # (n,) parent joint, -1: the base
    link_frame: np.ndarray    # (L,) the joint each link moves with, -1: none
    T_frame_link: np.ndarray  # (L, 4, 4) the link in that joint's frame (fk's, axis along z)
    cap_link: np.ndarray      # (C,) each piece capsule's link
    seg_a: np.ndarray         # (C, 3) its segment's ends, link frame
    seg_b: np.ndarray         # (C, 3)
    radius: np.ndarray        # (C,)
    link_cap: np.ndarray      # (L, 7) each link's enclosing capsule: a, b, radius
    pair_caps: np.ndarray     # (P + 1,) pair m's capsule pairs are pair_caps[m]:pair_caps[m+1]
    cap_pairs: np.ndarray     # (., 2) capsule pairs
    link_pairs: np.ndarray    # (P, 3) the two links, the joint of the witness frame (-1: base)
    points: np.ndarray        # (V, 3) every link's hull vertices, link frame
    adj_start: np.ndarray     # (V + 1,) vertex v's hull neighbours: adj[adj_start[v]:...]
    adj: np.ndarray           # hull edges
    seeds: np.ndarray         # (L, S) vertices hill climbing starts from (the best of them)


class Work(NamedTuple):
    """What the kernel writes (and the checker reads, as shaped views), flat."""

    frames: np.ndarray     # (n, 3, 4) joint frames (fk's, axis along z), base frame
    links: np.ndarray      # (L, 4, 4) link transforms, base frame
    gaps: np.ndarray       # (P,) lower bounds of the pairs' hull distances [m]
    quats: np.ndarray      # (L, 4) link rotations (w, x, y, z), which python-fcl takes fastest
    witness: np.ndarray    # (P, 3) each pair's last separating normal (zero: none yet)
    upper: np.ndarray      # (P,) GJK's upper bound of the hull distance (inf: not measured)
    ends: np.ndarray       # (C, 6) capsule segments, base frame
    link_ends: np.ndarray  # (L, 6) link capsule segments, base frame
    simplex: np.ndarray    # (4, 3) GJK's simplex


def _field(buffer, ints, k):
    """Field ``k`` of the layout (its place is in ``ints``' head), a flat view of ``buffer``
    (flat: a reshape costs a compiled call about as much as placing a link)."""
    return buffer[ints[2 * k]:ints[2 * k + 1]]


def _unpack(floats, ints, work):
    """:class:`Geometry` and :class:`Work` views of the three arrays."""
    f, w = len(FLOATS), len(FLOATS) + len(INTS)  # the first int and work fields
    g = Geometry(_field(floats, ints, 0), _field(ints, ints, f), _field(ints, ints, f + 1),
                 _field(floats, ints, 1), _field(ints, ints, f + 2), _field(floats, ints, 2),
                 _field(floats, ints, 3), _field(floats, ints, 4), _field(floats, ints, 5),
                 _field(ints, ints, f + 3), _field(ints, ints, f + 4), _field(ints, ints, f + 5),
                 _field(floats, ints, 6), _field(ints, ints, f + 6), _field(ints, ints, f + 7),
                 _field(ints, ints, f + 8))
    out = Work(_field(work, ints, w), _field(work, ints, w + 1), _field(work, ints, w + 2),
               _field(work, ints, w + 3), _field(work, ints, w + 4), _field(work, ints, w + 5),
               _field(work, ints, w + 6), _field(work, ints, w + 7), _field(work, ints, w + 8))
    return g, out


def check_kernel(q, floats, ints, work, pad):
    """Place configuration ``q`` and bound every checked pair's hull distance (the module
    docstring); writes the :class:`Work` fields, returns the smallest bound [m]. ``pad`` the
    padding [m] (-inf: the capsules only).

    No function called once per pair takes the :class:`Geometry` or :class:`Work` tuples: a
    compiled call counts the references of every array it is passed, and theirs would cost
    more than the pair's test."""
    g, w = _unpack(floats, ints, work)
    n = q.shape[0]
    fk.joint_frames(g.joints.reshape((n, JOINT_COLUMNS)), g.parents, n, q, w.frames)
    _place_links(g.link_frame, g.T_frame_link, w.frames, w.links, w.quats)
    _place_capsules(w.links, g.link_cap, g.cap_link, (g.seg_a, g.seg_b), w.link_ends, w.ends)
    hulls = Hulls(g.points, g.adj_start, g.adj, g.seeds)
    smallest = np.inf
    for m in range(w.gaps.shape[0]):
        i, j = g.link_pairs[3 * m], g.link_pairs[3 * m + 1]
        w.upper[m] = np.inf
        dist, nx, ny, nz = _segment_closest(w.link_ends, i, w.link_ends, j)
        gap = dist - g.link_cap[7 * i + 6] - g.link_cap[7 * j + 6]
        if gap <= pad + FINE_SCREEN_M:
            fine, dist, nx, ny, nz = _fine_gap(w.ends, g.radius, g.cap_pairs,
                                               (g.pair_caps[m], g.pair_caps[m + 1]))
            gap = max(gap, fine)
            if gap <= pad:
                pair = (m, i, j, g.link_pairs[3 * m + 2])
                gap = max(gap, _separate(hulls, w, pair, (dist, nx, ny, nz), pad))
        w.gaps[m] = gap
        if gap < smallest:
            smallest = gap
    return smallest


def _place_links(link_frame, T_frame_link, frames, links, quats):
    """The link transforms (from the joint frames) and their quaternions."""
    for k in range(link_frame.shape[0]):
        j = link_frame[k]
        if j < 0:
            for e in range(16):
                links[16 * k + e] = T_frame_link[16 * k + e]
        else:
            _rigid_product(frames, 12 * j, T_frame_link, 16 * k, links, 16 * k)
        _quaternion(links, 16 * k, quats, 4 * k)


def _place_capsules(links, link_cap, cap_link, segments, link_ends, ends):
    """The segments of the links' capsules and of the pieces' capsules (``segments``: their
    ends ``(a, b)``, link frames), base frame."""
    for k in range(link_cap.shape[0] // 7):
        _place_point(links, k, link_cap, 7 * k, link_ends, 6 * k)
        _place_point(links, k, link_cap, 7 * k + 3, link_ends, 6 * k + 3)
    seg_a, seg_b = segments
    for c in range(cap_link.shape[0]):
        _place_point(links, cap_link[c], seg_a, 3 * c, ends, 6 * c)
        _place_point(links, cap_link[c], seg_b, 3 * c, ends, 6 * c + 3)


def _place_point(links, k, points, p, out, o):
    """``out[o:o + 3]``: the point ``points[p:p + 3]`` of link ``k`` in the base frame."""
    t = 16 * k
    for d in range(3):
        out[o + d] = (links[t + 4 * d] * points[p] + links[t + 4 * d + 1] * points[p + 1] +
                      links[t + 4 * d + 2] * points[p + 2] + links[t + 4 * d + 3])


def _fine_gap(ends, radius, cap_pairs, span):
    """``(gap, distance, dx, dy, dz)``: the smallest gap [m] over the capsule pairs
    ``span[0]:span[1]`` of ``cap_pairs``, and its segments' distance and closest-point vector
    (the second capsule's point to the first's)."""
    best, dist, nx, ny, nz = np.inf, 0.0, 0.0, 0.0, 1.0
    for c in range(span[0], span[1]):
        a, b = cap_pairs[2 * c], cap_pairs[2 * c + 1]
        d, dx, dy, dz = _segment_closest(ends, a, ends, b)
        if d - radius[a] - radius[b] < best:
            best, dist, nx, ny, nz = d - radius[a] - radius[b], d, dx, dy, dz
    return best, dist, nx, ny, nz


def _separate(hulls, w, pair, closest, pad):
    """A lower bound [m] of the hull distance of ``pair`` (``(m, i, j, f)``: the pair, its
    links, the joint of its witness frame), by GJK from the witness normal, else from the
    capsules' ``closest`` ``(distance, vector)``; GJK's upper bound into ``w.upper[m]``, its
    normal into ``w.witness[m]`` (in joint f's frame)."""
    m, i, j, f = pair
    dist, nx, ny, nz = closest
    n = _unit(nx, ny, nz)
    if dist <= 1e-12:  # the segments cross: centre to centre
        n = _unit(w.links[16 * i + 3] - w.links[16 * j + 3],
                  w.links[16 * i + 7] - w.links[16 * j + 7],
                  w.links[16 * i + 11] - w.links[16 * j + 11])
    witness = (w.witness[3 * m], w.witness[3 * m + 1], w.witness[3 * m + 2])
    if witness[0] ** 2 + witness[1] ** 2 + witness[2] ** 2 > 1e-18:  # kept in joint f's frame
        n = _unit(witness[0], witness[1], witness[2])
        if f >= 0:
            n = _turn(w.frames, 12 * f, n, False)
    bound, upper, n = _gjk(hulls, w.links, w.simplex, (i, j), n, pad)
    w.upper[m] = upper
    if f >= 0:  # the normal that bounds it, kept in joint f's frame for the next check
        n = _turn(w.frames, 12 * f, n, True)
    w.witness[3 * m], w.witness[3 * m + 1], w.witness[3 * m + 2] = n
    return bound


def _segment_closest(A, i, B, j):
    """The distance between segments ``i`` of ``A`` and ``j`` of ``B`` (rows of 6: ``p, q``)
    and the vector from the second's closest point to the first's: ``(distance, dx, dy, dz)``
    (Ericson, Real-Time Collision Detection, 5.1.9; degenerate segments are points)."""
    a6, b6 = 6 * i, 6 * j
    d1x, d1y, d1z = A[a6 + 3] - A[a6], A[a6 + 4] - A[a6 + 1], A[a6 + 5] - A[a6 + 2]
    d2x, d2y, d2z = B[b6 + 3] - B[b6], B[b6 + 4] - B[b6 + 1], B[b6 + 5] - B[b6 + 2]
    rx, ry, rz = A[a6] - B[b6], A[a6 + 1] - B[b6 + 1], A[a6 + 2] - B[b6 + 2]
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    c = d1x * rx + d1y * ry + d1z * rz
    b = d1x * d2x + d1y * d2y + d1z * d2z
    tiny = 1e-18
    s = 0.0
    t = 0.0
    if a <= tiny and e <= tiny:
        pass
    elif a <= tiny:
        t = min(max(f / e, 0.0), 1.0)
    elif e <= tiny:
        s = min(max(-c / a, 0.0), 1.0)
    else:
        denom = a * e - b * b
        if denom > tiny:
            s = min(max((b * f - c * e) / denom, 0.0), 1.0)
        t = (b * s + f) / e
        if t < 0.0:
            t = 0.0
            s = min(max(-c / a, 0.0), 1.0)
        elif t > 1.0:
            t = 1.0
            s = min(max((b - c) / a, 0.0), 1.0)
    dx = rx + d1x * s - d2x * t
    dy = ry + d1y * s - d2y * t
    dz = rz + d1z * s - d2z * t
    return math.sqrt(dx * dx + dy * dy + dz * dz), dx, dy, dz


# ------------------------------------------------------------------------ small products
def _rigid_product(A, a, B, b, out, o):
    """``out[o:o + 16] = A[a:a + 12] @ B[b:b + 16]`` for rigid transforms (``A`` 3 x 4, ``B``
    and ``out`` 4 x 4, flat, row-major; the last row 0 0 0 1), in loops (a compiled matrix
    product goes through BLAS, slower at this size)."""
    for r in range(3):
        a0, a1, a2, a3 = A[a + 4 * r], A[a + 4 * r + 1], A[a + 4 * r + 2], A[a + 4 * r + 3]
        for col in range(4):
            out[o + 4 * r + col] = a0 * B[b + col] + a1 * B[b + 4 + col] + a2 * B[b + 8 + col]
        out[o + 4 * r + 3] += a3
    out[o + 12], out[o + 13], out[o + 14], out[o + 15] = 0.0, 0.0, 0.0, 1.0


def _quaternion(T, t, out, o):
    """The rotation of the 4x4 ``T[t:t + 16]`` as a unit quaternion (w, x, y, z) into
    ``out[o:o + 4]`` (Shepperd's method: the largest of four candidates keeps it accurate)."""
    m00, m01, m02 = T[t], T[t + 1], T[t + 2]
    m10, m11, m12 = T[t + 4], T[t + 5], T[t + 6]
    m20, m21, m22 = T[t + 8], T[t + 9], T[t + 10]
    trace = m00 + m11 + m22
    if trace >= m00 and trace >= m11 and trace >= m22:
        s = 2.0 * math.sqrt(max(1.0 + trace, 1e-300))
        q = (0.25 * s, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s)
    elif m00 >= m11 and m00 >= m22:
        s = 2.0 * math.sqrt(max(1.0 + m00 - m11 - m22, 1e-300))
        q = ((m21 - m12) / s, 0.25 * s, (m01 + m10) / s, (m02 + m20) / s)
    elif m11 >= m22:
        s = 2.0 * math.sqrt(max(1.0 + m11 - m00 - m22, 1e-300))
        q = ((m02 - m20) / s, (m01 + m10) / s, 0.25 * s, (m12 + m21) / s)
    else:
        s = 2.0 * math.sqrt(max(1.0 + m22 - m00 - m11, 1e-300))
        q = ((m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, 0.25 * s)
    out[o], out[o + 1], out[o + 2], out[o + 3] = q


_COMPILED = None
#: The functions the kernel calls, compiled with it.
_HELPERS = ('_field', '_unpack', '_place_links', '_place_capsules', '_place_point',
            '_fine_gap', '_separate', '_segment_closest', '_rigid_product', '_quaternion')
#: Those of :mod:`ik_node.collision.gjk`.
_GJK_HELPERS = ('_unit', '_turn', '_support', '_gjk', '_closest', '_keep', '_point',
                '_origin_beyond', '_on_segment', '_on_triangle')


def compiled_kernel():
    """The numba-compiled :func:`check_kernel`, or None where the compiled path cannot serve
    (:func:`ik_node.kernels.available`: numba missing, ``IK_NODE_NO_NUMBA`` set, or failed).
    Compiled once per process, with its checker (cached on disk by numba), by the kernel
    library's loader (:func:`ik_node.kernels.jitted`) after the library's frames
    (:func:`ik_node.kernels.fk.compile`)."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = False
        if kernels.available():
            try:
                fk.compile()
                namespace = {**_gjk.__globals__, **check_kernel.__globals__}
                for name in _HELPERS + _GJK_HELPERS + ('check_kernel',):  # copies: this
                    # module's own functions stay Python (the tests run them so)
                    fn = namespace[name]
                    namespace[name] = type(fn)(fn.__code__, namespace, name)
                # the small helpers inlined (a call counts the references of every array it
                # passes), GJK called (inlined, its size slows the kernel's every pair)
                _COMPILED = kernels.jitted(
                    namespace, _HELPERS + _GJK_HELPERS, ('check_kernel',),
                    inlined=tuple(n for n in _HELPERS + _GJK_HELPERS if n != '_gjk'),
                )['check_kernel']
            except Exception:  # an unsupported numba: the numpy path serves
                _COMPILED = False
    return _COMPILED or None
