"""``/diagnostics`` arrays serialized here: a status's key-values written straight to CDR.

A solve's status carries a few dozen key-values (75 for a four-foot solve). As messages, each
is a ``KeyValue`` whose strings rclpy validates on assignment, converts to C and serializes again
in ``publish``: about half a millisecond per array on a four-foot status, spent between two
targets of a stream. :class:`DiagnosticArrayCdr` writes the same bytes from the status's strings
and the publisher sends them as they are.

:meth:`DiagnosticArrayCdr.probe` checks once that bytes written here deserialize (by rclpy) to the
message they stand for, several statuses with strings of every length modulo the alignment and
non-ASCII text included; where they do not (another wire format), it returns None and the node
publishes the messages.
"""

from __future__ import annotations

import struct
from typing import Dict, Optional, Sequence

from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.serialization import deserialize_message

from ik_node.ros.outputs.status_format import Status, diagnostic_array, diagnostic_status

_HEADER = b'\x00\x01\x00\x00'  # plain CDR, little endian
_STAMP = struct.Struct('<iI')
_COUNT = struct.Struct('<I')
_PAD = (b'', b'\x00', b'\x00\x00', b'\x00\x00\x00')


class DiagnosticArrayCdr:
    """Writes a ``diagnostic_msgs/DiagnosticArray`` of :class:`Status` values as plain
    little-endian CDR (the bytes rclpy's serialization gives), with the header's frame empty."""

    def __init__(self) -> None:
        self._keys: Dict[str, bytes] = {}  # a key's CDR string: the keys repeat, encoded once

    @classmethod
    def probe(cls) -> Optional['DiagnosticArrayCdr']:
        """A writer whose bytes rclpy reads back as the message they stand for, else None."""
        writer = cls()
        statuses = [diagnostic_status('n: ik', 'robot.urdf: base -> tip', b'\x01', 'reached; ü',
                                      {'a': '', 'bb': 'x', 'ccc': 'yz', 'dddd': 'ü€'}),
                    diagnostic_status('n: ik: tip', '', b'\x02', '', {}),
                    diagnostic_status('', 'h', b'\x00', 'm', {'k' * 5: 'v' * 7})]
        try:
            msg = deserialize_message(writer.data(statuses, 1_700_000_001, 123_456_789),
                                      DiagnosticArray)
        except Exception:
            return None
        expected = diagnostic_array(statuses, TimeMsg(sec=1_700_000_001, nanosec=123_456_789))
        return writer if msg == expected else None

    def data(self, statuses: Sequence[Status], sec: int, nanosec: int) -> bytes:
        """The array of ``statuses`` stamped ``(sec, nanosec)``, serialized."""
        out = bytearray(_HEADER)
        out += _STAMP.pack(sec, nanosec)
        out += b'\x01\x00\x00\x00\x00'  # frame_id: '' (its length counts the terminating NUL)
        out += _PAD[-len(out) & 3]
        out += _COUNT.pack(len(statuses))
        keys = self._keys
        for level, name, message, hardware_id, values in statuses:
            out += level
            _string(out, name.encode())
            _string(out, message.encode())
            _string(out, hardware_id.encode())
            out += _PAD[-len(out) & 3]
            out += _COUNT.pack(len(values))
            for key, value in values.items():
                piece = keys.get(key)
                if piece is None:  # its length, its bytes and the NUL
                    encoded = key.encode()
                    piece = keys[key] = _COUNT.pack(len(encoded) + 1) + encoded + b'\x00'
                out += _PAD[-len(out) & 3]
                out += piece
                _string(out, value.encode())
        return bytes(out)


def _string(out: bytearray, data: bytes) -> None:
    """Append a CDR string: aligned length (with the NUL), the bytes, the NUL."""
    out += _PAD[-len(out) & 3]
    out += _COUNT.pack(len(data) + 1)
    out += data
    out += b'\x00'

