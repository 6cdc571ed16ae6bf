"""Kinematic chains and trees read from URDF: forward kinematics and geometric Jacobians.

Imports numpy and transforms3d only (urdf_parser_py parses the XML). A :class:`Chain` holds the
moving joints between a base link and one or more tip links, in depth-first order from the base;
fixed joints are folded into the constant transforms. A serial chain is the one-tip case.

Conventions: transforms are 4x4 homogeneous matrices named ``T_<to>_<from>`` (``T_base_tip``
maps tip coordinates into the base frame); lengths are metres, angles radians; quaternions in
the public API are ``(x, y, z, w)`` as in ROS messages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import transforms3d

from ik_node import urdf_checks
from ik_node.errors import ChainError
from ik_node.fast_kinematics import SerialKinematics
from ik_node.urdf_checks import DEFAULT_MAX_DESCRIPTION_BYTES

MOVING_JOINT_TYPES = ('revolute', 'continuous', 'prismatic')
_AXIS_EPS = 1e-9
TWO_PI = 2.0 * math.pi


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


def quat_wxyz_from_xyzw(quat_xyzw: Sequence[float]) -> np.ndarray:
    """Reorder a ROS quaternion ``(x, y, z, w)`` into transforms3d's ``(w, x, y, z)``."""
    x, y, z, w = quat_xyzw
    return np.array([w, x, y, z], dtype=float)


def rotation_from_quat_xyzw(quat_xyzw: Sequence[float]) -> np.ndarray:
    """3x3 rotation matrix of a unit ROS quaternion ``(x, y, z, w)``."""
    return transforms3d.quaternions.quat2mat(quat_wxyz_from_xyzw(quat_xyzw))


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _urdf_from_string(xml: str, max_bytes: int):
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


class Chain:
    """Moving joints from a base link to one or more tip links of a URDF.

    Build one with :meth:`from_urdf_file` or :meth:`from_urdf_string`. ``tip_link`` may be one
    link name (a serial chain) or a list of names (a kinematic tree with several end effectors).
    """

    def __init__(self, joints: Sequence[Joint], tips: Sequence[Tip], base_link: str,
                 robot=None):
        self.joints: Tuple[Joint, ...] = tuple(joints)
        self.tips: Tuple[Tip, ...] = tuple(tips)
        self.base_link = base_link
        self._robot = robot
        n = len(self.joints)
        self.n = n
        self.joint_names: List[str] = [j.name for j in self.joints]
        self.tip_links: List[str] = [t.link for t in self.tips]
        self.tip_link: str = self.tip_links[0]
        self.lower = np.array([j.lower for j in self.joints], dtype=float)
        self.upper = np.array([j.upper for j in self.joints], dtype=float)
        self.parents = np.array([j.parent for j in self.joints], dtype=int)
        self.is_serial = all(p == i - 1 for i, p in enumerate(self.parents))
        self._prismatic = np.array([j.is_prismatic for j in self.joints], dtype=bool)
        self._axes = np.array([j.axis for j in self.joints], dtype=float).reshape(n, 3)
        self._T_parent = np.array([j.T_parent_joint for j in self.joints]).reshape(n, 4, 4)
        # Rodrigues terms per joint, precomputed: R(q) = I cos q + K sin q + a a^T (1 - cos q).
        self._K = np.array([_skew(a) for a in self._axes]).reshape(n, 3, 3)
        self._aaT = np.einsum('ni,nj->nij', self._axes, self._axes)
        self._tip_index = {t.link: k for k, t in enumerate(self.tips)}
        # ancestors[k]: the joints that move tip k, in order from the base.
        self._tip_joints = [np.array(self._ancestors(t.parent), dtype=int) for t in self.tips]
        self._fast: Optional[SerialKinematics] = None
        self._fast_built = False

    # ----------------------------------------------------------------------------- building
    @classmethod
    def from_urdf_file(cls, path: Union[str, Path], base_link: str,
                       tip_link: Union[str, Sequence[str]],
                       max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES) -> 'Chain':
        """Read a chain from a URDF file (see :meth:`from_urdf_string`)."""
        try:
            xml = urdf_checks.read_description(path, max_bytes)
        except OSError as exc:
            raise ChainError(f'cannot read URDF file {str(path)!r}: {exc.strerror}') from exc
        return cls.from_urdf_string(xml, base_link, tip_link, max_bytes)

    @classmethod
    def from_urdf_string(cls, xml: str, base_link: str, tip_link: Union[str, Sequence[str]],
                         max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES) -> 'Chain':
        """Read the chain from ``base_link`` to ``tip_link`` (one name or a list) out of URDF XML.

        The whole URDF is checked first (:mod:`ik_node.urdf_checks`); ``max_bytes`` caps the
        size of ``xml`` [bytes].

        Raises:
            ChainError: a description over ``max_bytes``, malformed XML, a URDF that is not one
                valid tree (loops, several roots, repeated names, joints naming missing links,
                bad numbers; see :mod:`ik_node.urdf_checks`), unknown links, no path from base
                to a tip, a floating, planar or mimic joint on the path, too many joints.
        """
        robot = _urdf_from_string(xml, max_bytes)
        tip_links = [tip_link] if isinstance(tip_link, str) else list(tip_link)
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
                T_origin = _origin(uj)
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
        return cls(joints, tips, base_link, robot)

    # ------------------------------------------------------------------------------ queries
    @property
    def robot(self):
        """The parsed URDF (urdf_parser_py ``Robot``) the chain was read from, or None."""
        return self._robot

    def mid_configuration(self) -> np.ndarray:
        """The middle of every joint's range (0 for continuous joints) [rad or m]."""
        finite = np.isfinite(self.lower) & np.isfinite(self.upper)
        return np.where(finite, 0.5 * (np.where(finite, self.lower, 0.0) +
                                       np.where(finite, self.upper, 0.0)), 0.0)

    def clip(self, q: np.ndarray) -> np.ndarray:
        """``q`` clipped into the joint limits."""
        return np.minimum(np.maximum(q, self.lower), self.upper)

    def within_limits(self, q: np.ndarray, tol: float = 1e-9) -> bool:
        """True if every joint of ``q`` is inside its limits (to ``tol``)."""
        q = np.asarray(q, dtype=float)
        return bool(np.all(q >= self.lower - tol) and np.all(q <= self.upper + tol))

    def tip_index(self, tip: Optional[str]) -> int:
        """Index of a tip link (``None``: the first tip)."""
        if tip is None:
            return 0
        try:
            return self._tip_index[tip]
        except KeyError:
            raise ChainError(f'{tip!r} is not a tip of this chain. '
                             f'Tips: {", ".join(self.tip_links)}') from None

    def joints_of_tip(self, tip: Optional[str] = None) -> List[int]:
        """Indices of the joints that move ``tip``, from the base outwards."""
        return self._tip_joints[self.tip_index(tip)].tolist()

    def local_transforms(self, q: np.ndarray) -> np.ndarray:
        """Per-joint transforms ``T_parent_joint @ motion(q_i)``, shape ``(..., n, 4, 4)``."""
        q = np.asarray(q, dtype=float)
        c, s = np.cos(q)[..., None, None], np.sin(q)[..., None, None]
        R = c * np.eye(3) + s * self._K + (1.0 - c) * self._aaT
        pris = self._prismatic
        if pris.any():
            R = np.where(pris[:, None, None], np.eye(3), R)
        M = np.zeros(q.shape + (4, 4))
        M[..., :3, :3] = R
        M[..., 3, 3] = 1.0
        if pris.any():
            M[..., :3, 3] = np.where(pris[:, None], self._axes * q[..., None], 0.0)
        return self._T_parent @ M

    def joint_frames(self, q: np.ndarray) -> np.ndarray:
        """World (base-frame) transform of every joint after its motion, ``(..., n, 4, 4)``.

        The origin of frame i is joint i's position; its rotation maps the joint's axis.
        Accepts a batch ``q`` of shape ``(..., n)``.
        """
        q = np.asarray(q, dtype=float)
        if q.shape[-1:] != (self.n,):
            raise ValueError(f'q has shape {q.shape}; expected (..., {self.n})')
        local = self.local_transforms(q)
        frames = np.empty_like(local)
        for i, p in enumerate(self.parents):
            frames[..., i, :, :] = local[..., i, :, :] if p < 0 else \
                frames[..., p, :, :] @ local[..., i, :, :]
        return frames

    @property
    def fast_kinematics(self) -> Optional[SerialKinematics]:
        """Generated pure-Python FK/Jacobian of a serial one-tip chain (None for trees).

        Built on first use. Its functions take a list of floats and return tuples; see
        :class:`ik_node.fast_kinematics.SerialKinematics`.
        """
        if not self._fast_built:
            self._fast_built = True
            if self.is_serial and len(self.tips) == 1 and self.n > 0 and \
                    self.tips[0].parent == self.n - 1:
                self._fast = SerialKinematics(self)
        return self._fast

    def _fast_q(self, q, tip: Optional[str]) -> Optional[List[float]]:
        """``q`` as a list of floats when the serial fast path applies (one finite config)."""
        fast = self.fast_kinematics
        if fast is None or (tip is not None and tip != self.tip_link):
            return None
        q = np.asarray(q, dtype=float)
        if q.shape != (self.n,):
            return None
        return q.tolist()

    def fk(self, q: np.ndarray, tip: Optional[str] = None) -> np.ndarray:
        """Transform of a tip link in the base frame (``T_base_tip``), 4x4 (batched on ``q``)."""
        q_list = self._fast_q(q, tip)
        if q_list is not None:
            try:
                p, R = self._fast.pose(q_list)
            except ValueError:  # math.cos(inf): let numpy give its NaN result
                pass
            else:
                return np.array([[R[0], R[1], R[2], p[0]], [R[3], R[4], R[5], p[1]],
                                 [R[6], R[7], R[8], p[2]], [0.0, 0.0, 0.0, 1.0]])
        return self._tip_from_frames(self.joint_frames(q), self.tip_index(tip))

    def fk_tips(self, q: np.ndarray) -> Dict[str, np.ndarray]:
        """``T_base_tip`` of every tip, keyed by tip link name."""
        frames = self.joint_frames(q)
        return {t.link: self._tip_from_frames(frames, k) for k, t in enumerate(self.tips)}

    def jacobian(self, q: np.ndarray, tip: Optional[str] = None) -> np.ndarray:
        """Geometric Jacobian of a tip, 6 x n: rows 0-2 linear [m/unit], rows 3-5 angular.

        Joints that do not move the tip have zero columns.
        """
        q_list = self._fast_q(q, tip)
        if q_list is not None:
            try:
                return np.array(self._fast.pose_jacobian(q_list)[2])
            except ValueError:  # math.cos(inf): let numpy give its NaN result
                pass
        frames = self.joint_frames(q)
        k = self.tip_index(tip)
        return self.jacobian_from_frames(frames, self._tip_from_frames(frames, k)[:3, 3], k)

    def jacobian_from_frames(self, frames: np.ndarray, p_tip: np.ndarray,
                             tip_index: int = 0) -> np.ndarray:
        """The Jacobian of :meth:`jacobian` from already computed joint frames and tip position."""
        J = np.zeros((6, self.n))
        idx = self._tip_joints[tip_index]
        if idx.size == 0:
            return J
        z = np.einsum('nij,nj->ni', frames[idx, :3, :3], self._axes[idx])
        p = frames[idx, :3, 3]
        pris = self._prismatic[idx]
        lin = np.where(pris[:, None], z, np.cross(z, p_tip - p))
        J[:3, idx] = lin.T
        J[3:, idx] = np.where(pris[:, None], 0.0, z).T
        return J

    def link_transform(self, link: str, q: np.ndarray) -> np.ndarray:
        """``T_base_link`` of any link of the URDF at configuration ``q``.

        Joints of the chain take their value from ``q``; every other joint of the URDF is at 0.
        Used to express targets given in another frame of the robot.
        """
        if self._robot is None:
            raise ChainError('this chain was not built from a URDF')
        links = [lk.name for lk in self._robot.links]
        if link not in links:
            raise ChainError(f'frame {link!r} is not a link of the URDF. '
                             f'Available links: {", ".join(links)}')
        values = dict(zip(self.joint_names, np.asarray(q, dtype=float), strict=False))
        return np.linalg.inv(self._T_root_link(self.base_link, values)) @ \
            self._T_root_link(link, values)

    # ------------------------------------------------------------------------------ helpers
    def _ancestors(self, index: int) -> Tuple[int, ...]:
        out = []
        while index >= 0:
            out.append(index)
            index = int(self.parents[index])
        return tuple(out[::-1])

    def _tip_from_frames(self, frames: np.ndarray, k: int) -> np.ndarray:
        tip = self.tips[k]
        if tip.parent < 0:
            return np.broadcast_to(tip.T_joint_tip, frames.shape[:-3] + (4, 4)).copy()
        return frames[..., tip.parent, :, :] @ tip.T_joint_tip

    def _T_root_link(self, link: str, values: Dict[str, float]) -> np.ndarray:
        parent_joint = {j.child: j for j in self._robot.joints}
        T = np.eye(4)
        while link in parent_joint:
            uj = parent_joint[link]
            T = _origin(uj) @ _motion(uj, values.get(uj.name, 0.0)) @ T
            link = uj.parent
        return T

    def __repr__(self) -> str:
        return (f'Chain(base_link={self.base_link!r}, tip_links={self.tip_links!r}, '
                f'joints={self.joint_names!r})')


# ------------------------------------------------------------------------- URDF joint helpers
def _origin(uj) -> np.ndarray:
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


def _motion(uj, value: float) -> np.ndarray:
    T = np.eye(4)
    if uj.type in ('revolute', 'continuous'):
        T[:3, :3] = transforms3d.axangles.axangle2mat(_axis(uj), value)
    elif uj.type == 'prismatic':
        T[:3, 3] = _axis(uj) * value
    return T


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


def chain_lengths(chain: Chain, tip: Optional[str] = None) -> Iterable[float]:
    """Distances between consecutive joint origins and from the last joint to the tip [m], at q=0.

    For a revolute-only chain these "bone" lengths do not depend on q.
    """
    q0 = np.zeros(chain.n)
    frames = chain.joint_frames(q0)
    idx = chain.joints_of_tip(tip)
    points = [frames[i, :3, 3] for i in idx] + [chain.fk(q0, tip)[:3, 3]]
    return [float(np.linalg.norm(b - a)) for a, b in zip(points[:-1], points[1:], strict=True)]


def full_turn_joints(chain: Chain) -> Tuple[int, ...]:
    """Indices of the joints that can take one angle at two or more values within their limits.

    These are the continuous joints and the revolute joints whose range spans a full turn or
    more (``upper - lower >= 2 pi``, UR5's +-2 pi); prismatic joints never are.
    """
    return tuple(i for i, j in enumerate(chain.joints)
                 if not j.is_prismatic and j.upper - j.lower >= TWO_PI)


def nearest_turns(q: Sequence[float], q_seed: Sequence[float], lower: Sequence[float],
                  upper: Sequence[float], joints: Iterable[int]) -> List[float]:
    """``q`` with each joint in ``joints`` moved by whole turns to the value nearest its seed.

    Of the values ``q[i] + 2 pi k`` within ``[lower[i], upper[i]]`` (``q[i]`` itself is, so
    there always is one), joint ``i`` takes the one nearest ``q_seed[i]``; the others keep
    ``q[i]``. The pose is the same: only whole turns are added. Plain floats, for speed: this
    runs after every solve.

    Args:
        q: joint values [rad or m] within the limits, finite.
        q_seed: the values to stay near [rad or m], finite.
        lower: lower limits (``-inf`` for continuous joints).
        upper: upper limits (``+inf`` for continuous joints).
        joints: indices of revolute/continuous joints (see :func:`full_turn_joints`).

    Returns:
        A new list of floats.
    """
    out = list(q)
    for i in joints:
        v = out[i]
        d = q_seed[i] - v
        if -math.pi <= d <= math.pi:  # the common case: already the nearest
            continue
        lo, hi = lower[i], upper[i]
        # The distance to the seed grows with |k - round(d / 2 pi)|, and the k whose value is
        # within the limits form a run that holds 0: the first k in range on the way from
        # round(d / 2 pi) to 0 gives the nearest value in range.
        k = round(d / TWO_PI)
        while k:
            candidate = v + k * TWO_PI
            if lo <= candidate <= hi:
                out[i] = candidate
                break
            k += 1 if k < 0 else -1
    return out
