"""The closest pose in ``~/compute_ik``'s answer to a target out of reach, against the reference
of the closest-pose benchmark, on the packaged leg.

    python -m benchmarks.services.closest [--n 50] [--seed 1] [--out FILE.md]

A node process on ``config/leg3.yaml`` (``analytic_hip_knee``, positions only); held-out targets
0.02-0.30 m beyond the reach (``test/closest_reference.py``'s ``HeldOutTargets``: sampled
configurations, the reference the best bounded Levenberg-Marquardt refinement of the nearest
samples), sent as srv_kinematics_plugin sends them (identity orientation, which a position-only
solver ignores). Reported: the codes (never SUCCESS), and how far the answer's tip is from the
target beyond the reference's distance [mm] (the goal: within 1 mm).
"""

import argparse
import subprocess

import numpy as np

from benchmarks.common.from_tests import load_test_helper
from benchmarks.services import graph
from ik_node import Chain


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--n', type=int, default=50)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--out', default='')
    args = p.parse_args()
    reference = load_test_helper('closest_reference')
    rng = np.random.default_rng(args.seed)
    chain = Chain.from_urdf_file(graph.REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    held_out = reference.HeldOutTargets(chain, rng)
    name = f'bench_closest_{args.seed}'
    node = graph.start_node(name, {'urdf_file': 'leg3.urdf', 'base_link': 'base_link',
                                   'tip_link': 'foot', 'solver': 'analytic_hip_knee',
                                   'reachability_samples': 0}, graph.LOGS / 'bench_closest.log')
    client = graph.Client(name)
    codes, gaps = {}, []
    try:
        ik = client.service(graph.srv.GetPositionIK, f'/{name}/compute_ik', wait=120)
        for _ in range(args.n):
            target = held_out.target(rng)
            best, _ = held_out.reference(target)
            T = np.eye(4)
            T[:3, 3] = target
            request = graph.plugin_request('', chain.joint_names, np.zeros(chain.n),
                                           'base_link', 'foot', T)
            request.ik_request.avoid_collisions = False
            response, _ = client.call(ik, request)
            codes[response.error_code.val] = codes.get(response.error_code.val, 0) + 1
            q = graph.solution_of(response, chain.joint_names)
            gaps.append(float(np.linalg.norm(chain.fk(q)[:3, 3] - target)) - best)
    finally:
        client.close()
        graph.stop(node)
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=graph.REPO,
                            capture_output=True, text=True).stdout.strip()
    gaps_mm = np.array(gaps) * 1e3
    text = (f'\n## Out of reach: the closest pose in the answer (leg3)\n\n'
            f'`python -m benchmarks.services.closest --n {args.n} --seed {args.seed}` at '
            f'{commit}: codes {dict(sorted(codes.items()))}; tip distance beyond the '
            f'reference: median {np.median(gaps_mm):.3f} mm, max {gaps_mm.max():.3f} mm; '
            f'within 1 mm: {int(np.sum(gaps_mm <= 1.0))}/{len(gaps)}.\n')
    print(text)
    if args.out:
        with open(args.out, 'a') as f:
            f.write(text)


if __name__ == '__main__':
    main()
