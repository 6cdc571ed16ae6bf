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
    # what moveit_msgs (no PyPI wheel: a ROS install's ros-jazzy-moveit-msgs, or a prefix built
    # against these wheels) needs for the MoveIt services (docs/services.md)
    'ros-jazzy-shape-msgs',
    'ros-jazzy-action-msgs',
]


def numba_requirement():
    """numba, for the compiled kernels (docs/speed.md; rosdep key python3-numba), on the
    machines numba publishes wheels for; elsewhere pip would try to build LLVM, so there the
    pure-Python path serves (the solvers are complete without numba)."""
    machines = ('x86_64', 'AMD64', 'aarch64', 'arm64')
    return 'numba>=0.55; ' + ' or '.join(f'platform_machine == "{m}"' for m in machines)


def install_requires():
    """The pip dependencies. On a ROS 2 install, rosdep provides the URDF parser from
    package.xml's ``urdfdom_py`` key: the module ``urdf_parser_py`` then belongs to the
    distribution ``urdfdom_py`` (Debian's python3-urdfdom-py), and requiring the PyPI name
    ``urdf_parser_py`` would make setuptools' entry-point scripts refuse to start. So the PyPI
    name is required only where no other distribution provides the module. The same for
    ament_index_python (rosdep key ``ament_index_python``), which xacro's ``$(find pkg)``
    needs."""
    requires = ['setuptools', 'numpy>=1.21', 'transforms3d>=0.3.1', 'PyYAML', 'lxml', 'xacro',
                numba_requirement()]
    if not _provided_by_another_distribution('urdf_parser_py', 'urdf_parser_py'):
        requires.append('urdf_parser_py')
    # xacro's $(find pkg) imports ament_index_python (rosdep key ament_index_python): pure
    # Python, the only ROS wheel a plain install takes, and only where ROS does not provide it.
    if not _provided_by_another_distribution('ament_index_python',
                                             'ros-jazzy-ament-index-python'):
        requires.append('ros-jazzy-ament-index-python')
    return requires


def _provided_by_another_distribution(module: str, pypi_name: str) -> bool:
    """True when ``module`` is importable from a distribution other than ``pypi_name``."""
    import importlib.util
    try:
        from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
    except ImportError:  # Python < 3.10 has no packages_distributions
        return False
    if importlib.util.find_spec(module) is None:
        return False
    owners = packages_distributions().get(module, [])
    try:
        distribution(pypi_name)
        return False
    except PackageNotFoundError:
        return bool(owners)


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(include=['ik_node', 'ik_node.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
        ('share/' + package_name + '/urdf', glob('urdf/*.urdf') + glob('urdf/*.xacro')),
        ('share/' + package_name + '/rviz', glob('rviz/*.rviz')),
    ],
    python_requires='>=3.10',
    install_requires=install_requires(),
    extras_require={
        'ros': ROS_WHEELS,
        'demo': ['matplotlib'],
        # the compiled peers of benchmarks/solvers/bench.py (optional; skipped when missing)
        'bench': ['optik-py', 'pytracik'],
        # kept for old commands: numba is an install requirement (docs/speed.md)
        'fast': [numba_requirement()],
        # collision checking from the URDF's <collision> geometry (docs/collisions.md): mesh
        # loading and convex hulls (trimesh, scipy; pycollada for .dae), the narrow phase (FCL).
        # trimesh 5 needs numpy >= 1.22: on Python 3.10 (Humble's numpy 1.21) trimesh 4.
        'collision': ['trimesh<5; python_version < "3.11"', 'trimesh; python_version >= "3.11"',
                      'scipy', 'pycollada', 'python-fcl'],
        # capability maps built on a Ray cluster (ik-solve capability-map --ray-address,
        # docs/capability.md); this machine's process pool needs nothing more
        'scale': ['ray>=2.9'],
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
            'ik_node = ik_node.ros.app.entry:main',
            'ik-solve = ik_node.cli:main',
        ],
    },
)
