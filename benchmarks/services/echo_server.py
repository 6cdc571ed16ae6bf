"""A minimal rclpy ``GetPositionIK`` server answering at once (SUCCESS, the request's state):
the round trip floor the node's ``~/compute_ik`` is compared with.

    python -m benchmarks.services.echo_server SERVICE_NAME

Needs moveit_msgs on ``PYTHONPATH``; spins a SingleThreadedExecutor until SIGINT/SIGTERM.
"""

import signal
import sys

import rclpy
from moveit_msgs.srv import GetPositionIK
from rclpy.executors import SingleThreadedExecutor


def main() -> int:
    """Serve ``sys.argv[1]`` until a signal."""
    rclpy.init()
    node = rclpy.create_node('ik_services_echo')

    def answer(request, response):
        response.solution = request.ik_request.robot_state
        response.error_code.val = 1
        return response
    node.create_service(GetPositionIK, sys.argv[1], answer)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    while not stop:
        executor.spin_once(timeout_sec=0.1)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
