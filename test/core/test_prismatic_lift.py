"""A torso lift (a prismatic joint, as on PAL's TIAGo) under an arm and a head: fabrik refuses
such chains naming the joint, damped_jacobian moves the lift, ``ik-solve chains`` says the same,
and a tree tip that no joint moves is refused when any solver is built."""

import json

import numpy as np
import pytest

from ik_node import Chain, make_solver
from ik_node.cli import main as cli_main
from ik_node.errors import ChainError


def _revolute(name, parent, child, xyz, axis, lower=-2.0, upper=2.0):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>'
            f'<limit lower="{lower}" upper="{upper}" effort="1" velocity="1"/></joint>')


def _fixed(name, parent, child, xyz):
    return (f'<joint name="{name}" type="fixed"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/></joint>')


LINKS = ['base_footprint', 'base_link', 'torso_lift_link', 'arm_1_link', 'arm_2_link',
         'arm_3_link', 'arm_tool_link', 'head_1_link', 'head_2_link', 'base_laser_link']
#: base_footprint -> base_link -> torso lift (prismatic, 0-0.35 m up) -> a 3-joint arm and a
#: 2-joint head; a laser fixed to the base.
LIFT_URDF = (
    '<robot name="lift">' + ''.join(f'<link name="{n}"/>' for n in LINKS) +
    _fixed('base_joint', 'base_footprint', 'base_link', '0 0 0.1') +
    '<joint name="torso_lift_joint" type="prismatic"><parent link="base_link"/>'
    '<child link="torso_lift_link"/><origin xyz="0 0 0.6"/><axis xyz="0 0 1"/>'
    '<limit lower="0" upper="0.35" effort="1" velocity="1"/></joint>' +
    _revolute('arm_1_joint', 'torso_lift_link', 'arm_1_link', '0.15 0 0', '0 0 1') +
    _revolute('arm_2_joint', 'arm_1_link', 'arm_2_link', '0.1 0 0', '0 1 0') +
    _revolute('arm_3_joint', 'arm_2_link', 'arm_3_link', '0.3 0 0', '0 1 0') +
    _fixed('arm_tool_joint', 'arm_3_link', 'arm_tool_link', '0.25 0 0') +
    _revolute('head_1_joint', 'torso_lift_link', 'head_1_link', '0 0 0.2', '0 0 1') +
    _revolute('head_2_joint', 'head_1_link', 'head_2_link', '0.05 0 0', '0 1 0') +
    _fixed('base_laser_joint', 'base_link', 'base_laser_link', '0.2 0 0.05') +
    '</robot>')


def test_fabrik_refuses_the_lift_naming_it_and_damped_jacobian_moves_it():
    chain = Chain.from_urdf_string(LIFT_URDF, 'base_footprint', 'arm_tool_link')
    with pytest.raises(ChainError, match='fabrik cannot move prismatic joint.*torso_lift_joint'):
        make_solver('fabrik', chain)
    solver = make_solver('damped_jacobian', chain, {'timeout': 60.0})
    rng = np.random.default_rng(4)
    top_with_lift_down = 0.1 + 0.6 + 0.3 + 0.25  # the arm pointing straight up [m]
    for _ in range(20):
        q = rng.uniform(chain.lower, chain.upper)
        q[0] = rng.uniform(0.25, 0.35)  # the lift high, the arm pointing up
        q[2], q[3] = rng.uniform(-1.6, -1.4), rng.uniform(-0.2, 0.2)
        target = chain.fk(q)[:3, 3]
        assert target[2] > top_with_lift_down + 0.1  # the premise: out of reach, lift down
        r = solver.solve(target, seed=np.zeros(chain.n))
        assert r.reachable, r.message
        assert np.linalg.norm(chain.fk(r.joint_positions)[:3, 3] - target) <= 1e-5
        assert r.joint_positions[0] >= target[2] - top_with_lift_down  # the lift moved up


def test_fabrik_refuses_a_tree_whose_head_hangs_on_the_lift():
    tree = Chain.from_urdf_string(LIFT_URDF, 'base_footprint', ['arm_tool_link', 'head_2_link'])
    with pytest.raises(ChainError, match='torso_lift_joint'):
        make_solver('fabrik', tree)


@pytest.mark.parametrize('solver_name', ['fabrik', 'damped_jacobian'])
def test_a_tree_tip_fixed_to_the_base_is_refused_at_build_naming_it(solver_name):
    # Without the lift (fabrik would refuse that first): base_link -> the arm and the laser.
    xml = LIFT_URDF.replace('type="prismatic"', 'type="fixed"')
    tree = Chain.from_urdf_string(xml, 'base_link', ['arm_tool_link', 'base_laser_link'])
    with pytest.raises(ChainError, match=r"base_laser_link .*no moving joint.*"
                                         r"Leave them out of tip_links"):
        make_solver(solver_name, tree)
    # the same tree without the laser builds
    make_solver(solver_name, Chain.from_urdf_string(xml, 'base_link',
                                                    ['arm_tool_link', 'head_2_link']))


def test_ik_solve_chains_lists_fabrik_as_unfit_for_the_lift_with_the_reason(tmp_path, capsys):
    path = tmp_path / 'lift.urdf'
    path.write_text(LIFT_URDF)
    assert cli_main(['chains', '--urdf', str(path), '--json']) == 0
    data = json.loads(capsys.readouterr().out)
    arm = next(c for c in data['chains'] if c.get('tip') == 'arm_tool_link')
    assert arm['solvers'] == ['damped_jacobian']
    assert 'prismatic' in arm['unfit']['fabrik'] and 'torso_lift_joint' in arm['unfit']['fabrik']
    assert data['suggested']['tip'] == 'arm_tool_link'
    assert data['suggested']['solvers'] == ['damped_jacobian']
