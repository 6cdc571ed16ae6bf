"""Capability maps, IK-verified: which poses a chain reaches, and where its base may stand.

A map covers a grid of voxels over the chain's reach times a set of tool orientations (approach
directions even on the sphere, rolls about each); each (voxel centre, orientation) is decided by
IK with the collision model (:mod:`.decide`). It is built in deterministic shards on this
machine's cores or a Ray cluster (:mod:`.build`), stored as NPZ (:mod:`.storage`) and asked
forward (is this pose reachable) and inverse (where should the base stand) (:mod:`.query`).
No ROS here.
"""

from ik_node.capability.build import build_map
from ik_node.capability.orientations import OrientationSet, orientation_bins, orientation_set
from ik_node.capability.progress import Progress
from ik_node.capability.query import (REACHABLE, UNCERTAIN, UNREACHABLE, CellLookup, Placement,
                                      PlacementGrid, PlacementScan, QueryIk, Verdicts,
                                      base_placement, check_poses, placement_scan, reachable,
                                      verify_placements)
from ik_node.capability.spec import MapSpec
from ik_node.capability.storage import CapabilityMap, load_map, merge, save_map
from ik_node.capability.tool import tool_offset

__all__ = ['REACHABLE', 'UNCERTAIN', 'UNREACHABLE', 'CapabilityMap', 'CellLookup', 'MapSpec',
           'OrientationSet', 'Placement', 'PlacementGrid', 'PlacementScan', 'Progress',
           'QueryIk', 'Verdicts', 'base_placement', 'build_map', 'check_poses', 'load_map',
           'merge', 'orientation_bins', 'orientation_set', 'placement_scan', 'reachable',
           'save_map', 'tool_offset', 'verify_placements']
