"""The package's layers, read from its imports: no module imports one of a higher layer, and no
two modules import each other, directly or around a circle (imports inside functions count).

    errors -> kernels -> model -> collision -> solvers, reachability -> config -> services
    -> cli, ros

Inside ros: inputs -> outputs -> rviz -> solving -> services -> the node's wiring -> app
(:data:`ROS_ROOMS`).

Inside solvers: the shared numerics import nothing else, the contract (base) imports no
strategy, and no solver imports the registry that composes them.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / 'ik_node'
#: Layer of each top-level part of the package (a higher number may import a lower one).
LAYERS = {'errors': 0, 'kernels': 0.5, 'model': 1, 'collision': 1.5, 'solvers': 2,
          'reachability': 2, 'capability': 2.5, 'config': 3, 'services': 3.5, 'cli': 4, 'ros': 4}
#: Modules that exist only to start a higher layer (``python -m ik_node.node``), and the package
#: ``__init__`` that re-exports the public API lazily.
ENTRY_SHIMS = {'ik_node', 'ik_node.node'}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def imports_of(path: Path) -> set:
    """Every ``ik_node`` module ``path`` imports, anywhere in the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith('ik_node'))
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith('ik_node'):
            names.add(node.module)
            for alias in node.names:  # from ik_node.ros import targets: a module, too
                folder = PACKAGE.parent / node.module.replace('.', '/')
                if (folder / f'{alias.name}.py').is_file():
                    names.add(f'{node.module}.{alias.name}')
    return names


def graph() -> dict:
    return {module_name(p): imports_of(p) for p in PACKAGE.rglob('*.py')}


def layer(module: str) -> int:
    parts = module.split('.')
    return LAYERS[parts[1]] if len(parts) > 1 and parts[1] in LAYERS else -1


def test_every_part_of_the_package_has_a_layer():
    tops = {module_name(p).split('.')[1] for p in PACKAGE.rglob('*.py')
            if module_name(p) not in ENTRY_SHIMS}
    assert tops <= set(LAYERS), tops - set(LAYERS)


@pytest.mark.slow
def test_no_module_imports_a_higher_layer():
    upward = [(m, i) for m, imported in graph().items() if m not in ENTRY_SHIMS
              for i in imported if i != 'ik_node' and layer(i) > layer(m)]
    assert not upward, upward


@pytest.mark.slow
def test_no_import_circle():
    edges = graph()
    # A package's __init__ is imported before any of its modules: importing a.b imports a too.
    done, circles = set(), []

    def visit(m, stack):
        if m in stack:
            circles.append(stack[stack.index(m):] + [m])
            return
        if m in done or m not in edges:
            return
        for i in sorted(edges[m]):
            if i != 'ik_node':
                visit(i, stack + [m])
        done.add(m)

    for m in sorted(edges):
        visit(m, [])
    assert not circles, circles[:5]


def test_the_node_owns_its_parts_instead_of_inheriting_them():
    """IkNode derives from rclpy's Node alone: each concern (inputs, outputs, the interactive
    marker, parameter changes, the map) is an object it creates, not a mixin reading attributes
    set elsewhere. Read from the source, so this layer's test imports no ROS."""
    tree = ast.parse((PACKAGE / 'ros' / 'node.py').read_text())
    (node_class,) = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and
                     c.name == 'IkNode']
    assert [ast.unparse(b) for b in node_class.bases] == ['Node']


# ------------------------------------------------------------------- the rooms of solvers/
SOLVERS = PACKAGE / 'solvers'
#: What the solver contract (``solvers/base.py``) may import: the errors, the model, its own
#: input checks, parameter specs, result types and measure of an answer, and the several-tips
#: input and summary. No solver and no strategy (independent legs come in through
#: ``SolverParts.compose_legs``).
CONTRACT_IMPORTS = {'ik_node.errors', 'ik_node.solvers.input_checks', 'ik_node.solvers.params',
                    'ik_node.solvers.results', 'ik_node.solvers.measured_answer',
                    'ik_node.solvers.trees.several_tips'}


def test_the_solver_contract_imports_no_strategy():
    imported = {i for i in imports_of(SOLVERS / 'base.py') if not i.startswith('ik_node.model')}
    assert imported <= CONTRACT_IMPORTS, imported - CONTRACT_IMPORTS


def test_the_shared_numerics_import_nothing_else_of_the_package():
    for path in (SOLVERS / 'numerics').glob('*.py'):
        outside = {i for i in imports_of(path) if not i.startswith('ik_node.solvers.numerics')}
        assert not outside, (path.name, outside)


def test_no_solver_imports_the_registry():
    """The registry composes the solvers; a solver (or the tree machinery) importing it would
    close a circle through every solver."""
    for path in SOLVERS.rglob('*.py'):
        if path.name in ('registry.py', '__init__.py') and path.parent == SOLVERS:
            continue
        assert 'ik_node.solvers.registry' not in imports_of(path), path


# ---------------------------------------------------------------------- the rooms of ros/
ROS = PACKAGE / 'ros'
#: The rooms of ``ik_node/ros``, lowest first: a module imports only modules of its own room or
#: of a lower one. What flows in, what goes out, what RViz shows (it shows the outputs' reports),
#: the solve's own machinery, MoveIt's services (their own process, told of each model by the
#: wiring), the node's wiring, and the executable that runs the node.
ROS_ROOMS = ('inputs', 'outputs', 'rviz', 'solving', 'services', 'node', 'app')
#: The modules at ``ros/`` top level: the node's wiring room. A new module goes into a room.
NODE_ROOM = {'node', 'solve_loop', 'model_lifecycle', 'parameters', 'parameter_changes'}


def ros_room(module: str) -> int:
    """The rank of ``module``'s room in :data:`ROS_ROOMS` (the package itself: the node's)."""
    parts = module.split('.')
    if len(parts) < 3 or parts[:2] != ['ik_node', 'ros']:
        raise ValueError(module)
    if len(parts) == 3 and parts[2] in NODE_ROOM:
        return ROS_ROOMS.index('node')
    return ROS_ROOMS.index(parts[2])


def ros_graph() -> dict:
    return {m: {i for i in imported if i.startswith('ik_node.ros.')}
            for m, imported in graph().items() if m.startswith('ik_node.ros.')}


def test_every_module_of_ros_is_in_a_room():
    tops = {p.stem for p in ROS.glob('*.py')} - {'__init__'}
    rooms = {p.name for p in ROS.iterdir() if p.is_dir() and (p / '__init__.py').is_file()}
    assert tops <= NODE_ROOM, tops - NODE_ROOM
    assert rooms <= set(ROS_ROOMS), rooms - set(ROS_ROOMS)
    for p in ROS.rglob('*.py'):
        if p != ROS / '__init__.py':
            ros_room(module_name(p))  # raises for a module outside every room


def test_no_room_of_ros_imports_a_higher_one():
    upward = sorted((m, i) for m, imported in ros_graph().items() for i in imported
                    if ros_room(i) > ros_room(m))
    assert not upward, upward


def test_the_room_check_sees_an_upward_import():
    """The check above cannot pass by reading nothing: the real graph has imports between rooms,
    and an import from the inputs to the node's wiring counts as upward."""
    edges = ros_graph()
    across = [(m, i) for m, imported in edges.items() for i in imported
              if ros_room(i) < ros_room(m)]
    assert len(across) > 20
    assert ros_room('ik_node.ros.node') > ros_room('ik_node.ros.inputs.targets')
    assert ros_room('ik_node.ros.rviz.drag_targets') > ros_room('ik_node.ros.outputs.solve_report')


#: The floors of solvers/, by room (a module or subpackage of ``ik_node.solvers``): a room imports
#: only rooms on a lower floor. The shared numerics, the result types, input checks and
#: parameter specs; the kernel loader and library, the shared geometry and the measure of an
#: answer; the strategies every solver uses (several tips, out of reach); the contract and the
#: collision guard; the analytic leg solver (whose closed form the iterative solvers call for a
#: leg); the iterative solvers; the registry that composes them, and the batch solve over them.
SOLVER_FLOORS = {'numerics': 0, 'results': 0, 'input_checks': 0, 'params': 0, 'kernels': 1,
                 'geometry': 1, 'measured_answer': 1, 'trees': 2, 'out_of_reach': 2, 'base': 3,
                 'collision_guard': 3, 'hip_knee': 4, 'damped_jacobian': 5, 'fabrik': 5,
                 'registry': 6, 'batch': 6}


def solver_room(module: str):
    parts = module.split('.')
    return parts[2] if len(parts) > 2 and parts[1] == 'solvers' else None


def test_every_room_of_the_solvers_has_a_floor():
    rooms = {solver_room(module_name(p)) for p in SOLVERS.rglob('*.py')} - {None}
    assert rooms <= set(SOLVER_FLOORS), rooms - set(SOLVER_FLOORS)


def test_the_rooms_of_the_solvers_import_only_downward():
    upward = []
    for module, imported in graph().items():
        room = solver_room(module)
        if room is None:
            continue
        upward += [(module, i) for i in imported if solver_room(i) not in (None, room) and
                   SOLVER_FLOORS[solver_room(i)] >= SOLVER_FLOORS[room]]
    assert not upward, upward


# ------------------------------------------------------------------------- the test modules
def imported_names(path: Path) -> set:
    """Top-level module names ``path`` imports, anywhere in the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split('.')[0])
    return names


def test_test_modules_and_benchmarks_import_no_test_module():
    """Shared test code lives in helper modules (``harness``, ``smooth_paths``, ``urdf_texts``,
    ...), never in a test module another one imports."""
    test_modules = {p.stem for p in (REPO / 'test').rglob('test_*.py')}
    for path in [*(REPO / 'test').rglob('*.py'), *(REPO / 'benchmarks').rglob('*.py')]:
        assert not imported_names(path) & test_modules, (path, imported_names(path) & test_modules)
