"""The robot model: kinematic chains and trees read from URDF or xacro, their fast forward
kinematics, structural checks, package resources and the quality of a solution."""
