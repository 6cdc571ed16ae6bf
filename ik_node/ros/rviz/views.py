"""RViz camera views that frame a robot: its reachable space, its targets and their labels.

:func:`view_of` places RViz's Orbit camera for a chain: it looks at the middle of the box that
holds the part of every tip's sampled reach near the robot, where targets mostly are
(:data:`FRAME_SHARE`), and its joints there (the room the labels take below it included), from
just far enough that all of them are in the 3D view of the shipped window
(:data:`~ik_node.ros.rviz.camera.RENDER_PX`). :func:`chain_view` is that view for a chain: the
node keeps a far target's marker and every label inside it. ``rviz/<robot>.rviz`` of each
packaged robot is ``rviz/ik.rviz`` with its view (``python -m ik_node.ros.rviz.views`` writes
them; a test checks they match); for any other robot ``ik.launch.py`` writes ``rviz/ik.rviz``
with its chain's view (:func:`rviz_config_of`), so RViz opens on the view the node places its
labels in.

Imports neither rclpy nor RViz: plain numbers from a chain.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np

from ik_node.model.chain import Chain, chain_lengths
from ik_node.ros.rviz.camera import (FIELD_OF_VIEW, FILL, RENDER_PX, OrbitView,  # noqa: F401
                                     framing)
from ik_node.ros.rviz.labels import LABEL_DROP_SCALES, LINE_PITCH
from ik_node.ros.rviz.sizes import sizes_of

#: Lines of a tip's labels below it (a miss over two lines and a warning) the view leaves room
#: for.
LABEL_LINES = 3
#: The view of a spatial chain frames the tips and joints within this share of a tip's reach
#: of its first joint (where targets mostly are), so the robot is large enough to see its
#: wrist; a target farther out is drawn at the view's edge with an arrow pointing on
#: (:mod:`ik_node.ros.rviz.markers`). A planar chain's frames all of its reach: the disc its
#: targets are clicked on.
FRAME_SHARE = 0.7


def framed_points(chain: Chain, samples: int = 2000, seed: int = 0) -> np.ndarray:
    """What a view of ``chain`` must show: the base, and at ``samples`` random in-limit
    configurations every tip and joint within :data:`FRAME_SHARE` of the tip's reach of its
    first joint (all of a planar tip's reach), and where the labels of those tips hang (the
    tips lowered by the room the labels take)."""
    rng = np.random.default_rng(seed)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    q = rng.uniform(lower, upper, size=(samples, chain.n))
    sizes = sizes_of(chain)
    drop = LABEL_DROP_SCALES * sizes.handle_scale + LABEL_LINES * LINE_PITCH * sizes.text_height
    frames = chain.joint_frames(q)[..., :3, 3]  # (samples, n, 3)
    rest = chain.joint_frames(np.zeros(chain.n))[:, :3, 3]
    parts = [np.zeros((1, 3))]
    for tip, T in chain.fk_tips(q).items():
        idx = chain.joints_of_tip(tip)
        tips, joints = T[:, :3, 3], frames[:, idx].reshape(-1, 3)
        if idx:
            share = 1.0 if chain.motion_plane(tip) is not None else FRAME_SHARE
            radius = share * sum(chain_lengths(chain, tip))
            tips = tips[np.linalg.norm(tips - rest[idx[0]], axis=1) <= radius] if len(
                tips) else tips
            joints = joints[np.linalg.norm(joints - rest[idx[0]], axis=1) <= radius]
        parts += [tips, tips - [0.0, 0.0, drop], joints]
    return np.vstack(parts)


def view_of(chain: Chain, pitch: float = 0.45, yaw: float = 0.785398) -> OrbitView:
    """The Orbit view from ``pitch`` and ``yaw`` [rad] that frames :func:`framed_points`:
    looking at the middle of their box, as near as the 3D view still holds all of them within
    :data:`FILL` of its width and height (to the centimetre)."""
    return framing(framed_points(chain), pitch, yaw)


#: The packaged robots, each with its view in ``rviz/<robot>.rviz``.
ROBOTS = ('arm6', 'leg3', 'planar4', 'quad12', 'twin_arm')
#: The camera's yaw, and its pitch for a spatial chain and for a planar one (seen from higher
#: up: its tip moves in one plane) [rad].
YAW, PITCH, PLANAR_PITCH = 0.785398, 0.45, 0.9


def angles_of(chain: Chain) -> Tuple[float, float]:
    """``(pitch, yaw)`` [rad] of the view of ``chain``: from higher up when its first tip moves
    in a plane."""
    return (PLANAR_PITCH if chain.motion_plane(chain.tip_link) is not None else PITCH), YAW


def chain_view(chain: Chain) -> OrbitView:
    """The view of ``chain`` (the one ``rviz/<robot>.rviz`` holds for a packaged robot): the
    node keeps its far targets and labels inside it."""
    return view_of(chain, *angles_of(chain))


def robot_view(repo: Path, robot: str) -> OrbitView:
    """The view of packaged ``robot`` (its ``config/<robot>.yaml`` chain)."""
    import yaml
    params = yaml.safe_load((repo / 'config' / f'{robot}.yaml').read_text())[
        'ik_node']['ros__parameters']
    tips = params.get('tip_links') or [params['tip_link']]
    chain = Chain.from_urdf_file(repo / 'urdf' / params['urdf_file'], params['base_link'], tips)
    return chain_view(chain)


def with_view(rviz_text: str, view: OrbitView) -> str:
    """``rviz_text`` (an RViz config) with its current view's Distance, Focal Point, Pitch and
    Yaw set to ``view``'s (the rest of the text unchanged)."""
    head, sep, views = rviz_text.partition('\n  Views:\n')
    if not sep:
        raise ValueError('no "Views:" section in the RViz config')
    values = {'Distance': view.distance, 'X': view.focal[0] + 0.0, 'Y': view.focal[1] + 0.0,
              'Z': view.focal[2] + 0.0, 'Pitch': view.pitch, 'Yaw': view.yaw}
    current, rest = views.split('\n    Saved:', 1)
    for key, value in values.items():
        current, n = re.subn(rf'^(\s+{key}: ).*$', rf'\g<1>{value:g}', current, count=1,
                             flags=re.MULTILINE)
        if n != 1:
            raise ValueError(f'no {key} in the current view of the RViz config')
    return head + sep + current + '\n    Saved:' + rest


def config_with_view(template: str, description_xml: str, base_link: str,
                     tip_links: Sequence[str]) -> str:
    """``template`` (an RViz config: ``rviz/ik.rviz``) with the view of the chain from
    ``base_link`` to ``tip_links`` of the URDF ``description_xml``: the view the node keeps its
    far targets and labels inside (:func:`chain_view`), for a robot without a shipped view."""
    chain = Chain.from_urdf_string(description_xml, base_link, list(tip_links))
    return with_view(template, chain_view(chain))


def rviz_config_of(share: Path, plan, folder: Optional[Path] = None) -> Path:
    """The RViz config ``ik.launch.py`` starts RViz with for ``plan``
    (:class:`~ik_node.config.launch_plan.LaunchPlan`): the shipped ``rviz/<robot>.rviz`` of a
    packaged robot; for another robot whose description the launch holds, ``rviz/ik.rviz``
    with the view of its chain, written to ``folder`` (default: ``ik_node_rviz`` in the
    temporary folder; the file is named by a hash of what it holds); else ``rviz/ik.rviz``.

    Raises:
        ChainError: the plan's chain is not in its description (ik_node refuses it too).
    """
    stock = Path(share) / 'rviz' / plan.rviz_config
    params = plan.ik_node_parameters
    tips = params.get('tip_links') or ([params['tip_link']] if params.get('tip_link') else [])
    if plan.rviz_config != 'ik.rviz' or not plan.robot_description or not tips:
        return stock
    text = config_with_view(stock.read_text(), plan.robot_description, plan.fixed_frame, tips)
    folder = Path(folder) if folder is not None else Path(tempfile.gettempdir()) / 'ik_node_rviz'
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f'ik_{hashlib.sha256(text.encode()).hexdigest()[:12]}.rviz'
    if not path.is_file():
        tmp = path.with_suffix(f'.{os.getpid()}.tmp')
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def main(argv=None) -> int:
    """Write ``rviz/<robot>.rviz`` for every packaged robot from ``rviz/ik.rviz``."""
    repo = Path(__file__).resolve().parents[3]
    template = (repo / 'rviz' / 'ik.rviz').read_text()
    for robot in ROBOTS:
        view = robot_view(repo, robot)
        (repo / 'rviz' / f'{robot}.rviz').write_text(with_view(template, view))
        print(f'rviz/{robot}.rviz: {view}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
