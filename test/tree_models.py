"""URDF text of the trees the several-tips tests solve (written here, simple shapes, no mesh).

* :func:`quad_leg3_urdf`: four ``leg3``-type legs (hip yaw, hip pitch, knee) hanging from a
  trunk; no joint shared between two feet (independent legs).
* :func:`waist_two_arms_urdf`: a waist joint carrying two 6-joint arms (UR-like: yaw, two
  pitches, then a spherical-ish wrist of three joints), a tree with a shared trunk whose hands
  can take 6D targets.
"""

from typing import Dict, Tuple

#: Hip positions of the quadruped's legs in the trunk frame [m].
QUAD_HIPS: Dict[str, Tuple[float, float, float]] = {
    'FL': (0.25, 0.12, 0.0), 'FR': (0.25, -0.12, 0.0),
    'RL': (-0.25, 0.12, 0.0), 'RR': (-0.25, -0.12, 0.0)}
QUAD_FEET = tuple(f'{leg}_foot' for leg in QUAD_HIPS)
HANDS = ('left_hand', 'right_hand')


def _joint(name, parent, child, xyz, axis, lower, upper, rpy='0 0 0'):
    return (f'<link name="{child}"/>'
            f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            f'<limit lower="{lower}" upper="{upper}" effort="10" velocity="5"/></joint>')


def _fixed(name, parent, child, xyz):
    return (f'<link name="{child}"/><joint name="{name}" type="fixed"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/></joint>')


def quad_leg3_urdf() -> str:
    """Four leg3 legs (thigh 0.30 m, shin 0.28 m, hip pitch 0.05 m below the yaw joint)."""
    parts = ['<robot name="quad_leg3"><link name="trunk"/>']
    for leg, (x, y, z) in QUAD_HIPS.items():
        parts.append(_joint(f'{leg}_hip_yaw', 'trunk', f'{leg}_hip', f'{x} {y} {z}', '0 0 1',
                            -1.2, 1.2))
        parts.append(_joint(f'{leg}_hip_pitch', f'{leg}_hip', f'{leg}_thigh', '0 0 -0.05',
                            '0 1 0', -1.6, 1.6))
        parts.append(_joint(f'{leg}_knee', f'{leg}_thigh', f'{leg}_shin', '0 0 -0.30', '0 1 0',
                            -2.6, 2.6))
        parts.append(_fixed(f'{leg}_foot_joint', f'{leg}_shin', f'{leg}_foot', '0 0 -0.28'))
    parts.append('</robot>')
    return ''.join(parts)


def waist_two_arms_urdf() -> str:
    """A waist (about z) carrying two 6-joint arms, hands ``left_hand`` and ``right_hand``."""
    parts = ['<robot name="waist_two_arms"><link name="base_link"/>',
             _joint('waist', 'base_link', 'torso', '0 0 0.3', '0 0 1', -1.5, 1.5)]
    for side, y in (('left', 0.2), ('right', -0.2)):
        parts += [
            _joint(f'{side}_shoulder_yaw', 'torso', f'{side}_shoulder', f'0 {y} 0.35', '0 0 1',
                   -2.8, 2.8),
            _joint(f'{side}_shoulder_pitch', f'{side}_shoulder', f'{side}_upper_arm',
                   '0 0 0.05', '0 1 0', -2.0, 2.0),
            _joint(f'{side}_elbow', f'{side}_upper_arm', f'{side}_forearm', '0.30 0 0',
                   '0 1 0', -2.6, 2.6),
            _joint(f'{side}_wrist_1', f'{side}_forearm', f'{side}_wrist_a', '0.25 0 0',
                   '1 0 0', -2.8, 2.8),
            _joint(f'{side}_wrist_2', f'{side}_wrist_a', f'{side}_wrist_b', '0.05 0 0',
                   '0 1 0', -2.0, 2.0),
            _joint(f'{side}_wrist_3', f'{side}_wrist_b', f'{side}_wrist_c', '0.05 0 0',
                   '1 0 0', -2.8, 2.8),
            _fixed(f'{side}_hand_joint', f'{side}_wrist_c', f'{side}_hand', '0.08 0 0'),
        ]
    parts.append('</robot>')
    return ''.join(parts)
