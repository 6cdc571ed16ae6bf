"""Frames outside the URDF, placed in the chain's base frame through TF."""

from __future__ import annotations

import math
import threading
import time
from typing import Tuple, Union

import numpy as np
from rclpy.node import Node
from rclpy.time import Time

from ik_node.errors import TargetError
from ik_node.model.chain import rotation_from_quat_xyzw
from ik_node.ros.inputs.targets import TfWarmingUp, stamp_text

# How long after the TF listener is made a target whose transform is not there yet is kept and
# tried again, not refused: the listener's new subscriptions must be discovered by the TF
# publishers before any transform arrives. Measured with Fast DDS on one host: 20 ms once the
# node has run a few seconds, 1.3-3 s right after its start (a target sent as soon as the node
# answers).
TF_WARM_UP_S = 5.0


def tf_available() -> bool:
    """True where tf2_ros can be imported (every ROS 2 install; not the pip wheels)."""
    try:
        import tf2_ros  # noqa: F401
    except ImportError:
        return False
    return True


def _spin_until_shutdown(executor) -> None:
    """The TF listener's thread: spin until :meth:`TfFrames.close` shuts ``executor`` down (or
    the context ends: rclpy's ExternalShutdownException, and any error of a shutdown while
    spinning, end the thread quietly)."""
    try:
        executor.spin()
    except Exception:
        pass


class TfFrames:
    """Places frames outside the URDF in the chain's base frame through TF.

    The listener is made only when the first target names such a frame (targets in the base
    frame or a link of the URDF never need TF): until then the node does not subscribe to
    ``/tf`` and ``/tf_static``, which on a real robot carry the whole TF stream. The listener's
    subscriptions are spun in a thread of their own, by an executor of the node's own context
    (tf2_ros's ``spin_thread`` makes one of the default context, which fails for a node of
    another): a lookup waits up to ``tf_timeout`` while that thread keeps the buffer filling,
    which the node's own executor could not while it runs the waiting callback.

    Until :data:`TF_WARM_UP_S` after the listener is made, a lookup that fails returns
    :class:`~ik_node.ros.inputs.targets.TfWarmingUp` instead of raising :class:`TargetError`: the
    buffer stays empty until DDS has matched the new subscriptions with the TF publishers, and
    the node keeps such a target and tries it again (without blocking its executor) instead of
    refusing a transform that is being published.

    :meth:`close` stops that thread and drops the subscriptions before the node is destroyed and
    the context shut down (tf2_ros releases without ros2/geometry2 #930 end their own thread
    there with an ``ExternalShutdownException`` traceback).

    Without tf2_ros (a pip install) every lookup is refused with a message saying so.
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self._buffer = self._listener = None
        self._made_at = -math.inf
        self._executor = self._thread = None
        self._lock = threading.Lock()
        try:
            import tf2_ros
        except ImportError:
            self._tf2 = None
            return
        self._tf2 = tf2_ros

    @property
    def available(self) -> bool:
        """True where tf2_ros can be imported."""
        return self._tf2 is not None

    @property
    def listening(self) -> bool:
        """True once a listener exists (a target named a frame outside the URDF)."""
        return self._listener is not None

    def _buffer_listening(self):
        """The buffer, its listener made on first use."""
        with self._lock:
            if self._buffer is None:
                from rclpy.executors import SingleThreadedExecutor
                buffer = self._tf2.Buffer()
                self._listener = self._tf2.TransformListener(buffer, self._node,
                                                             spin_thread=False)
                executor = SingleThreadedExecutor(context=self._node.context)
                executor.add_node(self._node)
                self._thread = threading.Thread(target=_spin_until_shutdown, args=(executor,),
                                                name='ik_node_tf', daemon=True)
                self._executor = executor
                self._thread.start()
                self._buffer = buffer
                self._made_at = time.monotonic()
            return self._buffer

    def close(self) -> None:
        """Stop the listener's thread and drop its subscriptions (before the node is destroyed
        and the context shut down); a lookup after this makes a new listener."""
        with self._lock:
            listener, self._listener, self._buffer = self._listener, None, None
            executor, thread = self._executor, self._thread
            self._executor = self._thread = None
        if listener is None:
            return
        if executor is not None:
            executor.shutdown()
        if thread is not None:
            thread.join(timeout=5.0)
        listener.unregister()

    def lookup(self, base_frame: str, frame: str, stamp: Tuple[int, int],
               timeout_s: float) -> Union[np.ndarray, TfWarmingUp]:
        """``T_base_frame`` (4x4) at ``stamp`` (the latest transform for a zero stamp), or
        :class:`~ik_node.ros.inputs.targets.TfWarmingUp` when there is no transform yet within
        :data:`TF_WARM_UP_S` of the listener's start.

        Raises:
            TargetError: tf2_ros missing, a frame TF does not know, no transform in time.
        """
        if self._tf2 is None:
            raise TargetError(f'target frame {frame!r} is not a link of the URDF, and frames '
                              'outside the URDF need tf2_ros (source a ROS 2 install); send the '
                              'target in a link frame of the URDF')
        buffer = self._buffer_listening()
        when = Time() if stamp == (0, 0) else Time(seconds=stamp[0], nanoseconds=stamp[1])
        from rclpy.duration import Duration
        try:
            tf = buffer.lookup_transform(base_frame, frame, when,
                                         timeout=Duration(seconds=timeout_s))
        except Exception as exc:  # tf2 raises LookupException, ExtrapolationException, ...
            message = (f'no TF transform from {frame!r} to {base_frame!r} at '
                       f'{stamp_text(stamp)}: {type(exc).__name__}: '
                       f'{" ".join(str(exc).split())}')
            if time.monotonic() < self._made_at + TF_WARM_UP_S:
                return TfWarmingUp(message)
            raise TargetError(message) from None
        t, r = tf.transform.translation, tf.transform.rotation
        T = np.eye(4)
        T[:3, :3] = rotation_from_quat_xyzw([r.x, r.y, r.z, r.w])
        T[:3, 3] = [t.x, t.y, t.z]
        if not np.all(np.isfinite(T)):
            raise TargetError(f'the TF transform from {frame!r} to {base_frame!r} is not finite')
        return T
