"""ik_node.model.description: URDF files read as they are, xacro files expanded, and the config's
``urdf_file`` + ``xacro_args`` built into a chain. No ROS is started."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ik_node.config.node_config import build_chain, config_from_flat, config_from_mapping
from ik_node.model.description import description_from_file, is_xacro, xacro_mappings_from
from ik_node.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]

# A planar two-link arm: a xacro argument sets the upper arm's length, a macro makes each
# revolute joint and its link. At q = 0 the tip is at (upper + 0.3, 0, 0).
ARM_XACRO = textwrap.dedent('''\
    <?xml version="1.0"?>
    <robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="xacro_arm">
      <xacro:arg name="upper" default="0.4"/>
      <xacro:arg name="prefix" default=""/>
      <xacro:property name="p" value="$(arg prefix)"/>
      <xacro:macro name="revolute" params="name parent x">
        <link name="${p}${name}"/>
        <joint name="${p}${name}_joint" type="revolute">
          <parent link="${parent}"/><child link="${p}${name}"/>
          <origin xyz="${x} 0 0"/><axis xyz="0 0 1"/>
          <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/>
        </joint>
      </xacro:macro>
      <link name="base"/>
      <xacro:revolute name="shoulder" parent="base" x="0"/>
      <xacro:revolute name="elbow" parent="${p}shoulder" x="$(arg upper)"/>
      <link name="${p}tip"/>
      <joint name="${p}tip_joint" type="fixed">
        <parent link="${p}elbow"/><child link="${p}tip"/><origin xyz="0.3 0 0"/>
      </joint>
    </robot>
    ''')


@pytest.fixture
def arm_xacro(tmp_path):
    path = tmp_path / 'arm.urdf.xacro'
    path.write_text(ARM_XACRO)
    return path


def tip_at_zero(xml, base='base', tip='tip'):
    from ik_node import Chain
    chain = Chain.from_urdf_string(xml, base, tip)
    return chain.fk(np.zeros(chain.n))[:3, 3]


# ------------------------------------------------------------------------------ plain URDF
def test_a_urdf_file_is_returned_as_it_is():
    path = REPO / 'urdf' / 'leg3.urdf'
    assert description_from_file(path) == path.read_text()
    assert description_from_file(str(path), '') == path.read_text()


def test_xacro_arguments_for_a_plain_urdf_are_refused_naming_the_file():
    with pytest.raises(ConfigError, match=r"upper:=1.*leg3\.urdf.*not a xacro file"):
        description_from_file(REPO / 'urdf' / 'leg3.urdf', 'upper:=1')


def test_a_missing_urdf_file_is_a_config_error_with_the_path(tmp_path):
    with pytest.raises(ConfigError, match='gone.urdf'):
        description_from_file(tmp_path / 'gone.urdf')


@pytest.mark.parametrize('name, expected', [('a.xacro', True), ('a.urdf.xacro', True),
                                            ('a.urdf', False), ('xacro', False),
                                            ('a.xacro.urdf', False)])
def test_is_xacro_goes_by_the_last_suffix(name, expected):
    assert is_xacro(name) is expected


# ------------------------------------------------------------------------- xacro expansion
def test_a_xacro_file_is_expanded_with_its_default_arguments(arm_xacro):
    xml = description_from_file(arm_xacro)
    assert 'xacro:' not in xml.split('-->')[-1]
    np.testing.assert_allclose(tip_at_zero(xml), [0.7, 0.0, 0.0], atol=1e-12)


@pytest.mark.parametrize('xacro_args', ['upper:=0.9 prefix:=left_',
                                        {'upper': 0.9, 'prefix': 'left_'},
                                        ['upper:=0.9', 'prefix:=left_']])
def test_xacro_arguments_as_string_mapping_or_list_reach_the_file(arm_xacro, xacro_args):
    xml = description_from_file(arm_xacro, xacro_args)
    np.testing.assert_allclose(tip_at_zero(xml, tip='left_tip'), [1.2, 0.0, 0.0], atol=1e-12)


def test_expanding_twice_keeps_no_argument_from_the_first_call(arm_xacro):
    description_from_file(arm_xacro, 'upper:=0.9')
    np.testing.assert_allclose(tip_at_zero(description_from_file(arm_xacro)), [0.7, 0, 0])


@pytest.mark.parametrize('text, expected', [
    ('', {}), (None, {}), ('a:=1', {'a': '1'}), ("  a:=1   b:='x y' c:= ", {'a': '1', 'b': 'x y',
                                                                          'c': ''}),
    ('url:=http://h:1/p', {'url': 'http://h:1/p'}), ({'on': True}, {'on': 'true'}),
])
def test_xacro_mappings_from_reads_key_value_pairs(text, expected):
    assert xacro_mappings_from(text) == expected


@pytest.mark.parametrize('text, words', [
    ('upper', ['upper', 'key:=value']), ('upper=1', ['upper=1', 'key:=value']),
    (':=1', ['empty name']), ('a:=1 a:=2', ['a', 'twice']), ("a:='x", ['quotation']),
    (5, ['key:=value', '5']),
])
def test_malformed_xacro_arguments_are_config_errors_naming_the_item(text, words):
    with pytest.raises(ConfigError) as info:
        xacro_mappings_from(text)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize('body, words', [
    ('<xacro:nope/>', ['unknown macro', 'nope']),
    ('<link name="${undefined_thing}"/>', ['undefined_thing']),
    ('<link name="$(arg not_declared)"/>', ['not_declared']),
    ('<link name="a">', ['mismatched tag']),
    ('<xacro:include filename="missing_part.xacro"/>', ['missing_part.xacro']),
])
def test_a_failing_xacro_is_one_config_error_line_with_the_reason(tmp_path, body, words):
    path = tmp_path / 'bad.urdf.xacro'
    path.write_text(f'<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">{body}</robot>')
    with pytest.raises(ConfigError) as info:
        description_from_file(path)
    message = str(info.value)
    assert '\n' not in message
    assert 'bad.urdf.xacro' in message
    for word in words:
        assert word in message, message


def test_a_failure_inside_an_included_file_names_that_file(tmp_path):
    (tmp_path / 'part.xacro').write_text(
        '<robot xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="${oops}"/></robot>')
    path = tmp_path / 'top.urdf.xacro'
    path.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                    '<xacro:include filename="part.xacro"/></robot>')
    with pytest.raises(ConfigError, match=r"top\.urdf\.xacro.*included file.*part\.xacro.*oops"):
        description_from_file(path)


def test_relative_includes_resolve_beside_the_file_whatever_the_working_directory(
        tmp_path, monkeypatch):
    (tmp_path / 'parts').mkdir()
    (tmp_path / 'parts' / 'arm.xacro').write_text(ARM_XACRO.split('\n', 1)[1])
    path = tmp_path / 'robot.xacro'
    path.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                    '<xacro:include filename="parts/arm.xacro"/></robot>')
    monkeypatch.chdir(REPO)
    np.testing.assert_allclose(tip_at_zero(description_from_file(path, 'upper:=0.2')),
                               [0.5, 0, 0], atol=1e-12)


def test_a_missing_xacro_file_is_a_config_error_with_the_path(tmp_path):
    with pytest.raises(ConfigError, match='gone.urdf.xacro'):
        description_from_file(tmp_path / 'gone.urdf.xacro')


def test_without_the_xacro_package_the_error_says_how_to_install_it(arm_xacro, monkeypatch):
    monkeypatch.setitem(sys.modules, 'xacro', None)  # makes `import xacro` raise ImportError
    with pytest.raises(ConfigError) as info:
        description_from_file(arm_xacro)
    message = str(info.value)
    for word in ('arm.urdf.xacro', 'pip install xacro', 'rosdep', 'xacro'):
        assert word in message
    # A plain URDF still needs nothing.
    assert description_from_file(REPO / 'urdf' / 'leg3.urdf')


# ------------------------------------------------------------------- $(find pkg) and failures
def find_xacro(tmp_path) -> Path:
    """A package ``arm_parts`` installed under ``tmp_path / 'prefix'`` (its ament index marker
    and ``share/arm_parts/urdf/arm.xacro``), and a top file including it by ``$(find ...)``."""
    prefix = tmp_path / 'prefix'
    (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages').mkdir(parents=True)
    (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / 'arm_parts').touch()
    (prefix / 'share' / 'arm_parts' / 'urdf').mkdir(parents=True)
    (prefix / 'share' / 'arm_parts' / 'urdf' / 'arm.xacro').write_text(
        ARM_XACRO.split('\n', 1)[1])
    top = tmp_path / 'robot.urdf.xacro'
    top.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                   '<xacro:include filename="$(find arm_parts)/urdf/arm.xacro"/></robot>')
    return top


def test_find_expands_a_package_on_the_ament_prefix_path(tmp_path, monkeypatch):
    top = find_xacro(tmp_path)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'prefix'))
    np.testing.assert_allclose(tip_at_zero(description_from_file(top, 'upper:=0.25')),
                               [0.55, 0, 0], atol=1e-12)


def test_find_without_ament_prefix_path_says_in_one_line_what_to_set(tmp_path, monkeypatch):
    top = find_xacro(tmp_path)
    monkeypatch.delenv('AMENT_PREFIX_PATH', raising=False)
    with pytest.raises(ConfigError) as info:
        description_from_file(top)
    message = str(info.value)
    assert '\n' not in message and 'robot.urdf.xacro' in message
    assert message.count('AMENT_PREFIX_PATH') == 2  # what is missing, and what to set
    assert 'source your ROS 2 workspace' in message


def test_find_of_a_package_not_on_the_path_is_said_once(tmp_path, monkeypatch):
    top = find_xacro(tmp_path)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))  # not the prefix
    with pytest.raises(ConfigError) as info:
        description_from_file(top)
    message = str(info.value)
    assert message.count("package 'arm_parts' not found") == 1, message
    assert 'AMENT_PREFIX_PATH' in message


def test_find_without_ament_index_python_says_what_to_install(tmp_path, monkeypatch):
    top = find_xacro(tmp_path)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'prefix'))
    for name in ('ament_index_python', 'ament_index_python.packages'):
        monkeypatch.setitem(sys.modules, name, None)  # a plain install without it
    with pytest.raises(ConfigError) as info:
        description_from_file(top)
    message = str(info.value)
    assert 'pip install ros-jazzy-ament-index-python' in message
    assert 'rosdep key ament_index_python' in message and '\n' not in message


def test_a_missing_include_is_reported_once(tmp_path):
    path = tmp_path / 'bad.urdf.xacro'
    path.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                    f'<xacro:include filename="{tmp_path / "gone.xacro"}"/></robot>')
    with pytest.raises(ConfigError) as info:
        description_from_file(path)
    assert str(info.value).count('gone.xacro') == 1, str(info.value)


def test_chain_from_urdf_file_takes_xacro_arguments(arm_xacro):
    from ik_node import Chain
    chain = Chain.from_urdf_file(arm_xacro, 'base', 'left_tip',
                                 xacro_args={'prefix': 'left_', 'upper': 0.2})
    np.testing.assert_allclose(chain.fk(np.zeros(chain.n))[:3, 3], [0.5, 0, 0], atol=1e-12)
    from ik_node.errors import ChainError
    with pytest.raises(ChainError, match='not a xacro file'):
        Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot',
                             xacro_args='prefix:=x')


def test_importing_the_description_and_config_modules_imports_neither_xacro_nor_ros():
    script = textwrap.dedent('''
        import sys
        import ik_node.model.description, ik_node.config.node_config, ik_node.cli
        ik_node.model.description.description_from_file('urdf/leg3.urdf')
        loaded = sorted(m for m in sys.modules
                        if m.split('.')[0] in ('xacro', 'rclpy', 'ament_index_python', 'launch'))
        print('loaded:', loaded)
    ''')
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert 'loaded: []' in proc.stdout


# ----------------------------------------------------------------- the config's urdf_file
def xacro_config(path, **extra):
    return config_from_flat({'urdf_file': str(path), 'base_link': 'base', 'tip_link': 'tip',
                             **extra})


def test_config_builds_the_chain_of_a_xacro_urdf_file_with_its_arguments(arm_xacro):
    chain = build_chain(xacro_config(arm_xacro, xacro_args='upper:=0.5'))
    assert chain.joint_names == ['shoulder_joint', 'elbow_joint']
    np.testing.assert_allclose(chain.fk(np.zeros(2))[:3, 3], [0.8, 0, 0], atol=1e-12)


def test_config_file_naming_a_xacro_and_its_arguments_is_valid(arm_xacro):
    config = config_from_mapping({'ik_node': {'ros__parameters': {
        'urdf_file': str(arm_xacro), 'xacro_args': 'prefix:=r_', 'base_link': 'base',
        'tip_link': 'r_tip', 'solver': 'analytic_hip_knee'}}})
    assert config.xacro_args == 'prefix:=r_'
    assert build_chain(config).tip_link == 'r_tip'


def test_config_refuses_malformed_xacro_args_before_reading_any_file(tmp_path):
    with pytest.raises(ConfigError, match='xacro_args.*nonsense'):
        xacro_config(tmp_path / 'not_read.xacro', xacro_args='nonsense')


def test_xacro_args_change_the_chain_source(arm_xacro):
    assert xacro_config(arm_xacro).chain_source() != \
        xacro_config(arm_xacro, xacro_args='upper:=1').chain_source()


def test_xacro_args_are_unused_with_robot_description(arm_xacro):
    config = config_from_flat({'robot_description': description_from_file(arm_xacro),
                               'xacro_args': 'upper:=3', 'base_link': 'base', 'tip_link': 'tip'})
    assert config.xacro_args == ''
    np.testing.assert_allclose(build_chain(config).fk(np.zeros(2))[:3, 3], [0.7, 0, 0])


def test_a_xacro_failure_reaches_the_config_user_as_a_config_error(tmp_path):
    path = tmp_path / 'broken.xacro'
    path.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                    '<xacro:x/></robot>')
    with pytest.raises(ConfigError, match='broken.xacro'):
        build_chain(xacro_config(path))


# ---------------------------------------------------------------------------- packaging
def test_package_xml_is_well_formed_and_declares_xacro():
    import xml.dom.minidom
    manifest = xml.dom.minidom.parse(str(REPO / 'package.xml'))  # '--' in a comment fails here
    depends = [e.firstChild.data for e in manifest.getElementsByTagName('exec_depend')]
    assert 'xacro' in depends


def test_setup_py_installs_xacro_from_pypi(tmp_path):
    from install_requires import requires_in
    assert 'xacro' in requires_in(tmp_path)


def test_a_plain_install_gets_ament_index_python_for_find_unless_ros_provides_it(tmp_path):
    from install_requires import fake_distribution, requires_in
    assert 'ros-jazzy-ament-index-python' in requires_in(tmp_path / 'plain')
    fake_distribution(tmp_path / 'ros', 'ament_index_python', 'ament_index_python')
    assert 'ros-jazzy-ament-index-python' not in requires_in(tmp_path / 'ros')
    import xml.dom.minidom
    manifest = xml.dom.minidom.parse(str(REPO / 'package.xml'))
    depends = [e.firstChild.data for e in manifest.getElementsByTagName('exec_depend')]
    assert 'ament_index_python' in depends
