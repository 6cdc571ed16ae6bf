"""The compiled descents of damped_jacobian: Levenberg-Marquardt descents in numba.

The kernels' functions live in four modules, each read beside its Python twin in
:mod:`.descent`: the error and its normal equations (:mod:`.compiled_error`), one descent
(:mod:`.compiled_descend`), a solve's entries (:mod:`.compiled_entries`) and trees
(:mod:`.compiled_tree`); here they are compiled together (:func:`compile`: numba caches each
with the compiled helpers it calls, which every module sees once compiled) and importable by
their names. The Python side that drives these kernels (a chain's model, one solve's run, the
budget asked between chunks) is :mod:`.compiled_runs` (serial chains) and :mod:`.tree_runs`
(trees), what both sides share (exit codes, array layouts, the named structures)
:mod:`.compiled_layout`; their names are importable from here too.

The kernels take named structures that numba types and caches: :class:`DescentSettings` (the
settings, floats), :class:`Problem` (a chain and one target), :class:`Descent` (the arrays a
descent updates in place). One solve's entry is
``_first_pose(problem, settings, seed, descent, steps)``: the input checks and up to ``steps``
iterations of the seed's descent; a numba loop over many targets can call it as it is.
Forward kinematics and its Jacobian are the kernel library's (:mod:`ik_node.kernels.fk`).

A descent on a serial chain runs its iterations here, for a pose (6D) and for a position
target: the same FK, error, normal equations ``J^T W J`` (or, position only with six joints or
more, the 3 x 3 system ``J J^T`` of :func:`~.descent.trial_dual`), damped Cholesky step with
joints at a limit sitting out, step cap, wrapping and clipping, adaptive damping, stall test,
and a stream's rules (a small damping near the seed, the stream's stall factor, the first step's
pull along the self-motion away from the limits) as the Python loop, in machine code. Restarts,
the closest-pose search and the budget stay in Python.

The kernel is generic: a chain is passed as an array (per joint the constant 3 x 4 transform of
:class:`~ik_node.model.fast_kinematics.SerialKinematics`, its limits, kind and centring terms),
so one compiled function serves every chain. :mod:`ik_node.kernels` compiles it (or
loads it from numba's cache on disk, ``cache=True``) in a background thread; until then, and
where numba cannot serve, the Python descent does.
"""

from __future__ import annotations



from ik_node.kernels import fk, linalg
from ik_node.solvers.damped_jacobian import compiled_layout as layout
from ik_node.solvers.damped_jacobian.compiled_layout import (  # noqa: F401 - re-exported
    BAD_INPUT, CHUNK_DONE, CONVERGED, Descent, DescentSettings, GOOD_ENOUGH, ITERATION_CAP,
    NEED_DRAWS, NULL_SPACE_DAMPING, Problem, Restarts, STREAM_STALL_FACTOR, STUCK, TIMEOUT,
    TreeProblem, _ANGLE_ERROR, _BEST_COST, _BOUNDED, _CENTRED, _DECIDE_AT, _DRAWS, _FLOOR, _FRESH,
    _GOOD, _HIGH, _INVERSE_HALF, _IN_DESCENT, _ITERATIONS, _KEEP_BEST, _KERNELS, _LAM,
    _LAST_BLOCKED, _LOW, _MIDDLE, _NEAR, _POSITION_ERROR, _PRISMATIC, _PULL, _RESTARTS, _STALL_COST,
    _STALL_ITERATION, _STALL_NOW, _TIP_COLUMNS, _TIP_JOINTS, _TIP_ORIENTATION, _TIP_ROW,
    _TIP_WEIGHT, _TURNS, _WRAPS, available)
# The Python side of these kernels, importable from here as well.
from ik_node.solvers.damped_jacobian.compiled_runs import (  # noqa: F401 - re-exported
    CompiledDescent, DescentRun, DescentStart, RestartPlan, SerialJoints, exercise)
from ik_node.solvers.damped_jacobian.tree_runs import (  # noqa: F401 - re-exported
    TreeKernel, TreeRun, tree_kernel)
from ik_node.solvers.damped_jacobian import (compiled_descend, compiled_entries,
                                             compiled_error, compiled_tree)
# The kernels' functions, importable from here (the compiled ones once compile() has run).
from ik_node.solvers.damped_jacobian.compiled_descend import (  # noqa: F401 - re-exported
    _descend, _dual_solve, _keep_descent, _next_damping, _null_space_shift,
    _sits_out, _stall_rule, _trial)
from ik_node.solvers.damped_jacobian.compiled_entries import (  # noqa: F401 - re-exported
    _MAX_COORDINATE, _MAX_NORM2, _cost, _descend_restarts, _first_descent, _first_pose,
    _lowest_cost)
from ik_node.solvers.damped_jacobian.compiled_error import (  # noqa: F401 - re-exported
    _Work, _evaluate, _new_work, _pose_cost, _rotation_vector, _tip, _work_views)
from ik_node.solvers.damped_jacobian.compiled_tree import (  # noqa: F401 - re-exported
    _tree_cost, _tree_descend, _tree_evaluate, _tree_within)

#: The modules holding the kernels' functions (each calls the others through its globals).
_MODULES = (compiled_error, compiled_descend, compiled_entries, compiled_tree)


_HELPERS = ('_first_descent', '_work_views', '_new_work', '_tip',
            '_pose_cost', '_rotation_vector', '_evaluate', '_dual_solve',
            '_sits_out', '_trial', '_null_space_shift', '_tree_evaluate', '_tree_within',
            '_next_damping', '_stall_rule', '_keep_descent')
#: The small helpers numba writes into each caller (no call: see ik_node.kernels.jitted).
_INLINED = ('_next_damping', '_stall_rule', '_keep_descent')


def compile() -> None:
    """Compile the kernels (or load them from numba's cache on disk) and run each once on a
    small chain; :mod:`ik_node.kernels` calls it in its loading thread."""
    if not _KERNELS:
        fk.compile()
        linalg.compile()
        layout.compile()
        import numba
        jit = numba.njit(cache=True, nogil=True)
        inline = numba.njit(nogil=True, inline='always')
        # The helpers first: the functions calling them, in every module, see the compiled ones.
        for name in _HELPERS:
            _share(name, (inline if name in _INLINED else jit)(globals()[name]))
        kernels_ = {'descend': jit(_descend), 'lowest_cost': jit(_lowest_cost),
                    'cost': jit(_cost), 'tree_descend': jit(_tree_descend),
                    'tree_cost': jit(_tree_cost)}
        _share('_descend', kernels_['descend'])  # as _first_pose calls it
        kernels_['first_pose'] = jit(_first_pose)
        kernels_['descend_restarts'] = jit(_descend_restarts)
        exercise(kernels_)
        _KERNELS.update(kernels_)


def _share(name: str, function) -> None:
    """``function`` (compiled) as ``name`` in this module and in every module of
    :data:`_MODULES` that calls it."""
    for namespace in [globals()] + [vars(module) for module in _MODULES]:
        if name in namespace:
            namespace[name] = function
