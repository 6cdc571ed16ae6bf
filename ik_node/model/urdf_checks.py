"""Structural checks of a robot description, run before any chain is built or solved.

:class:`ik_node.Chain` calls these from its URDF constructors, so every path into the package
(the Python API, ``ik-solve``, the node's ``robot_description`` and ``urdf_file`` parameters)
refuses the same faults with the same :class:`~ik_node.errors.ChainError` message. Every check
runs in time linear in the size of the description: no recursion, no walk that a loop in the
joints could keep going.

What is refused, for the whole URDF (a fault anywhere, not only on the solved chain):

* a description larger than ``max_description_bytes`` (default 10 MB), before it is parsed;
* no ``<link>``; a link or joint without a name; two links or two joints with one name;
* a joint whose parent or child link does not exist, or that connects a link to itself;
* a link with two parent joints, joints that form a loop, more than one root link;
* a joint type outside the URDF's six;
* a joint origin with a NaN or infinite number, or farther than 1e6 m;
* a revolute, continuous or prismatic joint with a zero, NaN or infinite axis;
* a revolute or prismatic ``<limit>`` with a non-finite bound, or lower > upper;
* a ``<mimic>`` naming a joint that does not exist, itself, or mimicking in a circle, or with a
  non-finite multiplier or offset.

And for the solved chain (base to tips): base and tips must be links, tips distinct, and at most
:data:`MAX_CHAIN_JOINTS` moving joints. Floating, planar and mimic joints on the chain, and
revolute joints without ``<limit>``, are refused where the chain is built
(:func:`ik_node.model.urdf_reading._moving_joint`). A mimic joint off the chain (a gripper finger)
is fine.

Imports nothing beyond the standard library (the parsed robot comes from urdf_parser_py).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from typing import Dict, Iterable, List, Optional, Sequence

from ik_node.errors import ChainError

#: Largest robot description accepted by default [bytes] (10 MB).
DEFAULT_MAX_DESCRIPTION_BYTES = 10_000_000
#: Most moving joints one chain (all tips together) may have. Generating the serial fast path
#: grows with the square of the joint count; real arms, legs and humanoid trees have well
#: under 100.
MAX_CHAIN_JOINTS = 100
#: Joint origins farther than this from their parent link [m] are refused as nonsense.
MAX_ORIGIN_M = 1e6
JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')
_AXIS_TYPES = ('revolute', 'continuous', 'prismatic')
_LIMITED_TYPES = ('revolute', 'prismatic')
_AXIS_EPS = 1e-9
_LISTED = 20  # names listed in a message before "... and N more"


def names_text(names: Iterable[str], limit: int = _LISTED) -> str:
    """Names joined by commas, at most ``limit`` of them, then ``... and N more``."""
    names = list(names)
    text = ', '.join(str(n) for n in names[:limit])
    return text + (f', ... and {len(names) - limit} more' if len(names) > limit else '')


# ------------------------------------------------------------------------------------- size
def check_description_size(xml: str, max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES) -> None:
    """Refuse URDF text longer than ``max_bytes`` bytes (UTF-8) before it is parsed.

    Raises:
        ChainError: names the size and the limit (``max_description_bytes``).
    """
    if not isinstance(xml, str) or len(xml) <= max_bytes // 4:  # 4 bytes per char at most
        return
    size = len(xml) if len(xml) > max_bytes else len(xml.encode('utf-8', 'surrogatepass'))
    if size > max_bytes:
        raise ChainError(f'robot description is {_size_text(size)} of URDF, more than '
                         f'max_description_bytes = {max_bytes} bytes: refused before parsing')


def read_description(path, max_bytes: int = DEFAULT_MAX_DESCRIPTION_BYTES) -> str:
    """The text of a URDF file, reading at most ``max_bytes + 1`` bytes of it.

    A device or pipe without end (``/dev/zero``) is refused like a file that is too large.

    Raises:
        OSError: the file cannot be opened or read (the caller names it).
        ChainError: larger than ``max_bytes``, or not UTF-8 text.
    """
    with open(path, 'rb') as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ChainError(f'URDF file {str(path)!r} is larger than max_description_bytes = '
                         f'{max_bytes} bytes: refused before parsing')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ChainError(f'URDF file {str(path)!r} is not UTF-8 text (byte {exc.start}: '
                         f'{exc.reason})') from None


def _size_text(size: int) -> str:
    return f'{size} bytes' if size < 10_000 else f'{size / 1e6:.1f} MB ({size} bytes)'


# ------------------------------------------------------------------------ the whole robot
def check_robot(robot) -> None:
    """Refuse a parsed URDF (``urdf_parser_py.urdf.Robot``) that is not one valid tree.

    Raises:
        ChainError: names the first bad link or joint and, where there is a list, the valid
            names.
    """
    links = [link.name for link in robot.links]
    joints = list(robot.joints)
    if not links:
        raise ChainError('the URDF has no <link>: a robot needs at least one link')
    _check_names('link', links)
    _check_names('joint', [j.name for j in joints])
    link_set = set(links)
    for j in joints:
        _check_joint_links(j, link_set, links)
    _check_tree(links, joints)
    for j in joints:
        _check_joint_values(j)
    _check_mimics(joints, {j.name: j for j in joints})


def _check_names(kind: str, names: Sequence[Optional[str]]) -> None:
    if any(not isinstance(n, str) or not n.strip() for n in names):
        raise ChainError(f'a <{kind}> has no name: every {kind} needs a non-empty name')
    repeated = [n for n, count in Counter(names).items() if count > 1]
    if repeated:
        raise ChainError(f'{kind} name {repeated[0]!r} is used by '
                         f'{Counter(names)[repeated[0]]} <{kind}> elements: {kind} names must '
                         f'be unique (repeated: {names_text(repeated)})')


def _check_joint_links(j, link_set, links: List[str]) -> None:
    for role in ('parent', 'child'):
        name = getattr(j, role)
        if not isinstance(name, str) or not name:
            raise ChainError(f'joint {j.name!r} has no {role} link: give <{role} link="..."/>')
        if name not in link_set:
            raise ChainError(f'joint {j.name!r} names {role} link {name!r}, which is not in the '
                             'URDF, so no path runs through the joint. Available links: '
                             f'{names_text(links)}')
    if j.parent == j.child:
        raise ChainError(f'joint {j.name!r} connects link {j.parent!r} to itself: a joint '
                         'needs two different links')
    if j.type not in JOINT_TYPES:
        raise ChainError(f'joint {j.name!r} has type {j.type!r}. Valid types: '
                         f'{", ".join(JOINT_TYPES)}')


def _check_tree(links: List[str], joints) -> None:
    """One root, one parent per link, no loop: iterative, linear in the number of joints."""
    parent_joints: Dict[str, List[str]] = {}
    children: Dict[str, List[str]] = {}
    parent_of: Dict[str, str] = {}
    for j in joints:
        parent_joints.setdefault(j.child, []).append(j.name)
        children.setdefault(j.parent, []).append(j.child)
        parent_of[j.child] = j.parent
    for link, names in parent_joints.items():
        if len(names) > 1:
            raise ChainError(f'link {link!r} is the child of {len(names)} joints '
                             f'({names_text(names)}): in a URDF every link has one parent '
                             'joint at most (a closed kinematic loop cannot be described)')
    roots = [link for link in links if link not in parent_of]
    reached = set(roots)
    queue = deque(roots)
    while queue:
        for child in children.get(queue.popleft(), ()):
            if child not in reached:
                reached.add(child)
                queue.append(child)
    if len(reached) < len(links):
        start = next(link for link in links if link not in reached)
        raise ChainError(f'the joints form a loop: {_loop_text(start, parent_of, joints)}. '
                         'A URDF must be a tree')
    if len(roots) > 1:
        raise ChainError(f'the URDF has {len(roots)} root links ({names_text(roots)}), with no '
                         'path between them: a URDF is one tree with one root link; connect the '
                         'others with joints or remove them')


def _loop_text(start: str, parent_of: Dict[str, str], joints) -> str:
    """``a -> b -> c -> a (joints j1, j2, j3)`` for the loop above ``start``."""
    seen: List[str] = []
    index: Dict[str, int] = {}
    link = start
    while link not in index:  # every link here has a parent: the walk ends on a repeat
        index[link] = len(seen)
        seen.append(link)
        link = parent_of[link]
    loop = seen[index[link]:][::-1]  # from parent to child
    joint_of = {(j.parent, j.child): j.name for j in joints}
    names = [joint_of[(a, b)] for a, b in zip(loop, loop[1:] + loop[:1], strict=True)]
    return f'{" -> ".join(loop + loop[:1])} (joints {names_text(names)})'


def _finite(values) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _check_joint_values(j) -> None:
    origin = j.origin
    for field, values in (('xyz', getattr(origin, 'xyz', None)),
                          ('rpy', getattr(origin, 'rpy', None))):
        if values is None:
            continue
        if len(values) != 3 or not _finite(values):
            raise ChainError(f'joint {j.name!r} has origin {field} {list(values)}: origins must '
                             'be three finite numbers')
        if field == 'xyz' and max(abs(v) for v in values) > MAX_ORIGIN_M:
            raise ChainError(f'joint {j.name!r} has origin xyz {list(values)}: more than '
                             f'{MAX_ORIGIN_M:g} m from its parent link')
    if j.type in _AXIS_TYPES and j.axis is not None:
        axis = list(j.axis)
        if len(axis) != 3 or not _finite(axis) or \
                math.sqrt(sum(v * v for v in axis)) < _AXIS_EPS:
            raise ChainError(f'joint {j.name!r} has axis {axis}: a joint axis must be a '
                             'non-zero, finite 3-vector')
    if j.type in _LIMITED_TYPES and j.limit is not None:
        lower = j.limit.lower if j.limit.lower is not None else 0.0
        upper = j.limit.upper if j.limit.upper is not None else 0.0
        if not _finite((lower, upper)):
            raise ChainError(f'joint {j.name!r} has non-finite limits [{lower}, {upper}]')
        if lower > upper:
            raise ChainError(f'joint {j.name!r} has lower limit {float(lower)} > upper limit '
                             f'{float(upper)}')


def _check_mimics(joints, by_name: Dict[str, object]) -> None:
    for j in joints:
        if j.mimic is None:
            continue
        target = j.mimic.joint
        if target not in by_name:
            raise ChainError(f'joint {j.name!r} mimics {target!r}, which is not a joint of the '
                             f'URDF. Available joints: {names_text(by_name)}')
        if target == j.name:
            raise ChainError(f'joint {j.name!r} mimics itself')
        for field in ('multiplier', 'offset'):
            value = getattr(j.mimic, field)
            if value is not None and not _finite([value]):
                raise ChainError(f'joint {j.name!r} has mimic {field} {value}: must be finite')
    # Every joint mimics one other at most: follow each once, remembering finished walks.
    done = set()
    for j in joints:
        walk, on_walk, name = [], set(), j.name
        while name not in done and by_name[name].mimic is not None:
            if name in on_walk:
                circle = walk[walk.index(name):]
                raise ChainError(f'mimic joints form a circle: {" -> ".join(circle + [name])}')
            walk.append(name)
            on_walk.add(name)
            name = by_name[name].mimic.joint
        done.update(walk)


# ------------------------------------------------------------------------------ the chain
def check_chain_ends(links: Sequence[str], base_link: str, tip_links: Sequence[str]) -> None:
    """Refuse a base or tip that is not a link of the URDF, no tip, or a repeated tip.

    Raises:
        ChainError: names the link and lists the available ones.
    """
    if not tip_links:
        raise ChainError('no tip link given: name at least one link of the URDF')
    link_set = set(links)
    for name, role in [(base_link, 'base link')] + [(t, 'tip link') for t in tip_links]:
        if name not in link_set:
            raise ChainError(f'{role} {name!r} is not in the URDF. '
                             f'Available links: {names_text(links)}')
    if len(set(tip_links)) != len(tip_links):
        raise ChainError(f'tip links repeat a name: {list(tip_links)}')


def check_chain_size(paths: Sequence[Sequence]) -> None:
    """Refuse a chain (the URDF joints from the base to every tip) with too many moving joints.

    Raises:
        ChainError: gives the count and :data:`MAX_CHAIN_JOINTS`.
    """
    moving = {uj.name for path in paths for uj in path if uj.type != 'fixed'}
    if len(moving) > MAX_CHAIN_JOINTS:
        raise ChainError(f'the chain has {len(moving)} moving joints; at most '
                         f'{MAX_CHAIN_JOINTS} are supported: choose a base and tip closer '
                         'together')
