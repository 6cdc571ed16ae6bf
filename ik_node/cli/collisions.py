"""``ik-solve collisions``: which pairs of links the collision check tests, and why the others
are left out.

    ik-solve collisions --urdf ur5e.urdf [--base base_link --tip tool0]
    ik-solve collisions --urdf ur5e.urdf --write-srdf ur5e.srdf     # MoveIt's format
    ik-solve collisions --urdf ur5e.urdf --srdf ur5e.srdf           # the pairs an SRDF leaves

Without ``--base``/``--tip`` the chain is the one ``ik-solve chains`` suggests. The table is
computed the way MoveIt's Setup Assistant computes one (adjacent links, pairs colliding at the
mid configuration, always or never over random configurations; see
:mod:`ik_node.collision.pairs`) and cached per description. Exit status: 0, or 2 with one line on
stderr (a missing mesh, a package not on ``AMENT_PREFIX_PATH``, collision libraries missing).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

from ik_node.cli.common import PROG, Parser, fail
from ik_node.errors import IkError

COMMAND = 'collisions'


def build_parser():
    """The argument parser of ``ik-solve collisions``."""
    p = Parser(prog=f'{PROG} {COMMAND}',
               description='Print (or write as an SRDF) the pairs of links the self-collision '
                           'check tests, and why the others are left out.',
               epilog='Exit status: 0 printed, 2 error.')
    p.add_argument('--urdf', metavar='FILE', required=True, help='URDF or xacro file')
    p.add_argument('--xacro-args', metavar='"KEY:=VALUE ..."', default='',
                   help='arguments of a .xacro file')
    p.add_argument('--base', metavar='LINK', help='base link (default: the suggested chain)')
    p.add_argument('--tip', metavar='LINK', nargs='+', help='tip link(s)')
    p.add_argument('--srdf', metavar='FILE', help='take the pairs from this SRDF instead')
    p.add_argument('--samples', type=int, default=10000,
                   help='random configurations of the computed table (default 10000)')
    p.add_argument('--write-srdf', metavar='FILE', help='write the left-out pairs as an SRDF')
    p.add_argument('--skip-missing-meshes', action='store_true',
                   help='leave out <collision> elements whose mesh file is missing')
    p.add_argument('--json', action='store_true', help='print one JSON object')
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``ik-solve collisions``. Returns 0; errors exit with status 2."""
    args = build_parser().parse_args(argv)
    from ik_node import collision
    from ik_node.collision.pairs import srdf_from_table, table_text
    from ik_node.model.chain import Chain
    from ik_node.model.urdf_reading import urdf_xml_from_file
    try:
        xml = urdf_xml_from_file(args.urdf, xacro_args=args.xacro_args or None)
        base, tips = args.base, args.tip
        if base is None or tips is None:
            from ik_node.cli.chains import robot_chains_from_urdf
            suggested = robot_chains_from_urdf(xml).suggested
            if suggested is None:
                fail('no chain to suggest: give --base LINK --tip LINK')
            base = base or suggested.base
            tips = tips or list(suggested.tips)
        chain = Chain.from_urdf_string(xml, base, tips)
        if not collision.has_collision_geometry(chain):
            fail(f'{args.urdf}: no link has <collision> geometry')
        srdf = None
        if args.srdf:
            try:
                srdf = Path(args.srdf).read_text()
            except OSError as exc:
                fail(f'cannot read SRDF {args.srdf!r}: {exc.strerror}')
        settings = collision.CollisionSettings(srdf=srdf, samples=args.samples,
                                               skip_missing_meshes=args.skip_missing_meshes)
        model, table, checked = collision.pair_table_for(chain, settings)
    except IkError as exc:
        fail(str(exc))
    if args.write_srdf:
        try:
            Path(args.write_srdf).write_text(srdf_from_table(chain.robot.name, table))
        except OSError as exc:
            fail(f'cannot write {args.write_srdf!r}: {exc.strerror}')
    if args.json:
        print(json.dumps({'urdf': str(args.urdf), 'base_link': base, 'tip_links': list(tips),
                          'links': list(model.links),
                          'checked': [list(p) for p in checked],
                          'disabled': [[a, b, r] for (a, b), r in sorted(table.items())]}))
    else:
        print(f'{args.urdf}: {base} -> {", ".join(tips)}')
        print(table_text(model, table, checked))
        if args.write_srdf:
            print(f'wrote {args.write_srdf}')
    return 0
