"""Robot descriptions from files: a URDF is read as it is, a xacro file is expanded to URDF.

    description_from_file('robot.urdf')                        # the file's text
    description_from_file('robot.urdf.xacro', 'prefix:=left_ use_gripper:=true')
    description_from_file('robot.urdf.xacro', {'prefix': 'left_'})

xacro arguments are ``key:=value`` pairs, as on xacro's command line and in ``ros2 launch``.
The xacro package (PyPI ``xacro``, rosdep key ``xacro``) is imported only when a ``.xacro`` file
is expanded: this module imports no ROS package.
"""

from __future__ import annotations

import shlex
import threading
from pathlib import Path
from typing import Dict, Mapping, Sequence, Union

from ik_node.errors import ConfigError

#: A file whose name ends in this is expanded with xacro (``robot.xacro``, ``robot.urdf.xacro``).
XACRO_SUFFIX = '.xacro'
XACRO_INSTALL_HINT = ('pip install xacro, or with ROS: rosdep key xacro '
                      '(apt install ros-$ROS_DISTRO-xacro)')

XacroArgs = Union[None, str, Mapping[str, object], Sequence[str]]

# xacro keeps its state (file stack, arguments) in module globals: one expansion at a time.
_XACRO_LOCK = threading.Lock()


def is_xacro(path: Union[str, Path]) -> bool:
    """True when ``path`` names a xacro file (its name ends in ``.xacro``)."""
    return Path(path).name.endswith(XACRO_SUFFIX)


def xacro_mappings_from(xacro_args: XacroArgs) -> Dict[str, str]:
    """xacro arguments as the ``{name: value}`` strings xacro takes.

    Args:
        xacro_args: None or '' (no argument); a string of ``key:=value`` items separated by
            spaces (shell quoting allowed: ``'name:=my robot'``); a sequence of such items; or a
            mapping (values turned into strings, booleans as ``true``/``false``).

    Raises:
        ConfigError: an item is not ``key:=value``, or a key is empty or given twice.
    """
    if xacro_args is None:
        return {}
    if isinstance(xacro_args, Mapping):
        pairs = [(str(k), _xacro_value(v)) for k, v in xacro_args.items()]
    else:
        if isinstance(xacro_args, str):
            try:
                items = shlex.split(xacro_args)
            except ValueError as exc:
                raise ConfigError(f'xacro arguments {xacro_args!r}: {exc}') from None
        elif isinstance(xacro_args, Sequence) and all(isinstance(i, str) for i in xacro_args):
            items = list(xacro_args)
        else:
            raise ConfigError(f'xacro arguments must be a "key:=value ..." string, a list of '
                              f'such items or a mapping, got {xacro_args!r}')
        pairs = []
        for item in items:
            key, sep, value = item.partition(':=')
            if not sep:
                raise ConfigError(f'xacro argument {item!r}: expected key:=value, e.g. '
                                  'prefix:=left_')
            pairs.append((key, value))
    mappings: Dict[str, str] = {}
    for key, value in pairs:
        key = key.strip()
        if not key:
            raise ConfigError(f'xacro argument with an empty name (value {value!r}): expected '
                              'key:=value')
        if key in mappings:
            raise ConfigError(f'xacro argument {key!r} is given twice')
        mappings[key] = value
    return mappings


def _xacro_value(value: object) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def description_from_file(path: Union[str, Path], xacro_args: XacroArgs = None) -> str:
    """The URDF XML of a description file: a ``.urdf`` as it is, a ``.xacro`` expanded.

    Args:
        path: the file; a name ending in ``.xacro`` (``robot.urdf.xacro``) is run through xacro,
            any other is read as URDF.
        xacro_args: arguments for a xacro file (see :func:`xacro_mappings_from`); giving any for
            a file that is not xacro is an error (they would have no effect).

    Raises:
        ConfigError: unreadable file; xacro arguments for a plain URDF; xacro not installed; xacro
            failed (its reason, on one line).
    """
    path = Path(path).expanduser()
    mappings = xacro_mappings_from(xacro_args)
    if not is_xacro(path):
        if mappings:
            given = ' '.join(f'{k}:={v}' for k, v in mappings.items())
            raise ConfigError(f'xacro arguments {given!r} given for {str(path)!r}, which is not a '
                              f'xacro file (its name does not end in {XACRO_SUFFIX}): it is read '
                              'as URDF, as it is')
        try:
            return path.read_text()
        except OSError as exc:
            raise ConfigError(f'cannot read URDF file {str(path)!r}: {exc.strerror}') from None
    return _expand_xacro(path, mappings)


def _expand_xacro(path: Path, mappings: Dict[str, str]) -> str:
    try:
        import xacro
    except ImportError:
        raise ConfigError(f'{str(path)!r} is a xacro file, but the Python package xacro is not '
                          f'installed: {XACRO_INSTALL_HINT}') from None
    if not path.is_file():
        reason = 'it is a directory' if path.is_dir() else 'no such file'
        raise ConfigError(f'cannot read xacro file {str(path)!r}: {reason}')
    with _XACRO_LOCK:
        try:
            doc = xacro.process_file(str(path.resolve()), mappings=dict(mappings))
        except Exception as exc:  # XacroException, ExpatError, NameError, OSError, ...
            reason = xacro_failure_reason(exc)
            where = _innermost_file(xacro, path)
            raise ConfigError(f'xacro failed on {str(path)!r}{where}: {reason}') from None
    return doc.toprettyxml(indent='  ')


#: What ``$(find pkg)`` needs, said when it fails.
FIND_NEEDS_PACKAGE = ('$(find ...) needs the Python package ament_index_python: pip install '
                      'ros-jazzy-ament-index-python (with ROS: rosdep key ament_index_python)')
FIND_NEEDS_PREFIX = ('$(find ...) looks packages up on AMENT_PREFIX_PATH, which is not set: '
                     'source your ROS 2 workspace (install/setup.bash), or set '
                     'AMENT_PREFIX_PATH to the install prefix whose share/<package> holds it')


def xacro_failure_reason(exc: BaseException) -> str:
    """One line saying why xacro failed, each part once.

    xacro wraps the exception it met (``XacroException.exc``) and prints both messages, often
    the same text twice; ``$(find pkg)`` fails without ament_index_python (a plain pip install)
    or without ``AMENT_PREFIX_PATH`` (outside a sourced ROS 2 workspace): those say what to
    install or set.
    """
    inner = getattr(exc, 'exc', None)
    if isinstance(inner, ImportError) and 'ament_index_python' in str(inner):
        return FIND_NEEDS_PACKAGE
    if isinstance(inner, OSError) and 'AMENT_PREFIX_PATH' in str(inner):
        return FIND_NEEDS_PREFIX
    if type(inner).__name__ == 'PackageNotFoundError':
        return (f'$(find ...): {_one_line(str(inner))}; add the install prefix whose '
                'share/<package> holds it to AMENT_PREFIX_PATH')
    if isinstance(inner, OSError) and inner.filename:
        return f'{inner.strerror or "cannot read"}: {inner.filename}'
    message = _one_line(str(exc.args[0])) if exc.args and exc.args[0] else ''
    detail = _one_line(str(inner)) if inner is not None else ''
    if detail and detail not in message:
        message = f'{message} {detail}'.strip()
    return _without_repeat(message or _one_line(str(exc))) or type(exc).__name__


def _without_repeat(text: str) -> str:
    """``text`` with a second copy of itself removed (``'a b a b'`` -> ``'a b'``)."""
    half = len(text) // 2
    if len(text) % 2 and text[:half] == text[half + 1:]:
        return text[:half]
    return text


def _one_line(text: str) -> str:
    return ' '.join(text.split())


def _innermost_file(xacro_module, top: Path) -> str:
    """`` (in included file X)`` when xacro failed inside an include, else ''."""
    stack = [f for f in (getattr(xacro_module, 'filestack', None) or []) if f]
    if stack and Path(stack[-1]).resolve() != top.resolve():
        return f' (in included file {stack[-1]!r})'
    return ''

