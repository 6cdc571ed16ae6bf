"""package.xml declares what the code and the tests import, so ``rosdep install`` brings it.

The imports are read with ``ast`` from ik_node/, launch/ and test/ (each module's top-level
name); the standard library, ik_node itself and the repository's own helper modules are left out.
An import of the code needs an ``exec_depend``, one of the tests an ``exec_depend`` or a
``test_depend``; the few optional ones are listed below with what happens without them.
"""

import ast
import sys
import xml.dom.minidom
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Python module -> its rosdep key, where the two differ.
ROSDEP_KEYS = {
    'numpy': 'python3-numpy',
    'yaml': 'python3-yaml',
    'transforms3d': 'python3-transforms3d',
    'urdf_parser_py': 'urdfdom_py',
    'tf2_ros': 'tf2_ros_py',
    'matplotlib': 'python3-matplotlib',
    'hypothesis': 'python3-hypothesis',
    'pytest': 'python3-pytest',
    'numba': 'python3-numba',
}

#: Imports of the code that are optional at run time, and what happens without them. (numba is
#: an exec_depend: the compiled kernels are the default; where it cannot load, damped_jacobian
#: runs its pure-Python descents.)
OPTIONAL_IN_THE_CODE = {
    'matplotlib': 'ik-solve reach-map writes no PNG and says so (a test_depend: its test needs '
                  'it or skips)',
}


def declared(tag):
    manifest = xml.dom.minidom.parse(str(REPO / 'package.xml'))
    return {e.firstChild.data.strip() for e in manifest.getElementsByTagName(tag)}


def imported_by(*folders):
    """{top-level module: [files importing it]} of third-party imports under ``folders``."""
    # the project's own modules (its folders, not a venv inside the clone)
    own = {p.stem for folder in ('ik_node', 'launch', 'test', 'benchmarks', 'demo', 'scripts')
           for p in (REPO / folder).rglob('*.py')} | {'ik_node', 'benchmarks', 'demo'}
    found = {}
    for folder in folders:
        for path in sorted((REPO / folder).rglob('*.py')):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split('.')[0]
                    if top not in sys.stdlib_module_names and top not in own:
                        found.setdefault(top, []).append(str(path.relative_to(REPO)))
    return found


def test_every_import_of_the_node_the_launch_file_and_the_cli_is_an_exec_depend():
    imports = imported_by('ik_node', 'launch')
    assert {'rclpy', 'numpy', 'trajectory_msgs', 'launch_ros'} <= set(imports)  # the scan works
    exec_depends = declared('exec_depend')
    missing = {name: files for name, files in imports.items()
               if ROSDEP_KEYS.get(name, name) not in exec_depends
               and name not in OPTIONAL_IN_THE_CODE}
    assert not missing, f'imported but not an exec_depend in package.xml: {missing}'


def test_every_import_of_the_tests_is_declared():
    imports = imported_by('test')
    assert {'pytest', 'hypothesis', 'rclpy'} <= set(imports)  # the scan works
    known = declared('exec_depend') | declared('test_depend')
    missing = {name: files for name, files in imports.items()
               if ROSDEP_KEYS.get(name, name) not in known}
    assert not missing, f'imported by tests but not declared in package.xml: {missing}'


def test_the_optional_imports_are_not_exec_depends():
    exec_depends = declared('exec_depend')
    assert not {ROSDEP_KEYS.get(name, name) for name in OPTIONAL_IN_THE_CODE} & exec_depends
