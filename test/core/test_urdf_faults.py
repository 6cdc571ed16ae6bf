"""Every structural fault of a robot description is refused, in bounded time, before a solve.

Through the API (``Chain.from_urdf_string`` / ``from_urdf_file``, ``build_chain``), the CLI and the
node's ``robot_description`` parameter over DDS. Each refusal is a :class:`ik_node.ChainError` (or
``ConfigError``) whose message names the bad link or joint. Every call runs under a hang guard
(:func:`returns_within`): generous seconds, not a timing figure; a loop in the joints would make
a walk of the tree endless, and it is refused instead.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ik_node import Chain, ChainError, ConfigError
from ik_node.config.node_config import build_chain, config_from_mapping
from hang_guard import returns_within
from urdf_texts import ARM6_XML, DEFAULT_LIMIT_BYTES, arm, joint, links, padded, robot

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 30.0




# ------------------------------------------------------------------------------- URDF text
OFF = ('f',)  # a link off the chain, hung from 'a' by the extra joint 'fj'

# name -> (URDF, base, tip, words the ChainError must contain). "main:" says what the code before
# this check did: hang (never returned), accepted (a Chain), or another exception type.
FAULTS = {
    # Loops: main: hang.
    'loop_through_the_tip': (robot(links('base', 'a', 'c', 'tip'), joint('j1', 'base', 'a'),
                                   joint('j2', 'c', 'tip'), joint('j3', 'tip', 'c')),
                             'base', 'tip', ['loop', 'j2', 'j3']),
    'loop_without_a_root': (robot(links('x', 'y'), joint('j1', 'x', 'y'), joint('j2', 'y', 'x')),
                            'x', 'y', ['loop', 'j1', 'j2']),
    'joint_from_a_link_to_itself': (arm(joint('j3', 'tip', 'tip')), 'base', 'tip',
                                    ['j3', 'itself']),
    # main: accepted (the last joint naming the child won).
    'link_with_two_parents': (arm(joint('j3', 'base', 'tip')), 'base', 'tip',
                              ['tip', 'j2', 'j3', 'parent']),
    'several_roots': (arm(more_links=('stray',)), 'base', 'tip', ['root', 'base', 'stray']),
    'duplicate_link_name': (arm(more_links=('a',)), 'base', 'tip', ["'a'", 'unique']),
    'duplicate_joint_name': (robot(links('base', 'a', 'tip'), joint('j1', 'base', 'a'),
                                   joint('j1', 'a', 'tip')), 'base', 'tip', ["'j1'", 'unique']),
    'joint_to_a_missing_link_off_the_chain': (arm(joint('fj', 'a', 'ghost')), 'base', 'tip',
                                              ['fj', 'ghost', 'Available links: base, a, tip']),
    # main: refused as "no path", without naming the joint or the missing link.
    'joint_from_a_missing_link_on_the_chain': (
        robot(links('base', 'a', 'tip'), joint('j1', 'base', 'a'), joint('j2', 'zz', 'tip')),
        'base', 'tip', ['j2', 'zz', 'Available links']),
    'joint_of_type_unknown_off_the_chain': (arm(joint('fj', 'a', 'f', jtype='unknown'),
                                                more_links=OFF), 'base', 'tip',
                                            ['fj', 'unknown', 'Valid types']),
    # Numbers. main: accepted, except inf rpy (a bare ValueError: math domain error).
    'nan_origin': (arm(j1={'xyz': 'nan 0 0'}), 'base', 'tip', ['j1', 'origin', 'nan']),
    'inf_origin_rpy': (arm(j2={'rpy': '0 inf 0'}), 'base', 'tip', ['j2', 'origin', 'inf']),
    'origin_beyond_1e6_m': (arm(j1={'xyz': '1e300 0 0'}), 'base', 'tip', ['j1', 'origin']),
    'nan_origin_off_the_chain': (arm(joint('fj', 'a', 'f', jtype='fixed', xyz='0 nan 0'),
                                     more_links=OFF), 'base', 'tip', ['fj', 'origin']),
    'zero_axis_off_the_chain': (arm(joint('fj', 'a', 'f', axis='0 0 0'), more_links=OFF),
                                'base', 'tip', ['fj', 'axis']),
    'inf_axis_off_the_chain': (arm(joint('fj', 'a', 'f', jtype='continuous', axis='0 inf 0'),
                                   more_links=OFF), 'base', 'tip', ['fj', 'axis']),
    'lower_above_upper_off_the_chain': (arm(joint('fj', 'a', 'f', limit='lower="1" upper="0"'),
                                            more_links=OFF), 'base', 'tip',
                                        ['fj', 'lower limit 1.0']),
    'nan_limit_off_the_chain': (arm(joint('fj', 'a', 'f', jtype='prismatic',
                                          limit='lower="0" upper="nan"'), more_links=OFF),
                                'base', 'tip', ['fj', 'limit']),
    # Mimic joints off the chain that name no joint, themselves, or each other. main: accepted.
    'mimic_of_a_missing_joint': (arm(joint('fj', 'a', 'f', extra='<mimic joint="zz"/>'),
                                     more_links=OFF), 'base', 'tip',
                                 ['fj', 'zz', 'Available joints: j1, j2, fj']),
    'mimic_of_itself': (arm(joint('fj', 'a', 'f', extra='<mimic joint="fj"/>'), more_links=OFF),
                        'base', 'tip', ['fj', 'itself']),
    'mimic_circle': (arm(joint('f1', 'a', 'f', extra='<mimic joint="f2"/>'),
                         joint('f2', 'a', 'g', extra='<mimic joint="f1"/>'),
                         more_links=('f', 'g')), 'base', 'tip', ['circle', 'f1', 'f2']),
    'mimic_with_nan_multiplier': (arm(joint('fj', 'a', 'f',
                                            extra='<mimic joint="j1" multiplier="nan"/>'),
                                      more_links=OFF), 'base', 'tip', ['fj', 'multiplier']),
    # Refused on main too (kept here so the catalogue is complete).
    'floating_joint_on_the_chain': (arm(j2={'jtype': 'floating', 'limit': ''}), 'base', 'tip',
                                    ['j2', 'floating']),
    'planar_joint_on_the_chain': (arm(j1={'jtype': 'planar', 'limit': ''}), 'base', 'tip',
                                  ['j1', 'planar']),
    'mimic_joint_on_the_chain': (arm(j2={'extra': '<mimic joint="j1"/>'}), 'base', 'tip',
                                 ['j2', 'mimic']),
    'zero_axis_on_the_chain': (arm(j1={'axis': '0 0 0'}), 'base', 'tip', ['j1', 'axis']),
    'lower_above_upper_on_the_chain': (arm(j2={'limit': 'lower="1" upper="-1"'}), 'base', 'tip',
                                       ['j2', 'lower limit 1.0']),
    'no_link': (robot(), 'base', 'tip', ['no <link>']),
    'link_without_a_name': (robot('<link name=""/>'), 'base', 'tip', ['link', 'name']),
}


@pytest.mark.parametrize('item', list(FAULTS))
def test_structural_fault_is_refused_with_a_message_naming_the_element(item):
    xml, base, tip, words = FAULTS[item]
    with pytest.raises(ChainError) as info:
        returns_within(HANG_GUARD_S, Chain.from_urdf_string, xml, base, tip)
    for word in words:
        assert word.lower() in str(info.value).lower(), (word, str(info.value))


@pytest.mark.parametrize('item', ['loop_through_the_tip', 'several_roots',
                                  'joint_to_a_missing_link_off_the_chain', 'nan_origin'])
def test_a_fault_anywhere_in_the_urdf_refuses_every_chain_of_it(item):
    """The whole description is checked, not only the path that is solved."""
    xml, _, _, words = FAULTS[item]
    with pytest.raises(ChainError, match=words[0]):
        returns_within(HANG_GUARD_S, Chain.from_urdf_string, xml, 'base', 'a')


def test_mimic_joint_off_the_chain_leaves_the_urdf_usable():
    """A gripper finger mimicking another joint: the arm's chain builds and computes FK."""
    xml = arm(joint('finger', 'a', 'f', jtype='prismatic', axis='0 1 0',
                    limit='lower="0" upper="0.04"', extra='<mimic joint="j2" multiplier="1"/>'),
              more_links=OFF)
    chain = Chain.from_urdf_string(xml, 'base', 'tip')
    assert chain.joint_names == ['j1', 'j2']
    assert np.all(np.isfinite(chain.fk([0.3, -0.2])))
    with pytest.raises(ChainError, match='mimic'):  # through the finger: refused
        Chain.from_urdf_string(xml, 'base', 'f')


def test_panda_with_its_mimic_finger_builds_the_arm_chain(shared_robot):
    chain = Chain.from_urdf_file(shared_robot('panda.urdf'), 'panda_link0', 'panda_link8')
    assert chain.n == 7


@pytest.mark.parametrize('name', ['arm6', 'leg3', 'planar4', 'twin_arm'])
def test_packaged_urdfs_pass_the_checks(name):
    Chain.from_urdf_file(REPO / 'urdf' / f'{name}.urdf', 'base_link',
                         {'arm6': 'tool0', 'leg3': 'foot', 'planar4': 'tip',
                          'twin_arm': 'left_hand'}[name])


# -------------------------------------------------------------------------------- size
def test_description_over_10_mb_is_refused_before_parsing():
    xml = padded(ARM6_XML, DEFAULT_LIMIT_BYTES + 1)
    assert len(xml.encode()) == DEFAULT_LIMIT_BYTES + 1
    with pytest.raises(ChainError, match='max_description_bytes'):
        returns_within(HANG_GUARD_S, Chain.from_urdf_string, xml, 'base_link', 'tool0')


def test_description_of_exactly_10_mb_is_accepted():
    xml = padded(ARM6_XML, DEFAULT_LIMIT_BYTES)
    assert len(xml.encode()) == DEFAULT_LIMIT_BYTES
    assert returns_within(60.0, Chain.from_urdf_string, xml, 'base_link', 'tool0').n == 6


def test_size_is_counted_in_utf8_bytes_not_characters():
    xml = padded(ARM6_XML, 12_000_000, filler='\u00e9')  # 2 bytes a character
    assert len(xml) < DEFAULT_LIMIT_BYTES < len(xml.encode())
    with pytest.raises(ChainError, match='max_description_bytes'):
        Chain.from_urdf_string(xml, 'base_link', 'tool0')


def test_size_limit_is_configurable_in_the_api_and_the_configuration(tmp_path):
    size = len(ARM6_XML.encode())
    assert Chain.from_urdf_string(ARM6_XML, 'base_link', 'tool0', max_bytes=size).n == 6
    with pytest.raises(ChainError, match=f'max_description_bytes = {size - 1} '):
        Chain.from_urdf_string(ARM6_XML, 'base_link', 'tool0', max_bytes=size - 1)
    common = {'base_link': 'base_link', 'tip_link': 'tool0', 'max_description_bytes': size - 1}
    with pytest.raises(ConfigError, match='max_description_bytes'):
        config_from_mapping({**common, 'robot_description': ARM6_XML})
    config = config_from_mapping({**common, 'urdf_file': str(REPO / 'urdf' / 'arm6.urdf')})
    assert config.max_description_bytes == size - 1
    with pytest.raises(ChainError, match='larger than max_description_bytes'):
        build_chain(config)
    with pytest.raises(ChainError, match='larger than max_description_bytes'):
        Chain.from_urdf_file(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0', size - 1)


@pytest.mark.parametrize('value', [0, -5, 2.5, 'lots', 10 ** 12])
def test_bad_max_description_bytes_is_a_config_error(value):
    with pytest.raises(ConfigError, match='max_description_bytes'):
        config_from_mapping({'urdf_file': 'arm6.urdf', 'tip_link': 'tool0',
                             'max_description_bytes': value})


def test_urdf_file_that_is_not_utf8_is_a_chain_error(tmp_path):
    """main: a bare UnicodeDecodeError."""
    path = tmp_path / 'latin1.urdf'
    path.write_bytes(ARM6_XML.replace('arm6', 'arm\xe9').encode('latin-1'))
    with pytest.raises(ChainError, match='UTF-8'):
        Chain.from_urdf_file(path, 'base_link', 'tool0')
    with pytest.raises(ChainError, match='UTF-8'):
        build_chain(config_from_mapping({'urdf_file': str(path), 'tip_link': 'tool0'}))


# ----------------------------------------------------------------------- 10 000-link trees
N_BIG = 10_000


def big_urdf(parents, extra: str = '') -> str:
    """Links l0..l<n-1>; link i > 0 hangs from link parents[i] by revolute joint j<i>."""
    parts = ['<?xml version="1.0"?><robot name="big">']
    parts += [f'<link name="l{i}"/>' for i in range(len(parents))]
    parts += [f'<joint name="j{i}" type="revolute"><parent link="l{p}"/><child link="l{i}"/>'
              '<origin xyz="0 0 0.01"/><axis xyz="0 0 1"/>'
              '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
              for i, p in enumerate(parents) if i > 0]
    return ''.join(parts) + extra + '</robot>'


@pytest.fixture(scope='module')
def random_tree():
    """A seeded random 10 000-link tree: (URDF, parent index of each link)."""
    rng = random.Random(15)
    parents = [-1] + [rng.randrange(i) for i in range(1, N_BIG)]
    return big_urdf(parents), parents


@pytest.mark.slow
def test_10000_link_tree_parses_within_the_hang_guard(random_tree):
    xml, parents = random_tree
    depth, link = 0, N_BIG - 1
    while parents[link] >= 0:
        depth, link = depth + 1, parents[link]
    chain = returns_within(120.0, Chain.from_urdf_string, xml, 'l0', f'l{N_BIG - 1}')
    assert chain.n == depth
    assert np.all(np.isfinite(chain.fk(chain.mid_configuration())))


@pytest.mark.slow
def test_unknown_tip_in_a_10000_link_tree_gives_a_short_message(random_tree):
    """The available links are listed, but not all 10 000 of them (main: a 90 kB message)."""
    with pytest.raises(ChainError, match=r"'hand'.*Available links: l0, l1, .*and 9980 more") \
            as info:
        returns_within(120.0, Chain.from_urdf_string, random_tree[0], 'l0', 'hand')
    assert len(str(info.value)) < 1000


@pytest.mark.slow
def test_loop_in_a_10000_link_tree_is_refused(random_tree):
    xml = random_tree[0].replace('</robot>', '<link name="x"/><link name="y"/>' +
                                 joint('jx', 'y', 'x') + joint('jy', 'x', 'y') + '</robot>')
    with pytest.raises(ChainError, match='loop: (x -> y -> x|y -> x -> y)'):
        returns_within(120.0, Chain.from_urdf_string, xml, 'l0', 'x')


@pytest.mark.slow
def test_10000_joint_serial_chain_is_refused_as_too_long():
    """main: RecursionError (and generating its fast kinematics would not end in hours)."""
    xml = big_urdf([-1] + list(range(N_BIG - 1)))
    with pytest.raises(ChainError, match='9999 moving joints; at most 100'):
        returns_within(120.0, Chain.from_urdf_string, xml, 'l0', f'l{N_BIG - 1}')
    chain = Chain.from_urdf_string(xml, 'l9000', 'l9100')  # a 100-joint piece of it is fine
    assert chain.n == 100


# ------------------------------------------------------------------------------------- CLI
@pytest.mark.slow
@pytest.mark.parametrize('item', ['loop_through_the_tip', 'duplicate_link_name'])
def test_cli_refuses_a_faulty_urdf_with_one_line_and_exit_2(tmp_path, item):
    xml, base, tip, words = FAULTS[item]
    path = tmp_path / 'bad.urdf'
    path.write_text(xml)
    try:
        proc = subprocess.run([sys.executable, '-m', 'ik_node.cli', '--urdf', str(path),
                               '--base', base, '--tip', tip, '--target', '0.1', '0', '0.1'],
                              capture_output=True, text=True, timeout=60, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail('ik-solve did not return within 60 s (hang)')
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ik-solve: error: '), proc.stderr
    assert words[0].lower() in lines[0].lower()
