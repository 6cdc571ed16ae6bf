"""Between the inputs and the solver: the robot model in force, a target's way to the solver
(frames, planes, every tip's standing target, the seed) and the solver's collision world."""
