"""Adapters of the compiled peers: OptIK (``optik-py``, Rust) and TRAC-IK (``pytracik``, C++).

The contract of :mod:`adapter` (``prepare`` untimed, ``solve`` timed, ``joints`` untimed; the
harness judges every answer by ik_node's FK and the limits). Both packages are optional: a
missing one is skipped with the reason. Each works around what the package does on these arms:

OptIK (``optik.Robot``):

* it loads a URDF from a file path only, and panics (a pyo3 ``PanicException``, a
  ``BaseException`` that ``except Exception`` does not catch) on continuous joints and on a seed
  slightly outside its limits. The adapter writes a copy of the URDF in which continuous joints
  are revolute with limits +-2 pi (a full turn each way: every pose stays reachable), clips
  the seed into OptIK's own limits, and turns a panic into :class:`PeerPanic` (an
  ``Exception``, so the harness counts it as a failed solve);
* its FK is wrong on Baxter from ``base`` (fixed joints composed in the wrong order), so its
  chain starts at the parent link of the first moving joint (Baxter: ``right_arm_mount``) and
  the target is moved into that frame before the call (not timed);
* stop test ``f < tol_f`` with ``f = |log6(T_target^-1 T)|^2``: ``tol_f`` is the square of the
  benchmark's position tolerance (1e-10), so a converged answer is within 1e-5 in both parts;
  ``max_time`` is the budget, one thread (``set_parallelism(1)``), ``solution_mode='speed'``.

TRAC-IK (``pytracik.TRAC_IK``, SolveType Speed, timeout = the budget):

* its bundled URDF parser reads Panda's limits as 0 when a joint has a ``<safety_controller>``:
  the tags are stripped from the string it is given (on Panda they match the hard limits); it
  keeps limits in single precision, so the URDF's limits are set again in double precision
  (``set_joint_limits``), or its answers at a limit lie up to 2e-7 rad outside it;
* its ``eps`` bounds each component of the twist error, not its norm: eps = 1e-5 / sqrt(3), so
  its converged answers are within 1e-5 m and 1e-5 rad (TRAC-IK's own protocol uses eps = 1e-5
  per component and so accepts position errors up to 1.7e-5 m);
* it starts two threads per solve (KDL's Newton-Raphson and NLopt's SQP race): the harness
  reports its process CPU time (all threads) beside its wall time.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

from benchmarks.common.adapter import POSITION_TOL_M, Adapter, Skip

#: TRAC-IK's eps per twist component: the norm of three components is then below 1e-5.
TRACIK_EPS = POSITION_TOL_M / math.sqrt(3.0)
#: OptIK's stop test f < tol_f on the squared norm of the 6D log error.
OPTIK_TOL_F = POSITION_TOL_M ** 2


class PeerPanic(Exception):
    """A peer raised a ``BaseException`` that is not an ``Exception`` (a Rust panic)."""


def _call_catching_panics(function, *args):
    """``function(*args)``, a Rust panic (pyo3's ``PanicException``) re-raised as PeerPanic.

    ``KeyboardInterrupt``, ``SystemExit`` and ``GeneratorExit`` pass through unchanged.
    """
    try:
        return function(*args)
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except Exception:
        raise
    except BaseException as exc:  # pyo3_runtime.PanicException derives from BaseException
        raise PeerPanic(f'{type(exc).__name__}: {exc}') from None


def _rpy_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _origin(joint) -> np.ndarray:
    T = np.eye(4)
    if joint.origin is not None:
        if joint.origin.rpy:
            T[:3, :3] = _rpy_matrix(joint.origin.rpy)
        if joint.origin.xyz:
            T[:3, 3] = joint.origin.xyz
    return T


def _fk_check(adapter: Adapter, fk, what: str) -> None:
    """``fk(q) -> 4x4`` agrees with ik_node's FK at 5 random configurations (1e-9)."""
    chain = adapter.robot.chain
    rng = np.random.default_rng(7)
    lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    for _ in range(5):
        q = rng.uniform(lo, hi)
        if np.max(np.abs(np.asarray(fk(q), dtype=float) - chain.fk(q))) > 1e-9:
            raise Skip(f'{what} FK disagrees with ik_node FK')


# ------------------------------------------------------------------------------------ OptIK
class OptikAdapter(Adapter):
    """OptIK's ``Robot.ik`` (SLSQP with analytic gradients, random restarts within max_time).

    See the module docstring for the workarounds and settings.
    """

    name = 'optik'

    def __init__(self, robot, task, budget_s: float):
        if task != '6d':
            raise Skip('OptIK solves full poses only (its objective is the 6D log error)')
        super().__init__(robot, task)
        import optik
        self.optik = optik
        # The chain starts at the parent of the first moving joint: leading fixed joints are
        # composed here (OptIK composes them wrongly on Baxter).
        moving = [k for k, uj in enumerate(robot.path) if uj.type != 'fixed']
        self.T_base_start = np.eye(4)
        for uj in robot.path[:moving[0]]:
            self.T_base_start = self.T_base_start @ _origin(uj)
        self.T_start_base = np.linalg.inv(self.T_base_start)
        start = robot.path[moving[0]].parent
        self._urdf_file = self._urdf_copy(robot)
        self.robot_optik = _call_catching_panics(optik.Robot.from_urdf_file,
                                                 self._urdf_file.name, start, robot.tip)
        self.robot_optik.set_parallelism(1)
        if self.robot_optik.num_positions() != self.n:
            raise Skip('OptIK built a chain with a different joint count')
        lower, upper = self.robot_optik.joint_limits()
        self.lower, self.upper = np.array(lower), np.array(upper)
        _fk_check(self, lambda q: self.T_base_start @ np.array(
            _call_catching_panics(self.robot_optik.fk, list(q))), 'OptIK')
        self.config = optik.SolverConfig(solution_mode='speed', max_time=budget_s,
                                         tol_f=OPTIK_TOL_F)
        self.settings = {'solution_mode': 'speed', 'max_time_s': budget_s,
                         'tol_f': OPTIK_TOL_F, 'parallelism': 1, 'base': start,
                         'continuous_joints_as': 'revolute +-2 pi'}

    @staticmethod
    def _urdf_copy(robot):
        """A temporary copy of the URDF with continuous joints made revolute (+-2 pi)."""
        text = Path(robot.urdf_path).read_text()
        continuous = [uj.name for uj in robot.path if uj.type == 'continuous']
        for name in continuous:
            pattern = re.compile(r'(<joint\s[^>]*name\s*=\s*"' + re.escape(name) +
                                 r'"[^>]*>)(.*?)(</joint>)', re.S)
            match = pattern.search(text)
            if match is None:
                raise Skip(f'continuous joint {name!r} not found in the URDF text')
            head = match.group(1).replace('"continuous"', '"revolute"')
            body = re.sub(r'<limit\b[^>]*/>', '', match.group(2))
            body += (f'<limit lower="{-2 * math.pi!r}" upper="{2 * math.pi!r}" '
                     'effort="100" velocity="1"/>')
            text = text[:match.start()] + head + body + match.group(3) + text[match.end():]
        handle = tempfile.NamedTemporaryFile('w', suffix='.urdf', prefix='optik_')
        handle.write(text)
        handle.flush()
        return handle  # kept open: deleted when the adapter goes

    def prepare(self, target, q_seed):
        seed = np.clip(q_seed, self.lower, self.upper).tolist()
        return (self.T_start_base @ target.T), seed

    def solve(self, T, seed):
        return _call_catching_panics(self.robot_optik.ik, self.config, T, seed)

    def joints(self, raw) -> np.ndarray:
        if raw is None:  # no solution within max_time
            return np.full(self.n, np.nan)
        return self._wrapped(np.asarray(raw[0], dtype=float))


# ---------------------------------------------------------------------------------- TRAC-IK
class TracIkAdapter(Adapter):
    """TRAC-IK through ``pytracik`` (KDL Newton-Raphson and NLopt SQP racing in two threads).

    See the module docstring for the workarounds and settings.
    """

    name = 'tracik'

    def __init__(self, robot, task, budget_s: float):
        if task != '6d':
            raise Skip('TRAC-IK solves full poses only (bounds on the rotation are possible, '
                       'not measured here)')
        super().__init__(robot, task)
        import pytracik
        self.pytracik = pytracik
        text = Path(robot.urdf_path).read_text()
        text = re.sub(r'<safety_controller\b[^>]*/>', '', text)
        self.solver = pytracik.TRAC_IK(robot.base, robot.tip, text, budget_s, TRACIK_EPS,
                                       pytracik.SolveType.Speed)
        if pytracik.get_num_joints(self.solver) != self.n:
            raise Skip('TRAC-IK built a chain with a different joint count')
        lower = np.array(pytracik.get_joint_lower_bounds(self.solver))
        upper = np.array(pytracik.get_joint_upper_bounds(self.solver))
        chain = robot.chain
        finite = np.isfinite(chain.lower) & np.isfinite(chain.upper)
        if np.any(np.abs(lower[finite] - chain.lower[finite]) > 1e-6) or \
                np.any(np.abs(upper[finite] - chain.upper[finite]) > 1e-6):
            raise Skip(f'TRAC-IK read other joint limits: {lower} .. {upper}')
        # Its parser keeps the limits in single precision (UR5's 2 pi as 6.2831854820): its
        # answers at a limit then lie up to 2e-7 rad outside the URDF's. The exact limits:
        lower[finite], upper[finite] = chain.lower[finite], chain.upper[finite]
        pytracik.set_joint_limits(self.solver, lower.tolist(), upper.tolist())
        _fk_check(self, lambda q: pytracik.fk(self.solver, np.asarray(q, dtype=float)),
                  'TRAC-IK')
        self.settings = {'solve_type': 'Speed', 'timeout_s': budget_s, 'eps': TRACIK_EPS,
                         'threads': 2}

    def prepare(self, target, q_seed):
        x, y, z = target.position
        qx, qy, qz, qw = target.quat_xyzw
        return (np.asarray(q_seed, dtype=float), float(x), float(y), float(z), float(qx),
                float(qy), float(qz), float(qw))

    def solve(self, seed, *pose):
        return self.pytracik.ik(self.solver, seed, *pose)

    def joints(self, raw) -> np.ndarray:
        raw = np.asarray(raw, dtype=float)
        if raw.shape != (self.n + 1,) or raw[0] < 0:  # [code, q...]; code < 0: no solution
            return np.full(self.n, np.nan)
        return self._wrapped(raw[1:])

    def iterations(self, raw) -> Optional[int]:
        return None
