"""ik_node.config.node_config and ik_node.model.resources: parsing, validation messages, file
lookup (no ROS)."""

import math
from pathlib import Path

import pytest

from ik_node import ChainError, ConfigError
from ik_node.config.node_config import (IkConfig, build_chain, build_solver, config_from_flat,
                            config_from_mapping, load_config, load_yaml, parse_scalar)
from ik_node.model.resources import config_path, share_dir, urdf_path

REPO = Path(__file__).resolve().parents[2]
LEG = {'urdf_file': 'leg3.urdf', 'tip_link': 'foot'}


def wrapped(params, node='ik_node'):
    return {node: {'ros__parameters': params}}


# ----------------------------------------------------------------------------- shapes
@pytest.mark.parametrize('name,solver,tip,n', [('leg3', 'analytic_hip_knee', 'foot', 3),
                                               ('planar4', 'fabrik', 'tip', 4),
                                               ('arm6', 'damped_jacobian', 'tool0', 6)])
def test_packaged_configs_load_and_build(name, solver, tip, n):
    config = load_config(REPO / 'config' / f'{name}.yaml')
    assert config.solver == solver and config.tip_links == (tip,)
    chain = build_chain(config)
    assert chain.n == n
    assert build_solver(config, chain).name == solver


def test_every_packaged_config_gives_parameters_of_every_solver_it_fits():
    for name in ('leg3', 'planar4', 'arm6'):
        raw = load_yaml((REPO / 'config' / f'{name}.yaml').read_text())
        params = raw['ik_node']['ros__parameters']
        assert 'fabrik' in params and 'damped_jacobian' in params, name
    assert 'analytic_hip_knee' in \
        load_yaml((REPO / 'config' / 'leg3.yaml').read_text())['ik_node']['ros__parameters']


def test_plain_mapping_wildcard_and_wrapped_forms_agree():
    plain = config_from_mapping(dict(LEG, solver='fabrik'))
    node = config_from_mapping(wrapped(dict(LEG, solver='fabrik')))
    wildcard = config_from_mapping(wrapped(dict(LEG, solver='fabrik'), '/**'))
    assert plain == node == wildcard


def test_node_entry_overrides_the_wildcard_and_other_nodes_are_ignored():
    data = {'/**': {'ros__parameters': dict(LEG, publish_rate=5.0)},
            'ik_node': {'ros__parameters': {'publish_rate': 7.0}},
            'robot_state_publisher': {'ros__parameters': {'publish_frequency': 1.0}}}
    assert config_from_mapping(data).publish_rate == 7.0


def test_defaults_fill_what_is_not_given():
    config = config_from_mapping(LEG)
    assert (config.base_link, config.solver, config.publish_rate, config.diagnostics_rate) == \
        ('base_link', 'damped_jacobian', 20.0, 10.0)
    assert config.params_of('fabrik')['max_iterations'] == 100


def test_nested_and_dotted_solver_parameters_are_the_same():
    nested = config_from_mapping(dict(LEG, fabrik={'max_iterations': 7}))
    dotted = config_from_mapping({**LEG, 'fabrik.max_iterations': 7})
    assert nested.params_of('fabrik')['max_iterations'] == 7
    assert nested == dotted


def test_exponent_without_a_dot_is_a_float_as_in_ros():
    text = 'urdf_file: leg3.urdf\ntip_link: foot\nfabrik: {position_tolerance: 1e-4}\n'
    config = config_from_mapping(load_yaml(text))
    assert config.params_of('fabrik')['position_tolerance'] == 1e-4


def test_integer_for_a_rate_is_taken_as_a_number():
    assert config_from_mapping(dict(LEG, publish_rate=30)).publish_rate == 30.0


def test_tip_links_make_a_branched_config():
    config = config_from_mapping({'urdf_file': 'x.urdf', 'tip_links': ['a', 'b']})
    assert config.branched and config.tip_links == ('a', 'b') and config.tip_link == 'a'


@pytest.mark.parametrize('text,value', [('1e-4', 1e-4), ('true', True), ('forward', 'forward'),
                                        ('3', 3), ('-2.5', -2.5), ('[1, 2]', [1, 2])])
def test_parse_scalar_reads_values_as_yaml(text, value):
    assert parse_scalar(text) == value


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize('data,words', [
    (dict(LEG, solvr='fabrik'), ['solvr', 'solver', 'tip_link', 'publish_rate']),
    (dict(LEG, solver='magic'), ['magic', 'analytic_hip_knee', 'damped_jacobian', 'fabrik']),
    (dict(LEG, solver=3), ['solver', 'string']),
    (dict(LEG, publish_rate=0.0), ['publish_rate', '0', '1000']),
    (dict(LEG, publish_rate='fast'), ['publish_rate', 'number', 'fast']),
    (dict(LEG, diagnostics_rate=-1.0), ['diagnostics_rate', '-1']),
    (dict(LEG, publish_rate=math.nan), ['publish_rate', 'nan']),
    (dict(LEG, fabrik={'max_iterations': 0}), ['fabrik.max_iterations', '0', '[1,']),
    (dict(LEG, fabrik={'max_iterations': 2.5}), ['fabrik.max_iterations', '2.5', 'whole']),
    (dict(LEG, fabrik={'max_iteration': 10}), ['max_iteration', 'fabrik', 'max_iterations']),
    (dict(LEG, damped_jacobian={'method': 'newton'}), ['newton', 'dls', 'transpose']),
    (dict(LEG, damped_jacobian={'damping': -1.0}), ['damped_jacobian.damping', '-1']),
    (dict(LEG, analytic_hip_knee={'branch': 'up'}), ['up', 'forward', 'backward', 'closest']),
    (dict(LEG, fabrik={'max_iterations': {'a': 1}}), ['fabrik.max_iterations', 'mapping']),
    (dict(LEG, extras={'a': 1}), ['extras', 'Valid keys']),
    ({'urdf_file': 'leg3.urdf'}, ['tip_link']),
    ({'tip_link': 'foot'}, ['urdf_file', 'robot_description']),
    ({'urdf_file': 'x.urdf', 'tip_links': 'foot'}, ['tip_links', 'list']),
    ({'urdf_file': 'x.urdf', 'tip_links': ['a', 'a']}, ['tip_links', 'repeats']),
    ({'urdf_file': 'x.urdf', 'tip_links': ['a', '', 'b']},
     ['tip_links', 'empty name at index 1', "['a', '', 'b']"]),
    ({'urdf_file': 'x.urdf', 'tip_links': ['', '']}, ['tip_links', 'empty name at index 0']),
    (dict(LEG, tip_links=['a', 'b']), ['tip_link', 'not both']),
    (dict(LEG, robot_description='<robot/>'), ['robot_description', 'urdf_file', 'not both']),
    (dict(LEG, base_link=''), ['base_link', 'empty']),
    ([1, 2], ['mapping']),
    (None, ['empty']),
    ({'other_node': {'ros__parameters': LEG}}, ['ik_node', 'other_node']),
    ({'ik_node': {'ros__parameters': LEG}, 'stray': 1}, ['stray', 'ros__parameters']),
])
def test_bad_config_is_refused_naming_the_value(data, words):
    with pytest.raises(ConfigError) as info:
        config_from_mapping(data, source='test.yaml')
    message = str(info.value)
    assert message.startswith('test.yaml')
    for word in words:
        assert word in message, (word, message)


def test_malformed_yaml_names_the_line():
    with pytest.raises(ConfigError, match=r'bad\.yaml line \d+: malformed YAML'):
        load_yaml('a: 1\nb: [1, 2\nc: 3\n', 'bad.yaml')


def test_launch_ros_tuple_lists_are_read_as_lists(tmp_path):
    # launch_ros dumps list parameters with PyYAML's default dumper: a tuple gets the python tag.
    import yaml
    text = yaml.dump({'/**': {'ros__parameters': {
        'tip_links': ('FL_foot', 'FR_foot'), 'base_link': 'base_link', 'solver': 'fabrik',
        'robot_description': (REPO / 'urdf' / 'quad12.urdf').read_text()}}})
    assert '!!python/tuple' in text
    path = tmp_path / 'launch_params_abc'
    path.write_text(text)
    config = load_config(path)
    assert list(config.tip_links) == ['FL_foot', 'FR_foot']
    assert list(build_chain(config).tip_links) == ['FL_foot', 'FR_foot']


def test_load_config_of_a_missing_file_lists_the_packaged_ones():
    with pytest.raises(ConfigError, match='nope.*Available: .*leg3.yaml'):
        load_config('nope')


def test_flat_config_keeps_robot_description_over_urdf_file():
    xml = (REPO / 'urdf' / 'planar4.urdf').read_text()
    config = config_from_flat({'robot_description': xml, 'urdf_file': 'leg3.urdf',
                               'tip_link': 'tip'})
    assert config.urdf_file == '' and build_chain(config).n == 4


def test_flat_config_keeps_tip_links_over_tip_link():
    config = config_from_flat({'urdf_file': 'leg3.urdf', 'tip_link': 'foot',
                               'tip_links': ['shin_link']})
    assert config.tip_links == ('shin_link',)


def test_use_sim_time_is_accepted_and_left_to_ros():
    assert isinstance(config_from_mapping(dict(LEG, use_sim_time=False)), IkConfig)


# ---------------------------------------------------------------------------- building
def test_build_chain_refuses_links_not_in_the_urdf():
    with pytest.raises(ChainError, match="'toe'.*Available links: .*foot"):
        build_chain(config_from_mapping(dict(LEG, tip_link='toe')))


def test_build_solver_refuses_a_solver_that_does_not_fit():
    config = config_from_mapping({'urdf_file': 'planar4.urdf', 'tip_link': 'tip',
                                  'solver': 'analytic_hip_knee'})
    with pytest.raises(ChainError, match='analytic_hip_knee'):
        build_solver(config, build_chain(config))


def test_solver_parameters_reach_the_solver():
    config = config_from_mapping(dict(LEG, solver='fabrik', fabrik={'max_iterations': 3}))
    assert build_solver(config, build_chain(config)).params['max_iterations'] == 3


# --------------------------------------------------------------------------- resources
def test_share_dir_of_a_source_checkout_is_the_checkout():
    assert share_dir() == REPO


def test_urdf_path_finds_bare_names_with_or_without_suffix_and_real_paths(tmp_path):
    assert urdf_path('leg3.urdf') == REPO / 'urdf' / 'leg3.urdf'
    assert urdf_path('leg3') == REPO / 'urdf' / 'leg3.urdf'
    own = tmp_path / 'mine.urdf'
    own.write_text('<robot name="m"/>')
    assert urdf_path(str(own)) == own
    assert config_path('planar4') == REPO / 'config' / 'planar4.yaml'


def test_urdf_path_of_a_missing_file_lists_the_packaged_urdfs(tmp_path):
    with pytest.raises(ConfigError, match="'nope.urdf' not found.*leg3.urdf.*planar4.urdf"):
        urdf_path('nope.urdf')
    with pytest.raises(ConfigError, match='not found'):
        urdf_path(str(tmp_path / 'sub' / 'leg3.urdf'))  # a path is never looked up elsewhere


def test_a_chain_without_moving_joints_is_refused_naming_the_links():
    config = config_from_flat({'urdf_file': 'arm6.urdf', 'base_link': 'tool0',
                               'tip_link': 'tool0', 'solver': 'damped_jacobian'})
    with pytest.raises(ConfigError, match="no moving joint between base link 'tool0' and tool0"):
        build_chain(config)
