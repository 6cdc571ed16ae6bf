"""The pictures the main job writes: poses along a target path, the leg's reachability map, the
leg's and the arm's sampled reachability maps side by side, and the solvers' convergence.

Every function takes ready-made :class:`ik_node.Chain` objects, draws with matplotlib's Agg
backend (no display needed) and writes one PNG. No ROS here: the robot is drawn from its URDF by
forward kinematics (``chain.joint_frames(q)`` and ``chain.fk(q)``), and the solvers are called
directly through :func:`ik_node.make_solver`.

A solver that is not available yet (unknown name, or one that raises ``NotImplementedError``) is
skipped, and the picture's title says so.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Circle, Patch  # noqa: E402

from ik_node import Chain, ConfigError, IkResult, make_solver, reachability  # noqa: E402
from ik_node.model.chain import chain_lengths  # noqa: E402

DPI = 110
#: Plane name -> (index of the horizontal axis, index of the vertical axis, index of the normal).
PLANES = {'xz': (0, 2, 1), 'xy': (0, 1, 2)}
#: Errors [m] below this are drawn at this value on the log-scale convergence plot.
LOG_FLOOR_M = 1e-12
WORKSPACE_GREY = '0.88'

#: Targets of the convergence picture [m], base frame: well inside each robot's reach and away
#: from the start pose (the mid configuration: arm straight along +x, leg hanging straight down).
ARM_TARGET = (0.5, 0.6, 0.0)
LEG_TARGET = (0.20, 0.0, -0.40)
#: Gradient-descent (Jacobian transpose) step sizes [1/m^2] on the planar arm towards ARM_TARGET,
#: chosen by experiment (seed: arm straight along +x; 150 iterations), with what each shows:
#: 0.02 creeps (error falls every step, still ~0.26 m after 150 iterations); 1.0 converges (to
#: the 1e-5 m tolerance in ~80); 2.5 overshoots: the error rises on about every other step and
#: zigzags around 0.2 m. (Steps of 3 and more jam against the joint limits instead and stall.)
STEP_SIZES = (('too small', 0.02, 'creeps'), ('good', 1.0, 'converges'),
              ('too large', 2.5, 'overshoots, zigzags'))
TRANSPOSE_ITERATIONS = 150


# ------------------------------------------------------------------------------------ geometry
def _points_of_pose(chain: Chain, q) -> np.ndarray:
    """Base origin, every joint origin and the tip, (n + 2, 3) [m] in the base frame."""
    q = np.asarray(q, dtype=float)
    frames = chain.joint_frames(q)
    return np.vstack([np.zeros(3), frames[:, :3, 3], chain.fk(q)[:3, 3]])


def reach_circles(chain: Chain, plane: str) -> Optional[Tuple[int, np.ndarray, float, float]]:
    """The reach annulus of the joints that move in ``plane``, joint limits ignored.

    The pivot is the first joint whose axis is normal to the plane at q = 0 (the leg's hip
    pitch, the arm's first joint); the bones from it to the tip give the outer radius (their
    sum) and the inner one (``max(0, 2 * longest - sum)``).

    Returns:
        (pivot joint index, pivot (3,) [m] at q = 0, inner radius [m], outer radius [m]), or
        None when no joint's axis is normal to the plane.
    """
    _, _, normal_axis = PLANES[plane]
    frames = chain.joint_frames(np.zeros(chain.n))
    for i in range(chain.n):
        axis_base = frames[i, :3, :3] @ chain.joints[i].axis
        if abs(abs(axis_base[normal_axis]) - 1.0) < 1e-9:
            bones = list(chain_lengths(chain))[i:]
            outer = float(sum(bones))
            inner = max(0.0, 2.0 * max(bones) - outer)
            return i, frames[i, :3, 3].copy(), inner, outer
    return None


def _sampled_workspace(chain: Chain, plane: str, samples: int = 150_000
                       ) -> Optional[np.ndarray]:
    """Tip positions (samples, 3) [m] of random in-limit poses that keep the tip in the plane.

    Joints before the pivot of :func:`reach_circles` stay at 0; the others are drawn uniformly
    within their limits (continuous joints over a full turn). Seeded, so the picture is stable.
    """
    circles = reach_circles(chain, plane)
    if circles is None:
        return None
    low = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    q = np.random.default_rng(0).uniform(low, high, size=(samples, chain.n))
    q[:, :circles[0]] = 0.0
    return chain.fk(q)[:, :3, 3]


def _shifted_any(mask: np.ndarray) -> np.ndarray:
    """3 x 3 dilation of a boolean image (numpy only)."""
    padded = np.pad(mask, 1)
    out = np.zeros_like(mask)
    rows, cols = mask.shape
    for di in range(3):
        for dj in range(3):
            out |= padded[di:di + rows, dj:dj + cols]
    return out


def _closed(mask: np.ndarray, steps: int) -> np.ndarray:
    """Morphological closing: fills the pin holes random sampling leaves in a region."""
    margin = steps + 1  # room to grow, so the image border never counts as inside
    out = np.pad(mask, margin)
    for _ in range(steps):
        out = _shifted_any(out)
    for _ in range(steps):
        out = ~_shifted_any(~out)
    return out[margin:-margin, margin:-margin]


def _draw_sampled_workspace(ax, chain: Chain, plane: str, cell_m: float = 0.012) -> None:
    """Shade the cells of ``plane`` that some sampled in-limit pose puts the tip in."""
    cloud = _sampled_workspace(chain, plane)
    if cloud is None:
        return
    h, v, _ = PLANES[plane]
    lo = np.floor(cloud[:, [h, v]].min(axis=0) / cell_m) * cell_m - cell_m
    hi = np.ceil(cloud[:, [h, v]].max(axis=0) / cell_m) * cell_m + cell_m
    edges_h = np.arange(lo[0], hi[0] + cell_m / 2, cell_m)
    edges_v = np.arange(lo[1], hi[1] + cell_m / 2, cell_m)
    counts, _, _ = np.histogram2d(cloud[:, h], cloud[:, v], bins=(edges_h, edges_v))
    centres_h = 0.5 * (edges_h[1:] + edges_h[:-1])
    centres_v = 0.5 * (edges_v[1:] + edges_v[:-1])
    hit = _closed(counts.T > 0, steps=2)
    ax.contourf(centres_h, centres_v, hit.astype(float), levels=[0.5, 1.5],
                colors=[WORKSPACE_GREY], zorder=0)


# ------------------------------------------------------------------------ pose sequence picture
def plot_pose_sequence(chain, q_list, targets, reachable, title, path, plane='xz'):
    """The robot at each solved pose along a target path, drawn from its URDF by FK.

    Poses are overlaid and faded (later poses darker); a pose whose target was unreachable is the
    solver's best effort, drawn red, with a dotted line from its tip to the target. Targets are
    dots: green reachable, red unreachable. The grey region is where the tip can go within the
    joint limits (sampled), the dashed circles the reach annulus with limits ignored.

    Args:
        chain: the robot (:class:`ik_node.Chain`).
        q_list: the solved joint positions, a list of (n,) arrays [rad].
        targets: the targets, a list of (3,) arrays [m] in the base frame.
        reachable: per target, whether the solver reached it.
        title: the picture's title.
        path: where to write the PNG.
        plane: ``'xz'`` (side view, for the leg) or ``'xy'`` (top view, for the planar arm).
    """
    if plane not in PLANES:
        raise ValueError(f'plane {plane!r} is not one of: {", ".join(PLANES)}')
    if not (len(q_list) == len(targets) == len(reachable)):
        raise ValueError(f'q_list, targets and reachable differ in length: {len(q_list)}, '
                         f'{len(targets)}, {len(reachable)}')
    h, v, _ = PLANES[plane]
    names = 'xyz'
    fig, ax = plt.subplots(figsize=(7.5, 8.2))
    legend: List = []

    _draw_sampled_workspace(ax, chain, plane)
    legend.append(Line2D([], [], ls='', marker='s', color=WORKSPACE_GREY, markersize=10,
                         label='where the tip can go within the joint limits (sampled)'))
    circles = reach_circles(chain, plane)
    if circles is not None:
        pivot_index, pivot, inner, outer = circles
        for r in (inner, outer):
            if r > 0.0:
                ax.add_patch(Circle((pivot[h], pivot[v]), r, fill=False, ls='--', lw=1.0,
                                    color='0.45', zorder=1))
        radii = f'{inner:.2f} .. {outer:.2f} m' if inner > 0.0 else f'radius {outer:.2f} m'
        legend.append(Line2D([], [], ls='--', color='0.45', label=f'reach by link lengths only '
                             f'({radii} about {chain.joint_names[pivot_index]})'))

    count = len(q_list)
    for k, (q, target, ok) in enumerate(zip(q_list, targets, reachable)):
        pts = _points_of_pose(chain, q)
        fade = 0.25 + 0.6 * (k + 1) / max(count, 1)
        if ok:
            ax.plot(pts[:, h], pts[:, v], '-o', color='tab:blue', alpha=fade * 0.7, lw=2.0,
                    markersize=3.5, zorder=2)
        else:
            ax.plot(pts[:, h], pts[:, v], '-o', color='tab:red', alpha=0.35 + 0.3 * fade,
                    lw=2.0, markersize=3.5, zorder=3)
            target = np.asarray(target, dtype=float)
            ax.plot([pts[-1, h], target[h]], [pts[-1, v], target[v]], ':', color='tab:red',
                    lw=1.2, zorder=3)
    legend.append(Line2D([], [], color='tab:blue', marker='o', markersize=3.5, lw=2,
                         label='solved pose (later = darker)'))
    if not all(reachable):
        legend.append(Line2D([], [], color='tab:red', marker='o', markersize=3.5, lw=2,
                             alpha=0.7, label='best-effort pose, unreachable target'))

    tgt = np.array([np.asarray(t, dtype=float) for t in targets]).reshape(-1, 3)
    ok_mask = np.array(reachable, dtype=bool)
    if len(tgt):
        ax.plot(tgt[:, h], tgt[:, v], '-', color='0.3', lw=0.8, alpha=0.6, zorder=4)
        ax.scatter(tgt[ok_mask, h], tgt[ok_mask, v], s=36, color='tab:green',
                   edgecolors='black', linewidths=0.6, zorder=5)
        ax.scatter(tgt[~ok_mask, h], tgt[~ok_mask, v], s=36, color='tab:red',
                   edgecolors='black', linewidths=0.6, zorder=5)
    if ok_mask.any():
        legend.append(Line2D([], [], ls='', marker='o', color='tab:green',
                             markeredgecolor='black',
                             label=f'target, reached ({int(ok_mask.sum())})'))
    if not ok_mask.all():
        legend.append(Line2D([], [], ls='', marker='o', color='tab:red', markeredgecolor='black',
                             label=f'target, unreachable ({int((~ok_mask).sum())})'))
    ax.plot([0.0], [0.0], 's', color='black', markersize=8, zorder=6)
    legend.append(Line2D([], [], ls='', marker='s', color='black',
                         label=f'base ({chain.base_link})'))

    ax.set_aspect('equal', adjustable='datalim')
    ax.set_xlabel(f'{names[h]} [m] (base frame)')
    ax.set_ylabel(f'{names[v]} [m] (base frame)')
    view = 'side view' if plane == 'xz' else 'top view'
    ax.set_title(f'{title}\n({view}, {names[h]}-{names[v]} plane; {count} poses)')
    ax.grid(True, lw=0.4, alpha=0.5)
    ax.legend(handles=legend, loc='upper center', bbox_to_anchor=(0.5, -0.09), ncol=2,
              fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)



# ------------------------------------------------------------------------------- the gait
FOOT_COLOURS = ('tab:blue', 'tab:orange', 'tab:purple', 'tab:brown')


def _leg_points(chain: Chain, q, foot: str) -> np.ndarray:
    """Base origin, the joint origins of ``foot``'s leg and the foot, (k, 3) [m] (base frame)."""
    q = np.asarray(q, dtype=float)
    frames = chain.joint_frames(q)
    joints = chain.joints_of_tip(foot)
    return np.vstack([np.zeros(3), frames[joints, :3, 3], chain.fk_tips(q)[foot][:3, 3]])


def plot_gait(chain, targets, q_list, reached, title, path, poses=8):
    """A quadruped's feet following a gait: each foot's target path and the published legs.

    Side view (x-z) and top view (x-y). Each foot's target path is a line in its own colour; a
    target the node reached is a small dot on it, one it did not reach a red cross, with a dotted
    red line from the published foot to it. ``poses`` instants evenly spread over the gait show
    every leg as published (grey, red where that foot missed its target).

    Args:
        chain: the quadruped (:class:`ik_node.Chain` with one tip per foot).
        targets: per instant, ``{foot: (3,) target [m], base frame}``.
        q_list: per instant, the published joint positions (n,) [rad] (None: no answer).
        reached: per instant, ``{foot: True if the node reached that foot's target}``.
        title: the picture's title.
        path: where to write the PNG.
        poses: how many instants to draw the legs at.
    """
    if not (len(targets) == len(q_list) == len(reached)):
        raise ValueError(f'targets, q_list and reached differ in length: {len(targets)}, '
                         f'{len(q_list)}, {len(reached)}')
    feet = list(chain.tip_links)
    fig, axes = plt.subplots(1, 2, figsize=(13.0, 6.4))
    legend: List = []
    answered = [k for k, q in enumerate(q_list) if q is not None]
    shown = set(answered[::max(1, len(answered) // max(poses, 1))][:poses])
    for ax, (h, v), view in zip(axes, ((0, 2), (0, 1)), ('side view, x-z', 'top view, x-y')):
        for colour, foot in zip(FOOT_COLOURS, feet):
            path_m = np.array([t[foot] for t in targets])
            ax.plot(path_m[:, h], path_m[:, v], '-', color=colour, lw=1.2, alpha=0.8, zorder=2)
            ok = np.array([r.get(foot, False) for r in reached], dtype=bool)
            ax.plot(path_m[ok, h], path_m[ok, v], '.', color=colour, markersize=3, zorder=3)
            ax.plot(path_m[~ok, h], path_m[~ok, v], 'x', color='tab:red', markersize=6,
                    mew=1.5, zorder=5)
        for k in sorted(shown):
            for foot in feet:
                pts = _leg_points(chain, q_list[k], foot)
                missed = not reached[k].get(foot, False)
                ax.plot(pts[:, h], pts[:, v], '-o', color='tab:red' if missed else '0.35',
                        alpha=0.75 if missed else 0.35, lw=1.6, markersize=2.5, zorder=4)
                if missed:
                    target = np.asarray(targets[k][foot], dtype=float)
                    ax.plot([pts[-1, h], target[h]], [pts[-1, v], target[v]], ':',
                            color='tab:red', lw=1.2, zorder=4)
        ax.plot([0.0], [0.0], 's', color='black', markersize=7, zorder=6)
        ax.set_aspect('equal', adjustable='datalim')
        ax.set_xlabel('x [m] (trunk frame)')
        ax.set_ylabel(('z' if v == 2 else 'y') + ' [m] (trunk frame)')
        ax.set_title(view)
        ax.grid(True, lw=0.4, alpha=0.5)
    for colour, foot in zip(FOOT_COLOURS, feet):
        legend.append(Line2D([], [], color=colour, marker='.', lw=1.2,
                             label=f'{foot}: target path, reached'))
    missed_count = sum(not r.get(f, False) for r in reached for f in feet)
    legend += [Line2D([], [], ls='', marker='x', color='tab:red', mew=1.5,
                      label=f'target not reached ({missed_count} foot targets)'),
               Line2D([], [], color='0.35', marker='o', markersize=2.5, alpha=0.5,
                      label=f'legs as published ({len(shown)} instants)'),
               Line2D([], [], color='tab:red', marker='o', markersize=2.5, alpha=0.75,
                      label='a leg whose foot missed its target (best effort)')]
    fig.suptitle(f'{title}\n({len(answered)} of {len(targets)} instants answered)')
    fig.legend(handles=legend, loc='lower center', ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0.0, 0.08, 1.0, 1.0))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


# -------------------------------------------------------------------- reachability map picture
REACH_SOLVER = 'analytic_hip_knee'
#: Margin [m] of the reachability grid beyond the outer reach circle.
GRID_MARGIN_M = 0.12


def _reachability_results(chain: Chain, plane_y: float, resolution: int
                          ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """xs, zs [m], residual [m] and reached (both (len(zs), len(xs))) of the x-z slice."""
    if int(resolution) != resolution or resolution < 2:
        raise ValueError(f'resolution must be a whole number >= 2, got {resolution!r}')
    circles = reach_circles(chain, 'xz')
    if circles is None:
        raise ValueError(f'no joint of {chain!r} turns about y: the x-z slice has no reach '
                         'annulus to centre the grid on')
    _, pivot, _, outer = circles
    half = outer + GRID_MARGIN_M
    xs = np.linspace(pivot[0] - half, pivot[0] + half, int(resolution))
    zs = np.linspace(pivot[2] - half, pivot[2] + half, int(resolution))
    solver = make_solver(REACH_SOLVER, chain)
    residual = np.empty((len(zs), len(xs)))
    reached = np.empty((len(zs), len(xs)), dtype=bool)
    for i, z in enumerate(zs):
        for j, x in enumerate(xs):
            result = solver.solve((x, plane_y, z))
            residual[i, j] = (result.min_residual if result.min_residual is not None
                              else result.position_error)
            reached[i, j] = result.reachable
    return xs, zs, residual, reached


def reachability_grid(chain, plane_y=0.0, resolution=121):
    """The min residual [m] of analytic_hip_knee over a square x-z grid at y = ``plane_y``.

    The grid is centred on the hip pitch joint (the first joint turning about y) and reaches
    ``GRID_MARGIN_M`` beyond the outer reach circle. Per point: the solver's ``min_residual``
    (its proven lower bound: 0 when solved, the distance to the reach annulus when outside it)
    where it gives one, else the FK-measured ``position_error`` of its best pose (where the
    joint limits, not the lengths, forbid the target).

    Returns:
        (xs (resolution,) [m], zs (resolution,) [m], residual (resolution, resolution) [m]),
        ``residual[i, j]`` for the target (xs[j], plane_y, zs[i]) in the base frame.

    Raises:
        ConfigError: analytic_hip_knee is not available.
        ChainError: analytic_hip_knee cannot solve this chain.
    """
    xs, zs, residual, _ = _reachability_results(chain, float(plane_y), resolution)
    return xs, zs, residual


def plot_reachability_map(chain, path, plane_y=0.0, resolution=121):
    """A slice (x-z plane at y = ``plane_y``) of the leg's workspace, coloured by min residual.

    Colour: :func:`reachability_grid` [m], 0 (white) where analytic_hip_knee reaches the target.
    Hatched: inside the reach annulus, but the joint limits forbid it. Dashed circles: the reach
    annulus about the hip pitch joint (lengths only). The leg is drawn hanging at q = 0.
    """
    fig, ax = plt.subplots(figsize=(8.0, 8.0))
    note = ''
    circles = reach_circles(chain, 'xz')
    try:
        xs, zs, residual, reached = _reachability_results(chain, float(plane_y), resolution)
    except (ConfigError, NotImplementedError) as exc:
        note = f'\n{REACH_SOLVER} not available yet: {str(exc)[:60]}'
        xs = zs = residual = reached = None
    legend: List = []
    if residual is not None:
        dx, dz = xs[1] - xs[0], zs[1] - zs[0]
        extent = (xs[0] - dx / 2, xs[-1] + dx / 2, zs[0] - dz / 2, zs[-1] + dz / 2)
        # Reached points (residual 0) are masked and drawn white.
        cmap = plt.get_cmap('magma_r').with_extremes(bad='white')
        image = ax.imshow(np.ma.masked_where(reached, residual), origin='lower', extent=extent,
                          cmap=cmap, vmin=0.0, vmax=max(float(residual.max()), 1e-6),
                          interpolation='nearest', zorder=0)
        bar = fig.colorbar(image, ax=ax, shrink=0.72)
        bar.set_label('min residual [m]: how far the foot must stay from the target\n'
                      "(the solver's min_residual; where joint limits bind, its pose's FK error)",
                      fontsize=9)
        limited = ~reached
        inside = np.zeros_like(reached)
        if circles is not None:
            _, pivot, inner, outer = circles
            X, Z = np.meshgrid(xs, zs)
            d = np.hypot(np.hypot(X - pivot[0], plane_y - pivot[1]), Z - pivot[2])
            inside = (d >= inner) & (d <= outer)
        if np.any(limited & inside):
            ax.contourf(xs, zs, (limited & inside).astype(float), levels=[0.5, 1.5],
                        colors='none', hatches=['////'], zorder=1)
            legend.append(_hatch_proxy('in the annulus, but joint limits forbid it'))
        legend.append(Line2D([], [], ls='', marker='s', markersize=10, color='white',
                             markeredgecolor='0.5', label=f'white: reached, residual 0 '
                             f'({int(reached.sum())} of {reached.size} grid points)'))
    if circles is not None:
        pivot_index, pivot, inner, outer = circles
        for r, style in ((inner, ':'), (outer, '--')):
            ax.add_patch(Circle((pivot[0], pivot[2]), r, fill=False, ls=style, lw=1.4,
                                color='tab:blue', zorder=3))
        legend.append(Line2D([], [], ls='--', color='tab:blue', label=f'outer reach {outer:.2f} '
                             f'm about {chain.joint_names[pivot_index]}'))
        legend.append(Line2D([], [], ls=':', color='tab:blue', label=f'inner reach {inner:.2f} '
                             'm (thigh - shin)'))
        if residual is None:
            half = outer + GRID_MARGIN_M
            ax.set_xlim(pivot[0] - half, pivot[0] + half)
            ax.set_ylim(pivot[2] - half, pivot[2] + half)
    pts = _points_of_pose(chain, np.zeros(chain.n))
    ax.plot(pts[:, 0], pts[:, 2], '-o', color='tab:cyan', lw=2.5, markersize=4, zorder=4)
    legend.append(Line2D([], [], color='tab:cyan', marker='o', markersize=4, lw=2.5,
                         label='the leg at q = 0 (hanging down)'))
    ax.set_aspect('equal')
    ax.set_xlabel('x [m] (base frame, forward)')
    ax.set_ylabel('z [m] (base frame, up)')
    ax.set_title(f'Where can the foot go? x-z slice at y = {plane_y:g} m, coloured by the '
                 f'min residual\nof {REACH_SOLVER} (0 = reachable){note}')
    ax.legend(handles=legend, loc='upper center', bbox_to_anchor=(0.5, -0.09), ncol=2,
              fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _hatch_proxy(label: str) -> Patch:
    return Patch(facecolor='white', edgecolor='black', hatch='////', label=label)


# ----------------------------------------------------------- sampled reachability maps picture
#: Map parameters of the picture: (samples, voxel edge [m]) per robot. The leg's map is position
#: only (3 joints) and converges with fewer samples, so it gets finer voxels; the arm's are the
#: library defaults, what a node would build.
LEG_MAP = (1_000_000, 0.025)
ARM_MAP = (reachability.DEFAULT_SAMPLES, reachability.DEFAULT_VOXEL_M)


def _draw_map_slice(ax, fig, reach_map, label: str) -> None:
    """The x-z layer through y = 0 of a map, coloured by index (white: not in the map)."""
    image = reachability.map_slice(reach_map, 'xz', 0.0)
    half = 0.5 * reach_map.voxel_size
    extent = (image.h_centres[0] - half, image.h_centres[-1] + half,
              image.v_centres[0] - half, image.v_centres[-1] + half)
    if reach_map.position_only:
        ax.imshow(np.where(np.isfinite(image.index), 1.0, np.nan), origin='lower',
                  extent=extent, cmap=plt.get_cmap('Greens').with_extremes(bad='white'),
                  vmin=0.0, vmax=1.6, interpolation='nearest', zorder=0)
    else:
        shown = ax.imshow(np.ma.masked_invalid(image.index), origin='lower', extent=extent,
                          cmap=plt.get_cmap('viridis').with_extremes(bad='white'), vmin=0.0,
                          vmax=1.0, interpolation='nearest', zorder=0)
        bar = fig.colorbar(shown, ax=ax, shrink=0.75)
        bar.set_label(f'reachability index: share of the {len(reach_map.directions)} tool '
                      'approach directions\nsampled in the voxel (Reuleaux-style)', fontsize=9)
    ax.set_title(f'{label}: {reach_map.base_link} -> {reach_map.tip_link}\n'
                 f'{reach_map.samples:,} samples, {reach_map.voxel_size:g} m voxels, '
                 'slice y = 0',
                 fontsize=10)


def plot_sampled_reachability(leg_chain, arm_chain, path, leg_map=LEG_MAP, arm_map=ARM_MAP):
    """The leg's and the arm's sampled reachability maps side by side (x-z slice at y = 0).

    Left: the leg's map (position only: a voxel is green when some sampled in-limit pose puts
    the foot in it), with the reach annulus (lengths only) dashed, as on the leg's
    min-residual picture. Right: the arm's map coloured by Reuleaux's reachability index (see
    :mod:`ik_node.reachability`). Each robot is drawn at q = 0. Both maps are sampled, so they
    under-approximate: white is "not sampled", not "unreachable".

    Args:
        leg_chain, arm_chain: the robots.
        path: where to write the PNG.
        leg_map, arm_map: (samples, voxel edge [m]) of each map.

    Returns:
        {robot label: its :class:`ik_node.reachability.ReachabilityMap`}.
    """
    maps = {}
    fig, (left, right) = plt.subplots(1, 2, figsize=(14.5, 7.0),
                                      gridspec_kw={'width_ratios': [1.0, 1.2]})
    for ax, label, chain, (samples, voxel) in ((left, 'leg3', leg_chain, leg_map),
                                               (right, 'arm6', arm_chain, arm_map)):
        reach_map = reachability.build_reachability_map(chain, samples=samples,
                                                        voxel_size=voxel)
        maps[label] = reach_map
        _draw_map_slice(ax, fig, reach_map, label)
        legend = []
        if reach_map.position_only:
            legend.append(Line2D([], [], ls='', marker='s', markersize=10,
                                 color=plt.get_cmap('Greens')(1 / 1.6),
                                 label='sampled: the tip reaches this voxel'))
        circles = reach_circles(chain, 'xz')
        if circles is not None and reach_map.position_only:
            pivot_index, pivot, inner, outer = circles
            for r, style in ((inner, ':'), (outer, '--')):
                if r > 0.0:
                    ax.add_patch(Circle((pivot[0], pivot[2]), r, fill=False, ls=style, lw=1.2,
                                        color='tab:blue', zorder=3))
            legend.append(Line2D([], [], ls='--', color='tab:blue',
                                 label=f'reach by lengths only about '
                                       f'{chain.joint_names[pivot_index]}'))
        pts = _points_of_pose(chain, np.zeros(chain.n))
        ax.plot(pts[:, 0], pts[:, 2], '-o', color='tab:red', lw=2.2, markersize=3.5, zorder=4)
        legend.append(Line2D([], [], color='tab:red', marker='o', markersize=3.5, lw=2.2,
                             label='the robot at q = 0'))
        legend.append(Line2D([], [], ls='', marker='s', markersize=10, color='white',
                             markeredgecolor='0.5',
                             label='white: not sampled (may still be reachable)'))
        ax.set_aspect('equal')
        ax.set_xlabel(f'x [m] ({chain.base_link})')
        ax.set_ylabel(f'z [m] ({chain.base_link})')
        ax.grid(True, lw=0.4, alpha=0.5)
        ax.legend(handles=legend, loc='upper center', bbox_to_anchor=(0.5, -0.1), ncol=2,
                  fontsize=8, frameon=False)
    fig.suptitle('Sampled reachability maps (ik_node.reachability): where the tip can go, and '
                 'in how many directions', fontsize=12, y=1.0)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, bbox_inches='tight')  # the legends sit below the axes
    plt.close(fig)
    return maps


# -------------------------------------------------------------------------- convergence picture
def _try_solve(name: str, chain: Chain, params: dict, target: Sequence[float]
               ) -> Tuple[Optional[IkResult], str]:
    """(result, '') or (None, why) when the solver is not available yet."""
    try:
        solver = make_solver(name, chain, {**params, 'record_history': True})
        return solver.solve(target), ''
    except (ConfigError, NotImplementedError) as exc:
        return None, f'{name}: {type(exc).__name__}'


def _error_curve(chain: Chain, result: IkResult, target: Sequence[float]) -> np.ndarray:
    """Position error [m] per iteration, iteration 0 being the seed (the mid configuration).

    A history one entry longer than the iteration count starts at the seed already; otherwise
    the seed's error is measured here by FK and put in front. Without a history: seed, final.
    """
    seed_error = float(np.linalg.norm(chain.fk(chain.mid_configuration())[:3, 3] -
                                      np.asarray(target, dtype=float)))
    history = list(result.history) if result.history else [result.position_error]
    if len(history) != result.iterations + 1:
        history = [seed_error] + history
    return np.maximum(np.array(history, dtype=float), LOG_FLOOR_M)


def _fmt_target(target: Sequence[float]) -> str:
    return '(' + ', '.join(f'{v:.2f}' for v in target) + ') m'


def plot_convergence(path, leg_chain, arm_chain):
    """Position error per iteration (log scale) of the three solvers, and of gradient descent.

    Left: analytic_hip_knee on the leg (one closed-form step) towards ``LEG_TARGET``; fabrik
    and damped_jacobian (dls) on the planar arm towards ``ARM_TARGET``; all from the mid
    configuration. Right: damped_jacobian with ``method: transpose`` (plain gradient descent)
    on the arm towards ``ARM_TARGET`` at the three ``STEP_SIZES``: too small (creeps), good
    (converges), too large (overshoots and oscillates).

    Returns:
        {curve label: final FK-measured position error [m]} of every curve drawn.
    """
    finals: Dict[str, float] = {}
    fig, (left, right) = plt.subplots(1, 2, figsize=(14.0, 6.6))
    tolerances = []

    skipped = []
    solvers = [
        ('analytic_hip_knee', 'leg3', leg_chain, {}, LEG_TARGET, 'tab:purple', 's'),
        # a budget far above a solve's time: the curves show the iterations, not the clock
        ('fabrik', 'planar4', arm_chain, {'timeout': 1.0}, ARM_TARGET, 'tab:orange', 'o'),
        ('damped_jacobian', 'planar4', arm_chain, {'method': 'dls', 'timeout': 1.0}, ARM_TARGET,
         'tab:blue', '^'),
    ]
    for name, robot, chain, params, target, color, marker in solvers:
        result, why = _try_solve(name, chain, params, target)
        if result is None:
            skipped.append(why)
            continue
        curve = _error_curve(chain, result, target)
        method = f' ({params["method"]})' if 'method' in params else ''
        label = f'{name}{method} on {robot}'
        finals[label] = result.position_error
        left.semilogy(np.arange(len(curve)), curve, '-', marker=marker, color=color, lw=1.8,
                      markersize=5, label=f'{label}, target {_fmt_target(target)}: '
                      f'{result.iterations} it., {result.status.value}')
        tolerances.append(make_solver(name, chain).params['position_tolerance'])
    if tolerances:
        left.axhline(min(tolerances), color='0.3', ls='--', lw=1.0,
                     label=f'position tolerance {min(tolerances):g} m')
    left.set_title('Three solvers, one target each, from the mid configuration' +
                   (f'\nskipped (not available yet): {"; ".join(skipped)}' if skipped else ''),
                   fontsize=10)
    left.set_xlabel('iteration (0 = the seed pose)')
    left.set_ylabel(f'tip position error [m] (log; below {LOG_FLOOR_M:g} drawn at it)')
    left.grid(True, which='both', lw=0.4, alpha=0.5)
    left.legend(fontsize=8, loc='upper center', bbox_to_anchor=(0.5, -0.13), frameon=False)

    skipped = []
    colors = {'too small': 'tab:gray', 'good': 'tab:green', 'too large': 'tab:red'}
    for verdict, eta, behaviour in STEP_SIZES:
        params = {'method': 'transpose', 'step_size': eta,
                  'max_iterations': TRANSPOSE_ITERATIONS}
        result, why = _try_solve('damped_jacobian', arm_chain, params, ARM_TARGET)
        if result is None:
            skipped.append(why)
            continue
        curve = _error_curve(arm_chain, result, ARM_TARGET)
        label = f'transpose, step size {eta:g} 1/m² ({verdict}: {behaviour})'
        finals[label] = result.position_error
        right.semilogy(np.arange(len(curve)), curve, '-', color=colors[verdict], lw=1.6,
                       label=f'{label}: final {result.position_error:.1e} m after '
                       f'{result.iterations} it.')
    if not skipped:
        tol = make_solver('damped_jacobian', arm_chain).params['position_tolerance']
        right.axhline(tol, color='0.3', ls='--', lw=1.0, label=f'position tolerance {tol:g} m')
    right.set_title('Gradient descent q ← q + η Jᵀe (damped_jacobian, method: transpose)\n'
                    f'on planar4, target {_fmt_target(ARM_TARGET)}: the step size η decides' +
                    (f'\nskipped (not available yet): {"; ".join(skipped)}' if skipped else ''),
                    fontsize=10)
    right.set_xlabel('iteration (0 = the seed pose)')
    right.set_ylabel('tip position error [m] (log)')
    right.grid(True, which='both', lw=0.4, alpha=0.5)
    right.legend(fontsize=8, loc='upper center', bbox_to_anchor=(0.5, -0.13), frameon=False)
    fig.suptitle('Convergence: tip position error per iteration', fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return finals
