"""The node's side of its MoveIt services: a process of their own, fed the model in force.

rclpy answers a service from the callback's return value on the thread that spins the node,
and the node's events executor runs no coroutine callbacks: a solve there would hold up every
target behind it. A thread of the node's process would not do either: Python threads share one
interpreter lock, and a compiled solve holds it throughout. So the services run in a process of
their own (:mod:`ik_node.ros.services.host`, started :data:`START_DELAY_S` after the node), on
a node ``<node name>_services`` in the node's namespace, under the names the node resolves
(``~/compute_ik`` of ``/ik_node`` is ``/ik_node/compute_ik``, the node's remappings applied).
The node sends it each model it puts in force (configuration, collision world with the
obstacles of ``~/obstacles``, group name, state topic) through its stdin; closing that pipe
ends it.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, Mapping, Optional


@dataclass(frozen=True)
class Offer:
    """What the services' process needs from the node, once.

    Attributes:
        node_name: its own node's name (``<node name>_services``).
        namespace: the node's namespace.
        names: service -> the name the node resolved for ``~/<service>``.
        status_name: the node's name as its ``/diagnostics`` statuses give it.
        tf_timeout_s: the longest wait for a TF transform [s].
    """

    node_name: str
    namespace: str
    names: Dict[str, str]
    status_name: str
    tf_timeout_s: float


#: Seconds after the node's construction at which the services' process starts.
START_DELAY_S = 2.0
#: Seconds the node's shutdown waits for the services' process to end on its own before it is
#: killed (it keeps nothing): a process still starting (imports, the first model) acts on the
#: end only once started, and ``ros2 launch`` sends SIGTERM 5 s after SIGINT.
CLOSE_WAIT_S = 1.5
#: The services' names below the node.
SERVICES = ('compute_ik', 'compute_fk', 'compute_cartesian_path')


class IkServices:
    """Starts the services' process and keeps it on the node's model.

    Args:
        node: the IkNode (name, namespace, remappings, TF timeout).
        tf_timeout_s: the longest wait for a TF transform [s].
    """

    def __init__(self, node, tf_timeout_s: float) -> None:
        self._node = node
        self._offer = Offer(f'{node.get_name()}_services', node.get_namespace(),
                            {name: node.resolve_service_name(f'~/{name}') for name in SERVICES},
                            node.get_fully_qualified_name().lstrip('/'), tf_timeout_s)
        self._proc: Optional[subprocess.Popen] = None
        self._model: Optional[tuple] = None  # the newest model order, sent once started
        # Started a moment after the node: its imports would compete with the node's start and
        # first answers for the cores.
        self._timer = node.create_timer(START_DELAY_S, self._start)

    def _start(self) -> None:
        """Start the services' process, give it the offer and the model in force."""
        if self._timer is None:
            return
        self._node.destroy_timer(self._timer)
        self._timer = None
        env = dict(os.environ)
        # the process imports ik_node (and moveit_msgs) as this one does
        env['PYTHONPATH'] = os.pathsep.join(p for p in sys.path if p)
        self._proc = subprocess.Popen([sys.executable, '-m', 'ik_node.ros.services.host'],
                                      stdin=subprocess.PIPE, env=env)
        self._send(('offer', self._offer))
        if self._model is not None:
            self._send(self._model)

    def _send(self, order: tuple) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            pickle.dump(order, proc.stdin)
            proc.stdin.flush()
        except (BrokenPipeError, OSError):  # the process ended: the node goes on without
            self._node.get_logger().error('the MoveIt services\' process has ended')
            self._proc = None

    def on_model(self, model, world: Mapping, graph) -> None:
        """Answer from ``model`` (a RobotModel; None: no model) with ``world`` (its collision
        world) from the next request on; the first call offers the services (a
        :data:`~ik_node.ros.model_lifecycle.Listener`)."""
        state_topic = self._node.resolve_topic_name(graph.state_topic) \
            if graph.state_topic else ''
        self._model = ('model', None if model is None else model.config, dict(world),
                       graph.group_name, state_topic, graph.state_timeout)
        self._send(self._model)

    def close(self) -> None:
        """End the services' process (its stdin closed), waiting a moment for it (then killed)."""
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
