"""damped_jacobian: damped least squares (Levenberg-Marquardt) IK, position or 6D."""
