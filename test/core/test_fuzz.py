"""Fuzzing: mutated robot descriptions and parameter files never escape as anything but IkError.

Hypothesis mutates the package's valid URDFs (drops, duplicates, moves and re-parents elements,
renames, retypes, corrupts numbers, cuts and splices the text) and its parameter files (drops and
overwrites keys with values of any type, any case and whitespace, unwraps or re-keys the node
block, cuts the YAML text). Every case must return a Chain (whose FK and Jacobian are finite and
whose one damped solve returns a finite, in-limit answer) or an IkConfig (in canonical form), or
raise an :class:`ik_node.IkError` subclass, within a hang guard: never another exception type,
never a hang. Runs are derandomised (reproducible in CI).
"""

from __future__ import annotations

import copy
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hang_guard import returns_within

from ik_node import SOLVERS, Chain, IkError, make_solver
from ik_node.config.node_config import (build_chain, build_solver, config_from_mapping, load_yaml,
                                        valid_keys)

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 20.0
FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

MODELS = {  # URDF text, base link, tip link(s)
    'leg3': ((REPO / 'urdf' / 'leg3.urdf').read_text(), 'base_link', 'foot'),
    'planar4': ((REPO / 'urdf' / 'planar4.urdf').read_text(), 'base_link', 'tip'),
    'arm6': ((REPO / 'urdf' / 'arm6.urdf').read_text(), 'base_link', 'tool0'),
    'twin_arm': ((REPO / 'urdf' / 'twin_arm.urdf').read_text(), 'base_link',
                 ['left_hand', 'right_hand']),
}
NUMBERS = ['nan', 'inf', '-inf', '1e308', '-1e309', '1e-320', '0', '-0', '', 'x', '1 2',
           '1 2 3 4', '0 0 0', 'nan 0 0', '0 inf 0', '1e7 0 0', '0x10 0 0', '1,2,3', '+1 -1 1']
NUMERIC_ATTRIBUTES = {'origin': ('xyz', 'rpy'), 'axis': ('xyz',),
                      'limit': ('lower', 'upper', 'effort', 'velocity'),
                      'mimic': ('multiplier', 'offset')}
JOINT_TYPES = ['revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar', 'unknown',
               'bogus', '']
# Structural mutations weigh more than text cuts, which mostly give malformed XML.
MUTATIONS = ['drop', 'duplicate', 'move', 'cut', 'splice'] + 3 * ['reparent', 'rename', 'retype',
                                                                 'number', 'mimic']


def _mutate_tree(root: ET.Element, kind: str, draw) -> None:
    parent_of = {child: parent for parent in root.iter() for child in parent}
    elements = list(parent_of)
    joints = root.findall('joint')
    names = [e.get('name') or '' for e in root if e.tag in ('link', 'joint')]
    any_name = st.one_of(st.sampled_from(names or ['x']), st.text('abxyz_ ', max_size=4))
    if kind in ('drop', 'duplicate', 'move') and elements:
        element = draw(st.sampled_from(elements))
        if kind == 'drop':
            parent_of[element].remove(element)
        elif kind == 'duplicate':
            parent_of[element].append(copy.deepcopy(element))
        else:
            parent_of[element].remove(element)
            draw(st.sampled_from([root] + elements)).append(element)
    elif kind == 'reparent' and joints:
        joint = draw(st.sampled_from(joints))
        tag = draw(st.sampled_from(['parent', 'child']))
        for e in joint.findall(tag):
            e.set('link', draw(any_name))
    elif kind == 'rename' and names:
        element = draw(st.sampled_from([e for e in root if e.tag in ('link', 'joint')]))
        element.set('name', draw(any_name))
    elif kind == 'retype' and joints:
        draw(st.sampled_from(joints)).set('type', draw(st.sampled_from(JOINT_TYPES)))
    elif kind == 'number':
        targets = [(e, a) for e in root.iter() for a in NUMERIC_ATTRIBUTES.get(e.tag, ())]
        if targets:
            element, attribute = draw(st.sampled_from(targets))
            element.set(attribute, draw(st.one_of(
                st.sampled_from(NUMBERS),
                st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1,
                         max_size=4).map(lambda v: ' '.join(repr(x) for x in v)))))
    elif kind == 'mimic' and joints:
        mimic = ET.SubElement(draw(st.sampled_from(joints)), 'mimic')
        mimic.set('joint', draw(any_name))
        if draw(st.booleans()):
            mimic.set('multiplier', draw(st.sampled_from(NUMBERS)))


def _mutated_urdf(draw, xml: str) -> str:
    root = ET.fromstring(xml)
    text = None
    for kind in draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=4)):
        if kind in ('cut', 'splice'):
            text = ET.tostring(root, encoding='unicode') if text is None else text
            i = draw(st.integers(0, len(text)))
            text = text[:i] if kind == 'cut' else \
                text[:i] + draw(st.text(max_size=8)) + text[i:]
        elif text is None:
            _mutate_tree(root, kind, draw)
    return ET.tostring(root, encoding='unicode') if text is None else text


def _build_and_use(xml: str, base, tip):
    """Chain, then FK, Jacobian and one damped solve; returns None or the IkError raised."""
    try:
        chain = Chain.from_urdf_string(xml, base, tip)
    except IkError as exc:
        return exc
    rng = np.random.default_rng(0)
    lo, hi = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    for q in (chain.mid_configuration(), lo + (hi - lo) * rng.random(chain.n)):
        for T in chain.fk_tips(q).values():
            assert np.all(np.isfinite(T)), (q, T)
        assert np.all(np.isfinite(chain.jacobian(q))), q
    if chain.n == 0:
        return None
    target = chain.fk(lo + (hi - lo) * rng.random(chain.n))[:3, 3]
    try:
        result = make_solver('damped_jacobian', chain, {'timeout': 0.05}).solve(target)
    except IkError as exc:
        return exc
    assert np.all(np.isfinite(result.joint_positions))
    assert chain.within_limits(result.joint_positions)
    return None


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_mutated_urdf_gives_a_working_chain_or_a_project_error_in_bounded_time(data):
    model = data.draw(st.sampled_from(sorted(MODELS)), label='model')
    xml, base, tip = MODELS[model]
    mutated = _mutated_urdf(data.draw, xml)
    link_names = [e.get('name') for e in ET.fromstring(xml).iter('link')]
    if data.draw(st.booleans(), label='other ends'):
        base = data.draw(st.sampled_from(link_names), label='base')
        tip = data.draw(st.sampled_from(link_names), label='tip')
    returns_within(GUARD_S, _build_and_use, mutated, base, tip)


# ---------------------------------------------------------------------------- parameter files
CONFIGS = {name: yaml.safe_load((REPO / 'config' / f'{name}.yaml').read_text())
           for name in ('leg3', 'planar4', 'arm6', 'twin_arm')}
NAMES = sorted(SOLVERS) + ['leg3.urdf', 'arm6.urdf', 'base_link', 'foot', 'tool0', 'dls',
                           'transpose', 'forward', 'closest']
KEYS = sorted(set(valid_keys()) | {f'{s}.{p}' for s in SOLVERS
                                    for p in SOLVERS[s].param_specs()} | {'turbo', ''})


def _name_variant(name: str):
    return st.tuples(st.sampled_from(['', ' ', '\t', '\n ']), st.sampled_from([
        name, name.upper(), name.title()]), st.sampled_from(['', ' ', '  \n'])).map(''.join)


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                    st.sampled_from(NAMES).flatmap(_name_variant))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=12)


@st.composite
def parameter_files(draw):
    """A parameter mapping: a package config with keys dropped, overwritten or added."""
    data = copy.deepcopy(CONFIGS[draw(st.sampled_from(sorted(CONFIGS)))])
    params = data['ik_node']['ros__parameters']
    for _ in range(draw(st.integers(1, 5))):
        action = draw(st.sampled_from(['drop', 'set', 'set_name', 'nest']))
        if action == 'drop' and params:
            params.pop(draw(st.sampled_from(sorted(params))))
        elif action == 'set':
            params[draw(st.sampled_from(KEYS))] = draw(VALUES)
        elif action == 'set_name':
            key = draw(st.sampled_from(['solver', 'base_link', 'tip_link', 'urdf_file',
                                        'damped_jacobian.method', 'analytic_hip_knee.branch']))
            params[key] = draw(st.sampled_from(NAMES).flatmap(_name_variant))
        else:
            solver = draw(st.sampled_from(sorted(SOLVERS)))
            block = params.setdefault(solver, {})
            if isinstance(block, dict):
                block[draw(st.sampled_from(sorted(SOLVERS[solver].param_specs()) + ['x']))] = \
                    draw(VALUES)
    shape = draw(st.sampled_from(3 * ['wrapped', 'plain'] + ['wildcard', 'other_node', 'list']))
    if shape == 'plain':
        return params
    if shape == 'wildcard':
        return {'/**': {'ros__parameters': params}}
    if shape == 'other_node':
        return {'ik_node': data['ik_node'], 'other': {'ros__parameters': {'a': 1}}, 'x': 1}
    if shape == 'list':
        return [params]
    return data


def _config_and_chain(data):
    """IkConfig then chain and solver, or the IkError raised; checks the canonical form."""
    try:
        config = config_from_mapping(data, source='fuzz')
    except IkError as exc:
        return exc
    assert config.solver in SOLVERS  # canonical: lower case, stripped
    assert config.base_link == config.base_link.strip()
    assert config.urdf_file == config.urdf_file.strip()
    for tip in config.tip_links:
        assert tip and tip == tip.strip()
    try:
        build_solver(config, build_chain(config))
    except IkError as exc:
        return exc
    return None


@pytest.mark.slow
@FUZZ
@given(data=parameter_files())
def test_mutated_parameter_mapping_gives_a_canonical_config_or_a_project_error(data):
    returns_within(GUARD_S, _config_and_chain, data)


def _yaml_route(text: str):
    try:
        return _config_and_chain(load_yaml(text, 'fuzz.yaml'))
    except IkError as exc:
        return exc


@pytest.mark.slow
@FUZZ
@given(data=parameter_files(), cut=st.integers(0, 10_000), junk=st.text(max_size=6))
def test_mutated_parameter_file_text_gives_a_config_or_a_project_error(data, cut, junk):
    text = yaml.safe_dump(data, allow_unicode=True)
    cut %= len(text) + 1
    for variant in (text, text[:cut], text[:cut] + junk + text[cut:]):
        returns_within(GUARD_S, _yaml_route, variant)


@pytest.mark.slow
@FUZZ
@given(data=parameter_files(), solver=st.sampled_from(NAMES).flatmap(_name_variant),
       tip=st.sampled_from(NAMES).flatmap(_name_variant))
def test_cli_flags_over_a_mutated_file_give_a_config_or_a_project_error(tmp_path_factory, data,
                                                                        solver, tip):
    from ik_node.cli.common import flat_config
    from ik_node.cli.solve import build_parser
    from ik_node.config.node_config import config_from_flat
    path = tmp_path_factory.mktemp('fuzz') / 'params.yaml'
    path.write_text(yaml.safe_dump(data))
    args = build_parser().parse_args(['--config', str(path), '--solver', solver, '--tip', tip,
                                      '--param', 'max_iterations=7', '--target', '0', '0', '0'])

    def run():
        try:
            config = config_from_flat(flat_config(args), source='command line')
        except IkError as exc:
            return exc
        assert config.solver == solver.strip().lower()
        assert config.params_of()['max_iterations'] == 7
        return None
    returns_within(GUARD_S, run)


# ------------------------------------------------- known hard cases, each in its own process
def _alias_bomb(levels: int) -> str:
    """A YAML flow list of 10 ** (levels + 1) ones in a few hundred characters, by aliases."""
    text = '&a0 [' + ', '.join(['1'] * 10) + ']'
    for i in range(1, levels + 1):
        text = f'&a{i} [{text}' + f', *a{i - 1}' * 9 + ']'
    return text


HARD_YAML = {
    # main: RecursionError.
    'nested_100000_deep': '[' * 100_000,
    # main: the error message printed 10^9 list entries (a hang, then MemoryError).
    'alias_bomb_in_a_solver_list': ('urdf_file: leg3.urdf\ntip_link: foot\nfabrik: {weights: ' +
                                    _alias_bomb(8) + '}\n'),
}
_HARD_SCRIPT = """
import sys
from ik_node.config.node_config import config_from_mapping, load_yaml
from ik_node.errors import IkError
try:
    config_from_mapping(load_yaml(sys.stdin.read()))
except IkError as exc:
    print('IkError:', str(exc)[:200])
"""


def _limit_memory():  # 2 GB: a runaway case fails instead of taking the machine
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.slow
@pytest.mark.parametrize('item', list(HARD_YAML))
def test_hard_parameter_file_is_a_config_error(item):
    try:
        proc = subprocess.run([sys.executable, '-c', _HARD_SCRIPT], input=HARD_YAML[item],
                              capture_output=True, text=True, timeout=60, cwd=REPO,
                              preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail('did not return within 60 s (hang)')
    assert proc.returncode == 0 and proc.stdout.startswith('IkError:'), proc.stderr[-2000:]
