"""The wall-time budget of the iterative solvers: its deadline, and the pace that decides whether
another step fits, on a clock the test sets."""

import pytest

from ik_node.solvers.numerics import budget as budget_module
from ik_node.solvers.numerics.budget import RESERVE_S, Budget


class _Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock(100.0)
    monkeypatch.setattr(budget_module.time, 'perf_counter', clock)
    return clock


def test_the_deadline_counts_from_the_start_given_less_the_reserve(clock):
    assert Budget(0.005).deadline == pytest.approx(100.0 + 0.005 - RESERVE_S)
    assert Budget(0.005, start=99.998).deadline == pytest.approx(99.998 + 0.005 - RESERVE_S)
    assert Budget(1e-4).deadline == pytest.approx(100.0 + 1e-4 - 1e-5)  # a tenth at most


def test_work_before_the_budget_was_made_is_not_a_step(clock):
    """A budget made for work begun earlier (its start) times its steps from when it is made:
    a stall in that earlier work does not set the pace."""
    budget = Budget(0.005, start=99.997)  # 3 ms already spent, e.g. a stalled first chunk
    clock.now += 1e-4
    assert budget.allows()  # a 0.1 ms step fits in the 1.95 ms left


def test_one_stalled_step_does_not_set_the_pace_but_a_second_slow_one_does(clock):
    budget = Budget(0.006)  # deadline 5.95 ms from now
    for step in (1e-4, 3e-3, 1e-4):  # a 3 ms stall, once: the pace is 0.1 ms
        clock.now += step
        assert budget.allows()
    clock.now += 2e-3  # a second slow step: the pace is 2 ms, past the deadline from 5.2 ms
    assert not budget.allows()
