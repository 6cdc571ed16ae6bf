"""analytic_hip_knee: closed-form position IK of a 3-joint leg and its planar 2-link core."""
