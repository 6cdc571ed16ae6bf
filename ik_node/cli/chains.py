"""``ik-solve chains``: what a robot description offers for IK, before any configuration.

    ik-solve chains --urdf /path/to/robot.urdf
    ik-solve chains --urdf robot.urdf.xacro --xacro-args "prefix:=left_ use_gripper:=true"
    ik-solve chains --urdf leg3.urdf --json

Lists the root link, the end links (links without children), the links where the tree branches,
the serial chain from the root to every end link with its moving joints (name, type, limits), and
the solvers that fit each chain. A solver fits when it can be built on the chain: the check is the
solver's own (``analytic_hip_knee`` accepts only the leg or planar 2-link structure it solves in
closed form). When the robot has two or more feet or hands, the tree of them is listed too, with
the solvers that solve several tips at once; and one serial chain is suggested: from the robot's
base link (below a ``world`` stub) to its best-named end effector, never a wheel, caster, rotor
or sensor (:mod:`ik_node.cli.chain_picks`). Exit status: 0, or 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ik_node.cli import chain_picks
from ik_node.cli.common import PROG, Parser, fail
from ik_node.model.chain import Chain
from ik_node.errors import ChainError, IkError
from ik_node.solvers import SOLVERS, make_solver
from ik_node.model.urdf_reading import _urdf_from_string

COMMAND = 'chains'


@dataclass(frozen=True)
class JointInfo:
    """A moving joint of a chain. Limits in [rad] (revolute) or [m] (prismatic); None: unbounded."""

    name: str
    type: str
    lower: Optional[float]
    upper: Optional[float]

    def as_dict(self) -> Dict[str, Any]:
        """JSON-ready fields."""
        return {'name': self.name, 'type': self.type, 'lower': self.lower, 'upper': self.upper}


@dataclass(frozen=True)
class ChainInfo:
    """A chain from ``base`` to one tip (serial) or several (a tree), and the solvers that fit.

    Attributes:
        base: base link.
        tips: tip links.
        joints: the moving joints, from the base outwards (depth first for a tree).
        solvers: names of the solvers that fit, sorted.
        unfit: for every other solver, why it does not fit.
        error: why no chain could be built from the URDF ('' when it could).
    """

    base: str
    tips: Tuple[str, ...]
    joints: Tuple[JointInfo, ...] = ()
    solvers: Tuple[str, ...] = ()
    unfit: Mapping[str, str] = field(default_factory=dict)
    error: str = ''

    def as_dict(self) -> Dict[str, Any]:
        """JSON-ready fields (``tip`` for a serial chain, ``tips`` for a tree)."""
        tips: Dict[str, Any] = {'tip': self.tips[0]} if len(self.tips) == 1 \
            else {'tips': list(self.tips)}
        return {'base': self.base, **tips, 'joints': [j.as_dict() for j in self.joints],
                'solvers': list(self.solvers), 'unfit': dict(self.unfit), 'error': self.error}


@dataclass(frozen=True)
class RobotChains:
    """The IK-relevant structure of a URDF.

    Attributes:
        name: the robot's name in the URDF.
        root: the root link.
        leaves: end links (links with no child), depth first from the root.
        branching: links with several children -> those children.
        chains: one serial chain from the root to each end link, in the order of ``leaves``.
        tree: the chain from the robot's base link to its feet or hands (the end links worth
            solving for, see :mod:`ik_node.cli.chain_picks`; None when fewer than two).
        link_count: number of links.
        base_link: the robot's base link (the root, or below a world stub such as ``world``).
        suggested: the serial chain to suggest, from ``base_link`` to the best-named end
            effector that a solver fits (never a wheel, caster, rotor or sensor); None if none.
    """

    name: str
    root: str
    leaves: Tuple[str, ...]
    branching: Mapping[str, Tuple[str, ...]]
    chains: Tuple[ChainInfo, ...]
    tree: Optional[ChainInfo]
    link_count: int
    base_link: str = ''
    suggested: Optional[ChainInfo] = None

    def as_dict(self) -> Dict[str, Any]:
        """JSON-ready fields."""
        return {'robot': self.name, 'root': self.root, 'base_link': self.base_link,
                'leaves': list(self.leaves),
                'branching_links': {k: list(v) for k, v in self.branching.items()},
                'chains': [c.as_dict() for c in self.chains],
                'tree': None if self.tree is None else self.tree.as_dict(),
                'suggested': None if self.suggested is None else self.suggested.as_dict(),
                'link_count': self.link_count}


# --------------------------------------------------------------------------------- analysis
def solver_fit(chain: Chain) -> Tuple[Tuple[str, ...], Dict[str, str]]:
    """(names of the solvers that fit ``chain``, {other solver: why not}).

    A solver fits when it builds on the chain with its default parameters: its own structure
    check, on each leg for independent legs; a tree whose tips share joints is refused by the
    solvers that cannot solve it whole (:class:`~ik_node.solvers.base.Solver`).
    """
    fit, unfit = [], {}
    for name in sorted(SOLVERS):
        if chain.n == 0:
            unfit[name] = 'no moving joint to solve for'
            continue
        try:
            make_solver(name, chain, {'self_collision': False})  # the fit, not the meshes
        except IkError as exc:
            unfit[name] = str(exc)
            continue
        fit.append(name)
    return tuple(fit), unfit


def _joint_infos(chain: Chain) -> Tuple[JointInfo, ...]:
    def bound(v: float) -> Optional[float]:
        return float(v) if math.isfinite(v) else None
    return tuple(JointInfo(j.name, j.type, bound(j.lower), bound(j.upper)) for j in chain.joints)


def chain_info(xml: str, base: str, tips: Sequence[str]) -> ChainInfo:
    """The chain from ``base`` to ``tips`` of URDF ``xml``, with its solvers (or why none)."""
    try:
        chain = Chain.from_urdf_string(xml, base, tips[0] if len(tips) == 1 else list(tips))
    except ChainError as exc:
        return ChainInfo(base, tuple(tips), error=str(exc))
    solvers, unfit = solver_fit(chain)
    return ChainInfo(base, tuple(tips), _joint_infos(chain), solvers, unfit)


def _kinematic_skeleton(xml: str) -> str:
    """The URDF with only its joints and bare links: what chains need, parsed much faster.

    (Every chain re-reads the XML; inertials, visuals and plugin blocks would be most of it.)
    """
    try:
        robot = ET.fromstring(xml)
    except ET.ParseError:
        return xml  # let the URDF parser report it
    for element in list(robot):
        if element.tag == 'link':
            for child in list(element):
                element.remove(child)
        elif element.tag != 'joint':
            robot.remove(element)
    return ET.tostring(robot, encoding='unicode')


def robot_chains_from_urdf(xml: str) -> RobotChains:
    """Root, end links, branching links, chains and tree of URDF ``xml``.

    Raises:
        ChainError: malformed URDF, or not one tree (several roots).
    """
    robot = _urdf_from_string(xml)
    links = [link.name for link in robot.links]
    children: Dict[str, List[str]] = {name: [] for name in links}
    typed: Dict[str, List[Tuple[str, str]]] = {name: [] for name in links}
    has_parent = set()
    for joint in robot.joints:
        if joint.parent in children:
            children[joint.parent].append(joint.child)
            typed[joint.parent].append((joint.child, joint.type))
        has_parent.add(joint.child)
    roots = [name for name in links if name not in has_parent]
    if len(roots) != 1:
        raise ChainError(f'a URDF must be one tree with one root link; found roots: '
                         f'{", ".join(roots) or "none (a loop)"}')
    root = roots[0]
    leaves: List[str] = []
    stack = [root]
    while stack:  # depth first, children in the URDF's order
        link = stack.pop()
        if not children[link]:
            leaves.append(link)
        stack.extend(reversed(children[link]))
    branching = {name: tuple(kids) for name, kids in children.items() if len(kids) > 1}
    xml = _kinematic_skeleton(xml)
    chains = tuple(chain_info(xml, root, [leaf]) for leaf in leaves)
    by_tip = {info.tips[0]: info for info in chains}
    base = chain_picks.robot_base(root, typed)
    parent = {child: link for link, kids in children.items() for child in kids}
    ends_in = []  # end links; a finger's hand (where its fingers branch) in its place
    for info in chains:
        if info.error:
            continue
        if chain_picks.has_token(info.tips[0], chain_picks.FINGER_TOKENS):
            hand = parent.get(info.tips[0])
            while hand in parent and len(children[hand]) < 2:
                hand = parent[hand]
            if hand is not None and hand != root:
                info = chain_info(xml, root, [hand])
                if info.error or any(name == hand for name, _ in ends_in):
                    continue
        ends_in.append((info.tips[0], tuple(j.name for j in info.joints)))
        by_tip[info.tips[0]] = info
    ends = chain_picks.end_effector_leaves(ends_in)
    tips = chain_picks.tree_tips(ends)
    tree = chain_info(xml, base, tips) if len(tips) > 1 else None
    pick = chain_picks.serial_pick(
        [(name, joints, any(j.type == 'prismatic' for j in by_tip[name].joints))
         for name, joints in ends if by_tip[name].solvers])
    suggested = None if pick is None else chain_info(xml, base, [pick])
    return RobotChains(robot.name or '', root, tuple(leaves), branching, chains, tree,
                       len(links), base, suggested)


# ----------------------------------------------------------------------------- text output
def _limits(joint: JointInfo) -> str:
    unit = 'm' if joint.type == 'prismatic' else 'rad'
    if joint.lower is None or joint.upper is None:
        return 'unbounded'
    return f'[{joint.lower:.6g}, {joint.upper:.6g}] {unit}'


def _solver_notes(solvers: Sequence[str], tree: bool) -> str:
    if not solvers:
        return 'none'
    notes = []
    for name in solvers:
        what = 'position + orientation' if SOLVERS[name].supports_orientation else 'position'
        notes.append(f'{name} ({"all tips at once, " if tree else ""}{what})')
    return ', '.join(notes)


def _chain_lines(info: ChainInfo, tips: Sequence[str], tree: bool = False) -> List[str]:
    head = f'  {info.base} -> {", ".join(tips)}'
    if info.error:
        return [f'{head}: not usable: {info.error}']
    if not info.joints:
        return [f'{head}: no moving joint (fixed to the root)']
    lines = [f'{head}: {len(info.joints)} moving joint{"s" if len(info.joints) > 1 else ""}']
    name_w = max(len(j.name) for j in info.joints)
    type_w = max(len(j.type) for j in info.joints)
    lines += [f'      {j.name:<{name_w}}  {j.type:<{type_w}}  {_limits(j)}' for j in info.joints]
    lines.append(f'    solvers: {_solver_notes(info.solvers, tree)}')
    return lines


def human_lines(result: RobotChains, source: str, xacro_args: str = '') -> List[str]:
    """``result`` as text; ``source`` (the file as the user named it) goes in the hints."""
    lines = [f'robot {result.name or "(unnamed)"} ({source}): {result.link_count} links',
             f'root link: {result.root}',
             f'end links: {", ".join(result.leaves)}']
    if result.branching:
        lines.append('links with several children: ' + ', '.join(
            f'{name} ({", ".join(kids)})' for name, kids in result.branching.items()))
    lines += ['', f'serial chains from {result.root}:']
    # End links with the same joints and solvers share one entry (e.g. a flange and a tool frame).
    groups: Dict[Tuple, List[ChainInfo]] = {}
    for info in result.chains:
        groups.setdefault((tuple(j.name for j in info.joints), info.solvers, info.error),
                          []).append(info)
    for members in groups.values():
        lines += _chain_lines(members[0], [m.tips[0] for m in members])
    if result.tree is not None:
        lines += ['', f'tree of the {"feet or hands" if _limbs(result.tree.tips) else "end links"}'
                  ' (tip_links):']
        lines += _chain_lines(result.tree, result.tree.tips, tree=True)
    pick = result.suggested
    if pick is not None and pick.solvers:
        q = shlex.quote
        args = f' --xacro-args {q(xacro_args)}' if xacro_args else ''
        launch_args = f' {q("xacro_args:=" + xacro_args)}' if xacro_args else ''
        lines += ['', 'use one, e.g.:',
                  f'  ik-solve --urdf {q(source)}{args} --base {q(pick.base)} '
                  f'--tip {q(pick.tips[0])} --solver {pick.solvers[0]} --target X Y Z',
                  f'  ros2 launch ik_node ik.launch.py {q("description_file:=" + source)}'
                  f'{launch_args} base_link:={q(pick.base)} tip_link:={q(pick.tips[0])}',
                  '(--json lists why the other solvers do not fit)']
    return lines


def _limbs(tips: Sequence[str]) -> bool:
    return all(chain_picks.has_token(t, chain_picks.LIMB_END_TOKENS) for t in tips)  # no finger


# ------------------------------------------------------------------------------ entry point
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ik-solve chains``."""
    p = Parser(prog=f'{PROG} {COMMAND}',
                description='List the root, end links and serial chains of a URDF or xacro '
                            'file, with each chain\'s moving joints and the solvers that fit.',
                epilog='Exit status: 0 listed, 2 error.')
    p.add_argument('--urdf', metavar='FILE', required=True,
                   help='URDF or xacro file: a path, or a name in the package urdf/ '
                        '(e.g. leg3.urdf)')
    p.add_argument('--xacro-args', metavar='"KEY:=VALUE ..."', default='',
                   help='arguments of a .xacro file, e.g. "prefix:=left_ use_gripper:=true"')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``ik-solve chains``. Returns 0; errors exit with status 2."""
    args = build_parser().parse_args(argv)
    from ik_node.model.description import description_from_file
    from ik_node.model.resources import urdf_path
    try:
        path = urdf_path(args.urdf)
        result = robot_chains_from_urdf(description_from_file(path, args.xacro_args))
    except IkError as exc:
        fail(str(exc))
    if args.json:
        print(json.dumps({'urdf': str(path), 'xacro_args': args.xacro_args,
                          **result.as_dict()}))
    else:
        print('\n'.join(human_lines(result, args.urdf, args.xacro_args)))
    return 0

