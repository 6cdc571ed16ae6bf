"""The compiled path's kernel library (``ik_node.kernels.fk``, ``.planar`` and
``.linalg``) computes what the Python path computes: forward kinematics and the Jacobian of
``Chain``, the planar angle helpers of ``geometry.planar_core``, FABRIK's damped step of
``kernels.small_matrix`` and a linear solve as numpy's. The library's functions are plain
Python in numba's subset: checked as they are, and compiled where numba serves."""

import math
from pathlib import Path

import numpy as np
import pytest

from ik_node.model.chain import Chain
from ik_node.model.fast_kinematics import axis_frames
from ik_node import kernels
from ik_node.solvers.damped_jacobian import compiled as dls_kernels
from ik_node.solvers.geometry import planar_core
from ik_node.kernels import fk, linalg, planar
from ik_node.kernels import small_matrix
from ik_node.solvers.out_of_reach import compiled_search
from reference_robots import SHARED_ROBOTS as SHARED
from reference_robots import skip_reason

REPO = Path(__file__).resolve().parents[2]
CHAINS = [(REPO / 'urdf' / 'arm6.urdf', 'base_link', 'tool0'),
          (REPO / 'urdf' / 'planar4.urdf', 'base_link', 'tip'),
          (SHARED / 'panda.urdf', 'panda_link0', 'panda_hand_tcp'),
          (SHARED / 'baxter.urdf', 'base', 'right_hand_link')]


def _model(chain):
    fast = chain.fast_kinematics
    return fk.model_rows(list(fast.joint_transforms) + [fast.tip_transform],
                         [j.is_prismatic for j in chain.joints])


def _library(compiled):
    if not compiled:
        return fk.frames, fk.jacobian, planar.clamp_on_circle
    if not kernels.wait(120.0):
        pytest.skip(kernels.serving())
    return fk.frames, fk.jacobian, planar.clamp_on_circle


@pytest.mark.parametrize('compiled', [False, True], ids=['python', 'compiled'])
@pytest.mark.parametrize('urdf,base,tip', CHAINS, ids=lambda v: getattr(v, 'stem', v))
def test_fk_and_its_jacobian_are_the_chains(urdf, base, tip, compiled):
    if not urdf.is_file():
        pytest.skip(skip_reason(urdf))
    chain = Chain.from_urdf_file(urdf, base, tip)
    frames, jacobian, _ = _library(compiled)
    model, n = _model(chain), chain.n
    rng = np.random.default_rng(7)
    lo, hi = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    for _ in range(20):
        q = rng.uniform(lo, hi)
        T = np.empty((3, 4))
        axes, origins, J = np.empty((n, 3)), np.empty((n, 3)), np.empty((6, n))
        frames(model, n, q, axes, origins, T)
        np.testing.assert_allclose(T, chain.fk(q)[:3], atol=1e-12)
        jacobian(model, n, (T[0, 3], T[1, 3], T[2, 3]), axes, origins, J, True)
        np.testing.assert_allclose(J, chain.jacobian(q), atol=1e-12)


# A tree with a prismatic joint, oblique axes and rpy origins: two branches on a shared joint.
TREE = """<?xml version="1.0"?><robot name="tree">
  <link name="base"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
  <link name="e"/><link name="f"/><link name="tip_l"/><link name="tip_r"/>
  <joint name="waist" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0 0 0.3" rpy="0.2 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="l_spin" type="continuous"><parent link="a"/><child link="b"/>
    <origin xyz="0 0.2 0" rpy="0.3 -0.2 0.5"/><axis xyz="1 1 0"/></joint>
  <joint name="l_slide" type="prismatic"><parent link="b"/><child link="c"/>
    <origin xyz="0.25 0 0"/><axis xyz="0.2 -0.5 1"/>
    <limit lower="0" upper="0.3" effort="1" velocity="1"/></joint>
  <joint name="l_tip" type="fixed"><parent link="c"/><child link="tip_l"/>
    <origin xyz="0.1 0 0" rpy="0 0.4 0"/></joint>
  <joint name="r_bend" type="revolute"><parent link="a"/><child link="d"/>
    <origin xyz="0 -0.2 0" rpy="1.5707963267948966 0 0"/><axis xyz="0 -1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="r_fixed" type="fixed"><parent link="d"/><child link="e"/>
    <origin xyz="0 0 -0.2"/></joint>
  <joint name="r_elbow" type="revolute"><parent link="e"/><child link="f"/>
    <origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="r_tip" type="fixed"><parent link="f"/><child link="tip_r"/>
    <origin xyz="0 0 -0.1"/></joint>
</robot>"""


@pytest.mark.parametrize('compiled', [False, True], ids=['python', 'compiled'])
def test_joint_frames_place_every_joint_of_a_tree_where_the_chain_does(compiled):
    """``fk.joint_frames`` on ``axis_frames``' rows: each joint's frame is the chain's turned by
    its ``A_i`` (its z the joint axis), for a tree with a prismatic joint and oblique axes; and
    the tip through ``frames`` on a branch's serial model is the chain's."""
    chain = Chain.from_urdf_string(TREE, 'base', ['tip_l', 'tip_r'])
    if compiled and not kernels.wait(120.0):
        pytest.skip(kernels.serving())
    frames = axis_frames(chain)
    model = fk.model_rows(frames.joint_transforms, [j.is_prismatic for j in chain.joints])
    n = chain.n
    rng = np.random.default_rng(11)
    for _ in range(20):
        q = rng.uniform(np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi))
        out = np.full(12 * n, np.nan)
        fk.joint_frames(model, chain.parents, n, q, out)
        expected = chain.joint_frames(q)
        for i in range(n):
            A = np.eye(4)
            A[:3, :3] = frames.rotations[i]
            np.testing.assert_allclose(out[12 * i:12 * i + 12].reshape(3, 4),
                                       (expected[i] @ A)[:3], atol=1e-12)
            np.testing.assert_allclose((expected[i] @ A)[:3, 2],
                                       expected[i][:3, :3] @ chain.joints[i].axis, atol=1e-12)
        for k, tip in enumerate(chain.tips):  # a tip's transform from its joint's frame
            F = np.vstack([out[12 * tip.parent:12 * tip.parent + 12].reshape(3, 4),
                           [0, 0, 0, 1]])
            np.testing.assert_allclose(F @ frames.tip_transforms[k],
                                       chain.fk(q, tip.link), atol=1e-12)


@pytest.mark.parametrize('compiled', [False, True], ids=['python', 'compiled'])
def test_clamp_on_circle_is_the_planar_cores(compiled):
    _, _, clamp_on_circle = _library(compiled)
    rng = np.random.default_rng(3)
    for _ in range(2000):
        lower = rng.uniform(-4.0, 2.0)
        upper = lower + rng.uniform(0.0, 4.0)
        angle, seed = rng.uniform(-10.0, 10.0), rng.uniform(lower, upper)
        assert clamp_on_circle(angle, seed, lower, upper) == \
            planar_core.clamp_on_circle(angle, seed, lower, upper)


@pytest.mark.parametrize('compiled', [False, True], ids=['python', 'compiled'])
def test_the_damped_step_is_the_python_paths(compiled):
    """The same floats as ``small_matrix.damped_step`` over the free columns, and False where
    that raises (a system that is not positive definite)."""
    _library(compiled)
    rng = np.random.default_rng(5)
    for n in (1, 3, 6, 7):
        for _ in range(200):
            cols = rng.normal(size=(n, 3))
            free = (rng.random(n) < 0.8).astype(float)
            e, damping, out = rng.normal(size=3), 10.0 ** rng.uniform(-12, 0), np.empty(n)
            assert linalg.damped_step(cols, free, e[0], e[1], e[2], damping, out)
            expected = small_matrix.damped_step([tuple(c) for c in cols], free.astype(bool),
                                                tuple(e), damping)
            assert out.tolist() == expected
    cols = np.zeros((2, 3))
    with pytest.raises(ZeroDivisionError):
        small_matrix.damped_step([(0.0, 0.0, 0.0)] * 2, [True, True], (1.0, 0.0, 0.0), 0.0)
    assert not linalg.damped_step(cols, np.ones(2), 1.0, 0.0, 0.0, 0.0, np.empty(2))


@pytest.mark.parametrize('compiled', [False, True], ids=['python', 'compiled'])
def test_the_linear_solve_is_numpys_and_refuses_a_zero_pivot(compiled):
    _library(compiled)
    rng = np.random.default_rng(6)
    for m in (1, 2, 5, 9):
        for _ in range(100):
            A, b = rng.normal(size=(m, m)), rng.normal(size=m)
            G, g, y = A.copy(), b.copy(), np.empty(m)
            assert linalg.solve(G, g, m, y)
            np.testing.assert_allclose(y, np.linalg.solve(A, b), rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(A @ y, b, atol=1e-9)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not linalg.solve(singular.copy(), np.ones(2), 2, np.empty(2))


def test_every_kernel_module_reads_the_prismatic_flag_where_fk_does():
    assert dls_kernels._PRISMATIC == compiled_search._PRISMATIC == fk.PRISMATIC


# A tree with an oblique axis, rpy origins and a prismatic branch, for FABRIK's placement.
_TREE_URDF = '''<?xml version="1.0"?><robot name="r">
<link name="base"/><link name="trunk"/><link name="l1"/><link name="l2"/><link name="tip_l"/>
<link name="r1"/><link name="r2"/><link name="tip_r"/>
<joint name="waist" type="revolute"><parent link="base"/><child link="trunk"/>
 <origin xyz="0 0 0.3" rpy="0.1 0 0.2"/><axis xyz="0 0.3 1"/>
 <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/></joint>
<joint name="l_shoulder" type="revolute"><parent link="trunk"/><child link="l1"/>
 <origin xyz="0 0.2 0" rpy="0 0.4 -0.3"/><axis xyz="0 1 0"/>
 <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/></joint>
<joint name="l_elbow" type="revolute"><parent link="l1"/><child link="l2"/>
 <origin xyz="0.3 0 0.05"/><axis xyz="1 1 0"/>
 <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/></joint>
<joint name="l_tip" type="fixed"><parent link="l2"/><child link="tip_l"/>
 <origin xyz="0.25 0 0" rpy="0 0 0.5"/></joint>
<joint name="r_shoulder" type="revolute"><parent link="trunk"/><child link="r1"/>
 <origin xyz="0 -0.2 0"/><axis xyz="1 0 0"/>
 <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/></joint>
<joint name="r_slide" type="prismatic"><parent link="r1"/><child link="r2"/>
 <origin xyz="0 0 -0.2" rpy="0.3 0 0"/><axis xyz="0.2 0 -1"/>
 <limit lower="0" upper="0.3" effort="1" velocity="1"/></joint>
<joint name="r_tip" type="fixed"><parent link="r2"/><child link="tip_r"/>
 <origin xyz="0 0 -0.1"/></joint>
</robot>'''


def _placed(chain, q, rebuild):
    """Node positions and joint rotations (n, 3, 3) by ``rebuild(q, x, R9)``."""
    x, R9 = np.zeros((chain.n + len(chain.tips), 3)), np.zeros((chain.n, 9))
    rebuild(q, x, R9)
    return x, R9.reshape(chain.n, 3, 3)


@pytest.mark.parametrize('compiled', [False, True], ids=['python', 'compiled'])
def test_fabrik_placement_is_the_chains_fk(compiled):
    from ik_node.solvers.fabrik import compiled_tree, compiled_tree_passes
    from ik_node.solvers.fabrik.tree import FabrikTree
    chain = Chain.from_urdf_string(_TREE_URDF, 'base', ['tip_l', 'tip_r'])
    tree = FabrikTree(chain)
    if compiled:
        if not kernels.wait(120.0):
            pytest.skip(kernels.serving())
        geometry, parent, t_tip = compiled_tree.geometry_of(tree)

        def rebuild(q, x, R9):
            compiled_tree_passes.rebuild(geometry, parent, t_tip, q, x, R9)
    else:
        def rebuild(q, x, R9):
            tree.rebuild(q, x, R9.reshape(chain.n, 3, 3))
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(chain.lower, chain.upper)
        x, R = _placed(chain, q, rebuild)
        frames = chain.joint_frames(q)
        np.testing.assert_allclose(x[:chain.n], frames[:, :3, 3], atol=1e-12)
        np.testing.assert_allclose(R, frames[:, :3, :3], atol=1e-12)
        tips = chain.fk_tips(q)
        for k, tip in enumerate(chain.tip_links):
            np.testing.assert_allclose(x[chain.n + k], tips[tip][:3, 3], atol=1e-12)


def test_the_python_passes_place_by_the_kernels_source_in_plain_python():
    # fk.plain: the same functions, still plain Python once compile() replaced the module's
    # globals by numba's, and their answers the compiled ones to the bit.
    if not kernels.wait(120.0):
        pytest.skip(kernels.serving())
    import types
    rng = np.random.default_rng(5)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    R_tp = Chain.from_urdf_string(_TREE_URDF, 'base', 'tip_l').joints[1].T_parent_joint[:3, :3]
    row = fk.fabrik_row(R_tp, rng.normal(size=3), axis)
    R_parent = tuple(float(v) for v in np.linalg.qr(rng.normal(size=(3, 3)))[0].ravel())
    x_parent = tuple(float(v) for v in rng.normal(size=3))
    row_array = np.array(row)
    for name in fk.plain._fields:
        plain = getattr(fk.plain, name)
        assert isinstance(plain, types.FunctionType)
        assert plain.__code__ is getattr(fk, name).py_func.__code__  # fk's: numba's dispatcher
        assert all(isinstance(plain.__globals__[helper], types.FunctionType)
                   for helper in ('mat_mul', 'mat_vec', 'point_in', 'base_frame'))
    for q_i in rng.uniform(-3.0, 3.0, 5):
        R0, x0 = fk.plain.zero_frame(row, R_parent, x_parent)
        assert (R0, x0) == fk.zero_frame(row_array, R_parent, x_parent)
        assert fk.plain.turned(row, R0, q_i) == fk.turned(row_array, R0, q_i)
        assert fk.plain.slid(row, R0, x0, q_i) == fk.slid(row_array, R0, x0, q_i)
        assert fk.plain.base_frame(row) == fk.base_frame(row_array)
        assert fk.plain.point_in(R0, x0, x_parent) == fk.point_in(R0, x0, x_parent)
