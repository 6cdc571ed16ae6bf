"""FABRIK's tree passes for the compiled path: one iteration's moves over a tree's arrays.

The forward pass with each pulled joint's weighted proposal, the backward pass with each joint's
'bones' or 'points' fit (and the fallback to its targeted descendants) and its clamp into the
limits, the stretching first pass, the rebuild (FK: the kernel library's
:mod:`~ik_node.kernels.fk` on the tree's geometry) and the damped least-squares polish on
the tips' stacked Jacobian, each as :class:`~ik_node.solvers.fabrik.tree_passes.TreePasses`
does it. The run that loops over them is the kernel of :mod:`.compiled_tree`; the tree is
arrays (:func:`~.compiled_tree.geometry_of`: per joint its frame, axis and limits, per node its
parent) and so is the plan of a run (:func:`~.compiled_tree.plan_of`).

Plain Python functions in numba's subset, compiled in place by :func:`compile`, which the
kernel module calling them runs first, as :mod:`ik_node.kernels.fk` does.
"""

from __future__ import annotations

import math

import numpy as np

import ik_node.kernels as kernels
from ik_node.kernels import fk, linalg
from ik_node.solvers.fabrik import compiled_passes as serial
from ik_node.solvers.fabrik.iteration import (EPS_M, POLISH_DAMPING, POLISH_DAMPING_MIN,
                                              SLOW_STEP_RATIO2, SLOW_STEPS)

# Columns of the geometry array, one row per joint: the joint's FABRIK row (fk.fabrik_row: its
# frame, axis at _AXIS and Rodrigues' terms), then its limits and kind.
_AXIS = fk.AXIS
(_LOWER, _UPPER, _REVOLUTE) = range(fk.COLUMNS, fk.COLUMNS + 3)
_COLUMNS = 45
# How a joint fits its angle in the backward pass (TreePlan.align).
NO_FIT, BONES, POINTS = 0, 1, 2


def place(geometry, parent, i, q, x, R):
    """Joint i's rotation and origin at ``q[i]`` (FabrikTree.place)."""
    R0, xi = fk.frame_of(geometry, parent[i], i, x, R)
    if geometry[i, _REVOLUTE] != 0.0:
        fk.place(i, fk.turned(geometry[i], R0, q[i]), xi, x, R)
    else:
        fk.place(i, R0, fk.slid(geometry[i], R0, xi, q[i]), x, R)


def place_tips(parent, t_tip, x, R):
    """The tips' positions from their joints' frames (FabrikTree.place_tips)."""
    n = R.shape[0]
    for k in range(t_tip.shape[0]):
        p = parent[n + k]
        t = (t_tip[k, 0], t_tip[k, 1], t_tip[k, 2])
        if p < 0:
            x[n + k, 0], x[n + k, 1], x[n + k, 2] = t[0], t[1], t[2]
        else:
            tip = fk.point_in(fk.load9(R, p), fk.load3(x, p), t)
            x[n + k, 0], x[n + k, 1], x[n + k, 2] = tip[0], tip[1], tip[2]


def rebuild(geometry, parent, t_tip, q, x, R):
    """Node positions ``x`` and joint rotations ``R``: FK of ``q`` (FabrikTree.rebuild)."""
    for i in range(R.shape[0]):
        place(geometry, parent, i, q, x, R)
    place_tips(parent, t_tip, x, R)


def measure(x, tip_nodes, targets, w_norm, err):
    """Each targeted tip's error into ``err``; returns their weighted RMS (TreePasses.measure)."""
    total = 0.0
    for k in range(tip_nodes.shape[0]):
        v = tip_nodes[k]
        dx, dy, dz = x[v, 0] - targets[k, 0], x[v, 1] - targets[k, 1], x[v, 2] - targets[k, 2]
        err[k] = math.sqrt(dx * dx + dy * dy + dz * dz)
        total += w_norm[k] * (err[k] * err[k])
    return math.sqrt(total)


def reached(err, tolerance):
    for k in range(err.shape[0]):
        if not err[k] <= tolerance:
            return False
    return True


def forward(plan_ints, plan_floats, x, L, targets, P):
    """The forward pass (TreePasses.forward): the targeted tips on their targets, every pulled
    joint to the weighted mean of its children's proposals."""
    tip_nodes, fwd_u, fwd_start, fwd_ch = plan_ints[0], plan_ints[1], plan_ints[2], plan_ints[3]
    fwd_w = plan_floats[1]
    for k in range(tip_nodes.shape[0]):
        v = tip_nodes[k]
        P[v, 0], P[v, 1], P[v, 2] = targets[k, 0], targets[k, 1], targets[k, 2]
    for f in range(fwd_u.shape[0]):
        u = fwd_u[f]
        px = py = pz = 0.0
        for j in range(fwd_start[f], fwd_start[f + 1]):
            c = fwd_ch[j]
            dx, dy, dz = x[u, 0] - P[c, 0], x[u, 1] - P[c, 1], x[u, 2] - P[c, 2]
            norm = math.sqrt(dx * dx + dy * dy + dz * dz)
            if norm < EPS_M:  # forward point on the joint: keep the old bone direction
                dx, dy, dz = x[u, 0] - x[c, 0], x[u, 1] - x[c, 1], x[u, 2] - x[c, 2]
                norm = max(L[c], EPS_M)
            s = L[c] / max(norm, EPS_M)
            w = fwd_w[j]
            px += w * (P[c, 0] + dx * s)
            py += w * (P[c, 1] + dy * s)
            pz += w * (P[c, 2] + dz * s)
        P[u, 0], P[u, 1], P[u, 2] = px, py, pz


def fit_points(geometry, nodes, fit_weight, i, frame, config, P):
    """Joint i's angle moving ``nodes`` (rigidly, at their old ``x``) onto ``P``
    (TreePasses.fit_points); False when there are none or all are on the axis. ``frame``: the
    joint's ``(R0, x_i)``; ``config``: ``(q, x, R)``."""
    R0, xi = frame
    q, x, R = config
    if nodes.shape[0] == 0:
        return False
    Ri = fk.load9(R, i)
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = m8 = 0.0
    for j in range(nodes.shape[0]):
        v = nodes[j]
        w = fit_weight[v]
        rx, ry, rz = serial.vec_mat((x[v, 0] - x[i, 0], x[v, 1] - x[i, 1], x[v, 2] - x[i, 2]),
                                    Ri)
        bx, by, bz = serial.vec_mat((P[v, 0] - xi[0], P[v, 1] - xi[1], P[v, 2] - xi[2]), R0)
        rx, ry, rz = rx * w, ry * w, rz * w
        m0 += rx * bx
        m1 += rx * by
        m2 += rx * bz
        m3 += ry * bx
        m4 += ry * by
        m5 += ry * bz
        m6 += rz * bx
        m7 += rz * by
        m8 += rz * bz
    ax, ay, az = geometry[i, _AXIS], geometry[i, _AXIS + 1], geometry[i, _AXIS + 2]
    s = ax * (m5 - m7) + ay * (m6 - m2) + az * (m1 - m3)
    v0, v1, v2 = ax * m0 + ay * m3 + az * m6, ax * m1 + ay * m4 + az * m7, \
        ax * m2 + ay * m5 + az * m8
    c = m0 + m4 + m8 - (v0 * ax + v1 * ay + v2 * az)
    if s * s + c * c <= EPS_M * EPS_M:
        return False
    q[i] = serial.angle_in_limits(math.atan2(s, c), q[i], geometry[i, _LOWER],
                                  geometry[i, _UPPER])
    return True


def backward(tree, q, x, R, P):
    """The backward pass (TreePasses.backward): from the base, fit each moving joint's angle,
    clamp it, rebuild (in place). ``tree``: ``(geometry, parent, t_tip, plan_ints,
    plan_floats)``, the tree and the plan of its targeted tips."""
    geometry, parent, t_tip, plan_ints, plan_floats = tree
    kind, a_start, a_nodes = plan_ints[4], plan_ints[5], plan_ints[6]
    fb_start, fb_nodes = plan_ints[7], plan_ints[8]
    fit_weight, perp, cross = plan_floats[0], plan_floats[2], plan_floats[3]
    for i in range(R.shape[0]):
        fit = kind[i]
        if fit != NO_FIT:
            R0, xi = fk.frame_of(geometry, parent[i], i, x, R)
            if fit == BONES:
                s = c = 0.0
                for j in range(a_start[i], a_start[i + 1]):
                    v = a_nodes[j]
                    bx, by, bz = serial.vec_mat((P[v, 0] - xi[0], P[v, 1] - xi[1],
                                                 P[v, 2] - xi[2]), R0)
                    s += cross[j, 0] * bx
                    s += cross[j, 1] * by
                    s += cross[j, 2] * bz
                    c += perp[j, 0] * bx
                    c += perp[j, 1] * by
                    c += perp[j, 2] * bz
                fitted = s * s + c * c > EPS_M * EPS_M
                if fitted:
                    q[i] = serial.angle_in_limits(math.atan2(s, c), q[i],
                                                  geometry[i, _LOWER], geometry[i, _UPPER])
            else:
                fitted = fit_points(geometry, a_nodes[a_start[i]:a_start[i + 1]], fit_weight,
                                    i, (R0, xi), (q, x, R), P)
            if not fitted:
                fit_points(geometry, fb_nodes[fb_start[i]:fb_start[i + 1]], fit_weight, i,
                           (R0, xi), (q, x, R), P)
        place(geometry, parent, i, q, x, R)
    place_tips(parent, t_tip, x, R)


def stretch(tree, q, x, R, L, target, P):
    """The backward pass with the first targeted tip's path laid straight from its first
    joint to ``target`` (TreePasses.stretch); ``tree`` as :func:`backward`'s."""
    path = tree[3][13]
    first = path[0]
    ox, oy, oz = x[first, 0], x[first, 1], x[first, 2]
    dx, dy, dz = target[0] - ox, target[1] - oy, target[2] - oz
    norm = max(math.sqrt(dx * dx + dy * dy + dz * dz), EPS_M)
    dx, dy, dz = dx / norm, dy / norm, dz / norm
    total = 0.0
    for j in range(path.shape[0]):
        v = path[j]
        total += L[v]
        reach = total - L[first]
        P[v, 0], P[v, 1], P[v, 2] = ox + reach * dx, oy + reach * dy, oz + reach * dz
    backward(tree, q, x, R, P)


def polish(tree, config, targets, step, trial):
    """Up to ``steps`` damped least-squares steps on the targeted tips' stacked position
    Jacobian (TreePasses.polish); the number taken, or -1 where numpy's solve raises.
    ``tree`` as :func:`backward`'s; ``config``: ``(q, x, R)`` (updated in place); ``step``:
    ``(steps, tolerance)``; ``trial``: ``(x_try, R_try, q_try, err)``."""
    geometry, parent, t_tip, plan_ints, plan_floats = tree
    q, x, R = config
    steps, tolerance = step
    x_try, R_try, q_try, err = trial
    tip_nodes, cols, path_start = plan_ints[0], plan_ints[9], plan_ints[10]
    path_joints, path_cols = plan_ints[11], plan_ints[12]
    w_norm = plan_floats[4]
    C, T = cols.shape[0], tip_nodes.shape[0]
    if steps <= 0 or C == 0:
        return 0
    rows = 3 * T
    sw = np.empty(rows)
    e = np.empty(rows)
    obj = 0.0
    for k in range(T):
        root = math.sqrt(w_norm[k])
        for a in range(3):
            sw[3 * k + a] = root
            e[3 * k + a] = (targets[k, a] - x[tip_nodes[k], a]) * root
    for r in range(rows):
        obj += e[r] * e[r]
    J = np.zeros((rows, C))
    Jw = np.empty((rows, C))
    axes = np.empty((C, 3))
    G = np.empty((C, C))
    g = np.empty(C)
    y = np.empty(C)
    dq = np.zeros(C)
    free = np.ones(C, dtype=np.bool_)
    index = np.empty(C, dtype=np.int64)
    e_try = np.empty(rows)
    damping, taken, slow = POLISH_DAMPING, 0, 0
    while taken < steps:
        taken += 1
        for c in range(C):
            i = cols[c]
            axes[c, 0], axes[c, 1], axes[c, 2] = serial.mat_vec(
                fk.load9(R, i), (geometry[i, _AXIS], geometry[i, _AXIS + 1],
                                      geometry[i, _AXIS + 2]))
        for k in range(T):
            v = tip_nodes[k]
            for j in range(path_start[k], path_start[k + 1]):
                u, c = path_joints[j], path_cols[j]
                rx, ry, rz = x[v, 0] - x[u, 0], x[v, 1] - x[u, 1], x[v, 2] - x[u, 2]
                J[3 * k, c] = axes[c, 1] * rz - axes[c, 2] * ry
                J[3 * k + 1, c] = axes[c, 2] * rx - axes[c, 0] * rz
                J[3 * k + 2, c] = axes[c, 0] * ry - axes[c, 1] * rx
        for r in range(rows):
            for c in range(C):
                Jw[r, c] = J[r, c] * sw[r]
        for c in range(C):
            free[c] = True
            dq[c] = 0.0
        for _ in range(3):  # freeze joints the step pushes past a limit
            m = 0
            for c in range(C):
                if free[c]:
                    index[m] = c
                    m += 1
            for a in range(m):
                ca = index[a]
                for b in range(m):
                    cb = index[b]
                    total = 0.0
                    for r in range(rows):
                        total += Jw[r, ca] * Jw[r, cb]
                    G[a, b] = total + damping if a == b else total
                total = 0.0
                for r in range(rows):
                    total += Jw[r, ca] * e[r]
                g[a] = total
            if not linalg.solve(G, g, m, y):
                return -1
            for c in range(C):
                dq[c] = 0.0
            for a in range(m):
                dq[index[a]] = y[a]
            pressed = False
            for c in range(C):
                i = cols[c]
                if free[c] and ((q[i] <= geometry[i, _LOWER] and dq[c] < 0.0) or
                                (q[i] >= geometry[i, _UPPER] and dq[c] > 0.0)):
                    free[c] = False
                    pressed = True
            if not pressed:
                break
            if not free.any():
                for c in range(C):
                    dq[c] = 0.0
                break
        q_try[:] = q
        for c in range(C):
            i = cols[c]
            q_try[i] = serial.clip(q[i] + dq[c], geometry[i, _LOWER], geometry[i, _UPPER])
        rebuild(geometry, parent, t_tip, q_try, x_try, R_try)
        obj_try = 0.0
        for k in range(T):
            for a in range(3):
                e_try[3 * k + a] = (targets[k, a] - x_try[tip_nodes[k], a]) * sw[3 * k + a]
        for r in range(rows):
            obj_try += e_try[r] * e_try[r]
        if obj_try < obj:
            slow = slow + 1 if obj_try > SLOW_STEP_RATIO2 * obj else 0
            q[:] = q_try
            x[:] = x_try
            R[:] = R_try
            e[:] = e_try
            obj = obj_try
            damping = max(damping * 0.1, POLISH_DAMPING_MIN)
        else:
            slow += 1
            damping *= 10.0
        for k in range(T):
            v = tip_nodes[k]
            dx, dy, dz = x[v, 0] - targets[k, 0], x[v, 1] - targets[k, 1], x[v, 2] - targets[k, 2]
            err[k] = math.sqrt(dx * dx + dy * dy + dz * dz)
        if reached(err, tolerance) or slow >= SLOW_STEPS:
            break
    return taken


_COMPILED = []
_HELPERS = ('place', 'place_tips', 'rebuild', 'measure', 'reached', 'forward', 'fit_points',
            'backward', 'stretch', 'polish')


def compile() -> None:  # noqa: A001 - the kernel modules' entry point is named so
    """Compile these functions in place (or load them from numba's cache on disk), once, after
    the serial passes whose helpers they call and the kernel library."""
    if not _COMPILED:
        serial.compile()
        linalg.compile()
        kernels.jitted(globals(), _HELPERS, ())
        _COMPILED.append(True)
