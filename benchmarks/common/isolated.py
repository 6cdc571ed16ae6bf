"""``python -m benchmarks.common.isolated MODULE ARGS...``: run ``MODULE`` as ``__main__`` on
the ik_node of the working directory alone.

An editable install (``pip install -e``) of another checkout adds an import finder that answers
for every ``ik_node`` module; a tree that lacks one (an older revision, in
:mod:`benchmarks.ab`) would silently import it from that other checkout. Here those finders are
dropped first, so such an import fails loudly.
"""

from __future__ import annotations

import runpy
import sys


def main() -> None:
    sys.meta_path[:] = [finder for finder in sys.meta_path
                        if not getattr(finder, '__module__', '').startswith('__editable__')
                        and not type(finder).__module__.startswith('__editable__')]
    if len(sys.argv) < 2:
        raise SystemExit('usage: python -m benchmarks.common.isolated MODULE [ARGS...]')
    sys.argv = sys.argv[1:]
    runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)


if __name__ == '__main__':
    main()
