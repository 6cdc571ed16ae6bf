"""URDF text for the tests of both layers: the packaged arm, small robots built from parts, and
a description padded to a size in bytes."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARM6_XML = (REPO / 'urdf' / 'arm6.urdf').read_text()
DEFAULT_LIMIT_BYTES = 10_000_000  # the documented default of max_description_bytes


def links(*names: str) -> str:
    return ''.join(f'<link name="{n}"/>' for n in names)


def joint(name, parent, child, jtype='revolute', axis='0 0 1', xyz='0 0 0.1', rpy='0 0 0',
          limit='lower="-1" upper="1"', extra='') -> str:
    limit_tag = f'<limit {limit} effort="1" velocity="1"/>' if limit else ''
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            f'{limit_tag}{extra}</joint>')


def robot(*parts: str) -> str:
    return '<?xml version="1.0"?><robot name="r">' + ''.join(parts) + '</robot>'


def arm(*extra: str, j1: dict = None, j2: dict = None, more_links=()) -> str:
    """base -> a -> tip (joints j1, j2), plus ``extra`` joints and ``more_links``."""
    return robot(links('base', 'a', 'tip', *more_links),
                 joint('j1', 'base', 'a', **(j1 or {})), joint('j2', 'a', 'tip', **(j2 or {})),
                 *extra)


def padded(xml: str, size_bytes: int, filler: str = 'x') -> str:
    """``xml`` with an XML comment making it ``size_bytes`` long in UTF-8 (ASCII ``filler``), or
    that many characters of ``filler`` when it is multi-byte."""
    head, tail = xml.split('<robot', 1)
    room = size_bytes - len((head + '<!---->' + '<robot' + tail).encode())
    return head + '<!--' + filler * (room // len(filler.encode())) + '-->' + '<robot' + tail


#: A base yaw that turns forever (continuous), a prismatic lift and a revolute elbow.
MIXED_URDF = '''<robot name="mixed">
  <link name="base"/><link name="turret"/><link name="carriage"/><link name="tool"/>
  <joint name="yaw" type="continuous"><parent link="base"/><child link="turret"/>
    <axis xyz="0 0 1"/></joint>
  <joint name="lift" type="prismatic"><parent link="turret"/><child link="carriage"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/>
    <limit lower="0" upper="0.5" effort="1" velocity="1"/></joint>
  <joint name="elbow" type="revolute"><parent link="carriage"/><child link="tool"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1.5" effort="1" velocity="1"/></joint>
</robot>'''
