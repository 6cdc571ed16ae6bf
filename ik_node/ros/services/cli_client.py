"""``ik-solve service``: ask the running node's ``~/compute_ik`` for one answer and print it.

    ik-solve service --point 0.4 0.1 0.3 --orientation 0 1 0 0
    ik-solve service --point 0.4 0.1 0.3 --orientation 0 1 0 0 --group arm --timeout 0.02
    ik-solve service --point 0.3 0.2 0.1 --orientation 0 0 0 1 --node /r1/ik_node --json

Sends one ``moveit_msgs/srv/GetPositionIK`` request (seeded by the node's measured state or
rest pose, ``avoid_collisions`` unless ``--no-collisions``) and prints the error code and the
group's joints of ``solution`` (the closest pose found when the code is not SUCCESS). Exit
status: 0 SUCCESS, 1 another answer of a solve (NO_IK_SOLUTION, TIMED_OUT,
GOAL_IN_COLLISION...), 2 a refused request, no service in time or a bad argument.

Needs ``moveit_msgs`` (docs/services.md). Dispatched by name from
:data:`ik_node.cli.common.SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

from ik_node.cli.common import (EXIT_ERROR, EXIT_NOT_REACHED, EXIT_REACHED, PROG, Parser,
                                fail)

COMMAND = 'service'
#: Codes of an answer that ran a solve (exit 1); any other code but SUCCESS exits 2.
_SOLVE_CODES = {-31: 'NO_IK_SOLUTION', -6: 'TIMED_OUT', -12: 'GOAL_IN_COLLISION',
                -14: 'GOAL_CONSTRAINTS_VIOLATED', -22: 'COLLISION_CHECKING_UNAVAILABLE'}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve service``."""
    p = Parser(prog=f'{PROG} {COMMAND}',
               description="Call the running ik_node's ~/compute_ik (moveit_msgs/GetPositionIK) "
                           'once and print its answer.',
               epilog='Exit status: 0 SUCCESS, 1 no solution / timed out / in collision, 2 '
                      'refused request, no service or error.')
    p.add_argument('--point', nargs=3, type=float, metavar=('X', 'Y', 'Z'), required=True,
                   help='target position [m] in --frame')
    p.add_argument('--orientation', nargs=4, type=float, metavar=('QX', 'QY', 'QZ', 'QW'),
                   default=(0.0, 0.0, 0.0, 1.0),
                   help='target orientation (x, y, z, w) (default: identity)')
    p.add_argument('--frame', default='', help="the pose's frame (default: the group's base)")
    p.add_argument('--group', default='', help="planning group (default: the node's chain)")
    p.add_argument('--link', default='', help="the tip link (default: the group's tip)")
    p.add_argument('--timeout', type=float, default=0.0,
                   help="the solve's budget [s] (default 0: the node's configured budget)")
    p.add_argument('--no-collisions', action='store_true',
                   help='avoid_collisions false: kinematics only')
    p.add_argument('--node', default='/ik_node',
                   help="the node's full name, with its namespace (default /ik_node)")
    p.add_argument('--wait', type=float, default=10.0,
                   help='seconds to wait for the service and its answer (default 10)')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def _check(args: argparse.Namespace) -> None:
    if not all(math.isfinite(v) for v in (*args.point, *args.orientation)):
        fail(f'--point {args.point} --orientation {args.orientation}: finite numbers only')
    if not args.node.startswith('/') or args.node.endswith('/') or ' ' in args.node:
        fail(f'--node {args.node!r}: give the full node name, e.g. /ik_node or /r1/ik_node')
    if not (math.isfinite(args.timeout) and args.timeout >= 0.0):
        fail(f'--timeout {args.timeout}: a number of seconds >= 0')
    if not (math.isfinite(args.wait) and args.wait > 0.0):
        fail(f'--wait {args.wait}: a positive number of seconds')


def request_of(srv, args: argparse.Namespace):
    """The ``GetPositionIK`` request of the arguments."""
    request = srv.GetPositionIK.Request()
    ik = request.ik_request
    ik.group_name = args.group
    ik.avoid_collisions = not args.no_collisions
    ik.ik_link_name = args.link
    ik.pose_stamped.header.frame_id = args.frame
    p, o = ik.pose_stamped.pose.position, ik.pose_stamped.pose.orientation
    p.x, p.y, p.z = (float(v) for v in args.point)
    o.x, o.y, o.z, o.w = (float(v) for v in args.orientation)
    seconds = int(math.floor(args.timeout))
    ik.timeout.sec, ik.timeout.nanosec = seconds, int(round((args.timeout - seconds) * 1e9))
    return request


def call(args: argparse.Namespace, rclpy, srv) -> Dict[str, Any]:
    """Call the service; what to print (fails with exit 2 when no answer comes)."""
    from rclpy.executors import SingleThreadedExecutor
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'ik_solve_service_{os.getpid()}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        name = f'{args.node}/compute_ik'
        client = node.create_client(srv.GetPositionIK, name)
        if not client.wait_for_service(timeout_sec=args.wait):
            fail(f'no service {name} within {args.wait:g} s: is {args.node} running with '
                 f'moveit_msgs, on this ROS_DOMAIN_ID ({os.environ.get("ROS_DOMAIN_ID", "0")})?')
        sent = time.monotonic()
        future = client.call_async(request_of(srv, args))
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        deadline = sent + args.wait
        while not done.is_set() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        if not future.done():
            fail(f'{name} did not answer within {args.wait:g} s')
        response = future.result()
        js = response.solution.joint_state
        return {'service': name, 'round_trip_ms': (time.monotonic() - sent) * 1e3,
                'error_code': int(response.error_code.val),
                'error_name': _name(response.error_code.val),
                'message': response.error_code.message,
                'joints': dict(zip(js.name, (float(v) for v in js.position)))}
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _name(code: int) -> str:
    from ik_node.services.error_codes import MoveItCode
    try:
        return MoveItCode(int(code)).name
    except ValueError:
        return str(code)


def human_lines(out: Dict[str, Any]) -> List[str]:
    """The answer as text."""
    lines = [f'{out["service"]} answered {out["error_name"]} ({out["error_code"]}) in '
             f'{out["round_trip_ms"]:.1f} ms']
    if out['message']:
        lines.append(f'  message: {out["message"]}')
    if out['joints']:
        width = max(len(name) for name in out['joints'])
        lines.append('  solution:' if out['error_code'] == 1 else '  closest pose found:')
        lines += [f'    {n:<{width}}  {v:+.6f}' for n, v in out['joints'].items()]
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``ik-solve service``. Returns the exit status."""
    args = build_parser().parse_args(argv)
    _check(args)
    try:
        import rclpy
        import moveit_msgs.srv as srv
    except ImportError as exc:
        fail(f'ik-solve service needs rclpy and moveit_msgs ({exc}): source a ROS 2 install '
             'with ros-$ROS_DISTRO-moveit-msgs (docs/services.md)')
    out = call(args, rclpy, srv)
    print(json.dumps(out) if args.json else '\n'.join(human_lines(out)))
    if out['error_code'] == 1:
        return EXIT_REACHED
    return EXIT_NOT_REACHED if out['error_code'] in _SOLVE_CODES else EXIT_ERROR
