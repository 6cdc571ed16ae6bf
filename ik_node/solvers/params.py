"""Solver parameters: :class:`ParamSpec` (type, default, range, unit) and the common ones.

Re-exported by :mod:`ik_node.solvers.base`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ik_node.errors import ConfigError


@dataclass(frozen=True)
class ParamSpec:
    """One solver parameter: type, default, valid range or choices, unit and meaning."""

    type: type
    default: Any
    description: str
    unit: str = ''
    min: Optional[float] = None
    max: Optional[float] = None
    min_inclusive: bool = True
    choices: Tuple[str, ...] = ()

    def validate(self, name: str, value: Any) -> Any:
        """Return ``value`` converted to the parameter's type, or raise :class:`ConfigError`."""
        if self.type is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ConfigError(f'parameter {name!r} must be true or false, got {value!r}')
            return bool(value)
        if self.type is str:
            if not isinstance(value, str):
                raise ConfigError(f'parameter {name!r} must be a string, got {value!r}')
            if self.choices and value not in self.choices:
                raise ConfigError(f'parameter {name!r} = {value!r} is not one of: '
                                  f'{", ".join(self.choices)}')
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise ConfigError(f'parameter {name!r} must be a number, got {value!r}')
        if self.type is int:
            if float(value) != int(value):
                raise ConfigError(f'parameter {name!r} must be a whole number, got {value!r}')
            value = int(value)
        else:
            value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f'parameter {name!r} must be finite, got {value!r}')
        if self.min is not None and (value < self.min or
                                     (value == self.min and not self.min_inclusive)):
            raise ConfigError(f'parameter {name!r} = {value!r} is out of range: '
                              f'{self.range_text()}')
        if self.max is not None and value > self.max:
            raise ConfigError(f'parameter {name!r} = {value!r} is out of range: '
                              f'{self.range_text()}')
        return value

    def range_text(self) -> str:
        """The valid range as text, e.g. ``'> 0'``, ``'1 .. 100000'``, ``'forward | backward'``."""
        if self.choices:
            return ' | '.join(self.choices)
        if self.min is not None and self.max is not None:
            left = '[' if self.min_inclusive else '('
            return f'{left}{self.min:g}, {self.max:g}]'
        if self.min is not None:
            return f'{">=" if self.min_inclusive else ">"} {self.min:g}'
        return 'any'


@dataclass(frozen=True)
class FloatListSpec(ParamSpec):
    """A parameter holding a list of positive finite floats (``ParamSpec`` handles scalars only)."""

    def validate(self, name: str, value: Any) -> Tuple[float, ...]:
        """Return ``value`` as a tuple of floats, or raise :class:`ConfigError`."""
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence,
                                                                               np.ndarray)):
            raise ConfigError(f'parameter {name!r} must be a list of numbers, got {value!r}')
        out = []
        for v in value:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
                raise ConfigError(f'parameter {name!r} must hold numbers, got {v!r} in {value!r}')
            v = float(v)
            if not (math.isfinite(v) and v > 0.0):
                raise ConfigError(f'parameter {name!r} must hold finite numbers > 0, got {v!r} '
                                  f'in {list(value)!r}')
            out.append(v)
        return tuple(out)

    def range_text(self) -> str:
        """The valid values as text."""
        return 'list of numbers > 0'


#: Parameters every solver takes.
COMMON_PARAMS: Dict[str, ParamSpec] = {
    'position_tolerance': ParamSpec(float, 1e-5, 'tip position error counted as reached', 'm',
                                    min=0.0, max=1.0, min_inclusive=False),
    'orientation_tolerance': ParamSpec(float, 1e-4, 'tip orientation error counted as reached',
                                       'rad', min=0.0, max=math.pi, min_inclusive=False),
    'max_iterations': ParamSpec(int, 100, 'iteration cap of one solve', '', min=1, max=1_000_000),
    'record_history': ParamSpec(bool, False, 'keep the position error of every iteration in '
                                'result.history (for plots; slows the solve)'),
    'self_collision': ParamSpec(bool, True, 'an answer is reachable only when free of self- '
                                'and world collision (for a URDF with <collision> geometry)'),
    'collision_padding': ParamSpec(float, 0.005, 'links closer than this count as colliding',
                                   'm', min=0.0, max=0.1),
    'collision_restarts': ParamSpec(int, 20, 'most new seeds tried for a target whose answer '
                                    'collides', '', min=0, max=1000),
    'collision_retry_time': ParamSpec(float, 0.01, 'wall time the collision retries may add '
                                      'to a solve (beyond its timeout, if it has one)', 's',
                                      min=0.0, max=10.0, min_inclusive=False),
    'collision_skip_missing_meshes': ParamSpec(bool, False, 'leave out a <collision> whose '
                                               'mesh file is missing instead of refusing the '
                                               'description'),
}


