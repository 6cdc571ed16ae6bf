"""What flows into the node, as one object: targets, the measured joint state, the robot
description, TF.

:class:`NodeInputs` follows the configuration in force (which topics, which tips) and answers
the solve's questions (the seed, a frame outside the URDF). Each part owns its subscriptions on
the node it is given and hands plain values to callbacks; none of them solves anything.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
from rclpy.node import Node

from ik_node.config.ros_graph import GraphConfig
from ik_node.model.chain import Chain
from ik_node.ros.inputs.description import DescriptionListener
from ik_node.ros.inputs.measured_state import MeasuredState
from ik_node.ros.inputs.target_subscriptions import TargetSubscriptions
from ik_node.ros.inputs.targets import FrameLookup
from ik_node.ros.inputs.tf_frames import TfFrames


class NodeInputs:
    """Everything the node reads: target topics, measured state, robot description topic, TF.

    Args:
        node: the node owning the subscriptions.
        on_target: called with the :class:`~ik_node.ros.inputs.targets.Target` s of every target
            message received (one, or every tip's from ``~/target_poses``).
        on_description: called with the URDF XML of every ``robot_description`` message.
        callback_group: of the target subscriptions (reentrant: a target may be taken while
            another callback solves).
        on_error: ``on_error(message, frame_id, stamp_text)`` for a target message refused
            whole on arrival.
        wake, on_skipped: as :class:`TargetSubscriptions` takes them (with ``wake``, target
            messages are kept serialized until :attr:`target_messages` drains them).
    """

    def __init__(self, node: Node, on_target: Callable[..., None],
                 on_description: Callable[[str], None], callback_group=None,
                 on_error: Optional[Callable[[str, str, str], None]] = None,
                 wake: Optional[Callable[[], None]] = None,
                 on_skipped: Optional[Callable[[int], None]] = None) -> None:
        self._node, self._on_description = node, on_description
        self._targets = TargetSubscriptions(node, on_target, callback_group, on_error, wake,
                                            on_skipped)
        self._tips: Optional[Tuple[Optional[str], ...]] = None
        self._tip_links: Tuple[str, ...] = ()
        self._tf = TfFrames(node)
        self._state: Optional[MeasuredState] = None
        self._description: Optional[DescriptionListener] = None
        self._state_timeout_s = 0.0
        self._tf_timeout_s = 0.0
        self._lookup: Optional[tuple] = None  # (base frame, timeout, the lookup) made last

    def follow(self, graph: GraphConfig, has_model: bool) -> None:
        """Create, replace or drop the measured-state and description subscriptions as
        ``graph`` says; the description topic is read only while the parameters give no model
        (``has_model`` False)."""
        self._state_timeout_s, self._tf_timeout_s = graph.state_timeout, graph.tf_timeout
        have_state = self._state.topic if self._state is not None else ''
        if graph.state_topic != have_state:
            if self._state is not None:
                self._state.destroy()
            self._state = MeasuredState(self._node, graph.state_topic) \
                if graph.state_topic else None
        want_topic = '' if has_model else graph.description_topic
        if want_topic != self.description_topic:
            if self._description is not None:
                self._description.destroy()
            self._description = DescriptionListener(self._node, want_topic,
                                                    self._on_description) \
                if want_topic else None

    def subscribe_targets(self, tips: Sequence[str], branched: bool) -> None:
        """Target subscriptions for the tips (one set per tip for a branched chain, else the
        chain's one set); kept when the tips do not change."""
        wanted = tuple(tips) if branched else (None,)
        if wanted != self._tips or tuple(tips) != self._tip_links:
            self._targets.make(wanted, tips)
            self._tips, self._tip_links = wanted, tuple(tips)

    @property
    def target_messages(self) -> TargetSubscriptions:
        """The target subscriptions, whose kept messages the node drains (the same object for
        the node's life; its subscriptions follow :meth:`subscribe_targets`)."""
        return self._targets

    @property
    def target_topics(self) -> List[str]:
        """The topics targets are read from."""
        return self._targets.topics

    @property
    def description_topic(self) -> str:
        """The topic the robot description is read from ('' when not read)."""
        return self._description.topic if self._description is not None else ''

    def measured(self, chain: Chain) -> Tuple[Optional[np.ndarray], str]:
        """``(q, note)``: the measured joint positions of ``chain`` clipped into its limits, or
        None with the reason the last solution seeds instead."""
        if self._state is None:
            return None, 'last solution'
        q, note = self._state.seed(chain.joint_names, self._state_timeout_s)
        return (None, f'last solution ({note})') if q is None else (chain.clip(q), note)

    @property
    def tf_listening(self) -> bool:
        """True once the TF listener exists (a target named a frame outside the URDF)."""
        return self._tf.listening

    def close(self) -> None:
        """Stop what runs beside the node's executor (the TF listener's thread): call before the
        node is destroyed."""
        self._tf.close()

    def frame_lookup(self, base_frame: str) -> Optional[FrameLookup]:
        """``lookup(frame, stamp) -> T_base_frame`` (or ``TfWarmingUp``)
        through TF, None without tf2_ros."""
        if not self._tf.available:
            return None
        made = self._lookup
        if made is None or made[0] != base_frame or made[1] != self._tf_timeout_s:
            tf, timeout_s = self._tf, self._tf_timeout_s
            made = self._lookup = (base_frame, timeout_s, lambda frame, stamp: tf.lookup(
                base_frame, frame, stamp, timeout_s))
        return made[2]
