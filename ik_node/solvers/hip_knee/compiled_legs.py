"""The compiled analytic legs bound to one tree of legs: :class:`CompiledLegs`.

It answers ``solve(targets={foot: position}, seed=...)`` of
:class:`~ik_node.solvers.hip_knee.solver.HipKneeSolver` on a tree of 3-joint legs in one call
of the kernel (:mod:`ik_node.solvers.hip_knee.compiled`) and builds the
:class:`~ik_node.solvers.results.IkResult` of the common case; anything the kernel leaves to
Python (a seed that is not a float array of the tree's size, a target that is not a position,
a tip that is not the tree's, a foot the kernel does not answer) returns None and the Python
path answers.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional

import numpy as np

import ik_node.kernels as kernels
from ik_node.solvers.hip_knee import compiled
from ik_node.solvers.input_checks import FLOAT64
from ik_node.solvers.results import IkResult, IkStatus, TipResult


def available() -> bool:
    """Whether the compiled path may serve (:func:`ik_node.kernels.available`)."""
    return kernels.available()


class CompiledLegs:
    """The compiled kernel bound to one tree of legs (a ``HipKneeSolver`` with ``legs``).

    :meth:`solve` answers ``solve(targets=..., seed=...)`` in the common case and returns None
    otherwise (the Python path then answers). Built only where numba may serve
    (:func:`of`); the kernel loads in the background from the first solve on.
    """

    def __init__(self, solver, compiled_kernels: Optional[Dict[str, Any]] = None):
        chain = solver.chain
        legs = solver.legs.legs
        self.n = chain.n
        self.tips = tuple(chain.tip_links)
        self.tip_index = dict(solver._tip_index)
        self.joint_names = tuple(chain.joint_names)
        self.q_mid = chain.mid_configuration()
        model = np.zeros((len(legs), compiled.COLUMNS))
        for k, leg in enumerate(legs):
            model[k] = compiled.leg_row(leg)
        self.frames = np.stack([compiled.leg_frames(leg) for leg in legs])
        self.model = model
        self.legs = len(legs)
        self._shape = (chain.n,)
        self._every_leg = np.arange(len(legs), dtype=np.intp)
        self._kernels = compiled._KERNELS if compiled_kernels is None else compiled_kernels
        self._kernel = None  # set once loaded
        self._loading = False

    @classmethod
    def of(cls, solver) -> Optional['CompiledLegs']:
        """The compiled legs of ``solver`` (a HipKneeSolver) where numba may serve, the tree's
        legs are 3-joint legs that cover every joint, and no history is recorded; else None."""
        legs = getattr(solver, 'legs', None)
        if legs is None or not available() or solver.params['record_history']:
            return None
        covered = sorted(j for leg in legs.legs for j in leg.joints)
        if covered != list(range(solver.chain.n)) or any(
                getattr(leg.solver, '_kind', None) not in (compiled.LEG, compiled.OFFSET_LEG) or
                leg.solver._n != 3 or leg.solver._fast_kinematics is None
                for leg in legs.legs):
            return None
        return cls(solver)

    def ready(self) -> bool:
        """Whether the kernel is loaded (never blocks)."""
        return bool(self._kernels) and (self._kernels is not compiled._KERNELS or kernels.ready())

    def solve(self, targets: Any, seed: Any) -> Optional[IkResult]:
        """The :class:`~ik_node.solvers.results.IkResult` of ``solve(targets=targets,
        seed=seed)`` when every targeted foot is reached in the kernel's common case, else None
        (the Python path answers: unusual input, a foot out of reach, behind the limits, on an
        axis, or the kernel not loaded yet)."""
        kernel = self._kernel
        if kernel is None:
            kernel = self._kernel = self._loaded_kernel()
            if kernel is None:
                return None
        start = time.perf_counter()
        if type(targets) is not dict:
            return None
        if seed is None:
            seed = self.q_mid
        elif type(seed) is not np.ndarray or seed.dtype is not FLOAT64 or \
                seed.shape != self._shape:
            return None  # the Python path reads (or refuses) it
        try:  # the positions as one (targets, 3) array (a quaternion makes it ragged: Python)
            P = np.array(list(targets.values()), dtype=FLOAT64)
        except (TypeError, ValueError):
            return None
        if P.shape != (len(targets), 3) or not targets:
            return None
        tips = self.tips
        if len(targets) == self.legs and tuple(targets) == tips:  # every foot, in tip order
            targeted, order = self._every_leg, tips
        else:
            index = self.tip_index
            try:
                rows = [index[tip] for tip in targets]
            except (KeyError, TypeError):  # not a tip: the Python path names it
                return None
            targeted = np.array(rows, dtype=np.intp)
            order = None
        q = np.empty(self.n)
        errors = np.empty(len(targets))
        if kernel(self.model, self.frames, P, targeted, seed, q, errors) != compiled.OK:
            return None
        values = errors.tolist()
        if order is None:  # the tips in the order of the chain's tips
            pairs = sorted(zip(rows, values))
            order = [tips[k] for k, _ in pairs]
            values = [e for _, e in pairs]
        results = {}
        for tip, error in zip(order, values):
            result = _new_object(TipResult)
            _set_attribute(result, '__dict__', {
                'reachable': True, 'position_error': error, 'min_residual': 0.0,
                'status': _CONVERGED, 'orientation_error': None, 'message': '',
                'best_found': False})
            results[tip] = result
        result = _new_object(IkResult)  # new_result's dict, without its keyword arguments
        _set_attribute(result, '__dict__', {
            'joint_positions': q, 'joint_names': self.joint_names, 'reachable': True,
            'status': _CONVERGED, 'position_error': max(values), 'orientation_error': None,
            'min_residual': 0.0, 'iterations': len(values),
            'solve_time': time.perf_counter() - start, 'message': '', 'orientation_ignored': False,
            'history': None, 'tips': results, 'best_found': False})
        return result

    def _loaded_kernel(self):
        """The kernel once loaded, else None (the first call starts loading it)."""
        if self.ready():
            return self._kernels['solve_legs']
        if not self._loading:
            self._loading = True
            kernels.start()  # once, in the background
        return None


_new_object = object.__new__
_set_attribute = object.__setattr__
_CONVERGED = IkStatus.CONVERGED
