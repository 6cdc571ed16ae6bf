"""What ``ik-solve chains`` suggests: the links a user would pick, by their names and places.

A robot description names many links that are no end effector: wheels, casters and motor
rotors (Go1's ``FR_calf_rotor``), cameras and sensors, visual-only links hanging off a limb.
:func:`robot_base` skips a world stub at the root (``world -> base_link`` on a UR);
:func:`end_effector_leaves` keeps the end links worth solving for: no accessory, not a side
link whose moving joints a longer limb continues (a rotor on the thigh), one per last moving
joint (a tool frame before a camera on the same flange), no finger where the hand or gripper
itself is an end link. :func:`serial_pick` ranks them by their names (a TCP or tool frame
first, then a flange, an end effector, a gripper, a hand, a foot); :func:`tree_tips` takes the
feet, hands (and fingers beyond a hand that is no end link) when there are two or more.

Names are compared by tokens: ``FR_calf_rotor`` -> ``fr, calf, rotor``, ``ultraSound_left`` ->
``ultra, sound, left``; trailing digits are dropped (``tool0`` -> ``tool``).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

#: Tokens of links that are never an end effector to solve for.
ACCESSORY_TOKENS = frozenset((
    'wheel', 'caster', 'castor', 'rotor', 'propeller', 'prop', 'camera', 'cam', 'laser',
    'lidar', 'imu', 'sonar', 'ultrasound', 'ultra', 'sound', 'optical', 'sensor', 'range',
    'accelerometer', 'display', 'visual', 'collision', 'itb', 'kinect', 'rgb', 'depth', 'gps',
    'antenna', 'led', 'light', 'button', 'screen', 'bumper', 'microphone', 'speaker'))
#: End-effector tokens, best first (a rank per group).
END_EFFECTOR_RANKS = (('tcp',), ('tool',), ('flange',), ('end', 'effector', 'eef', 'ee'),
                      ('gripper', 'grasp'), ('hand', 'palm'), ('foot', 'feet', 'toe'))
#: Tokens of the limb ends a tree is made of.
LIMB_END_TOKENS = frozenset(('hand', 'palm', 'gripper', 'foot', 'feet', 'toe', 'tcp', 'tool',
                             'flange', 'eef', 'ee', 'effector'))
FINGER_TOKENS = frozenset(('finger', 'thumb'))
#: Words also found inside a token (``panda_leftfinger``, ``frontwheel``).
WITHIN_TOKENS = frozenset(('wheel', 'caster', 'castor', 'rotor', 'propeller', 'camera',
                           'finger', 'thumb'))
#: Root links that stand for the world, not the robot.
WORLD_STUBS = frozenset(('world', 'map', 'odom', 'earth'))

#: A leaf: (link name, its moving joints from the root).
Leaf = Tuple[str, Tuple[str, ...]]


def name_tokens(name: str) -> List[str]:
    """Lower-case tokens of a link name, camelCase split, trailing digits dropped."""
    spaced = re.sub(r'([a-z0-9])([A-Z])', r'\1_\2', name)
    tokens = [t.rstrip('0123456789') for t in re.split(r'[^A-Za-z0-9]+', spaced.lower())]
    return [t for t in tokens if t]


def has_token(name: str, words) -> bool:
    """True when a token of ``name`` is one of ``words``, or contains one of ``WITHIN_TOKENS``
    among them (``leftfinger``, ``frontwheel``)."""
    inside = WITHIN_TOKENS.intersection(words)
    return any(t in words or any(w in t for w in inside) for t in name_tokens(name))


def is_accessory(name: str) -> bool:
    """True for a wheel, caster, rotor, camera, sensor or visual-only link."""
    return has_token(name, ACCESSORY_TOKENS)


def end_effector_rank(name: str) -> int:
    """0 for the best end-effector name (a TCP), rising; ``len(END_EFFECTOR_RANKS)`` for none."""
    tokens = set(name_tokens(name))
    for rank, group in enumerate(END_EFFECTOR_RANKS):
        if tokens.intersection(group):
            return rank
    return len(END_EFFECTOR_RANKS)


def robot_base(root: str, children: Dict[str, List[Tuple[str, str]]]) -> str:
    """The robot's base link: ``root``, or below it while the root is a world stub (``world``,
    ``map``, ``odom``) with one child fixed to it. ``children``: link -> [(child, joint type)]."""
    link = root
    while set(name_tokens(link)) & WORLD_STUBS and len(children.get(link, [])) == 1 and \
            children[link][0][1] == 'fixed':
        link = children[link][0][0]
    return link


def end_effector_leaves(leaves: Sequence[Leaf]) -> List[Leaf]:
    """The end links worth solving for, in the order of ``leaves`` (module docstring)."""
    moving = [(name, joints) for name, joints in leaves if joints and not is_accessory(name)]

    def continued(joints) -> bool:  # a strict prefix of another candidate's joints
        return any(len(other) > len(joints) and other[:len(joints)] == joints
                   for _, other in moving)
    kept = [(name, joints) for name, joints in moving
            if end_effector_rank(name) < len(END_EFFECTOR_RANKS) or not continued(joints)]
    # A finger beyond a hand or gripper that is an end link itself: the hand is the pick.
    ends = [joints for name, joints in kept if end_effector_rank(name) < len(END_EFFECTOR_RANKS)
            and not has_token(name, FINGER_TOKENS)]
    kept = [(name, joints) for name, joints in kept
            if not (has_token(name, FINGER_TOKENS) and
                    any(len(j) < len(joints) and joints[:len(j)] == j for j in ends))]
    best: Dict[str, Leaf] = {}  # per last moving joint, the best-named end link
    for name, joints in kept:
        held = best.get(joints[-1])
        if held is None or end_effector_rank(name) < end_effector_rank(held[0]):
            best[joints[-1]] = (name, joints)
    chosen = set(best.values())
    return [leaf for leaf in kept if leaf in chosen]


def serial_pick(candidates: Sequence[Tuple[str, Tuple[str, ...], bool]]) -> Optional[str]:
    """The end link to suggest for a serial chain: among ``(name, joints, has_prismatic)`` of
    chains that some solver fits, the best end-effector name, then no prismatic joint, then the
    most joints; the first on ties. None when there is none."""
    if not candidates:
        return None
    return min(enumerate(candidates), key=lambda item: (
        end_effector_rank(item[1][0]), item[1][2], -len(item[1][1]), item[0]))[1][0]


def tree_tips(leaves: Sequence[Leaf]) -> List[str]:
    """The tips of the tree to suggest: the feet, hands, tools and fingers among ``leaves``
    (already :func:`end_effector_leaves`) when two or more, else none (a head beside one arm
    is no tree to solve)."""
    limbs = [name for name, _ in leaves if has_token(name, LIMB_END_TOKENS | FINGER_TOKENS)]
    return limbs if len(limbs) >= 2 else []
