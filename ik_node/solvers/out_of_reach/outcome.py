"""What the closest-pose search's stop means for a solve: its status and its message.

Every solver that hands a position target to the search
(:meth:`~ik_node.solvers.out_of_reach.closest_pose.ClosestPose.search`) turns the search's stop
into the solve's status here, so that one stop reads the same whichever solver met it:

=============  =================  ===========================================================
stop           status             why
=============  =================  ===========================================================
converged      ``converged``      a descent reached the target (within the tolerance)
proven         ``unreachable``    the best stationary point is within ``agreement`` of the
                                  proven lower bound: nothing can be closer
reach          ``not_reached``    the best stationary point is at the measured reach (a
                                  measurement, not a proof)
confirmed      ``not_reached``    two descents from different starts, one random, ended at
                                  the best point and every flip was tried (the restart rule
                                  of the search, not a proof)
timeout        ``timeout``        out of time before a rule above stopped it
iterations     ``max_iterations`` out of iterations
restarts       ``max_iterations`` out of restarts
=============  =================  ===========================================================

The first four stops vouch for the pose as the closest within the limits (``vouched``: the
result is not ``best_found``); the last three leave it the best found in the budget, and the
result says so (``best_found``, with ``excess_bound`` where the proven bound gives one).

:meth:`~ik_node.solvers.base.Solver.solve` still measures the answer, and a missed target is
``unreachable`` exactly when its proven ``min_residual`` exceeds the tolerance
(:func:`~ik_node.solvers.results.honest_status`), whatever the stop.
"""

from __future__ import annotations

from typing import Dict, Sequence, Tuple

from ik_node.solvers.results import IkStatus
from ik_node.solvers.out_of_reach.closest_pose import Search

#: The message of a search that stopped at the measured reach.
AT_REACH_MESSAGE = ('out of reach: the closest pose, stretched as far toward the target as the '
                    'chain reaches (its measured maximum reach)')

#: The status each stop of the search gives the solve.
STOP_STATUS: Dict[str, IkStatus] = {
    'converged': IkStatus.CONVERGED,
    'proven': IkStatus.UNREACHABLE,
    'reach': IkStatus.NOT_REACHED,
    'confirmed': IkStatus.NOT_REACHED,
    'timeout': IkStatus.TIMEOUT,
    'iterations': IkStatus.MAX_ITERATIONS,
    'restarts': IkStatus.MAX_ITERATIONS,
}

#: The stops that vouch for the pose as the closest (see the table).
VOUCHED_STOPS = frozenset(('converged', 'proven', 'reach', 'confirmed'))


def search_outcome(search: Search, joint_names: Sequence[str], iterations: int, restarts: int,
                   timeout_s: float) -> Tuple[IkStatus, str]:
    """The status and message of a solve that ``search`` ended.

    Args:
        search: what the search found (its ``stop``, ``descents`` and ``pressed`` joints).
        joint_names: the chain's joint names, to name the joints pressed against a limit.
        iterations: the solve's iterations, the search's included.
        restarts: the solve's restarts, the search's descents after the first included.
        timeout_s: the solve's time budget [s].
    """
    stop = search.stop
    if stop == 'converged':
        message = f'converged after {restarts} restarts'
    elif stop == 'proven':
        message = 'out of reach: the closest pose, within tolerance of the proven bound'
    elif stop == 'reach':
        message = AT_REACH_MESSAGE
    elif stop == 'confirmed':
        pressed = ', '.join(joint_names[k] for k in search.pressed)
        at_limits = f'; pressed against the limits: {pressed}' if pressed else ''
        message = (f'closest pose found: {search.descents} descents, two from different starts '
                   f'(one random) ended at this stationary point and none lower{at_limits}')
    elif stop == 'timeout':
        message = f'timeout {timeout_s:g} s after {restarts} restarts ({iterations} iterations)'
    elif stop == 'iterations':
        message = f'no convergence in {iterations} iterations, {restarts} restarts'
    else:
        message = f'stuck after {restarts} restarts (the restarts limit)'
    return STOP_STATUS[stop], message
