"""Which pairs of links are checked: an SRDF's ``<disable_collisions>``, or a table computed the
way MoveIt's Setup Assistant computes one.

Without an SRDF, a pair is left out when it is
- ``adjacent``: the links are joined by a joint (links without geometry in between skipped);
- ``rigid``: no chain joint moves one link relative to the other (its state never changes);
- ``default``: the links collide at the mid configuration;
- ``always``: they collide in every one of ``samples`` random configurations;
- ``never``: they collide in none of them.
Every other pair is checked. The sampling uses the checker's own test with no padding (convex
hulls), seeded, and the table is cached per description (its geometry digest, the chain and the
sample count) in the user's cache directory (``$XDG_CACHE_HOME/ik_node/collision_pairs``).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

from ik_node.collision.geometry import CollisionModelError
from ik_node.collision.model import CollisionModel

#: Random configurations of the computed pair table (MoveIt's Setup Assistant: 10000).
DEFAULT_SAMPLES = 10000
#: Version of the computed table's method; part of the cache key.
TABLE_VERSION = 1
REASONS = ('adjacent', 'rigid', 'default', 'always', 'never', 'srdf')

Pair = Tuple[str, str]


def pair_key(a: str, b: str) -> Pair:
    """The pair in a fixed order (sorted names)."""
    return (a, b) if a <= b else (b, a)


def all_pairs(model: CollisionModel) -> List[Pair]:
    """Every pair of links with geometry."""
    links = model.links
    return [pair_key(links[i], links[j]) for i in range(len(links))
            for j in range(i + 1, len(links))]


def adjacent_pairs(model: CollisionModel) -> set:
    """Pairs of links joined by a joint, skipping links without collision geometry (a link's
    nearest ancestor with geometry is adjacent to it)."""
    robot = model.chain.robot
    parent_of = {uj.child: uj.parent for uj in robot.joints}
    has_geometry = set(model.links)
    out = set()
    for link in model.links:
        parent = parent_of.get(link)
        while parent is not None and parent not in has_geometry:
            parent = parent_of.get(parent)
        if parent is not None:
            out.add(pair_key(link, parent))
    return out


def computed_table(model: CollisionModel, samples: int = DEFAULT_SAMPLES,
                   seed: int = 0) -> Dict[Pair, str]:
    """``{pair: reason}`` of the pairs left out (see the module docstring); pairs not in it are
    checked."""
    from ik_node.collision.check import CollisionChecker
    chain = model.chain
    disabled: Dict[Pair, str] = {}
    for pair in adjacent_pairs(model):
        disabled[pair] = 'adjacent'
    candidates = []
    for i, a in enumerate(model.links):
        for j in range(i + 1, len(model.links)):
            pair = pair_key(a, model.links[j])
            if pair in disabled:
                continue
            if model.moving_joints(i) == model.moving_joints(j):
                disabled[pair] = 'rigid'
                continue
            candidates.append(pair)
    if not candidates:
        return disabled
    checker = CollisionChecker(model, candidates, padding=0.0, mesh_confirm=False)
    T_mid = model.link_transforms(chain.mid_configuration())
    for a, b in candidates:
        if checker.pair_distance(T_mid, model.index[a], model.index[b]) < 0.0:
            disabled[(a, b)] = 'default'
    remaining = [p for p in candidates if p not in disabled]
    if not remaining:
        return disabled
    rng = np.random.default_rng(seed)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
    counts = collision_counts(checker, remaining, rng.uniform(lower, upper,
                                                              size=(samples, chain.n)))
    for pair in remaining:
        if counts[pair] == 0:
            disabled[pair] = 'never'
        elif counts[pair] == samples:
            disabled[pair] = 'always'
    return disabled


def collision_counts(checker, pairs: List[Pair], Q: np.ndarray,
                     chunk: int = 2000) -> Dict[Pair, int]:
    """In how many rows of ``Q`` each pair collides (hull distance < 0). A pair seen both
    colliding and free is counted no further (its count is then only known to be strictly
    between 0 and ``len(Q)``)."""
    model = checker.model
    index = np.array([[model.index[a], model.index[b]] for a, b in pairs], dtype=np.int64)
    counts = {p: 0 for p in pairs}
    free_seen = {p: False for p in pairs}
    done = np.zeros(len(pairs), dtype=bool)
    for start in range(0, len(Q), chunk):
        T = model.link_transforms(Q[start:start + chunk])
        gaps = model.pair_gaps(T, index)
        i, j = index[:, 0], index[:, 1]
        for m, pair in enumerate(pairs):
            if done[m]:
                continue
            rows = np.flatnonzero(gaps[:, m] <= 0.0)
            if len(rows) < gaps.shape[0]:
                free_seen[pair] = True
            for row in rows.tolist():
                if checker.pair_distance(T[row], int(i[m]), int(j[m])) < 0.0:
                    counts[pair] += 1
                else:
                    free_seen[pair] = True
                if counts[pair] and free_seen[pair]:
                    done[m] = True
                    break
    return counts


# ------------------------------------------------------------------------------- SRDF
def table_from_srdf(text: str, model: CollisionModel) -> Dict[Pair, str]:
    """``{pair: 'srdf'}`` of an SRDF's ``<disable_collisions link1= link2=/>``.

    Raises:
        CollisionModelError: malformed XML, an element without both links, or a link the URDF
            does not have (the message lists the links with geometry).
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise CollisionModelError(f'malformed SRDF XML: {exc}') from None
    urdf_links = {link.name for link in model.chain.robot.links}
    out: Dict[Pair, str] = {}
    unknown = []
    for element in root.iter('disable_collisions'):
        a, b = element.get('link1'), element.get('link2')
        if not a or not b:
            raise CollisionModelError('SRDF <disable_collisions> needs both link1 and link2, got '
                                      f'{ET.tostring(element, encoding="unicode").strip()}')
        unknown += [name for name in (a, b) if name not in urdf_links]
        out[pair_key(a, b)] = 'srdf'
    if unknown:
        raise CollisionModelError(
            f'SRDF names link(s) the URDF does not have: {", ".join(sorted(set(unknown)))}. '
            f'Links with collision geometry: {", ".join(model.links)}')
    return out


def srdf_from_table(robot_name: str, disabled: Dict[Pair, str]) -> str:
    """An SRDF holding ``disabled`` as ``<disable_collisions>`` (reasons as MoveIt writes them)."""
    moveit_reason = {'adjacent': 'Adjacent', 'rigid': 'Adjacent', 'default': 'Default',
                     'always': 'Always', 'never': 'Never', 'srdf': 'User'}
    lines = ['<?xml version="1.0"?>', f'<robot name="{robot_name}">']
    for (a, b), reason in sorted(disabled.items()):
        lines.append(f'  <disable_collisions link1="{a}" link2="{b}" '
                     f'reason="{moveit_reason.get(reason, reason)}"/>')
    lines.append('</robot>')
    return '\n'.join(lines) + '\n'


def checked_pairs(model: CollisionModel, disabled: Dict[Pair, str]) -> List[Pair]:
    """The pairs to check: every pair not in ``disabled``."""
    return [p for p in all_pairs(model) if p not in disabled]


# ------------------------------------------------------------------------------ cache
def cache_dir() -> Path:
    """Where computed pair tables are kept: ``$XDG_CACHE_HOME/ik_node/collision_pairs``
    (``~/.cache`` without it); ``IK_NODE_CACHE_DIR`` overrides the whole path."""
    override = os.environ.get('IK_NODE_CACHE_DIR')
    if override:
        return Path(override)
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return Path(base) / 'ik_node' / 'collision_pairs'


def cached_table(model: CollisionModel, samples: int = DEFAULT_SAMPLES,
                 seed: int = 0) -> Dict[Pair, str]:
    """:func:`computed_table`, read from the cache when this description's table is there
    (written there otherwise; an unwritable cache only costs the time)."""
    import hashlib
    key = hashlib.sha256(f'{TABLE_VERSION}|{samples}|{seed}|{model.digest}'.encode()).hexdigest()
    path = cache_dir() / f'{key[:32]}.json'
    try:
        rows = json.loads(path.read_text())
        table = {pair_key(a, b): reason for a, b, reason in rows}
        if all(a in model.index and b in model.index for a, b in table):
            return table
    except (OSError, ValueError, TypeError):
        pass
    table = computed_table(model, samples, seed)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f'.{os.getpid()}.tmp')
        tmp.write_text(json.dumps([[a, b, r] for (a, b), r in sorted(table.items())]))
        tmp.replace(path)
    except OSError:
        pass
    return table


def table_text(model: CollisionModel, disabled: Dict[Pair, str],
               checked: Optional[Iterable[Pair]] = None) -> str:
    """The pair table as text: every pair of links with geometry, checked or why not."""
    checked = set(checked if checked is not None else checked_pairs(model, disabled))
    width = max((len(a) + len(b) for a, b in all_pairs(model)), default=10) + 5
    lines = [f'{"pair":<{width}} checked']
    for pair in all_pairs(model):
        state = 'yes' if pair in checked else f'no ({disabled.get(pair, "?")})'
        lines.append(f'{pair[0] + " - " + pair[1]:<{width}} {state}')
    lines.append(f'{len(checked)} of {len(all_pairs(model))} pairs checked')
    return '\n'.join(lines)
