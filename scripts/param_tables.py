#!/usr/bin/env python3
"""Print the README's parameter tables (markdown) from the code's own parameter specs.

The node's and every solver's parameters are declared once, as :class:`ik_node.ParamSpec`; this
renders them, and test/test_docs.py checks the README carries exactly this output.

    python scripts/param_tables.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ik_node import SOLVERS  # noqa: E402
from ik_node.config import NODE_PARAMS, STRING_PARAMS, TIP_LINKS_DESCRIPTION  # noqa: E402

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


def solver_table(name: str) -> str:
    rows = [HEADER]
    for key, spec in SOLVERS[name].param_specs().items():
        kind = getattr(spec.type, '__name__', str(spec.type))
        valid = spec.range_text().replace('|', '\\|')
        rows.append(f'| `{key}` | {kind} | {_default(spec.default)} | {spec.unit} | {valid} '
                    f'| {spec.description} |')
    return '\n'.join(rows)


def main() -> None:
    print('### Node parameters\n')
    print(node_table())
    for name in sorted(SOLVERS):
        print(f'\n### Solver `{name}`\n')
        print(solver_table(name))


if __name__ == '__main__':
    main()
