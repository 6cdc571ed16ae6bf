"""The planning groups of an SRDF as the solvers take them: a base link and one or more tips.

MoveIt names the joints a request moves by a group of the SRDF (``<group name="arm">``). A
group is solvable here when it is one chain or one tree of the URDF:

* ``<chain base_link="..." tip_link="..."/>``: that chain;
* ``<joint name="..."/>`` elements: the tree they span (its base is the one parent link that no
  listed joint moves, its tips the child links no listed joint starts from);
* ``<group name="..."/>`` elements (groups of groups, e.g. both arms): the union of their tips,
  from the nearest link all their bases share.

Groups of links only (end effectors: ``<link name="hand"/>``) span no chain and are left out,
as are groups whose joints do not form one tree; :func:`groups_from_srdf` says why for each.
The node's own chain is a group too (:func:`with_configured_chain`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from ik_node.errors import ConfigError

#: The group name of the configured chain when no SRDF group has its base and tips.
DEFAULT_GROUP = 'manipulator'


class PlanningGroup(NamedTuple):
    """A group the services solve: ``base_link`` to ``tip_links`` of the URDF."""

    name: str
    base_link: str
    tip_links: Tuple[str, ...]


class SrdfGroups(NamedTuple):
    """What an SRDF declares: the solvable groups by name, and why each other group is not."""

    groups: Dict[str, PlanningGroup]
    refused: Dict[str, str]


def groups_from_srdf(text: Optional[str], robot) -> SrdfGroups:
    """The planning groups of an SRDF's text over a parsed URDF (urdf_parser_py ``Robot``).

    Args:
        text: the SRDF XML, or None (no groups).
        robot: the URDF the links and joints are looked up in.

    Raises:
        ConfigError: malformed XML.
    """
    if not text:
        return SrdfGroups({}, {})
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ConfigError(f'malformed SRDF XML: {exc}') from None
    elements = {g.get('name', ''): g for g in root.findall('group') if g.get('name')}
    groups: Dict[str, PlanningGroup] = {}
    refused: Dict[str, str] = {}
    for name in elements:
        try:
            base, tips = _span(name, elements, robot, set())
        except ConfigError as exc:
            refused[name] = str(exc)
            continue
        groups[name] = PlanningGroup(name, base, tuple(tips))
    return SrdfGroups(groups, refused)


def with_configured_chain(srdf: SrdfGroups, base_link: str, tip_links: Sequence[str],
                          group_name: str = '') -> Tuple[Dict[str, PlanningGroup], str]:
    """The SRDF's groups plus the node's configured chain, and that chain's group name.

    The configured chain's name is ``group_name`` when given, else the SRDF group with the same
    base and tips, else :data:`DEFAULT_GROUP`. A given name that the SRDF uses for another
    chain is replaced by the configured chain (the node's parameters win).
    """
    groups = dict(srdf.groups)
    tips = tuple(tip_links)
    name = group_name
    if not name:
        same = [g.name for g in groups.values()
                if g.base_link == base_link and set(g.tip_links) == set(tips)]
        name = same[0] if same else DEFAULT_GROUP
    groups[name] = PlanningGroup(name, base_link, tips)
    return groups, name


def _span(name: str, elements: Dict[str, ET.Element], robot, seen: Set[str]
          ) -> Tuple[str, List[str]]:
    """``(base_link, tips)`` of group ``name``; raises ConfigError saying why it spans none."""
    if name in seen:
        raise ConfigError(f'group {name!r} contains itself')
    seen = seen | {name}
    element = elements[name]
    chains = element.findall('chain')
    joints = [j.get('name', '') for j in element.findall('joint')]
    subgroups = [g.get('name', '') for g in element.findall('group')]
    if chains and not joints and not subgroups and len(chains) == 1:
        base, tip = chains[0].get('base_link', ''), chains[0].get('tip_link', '')
        links = {link.name for link in robot.links}
        missing = [link for link in (base, tip) if link not in links]
        if missing:
            raise ConfigError(f'group {name!r}: chain link(s) {", ".join(missing)} not in the '
                              'URDF')
        return base, [tip]
    if joints and not chains and not subgroups:
        return _joint_tree(name, joints, robot)
    if subgroups and not chains and not joints:
        unknown = [g for g in subgroups if g not in elements]
        if unknown:
            raise ConfigError(f'group {name!r}: unknown subgroup(s) {", ".join(unknown)}')
        spans = [_span(g, elements, robot, seen) for g in subgroups]
        base = _common_ancestor(robot, [b for b, _ in spans])
        tips: List[str] = []
        for _, sub_tips in spans:
            tips += [t for t in sub_tips if t not in tips]
        return base, tips
    raise ConfigError(f'group {name!r} is not one chain, one list of joints or one list of '
                      'groups (links only: an end effector, no chain to solve)')


def _joint_tree(name: str, joints: Sequence[str], robot) -> Tuple[str, List[str]]:
    by_name = {j.name: j for j in robot.joints}
    unknown = [j for j in joints if j not in by_name]
    if unknown:
        raise ConfigError(f'group {name!r}: joint(s) {", ".join(unknown)} not in the URDF')
    listed = [by_name[j] for j in joints]
    parents = {j.parent for j in listed}
    children = {j.child for j in listed}
    bases = sorted(parents - children)
    if len(bases) != 1:
        raise ConfigError(f'group {name!r}: its joints are not one tree (roots: '
                          f'{", ".join(bases) or "none"})')
    tips = [j.child for j in listed if j.child not in parents]
    return bases[0], tips


def _common_ancestor(robot, links: Sequence[str]) -> str:
    """The deepest link that is an ancestor of (or equal to) every link of ``links``."""
    parent = {j.child: j.parent for j in robot.joints}

    def path(link: str) -> List[str]:
        out = [link]
        while out[-1] in parent:
            out.append(parent[out[-1]])
        return out[::-1]  # root first

    paths = [path(link) for link in links]
    common = paths[0][0]
    for k in range(min(len(p) for p in paths)):
        if len({p[k] for p in paths}) != 1:
            break
        common = paths[0][k]
    return common
