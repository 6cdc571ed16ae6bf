"""Joint limits read straight from a URDF's XML, independently of the package's own reading:
what the tests of both layers check solutions and joint states against."""

import math

import numpy as np
from urdf_parser_py.urdf import URDF


def urdf_limits(xml: str, names):
    """(lower, upper) of the named joints read straight from the URDF (inf for continuous)."""
    robot = URDF.from_xml_string(xml)
    by_name = {j.name: j for j in robot.joints}
    lower, upper = [], []
    for name in names:
        j = by_name[name]
        if j.type == 'continuous':
            lower.append(-math.inf)
            upper.append(math.inf)
        else:
            lower.append(j.limit.lower)
            upper.append(j.limit.upper)
    return np.array(lower), np.array(upper)
