"""The compiled descent of a tree with a shared trunk (:mod:`.tree`): the stacked error and
normal equations of every targeted tip, the tolerance test, the descent and its cost. Plain
functions that :func:`.compiled.compile` compiles with numba (see :mod:`.compiled`)."""

from __future__ import annotations

import math

import numpy as np

from ik_node.kernels import fk
from ik_node.solvers.damped_jacobian.compiled_layout import (
    CHUNK_DONE, CONVERGED, GOOD_ENOUGH, ITERATION_CAP, STUCK, _BEST_COST, _FLOOR, _FRESH,
    _ITERATIONS, _LAM, _LAST_BLOCKED, _STALL_COST, _STALL_ITERATION, _TIP_COLUMNS, _TIP_JOINTS,
    _TIP_ORIENTATION, _TIP_ROW, _TIP_WEIGHT)
from ik_node.solvers.damped_jacobian.compiled_descend import (_keep_descent, _next_damping,
                                                              _stall_rule, _trial)
from ik_node.solvers.damped_jacobian.compiled_error import _new_work, _rotation_vector, _tip


def _tree_evaluate(tree, settings, x, H, g, errors, q_path, work):
    """The stacked error of every targeted tip at ``x`` (the active joints), as
    ``trees.residuals.stacked_residual`` with the normal equations of
    :class:`~.tree.TreeDampedLeastSquares`: returns the cost ``sum_k w_k^2 (|p_t - p|^2 +
    w_o^2 angle^2)``; each tip's (position error, angle error) into ``errors``; ``H = J^T J``,
    ``g = J^T e`` of the weighted stacked Jacobian into ``H`` (n x n) and ``g``; ``tree`` a
    :class:`TreeProblem`."""
    tree_model, tips, columns, targets = tree
    n = x.shape[0]
    w2 = settings.w2
    for a in range(n):
        g[a] = 0.0
        for c in range(n):
            H[a, c] = 0.0
    E, J, axes, origins = work.E, work.J, work.axes, work.origins
    cost = 0.0
    for t in range(tips.shape[0]):
        row, m = int(tips[t, _TIP_ROW]), int(tips[t, _TIP_JOINTS])
        first = int(tips[t, _TIP_COLUMNS])
        orientation = tips[t, _TIP_ORIENTATION] != 0.0
        weight2 = tips[t, _TIP_WEIGHT] * tips[t, _TIP_WEIGHT]
        for i in range(m):
            q_path[i] = x[int(columns[first + i])]
        model = tree_model[row:row + m + 1]
        T = _tip(model, m, q_path, work)
        target = targets[t]
        dx = target[0] - T[0, 3]
        dy = target[1] - T[1, 3]
        dz = target[2] - T[2, 3]
        angle = 0.0
        ox = oy = oz = 0.0
        if orientation:
            angle, ox, oy, oz = _rotation_vector(target, T, E, 1.0)
        position_sq = dx * dx + dy * dy + dz * dz
        errors[t, 0] = math.sqrt(position_sq)
        errors[t, 1] = angle
        cost += weight2 * (position_sq + w2 * angle * angle if orientation else position_sq)
        fk.jacobian(model, m, (T[0, 3], T[1, 3], T[2, 3]), axes, origins, J, True)
        for i in range(m):
            a = int(columns[first + i])
            for j in range(m):
                c = int(columns[first + j])
                h = J[0, i] * J[0, j] + J[1, i] * J[1, j] + J[2, i] * J[2, j]
                if orientation:
                    h += w2 * (J[3, i] * J[3, j] + J[4, i] * J[4, j] + J[5, i] * J[5, j])
                H[a, c] += weight2 * h
            r = J[0, i] * dx + J[1, i] * dy + J[2, i] * dz
            if orientation:
                r += w2 * (J[3, i] * ox + J[4, i] * oy + J[5, i] * oz)
            g[a] += weight2 * r
    return cost


def _tree_within(errors, tol_p, tol_r, good):
    """1 when every tip is within the tolerances, 2 when every tip's position error is within
    its ``good`` (position only, every tip bounded; -1 entries: never), else 0."""
    within = True
    enough = True
    for t in range(errors.shape[0]):
        if not (errors[t, 0] <= tol_p and errors[t, 1] <= tol_r):
            within = False
        if not errors[t, 0] <= good[t]:
            enough = False
    return 1 if within else (2 if enough else 0)


def _tree_descend(tree, active_model, settings, x, best_x, good, state, steps):
    """Up to ``steps`` iterations of one descent of :class:`~.tree.TreeDampedLeastSquares`
    from ``x`` (the active joints, updated in place; ``best_x`` as the best configuration):
    its loop, with ``active_model`` the active joints' limits and kinds (the columns of a
    serial model; ``tree`` a :class:`TreeProblem`). Returns CONVERGED, GOOD_ENOUGH, STUCK,
    ITERATION_CAP or CHUNK_DONE."""
    tips = tree.tips
    n = x.shape[0]
    work = _new_work(n)
    A, At = np.empty((n, n)), np.empty((n, n))
    b, bt = np.empty(n), np.empty(n)
    errors, t_errors = np.empty((tips.shape[0], 2)), np.empty((tips.shape[0], 2))
    q_path = np.empty(n)
    cost = _tree_evaluate(tree, settings, x, A, b, errors, q_path, work)
    best_cost = state[_BEST_COST]
    iterations = int(state[_ITERATIONS])
    if state[_FRESH] != 0.0:
        lam = settings.damping
        if cost < best_cost:
            best_cost = cost
            best_x[:] = x
        stall_cost, stall_iteration = cost, iterations
        state[_FRESH] = 0.0
    else:
        lam = state[_LAM]
        stall_cost, stall_iteration = state[_STALL_COST], int(state[_STALL_ITERATION])
    last_blocked = int(state[_LAST_BLOCKED])
    floor = state[_FLOOR]
    tol_p, tol_r = settings.tol_p, settings.tol_r
    max_iterations = int(settings.max_iterations)
    code = CHUNK_DONE
    taken = 0
    while True:
        within = _tree_within(errors, tol_p, tol_r, good)
        if within == 1:
            code = CONVERGED
            break
        if within == 2:
            code = GOOD_ENOUGH
            break
        if iterations >= max_iterations:
            code = ITERATION_CAP
            break
        if taken >= steps:
            break
        iterations += 1
        taken += 1
        stuck = False
        blocked = _trial(active_model, n, settings, x, A, b, lam, work)
        if blocked > 0:
            last_blocked = iterations
        accepted = False
        if blocked >= 0:
            t_cost = _tree_evaluate(tree, settings, work.q_new, At, bt, t_errors, q_path, work)
            if t_cost < cost:
                accepted = True
                x[:] = work.q_new
                cost = t_cost
                A, At = At, A
                b, bt = bt, b
                errors, t_errors = t_errors, errors
                if cost < best_cost:
                    best_cost = cost
                    best_x[:] = x
        lam, stuck = _next_damping(settings, lam, accepted)
        stalls, stall_cost, stall_iteration = _stall_rule(
            settings, (iterations, last_blocked, cost, floor), (stall_cost, stall_iteration),
            (settings.stall_factor, settings.stall_factor))
        if stuck or stalls:
            code = STUCK
            break
    _keep_descent(state, (lam, iterations, last_blocked), (stall_cost, stall_iteration),
                  best_cost)
    return code


def _tree_cost(tree, settings, x):
    """The stacked cost of ``x`` (:func:`_tree_evaluate`), for restart candidates."""
    n = x.shape[0]
    return _tree_evaluate(tree, settings, x, np.empty((n, n)), np.empty(n),
                          np.empty((tree.tips.shape[0], 2)), np.empty(n), _new_work(n))
