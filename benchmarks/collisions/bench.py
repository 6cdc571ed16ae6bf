#!/usr/bin/env python3
"""Self-collision of IK answers, with and without ik_node's collision check, judged by an
independent mesh-exact check.

    python -m benchmarks.collisions.bench [--robots ur5e fr3] [--n 300] [--seed 1] [--out FILE.md]
        [--timeout S] [--retry-time S] [--repair-steps N] [--no-ground]

Targets are the tips of random configurations that the independent check finds collision-free
(seed printed). Each target is solved by ``damped_jacobian`` (6D and position only) and
``fabrik`` (position only) from the mid configuration and from a random seed, once with
``self_collision: false`` and once with the default check, interleaved target by target, each
solve timed around ``solve()`` (wall clock and CPU time: what a caller waits for, the check and
its retries included) (and, for 6D, by OptIK when ``optik-py`` is installed, in a pass of its
own over the same targets and seeds right after: it checks no collision; ``max_time`` the
solvers' ``timeout``). Reported per case: the share of reachable answers the independent check
finds in self-collision, the share of targets reached (reachable and, with the check on,
collision-free), the median solve time of each, the median time of ik_node's check of one
configuration, and how the checked solver's answers that collided ended: freed by
``damped_jacobian``'s collision term alone (its message says so), by a restart, or
``in_collision``. ``--repair-steps 0`` turns the collision term off (restarts only).

The ground plane: ``damped_jacobian`` (position only, random seeds) with the self-collision
check, without and with ``collision.ground_z`` 0 (the mounting plane of the base), on the
targets whose configuration keeps every moving link's raw mesh above the plane; an answer is
below it when a vertex of a moving link's raw mesh is.

The independent check is not the solver's approximation: raw triangle meshes (python-fcl BVH,
no hulls, no capsules, no padding), links placed by ``Chain.link_transform`` (the URDF walked
joint by joint), and its own allowed-collision table made the way MoveIt's Setup Assistant makes
one (adjacent links, pairs in collision always or never over ``--table-samples`` random
configurations, judged by the same raw meshes).

Reads ../shared/robots/<robot>.urdf with ``AMENT_PREFIX_PATH`` set to its collision_prefix.
"""

import argparse
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import transforms3d

from benchmarks.common.robots import SHARED_ROBOTS as SHARED
from benchmarks.common.robots import add_collision_prefix

REPO = Path(__file__).resolve().parents[2]
ROBOTS = {'ur5e': ('base_link', 'tool0'), 'fr3': ('fr3_link0', 'fr3_hand_tcp'),
          'ur5': ('base_link', 'tool0'), 'ur10': ('base_link', 'tool0'),
          'panda': ('panda_link0', 'panda_hand_tcp'), 'iiwa14': ('iiwa_link_0', 'iiwa_link_ee'),
          'kinova_j2s6s200': ('j2s6s200_link_base', 'j2s6s200_end_effector')}
#: The solvers' default ``timeout`` [s]: OptIK's ``max_time``.
SOLVER_TIMEOUT_S = 0.005
CASES = [('damped_jacobian', True, 'mid'), ('damped_jacobian', True, 'random'),
         ('damped_jacobian', False, 'mid'), ('damped_jacobian', False, 'random'),
         ('fabrik', False, 'random')]


class MeshCheck:
    """Self-collision by raw meshes: every pair the MoveIt-style table keeps, BVH vs BVH."""

    def __init__(self, chain, samples, rng):
        import fcl
        from ik_node.collision.geometry import pieces_from_robot
        self.fcl = fcl
        self.chain = chain
        pieces, _ = pieces_from_robot(chain.robot)
        self.links = list(pieces)
        self.objects = {}
        for link, items in pieces.items():
            objs = []
            for piece in items:
                if piece.kind == 'mesh':
                    bvh = fcl.BVHModel()
                    bvh.beginModel(len(piece.mesh_vertices), len(piece.mesh_faces))
                    bvh.addSubModel(piece.mesh_vertices, piece.mesh_faces)
                    bvh.endModel()
                    objs.append((fcl.CollisionObject(bvh, fcl.Transform()), np.eye(4)))
                else:
                    shape = {'box': fcl.Box, 'sphere': fcl.Sphere,
                             'cylinder': fcl.Cylinder}[piece.kind](*piece.size)
                    objs.append((fcl.CollisionObject(shape, fcl.Transform()),
                                 piece.T_link_piece))
            self.objects[link] = objs
        parent = {j.child: j.parent for j in chain.robot.joints}
        adjacent = set()
        for link in self.links:
            p = parent.get(link)
            while p is not None and p not in self.objects:
                p = parent.get(p)
            if p is not None:
                adjacent.add(frozenset((link, p)))
        candidates = [(a, b) for i, a in enumerate(self.links) for b in self.links[i + 1:]
                      if frozenset((a, b)) not in adjacent]
        self.pairs = candidates
        lower = np.maximum(chain.lower, -math.pi)
        upper = np.minimum(chain.upper, math.pi)
        counts = dict.fromkeys(candidates, 0)
        for _ in range(samples):
            hits = self.colliding(rng.uniform(lower, upper))
            for pair in hits:
                counts[pair] += 1
        self.pairs = [p for p in candidates if 0 < counts[p] < samples]
        # links some chain joint moves, and their raw points (mesh vertices, primitive corners)
        q0, q1 = np.zeros(chain.n), np.random.default_rng(0).uniform(lower, upper)
        self.moving = [link for link in self.links if not np.allclose(
            chain.link_transform(link, q0), chain.link_transform(link, q1))]
        self.points = {link: [p.mesh_vertices if p.kind == 'mesh' else p.hull_vertices
                              for p in items] for link, items in pieces.items()}

    def _place(self, q):
        """Every link's objects moved to ``q``: ``{link: [object, ...]}``."""
        fcl = self.fcl
        placed = {}
        for link in self.links:
            T = self.chain.link_transform(link, q)
            objs = []
            for obj, T_piece in self.objects[link]:
                Tp = T @ T_piece
                obj.setTransform(fcl.Transform(Tp[:3, :3], Tp[:3, 3]))
                objs.append(obj)
            placed[link] = objs
        return placed

    def closer_than(self, q, distance):
        """Whether the raw meshes of a kept pair come closer than ``distance`` [m] at ``q``."""
        fcl = self.fcl
        placed = self._place(q)
        return any(fcl.distance(oa, ob, fcl.DistanceRequest(), fcl.DistanceResult()) < distance
                   for a, b in self.pairs for oa in placed[a] for ob in placed[b])

    def lowest_moving(self, q):
        """The lowest z [m] of a raw mesh vertex (or primitive corner) of a link the chain's
        joints move, at ``q``."""
        low = math.inf
        for link in self.moving:
            T = self.chain.link_transform(link, q)
            for points in self.points[link]:
                low = min(low, float((points @ T[:3, :3].T + T[:3, 3])[:, 2].min()))
        return low

    def colliding(self, q):
        """The pairs whose raw meshes touch at ``q``."""
        fcl = self.fcl
        placed = self._place(q)
        out = []
        for a, b in self.pairs:
            if any(fcl.collide(oa, ob, fcl.CollisionRequest(), fcl.CollisionResult())
                   for oa in placed[a] for ob in placed[b]):
                out.append((a, b))
        return out


def optik_for(robot, path, base, tip, chain, max_time):
    """OptIK's adapter (benchmarks/solvers/compiled_peers.py) for ``chain``, or why not (text)."""
    try:
        from benchmarks.common.adapter import Robot, Skip
        from benchmarks.solvers.compiled_peers import OptikAdapter
        from benchmarks.solvers.peers import parse_urdf, urdf_joint_path
        urdf = parse_urdf(path)
        spec = Robot(robot, path, base, tip, chain, urdf, urdf_joint_path(urdf, base, tip))
        return OptikAdapter(spec, '6d', max_time)
    except ImportError as exc:
        return f'not installed ({exc})'
    except Skip as exc:
        return str(exc)


def optik_solve(peer, chain, position, quat, seed):
    """``(seconds, reached)`` of one OptIK solve (its call timed), judged by ik_node's FK
    within the solvers' default tolerances."""
    from adapter import Target
    x, y, z, w = quat
    T = np.eye(4)
    T[:3, :3] = transforms3d.quaternions.quat2mat((w, x, y, z))
    T[:3, 3] = position
    args = peer.prepare(Target(T, np.asarray(position), np.asarray(quat)), seed)
    start = time.perf_counter()
    try:
        raw = peer.solve(*args)
    except Exception:  # a panic counts as a failed solve
        raw = None
    seconds = time.perf_counter() - start
    q = peer.joints(raw)
    if not np.all(np.isfinite(q)) or not chain.within_limits(q):
        return seconds, False
    F = chain.fk(q)
    angle = math.acos(max(-1.0, min(1.0, 0.5 * (np.trace(F[:3, :3].T @ T[:3, :3]) - 1.0))))
    return seconds, bool(np.linalg.norm(F[:3, 3] - position) <= 1e-5 and angle <= 1e-4)


def ground_plane(chain, exact, targets, target_qs, robot, budget, ground_z=0.0):
    """Rows of ``damped_jacobian`` (position, random seeds, self-collision on) without and with
    the ground plane at ``ground_z``, on the targets whose configuration is above it."""
    from ik_node import make_solver
    kept = [t for t, q in zip(targets, target_qs) if exact.lowest_moving(q) >= ground_z]
    solvers = {plane: make_solver('damped_jacobian', chain, budget) for plane in (False, True)}
    solvers[True].configure_collision(ground_z=ground_z)
    stats = {plane: [0, 0, []] for plane in (False, True)}
    for k, (position, _quat, q_random) in enumerate(kept):
        for plane in ((False, True) if k % 2 == 0 else (True, False)):
            result = solvers[plane].solve(position, None, q_random)
            stats[plane][2].append(result.solve_time)
            if result.reachable:
                stats[plane][0] += 1
                stats[plane][1] += exact.lowest_moving(result.joint_positions) < ground_z
    rows = [(robot, f'z = {ground_z:g}' if plane else 'none', len(kept), stats[plane][0],
             stats[plane][1], 1e3 * float(np.median(stats[plane][2])) if kept else math.nan)
            for plane in (False, True)]
    print(rows, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robots', nargs='+', default=['ur5e', 'fr3'])
    ap.add_argument('--n', type=int, default=300, help='targets per robot')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--table-samples', type=int, default=2000)
    ap.add_argument('--out', type=Path)
    ap.add_argument('--timeout', type=float, help="the solvers' timeout [s] (default: "
                    "theirs, 0.005); OptIK's max_time too")
    ap.add_argument('--retry-time', type=float, help='collision_retry_time [s] (default 0.01)')
    ap.add_argument('--repair-steps', type=int, help="damped_jacobian's "
                    'collision_repair_steps (default: its own, 40; 0: the collision term off, '
                    'restarts only)')
    ap.add_argument('--no-ground', dest='ground', action='store_false',
                    help='leave out the ground-plane rows')
    args = ap.parse_args()
    add_collision_prefix()
    from ik_node import Chain, make_solver
    from ik_node.collision import checker_for, has_collision_geometry
    from ik_node import kernels
    print(f'seed {args.seed}', flush=True)
    kernels.start()
    kernels.wait(120.0)  # the compiled descents serve from the first solve measured
    print(kernels.serving(), flush=True)
    budget = {}
    if args.timeout is not None:
        budget['timeout'] = args.timeout
    if args.retry_time is not None:
        budget['collision_retry_time'] = args.retry_time
    # damped_jacobian's own parameters on top of the budget
    dj_params = dict(budget)
    if args.repair_steps is not None:
        dj_params['collision_repair_steps'] = args.repair_steps
    rows, check_rows, peer_rows, ground_rows, freed_rows = [], [], [], [], []
    for robot in args.robots:
        path = SHARED / f'{robot}.urdf'
        if not path.is_file():
            print(f'{robot}: {path} absent, skipped')
            continue
        base, tip = ROBOTS[robot]
        chain = Chain.from_urdf_file(path, base, tip)
        if not has_collision_geometry(chain):
            print(f'{robot}: no collision geometry, skipped')
            continue
        rng = np.random.default_rng(args.seed)
        exact = MeshCheck(chain, args.table_samples, rng)
        checker = checker_for(chain)
        lower = np.maximum(chain.lower, -math.pi)
        upper = np.minimum(chain.upper, math.pi)
        targets, target_qs = [], []
        while len(targets) < args.n:
            q = rng.uniform(lower, upper)
            if exact.colliding(q):
                continue
            T = chain.fk(q)
            w, x, y, z = transforms3d.quaternions.mat2quat(T[:3, :3])
            targets.append((T[:3, 3].copy(), (x, y, z, w), rng.uniform(lower, upper)))
            target_qs.append(q)
        # the check alone, on the targets' own (free) configurations and on random ones
        # the check alone, on the targets' own (free) configurations and on random ones;
        # interleaved with the same checker without its kernel's GJK (link capsules, then
        # python-fcl: the kernel measures no further when its padding argument is -inf)
        bare = checker_for(chain)
        bare._kernel_args = bare._kernel_args[:-1] + (-math.inf,)
        timings = []
        for configurations in (target_qs, rng.uniform(lower, upper, size=(2000, chain.n))):
            times = {id(checker): [], id(bare): []}
            for k, q in enumerate(configurations):
                for c in ((checker, bare) if k % 2 else (bare, checker)):
                    start = time.perf_counter()
                    c.is_free(q)
                    times[id(c)].append(time.perf_counter() - start)
            timings += [1e6 * float(np.median(times[id(checker)])),
                        1e6 * float(np.median(times[id(bare)]))]
        near = sum(exact.closer_than(q, checker.padding) for q in target_qs)
        check_rows.append((robot, len(checker.pair_names), len(exact.pairs), *timings, near))
        optik = optik_for(robot, path, base, tip, chain, budget.get('timeout', SOLVER_TIMEOUT_S))
        for solver_name, pose, seed_kind in CASES:
            params = dj_params if solver_name == 'damped_jacobian' else budget
            solvers = {on: make_solver(solver_name, chain, {'self_collision': on, **params})
                       for on in (False, True)}
            for position, quat, q_random in targets[:5]:  # warm-up, not counted
                for on in (False, True):
                    solvers[on].solve(position, quat if pose else None, q_random)
            stats = {}
            # interleaved: each target solved without and with the check, in turn first
            for on in (False, True):
                stats[on] = {'reached': 0, 'colliding': 0, 'times': [], 'cpu': []}
            # how the checked solver's answers in collision ended: freed by the collision term
            # alone, by a restart (its answer perhaps freed by the term), or in_collision
            freed = {'term': 0, 'restart': 0, 'in_collision': 0}
            peer = optik if pose and not isinstance(optik, str) else None
            peer_times, peer_reached = [], 0
            for k, (position, quat, q_random) in enumerate(targets):
                seed = chain.mid_configuration() if seed_kind == 'mid' else q_random
                for on in ((False, True) if k % 2 == 0 else (True, False)):
                    # timed around solve() as a caller sees it: wall clock and this thread's
                    # CPU time, everything solve() does (the check and its retries) included
                    wall, cpu = time.perf_counter(), time.thread_time()
                    result = solvers[on].solve(position, quat if pose else None, seed)
                    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
                    s = stats[on]
                    s['times'].append(wall)
                    s['cpu'].append(cpu)
                    if on:
                        if 'from restart' in result.message:
                            freed['restart'] += 1
                        elif 'collision term' in result.message:
                            freed['term'] += 1
                        elif result.status.value == 'in_collision':
                            freed['in_collision'] += 1
                    if result.reachable:
                        s['reached'] += 1
                        if exact.colliding(result.joint_positions):
                            s['colliding'] += 1
            if peer is not None:  # the same targets and seeds, in a pass of its own
                for position, quat, q_random in targets:
                    seed = chain.mid_configuration() if seed_kind == 'mid' else q_random
                    seconds, reached = optik_solve(peer, chain, position, quat, seed)
                    peer_times.append(seconds)
                    peer_reached += reached
            n = len(targets)
            for on in (False, True):
                s = stats[on]
                rows.append((robot, solver_name, '6D' if pose else 'position', seed_kind,
                             'on' if on else 'off', s['reached'], n, s['colliding'],
                             1e3 * float(np.median(s['times'])),
                             1e3 * float(np.median(s['cpu']))))
            freed_rows.append((robot, solver_name, '6D' if pose else 'position', seed_kind,
                               freed['term'], freed['restart'], freed['in_collision']))
            if peer is not None:
                ratio = rows[-1][-2] / (1e3 * float(np.median(peer_times)))
                peer_rows.append((robot, seed_kind, peer_reached, n,
                                  1e3 * float(np.median(peer_times)), rows[-1][-2], ratio))
            print(rows[-2], rows[-1], peer_rows[-1] if peer is not None else '', flush=True)
        if args.ground:
            ground_rows += ground_plane(chain, exact, targets, target_qs, robot, dj_params)
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    import fcl  # noqa: F401
    from importlib.metadata import version
    lines = [f'Command: `python -m benchmarks.collisions.bench {" ".join(sys.argv[1:])}` at commit '
             f'`{commit}`; seed {args.seed}; Python {platform.python_version()}, numpy '
             f'{np.__version__}, python-fcl {version("python-fcl")}, trimesh '
             f'{version("trimesh")}; numba '
             f'{"yes" if __import__("importlib").util.find_spec("numba") else "no"}; '
             f'{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end.', '',
             'Solve times are taken around `solve()` as a caller sees it (wall clock and the '
             "thread's CPU time, medians; the check and its retries included), the unchecked "
             'and the checked solver interleaved target by target; checked / unchecked is the '
             'ratio of the wall medians.', '',
             '| robot | solver | target | seed | check | reached | reachable answers in '
             'self-collision (mesh-exact) | median solve, wall [ms] | median solve, CPU [ms] '
             '| checked / unchecked |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for k, (robot, solver, target, seed, on, reached, n, colliding, ms, cpu_ms) in \
            enumerate(rows):
        share = f'{colliding} of {reached} ({100.0 * colliding / max(reached, 1):.1f} %)'
        ratio = f'{ms / rows[k - 1][8]:.2f}x' if on == 'on' else ''
        lines.append(f'| {robot} | {solver} | {target} | {seed} | {on} | {reached} / {n} '
                     f'({100.0 * reached / n:.1f} %) | {share} | {ms:.3f} | {cpu_ms:.3f} | '
                     f'{ratio} |')
    lines += ['', '| robot | pairs checked (ik_node) | pairs kept by the independent table | '
              'check median, collision-free configurations [us] | the same without the '
              'kernel\'s GJK [us] | check median, random configurations [us] | the same '
              'without GJK [us] | targets whose raw meshes come within the padding |',
              '|---|---|---|---|---|---|---|---|']
    for robot, pairs, exact_pairs, free_us, free_bare, random_us, random_bare, near in \
            check_rows:
        lines.append(f'| {robot} | {pairs} | {exact_pairs} | {free_us:.1f} | {free_bare:.1f} '
                     f'| {random_us:.1f} | {random_bare:.1f} | {near} |')
    lines += ['', '| robot | solver | target | seed | answers in collision freed by the '
              'collision term | freed by a restart | in_collision |',
              '|---|---|---|---|---|---|---|']
    for robot, solver, target, seed, term, restart, stuck in freed_rows:
        lines.append(f'| {robot} | {solver} | {target} | {seed} | {term} | {restart} | {stuck} |')
    if peer_rows:
        lines += ['', '| robot | seed | OptIK reached (6D, no collision check) | OptIK median '
                  '[ms] | damped_jacobian checked median [ms] | checked / OptIK |',
                  '|---|---|---|---|---|---|']
        for robot, seed, reached, n, peer_ms, ms, ratio in peer_rows:
            lines.append(f'| {robot} | {seed} | {reached} / {n} ({100.0 * reached / n:.1f} %) '
                         f'| {peer_ms:.3f} | {ms:.3f} | {ratio:.2f}x |')
    if ground_rows:
        lines += ['', '| robot | solver | target | seed | ground plane | targets above it | '
                  'reached | reachable answers with a link below the plane | median solve '
                  '[ms] |', '|---|---|---|---|---|---|---|---|---|']
        for robot, plane, n, reached, below, ms in ground_rows:
            lines.append(f'| {robot} | damped_jacobian | position | random | {plane} | {n} | '
                         f'{reached} / {n} ({100.0 * reached / max(n, 1):.1f} %) | {below} of '
                         f'{reached} | {ms:.3f} |')
    text = '\n'.join(lines) + '\n'
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == '__main__':
    main()
