"""Fast forward kinematics and Jacobian of a serial chain, as generated straight-line Python.

Why one file of this size: the code generator and the class that compiles and holds the
generated functions are read together (the generator is the one place to read).

For 6-7 joints, numpy's per-call overhead (a fixed cost per small-array operation) dominates FK;
plain Python floats are faster. This module turns a serial :class:`~ik_node.model.chain.Chain` into
one Python function per query, with the chain's constants written into the code, so products with
the zeros and ones of typical URDF origins (rotations by multiples of pi/2) disappear:

* every joint frame is re-chosen so that its axis is z (``R(axis, q) = A Rz(q) A^T``, ``A``
  folded into the constant transforms: :func:`axis_frames`, which the compiled kernels' models
  are built from too), leaving 4 multiplications per revolute joint for the motion itself;
* ``T_parent_joint`` (with ``A^T`` of the previous joint) is one constant 3x4 transform per joint;
* an expression is assigned once and its variable reused (joints sharing an origin), and values
  used once (the entries of ``J^T W J``, ``J^T W e``; the position-only Jacobian) are written
  straight into the returned tuple, without a variable.

The generator in this module is the one place to read and to change: the generated code is
never written to a file or edited by hand (one chain's source is kept in
:attr:`SerialKinematics.source` for debugging), and the generated functions are tested against
the numpy :class:`~ik_node.model.chain.Chain` on seeded random configurations. They take a list
of floats and return tuples of floats; :class:`~ik_node.model.chain.Chain` wraps them into numpy
arrays for its public ``fk`` and ``jacobian``.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, NamedTuple, Tuple, Union

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


class AxisFrames(NamedTuple):
    """A chain's joint frames re-chosen so that each joint's axis is their z axis (the frames
    form of :mod:`ik_node.kernels.fk`), for a serial chain or a tree.

    Attributes:
        joint_transforms: per joint the constant 4 x 4 transform from its parent joint's
            re-chosen frame, moved (the base frame for a joint on the base), to its own:
            ``F'_i(q) = F'_parent(q) C_i Rz(q_i)`` (a prismatic joint translates along z).
        tip_transforms: per tip the constant 4 x 4 transform from its joint's re-chosen
            frame (the base frame for a tip on the base) to the tip.
        rotations: per joint ``A_i`` (3 x 3): the re-chosen frame is the chain's joint frame
            turned by it, ``F'_i = F_i diag(A_i, 1)``; a transform from the chain's joint frame
            (a link's) is ``diag(A_i^T, 1)`` times it from the re-chosen one.
    """

    joint_transforms: List[np.ndarray]
    tip_transforms: List[np.ndarray]
    rotations: List[np.ndarray]


def axis_frames(chain) -> AxisFrames:
    """The :class:`AxisFrames` of ``chain`` (a :class:`~ik_node.model.chain.Chain`)."""
    rotations = [_axis_frame(joint.axis) for joint in chain.joints]
    eye = np.eye(3)
    joint_transforms = []
    for joint, A in zip(chain.joints, rotations):
        A_parent = rotations[joint.parent] if joint.parent >= 0 else eye
        C = np.eye(4)
        C[:3, :] = A_parent.T @ joint.T_parent_joint[:3, :]
        C[:3, :3] = C[:3, :3] @ A
        joint_transforms.append(C)
    tip_transforms = []
    for tip in chain.tips:
        D = np.eye(4)
        D[:3, :] = (rotations[tip.parent] if tip.parent >= 0 else eye).T @ tip.T_joint_tip[:3, :]
        tip_transforms.append(D)
    return AxisFrames(joint_transforms, tip_transforms, rotations)


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
        self._names: Dict[str, str] = {}  # expression -> the variable that holds it

    def combo(self, terms: List[Tuple[float, Entry, Entry]]) -> Entry:
        """``sum(sign * a * b)``: a constant if every factor is known, else a variable name."""
        expr = self.expression(terms)
        if isinstance(expr, float) or expr.isidentifier():
            return expr
        return self.assign(expr)

    def expression(self, terms: List[Tuple[float, Entry, Entry]]) -> Entry:
        """``sum(sign * a * b)`` as a constant, a variable name or an expression (no code)."""
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
        return expr

    def assign(self, expr: str) -> str:
        """A variable holding ``expr``: the one already assigned the same expression, if any
        (the code is straight-line, every variable assigned once)."""
        name = self._names.get(expr)
        if name is None:
            name = self._names[expr] = f'v{self._count}'
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
        pose_normal: ``(target, w2, tolerances, q) -> (cost, position error, angle error, H,
            g)``: the
            weighted 6D error of ``q`` to a target pose and its normal equations, in one
            generated function (no Jacobian is packed); see :func:`_emit_pose_normal`.
        position_residual: ``(target, tolerance, q) -> (cost, position error, 0.0, J, e)``:
            ``e`` the position error vector to ``target`` (x, y, z) [m], ``cost = |e|^2``,
            ``J`` its 3 x n Jacobian as row tuples; ``J`` and ``e`` are None when the error is
            within ``tolerance`` [m] (compared as ``<=``).
        position: ``position(q) -> (x, y, z)``: the tip position only [m].
        position_newton: ``(target, q) -> (cost, H, g)``: the squared distance to ``target``
            and its exact Newton system (half the Hessian, minus half the gradient); see
            :func:`_emit_position_newton`.
        source: the generated Python source.
        joint_transforms: per joint the constant 4 x 4 transform from the previous joint's
            frame (turned by its angle) to this joint's frame, whose z axis is the joint axis:
            ``T_base_tip(q) = C_0 Rz(q_0) C_1 Rz(q_1) ... D`` (a prismatic joint translates
            along z instead).
        tip_transform: ``D``, the constant transform from the last joint's frame to the tip.
    """

    def __init__(self, chain) -> None:
        if not chain.is_serial or len(chain.tips) != 1 or chain.n == 0 or \
                chain.tips[0].parent != chain.n - 1:
            raise ValueError(f'{chain!r} is not a serial chain with one tip')
        n = chain.n
        frames = axis_frames(chain)
        consts, D = frames.joint_transforms, frames.tip_transforms[0]
        self.joint_transforms = consts
        self.tip_transform = D

        namespace: Dict[str, Callable] = {'cos': math.cos, 'sin': math.sin, 'sqrt': math.sqrt,
                                          'atan2': math.atan2, 'half_turn': _half_turn}
        sources = []
        for kind in ('pose', 'pose_jacobian', 'position_jacobian', 'pose_normal',
                     'position_residual', 'position', 'position_newton'):
            sources.append(self._generate(kind, chain, consts, D, n))
        self.source = '\n\n'.join(sources)
        exec(compile(self.source, f'<serial kinematics of {chain.tip_link}>', 'exec'),
             namespace)
        self.pose = namespace['pose']
        self.pose_jacobian = namespace['pose_jacobian']
        self.position_jacobian = namespace['position_jacobian']
        self.pose_normal = namespace['pose_normal']
        self.position_residual = namespace['position_residual']
        self.position = namespace['position']
        self.position_newton = namespace['position_newton']

    @staticmethod
    def _generate(kind: str, chain, consts: List[np.ndarray], D: np.ndarray, n: int) -> str:
        em = _Emitter()
        em.lines.append(f'    {", ".join(f"q{i}" for i in range(n))}{"," if n == 1 else ""} = q')
        # the tip rotation is not needed for position only
        need_rotation = kind not in ('position_jacobian', 'position_residual', 'position',
                                     'position_newton')
        p, T, emit_columns = _emit_kinematics(em, chain, consts, D, need_rotation)
        p_text = f'({", ".join(_entry(x) for x in p)},)'
        if kind == 'position':
            return '\n'.join(['def position(q):'] + em.lines + [f'    return {p_text}'])
        if kind == 'position_newton':
            return _emit_position_newton(em, p, emit_columns)
        R_text = '' if T is None else ', '.join(_entry(T[r][c]) for r in range(3)
                                                for c in range(3))
        if kind == 'pose':
            return '\n'.join(['def pose(q):'] + em.lines + [f'    return {p_text}, ({R_text})'])
        if kind == 'pose_normal':
            return _emit_pose_normal(em, p, T, emit_columns)
        if kind == 'position_residual':
            em.lines += [f'    d{axis} = target[{r}] - {_entry(p[r])}'
                         for r, axis in enumerate('xyz')]
            em.lines += ['    cost = dx * dx + dy * dy + dz * dz', '    error = sqrt(cost)',
                         '    if error <= tolerance:',
                         '        return cost, error, 0.0, None, None']
        columns = emit_columns(inline=kind == 'position_residual')
        if kind == 'position_residual':
            J_text = ', '.join(f'({", ".join(_entry(c[r]) for c in columns)},)' for r in range(3))
            return '\n'.join(['def position_residual(target, tolerance, q):'] + em.lines +
                             [f'    return cost, error, 0.0, ({J_text}), (dx, dy, dz)'])
        rows = [[_entry(column[r]) for column in columns] for r in range(6)]
        nrows = 3 if kind == 'position_jacobian' else 6
        J_text = ', '.join(f'({", ".join(row)},)' for row in rows[:nrows])
        if kind == 'position_jacobian':
            return '\n'.join(['def position_jacobian(q):'] + em.lines +
                             [f'    return {p_text}, ({J_text})'])
        return '\n'.join(['def pose_jacobian(q):'] + em.lines +
                         [f'    return {p_text}, ({R_text}), ({J_text})'])


def _emit_kinematics(em: _Emitter, chain, consts: List[np.ndarray], D: np.ndarray,
                     need_rotation: bool):
    """Emit FK: ``(p, T or None, emit_columns)``; ``emit_columns()`` emits the Jacobian and
    returns its columns, 6 entries each (linear, then angular)."""
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
    if not need_rotation:
        p = [em.combo([(1.0, F[r][k], float(D[k][3])) for k in range(3)] +
                      [(1.0, F[r][3], 1.0)]) for r in range(3)]
        T = None
    else:
        T = _compose(em, F, _const_affine(D))
        p = [T[r][3] for r in range(3)]

    def emit_columns(inline: bool = False) -> List[List[Entry]]:
        # inline: the linear entries are returned as expressions, not assigned (for code that
        # uses each entry once)
        cross = em.expression if inline else em.combo
        columns: List[List[Entry]] = []
        for i, joint in enumerate(chain.joints):
            z, o = axes[i], origins[i]
            if joint.is_prismatic:
                columns.append(list(z) + [0.0, 0.0, 0.0])
                continue
            d = [em.combo([(1.0, p[r], 1.0), (-1.0, o[r], 1.0)]) for r in range(3)]
            columns.append([cross([(1.0, z[1], d[2]), (-1.0, z[2], d[1])]),
                            cross([(1.0, z[2], d[0]), (-1.0, z[0], d[2])]),
                            cross([(1.0, z[0], d[1]), (-1.0, z[1], d[0])])] + list(z))
        return columns
    return p, T, emit_columns


def _emit_pose_normal(em: _Emitter, p: List[Entry], T: Affine, emit_columns: Callable) -> str:
    """``pose_normal(target, w2, tolerances, q)``: the weighted 6D error and its normal
    equations (the arguments fixed for a solve first, so ``functools.partial`` binds them).

    ``target`` is ``(tx, ty, tz, t00, t01, ..., t22)`` (position [m], then the target rotation
    row-major), ``w2`` the squared orientation weight [m^2/rad^2], ``tolerances`` the position
    [m] and angle [rad] errors within which no step is needed. Returns ``(cost, position
    error [m], angle error [rad], H, g)``, with ``H`` and ``g`` None when both errors are within
    ``tolerances`` (compared as ``<=``): ``cost = |dp|^2 + w2 angle^2``, ``H = J^T W J`` as the
    flat lower triangle row by row (entry (a, b), a >= b, at ``a (a + 1) / 2 + b``) and
    ``g = J^T W e``, ``W = diag(1, 1, 1, w2, w2, w2)``, ``e = (dp, omega)`` with ``omega`` the
    rotation vector taking the tip rotation to the target's (base frame).
    """
    lines = em.lines
    lines.append('    tx, ty, tz, t00, t01, t02, t10, t11, t12, t20, t21, t22 = target')
    r = [[_entry(T[a][b]) for b in range(3)] for a in range(3)]
    px, py, pz = (_entry(x) for x in p)
    lines += [
        f'    dx = tx - {px}', f'    dy = ty - {py}', f'    dz = tz - {pz}',
        # Rotation vector of R_err = R_target @ R^T from its skew part and trace.
        f'    sx = 0.5 * (t20 * {r[1][0]} + t21 * {r[1][1]} + t22 * {r[1][2]} - '
        f't10 * {r[2][0]} - t11 * {r[2][1]} - t12 * {r[2][2]})',
        f'    sy = 0.5 * (t00 * {r[2][0]} + t01 * {r[2][1]} + t02 * {r[2][2]} - '
        f't20 * {r[0][0]} - t21 * {r[0][1]} - t22 * {r[0][2]})',
        f'    sz = 0.5 * (t10 * {r[0][0]} + t11 * {r[0][1]} + t12 * {r[0][2]} - '
        f't00 * {r[1][0]} - t01 * {r[1][1]} - t02 * {r[1][2]})',
        '    c = 0.5 * (' + ' + '.join(f't{a}{b} * {r[a][b]}' for a in range(3)
                                       for b in range(3)) + ' - 1.0)',
        '    sin_angle = sqrt(sx * sx + sy * sy + sz * sz)',
        '    angle = atan2(sin_angle, c)',
        '    if sin_angle > 1e-6:',
        '        f = w2 * angle / sin_angle',
        '        wx, wy, wz = sx * f, sy * f, sz * f',
        '    elif c > 0.0:',  # angle ~ 0: the first-order term is exact to angle^3
        '        wx, wy, wz = w2 * sx, w2 * sy, w2 * sz',
        '    else:',  # half a turn away: rare, take the careful path
        f'        wx, wy, wz = half_turn(target, ({", ".join(r[0] + r[1] + r[2])}), w2)',
        '    position_sq = dx * dx + dy * dy + dz * dz',
        '    position_error = sqrt(position_sq)',
        '    if position_error <= tolerances[0] and angle <= tolerances[1]:',
        '        return position_sq + w2 * angle * angle, position_error, angle, None, None',
    ]
    em.lines = lines
    columns = emit_columns()
    n = len(columns)
    # Each entry of H and g is written as one expression in the returned tuple (used once: no
    # variable). The angular part of a diagonal entry is |z|^2 = 1 for a revolute joint whose
    # axis turns (a column of a rotation matrix; constant axes fold into constants anyway).
    H: List[str] = []
    for a in range(n):
        for b in range(a + 1):
            lin = em.expression([(1.0, columns[a][k], columns[b][k]) for k in range(3)])
            angular = [(1.0, columns[a][k], columns[b][k]) for k in range(3, 6)]
            if a == b and not all(isinstance(columns[a][k], float) for k in range(3, 6)):
                ang: Entry = 1.0
            else:
                ang = em.expression(angular)
            H.append(_sum_text(lin, ang))
    g = [_entry(em.expression([(1.0, columns[a][0], 'dx'), (1.0, columns[a][1], 'dy'),
                               (1.0, columns[a][2], 'dz'), (1.0, columns[a][3], 'wx'),
                               (1.0, columns[a][4], 'wy'), (1.0, columns[a][5], 'wz')]))
         for a in range(n)]
    return '\n'.join(['def pose_normal(target, w2, tolerances, q):'] + em.lines + [
        f'    return (position_sq + w2 * angle * angle, position_error, angle, '
        f'({", ".join(H)},), ({", ".join(g)},))'])


def _emit_position_newton(em: _Emitter, p: List[Entry], emit_columns: Callable) -> str:
    """``position_newton(target, q)``: ``(cost, H, g)`` of the squared tip distance.

    ``e = target - p``, ``cost = |e|^2`` [m^2], ``g = J^T e`` and ``H = J^T J - S`` with
    ``S_jk = w_j . (J_k x e)`` for ``j <= k`` (``J_k`` the linear and ``w_k`` the angular
    Jacobian column: ``d2p / dq_j dq_k = w_j x J_k``), the flat lower triangle row by row (entry
    (a, b), a >= b, at ``a (a + 1) / 2 + b``). ``H`` is half the Hessian of ``cost`` and ``g``
    minus half its gradient: the Newton step is ``H^-1 g``. See
    :mod:`ik_node.solvers.out_of_reach.closest_pose`.
    """
    em.lines += [f'    e{axis} = target[{r}] - {_entry(p[r])}' for r, axis in enumerate('xyz')]
    columns = emit_columns()
    # c_k = J_k x e, assigned once (used by every entry of row k).
    cross = [[em.combo([(1.0, c[1], 'ez'), (-1.0, c[2], 'ey')]),
              em.combo([(1.0, c[2], 'ex'), (-1.0, c[0], 'ez')]),
              em.combo([(1.0, c[0], 'ey'), (-1.0, c[1], 'ex')])] for c in columns]
    H: List[str] = []
    for a, ca in enumerate(columns):
        for b in range(a + 1):
            cb = columns[b]
            H.append(_entry(em.expression(
                [(1.0, ca[k], cb[k]) for k in range(3)] +
                [(-1.0, cb[3 + k], cross[a][k]) for k in range(3)])))
    g = [_entry(em.expression([(1.0, c[0], 'ex'), (1.0, c[1], 'ey'), (1.0, c[2], 'ez')]))
         for c in columns]
    return '\n'.join(['def position_newton(target, q):'] + em.lines + [
        f'    return ex * ex + ey * ey + ez * ez, ({", ".join(H)},), ({", ".join(g)},)'])


def _sum_text(linear: Entry, angular: Entry) -> str:
    """Code of ``linear + w2 * angular``, each a constant, a variable or an expression."""
    parts = [] if linear == 0.0 else [_entry(linear)]
    if isinstance(angular, float):
        if angular != 0.0:
            parts.append('w2' if angular == 1.0 else f'w2 * {angular!r}')
    else:
        parts.append(f'w2 * ({angular})')
    return ' + '.join(parts) or '0.0'


def _half_turn(target, R, w2: float) -> Tuple[float, float, float]:
    """``w2`` times the rotation vector of ``R_target @ R^T`` when its angle is near pi."""
    t00, t01, t02, t10, t11, t12, t20, t21, t22 = target[3:]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = R
    E = [[t00 * r00 + t01 * r01 + t02 * r02, t00 * r10 + t01 * r11 + t02 * r12,
          t00 * r20 + t01 * r21 + t02 * r22],
         [t10 * r00 + t11 * r01 + t12 * r02, t10 * r10 + t11 * r11 + t12 * r12,
          t10 * r20 + t11 * r21 + t12 * r22],
         [t20 * r00 + t21 * r01 + t22 * r02, t20 * r10 + t21 * r11 + t22 * r12,
          t20 * r20 + t21 * r21 + t22 * r22]]
    s = [0.5 * (E[2][1] - E[1][2]), 0.5 * (E[0][2] - E[2][0]), 0.5 * (E[1][0] - E[0][1])]
    c = 0.5 * (E[0][0] + E[1][1] + E[2][2] - 1.0)
    angle = math.atan2(math.sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]), c)
    # (E + I) / 2 = a a^T near a half turn; its dominant column is the axis (up to sign).
    k = max(range(3), key=lambda i: E[i][i])
    bkk = 0.5 * (E[k][k] + 1.0)
    axis = [0.5 * (E[i][k] + (1.0 if i == k else 0.0)) / math.sqrt(max(bkk, 1e-300))
            for i in range(3)]
    if axis[0] * s[0] + axis[1] * s[1] + axis[2] * s[2] < 0.0:
        axis = [-v for v in axis]
    f = w2 * angle
    return axis[0] * f, axis[1] * f, axis[2] * f
