"""Kinematic chains and trees read from URDF: forward kinematics and geometric Jacobians.

Imports numpy and transforms3d only (urdf_parser_py parses the XML). A :class:`Chain` holds the
moving joints between a base link and one or more tip links, in depth-first order from the base;
fixed joints are folded into the constant transforms. A serial chain is the one-tip case.
Reading the joints and tips out of the URDF is :mod:`ik_node.model.urdf_reading` (:class:`Joint`,
:class:`Tip` and :func:`transform_from_xyz_rpy` are importable from here too).

Conventions: transforms are 4x4 homogeneous matrices named ``T_<to>_<from>`` (``T_base_tip``
maps tip coordinates into the base frame); lengths are metres, angles radians; quaternions in
the public API are ``(x, y, z, w)`` as in ROS messages.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import transforms3d

from ik_node.errors import ChainError
from ik_node.model.fast_kinematics import SerialKinematics
from ik_node.model.joint_motion import JointMotions
from ik_node.model.urdf_reading import (MOVING_JOINT_TYPES, Joint, T_root_link, Tip,
                                chain_parts_from_xml, transform_from_xyz_rpy, urdf_xml_from_file)
from ik_node.model.urdf_checks import DEFAULT_MAX_DESCRIPTION_BYTES

__all__ = [
    'Chain', 'MotionPlane', 'quat_wxyz_from_xyzw', 'rotation_from_quat_xyzw', 'chain_lengths',
    'full_turn_joints', 'nearest_turns', 'TWO_PI',
    # re-exported from ik_node.model.urdf_reading, where the URDF is read
    'Joint', 'Tip', 'MOVING_JOINT_TYPES', 'transform_from_xyz_rpy',
]

TWO_PI = 2.0 * math.pi
#: How far beyond a joint limit [rad or m] a value still counts as within it (rounding).
LIMIT_TOLERANCE = 1e-9


class MotionPlane(NamedTuple):
    """The plane ``normal . p = offset`` (base frame) a planar tip moves in."""

    normal: Tuple[float, float, float]  # unit vector
    offset: float                       # [m]


def quat_wxyz_from_xyzw(quat_xyzw: Sequence[float]) -> np.ndarray:
    """Reorder a ROS quaternion ``(x, y, z, w)`` into transforms3d's ``(w, x, y, z)``."""
    x, y, z, w = quat_xyzw
    return np.array([w, x, y, z], dtype=float)


def rotation_from_quat_xyzw(quat_xyzw: Sequence[float]) -> np.ndarray:
    """3x3 rotation matrix of a unit ROS quaternion ``(x, y, z, w)``."""
    return transforms3d.quaternions.quat2mat(quat_wxyz_from_xyzw(quat_xyzw))


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
        self._limit_lists = (self.lower.tolist(), self.upper.tolist())
        #: The limits as lists of floats, widened by the rounding :meth:`within_limits` allows.
        self.limits_with_tolerance = ([lo - LIMIT_TOLERANCE for lo in self._limit_lists[0]],
                                      [hi + LIMIT_TOLERANCE for hi in self._limit_lists[1]])
        self.parents = np.array([j.parent for j in self.joints], dtype=int)
        self.is_serial = all(p == i - 1 for i, p in enumerate(self.parents))
        self._prismatic = np.array([j.is_prismatic for j in self.joints], dtype=bool)
        self._axes = np.array([j.axis for j in self.joints], dtype=float).reshape(n, 3)
        self._T_parent = np.array([j.T_parent_joint for j in self.joints]).reshape(n, 4, 4)
        self._motions = JointMotions(self._axes, self._prismatic)
        self._tip_index = {t.link: k for k, t in enumerate(self.tips)}
        # ancestors[k]: the joints that move tip k, in order from the base.
        self._tip_joints = [np.array(self._ancestors(t.parent), dtype=int) for t in self.tips]
        self._fast: Optional[SerialKinematics] = None
        self._fast_built = False

    # ----------------------------------------------------------------------------- building
    @classmethod
    def from_urdf_file(cls, path: Union[str, Path], base_link: str,
                       tip_link: Union[str, Sequence[str]],
                       max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES,
                       xacro_args=None) -> 'Chain':
        """Read a chain from a URDF file (see :meth:`from_urdf_string`).

        ``path`` is a file, or a bare name of a packaged robot (``'leg3.urdf'``, ``'arm6'``) as
        the CLI and the node take it; a ``.xacro`` file is expanded (needs the xacro package)
        with ``xacro_args``: ``'prefix:=left_ use_gripper:=true'``, a list of such items or a
        mapping (:func:`ik_node.model.description.xacro_mappings_from`). ``$(find pkg)`` in a
        xacro file finds ``pkg`` on ``AMENT_PREFIX_PATH``.
        """
        return cls.from_urdf_string(urdf_xml_from_file(path, max_bytes, xacro_args), base_link,
                                    tip_link, max_bytes)

    @classmethod
    def from_urdf_string(cls, xml: str, base_link: str, tip_link: Union[str, Sequence[str]],
                         max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES) -> 'Chain':
        """Read the chain from ``base_link`` to ``tip_link`` (one name or a list) out of URDF XML.

        The whole URDF is checked first (:mod:`ik_node.model.urdf_checks`); ``max_bytes`` caps the
        size of ``xml`` [bytes].

        Raises:
            ChainError: a description over ``max_bytes``, malformed XML, a URDF that is not one
                valid tree (loops, several roots, repeated names, joints naming missing links,
                bad numbers; see :mod:`ik_node.model.urdf_checks`), unknown links, no path from base
                to a tip, a floating, planar or mimic joint on the path, too many joints.
        """
        tip_links = [tip_link] if isinstance(tip_link, str) else list(tip_link)
        joints, tips, robot = chain_parts_from_xml(xml, base_link, tip_links, max_bytes)
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

    def within_limits(self, q: np.ndarray, tol: float = LIMIT_TOLERANCE) -> bool:
        """True if every joint of ``q`` is inside its limits (to ``tol``)."""
        if type(q) is np.ndarray and q.shape == (self.n,):  # one configuration: plain floats
            # (numpy's per-call cost dominates a handful of joints; this runs on every answer)
            lower, upper = self._limit_lists
            return all(lo - tol <= v <= hi + tol for v, lo, hi in zip(q.tolist(), lower, upper))
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

    def motion_plane(self, tip: Optional[str] = None) -> Optional[MotionPlane]:
        """The plane ``tip`` moves in (base frame), or None.

        A tip whose joints are all revolute about parallel axes never leaves the plane through
        its position normal to those axes, whatever the joint values; the distance of a target
        from that plane is then a proven lower bound on the tip's error. None when a joint that
        moves ``tip`` is prismatic, two of their axes are not parallel (within 1e-9), or no
        joint moves it.
        """
        idx = self.joints_of_tip(tip)
        if not idx or any(self.joints[i].is_prismatic for i in idx):
            return None
        q0 = np.zeros(self.n)
        frames = self.joint_frames(q0)
        axes = np.array([frames[i, :3, :3] @ self.joints[i].axis for i in idx])
        n = axes[0] / np.linalg.norm(axes[0])
        if not np.all(np.abs(np.abs(axes @ n) - np.linalg.norm(axes, axis=1)) < 1e-9):
            return None
        p_tip = self.fk(q0, tip)[:3, 3]
        return MotionPlane(tuple(float(v) for v in n), float(n @ p_tip))

    def planar_normal(self, tip: Optional[str] = None) -> Optional[np.ndarray]:
        """The common unit axis (base frame) of ``tip``'s joints when they are all revolute and
        parallel (the tip then moves in a plane normal to it, :meth:`motion_plane`), else None."""
        plane = self.motion_plane(tip)
        return None if plane is None else np.array(plane.normal)

    def serial_chain(self, tip: str) -> 'Chain':
        """The serial chain from the base to ``tip`` alone: the joints on its path (renumbered
        from 0, the same frames, axes and limits) and the tip, from the same URDF.

        A leg of a quadruped tree is solved on this chain; its joint ``i`` is the tree's joint
        ``joints_of_tip(tip)[i]``.
        """
        path = self.joints_of_tip(tip)
        renumbered = {old: new for new, old in enumerate(path)}
        joints = [dataclasses.replace(self.joints[i], parent=renumbered.get(self.joints[i].parent,
                                                                            -1))
                  for i in path]
        tip_spec = self.tips[self.tip_index(tip)]
        tip_spec = dataclasses.replace(tip_spec, parent=renumbered.get(tip_spec.parent, -1))
        return Chain(joints, [tip_spec], self.base_link, self._robot)

    def local_transforms(self, q: np.ndarray) -> np.ndarray:
        """Per-joint transforms ``T_parent_joint @ motion(q_i)``, shape ``(..., n, 4, 4)``."""
        return self._T_parent @ self._motions(q)

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
        :class:`ik_node.model.fast_kinematics.SerialKinematics`.
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
        return np.linalg.inv(T_root_link(self._robot, self.base_link, values)) @ \
            T_root_link(self._robot, link, values)

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

    def __repr__(self) -> str:
        return (f'Chain(base_link={self.base_link!r}, tip_links={self.tip_links!r}, '
                f'joints={self.joint_names!r})')


# ------------------------------------------------------------------------- joint helpers
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
