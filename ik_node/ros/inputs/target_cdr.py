"""Target messages read straight from their serialized form (CDR), without a Python message.

The node takes its target messages serialized
(:class:`~ik_node.ros.inputs.target_subscriptions.TargetSubscriptions`) and reads the few
numbers a target needs from the bytes: the header's stamp and frame and the position (and
orientation) doubles. That skips the Python message objects rclpy would build (a
``PoseArray`` of four poses is a dozen of them), so a target costs less than rclpy's own take of
the message.

Only plain CDR (XCDR1, the encapsulation ROS 2's middlewares use for these types), either byte
order, is read here; any other encapsulation, and bytes too short for the message, give None,
and the caller deserializes the message with rclpy instead (which also reports what is wrong
with it). No rclpy: the layouts are those of ``std_msgs/Header``, ``geometry_msgs/Point``,
``Quaternion``, ``Pose``, ``PointStamped``, ``PoseStamped`` and ``PoseArray``.
"""

from __future__ import annotations

import struct
from typing import List, Optional, Tuple

#: The byte order of each plain CDR encapsulation (its first two bytes).
_ORDERS = {b'\x00\x00': '>', b'\x00\x01': '<'}
#: Offsets are counted from the end of the 4-byte encapsulation header.
_START = 4

_HEADER = {order: struct.Struct(order + 'iII') for order in '<>'}
_XYZ = {order: struct.Struct(order + '3d') for order in '<>'}
_POSE = {order: struct.Struct(order + '7d') for order in '<>'}
_COUNT = {order: struct.Struct(order + 'I') for order in '<>'}

#: ``(frame_id, (sec, nanosec), offset of the next field from the start of the data)``.
Header = Tuple[str, Tuple[int, int], int]


def _header(data: bytes) -> Optional[Tuple[str, Header]]:
    """The byte order and the ``std_msgs/Header`` that starts a message, or None for an
    encapsulation other than plain CDR."""
    order = _ORDERS.get(data[:2])
    if order is None:
        return None
    sec, nanosec, length = _HEADER[order].unpack_from(data, _START)
    end = 12 + length  # the string's bytes, its NUL counted in length
    if len(data) < _START + end:
        raise struct.error('frame_id runs past the end of the message')
    frame_id = data[_START + 12:_START + end - 1].decode('utf-8') if length else ''
    return order, (frame_id, (sec, nanosec), end)


def _aligned(offset: int, size: int) -> int:
    return (offset + size - 1) // size * size


def point_stamped(data: bytes) -> Optional[Tuple[str, Tuple[int, int], Tuple[float, ...]]]:
    """``(frame_id, stamp, (x, y, z))`` of a serialized ``geometry_msgs/PointStamped``, or None
    (not plain CDR).

    Raises:
        struct.error, UnicodeDecodeError: bytes that are not such a message.
    """
    read = _header(data)
    if read is None:
        return None
    order, (frame_id, stamp, end) = read
    return frame_id, stamp, _XYZ[order].unpack_from(data, _START + (end + 7) // 8 * 8)  # 8-aligned


def pose_stamped(data: bytes) -> Optional[Tuple[str, Tuple[int, int], Tuple[float, ...]]]:
    """``(frame_id, stamp, (x, y, z, qx, qy, qz, qw))`` of a serialized
    ``geometry_msgs/PoseStamped``, or None (not plain CDR); raises as :func:`point_stamped`."""
    read = _header(data)
    if read is None:
        return None
    order, (frame_id, stamp, end) = read
    return frame_id, stamp, _POSE[order].unpack_from(data, _START + (end + 7) // 8 * 8)  # aligned


def pose_array(data: bytes
               ) -> Optional[Tuple[str, Tuple[int, int], List[Tuple[float, ...]]]]:
    """``(frame_id, stamp, [(x, y, z, qx, qy, qz, qw), ...])`` of a serialized
    ``geometry_msgs/PoseArray``, or None (not plain CDR); raises as :func:`point_stamped`."""
    read = _header(data)
    if read is None:
        return None
    order, (frame_id, stamp, end) = read
    offset = _aligned(end, 4)
    (count,) = _COUNT[order].unpack_from(data, _START + offset)
    first = _START + _aligned(offset + 4, 8)
    if count and len(data) < first + 56 * count:
        raise struct.error(f'{count} poses run past the end of the message')
    pose = _POSE[order]
    return frame_id, stamp, [pose.unpack_from(data, first + 56 * k) for k in range(count)]
