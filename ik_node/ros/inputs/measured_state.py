"""The robot's measured joint positions, from a ``sensor_msgs/JointState`` topic."""

from __future__ import annotations

import math
import threading
import time
from typing import Dict, Optional, Sequence, Tuple

import numpy as np
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState


class MeasuredState:
    """The robot's measured joint positions from a ``sensor_msgs/JointState`` topic.

    Messages may carry any subset of joints, and other joints: positions are merged by name,
    each with the time it arrived. :meth:`seed` answers with the chain's joints when every one of
    them is known and fresh.
    """

    def __init__(self, node: Node, topic: str) -> None:
        self._node = node
        self._lock = threading.Lock()
        self._positions: Dict[str, Tuple[float, float]] = {}  # name -> (position, monotonic t)
        self.topic = topic
        self._sub = node.create_subscription(JointState, topic, self._on_state,
                                             qos_profile_sensor_data)

    def _on_state(self, msg: JointState) -> None:
        now = time.monotonic()
        with self._lock:
            for name, value in zip(msg.name, msg.position):
                if math.isfinite(value):
                    self._positions[name] = (float(value), now)

    def seed(self, joint_names: Sequence[str], timeout_s: float
             ) -> Tuple[Optional[np.ndarray], str]:
        """``(q, note)``: the measured positions of ``joint_names`` or None, and why not.

        ``note`` is ``'measured'`` when q is given, else what is missing or stale.
        """
        now = time.monotonic()
        with self._lock:
            known = [self._positions.get(n) for n in joint_names]
        missing = [n for n, k in zip(joint_names, known) if k is None]
        if missing:
            return None, (f'no measured state yet for {", ".join(missing)} on {self.topic}'
                          if len(missing) < len(joint_names) else
                          f'no measured state yet on {self.topic}')
        age = now - min(t for _, t in known)
        if age > timeout_s:
            return None, f'measured state on {self.topic} is stale ({age:.2f} s > {timeout_s} s)'
        return np.array([v for v, _ in known], dtype=float), 'measured'

    def destroy(self) -> None:
        self._node.destroy_subscription(self._sub)
