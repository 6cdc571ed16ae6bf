"""Run ik_node on one of the package's robots, with robot_state_publisher and RViz.

    ros2 launch ik_node ik.launch.py robot:=arm6 solver:=damped_jacobian
    ros2 launch ik_node ik.launch.py robot:=leg3 rviz:=false

ik_node publishes /joint_states, robot_state_publisher turns them into TF, and RViz shows the
model and the node's markers. In RViz, the Publish Point tool sends a clicked point to the node:
RViz publishes it on /clicked_point, which this launch remaps to /ik_node/target_point.

Works with Humble and Jazzy. The URDF is read by an OpaqueFunction (no xacro dependency) and
given to both nodes as the ``robot_description`` parameter.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

ROBOTS = ['leg3', 'planar4', 'arm6', 'twin_arm']
SOLVERS = ['', 'analytic_hip_knee', 'fabrik', 'damped_jacobian']


def _robot_nodes(context):
    """robot_state_publisher and ik_node, once the ``robot`` and ``solver`` are known."""
    robot = LaunchConfiguration('robot').perform(context)
    solver = LaunchConfiguration('solver').perform(context)
    urdf_path = PathJoinSubstitution(
        [FindPackageShare('ik_node'), 'urdf', robot + '.urdf']).perform(context)
    try:
        with open(urdf_path, encoding='utf-8') as f:
            robot_description = ParameterValue(f.read(), value_type=str)
    except OSError as exc:
        raise RuntimeError(f"robot '{robot}': cannot read its URDF {urdf_path}: "
                           f'{exc.strerror}') from exc

    ik_parameters = {'robot_description': robot_description}
    if solver:  # '' keeps the solver named in the robot's params file
        ik_parameters['solver'] = solver

    return [
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            output='screen',
            parameters=[{'robot_description': robot_description}],
        ),
        Node(
            package='ik_node',
            executable='ik_node',
            name='ik_node',
            output='screen',
            parameters=[LaunchConfiguration('params_file'), ik_parameters],
        ),
    ]


def generate_launch_description():
    ik_node_share = FindPackageShare('ik_node')

    ld = LaunchDescription()
    ld.add_action(DeclareLaunchArgument(
        'robot', default_value='leg3', choices=ROBOTS,
        description='Robot model: urdf/<robot>.urdf of the ik_node package'))
    ld.add_action(DeclareLaunchArgument(
        'solver', default_value='', choices=SOLVERS,
        description="IK solver; '' keeps the one named in the params file"))
    ld.add_action(DeclareLaunchArgument(
        'rviz', default_value='true', choices=['true', 'false'],
        description='Start RViz with rviz/ik.rviz'))
    ld.add_action(DeclareLaunchArgument(
        'params_file',
        default_value=[PathJoinSubstitution(
            [FindPackageShare('ik_node'), 'config', LaunchConfiguration('robot')]), '.yaml'],
        description='ik_node parameters (ROS params file); default config/<robot>.yaml'))

    ld.add_action(OpaqueFunction(function=_robot_nodes))

    ld.add_action(Node(
        package='rviz2',
        executable='rviz2',
        output='screen',
        arguments=['-d', PathJoinSubstitution([ik_node_share, 'rviz', 'ik.rviz'])],
        # The Publish Point tool publishes on /clicked_point; send it to the IK node instead.
        remappings=[('/clicked_point', '/ik_node/target_point')],
        condition=IfCondition(LaunchConfiguration('rviz')),
    ))
    return ld
