"""ik_node: an ament_python package that also installs with plain pip.

colcon reads setup.cfg and puts the console scripts in lib/ik_node (for `ros2 run`); a pip
install puts them on PATH. The `ros` extra pulls the ROS 2 Jazzy wheels from PyPI for machines
without ROS; a plain install (and colcon, which installs no Python dependencies) never does.
"""

from glob import glob

from setuptools import find_packages, setup

package_name = 'ik_node'

ROS_WHEELS = [
    'ros-jazzy-rclpy',
    'ros-jazzy-sensor-msgs',
    'ros-jazzy-geometry-msgs',
    'ros-jazzy-diagnostic-msgs',
    'ros-jazzy-visualization-msgs',
    'ros-jazzy-std-msgs',
    'ros-jazzy-trajectory-msgs',
    'ros-jazzy-rmw-fastrtps-cpp',
    'ros-wheels-bootstrapper',
]

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(include=['ik_node', 'ik_node.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
        ('share/' + package_name + '/urdf', glob('urdf/*.urdf')),
        ('share/' + package_name + '/rviz', glob('rviz/*.rviz')),
    ],
    python_requires='>=3.10',
    install_requires=['setuptools', 'numpy>=1.21', 'transforms3d>=0.3.1', 'PyYAML',
                      'urdf_parser_py', 'lxml'],
    extras_require={
        'ros': ROS_WHEELS,
        'demo': ['matplotlib'],
        'test': ['pytest', 'hypothesis', 'ruff', 'psutil', 'wheel', 'setuptools<80',
                 'colcon-core', 'colcon-ros', 'colcon-package-selection'],
    },
    zip_safe=True,
    maintainer='ik_node developers',
    maintainer_email='ik_node@example.com',
    description='Live inverse kinematics for URDF robots: analytic, FABRIK and DLS solvers.',
    license='BSD-3-Clause',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'ik_node = ik_node.entry:main',
            'ik-solve = ik_node.cli:main',
        ],
    },
)
