"""The damped-least-squares settings shared by damped_jacobian's serial solver (its Python descent
and its compiled descent), its tree solver and the trees' task-priority descent: one descent rule
for all, except the stall factor of a serial chain's pose descents (POSE_STALL_FACTOR)."""

#: Damping stays within [LAMBDA_MIN, LAMBDA_MAX] [m^2]; past the maximum no step lowers the
#: error: the descent is at a local minimum. A step that lowers the cost multiplies the damping
#: by LAMBDA_DOWN, one that does not by LAMBDA_UP.
LAMBDA_MIN = 1e-9
LAMBDA_MAX = 1e6
LAMBDA_DOWN = 0.25
LAMBDA_UP = 10.0
#: A descent is stuck when its cost has not dropped below STALL_FACTOR times its value
#: STALL_ITERATIONS iterations earlier, or STALL_ITERATIONS_BLOCKED when joints at a limit sat
#: out a step in that window: descents pressed against a limit (most failed Panda descents) are
#: given up sooner (fewer iterations on the Panda).
STALL_ITERATIONS = 5
STALL_ITERATIONS_BLOCKED = 2
STALL_FACTOR = 0.25
#: A pose (6D) descent on a serial chain in whose window no joint at a limit sat out a step
#: is stuck when its cost has not dropped below POSE_STALL_FACTOR times its value
#: STALL_ITERATIONS iterations earlier: toward a pose near a singularity a descent that halves
#: its error every few iterations still converges, and the restarts that a quarter would take
#: instead cost more on 6- and 7-joint arms. A descent pressed against a limit keeps
#: STALL_FACTOR in its window, as do position descents and trees (tree.py).
POSE_STALL_FACTOR = 0.5
#: Converged when the errors are below this fraction of the tolerances (a margin for the
#: round-off of the FK that base.py measures independently).
TOLERANCE_MARGIN = 0.5
#: A restart starts from the lowest-cost of this many random configurations.
RESTART_CANDIDATES = 4
