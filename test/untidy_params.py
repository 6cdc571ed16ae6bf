"""A params file whose strings carry stray spaces and capitals, as users write them: the tests of
both layers check that every reader takes them in canonical form."""

FILE_TEXT = """ik_node:
  ros__parameters:
    urdf_file: ' leg3.urdf '
    base_link: "base_link "
    tip_link: "  foot"
    solver: ' Analytic_Hip_Knee '
    analytic_hip_knee: {branch: ' BACKWARD'}
    damped_jacobian: {method: Transpose}
"""
