"""The closest-pose search's stops -> the solve's status and message: one table for every solver."""

import ast
from pathlib import Path

import pytest

from ik_node.solvers.base import IkStatus
from ik_node.solvers.out_of_reach import closest_pose
from ik_node.solvers.out_of_reach.closest_pose import Search
from ik_node.solvers.out_of_reach.outcome import AT_REACH_MESSAGE, STOP_STATUS, search_outcome

SOLVERS_DIR = Path(closest_pose.__file__).resolve().parents[1]


def _stops_the_search_sets():
    """Every string assigned to ``stop`` in the closest-pose search."""
    stops = set()
    for node in ast.walk(ast.parse(Path(closest_pose.__file__).read_text())):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                any(isinstance(t, ast.Name) and t.id == 'stop' for t in node.targets):
            stops.add(node.value.value)
    return stops


def _search(stop, pressed=()):
    return Search(q=[0.0, 0.0], error=0.1, iterations=7, descents=3, confirmed=stop == 'confirmed',
                  proven=stop == 'proven', stop=stop, pressed=pressed)


def test_every_stop_of_the_search_has_exactly_one_status():
    assert _stops_the_search_sets() == set(STOP_STATUS)


def test_only_a_proven_bound_claims_unreachable_the_reach_and_agreeing_descents_not_reached():
    unreachable = {s for s, status in STOP_STATUS.items() if status is IkStatus.UNREACHABLE}
    assert unreachable == {'proven'}
    assert STOP_STATUS['reach'] is STOP_STATUS['confirmed'] is IkStatus.NOT_REACHED
    assert STOP_STATUS['converged'] is IkStatus.CONVERGED
    assert STOP_STATUS['timeout'] is IkStatus.TIMEOUT


@pytest.mark.parametrize('stop', sorted(STOP_STATUS))
def test_the_message_names_the_stop_and_its_counts(stop):
    status, message = search_outcome(_search(stop, pressed=(1,)), ('shoulder', 'elbow'),
                                     iterations=42, restarts=5, timeout_s=0.005)
    assert status is STOP_STATUS[stop]
    expected = {'converged': 'converged after 5 restarts', 'reach': AT_REACH_MESSAGE,
                'proven': 'proven bound', 'confirmed': 'pressed against the limits: elbow',
                'timeout': 'timeout 0.005 s after 5 restarts (42 iterations)',
                'iterations': '42 iterations, 5 restarts',
                'restarts': 'stuck after 5 restarts'}[stop]
    assert expected in message, message


def test_no_solver_builds_its_own_stop_table():
    for path in SOLVERS_DIR.rglob('*.py'):
        if path.name != 'outcome.py':
            assert 'AT_REACH_MESSAGE =' not in path.read_text(), path
            assert "'confirmed': (IkStatus" not in path.read_text(), path
