"""Code generators of the iterative solvers: limits, normal equations, damped solves.

Each function writes straight-line Python for one chain size (or one chain's limits), compiles
it once and returns the function: for 6-7 joints an unrolled Cholesky factorisation in plain
floats is several times faster than numpy, whose per-call overhead dominates arrays this small.
Used by :mod:`ik_node.solvers.damped_jacobian.descent` and
:mod:`ik_node.solvers.out_of_reach.closest_pose`.

The generators here are the one place to read and to change: the generated code is never
written to a file or edited by hand, and every generated function is tested against a numpy
reference on seeded random systems (``test/core/test_dls_codegen.py``).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, List, Sequence, Tuple

#: No joint moves more than this in one step [rad or m]: a nearly singular Jacobian with little
#: damping asks for huge steps that the clip would turn into a random jump.
MAX_STEP = 1.0
TWO_PI = 2.0 * math.pi


def limit_functions(low: Sequence[float], high: Sequence[float], wraps: Sequence[bool],
                    bounded: Sequence[int]) -> Tuple[Callable, Callable]:
    """``(advance, blocked)``, generated with the limits written into the code.

    ``advance(q, dq) -> q_new``: ``q + dq`` with ``dq`` scaled down to at most ``MAX_STEP`` per
    joint, then wrapped by whole turns (joints with ``wraps``) or clipped into the limits.
    ``blocked(q, dq)``: the indices of the ``bounded`` joints at a limit whose step points
    outwards (empty if none).
    """
    n = len(low)
    lines = ['def advance(q, dq):', '    ' + _unpack('q', n), '    ' + _unpack('d', n, 'dq')]
    lines += _advance_lines(low, high, wraps)
    lines.append(f'    return [{", ".join(f"v{k}" for k in range(n))}]')
    lines += ['', 'def blocked(q, dq):']
    if bounded:
        lines += ['    ' + _unpack('q', n), '    ' + _unpack('d', n, 'dq'), '    out = []']
        lines += _blocked_lines(low, high, bounded)
        lines.append('    return out')
    else:
        lines.append('    return ()')
    namespace = {'ceil': math.ceil}
    exec(compile('\n'.join(lines), '<joint limits>', 'exec'), namespace)
    return namespace['advance'], namespace['blocked']


def _unpack(prefix: str, n: int, source: str = '') -> str:
    """``p0, p1, ... = source`` (``source`` defaults to ``prefix``)."""
    return f'{", ".join(f"{prefix}{k}" for k in range(n))}{"," if n == 1 else ""} = ' \
        f'{source or prefix}'


def _advance_lines(low: Sequence[float], high: Sequence[float], wraps: Sequence[bool],
                   d: str = 'd') -> List[str]:
    """Lines taking ``q0 ..`` and the step ``{d}0 ..`` to ``v0 ..``: ``q + dq`` with ``dq``
    scaled down to at most ``MAX_STEP`` per joint, then wrapped by whole turns or clipped into
    the limits."""
    n = len(low)
    inside = ' and '.join(f'-{MAX_STEP!r} <= {d}{k} <= {MAX_STEP!r}' for k in range(n))
    largest = f'max({", ".join(f"abs({d}{k})" for k in range(n))})' if n > 1 else f'abs({d}0)'
    lines = [f'    if not ({inside}):', f'        s = {MAX_STEP!r} / {largest}']
    lines += [f'        {d}{k} *= s' for k in range(n)]
    for k, (lo, hi, wrap) in enumerate(zip(low, high, wraps, strict=True)):
        lines.append(f'    v{k} = q{k} + {d}{k}')
        if math.isfinite(lo):
            fix = (f'v{k} + {TWO_PI!r} * ceil(({lo!r} - v{k}) / {TWO_PI!r})' if wrap
                   else repr(lo))
            lines += [f'    if v{k} < {lo!r}:', f'        v{k} = {fix}']
        if math.isfinite(hi):
            fix = (f'v{k} - {TWO_PI!r} * ceil((v{k} - {hi!r}) / {TWO_PI!r})' if wrap
                   else repr(hi))
            lines += [f'    {"elif" if math.isfinite(lo) else "if"} v{k} > {hi!r}:',
                      f'        v{k} = {fix}']
    return lines


def _blocked_lines(low: Sequence[float], high: Sequence[float], bounded: Sequence[int],
                   d: str = 'd') -> List[str]:
    """Lines appending to ``out`` the index of each ``bounded`` joint at a limit whose step
    ``{d}{k}`` points outwards."""
    lines = []
    for k in bounded:
        lines += [f'    if ({d}{k} < 0.0 and q{k} <= {low[k]!r}) or '
                  f'({d}{k} > 0.0 and q{k} >= {high[k]!r}):',
                  f'        out.append({k})']
    return lines


def lower_index(a: int, b: int) -> int:
    """Index of entry (a, b), a >= b, of a symmetric matrix stored as its lower triangle."""
    return a * (a + 1) // 2 + b


@functools.lru_cache(maxsize=None)
def normal_equations_function(m: int, n: int) -> Callable:
    """``normal(J, e, w) -> (H, g)``: the normal equations of the weighted error, generated.

    ``H = J_w^T J_w`` (n x n, its lower triangle row by row as a flat list, see
    :func:`lower_index`) and ``g = J_w^T e_w``, where rows 3-5 of ``J`` and ``e`` are scaled by
    ``w`` (the orientation weight; ``m`` is 3 or 6). Computed once per accepted iterate, they
    serve every damping tried from it and every set of joints sitting out a step.
    """
    lines = ['def normal(J, e, w):']
    for i in range(m):
        names = ', '.join(f'j{i}_{k}' for k in range(n))
        lines.append(f'    {names}{"," if n == 1 else ""} = J[{i}]')
    lines.append(f'    {", ".join(f"e{i}" for i in range(m))}{"," if m == 1 else ""} = e')
    if m > 3:
        lines.append('    w2 = w * w')
        for i in range(3, m):
            lines.append(f'    e{i} *= w2')  # J_w^T e_w = J^T (w^2 e) on these rows
    entries = []
    for a in range(n):
        for b in range(a + 1):
            linear = ' + '.join(f'j{i}_{a} * j{i}_{b}' for i in range(min(m, 3)))
            if m > 3:
                angular = ' + '.join(f'j{i}_{a} * j{i}_{b}' for i in range(3, m))
                entries.append(f'{linear} + w2 * ({angular})')
            else:
                entries.append(linear)
    gradient = [' + '.join(f'j{i}_{a} * e{i}' for i in range(m)) for a in range(n)]
    lines.append(f'    return [{", ".join(entries)}], [{", ".join(gradient)}]')
    namespace: dict = {}
    exec(compile('\n'.join(lines), f'<normal equations {m}x{n}>', 'exec'), namespace)
    return namespace['normal']


def cholesky_solve_lines(size: int, entry: Callable[[int, int], str], rhs: Sequence[str],
                         reciprocal: bool) -> List[str]:
    """Unrolled lines solving ``A x = rhs`` by Cholesky ``A = L L^T``, into ``x0 .. x{size-1}``.

    ``entry(a, b)`` is the expression of ``A[a][b]`` (``a >= b``). With ``reciprocal`` the
    diagonal's inverses ``i{a}`` are computed once and multiplied; else each use divides.
    """
    lines = []

    def over(a: int) -> str:
        return f' * i{a}' if reciprocal else f' / l{a}_{a}'

    for a in range(size):
        for b in range(a + 1):
            acc = ''.join(f' - l{a}_{k} * l{b}_{k}' for k in range(b))
            if a == b:
                lines.append(f'    l{a}_{a} = sqrt({entry(a, a)}{acc})')
                if reciprocal:
                    lines.append(f'    i{a} = 1.0 / l{a}_{a}')
            else:
                lines.append(f'    l{a}_{b} = ({entry(a, b)}{acc}){over(b)}')
    for a in range(size):
        acc = ''.join(f' - l{a}_{k} * y{k}' for k in range(a))
        lines.append(f'    y{a} = ({rhs[a]}{acc}){over(a)}')
    for a in reversed(range(size)):
        acc = ''.join(f' - l{k}_{a} * x{k}' for k in range(a + 1, size))
        lines.append(f'    x{a} = (y{a}{acc}){over(a)}')
    return lines


@functools.lru_cache(maxsize=None)
def damped_solve_function(n: int) -> Callable:
    """``solve(H, g, lam) -> dq``: ``(H + lam I) dq = g`` by an unrolled Cholesky factorisation.

    ``H`` is a flat lower triangle (see :func:`normal_equations_function`). A matrix that is not
    positive definite raises ``ValueError`` (sqrt of a negative number) or
    ``ZeroDivisionError``.
    """
    lines = ['def solve(H, g, lam):']
    count = n * (n + 1) // 2
    lines.append(f'    {", ".join(f"h{k}" for k in range(count))}{"," if count == 1 else ""} = H')
    lines.append(f'    {", ".join(f"g{k}" for k in range(n))}{"," if n == 1 else ""} = g')
    # Cholesky H + lam I = L L^T, then L y = g, L^T x = y.
    lines += cholesky_solve_lines(
        n, lambda a, b: f'h{lower_index(a, b)}' + (' + lam' if a == b else ''),
        [f'g{a}' for a in range(n)], reciprocal=True)
    lines.append(f'    return [{", ".join(f"x{a}" for a in range(n))}]')
    namespace = {'sqrt': math.sqrt}
    exec(compile('\n'.join(lines), f'<damped solve {n}>', 'exec'), namespace)
    return namespace['solve']


@functools.lru_cache(maxsize=None)
def damped_step_function(m: int, n: int) -> Callable:
    """``step(J, e, lam, w) -> dq``: the damped least-squares step, generated for m x n.

    ``dq = (J_w^T J_w + lam I)^-1 J_w^T e_w`` where rows 3-5 of ``J`` and ``e`` are scaled by
    ``w`` (the orientation weight; ``m`` is 3 or 6). It is solved in the smaller of the two
    equivalent systems (``J_w J_w^T + lam I`` is m x m) by an unrolled Cholesky factorisation;
    a matrix that is not positive definite raises ``ValueError`` (sqrt of a negative number).
    """
    lines = ['def step(J, e, lam, w):']
    for i in range(m):
        scale = ' * w' if i >= 3 else ''
        names = ', '.join(f'j{i}_{k}' for k in range(n))
        lines.append(f'    {names}{"," if n == 1 else ""} = J[{i}]')
        if scale:
            for k in range(n):
                lines.append(f'    j{i}_{k} *= w')
    lines.append(f'    {", ".join(f"e{i}" for i in range(m))} = e')
    for i in range(3, m):
        lines.append(f'    e{i} *= w')
    if n >= m:  # (J J^T + lam I) y = e, dq = J^T y
        size = m
        for a in range(m):
            for b in range(a + 1):
                dot = ' + '.join(f'j{a}_{k} * j{b}_{k}' for k in range(n))
                lines.append(f'    a{a}_{b} = {dot}{" + lam" if a == b else ""}')
        rhs = [f'e{i}' for i in range(m)]
    else:  # (J^T J + lam I) dq = J^T e
        size = n
        for a in range(n):
            for b in range(a + 1):
                dot = ' + '.join(f'j{i}_{a} * j{i}_{b}' for i in range(m))
                lines.append(f'    a{a}_{b} = {dot}{" + lam" if a == b else ""}')
        for a in range(n):
            lines.append(f'    g{a} = {" + ".join(f"j{i}_{a} * e{i}" for i in range(m))}')
        rhs = [f'g{a}' for a in range(n)]
    # Cholesky A = L L^T, then L y = rhs, L^T x = y.
    lines += cholesky_solve_lines(size, lambda a, b: f'a{a}_{b}', rhs, reciprocal=False)
    if n >= m:
        out = [' + '.join(f'j{i}_{k} * x{i}' for i in range(m)) for k in range(n)]
    else:
        out = [f'x{a}' for a in range(n)]
    lines.append(f'    return [{", ".join(out)}]')
    namespace = {'sqrt': math.sqrt}
    exec(compile('\n'.join(lines), f'<damped step {m}x{n}>', 'exec'), namespace)
    return namespace['step']


def damped_trial_function(low: Sequence[float], high: Sequence[float], wraps: Sequence[bool],
                          bounded: Sequence[int]) -> Callable:
    """``trial(q, H, g, lam) -> (q_new, blocked)``: one damped step from ``q``, generated with
    the limits written into the code.

    The step solves ``(H + lam I) dq = g`` (``H`` a flat lower triangle, see
    :func:`normal_equations_function`) by the unrolled Cholesky factorisation of
    :func:`damped_solve_function`. ``blocked`` lists the ``bounded`` joints at a limit whose step
    points outwards; if there are any, they sit out the step (their rows and columns of ``H``
    become the identity's, their entries of ``g`` 0) and the system is solved again for the
    others. ``q_new`` is ``q + dq`` as :func:`limit_functions`' ``advance`` makes it. One
    function instead of solve, blocked and advance called in turn: the same floats, fewer
    Python calls per iteration. A matrix that is not positive definite raises ``ValueError`` or
    ``ZeroDivisionError``.
    """
    n = len(low)
    count = n * (n + 1) // 2
    lines = ['def trial(q, H, g, lam):', '    ' + _unpack('h', count, 'H'),
             '    ' + _unpack('g', n)]
    lines += cholesky_solve_lines(
        n, lambda a, b: f'h{lower_index(a, b)}' + (' + lam' if a == b else ''),
        [f'g{a}' for a in range(n)], reciprocal=True)
    lines.append('    ' + _unpack('q', n))
    if bounded:
        lines.append('    out = []')
        lines += _blocked_lines(low, high, bounded, d='x')
        lines += ['    if out:', '        H, g = list(H), list(g)', '        for k in out:',
                  '            for index in rows[k]:', '                H[index] = 0.0',
                  '            g[k] = 0.0', '        ' + _unpack('x', n, 'solve(H, g, lam)')]
    else:
        lines.append('    out = ()')
    lines += _advance_lines(low, high, wraps, d='x')
    lines.append(f'    return [{", ".join(f"v{k}" for k in range(n))}], out')
    rows = [[lower_index(max(k, j), min(k, j)) for j in range(n)] for k in range(n)]
    namespace = {'ceil': math.ceil, 'sqrt': math.sqrt, 'rows': rows,
                 'solve': damped_solve_function(n)}
    exec(compile('\n'.join(lines), '<damped trial>', 'exec'), namespace)
    return namespace['trial']
