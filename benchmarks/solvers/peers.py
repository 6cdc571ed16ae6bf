"""Solver adapters for the benchmark: ik_node's own solvers and the peers (KDL, ikpy, pinocchio;
OptIK and TRAC-IK in :mod:`compiled_peers`).

Every adapter is bound to one robot and one task ('6d' or 'position') and splits a solve in three:

* ``prepare(target, q_seed)`` builds the solver's native inputs (not timed),
* ``solve(*args)`` is the call the harness times with ``time.perf_counter``,
* ``joints(raw)`` turns the native answer into a numpy joint vector in ik_node's joint order
  (not timed).

The harness measures errors itself, by ik_node's forward kinematics on what ``joints`` returns, so
no adapter reports success. Peers are optional: a missing package makes its factory unavailable
with the reason, and the benchmark goes on without it.

Peers' answers are wrapped into the joint limits by whole turns (2 pi) where that is possible, as
any user of a limit-blind solver would do; nothing else is changed. ik_node's answers are passed
through untouched (they are within limits by contract, and the harness checks it).
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks.common.adapter import (ORIENTATION_TOL_RAD, POSITION_TOL_M, Adapter, Robot, Skip,  # noqa: F401
                     Target, wrap_into_limits)
from benchmarks.solvers.compiled_peers import OptikAdapter, TracIkAdapter


def urdf_joint_path(urdf, base: str, tip: str) -> List[Any]:
    """The URDF joints (fixed ones included) from ``base`` to ``tip``, base first."""
    parent_joint = {j.child: j for j in urdf.joints}
    path, link = [], tip
    while link != base:
        joint = parent_joint.get(link)
        if joint is None:
            raise ValueError(f'no path from {base!r} to {tip!r} in the URDF')
        path.append(joint)
        link = joint.parent
    return path[::-1]


def parse_urdf(path: Path):
    """urdf_parser_py's URDF of a file, its warnings about unknown tags silenced."""
    from urdf_parser_py.urdf import URDF
    with contextlib.redirect_stderr(io.StringIO()):
        return URDF.from_xml_string(Path(path).read_text())


def rotation_error_rad(R_a: np.ndarray, R_b: np.ndarray) -> float:
    """Angle [rad] of ``R_a^T R_b``, by atan2 (accurate at 0 and at pi)."""
    R = R_a.T @ R_b
    s = 0.5 * math.sqrt((R[2, 1] - R[1, 2]) ** 2 + (R[0, 2] - R[2, 0]) ** 2 +
                        (R[1, 0] - R[0, 1]) ** 2)
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    return float(math.atan2(s, c))


class IkNodeAdapter(Adapter):
    """An ik_node solver through its public API: ``make_solver(name, chain, params).solve``."""

    is_peer = False

    def __init__(self, robot: Robot, task: str, solver_name: str, params: Dict[str, Any],
                 budget_s: float):
        super().__init__(robot, task)
        import ik_node
        self.name = solver_name
        cls = ik_node.solver_class(solver_name)
        if task == '6d' and not cls.supports_orientation:
            raise Skip(f'{solver_name} solves position only')
        params = dict(params)
        if 'timeout' in cls.param_specs() and 'timeout' not in params:
            params['timeout'] = budget_s
        try:
            self.solver = ik_node.make_solver(solver_name, robot.chain, params)
        except ik_node.IkError as exc:
            raise Skip(f'{type(exc).__name__}: {exc}') from None
        except NotImplementedError:
            raise Skip('not implemented yet') from None
        self.settings = {k: v for k, v in self.solver.params.items()}

    def prepare(self, target, q_seed):
        quat = target.quat_xyzw if self.task == '6d' else None
        return target.position, quat, q_seed

    def solve(self, position, quat_xyzw, q_seed):
        return self.solver.solve(position, quat_xyzw, q_seed)

    def joints(self, raw):
        return np.asarray(raw.joint_positions, dtype=float)

    def iterations(self, raw):
        return int(raw.iterations)

    def inner_time(self, raw):
        return float(raw.solve_time)


# -------------------------------------------------------------------------------------- KDL
def kdl_chain_from_urdf(robot: Robot):
    """A PyKDL.Chain of the URDF joints base -> tip (what kdl_parser would build).

    Each URDF joint becomes a segment whose tip frame is the joint origin (xyz, rpy) and whose
    joint rotates (or slides) about the URDF axis expressed in the parent frame, through the
    origin point: ``T_parent_child(q) = origin * motion(axis, q)``.
    """
    import PyKDL as kdl
    chain = kdl.Chain()
    for uj in robot.path:
        xyz = list(uj.origin.xyz) if uj.origin is not None and uj.origin.xyz else [0.0] * 3
        rpy = list(uj.origin.rpy) if uj.origin is not None and uj.origin.rpy else [0.0] * 3
        F = kdl.Frame(kdl.Rotation.RPY(*rpy), kdl.Vector(*xyz))
        if uj.type == 'fixed':
            joint = kdl.Joint(uj.name, kdl.Joint.Fixed)
        elif uj.type in ('revolute', 'continuous', 'prismatic'):
            axis = F.M * kdl.Vector(*(uj.axis if uj.axis is not None else [1.0, 0.0, 0.0]))
            kind = kdl.Joint.TransAxis if uj.type == 'prismatic' else kdl.Joint.RotAxis
            joint = kdl.Joint(uj.name, F.p, axis, kind)
        else:
            raise Skip(f'joint {uj.name!r} of type {uj.type!r} has no KDL equivalent here')
        chain.addSegment(kdl.Segment(uj.child, joint, F))
    return chain


def _kdl_frame(T: np.ndarray):
    import PyKDL as kdl
    R = T[:3, :3]
    return kdl.Frame(kdl.Rotation(R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2],
                                  R[2, 0], R[2, 1], R[2, 2]),
                     kdl.Vector(T[0, 3], T[1, 3], T[2, 3]))


def _kdl_array(values: Sequence[float]):
    import PyKDL as kdl
    a = kdl.JntArray(len(values))
    for i, v in enumerate(values):
        a[i] = float(v)
    return a


class _KdlAdapter(Adapter):
    def __init__(self, robot, task):
        super().__init__(robot, task)
        import PyKDL as kdl
        self.kdl = kdl
        self.kchain = kdl_chain_from_urdf(robot)
        if self.kchain.getNrOfJoints() != self.n:
            raise Skip('KDL chain has a different joint count')
        self._check_fk()
        self.q_out = kdl.JntArray(self.n)

    def _check_fk(self):
        fk = self.kdl.ChainFkSolverPos_recursive(self.kchain)
        rng = np.random.default_rng(7)
        chain = self.robot.chain
        lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
        hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
        for _ in range(5):
            q = rng.uniform(lo, hi)
            F = self.kdl.Frame()
            fk.JntToCart(_kdl_array(q), F)
            T = np.eye(4)
            for r in range(3):
                T[r, 3] = F.p[r]
                for c in range(3):
                    T[r, c] = F.M[r, c]
            if np.max(np.abs(T - chain.fk(q))) > 1e-9:
                raise Skip('KDL chain FK disagrees with ik_node FK (converter bug?)')

    def prepare(self, target, q_seed):
        return _kdl_array(q_seed), _kdl_frame(target.T)

    def solve(self, q_init, frame):
        self.solver.CartToJnt(q_init, frame, self.q_out)
        return self.q_out

    def joints(self, raw):
        return self._wrapped(np.array([raw[i] for i in range(self.n)]))


class KdlLmaAdapter(_KdlAdapter):
    """KDL ChainIkSolverPos_LMA (Levenberg-Marquardt; ignores joint limits).

    Weights L = (1, 1, 1, w, w, w) on the (position, rotation) error, w = 0.1 for 6D and 0 for
    position only, and eps = 1e-5 on the weighted error norm: converged means position error
    < 1e-5 m and rotation error < 1e-4 rad, the benchmark's criterion. Debian's PyKDL (old
    pybind11) segfaults converting the numpy array L under numpy >= 2; there the default weights
    (1, 1, 1, 0.01, 0.01, 0.01) with eps = 1e-6 are used for 6D and position only is skipped.
    """

    name = 'kdl_lma'

    def __init__(self, robot, task, maxiter: int):
        if int(np.__version__.split('.')[0]) >= 2 and task != '6d':
            raise Skip('position only needs the weights (L) constructor of LMA, which crashes '
                       "Debian's PyKDL under numpy >= 2: use numpy < 2 (benchmarks/README.md)")
        super().__init__(robot, task)
        if int(np.__version__.split('.')[0]) >= 2:
            # Same criterion through KDL's default weights: 0.01 * 1e-4 rad = 1e-6.
            self.L, self.eps = None, 1e-6
        else:
            w = 0.1 if task == '6d' else 0.0
            self.L = np.array([1.0, 1.0, 1.0, w, w, w]).reshape(6, 1)
            self.eps = POSITION_TOL_M
        self.set_cap(maxiter)

    def set_cap(self, maxiter: int, eps: Optional[float] = None, eps_joints: float = 1e-15):
        self.maxiter = int(maxiter)
        eps = self.eps if eps is None else eps
        if self.L is None:
            self.solver = self.kdl.ChainIkSolverPos_LMA(self.kchain, eps, self.maxiter,
                                                        eps_joints)
        else:
            self.solver = self.kdl.ChainIkSolverPos_LMA(self.kchain, self.L, eps, self.maxiter,
                                                        eps_joints)
        self.settings = {'L': (self.L.ravel().tolist() if self.L is not None
                               else 'default (1, 1, 1, 0.01, 0.01, 0.01)'),
                         'eps': self.eps, 'maxiter': self.maxiter, 'eps_joints': eps_joints}


class KdlNrJlAdapter(_KdlAdapter):
    """KDL ChainIkSolverPos_NR_JL (Newton-Raphson, clamps to joint limits) over
    ChainFkSolverPos_recursive and ChainIkSolverVel_pinv. 6D only: its stop test compares all six
    twist components with eps, so it cannot ignore orientation.

    eps = 5e-6 per twist component: converged means position and rotation errors below
    sqrt(3) * 5e-6 < 1e-5.
    """

    name = 'kdl_nr_jl'

    def __init__(self, robot, task, maxiter: int):
        if task != '6d':
            raise Skip('NR_JL has no position-only mode (its stop test needs all 6 components)')
        super().__init__(robot, task)
        chain = robot.chain
        self.q_min = _kdl_array(np.where(np.isfinite(chain.lower), chain.lower, -1e10))
        self.q_max = _kdl_array(np.where(np.isfinite(chain.upper), chain.upper, 1e10))
        self.fk = self.kdl.ChainFkSolverPos_recursive(self.kchain)
        self.vel = self.kdl.ChainIkSolverVel_pinv(self.kchain)
        self.eps = 5e-6
        self.set_cap(maxiter)

    def set_cap(self, maxiter: int, eps: Optional[float] = None):
        self.maxiter = int(maxiter)
        self.solver = self.kdl.ChainIkSolverPos_NR_JL(
            self.kchain, self.q_min, self.q_max, self.fk, self.vel, self.maxiter,
            self.eps if eps is None else eps)
        self.settings = {'eps': self.eps, 'maxiter': self.maxiter,
                         'vel_solver': 'ChainIkSolverVel_pinv(eps=1e-5, maxiter=150)'}


# ------------------------------------------------------------------------------------- ikpy
class IkpyAdapter(Adapter):
    """ikpy's ``Chain.inverse_kinematics`` (scipy least_squares within the joint bounds).

    The chain is read by ikpy from the URDF file with ``base_elements`` naming the whole path
    base -> tip; the origin link and fixed joints are inactive. 6D uses
    ``orientation_mode='all'``. ``optimizer_budget`` (function evaluations) is the time cap.
    """

    name = 'ikpy'

    def __init__(self, robot, task, budget_evals: int):
        super().__init__(robot, task)
        import warnings
        import_ikpy()
        import ikpy.chain
        elements = [robot.base]
        for uj in robot.path:
            elements += [uj.name, uj.child]
        mask = [False] + [uj.type != 'fixed' for uj in robot.path]
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            chain = ikpy.chain.Chain.from_urdf_file(str(robot.urdf_path), base_elements=elements,
                                                    active_links_mask=None)
            links = chain.links[:len(mask)]  # ikpy walks on past the tip if the tip has children
            if len(links) != len(mask):
                raise Skip('ikpy built a shorter chain than the URDF path')
            self.ichain = ikpy.chain.Chain(links, active_links_mask=mask)
        self.mask = np.array(mask)
        self._check_fk()
        self.set_cap(budget_evals)

    def set_cap(self, budget_evals: int):
        self.budget = int(budget_evals)
        self.settings = {'optimizer': 'least_squares', 'optimizer_budget': self.budget,
                         'orientation_mode': 'all' if self.task == '6d' else None}

    def _full(self, q):
        full = np.zeros(len(self.mask))
        full[self.mask] = q
        return full

    def _check_fk(self):
        rng = np.random.default_rng(7)
        chain = self.robot.chain
        lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
        hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
        for _ in range(5):
            q = rng.uniform(lo, hi)
            if np.max(np.abs(self.ichain.forward_kinematics(self._full(q)) - chain.fk(q))) > 1e-9:
                raise Skip('ikpy chain FK disagrees with ik_node FK')

    def prepare(self, target, q_seed):
        return target.position, target.T[:3, :3], self._full(q_seed)

    def solve(self, position, R, initial):
        if self.task == '6d':
            return self.ichain.inverse_kinematics(position, R, orientation_mode='all',
                                                  initial_position=initial,
                                                  optimizer_budget=self.budget)
        return self.ichain.inverse_kinematics(position, initial_position=initial,
                                              optimizer_budget=self.budget)

    def joints(self, raw):
        return self._wrapped(np.asarray(raw, dtype=float)[self.mask])


# -------------------------------------------------------------------------------- pinocchio
class PinocchioAdapter(Adapter):
    """A CLIK loop on pinocchio's kinematics, after pinocchio's inverse-kinematics example.

    pinocchio has no IK solver of its own; this is the damped least-squares loop of its
    documentation (log6 error, ``Jlog6``-corrected frame Jacobian, ``v = -J^T (J J^T + d I)^-1 e``)
    with full steps (dt = 1), damping d = 1e-6 and the joints clipped into their limits after
    every step. Position only uses the world-aligned 3-row Jacobian. It stops at the benchmark's
    tolerance or when the time budget is spent (checked every iteration).
    """

    name = 'pinocchio_clik'
    damping = 1e-6
    max_step = 0.5

    def __init__(self, robot, task, budget_s: float):
        super().__init__(robot, task)
        import pinocchio as pin
        self.pin = pin
        chain = robot.chain
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            full = pin.buildModelFromUrdf(str(robot.urdf_path))
        names = list(full.names)[1:]
        missing = [j for j in chain.joint_names if j not in names]
        if missing:
            raise Skip(f'pinocchio model lacks joints {missing}')
        lock = [full.getJointId(nm) for nm in names if nm not in chain.joint_names]
        model = pin.buildReducedModel(full, lock, pin.neutral(full)) if lock else full
        if model.nq != chain.n or model.nv != chain.n:
            raise Skip('chain has joints with nq != 1 (continuous/planar): not handled here')
        self.model, self.data = model, model.createData()
        # perm[i]: index in pinocchio's q of ik_node joint i
        self.perm = np.array([model.joints[model.getJointId(nm)].idx_q
                              for nm in chain.joint_names])
        self.fid = model.getFrameId(robot.tip)
        fid_base = model.getFrameId(robot.base)
        if self.fid >= model.nframes or fid_base >= model.nframes:
            raise Skip('base or tip frame missing in the pinocchio model')
        self.lower = model.lowerPositionLimit.copy()
        self.upper = model.upperPositionLimit.copy()
        self.budget_s = budget_s
        self.tol_p, self.tol_r = 0.5 * POSITION_TOL_M, 0.5 * ORIENTATION_TOL_RAD
        pin.framesForwardKinematics(model, self.data, pin.neutral(model))
        self.oMb = self.data.oMf[fid_base].copy()
        self._check_fk(fid_base)
        self.settings = {'dt': 1.0, 'damping': self.damping, 'timeout_s': budget_s,
                         'stop_at': [self.tol_p, self.tol_r]}

    def _pin_q(self, q):
        out = np.zeros(self.model.nq)
        out[self.perm] = q
        return out

    def _check_fk(self, fid_base):
        rng = np.random.default_rng(7)
        chain = self.robot.chain
        for _ in range(5):
            q = rng.uniform(chain.lower, chain.upper)
            self.pin.framesForwardKinematics(self.model, self.data, self._pin_q(q))
            bMt = self.data.oMf[fid_base].actInv(self.data.oMf[self.fid])
            if np.max(np.abs(bMt.homogeneous - chain.fk(q))) > 1e-9:
                raise Skip('pinocchio FK disagrees with ik_node FK (moving base frame?)')

    def prepare(self, target, q_seed):
        return self.oMb * self.pin.SE3(target.T[:3, :3].copy(), target.T[:3, 3].copy()), \
            self._pin_q(q_seed)

    def solve(self, oMdes, q):
        pin, model, data, fid = self.pin, self.model, self.data, self.fid
        deadline = time.perf_counter() + self.budget_s
        eye = np.eye(6 if self.task == '6d' else 3)
        p_des = oMdes.translation
        while True:
            pin.forwardKinematics(model, data, q)
            oMf = pin.updateFramePlacement(model, data, fid)
            dp = p_des - oMf.translation
            if self.task == '6d':
                iMd = oMf.actInv(oMdes)
                err = pin.log6(iMd).vector
                if np.linalg.norm(dp) < self.tol_p and np.linalg.norm(err[3:]) < self.tol_r:
                    return q
                J = pin.computeFrameJacobian(model, data, q, fid)
                J = -pin.Jlog6(iMd.inverse()) @ J
                v = -J.T @ np.linalg.solve(J @ J.T + self.damping * eye, err)
            else:
                if np.linalg.norm(dp) < self.tol_p:
                    return q
                J = pin.computeFrameJacobian(model, data, q, fid,
                                             pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
                v = J.T @ np.linalg.solve(J @ J.T + self.damping * eye, dp)
            peak = np.max(np.abs(v))
            if peak > self.max_step:
                v *= self.max_step / peak
            q = np.clip(pin.integrate(model, q, v), self.lower, self.upper)
            if time.perf_counter() > deadline:
                return q

    def joints(self, raw):
        return self._wrapped(np.asarray(raw)[self.perm])


# -------------------------------------------------------------------------------- factories
@dataclass
class PeerFactory:
    """How to build one peer; ``why_not`` is set when its package is missing."""

    name: str
    package: str
    build: Callable[..., Adapter]
    version: str = ''
    why_not: str = ''


def import_ikpy():
    """Import ikpy without the usage-analytics web request its ``__init__`` starts in a thread.

    ikpy 4.x calls a tracking pixel from a background thread on import, with no opt-out. Only
    ikpy's own ``__init__`` runs with ``threading.Thread`` replaced by a no-op; its dependencies
    are imported before, normally.
    """
    if 'ikpy' in sys.modules:
        return sys.modules['ikpy']
    import threading
    import scipy.optimize  # noqa: F401  (ikpy's dependencies load unpatched)

    class _NoThread:
        def __init__(self, *args, **kwargs):
            pass

        def start(self):
            pass

    real = threading.Thread
    threading.Thread = _NoThread
    try:
        import ikpy
    finally:
        threading.Thread = real
    return ikpy


def _version_of(module_name: str) -> Tuple[str, str]:
    try:
        module = import_ikpy() if module_name == 'ikpy' else __import__(module_name)
    except Exception as exc:  # ImportError, or a broken binary (numpy ABI...)
        return '', f'{module_name} not importable: {type(exc).__name__}: {exc}'
    version = getattr(module, '__version__', None)
    if version is None:  # optik and pytracik have no __version__: their distributions do
        from importlib import metadata
        try:
            version = metadata.version({'optik': 'optik-py'}.get(module_name, module_name))
        except metadata.PackageNotFoundError:
            version = 'unknown'
    return str(version), ''


def peer_factories() -> List[PeerFactory]:
    """The peers, each with its version or the reason it is missing."""
    out = []
    for name, module, build in [
            ('kdl_lma', 'PyKDL', KdlLmaAdapter),
            ('kdl_nr_jl', 'PyKDL', KdlNrJlAdapter),
            ('ikpy', 'ikpy', IkpyAdapter),
            ('pinocchio_clik', 'pinocchio', PinocchioAdapter),
            ('optik', 'optik', OptikAdapter),
            ('tracik', 'pytracik', TracIkAdapter)]:
        version, why = _version_of(module)
        if module == 'PyKDL' and not why:
            version = _kdl_version()
        out.append(PeerFactory(name, module, build, version, why))
    return out


def _kdl_version() -> str:
    try:
        from importlib import metadata
        return metadata.version('PyKDL')
    except Exception:
        pass
    import subprocess
    try:
        out = subprocess.run(['dpkg-query', '-W', '-f=${Version}', 'python3-pykdl'],
                             capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and out.stdout:
            return f'python3-pykdl {out.stdout}'
    except Exception:
        pass
    return 'unknown'
