"""RViz camera views that frame a robot: its reachable space, its targets and their labels.

:func:`view_of` places RViz's Orbit camera for a chain: it looks at the middle of the box that
holds every tip's sampled reach and every joint (the room the labels take below it included),
from just far enough that all of them are in the 3D view of the shipped window
(:data:`RENDER_PX`). ``rviz/<robot>.rviz`` of each packaged robot is ``rviz/ik.rviz`` with its
view (``python -m ik_node.ros.rviz.views`` writes them; a test checks they match).

Imports neither rclpy nor RViz: plain numbers from a chain.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Sequence

import numpy as np

from ik_node.model.chain import Chain
from ik_node.ros.rviz.markers import LABEL_DROP_SCALES, LINE_PITCH, sizes_of

#: RViz's Orbit camera: vertical field of view [rad] (rviz_default_plugins' default).
FIELD_OF_VIEW = math.pi / 4
#: The 3D view of ``rviz/ik.rviz``'s window (1200 x 846, Displays dock on the left, the right
#: dock hidden) [px]: width, height.
RENDER_PX = (880, 700)
#: Share of the 3D view the framed box may take (the rest is margin).
FILL = 0.9
#: Lines of a tip's labels below it (a miss over two lines and a warning) the view leaves room
#: for.
LABEL_LINES = 3


@dataclass(frozen=True)
class OrbitView:
    """RViz's Orbit view: the camera at ``focal + distance * (cos yaw cos pitch, sin yaw cos
    pitch, sin pitch)`` looking at ``focal`` (fixed frame, z up) [m, rad]."""

    focal: tuple
    distance: float
    pitch: float
    yaw: float

    def eye(self) -> np.ndarray:
        c = math.cos(self.pitch)
        return np.asarray(self.focal) + self.distance * np.array(
            [math.cos(self.yaw) * c, math.sin(self.yaw) * c, math.sin(self.pitch)])

    def project(self, points: np.ndarray, render_px: Sequence[int] = RENDER_PX) -> np.ndarray:
        """``(n, 2)`` normalised screen coordinates of ``points`` (-1..1 across the 3D view; a
        point behind the camera gets inf)."""
        eye = self.eye()
        forward = np.asarray(self.focal) - eye
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        d = np.atleast_2d(points) - eye
        depth = d @ forward
        t = math.tan(FIELD_OF_VIEW / 2)
        aspect = render_px[0] / render_px[1]
        with np.errstate(divide='ignore', invalid='ignore'):
            x = np.where(depth > 0, (d @ right) / depth / (t * aspect), np.inf)
            y = np.where(depth > 0, (d @ up) / depth / t, np.inf)
        return np.column_stack([x, y])


def framed_points(chain: Chain, samples: int = 2000, seed: int = 0) -> np.ndarray:
    """What a view of ``chain`` must show: every tip at ``samples`` random in-limit
    configurations (the reachable space), every joint, and where the labels of those tips
    hang (the same points lowered by the room the labels take)."""
    rng = np.random.default_rng(seed)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    q = rng.uniform(lower, upper, size=(samples, chain.n))
    tips = np.concatenate([T[:, :3, 3] for T in chain.fk_tips(q).values()])
    joints = chain.joint_frames(q)[..., :3, 3].reshape(-1, 3)
    sizes = sizes_of(chain)
    drop = LABEL_DROP_SCALES * sizes.handle_scale + LABEL_LINES * LINE_PITCH * sizes.text_height
    return np.vstack([tips, tips - [0.0, 0.0, drop], joints, np.zeros((1, 3))])


def view_of(chain: Chain, pitch: float = 0.45, yaw: float = 0.785398) -> OrbitView:
    """The Orbit view from ``pitch`` and ``yaw`` [rad] that frames :func:`framed_points`:
    looking at the middle of their box, as near as the 3D view still holds all of them within
    :data:`FILL` of its width and height (to the centimetre)."""
    points = framed_points(chain)
    focal = tuple(float(v) + 0.0 for v in np.round(0.5 * (points.min(axis=0) + points.max(axis=0)),
                                             3))
    near, far = 0.05, 50.0
    while far - near > 0.005:
        middle = 0.5 * (near + far)
        screen = OrbitView(focal, middle, pitch, yaw).project(points)
        if np.all(np.abs(screen) <= FILL):
            far = middle
        else:
            near = middle
    return OrbitView(focal, round(math.ceil(far * 100.0) / 100.0, 2), pitch, yaw)


#: The packaged robots' views: pitch and yaw [rad] (a planar arm moving in the ground plane is
#: seen from higher up).
ROBOT_ANGLES: Dict[str, tuple] = {
    'leg3': (0.45, 0.785398), 'planar4': (0.9, 0.785398), 'arm6': (0.45, 0.785398),
    'twin_arm': (0.45, 0.6), 'quad12': (0.45, 0.785398),
}


def robot_view(repo: Path, robot: str) -> OrbitView:
    """The view of packaged ``robot`` (its ``config/<robot>.yaml`` chain)."""
    import yaml
    params = yaml.safe_load((repo / 'config' / f'{robot}.yaml').read_text())[
        'ik_node']['ros__parameters']
    tips = params.get('tip_links') or [params['tip_link']]
    chain = Chain.from_urdf_file(repo / 'urdf' / params['urdf_file'], params['base_link'], tips)
    return view_of(chain, *ROBOT_ANGLES[robot])


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


def main(argv=None) -> int:
    """Write ``rviz/<robot>.rviz`` for every packaged robot from ``rviz/ik.rviz``."""
    repo = Path(__file__).resolve().parents[3]
    template = (repo / 'rviz' / 'ik.rviz').read_text()
    for robot in ROBOT_ANGLES:
        view = robot_view(repo, robot)
        (repo / 'rviz' / f'{robot}.rviz').write_text(with_view(template, view))
        print(f'rviz/{robot}.rviz: {view}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
