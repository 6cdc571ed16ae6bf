"""Base placement answered as the command line and the node answer it: ranked by the map,
the best candidates' mixed task poses decided by IK, the top answer verified by IK.

:func:`place_base` is the one implementation; its top answer's share is never above what IK
reaches from it: the share of task poses with an IK answer (FK-checked). Without the map's
solver it ranks by the map alone and says so (:attr:`PlacementAnswer.basis`).
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional

import numpy as np

from ik_node.capability.placement import (CANDIDATES, Placement, PlacementGrid, PlacementScan,
                                          decide_candidates, placement_scan, reached_from)
from ik_node.capability.query import check_poses
from ik_node.capability.storage import CapabilityMap

#: At most this many candidates are verified while the verified best falls below the next
#: candidate's share (:func:`place_base`).
MAX_VERIFIED = 5
#: What :attr:`PlacementAnswer.basis` says for answers decided by IK.
BY_IK = 'ik'
#: What it starts with for answers of the map alone.
MAP_ALONE = 'uniformly reachable only'


class PlacementAnswer(NamedTuple):
    """What :func:`place_base` answers.

    Attributes:
        scan: every base pose of the grid and its map shares (:class:`PlacementScan`).
        placements: the best base poses, best first; ``share`` is the share of task poses
            reachable from it (by IK where ``verified`` says so, else uniformly reachable cells
            plus mixed ones IK reached; the map alone: uniformly reachable cells only).
        verified: per placement, whether ``share`` is the verified IK share.
        joints: (N, n) the IK answer to each task pose from the top placement (NaN: not
            reached), or None without a solver.
        basis: :data:`BY_IK`, or :data:`MAP_ALONE` and why no IK ran.
    """

    scan: PlacementScan
    placements: List[Placement]
    verified: List[bool]
    joints: Optional[np.ndarray]
    basis: str


def place_base(capability: CapabilityMap, poses, grid: Optional[PlacementGrid] = None,
               top: int = 5, solver=None, why_not: str = '',
               scan: Optional[PlacementScan] = None) -> PlacementAnswer:
    """The ``top`` base poses of ``grid`` for ``poses`` (``x y z qx qy qz qw`` in the floor's
    frame).

    The map's scan ranks every base pose (:func:`placement_scan`); with ``solver`` (the map's
    chain and collision world) the :data:`CANDIDATES` with the most task poses possibly
    reachable have their task poses in mixed cells decided by IK
    (:func:`~ik_node.capability.placement.decide_candidates`), then the best is verified:
    its task poses in uniformly reachable cells are solved by IK (:func:`reached_from`), those
    IK reached in mixed cells keep their answer, and its share becomes the share with an IK
    answer. While that falls below the next candidate's share, the next is verified too (at
    most :data:`MAX_VERIFIED`); the best verified comes first. Without ``solver`` the answer is
    the map's alone (``why_not`` says why, in :attr:`PlacementAnswer.basis`).
    """
    poses = check_poses(poses)
    grid = grid or PlacementGrid()
    scan = scan if scan is not None else placement_scan(capability, poses, grid)
    if solver is None:
        return PlacementAnswer(scan, scan.best(top), [False] * min(top, scan.shares.size), None,
                               f'{MAP_ALONE}: {why_not}' if why_not else MAP_ALONE)
    decided = decide_candidates(capability, poses, scan, solver, grid.z, max(top, CANDIDATES))
    checked = {}  # candidate index -> (IK share, joints)
    for k, (placement, verdicts) in enumerate(decided):
        best = max((share for share, _ in checked.values()), default=-1.0)
        if len(checked) >= MAX_VERIFIED or (checked and best >= placement.share):
            break
        checked[k] = _verify(solver, poses, placement, verdicts, grid.z, capability)
    first = max(checked, key=lambda k: (checked[k][0], -k))
    order = [first] + [k for k in range(len(decided)) if k != first]
    placements, verified = [], []
    for k in order[:top]:
        placement = decided[k][0]
        if k in checked:
            placement = placement._replace(share=checked[k][0])
        placements.append(placement)
        verified.append(k in checked)
    return PlacementAnswer(scan, placements, verified, checked[first][1], BY_IK)


def _verify(solver, poses, placement, verdicts, z, capability):
    """``(IK share, joints)`` of a candidate: the task poses IK reached in mixed cells keep
    their answer; those the map calls reachable are solved by IK."""
    joints = np.full((len(poses), solver.chain.n), np.nan)
    by_ik = verdicts.by_ik & verdicts.reachable
    if verdicts.joints is not None:
        joints[by_ik] = verdicts.joints[by_ik]
    ask = verdicts.reachable & ~by_ik
    reached, answers = reached_from(solver, poses, placement, z, tool=capability.tool_offset,
                                    ask=ask)
    joints[reached] = answers[reached]
    share = float(np.isfinite(joints[:, 0]).mean()) if len(poses) else 0.0
    return share, joints
