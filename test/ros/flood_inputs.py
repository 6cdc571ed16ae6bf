"""The targets flood_soak.py streams, and how each robot takes them.

* single-tip robots (leg3, planar4, arm6): ``PointStamped`` on ``~/target_point``;
* ``twin_arm``: one ``PointStamped`` per hand on ``~/<tip>/target_point`` (left, then right);
* ``quad12``: one ``PoseArray`` on ``~/target_poses`` holding every foot (all-zero orientations:
  position targets; frame ``base_link`` or empty, both the base frame).

Good targets are FK of random in-limit configurations (reachable by construction, every tip of
one configuration together). A bad one is one of :data:`BAD_KINDS` for its input: NaN, inf,
1e12 m, an unknown frame; for a PoseArray also NaN in one pose only and one pose too few or too
many.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[2]

#: The tips each robot is flooded on, in ``tip_links`` order.
TIPS: Dict[str, List[str]] = {
    'leg3': ['foot'], 'planar4': ['tip'], 'arm6': ['tool0'],
    'twin_arm': ['left_hand', 'right_hand'],
    'quad12': ['FL_foot', 'FR_foot', 'RL_foot', 'RR_foot'],
}
#: How each robot's targets are sent: 'point' (~/target_point), 'per_tip' (~/<tip>/target_point)
#: or 'pose_array' (~/target_poses).
INPUT = {'leg3': 'point', 'planar4': 'point', 'arm6': 'point', 'twin_arm': 'per_tip',
         'quad12': 'pose_array'}
BAD_KINDS = {
    'point': ('nan', 'inf', 'huge', 'frame'),
    'per_tip': ('nan', 'inf', 'huge', 'frame'),
    'pose_array': ('nan_one_pose', 'too_few_poses', 'too_many_poses', 'huge', 'frame'),
}
#: Every error a bad target of each kind must be answered with (the diagnostics' message up to
#: its first colon): a PoseArray of the wrong length is refused whole.
ERROR_KEYS = {'point': {'bad target'}, 'per_tip': {'bad target'},
              'pose_array': {'bad target', 'bad target_poses'}}


def make_chain(robot: str):
    from ik_node import Chain
    return Chain.from_urdf_file(REPO / 'urdf' / f'{robot}.urdf', 'base_link', TIPS[robot])


def make_targets(robot: str, count: int, seed: int) -> np.ndarray:
    """``(count, tips, 3)`` reachable tip positions [m]: FK of random in-limit configurations."""
    chain = make_chain(robot)
    rng = np.random.default_rng(seed)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    out = np.empty((count, len(TIPS[robot]), 3))
    for start in range(0, count, 20000):  # batched FK, in slices of bounded memory
        q = rng.uniform(lower, upper, size=(min(20000, count - start), chain.n))
        if len(TIPS[robot]) == 1:
            out[start:start + len(q), 0] = chain.fk(q)[:, :3, 3]
        else:
            tips = chain.fk_tips(q)
            for k, tip in enumerate(TIPS[robot]):
                out[start:start + len(q), k] = tips[tip][:, :3, 3]
    return out


def is_bad(i: int, bad_every: int) -> bool:
    return bad_every > 0 and i % bad_every == bad_every // 2


def bad_kind(robot: str, i: int, bad_every: int) -> Optional[str]:
    """The kind of bad target number ``i`` is, or None for a good one."""
    if not is_bad(i, bad_every):
        return None
    kinds = BAD_KINDS[INPUT[robot]]
    return kinds[(i // bad_every) % len(kinds)]


class TargetSender:
    """Publishers of one robot's target input on node ``name``; :meth:`send` sends target i."""

    def __init__(self, node, name: str, robot: str, base: str, qos) -> None:
        from geometry_msgs.msg import Pose, PointStamped, PoseArray
        self.robot, self.base, self.kind = robot, base, INPUT[robot]
        self.tips = TIPS[robot]
        if self.kind == 'point':
            self.pubs = [node.create_publisher(PointStamped, f'/{name}/target_point', qos)]
            self.msg = PointStamped()
        elif self.kind == 'per_tip':
            self.pubs = [node.create_publisher(PointStamped, f'/{name}/{tip}/target_point', qos)
                         for tip in self.tips]
            self.msg = PointStamped()
        else:
            self.pubs = [node.create_publisher(PoseArray, f'/{name}/target_poses', qos)]
            self.msg = PoseArray()
            self.poses = [Pose() for _ in range(len(self.tips) + 1)]
            for pose in self.poses:  # all-zero orientation: a position target
                pose.orientation.w = 0.0

    def matched(self) -> bool:
        """True once every publisher has a subscriber."""
        return all(pub.get_subscription_count() > 0 for pub in self.pubs)

    def send(self, i: int, positions: np.ndarray, kind: Optional[str]) -> None:
        """Send target ``i`` (``positions``: (tips, 3)) made bad as ``kind`` says (None: good)."""
        self._build(i, positions, kind, lambda pub, msg: pub.publish(msg))

    def serialized(self, i: int, positions: np.ndarray, kind: Optional[str]) -> List[tuple]:
        """Target ``i``'s messages as ``(publisher, serialized bytes)``: published later with
        :func:`publish_serialized`, they cost the flood's publisher no conversion per send."""
        from rclpy.serialization import serialize_message
        out: List[tuple] = []
        self._build(i, positions, kind, lambda pub, msg: out.append((pub, serialize_message(msg))))
        return out

    def _build(self, i: int, positions: np.ndarray, kind: Optional[str], emit) -> None:
        if self.kind == 'pose_array':
            self._build_pose_array(i, positions, kind, emit)
            return
        # One message per tip; a bad kind spoils the message of one tip (alternating).
        bad_tip = i % len(self.pubs) if kind else -1
        for k, pub in enumerate(self.pubs):
            msg = self.msg
            msg.header.frame_id = self.base
            x, y, z = (float(v) for v in positions[k])
            if k == bad_tip:
                x, y, z = _spoil(kind, x, y, z, msg)
            msg.point.x, msg.point.y, msg.point.z = x, y, z
            emit(pub, msg)

    def _build_pose_array(self, i: int, positions: np.ndarray, kind: Optional[str],
                          emit) -> None:
        msg = self.msg
        # The base frame by name or left empty (both mean the base frame).
        msg.header.frame_id = self.base if i % 2 else ''
        n = len(self.tips)
        if kind == 'too_few_poses':
            n -= 1
        elif kind == 'too_many_poses':
            n += 1
        bad_pose = i % len(self.tips) if kind in ('nan_one_pose', 'huge') else -1
        for k in range(n):
            x, y, z = (float(v) for v in positions[min(k, len(self.tips) - 1)])
            if k == bad_pose:
                x, y, z = _spoil('nan' if kind == 'nan_one_pose' else kind, x, y, z, msg)
            p = self.poses[k].position
            p.x, p.y, p.z = x, y, z
        if kind == 'frame':
            msg.header.frame_id = 'no_such_frame'
        msg.poses = self.poses[:n]
        emit(self.pubs[0], msg)


def publish_serialized(messages: List[tuple]) -> None:
    """Publish what :meth:`TargetSender.serialized` made."""
    for pub, data in messages:
        pub.publish(data)


def _spoil(kind: str, x: float, y: float, z: float, msg) -> tuple:
    if kind == 'nan':
        x = math.nan
    elif kind == 'inf':
        y = math.inf
    elif kind == 'huge':
        z = 1e12
    elif kind == 'frame':
        msg.header.frame_id = 'no_such_frame'
    return x, y, z
