"""What flows into the node, one module each: the target topics (``target_subscriptions``, their
messages read from the bytes by ``target_cdr`` and turned into ``targets``), the newest pending
target of each tip (``latest_targets``), when a kept message is handed on or skipped
(``target_flow``, the flow policy), the measured joint state (``measured_state``), the robot
description topic (``description``) and TF (``tf_frames``); ``node_inputs`` holds them together
for the node. Nothing here solves or publishes.
"""
