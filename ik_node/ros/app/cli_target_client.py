"""``ik-solve target``: send the running node one target and print its answer.

    ik-solve target --point 0.2 0.1 -0.45                        # /ik_node, the base frame
    ik-solve target --point 0.4 0.1 0.3 --orientation 0 1 0 0 --frame base_link
    ik-solve target --point 0.3 0.2 0.1 --tip left_hand --node /r1/ik_node --json

For the Quick start venv, which has rclpy but no ``ros2`` command line: publishes one
``PointStamped`` (or ``PoseStamped`` with ``--orientation``) on the node's ``target_point``
(``target_pose``) topic, or the tip's own under ``--tip``, with a stamp of its own, and waits for
the ``/diagnostics`` status whose ``target_stamp`` is that stamp, and for the ``JointState``
that status names. Exit status: 0 reached, 1 not reached (the best effort is printed), 2 no node,
no answer in time, a refused target (ERROR) or a bad argument (one line on stderr).

Dispatched by name from :data:`ik_node.cli.common.SUBCOMMANDS`: the core never imports rclpy.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ik_node.cli.common import (EXIT_ERROR, EXIT_NOT_REACHED, EXIT_REACHED, PROG, Parser,
                                fail)

COMMAND = 'target'
#: DiagnosticStatus.ERROR: the node refused the target (bad frame, bad numbers).
_ERROR_LEVEL = 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve target``."""
    p = Parser(prog=f'{PROG} {COMMAND}',
               description='Send the running ik_node one target over ROS 2 and print its '
                           'answer (the diagnostics status and joint state that answer it).',
               epilog='Exit status: 0 reached, 1 not reached, 2 no answer or error.')
    p.add_argument('--point', nargs=3, type=float, metavar=('X', 'Y', 'Z'), required=True,
                   help='target position [m] in --frame')
    p.add_argument('--orientation', nargs=4, type=float, metavar=('QX', 'QY', 'QZ', 'QW'),
                   help='target orientation, quaternion (x, y, z, w): sends a pose')
    p.add_argument('--frame', default='',
                   help="the target's frame_id (default: empty, the node's base link)")
    p.add_argument('--node', default='/ik_node',
                   help='the node\'s full name, with its namespace (default /ik_node)')
    p.add_argument('--tip', default='',
                   help='for a node with several tips (tip_links): the tip this target is for')
    p.add_argument('--timeout', type=float, default=10.0,
                   help='seconds to wait for the node and its answer (default 10)')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def _check(args: argparse.Namespace) -> None:
    if not all(math.isfinite(v) for v in args.point):
        fail(f'--point {args.point}: every coordinate must be a finite number [m]')
    if args.orientation is not None:
        norm = math.sqrt(sum(v * v for v in args.orientation))
        if not math.isfinite(norm) or norm < 1e-9:
            fail(f'--orientation {args.orientation}: not a unit quaternion (x, y, z, w)')
    if not args.node.startswith('/') or args.node.endswith('/') or ' ' in args.node:
        fail(f'--node {args.node!r}: give the full node name, e.g. /ik_node or /r1/ik_node')
    if not (math.isfinite(args.timeout) and args.timeout > 0.0):
        fail(f'--timeout {args.timeout}: must be a positive number of seconds')


def topics_of(node: str, tip: str, pose: bool) -> Tuple[str, str, str]:
    """(target topic, joint_states topic, diagnostics status name) of node ``node``
    (``/ns/name``): the node's own ``~/[tip/]target_*``, its namespace's ``joint_states``,
    and the status ``ns/name: ik``."""
    namespace, _, _ = node.rpartition('/')
    kind = 'target_pose' if pose else 'target_point'
    target = f'{node}/{tip}/{kind}' if tip else f'{node}/{kind}'
    return target, f'{namespace}/joint_states', f'{node.lstrip("/")}: ik'


class TargetClient:
    """A small rclpy node: one target out, its answer in (matched by the target's stamp)."""

    def __init__(self, rclpy, context, node_name: str, tip: str, pose: bool):
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PointStamped, PoseStamped
        from sensor_msgs.msg import JointState

        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node(f'ik_solve_target_{os.getpid()}', context=context)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)
        self.target_topic, joints_topic, self.status_name = topics_of(node_name, tip, pose)
        self._message = PoseStamped if pose else PointStamped
        self.publisher = self.node.create_publisher(self._message, self.target_topic, 1)
        self.statuses: List[Any] = []
        self.joint_states: List[Any] = []
        self._subscriptions = (
            self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics,
                                          50),
            self.node.create_subscription(JointState, joints_topic, self.joint_states.append,
                                          50))

    def connected(self) -> bool:
        """True once the node subscribes to the target topic and every reliable publisher of
        the answer's topics known here (the node's diagnostics and joint states among them) is
        matched: a target sent earlier could be answered before its answer can arrive."""
        from rclpy.qos import ReliabilityPolicy
        if self.publisher.get_subscription_count() == 0:
            return False
        for subscription in self._subscriptions:
            matched = getattr(subscription, 'get_publisher_count', None)  # Iron and later
            if matched is None:
                continue
            reliable = sum(  # a best-effort one never matches these reliable subscriptions
                1 for info in self.node.get_publishers_info_by_topic(subscription.topic_name)
                if info.qos_profile.reliability == ReliabilityPolicy.RELIABLE)
            if matched() < reliable:
                return False
        return True

    def _on_diagnostics(self, msg) -> None:
        self.statuses.extend(s for s in msg.status if s.name == self.status_name)

    def spin_until(self, predicate, deadline: float) -> bool:
        """Spin until ``predicate()`` or the monotonic ``deadline`` [s]."""
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0.0:
                return False
            self._executor.spin_once(timeout_sec=min(left, 0.05))
        return True

    def send(self, point: Sequence[float], orientation: Optional[Sequence[float]], frame: str
             ) -> str:
        """Publish the target; its stamp as ``sec.nanosec`` (how the node names it)."""
        msg = self._message()
        msg.header.frame_id = frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
        if orientation is None:
            msg.point.x, msg.point.y, msg.point.z = (float(v) for v in point)
        else:
            p, o = msg.pose.position, msg.pose.orientation
            p.x, p.y, p.z = (float(v) for v in point)
            o.x, o.y, o.z, o.w = (float(v) for v in orientation)
        self.publisher.publish(msg)
        return f'{msg.header.stamp.sec}.{msg.header.stamp.nanosec:09d}'

    def answer(self, stamp: str) -> Optional[Tuple[int, Dict[str, str]]]:
        """(level, values) of the status that answers the target stamped ``stamp``, or None."""
        for status in reversed(self.statuses):
            values = {kv.key: kv.value for kv in status.values}
            if stamp in values.get('target_stamp', '').split(','):
                level = status.level if isinstance(status.level, int) else ord(status.level)
                values.setdefault('message', status.message)
                return level, values
        return None

    def joint_state(self, stamp: str):
        """The JointState stamped ``stamp`` (``sec.nanosec``), or None."""
        for msg in reversed(self.joint_states):
            if f'{msg.header.stamp.sec}.{msg.header.stamp.nanosec:09d}' == stamp:
                return msg
        return None

    def close(self) -> None:
        self._executor.shutdown()
        self.node.destroy_node()


def run(args: argparse.Namespace, rclpy) -> Tuple[int, Dict[str, Any]]:
    """Send the target and collect the answer: (exit status, what to print)."""
    context = rclpy.Context()
    rclpy.init(context=context)
    client = None
    try:
        client = TargetClient(rclpy, context, args.node, args.tip, args.orientation is not None)
        deadline = time.monotonic() + args.timeout
        if not client.spin_until(client.connected, deadline):
            fail(f'no node subscribes to {client.target_topic} within {args.timeout:g} s: is '
                 f'{args.node} running, on this ROS_DOMAIN_ID '
                 f'({os.environ.get("ROS_DOMAIN_ID", "0")})?')
        sent = time.monotonic()
        stamp = client.send(args.point, args.orientation, args.frame)
        if not client.spin_until(lambda: client.answer(stamp) is not None, deadline):
            fail(f'{args.node} did not answer the target (stamp {stamp}) within '
                 f'{args.timeout:g} s')
        round_trip_ms = (time.monotonic() - sent) * 1e3
        level, values = client.answer(stamp)
        out: Dict[str, Any] = {'node': args.node, 'topic': client.target_topic,
                               'target_stamp': stamp, 'round_trip_ms': round_trip_ms,
                               'level': level, 'diagnostics': values}
        js_stamp = values.get('joint_state_stamp', '')
        if js_stamp and client.spin_until(lambda: client.joint_state(js_stamp) is not None,
                                          time.monotonic() + min(args.timeout, 2.0)):
            msg = client.joint_state(js_stamp)
            out['joints'] = dict(zip(msg.name, (float(v) for v in msg.position)))
        if level >= _ERROR_LEVEL:
            return EXIT_ERROR, out
        reached = values.get('reachable') == 'true'
        return (EXIT_REACHED if reached else EXIT_NOT_REACHED), out
    finally:
        if client is not None:
            client.close()
        rclpy.try_shutdown(context=context)


def human_lines(out: Dict[str, Any]) -> List[str]:
    """The answer as text: the main diagnostics, then the joints."""
    values = out['diagnostics']
    lines = [f'{out["node"]} answered the target on {out["topic"]} (stamp {out["target_stamp"]}'
             f', {out["round_trip_ms"]:.1f} ms):']
    for key in ('reachable', 'status', 'position_error_m', 'orientation_error_rad',
                'min_residual_m', 'solver', 'iterations', 'solve_time_ms', 'message'):
        if values.get(key, '') != '':
            lines.append(f'  {key:<22} {values[key]}')
    for key in sorted(k for k in values if '.' in k and not k[0].isdigit()):
        lines.append(f'  {key:<22} {values[key]}')  # per-tip values of a branched chain
    joints = out.get('joints')
    if joints:
        width = max(len(name) for name in joints)
        lines.append('  joints:')
        lines += [f'    {name:<{width}}  {value:+.6f}' for name, value in joints.items()]
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``ik-solve target``. Returns the exit status."""
    args = build_parser().parse_args(argv)
    _check(args)
    try:
        import rclpy
    except ImportError as exc:
        fail(f'ik-solve target needs rclpy ({exc}): source a ROS 2 install, or install the '
             'ROS 2 wheels: pip install "ik_node[ros]" (from a checkout: pip install ".[ros]")')
    status, out = run(args, rclpy)
    if args.json:
        print(json.dumps(out))
    else:
        print('\n'.join(human_lines(out)))
    return status
