"""Run ik_node on a packaged robot or on your own URDF/xacro, with robot_state_publisher and RViz.

    ros2 launch ik_node ik.launch.py robot:=arm6 solver:=damped_jacobian
    ros2 launch ik_node ik.launch.py description_file:=/path/robot.urdf.xacro \\
        xacro_args:="prefix:=left_" base_link:=base_link tip_link:=tool0 rviz:=false
    ros2 launch ik_node ik.launch.py robot_state_publisher:=false base_link:=base_link \\
        tip_link:=tool0          # the robot runs its own; the description comes from its topic
    ros2 launch ik_node ik.launch.py robot:=twin_arm namespace:=r1 params_file:=mine.yaml

ik_node publishes joint states, robot_state_publisher turns them into TF, and RViz shows the
model and the node's markers. In RViz, the Publish Point tool sends a clicked point to the node
(/clicked_point is remapped to ik_node/target_point). robot_state_publisher or RViz asked for
but not installed is left out with a warning naming the package to install. When ik_node ends
with an error (a parameter it refuses), the launch stops with exit status 1.

What starts with which parameters is worked out by ik_node.config.launch_plan.plan_from_arguments
(a plain function, tested without ROS launch): a xacro file is expanded there, and the URDF XML is
given to both nodes as the ``robot_description`` parameter. ik_node's parameters are the robot's
config/<robot>.yaml, then params_file, then the arguments below that are set. With a namespace,
every node (and TF) moves into it: /r1/joint_states, /r1/tf, /r1/ik_node/target_pose, ...
"""

from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.logging import get_logger
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from ik_node.config.launch_plan import ARGUMENT_DEFAULTS, plan_from_arguments

ROBOTS = ['', 'leg3', 'planar4', 'arm6', 'twin_arm', 'quad12']
SOLVERS = ['', 'analytic_hip_knee', 'damped_jacobian', 'fabrik']
OUTPUTS = ['', 'joint_states', 'position_command', 'joint_trajectory']
BOOLEANS = ['true', 'false']


def _installed(package):
    """True when the ROS package is found on the ament prefix path."""
    try:
        get_package_prefix(package)
    except PackageNotFoundError:
        return False
    return True


class IkNodeFailed(RuntimeError):
    """ik_node ended with an error status while the launch was running."""


def _stop_when_ik_node_fails(event, context):
    """ik_node ending with an error (a parameter it refuses) ends the launch with status 1."""
    if event.returncode != 0 and not context.is_shutdown:
        raise IkNodeFailed(f'ik_node ended with exit status {event.returncode} (its reason is in '
                           'the lines above); stopping the launch')


def _nodes(context):
    """The nodes, once the arguments are known (see ik_node.config.launch_plan)."""
    share = FindPackageShare('ik_node').perform(context)
    arguments = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENT_DEFAULTS}
    plan = plan_from_arguments(arguments, share, installed=_installed)
    namespace = plan.namespace or None
    for note in plan.notes:
        get_logger('ik.launch.py').warning(note)

    ik_parameters = dict(plan.ik_node_parameters)
    if plan.robot_description:
        description = ParameterValue(plan.robot_description, value_type=str)
        ik_parameters['robot_description'] = description
    actions = [LogInfo(msg=plan.summary())]
    if plan.robot_state_publisher:
        actions.append(Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            namespace=namespace,
            output='screen',
            parameters=[{'robot_description': description}] if plan.robot_description else [],
            remappings=list(plan.state_publisher_remappings),
        ))
    ik_node = Node(
        package='ik_node',
        executable='ik_node',
        name='ik_node',
        namespace=namespace,
        output='screen',
        parameters=[ik_parameters],
    )
    actions += [ik_node, RegisterEventHandler(OnProcessExit(target_action=ik_node,
                                                            on_exit=_stop_when_ik_node_fails))]
    if plan.rviz:
        from ik_node.ros.rviz.views import rviz_config_of  # a view framing any robot's chain
        actions.append(Node(
            package='rviz2',
            executable='rviz2',
            namespace=namespace,
            output='screen',
            arguments=['-d', str(rviz_config_of(share, plan)), '-f', plan.fixed_frame],
            remappings=list(plan.rviz_remappings),
        ))
    return actions


def generate_launch_description():
    ld = LaunchDescription()
    ld.add_action(DeclareLaunchArgument(
        'robot', default_value='', choices=ROBOTS,
        description="Packaged robot: urdf/<robot>.urdf, with config/<robot>.yaml as defaults. "
                    "'' = leg3, unless description_file, the params file or "
                    'robot_state_publisher:=false says where the description comes from'))
    ld.add_action(DeclareLaunchArgument(
        'description_file', default_value='',
        description='Your robot instead: a .urdf file, or a .xacro file expanded with xacro_args'))
    ld.add_action(DeclareLaunchArgument(
        'xacro_args', default_value='',
        description='Arguments of a .xacro description_file: "key:=value key2:=value2"'))
    ld.add_action(DeclareLaunchArgument(
        'base_link', default_value='',
        description="Link the chain starts at; '' keeps the config's (default base_link)"))
    ld.add_action(DeclareLaunchArgument(
        'tip_link', default_value='',
        description="End-effector link of a serial chain; '' keeps the config's"))
    ld.add_action(DeclareLaunchArgument(
        'tip_links', default_value='',
        description="End-effector links of a tree, comma- or space-separated; '' keeps the "
                    "config's"))
    ld.add_action(DeclareLaunchArgument(
        'solver', default_value='', choices=SOLVERS,
        description="IK solver; '' keeps the config's (default damped_jacobian)"))
    ld.add_action(DeclareLaunchArgument(
        'params_file', default_value='',
        description='Your ik_node parameters (ROS params-file shape), applied over the '
                    "robot's config/<robot>.yaml: what it does not set keeps that value"))
    ld.add_action(DeclareLaunchArgument(
        'robot_state_publisher', default_value='true', choices=BOOLEANS,
        description='Start robot_state_publisher; false when the robot runs its own (then, '
                    'without description_file, ik_node reads the robot_description topic)'))
    ld.add_action(DeclareLaunchArgument(
        'rviz', default_value='true', choices=BOOLEANS,
        description='Start RViz with rviz/<robot>.rviz (a view framing the packaged robot), '
                    "or rviz/ik.rviz with a view framing your robot's chain"))
    ld.add_action(DeclareLaunchArgument(
        'namespace', default_value='',
        description='Namespace of ik_node, robot_state_publisher and RViz, e.g. r1: '
                    '/r1/joint_states, /r1/tf, /r1/ik_node/target_pose'))
    ld.add_action(DeclareLaunchArgument(
        'output', default_value='', choices=OUTPUTS,
        description="What ik_node publishes the solution as; '' keeps the node's default"))
    ld.add_action(DeclareLaunchArgument(
        'state_topic', default_value='',
        description="Topic of ik_node's joint-state output; '' keeps the node's default"))
    ld.add_action(OpaqueFunction(function=_nodes))
    return ld
