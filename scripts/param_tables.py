#!/usr/bin/env python3
"""Write docs/parameters.md (markdown tables) from the code's own parameter specs.

The node's and every solver's parameters are declared once, as :class:`ik_node.ParamSpec`; this
renders them, and test/test_docs.py checks docs/parameters.md is exactly this output.

    python scripts/param_tables.py            # print
    python scripts/param_tables.py --write    # rewrite docs/parameters.md
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ik_node import SOLVERS  # noqa: E402
from ik_node.config.node_config import NODE_PARAMS, STRING_PARAMS, TIP_LINKS_DESCRIPTION  # noqa: E402
from ik_node.config.ros_graph import (GRAPH_LIST_PARAMS, GRAPH_NUMBER_PARAMS,  # noqa: E402
                           GRAPH_STRING_PARAMS)

DOC = Path(__file__).resolve().parents[1] / 'docs' / 'parameters.md'
INTRO = '''# Parameters

Every parameter of the node, and each solver's, generated from the code
(`python scripts/param_tables.py --write`; a test keeps this file in sync). Load them with
`--params-file config/<robot>.yaml`; change any at runtime with `ros2 param set` (a bad value is
refused with the reason and the old one stays in force). An integer is accepted where a double is
declared (`ros2 param set /ik_node damped_jacobian.timeout 1`). String values are stored in their
canonical form: surrounding whitespace removed, and enum-like values (`solver`, `output`,
`damped_jacobian.method`, ...) lower-cased; link names keep their case. Solver parameters go in a
`<solver>:` block of the YAML (`<solver>.<param>` as a ROS parameter). A planning group of the
MoveIt services can have its own solver and solver parameters: `groups.<group>.solver`,
`groups.<group>.<param>` (docs/services.md).

Lists of names (`tip_links`, `command_joints`, `hold_joint_names`): each name is stripped; an
empty name is refused with the parameter and its index (`command_joints has an empty name at
index 1 of ['j1', '', 'j2']`). The one exception is `['']`, a list of one empty name: it means
no names, because that is how ROS spells an empty string array (a params file or
`ros2 param set` cannot give `[]` a type). Leaving the parameter unset means no names too.
'''

HEADER = '| name | type | default | unit | range | meaning |\n|---|---|---|---|---|---|'


def _default(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return '[]' if not value else str(list(value))
    if value == '':
        return "''"
    return f'{value:g}' if isinstance(value, float) else str(value)


def node_table() -> str:
    rows = [HEADER]
    for name, (default, meaning) in STRING_PARAMS.items():
        valid = ' \\| '.join(sorted(SOLVERS)) if name == 'solver' else 'text'
        rows.append(f'| `{name}` | string | {_default(default)} | | {valid} | {meaning} |')
    rows.append(f'| `tip_links` | string[] | [] | | link names | {TIP_LINKS_DESCRIPTION} |')
    for name, spec in NODE_PARAMS.items():
        rows.append(f'| `{name}` | {spec.type.__name__} | {_default(spec.default)} | {spec.unit} '
                    f'| {spec.range_text()} | {spec.description} |')
    rows.append('| `<solver>.<param>` | | | | | every solver parameter below, e.g. '
                '`damped_jacobian.timeout` |')
    return '\n'.join(rows)


def graph_table() -> str:
    rows = [HEADER]
    for name, (default, meaning) in GRAPH_STRING_PARAMS.items():
        valid = {'output': 'joint_states \\| position_command \\| joint_trajectory',
                 'jump_guard': "'' \\| hold \\| limit \\| off"}.get(name, 'topic')
        rows.append(f'| `{name}` | string | {_default(default)} | | {valid} | {meaning} |')
    for name, (kind, meaning) in GRAPH_LIST_PARAMS.items():
        kind_text = 'string[]' if kind is str else 'double[]'
        rows.append(f'| `{name}` | {kind_text} | [] | | | {meaning} |')
    for name, spec in GRAPH_NUMBER_PARAMS.items():
        rows.append(f'| `{name}` | {spec.type.__name__} | {_default(spec.default)} | {spec.unit} '
                    f'| {spec.range_text()} | {spec.description} |')
    from ik_node.ros.rviz.interactive import INTERACTIVE_PARAMS
    from ik_node.ros.solving.planar_targets import PLANAR_PARAMS
    for name, spec in {**INTERACTIVE_PARAMS, **PLANAR_PARAMS}.items():
        rows.append(f'| `{name}` | {spec.type.__name__} | {_default(spec.default)} | {spec.unit} '
                    f'| {spec.range_text()} | {spec.description} |')
    return '\n'.join(rows)


def solver_table(name: str) -> str:
    rows = [HEADER]
    for key, spec in SOLVERS[name].param_specs().items():
        kind = getattr(spec.type, '__name__', str(spec.type))
        valid = spec.range_text().replace('|', '\\|')
        rows.append(f'| `{key}` | {kind} | {_default(spec.default)} | {spec.unit} | {valid} '
                    f'| {spec.description} |')
    return '\n'.join(rows)


def document() -> str:
    parts = [INTRO, '## Node parameters\n', node_table(),
             '\n## In the robot\'s ROS graph: output, measured state, maps, markers\n',
             graph_table()]
    for name in sorted(SOLVERS):
        parts += [f'\n## Solver `{name}`\n', solver_table(name)]
    return '\n'.join(parts) + '\n'


def main() -> None:
    if '--write' in sys.argv[1:]:
        DOC.write_text(document())
        print(f'wrote {DOC}')
    else:
        print(document(), end='')


if __name__ == '__main__':
    main()
