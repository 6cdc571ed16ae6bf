"""The three flat arrays the check's kernel takes (:mod:`ik_node.collision.kernel`): its
constants packed once per checker, and the workspace whose fields the checker reads as views.

Each link's hulls become one point set for the kernel's GJK: the vertices of the convex hull of
all its pieces' hull vertices, with the hull's edges (for hill climbing) and a few seed vertices
(the farthest along the axes and the diagonals) to start from; and one capsule encloses them all
(the kernel's first, cheapest bound of a pair).
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Sequence

import numpy as np

from ik_node.collision.capsules import fit_capsule
from ik_node.collision.hulls import convex_hull
from ik_node.collision.kernel import FLOATS, INTS, JOINT_COLUMNS, WORK
from ik_node.kernels import fk
from ik_node.model.fast_kinematics import axis_frames

#: Directions whose farthest hull vertex seeds the hill climbing: the axes and the diagonals.
SEED_DIRECTIONS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]] +
                           [[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)],
                           dtype=float)


class LinkHull(NamedTuple):
    """One link's convex hull as the kernel walks it: ``vertices`` (k, 3) in the link's frame,
    each vertex's neighbours along the hull's edges (``adj_start`` (k + 1,), ``adj``), and the
    ``seeds`` (indices) hill climbing starts from."""

    vertices: np.ndarray
    adj_start: np.ndarray
    adj: np.ndarray
    seeds: np.ndarray


def link_hull(points: np.ndarray) -> LinkHull:
    """The :class:`LinkHull` of the convex hull of ``points`` (m, 3) [m]."""
    vertices, faces = convex_hull(np.asarray(points, dtype=float))
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    edges = np.unique(np.concatenate([edges, edges[:, ::-1]]), axis=0)  # both ways, sorted
    adj_start = np.searchsorted(edges[:, 0], np.arange(len(vertices) + 1)).astype(np.int64)
    seeds = np.unique(np.argmax(vertices @ SEED_DIRECTIONS.T, axis=0)).astype(np.int64)
    seeds = np.resize(seeds, len(SEED_DIRECTIONS))  # a fixed count (repeats change nothing)
    return LinkHull(vertices, adj_start, edges[:, 1].astype(np.int64), seeds)


class Packed(NamedTuple):
    """The kernel's arguments but the configuration and the padding, and the workspace's
    fields as views (named as :data:`ik_node.collision.kernel.WORK`)."""

    floats: np.ndarray
    ints: np.ndarray
    work: np.ndarray
    views: Dict[str, np.ndarray]


def pack(chain, model, pair_rows: np.ndarray, hulls: Sequence[LinkHull]) -> Packed:
    """The kernel's arrays for ``model`` (a :class:`~ik_node.collision.model.CollisionModel`
    of ``chain``), checking the link pairs ``pair_rows`` (P, 3: the two links and the joint of
    the pair's witness frame), with each link's :class:`LinkHull`."""
    L, n = len(model.links), chain.n
    cap_pairs, starts = model.capsule_pairs(pair_rows[:, :2])
    link_cap = np.zeros((L, 7))
    for k, hull in enumerate(hulls):
        caps = model.caps_of_link[k]
        if len(caps) == 1:  # its pieces' one capsule encloses it
            c = int(caps[0])
            link_cap[k] = [*model.seg_a[c], *model.seg_b[c], model.radius[c]]
        else:
            a, b, r = fit_capsule(hull.vertices)
            link_cap[k] = [*a, *b, r]
    offset = np.cumsum([0] + [len(h.vertices) for h in hulls])[:-1]
    edge_offset = np.cumsum([0] + [len(h.adj) for h in hulls])
    frames = axis_frames(chain)
    floats = {'joints': fk.model_rows(frames.joint_transforms, chain._prismatic, JOINT_COLUMNS),
              'T_frame_link': _from_axis_frames(model, frames.rotations),
              'seg_a': model.seg_a, 'seg_b': model.seg_b, 'radius': model.radius,
              'link_cap': link_cap, 'points': np.vstack([h.vertices for h in hulls])}
    ints = {'parents': chain.parents,
            'link_frame': model.link_frame, 'cap_link': model.cap_link,
            'pair_caps': np.append(starts, len(cap_pairs)), 'cap_pairs': cap_pairs,
            'link_pairs': pair_rows,
            'adj_start': np.append(np.concatenate([h.adj_start[:-1] + e for h, e in
                                                   zip(hulls, edge_offset)]), edge_offset[-1]),
            'adj': np.concatenate([h.adj + o for h, o in zip(hulls, offset)]),
            'seeds': np.concatenate([h.seeds + o for h, o in zip(hulls, offset)])}
    P = len(pair_rows)
    shapes = {'frames': (n, 3, 4), 'links': (L, 4, 4), 'gaps': (P,), 'quats': (L, 4),
              'witness': (P, 3), 'upper': (P,), 'ends': (len(model.cap_link), 6),
              'link_ends': (L, 6), 'simplex': (4, 3)}
    head = 2 * (len(FLOATS) + len(INTS) + len(WORK))
    float_places, float_array = _lay_out([floats[name] for name in FLOATS], float, 0)
    int_places, int_data = _lay_out([ints[name] for name in INTS], np.int64, head)
    work_places, work_array = _lay_out([np.zeros(shapes[name]) for name in WORK], float, 0)
    ints_array = np.concatenate([np.array(float_places + int_places + work_places,
                                          dtype=np.int64), int_data])
    views = {name: work_array[a:b].reshape(shapes[name])
             for name, a, b in zip(WORK, work_places[::2], work_places[1::2])}
    return Packed(float_array, ints_array, work_array, views)


def _from_axis_frames(model, rotations) -> np.ndarray:
    """Each link's constant transform from the frame of the joint it moves with as the kernel's
    joint frames are chosen (axis along z: ``F'_j = F_j diag(A_j, 1)``), ``diag(A_j^T, 1)
    T_frame_link``; a link no joint moves keeps its own (L, 4, 4)."""
    out = np.array(model.T_frame_link, dtype=float)
    for k, j in enumerate(model.link_frame.tolist()):
        if j >= 0:
            out[k, :3, :] = rotations[j].T @ out[k, :3, :]
    return out


def _lay_out(parts, dtype, at: int):
    """``(places, array)``: ``parts`` flattened one after the other into one array of
    ``dtype``, and each one's ``[start, end)`` in it, counted from ``at``."""
    flat = [np.ascontiguousarray(part, dtype=dtype).ravel() for part in parts]
    places = []
    for part in flat:
        places += [at, at + len(part)]
        at += len(part)
    return places, np.concatenate(flat) if flat else np.zeros(0, dtype=dtype)
