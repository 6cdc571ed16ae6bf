"""Diagnostic statuses: levels, summaries and key-values of solves, tips and errors.

Imports ``diagnostic_msgs`` but never rclpy, so every helper here is tested without
``rclpy.init``. :class:`~ik_node.ros.outputs.diagnostics.StatusReports` decides what is reported
and when; this module says how it reads.
"""

from __future__ import annotations

import math
from typing import Dict, Mapping, NamedTuple, Optional, Sequence

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from ik_node.solvers.base import IkResult, TipResult

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR


def _fmt(value: Optional[float]) -> str:
    if value is None:
        return ''
    return f'{value:.6g}' if math.isfinite(value) else str(value)


def result_level(result: IkResult) -> bytes:
    """OK when the target is reached (every targeted tip for a branched chain), else WARN."""
    return OK if result.reachable else WARN


def result_values(result: IkResult, solver: str, target_frame: str, skipped: int,
                  solve_count: int, target_stamp: str = '',
                  extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The key-values of a solve's diagnostic status (units in the key names).

    ``target_stamp`` names the target answered (its header stamp, :func:`stamp_text`; several
    comma-separated for a branched solve); ``extra`` adds node-side keys (seed, output stamp).
    """
    values = {
        'solver': solver,
        'reachable': str(result.reachable).lower(),
        'status': result.status.value,
        'position_error_m': _fmt(result.position_error),
        'orientation_error_rad': _fmt(result.orientation_error),
        'min_residual_m': _fmt(result.min_residual),
        'best_found': str(result.best_found).lower(),
        'iterations': str(result.iterations),
        'solve_time_ms': _fmt(result.solve_time * 1e3),
        'target_frame': target_frame,
        'skipped_targets': str(skipped),
        'orientation_ignored': str(result.orientation_ignored).lower(),
        'solve_count': str(solve_count),
        'target_stamp': target_stamp,
        'message': result.message,
    }
    values.update(extra or {})
    for tip, tip_result in (result.tips or {}).items():
        values[f'{tip}.reachable'] = str(tip_result.reachable).lower()
        values[f'{tip}.status'] = '' if tip_result.status is None else tip_result.status.value
        values[f'{tip}.position_error_m'] = _fmt(tip_result.position_error)
        values[f'{tip}.min_residual_m'] = _fmt(tip_result.min_residual)
    return values


def tip_level(tip_result: TipResult) -> bytes:
    """OK when the tip reached its target, else WARN."""
    return OK if tip_result.reachable else WARN


def tip_summary(tip: str, tip_result: TipResult) -> str:
    """One line on one tip of a solve of several tips."""
    status = '' if tip_result.status is None else tip_result.status.value
    if tip_result.reachable:
        return f'{tip}: target reached (error {tip_result.position_error:.3g} m)'
    text = f'{tip}: target not reached ({status}), error {tip_result.position_error:.3g} m'
    if tip_result.min_residual is not None and tip_result.min_residual > 0.0:
        text += f', at least {tip_result.min_residual:.3g} m out of reach'
    return text


def tip_values(tip: str, tip_result: TipResult, target_frame: str,
               target_stamp: str) -> Dict[str, str]:
    """The key-values of one tip's own status in a solve of several tips (``tip`` names it;
    ``target_stamp`` the target answered, as in the solve's status)."""
    return {
        'tip': tip,
        'reachable': str(tip_result.reachable).lower(),
        'status': '' if tip_result.status is None else tip_result.status.value,
        'position_error_m': _fmt(tip_result.position_error),
        'orientation_error_rad': _fmt(tip_result.orientation_error),
        'min_residual_m': _fmt(tip_result.min_residual),
        'target_frame': target_frame,
        'target_stamp': target_stamp,
        'message': tip_result.message,
    }


def result_summary(result: IkResult, solver: str) -> str:
    """One line saying what happened, for the status message and the log."""
    if result.reachable:
        text = f'target reached ({solver}, error {result.position_error:.3g} m)'
    else:
        text = (f'target not reached ({solver}, {result.status.value}): best effort published, '
                f'error {result.position_error:.3g} m')
        if result.min_residual is not None:
            text += f', at least {result.min_residual:.3g} m out of reach'
        if result.best_found:
            excess = result.excess_bound
            text += ('; the best pose found, not shown to be the closest' +
                     (f' (at most {excess:.3g} m farther)' if excess is not None else ''))
    if result.tips:
        missed = [tip for tip, r in result.tips.items() if not r.reachable]
        if missed:
            text += f'; tips not reached: {", ".join(missed)}'
    if result.orientation_ignored:
        text += f'; orientation ignored ({solver} solves position only)'
    return text


def error_values(solver: str, target_frame: str, skipped: int, solve_count: int,
                 message: str, target_stamp: str = '') -> Dict[str, str]:
    """The key-values of an ERROR status: same keys as a result, measured ones empty.

    ``target_stamp`` names the target refused ('' for an error that answers no target).
    """
    values = {k: '' for k in ('reachable', 'status', 'position_error_m', 'orientation_error_rad',
                              'min_residual_m', 'best_found', 'iterations', 'solve_time_ms',
                              'orientation_ignored')}
    values.update({'solver': solver, 'status': 'error', 'target_frame': target_frame,
                   'skipped_targets': str(skipped), 'solve_count': str(solve_count),
                   'target_stamp': target_stamp, 'message': message})
    return values


class Status(NamedTuple):
    """One ``diagnostic_msgs/DiagnosticStatus`` as plain values, the fields in its order: what
    the node builds per status (:func:`diagnostic_array` makes the message of a list of them,
    :class:`~ik_node.ros.outputs.status_cdr.DiagnosticArrayCdr` its serialization)."""

    level: bytes  #: OK, WARN or ERROR
    name: str
    message: str
    hardware_id: str
    values: Mapping[str, str]  #: key -> value, in the order they are reported


def diagnostic_status(name: str, hardware_id: str, level: bytes, message: str,
                      values: Mapping[str, str]) -> Status:
    """A status (:class:`Status`)."""
    return Status(level, name, message, hardware_id, values)


def status_msg(status: Status) -> DiagnosticStatus:
    """The ``diagnostic_msgs/DiagnosticStatus`` of ``status``."""
    msg = DiagnosticStatus()
    msg.level = status.level
    msg.name = status.name
    msg.message = status.message
    msg.hardware_id = status.hardware_id
    msg.values = [KeyValue(key=k, value=v) for k, v in status.values.items()]
    return msg


def diagnostic_array(statuses: Sequence[Status], stamp) -> DiagnosticArray:
    """A ``diagnostic_msgs/DiagnosticArray`` of ``statuses`` (one; a solve of several tips: its
    own status, then one per tip)."""
    msg = DiagnosticArray()
    msg.header.stamp = stamp
    msg.status = [status_msg(status) for status in statuses]
    return msg
