"""Target messages read from their serialized bytes give the values rclpy's deserialization
gives: every frame length (the alignment of the doubles after it), stamps, pose counts, both
byte orders; other encapsulations and cut bytes are left to rclpy."""

from __future__ import annotations

import random
import struct

import pytest

from geometry_msgs.msg import PointStamped, Pose, PoseArray, PoseStamped
from rclpy.serialization import deserialize_message, serialize_message

from ik_node.ros.inputs import target_cdr

FRAMES = ['', 'a', 'ab', 'abc', 'base', 'base_', 'base_l', 'base_li', 'base_lin', 'base_link',
          'world_frame_x', 'wörld', 'frame/' * 7]


def _stamped(msg, rng, frame):
    msg.header.frame_id = frame
    msg.header.stamp.sec = rng.randint(-2 ** 31, 2 ** 31 - 1)
    msg.header.stamp.nanosec = rng.randint(0, 999_999_999)
    return msg


def _header_of(msg):
    return msg.header.frame_id, (msg.header.stamp.sec, msg.header.stamp.nanosec)


def _values(rng, n):
    return [rng.uniform(-1e3, 1e3) for _ in range(n)]


def test_point_and_pose_read_from_bytes_equal_rclpys_messages():
    rng = random.Random(0)
    for frame in FRAMES:
        point = _stamped(PointStamped(), rng, frame)
        point.point.x, point.point.y, point.point.z = _values(rng, 3)
        frame_id, stamp, xyz = target_cdr.point_stamped(serialize_message(point))
        back = deserialize_message(serialize_message(point), PointStamped)
        assert (frame_id, stamp) == _header_of(back)
        assert xyz == (back.point.x, back.point.y, back.point.z)

        pose = _stamped(PoseStamped(), rng, frame)
        p, o = pose.pose.position, pose.pose.orientation
        p.x, p.y, p.z, o.x, o.y, o.z, o.w = _values(rng, 7)
        frame_id, stamp, values = target_cdr.pose_stamped(serialize_message(pose))
        assert (frame_id, stamp) == _header_of(pose)
        assert values == (p.x, p.y, p.z, o.x, o.y, o.z, o.w)


def test_pose_arrays_of_every_length_read_from_bytes_equal_rclpys_messages():
    rng = random.Random(1)
    for frame in FRAMES:
        for count in range(6):
            msg = _stamped(PoseArray(), rng, frame)
            for _ in range(count):
                pose = Pose()
                p, o = pose.position, pose.orientation
                p.x, p.y, p.z, o.x, o.y, o.z, o.w = _values(rng, 7)
                msg.poses.append(pose)
            frame_id, stamp, poses = target_cdr.pose_array(serialize_message(msg))
            assert (frame_id, stamp) == _header_of(msg)
            assert poses == [(q.position.x, q.position.y, q.position.z, q.orientation.x,
                              q.orientation.y, q.orientation.z, q.orientation.w)
                             for q in msg.poses]


def test_big_endian_bytes_are_read_in_their_order():
    frame = b'base_link\x00'  # 10 bytes: the doubles start at 12 + 10 -> 24
    body = struct.pack('>iII', 7, 8, len(frame)) + frame + b'\x00\x00' + \
        struct.pack('>3d', 1.5, -2.25, 3.0)
    assert target_cdr.point_stamped(b'\x00\x00\x00\x00' + body) == ('base_link', (7, 8),
                                                                     (1.5, -2.25, 3.0))


def test_other_encapsulations_are_left_to_rclpy_and_cut_bytes_raise():
    msg = PointStamped()
    msg.header.frame_id = 'base_link'
    data = serialize_message(msg)
    assert target_cdr.point_stamped(b'\x00\x07' + data[2:]) is None  # XCDR2: not read here
    with pytest.raises(struct.error):
        target_cdr.point_stamped(data[:-1])
    with pytest.raises(struct.error):
        target_cdr.pose_stamped(data[:14])
    array = PoseArray()
    array.poses = [Pose(), Pose()]
    with pytest.raises(struct.error):
        target_cdr.pose_array(serialize_message(array)[:-8])
