"""setup.py requires the PyPI URDF parser only where no other distribution provides it.

On a ROS 2 install the module ``urdf_parser_py`` comes from the distribution ``urdfdom_py``
(rosdep key ``urdfdom_py``); requiring ``urdf_parser_py`` there would make the console scripts
refuse to start. Checked with fake site folders in an isolated interpreter.
"""


from install_requires import fake_distribution, requires_in






def test_a_ros_install_providing_the_module_as_urdfdom_py_is_not_asked_for_the_pypi_name(
        tmp_path):
    fake_distribution(tmp_path, 'urdfdom_py', 'urdf_parser_py')
    requires = requires_in(tmp_path)
    assert 'urdf_parser_py' not in requires and 'numpy>=1.21' in requires


def test_a_plain_python_gets_the_pypi_urdf_parser(tmp_path):
    assert 'urdf_parser_py' in requires_in(tmp_path)


def test_the_pypi_distribution_itself_stays_required(tmp_path):
    fake_distribution(tmp_path, 'urdf_parser_py', 'urdf_parser_py')
    assert 'urdf_parser_py' in requires_in(tmp_path)


def test_numba_is_required_where_it_has_wheels_and_nowhere_else(tmp_path):
    numba = [r for r in requires_in(tmp_path) if r.startswith('numba')]
    assert len(numba) == 1
    name, marker = numba[0].split(';')
    assert name.strip() == 'numba>=0.55'
    machines = {clause.split('==')[1].strip().strip('"')
                for clause in marker.split(' or ')
                if clause.split('==')[0].strip() == 'platform_machine'}
    assert machines == {'x86_64', 'AMD64', 'aarch64', 'arm64'}
    assert marker.count('==') == len(machines), marker  # nothing but machines
