#!/usr/bin/env python3
"""A/B: one benchmark run on this checkout's ik_node and on another version's, alternately.

The other version ("B") is a git revision, checked out in a temporary ``git worktree`` whose
``benchmarks/`` is replaced by a copy of this checkout's: both sides run the same benchmark code
and differ only in ``ik_node`` (and the ``config/`` and ``urdf/`` of their revision). ``B`` may
also be ``no-numba``: this checkout on the pure-Python path (``IK_NODE_NO_NUMBA=1``). Each side
runs as its own process, ``python -m benchmarks.<suite> ...`` from its tree's root (on that
tree's ik_node alone: :mod:`benchmarks.common.isolated`), in
``--rounds`` rounds that alternate which side goes first; every run's output is kept in
``--out`` (``<round>_<side>.txt``) and its last lines printed. The revision's compiled kernels
are warmed before the first round (numba compiles them once per tree: minutes).

Suites:

* ``answers``: :mod:`benchmarks.solvers.compare_answers` on both sides (damped_jacobian's and
  fabrik's answers with the clock lifted), then, per group, the count of solves whose answers
  differ; the exit
  status is 1 when any differs (a change meant to keep the answers bit-identical);
* any benchmark module, dotted below ``benchmarks`` (``solvers.bench``, ``node.latency``,
  ``solvers.solve_wrap``, ``node.profile_answer`` ...), with its own arguments after ``--``.
  Point its output (``--out``) at a folder of your own: a run writes where it is told.

Usage::

    python -m benchmarks.ab answers --against main
    python -m benchmarks.ab solvers.solve_wrap --against HEAD~3 --rounds 3 -- --n 3000
    python -m benchmarks.ab node.profile_answer --against no-numba -- --configs leg3 --n 2000
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, NamedTuple

REPO = Path(__file__).resolve().parents[1]
#: The pseudo-revision: this checkout on the pure-Python path.
NO_NUMBA = 'no-numba'


class Side(NamedTuple):
    """One side of the comparison: where it runs and with which extra environment."""

    label: str
    root: Path
    env: Dict[str, str]


def other_tree(rev: str, workdir: Path) -> Path:
    """A worktree of ``rev`` in ``workdir``, its ``benchmarks/`` replaced by this checkout's,
    ``../shared`` (the reference robots) beside it as beside this checkout.

    Raises:
        SystemExit: ``rev`` is not a revision of this repository (git's message).
    """
    tree = workdir / 'b'
    proc = subprocess.run(['git', '-C', str(REPO), 'worktree', 'add', '--detach', str(tree), rev],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f'ab: cannot check out {rev!r}: {proc.stderr.strip()}')
    shutil.rmtree(tree / 'benchmarks', ignore_errors=True)
    shutil.copytree(REPO / 'benchmarks', tree / 'benchmarks',
                    ignore=shutil.ignore_patterns('__pycache__', 'results'))
    (tree / 'benchmarks' / 'results').mkdir()
    shared = REPO.parent / 'shared'  # the reference robots, found beside the checkout
    if shared.is_dir():
        (workdir / 'shared').symlink_to(shared.resolve(), target_is_directory=True)
    return tree


#: Runs a module on its working directory's ik_node alone (no editable install's finder).
ISOLATED = 'benchmarks.common.isolated'


def run(side: Side, module: str, args: List[str], log: Path) -> int:
    """``python -m benchmarks.<module> args`` on ``side``, its output (both streams) in ``log``."""
    env = dict(os.environ, **side.env)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(side.root), env.get('PYTHONPATH')]))
    with open(log, 'w') as out:
        proc = subprocess.run([sys.executable, '-m', ISOLATED, f'benchmarks.{module}', *args],
                              cwd=side.root, env=env, stdout=out, stderr=subprocess.STDOUT)
    return proc.returncode


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of ``path``."""
    return '\n'.join(path.read_text(errors='replace').splitlines()[-lines:])


def compare_answers(sides: List[Side], out: Path, n: int) -> int:
    """The ``answers`` suite: both sides' answers written, then compared (exit 1: differ)."""
    files = []
    for side in sides:
        npy = out / f'answers_{side.label}.npy'
        code = run(side, 'solvers.compare_answers', [str(npy), '--n', str(n)],
                   out / f'answers_{side.label}.txt')
        if code != 0:
            print(f'ab: {side.label} failed:\n{tail(out / f"answers_{side.label}.txt", 20)}')
            return 2
        files.append(npy)
    # compared in a process of its own: this one keeps ik_node out of its imports
    return subprocess.run([sys.executable, '-m', 'benchmarks.solvers.compare_answers',
                           '--compare', *map(str, files)], cwd=REPO).returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('suite', help="'answers', or a benchmark module below benchmarks "
                                  "(e.g. solvers.bench, node.latency)")
    ap.add_argument('--against', required=True, metavar='REV',
                    help=f'a git revision, or {NO_NUMBA!r} (this checkout, pure-Python path)')
    ap.add_argument('--rounds', type=int, default=2, help='runs per side, alternating (suites)')
    ap.add_argument('--n', type=int, default=200, help='targets per arm (answers)')
    ap.add_argument('--out', type=Path, default=None,
                    help='folder for the runs\' output (default: a new temporary folder)')
    ap.add_argument('--keep', action='store_true', help='keep the revision\'s worktree')
    ap.add_argument('--lines', type=int, default=15, help='lines of each run\'s output printed')
    ap.epilog = 'Arguments after -- go to the benchmark module.'
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index('--') if '--' in argv else len(argv)
    args, suite_args = ap.parse_args(argv[:cut]), argv[cut + 1:]
    if args.suite != 'answers':
        if not (REPO / 'benchmarks' / (args.suite.replace('.', '/') + '.py')).is_file():
            ap.error(f'no benchmark module benchmarks.{args.suite} (or the suite answers)')
    out = args.out or Path(tempfile.mkdtemp(prefix='ab_'))
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix='ab_tree_'))
    this = Side('A', REPO, {})
    try:
        if args.against == NO_NUMBA:
            other = Side('B', REPO, {'IK_NODE_NO_NUMBA': '1'})
        else:
            other = Side('B', other_tree(args.against, workdir), {})
            loader = 'ik_node.kernels' if (other.root / 'ik_node' / 'kernels').is_dir() else \
                'ik_node.solvers.kernels'  # where revisions before the library's move keep it
            subprocess.run([sys.executable, '-m', ISOLATED, loader, 'warm'],
                           cwd=other.root, env=dict(os.environ, PYTHONPATH=str(other.root)),
                           capture_output=True)
        print(f'A: this checkout ({REPO}); B: {args.against} ({other.root}); output in {out}')
        if args.suite == 'answers':
            return compare_answers([this, other], out, args.n)
        status = 0
        for round_ in range(args.rounds):
            for side in ([this, other] if round_ % 2 == 0 else [other, this]):
                log = out / f'{round_}_{side.label}.txt'
                code = run(side, args.suite, suite_args, log)
                status = status or code
                print(f'--- round {round_}, {side.label} (exit {code}), {log}:\n'
                      f'{tail(log, args.lines)}')
        return status
    finally:
        if args.against != NO_NUMBA and not args.keep and (workdir / 'b').exists():
            subprocess.run(['git', '-C', str(REPO), 'worktree', 'remove', '--force',
                            str(workdir / 'b')], capture_output=True)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
