"""URDF -> the parts of a :class:`~ik_node.model.chain.Chain`: its moving joints and its tips.

Reading a chain is: parse and check the whole URDF (:mod:`ik_node.model.urdf_checks`), walk up from
each tip link to the base link, fold fixed joints into the constant transforms, share the trunk
of a tree between its tips, and order the joints depth-first from the base.
:meth:`Chain.from_urdf_string <ik_node.model.chain.Chain.from_urdf_string>` and
:meth:`~ik_node.model.chain.Chain.from_urdf_file` are the public entry points; they build the chain
from what this module reads.

Imports numpy and transforms3d only (urdf_parser_py parses the XML). Lengths are metres, angles
radians.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

import numpy as np
import transforms3d

from ik_node.model import urdf_checks
from ik_node.errors import ChainError, ConfigError
from ik_node.model.joint_motion import JointMotions
from ik_node.model.urdf_checks import DEFAULT_MAX_DESCRIPTION_BYTES

MOVING_JOINT_TYPES = ('revolute', 'continuous', 'prismatic')
_AXIS_EPS = 1e-9


@dataclass(frozen=True)
class Joint:
    """One moving joint of a chain.

    Attributes:
        name: URDF joint name.
        type: ``'revolute'``, ``'continuous'`` or ``'prismatic'``.
        axis: unit axis in the joint frame.
        T_parent_joint: constant transform from the parent joint's moved frame (or the base
            frame) to this joint's frame at q = 0, with fixed joints in between folded in.
        parent: index of the parent moving joint, -1 for the base.
        child_link: the URDF link this joint moves.
        lower: lower limit [rad or m] (``-inf`` for continuous joints).
        upper: upper limit [rad or m] (``+inf`` for continuous joints).
    """

    name: str
    type: str
    axis: np.ndarray
    T_parent_joint: np.ndarray
    parent: int
    child_link: str
    lower: float
    upper: float

    @property
    def is_prismatic(self) -> bool:
        """True for a prismatic joint."""
        return self.type == 'prismatic'


@dataclass(frozen=True)
class Tip:
    """A tip link: the moving joint it hangs from and the constant offset to it."""

    link: str
    parent: int
    T_joint_tip: np.ndarray


def transform_from_xyz_rpy(xyz: Sequence[float], rpy: Sequence[float]) -> np.ndarray:
    """4x4 transform of a URDF ``<origin xyz rpy>`` (fixed-axis roll, pitch, yaw)."""
    T = np.eye(4)
    T[:3, :3] = transforms3d.euler.euler2mat(*rpy, axes='sxyz')
    T[:3, 3] = xyz
    return T


# ----------------------------------------------------------------------------- reading
def _urdf_from_string(xml: str, max_bytes: int = urdf_checks.DEFAULT_MAX_DESCRIPTION_BYTES):
    # urdf_parser_py prints warnings for unknown tags on stderr; parse errors raise.
    from urdf_parser_py.urdf import URDF  # local import keeps module import light
    import contextlib
    import io

    if not isinstance(xml, str) or not xml.strip():
        raise ChainError('URDF is empty: expected the XML text of a <robot>')
    urdf_checks.check_description_size(xml, max_bytes)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            robot = URDF.from_xml_string(xml)
    except Exception as exc:  # lxml/xml errors, urdf_parser_py assertion errors
        raise ChainError(f'malformed URDF XML: {exc}') from exc
    urdf_checks.check_robot(robot)
    return robot


def urdf_xml_from_file(path: Union[str, Path],
                       max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES,
                       xacro_args=None) -> str:
    """The URDF text of a file, or of a bare name of a packaged robot; a .xacro one expanded
    with ``xacro_args`` (see :func:`ik_node.model.description.xacro_mappings_from`).

    Raises:
        ChainError: the file is not found, cannot be read, is larger than ``max_bytes``, or its
            xacro expansion fails; xacro arguments for a file that is not xacro.
    """
    from ik_node.model.description import description_from_file
    from ik_node.model.resources import urdf_path
    try:
        path = urdf_path(path)
    except ConfigError as exc:
        raise ChainError(str(exc)) from None
    if str(path).endswith('.xacro') or xacro_args:
        try:
            return description_from_file(path, xacro_args)
        except ConfigError as exc:
            raise ChainError(str(exc)) from None
    try:
        return urdf_checks.read_description(path, max_bytes)
    except OSError as exc:
        raise ChainError(f'cannot read URDF file {str(path)!r}: {exc.strerror}') from exc


def chain_parts_from_xml(xml: str, base_link: str, tip_links: Sequence[str],
                         max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES
                         ) -> Tuple[List[Joint], List[Tip], object]:
    """The joints and tips from ``base_link`` to ``tip_links`` out of URDF XML, and the robot.

    Joints are in depth-first order from the base (a serial chain: base to tip). Raises what
    :meth:`ik_node.model.chain.Chain.from_urdf_string` documents.

    Returns:
        ``(joints, tips, robot)``, ``robot`` the parsed urdf_parser_py ``Robot``.
    """
    robot = _urdf_from_string(xml, max_bytes)
    urdf_checks.check_chain_ends([link.name for link in robot.links], base_link, tip_links)
    parent_joint = {j.child: j for j in robot.joints}

    # The URDF joints from the base to each tip, found by walking up from the tip.
    paths = []
    for tip in tip_links:
        path, link = [], tip
        while link != base_link:
            joint = parent_joint.get(link)
            if joint is None:
                raise ChainError(f'no path from base link {base_link!r} to tip link '
                                 f'{tip!r}: {base_link!r} is not an ancestor of {tip!r}')
            path.append(joint)
            link = joint.parent
        paths.append(path[::-1])
    urdf_checks.check_chain_size(paths)

    joints: List[Joint] = []
    index_of: Dict[str, int] = {}  # URDF joint name -> moving joint index
    tips: List[Tip] = []
    for tip, path in zip(tip_links, paths, strict=True):
        parent, T_acc = -1, np.eye(4)
        for uj in path:
            T_origin = origin_transform(uj)
            if uj.name in index_of:  # shared trunk already built for an earlier tip
                parent, T_acc = index_of[uj.name], np.eye(4)
                continue
            if uj.type == 'fixed':
                T_acc = T_acc @ T_origin
                continue
            joint = _moving_joint(uj, T_acc @ T_origin, parent)
            # A fixed joint shared by two tips is folded in twice; that is the same value.
            index_of[uj.name] = len(joints)
            joints.append(joint)
            parent, T_acc = len(joints) - 1, np.eye(4)
        tips.append(Tip(tip, parent, T_acc))
    joints, tips = _depth_first(joints, tips)
    return joints, tips, robot


def T_root_link(robot, link: str, values: Dict[str, float]) -> np.ndarray:
    """Transform of ``link`` in the URDF's root frame, joints at ``values`` (missing ones: 0)."""
    parent_joint = {j.child: j for j in robot.joints}
    T = np.eye(4)
    while link in parent_joint:
        uj = parent_joint[link]
        T = origin_transform(uj) @ motion_transform(uj, values.get(uj.name, 0.0)) @ T
        link = uj.parent
    return T


# ------------------------------------------------------------------------- URDF joint helpers
def origin_transform(uj) -> np.ndarray:
    """The constant transform of a URDF joint's ``<origin>`` (identity when absent)."""
    origin = uj.origin
    xyz = origin.xyz if origin is not None and origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = origin.rpy if origin is not None and origin.rpy is not None else [0.0, 0.0, 0.0]
    return transform_from_xyz_rpy(xyz, rpy)


def _axis(uj) -> np.ndarray:
    axis = np.asarray(uj.axis if uj.axis is not None else [1.0, 0.0, 0.0], dtype=float)
    norm = float(np.linalg.norm(axis)) if axis.shape == (3,) else 0.0
    if not math.isfinite(norm) or norm < _AXIS_EPS:
        raise ChainError(f'joint {uj.name!r} has axis {axis.tolist()}: a joint axis must be a '
                         'non-zero, finite 3-vector')
    return axis / norm


def motion_transform(uj, value: float) -> np.ndarray:
    """The motion of a URDF joint at ``value`` [rad or m] (identity for other joint types):
    :class:`~ik_node.model.joint_motion.JointMotions`, as a chain's joints move."""
    if uj.type not in MOVING_JOINT_TYPES:
        return np.eye(4)
    return JointMotions(_axis(uj), [uj.type == 'prismatic'])([value])[0]


def _moving_joint(uj, T_parent_joint: np.ndarray, parent: int) -> Joint:
    if uj.type not in MOVING_JOINT_TYPES:
        raise ChainError(f'joint {uj.name!r} has type {uj.type!r}, which IK chains do not '
                         f'support. Supported: fixed, {", ".join(MOVING_JOINT_TYPES)}')
    if uj.mimic is not None:
        raise ChainError(f'joint {uj.name!r} mimics {uj.mimic.joint!r}: mimic joints on the IK '
                         'path are not supported (make it fixed, or end the chain before it)')
    if uj.type == 'continuous':
        lower, upper = -math.inf, math.inf
    else:
        if uj.limit is None:
            raise ChainError(f'{uj.type} joint {uj.name!r} has no <limit>: revolute and '
                             'prismatic joints need lower and upper limits')
        lower = float(uj.limit.lower if uj.limit.lower is not None else 0.0)
        upper = float(uj.limit.upper if uj.limit.upper is not None else 0.0)
        # finite and lower <= upper: checked for every joint by urdf_checks.check_robot
    return Joint(uj.name, uj.type, _axis(uj), T_parent_joint, parent, uj.child, lower, upper)


def _depth_first(joints: List[Joint], tips: List[Tip]) -> Tuple[List[Joint], List[Tip]]:
    """Reorder joints so every parent precedes its children and siblings' subtrees are contiguous.

    Joints were appended tip by tip, which is already parent-before-child; this keeps that order
    stable and remaps indices, so a serial chain keeps the identity order.
    """
    children: Dict[int, List[int]] = {}
    for i, j in enumerate(joints):
        children.setdefault(j.parent, []).append(i)
    order: List[int] = []

    def visit(i: int) -> None:
        order.append(i)
        for c in children.get(i, []):
            visit(c)

    for root in children.get(-1, []):
        visit(root)
    new_index = {old: new for new, old in enumerate(order)}
    new_index[-1] = -1
    new_joints = []
    for old in order:
        j = joints[old]
        new_joints.append(Joint(j.name, j.type, j.axis, j.T_parent_joint, new_index[j.parent],
                                j.child_link, j.lower, j.upper))
    new_tips = [Tip(t.link, new_index[t.parent], t.T_joint_tip) for t in tips]
    return new_joints, new_tips
