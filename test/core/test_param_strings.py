"""One rule for string parameter values, the same in YAML files, ``ik-solve``, the API and the node.

The rule (:func:`ik_node.config.node_config.canonical_value`): surrounding whitespace is removed;
names from a
fixed set (``solver``, solver parameters with choices) are lower-cased too; link names and paths
keep their case, as URDF names are case sensitive; ``robot_description`` is kept as given. The
canonical value is the one in force, and the node stores it: what ``get_parameter`` returns is
what the node uses.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ChainError, ConfigError
from ik_node.config.node_config import (build_chain, config_from_flat, config_from_mapping,
                                        load_config)
from untidy_params import FILE_TEXT

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize('key, value, expected', [
    ('solver', ' FABRIK ', 'fabrik'),
    ('solver', 'Damped_Jacobian\n', 'damped_jacobian'),
    ('damped_jacobian.method', '\tTranspose ', 'transpose'),
    ('analytic_hip_knee.branch', 'Forward', 'forward'),
    ('base_link', ' Base_Link ', 'Base_Link'),     # stripped, case kept
    ('tip_link', 'foot\n', 'foot'),
    ('urdf_file', ' urdf/Leg3.urdf ', 'urdf/Leg3.urdf'),
    ('tip_links', [' Left_Hand', 'right_hand '], ['Left_Hand', 'right_hand']),
    ('robot_description', '  <robot name="r"/>\n', '  <robot name="r"/>\n'),  # XML untouched
    ('damped_jacobian.timeout', 0.5, 0.5),          # not a string: unchanged
    ('solver', 5, 5),                                # wrong type: left to validation
    ('turbo', ' X ', ' X '),                         # unknown key: left to validation
])
def test_canonical_value_follows_the_one_rule(key, value, expected):
    from ik_node.config.node_config import canonical_value
    assert canonical_value(key, value) == expected


def test_canonical_updates_lists_only_what_changes():
    from ik_node.config.node_config import canonical_updates
    assert canonical_updates({'solver': 'fabrik', 'tip_link': ' foot', 'publish_rate': float('nan'),
                              'tip_links': ['a'], 'base_link': 'base_link'}) == {'tip_link': 'foot'}


# ------------------------------------------------------------------------- files and the API
def test_yaml_file_values_are_taken_in_canonical_form(tmp_path):
    path = tmp_path / 'leg.yaml'
    path.write_text(FILE_TEXT)
    config = load_config(path)
    assert (config.urdf_file, config.base_link, config.tip_links, config.solver) == \
        ('leg3.urdf', 'base_link', ('foot',), 'analytic_hip_knee')
    assert config.params_of()['branch'] == 'backward'
    assert config.params_of('damped_jacobian')['method'] == 'transpose'
    assert build_chain(config).n == 3


def test_api_applies_the_same_rule_as_files():
    flat = {'urdf_file': 'leg3.urdf', 'tip_link': 'foot ', 'solver': 'FABRIK',
            'fabrik.max_iterations': 50}
    assert config_from_flat(flat) == config_from_mapping(flat)
    assert config_from_flat(flat).solver == 'fabrik'


def test_link_names_keep_their_case():
    config = config_from_flat({'urdf_file': 'leg3.urdf', 'base_link': 'Base_Link',
                               'tip_link': 'foot'})
    assert config.base_link == 'Base_Link'
    with pytest.raises(ChainError, match="'Base_Link' is not in the URDF. Available links: "
                                         'base_link'):
        build_chain(config)


def test_tip_links_entries_are_stripped_and_an_empty_entry_is_refused():
    base = {'urdf_file': 'twin_arm.urdf'}
    config = config_from_mapping({**base, 'tip_links': [' left_hand', 'right_hand ']})
    assert config.tip_links == ('left_hand', 'right_hand')
    with pytest.raises(ConfigError, match='empty name'):
        config_from_mapping({**base, 'tip_links': ['left_hand', ' ']})
    # One empty entry alone means none ([''] is how ROS spells an empty string array).
    for empty in ([''], [' ']):
        config = config_from_mapping({**base, 'tip_links': empty, 'tip_link': 'left_hand'})
        assert config.tip_links == ('left_hand',)


def test_blank_solver_or_base_link_is_refused_as_empty():
    with pytest.raises(ConfigError, match='unknown solver'):
        config_from_flat({'urdf_file': 'leg3.urdf', 'tip_link': 'foot', 'solver': '   '})
    with pytest.raises(ConfigError, match='base_link is empty'):
        config_from_flat({'urdf_file': 'leg3.urdf', 'tip_link': 'foot', 'base_link': ' \t'})


# ------------------------------------------------------------------------------------- CLI
def test_cli_takes_the_solver_in_any_case_and_prefixes_its_params(capsys):
    from ik_node.cli import main
    chain = Chain.from_urdf_file(REPO / 'urdf' / 'leg3.urdf', 'base_link', 'foot')
    target = chain.fk(np.array([0.3, 0.4, -1.0]))[:3, 3]
    status = main(['--urdf', 'leg3.urdf', '--tip', ' foot', '--solver', ' FABRIK ',
                   '--param', 'max_iterations=500', '--param', 'position_tolerance=1e-6',
                   '--target', *map(str, target), '--json'])
    out = json.loads(capsys.readouterr().out)
    assert status == 0 and out['reachable'] is True
    assert np.linalg.norm(chain.fk(np.array(out['joint_positions']))[:3, 3] - target) < 1e-6


def test_cli_config_file_follows_the_rule(tmp_path, capsys):
    from ik_node.cli import main
    path = tmp_path / 'leg.yaml'
    path.write_text(FILE_TEXT)
    status = main(['--config', str(path), '--target', '0.1', '0.05', '-0.45'])
    out = capsys.readouterr().out
    assert status in (0, 1)
    assert 'analytic_hip_knee (leg3.urdf: base_link -> foot)' in out
