"""A hang guard for the tests: a call that must return, run in a daemon thread."""

import threading

import pytest


def returns_within(seconds: float, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a daemon thread: its value, or its exception re-raised.

    Fails the test when it has not returned after ``seconds`` (a hang guard, not a timing figure).
    """
    box = {}

    def run():
        try:
            box['value'] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the test's thread
            box['error'] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f'{getattr(fn, "__name__", fn)} did not return within {seconds} s (hang)')
    if 'error' in box:
        raise box['error']
    return box['value']
