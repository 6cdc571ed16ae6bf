"""Fast forward kinematics and Jacobian of a serial chain, as generated straight-line Python.

For 6-7 joints, numpy's per-call overhead (about 1 us per small-array operation) dominates FK;
plain Python floats are faster. This module turns a serial :class:`~ik_node.chain.Chain` into
one Python function per query, with the chain's constants written into the code, so products with
the zeros and ones of typical URDF origins (rotations by multiples of pi/2) disappear:

* every joint frame is re-chosen so that its axis is z (``R(axis, q) = A Rz(q) A^T``, ``A``
  folded into the constant transforms), leaving 4 multiplications per revolute joint for the
  motion itself;
* ``T_parent_joint`` (with ``A^T`` of the previous joint) is one constant 3x4 transform per joint.

The generated source is kept in :attr:`SerialKinematics.source` for reading and debugging. The
functions take a list of floats and return tuples of floats; :class:`~ik_node.chain.Chain` wraps
them into numpy arrays for its public ``fk`` and ``jacobian``.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Tuple, Union

import numpy as np

Entry = Union[float, str]  # a known constant, or the name of a variable of the generated code
# Constants this close to 0 or +-1 are taken as exact (they come from cos/sin of multiples of
# pi/2 in URDF rpy values); the change is below double-precision round-off of the FK itself.
_SNAP = 1e-14


def _axis_frame(axis: np.ndarray) -> np.ndarray:
    """Rotation whose third column is ``axis``: exact (a signed permutation) for +-x, +-y, +-z."""
    e = np.asarray(axis, dtype=float)
    k = int(np.argmin(np.abs(e)))  # the coordinate axis least aligned with e
    u = np.zeros(3)
    u[k] = 1.0
    u = u - (u @ e) * e
    u /= np.linalg.norm(u)
    v = np.cross(e, u)
    return _snap(np.column_stack([u, v, e]))


def _snap(M: np.ndarray) -> np.ndarray:
    M = np.array(M, dtype=float)
    for target in (0.0, 1.0, -1.0):
        M[np.abs(M - target) < _SNAP] = target
    return M


class _Emitter:
    """Writes assignments for sums of products of constants and variables, folding constants."""

    def __init__(self) -> None:
        self.lines: List[str] = []
        self._count = 0

    def combo(self, terms: List[Tuple[float, Entry, Entry]]) -> Entry:
        """``sum(sign * a * b)``: a constant if every factor is known, else a variable name."""
        const = 0.0
        parts: List[str] = []
        for sign, a, b in terms:
            if isinstance(a, float) and isinstance(b, float):
                const += sign * a * b
                continue
            if isinstance(b, float):
                a, b = b, a
            # now b is a variable; a is a constant or a variable
            if isinstance(a, float):
                coef = sign * a
                if coef == 0.0:
                    continue
                if coef == 1.0:
                    parts.append(f'+ {b}')
                elif coef == -1.0:
                    parts.append(f'- {b}')
                else:
                    parts.append(f'{"+" if coef > 0 else "-"} {abs(coef)!r} * {b}')
            else:
                parts.append(f'{"+" if sign > 0 else "-"} {a} * {b}')
        if not parts:
            return const
        if const == 0.0 and len(parts) == 1 and parts[0].startswith('+ ') and \
                ' ' not in parts[0][2:]:
            return parts[0][2:]  # a plain alias: no code needed
        expr = ' '.join(parts)
        expr = expr[2:] if expr.startswith('+ ') else '-' + expr[2:]
        if const != 0.0:
            expr = f'{const!r} + {expr}'
        return self.assign(expr)

    def assign(self, expr: str) -> str:
        name = f'v{self._count}'
        self._count += 1
        self.lines.append(f'    {name} = {expr}')
        return name


Affine = List[List[Entry]]  # 3 rows x 4 columns: rotation | translation


def _compose(em: _Emitter, F: Affine, C: Affine) -> Affine:
    """``F @ C`` for 3x4 affine transforms."""
    out: Affine = [[0.0] * 4 for _ in range(3)]
    for r in range(3):
        for c in range(3):
            out[r][c] = em.combo([(1.0, F[r][k], C[k][c]) for k in range(3)])
        out[r][3] = em.combo([(1.0, F[r][k], C[k][3]) for k in range(3)] + [(1.0, F[r][3], 1.0)])
    return out


def _const_affine(T: np.ndarray) -> Affine:
    T = _snap(T)
    return [[float(T[r][c]) for c in range(4)] for r in range(3)]


def _entry(x: Entry) -> str:
    return repr(x) if isinstance(x, float) else x


class SerialKinematics:
    """Generated FK and Jacobian functions of a serial chain (one tip, every joint's parent is
    the previous joint).

    Attributes:
        pose: ``pose(q) -> (p, R)``: tip position ``(x, y, z)`` [m] and rotation, row-major
            9-tuple, of ``T_base_tip``.
        pose_jacobian: ``(q) -> (p, R, J)`` with ``J`` the 6 x n geometric Jacobian as a tuple of
            6 row tuples (linear rows first).
        position_jacobian: ``(q) -> (p, J)`` with the 3 linear rows only.
        source: the generated Python source.
    """

    def __init__(self, chain) -> None:
        if not chain.is_serial or len(chain.tips) != 1 or chain.n == 0 or \
                chain.tips[0].parent != chain.n - 1:
            raise ValueError(f'{chain!r} is not a serial chain with one tip')
        n = chain.n
        A_prev = np.eye(3)
        consts: List[np.ndarray] = []
        for joint in chain.joints:
            A = _axis_frame(joint.axis)
            C = np.eye(4)
            C[:3, :] = A_prev.T @ joint.T_parent_joint[:3, :]
            C[:3, :3] = C[:3, :3] @ A
            consts.append(C)
            A_prev = A
        D = np.eye(4)
        D[:3, :] = A_prev.T @ chain.tips[0].T_joint_tip[:3, :]

        namespace: Dict[str, Callable] = {'cos': math.cos, 'sin': math.sin}
        sources = []
        for kind in ('pose', 'pose_jacobian', 'position_jacobian'):
            sources.append(self._generate(kind, chain, consts, D, n))
        self.source = '\n\n'.join(sources)
        exec(compile(self.source, f'<serial kinematics of {chain.tip_link}>', 'exec'),
             namespace)
        self.pose = namespace['pose']
        self.pose_jacobian = namespace['pose_jacobian']
        self.position_jacobian = namespace['position_jacobian']

    @staticmethod
    def _generate(kind: str, chain, consts: List[np.ndarray], D: np.ndarray, n: int) -> str:
        em = _Emitter()
        em.lines.append(f'    {", ".join(f"q{i}" for i in range(n))}{"," if n == 1 else ""} = q')
        F: Affine = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
        axes, origins = [], []
        for i, joint in enumerate(chain.joints):
            G = _compose(em, F, _const_affine(consts[i]))
            axes.append([G[r][2] for r in range(3)])
            origins.append([G[r][3] for r in range(3)])
            if joint.is_prismatic:
                F = [row[:3] + [em.combo([(1.0, row[3], 1.0), (1.0, row[2], f'q{i}')])]
                     for row in G]
            else:
                c, s = em.assign(f'cos(q{i})'), em.assign(f'sin(q{i})')
                F = [[em.combo([(1.0, row[0], c), (1.0, row[1], s)]),
                      em.combo([(1.0, row[1], c), (-1.0, row[0], s)]), row[2], row[3]]
                     for row in G]
        if kind == 'position_jacobian':  # the tip rotation is not needed
            p = [em.combo([(1.0, F[r][k], float(D[k][3])) for k in range(3)] +
                          [(1.0, F[r][3], 1.0)]) for r in range(3)]
            T = None
        else:
            T = _compose(em, F, _const_affine(D))
            p = [T[r][3] for r in range(3)]
        p_text = f'({", ".join(_entry(x) for x in p)},)'
        if kind == 'pose':
            R_text = ', '.join(_entry(T[r][c]) for r in range(3) for c in range(3))
            body = em.lines + [f'    return {p_text}, ({R_text})']
            return '\n'.join(['def pose(q):'] + body)
        rows: List[List[str]] = [[] for _ in range(6)]
        for i, joint in enumerate(chain.joints):
            z, o = axes[i], origins[i]
            if joint.is_prismatic:
                lin, ang = z, [0.0, 0.0, 0.0]
            else:
                d = [em.combo([(1.0, p[r], 1.0), (-1.0, o[r], 1.0)]) for r in range(3)]
                lin = [em.combo([(1.0, z[1], d[2]), (-1.0, z[2], d[1])]),
                       em.combo([(1.0, z[2], d[0]), (-1.0, z[0], d[2])]),
                       em.combo([(1.0, z[0], d[1]), (-1.0, z[1], d[0])])]
                ang = z
            for r in range(3):
                rows[r].append(_entry(lin[r]))
                rows[3 + r].append(_entry(ang[r]))
        nrows = 3 if kind == 'position_jacobian' else 6
        J_text = ', '.join(f'({", ".join(row)},)' for row in rows[:nrows])
        if kind == 'position_jacobian':
            return '\n'.join(['def position_jacobian(q):'] + em.lines +
                             [f'    return {p_text}, ({J_text})'])
        R_text = ', '.join(_entry(T[r][c]) for r in range(3) for c in range(3))
        return '\n'.join(['def pose_jacobian(q):'] + em.lines +
                         [f'    return {p_text}, ({R_text}), ({J_text})'])
