"""Several tips at once: targets of a tree, independent legs and trees with a trunk.

* :mod:`~ik_node.solvers.trees.several_tips`: ``solve(targets=...)`` input, which tips share
  joints, per-tip results summed up into one result.
* :mod:`~ik_node.solvers.trees.legs`: independent legs solved one by one.
* :mod:`~ik_node.solvers.trees.residuals`: the stacked, weighted error of several tips.
* :mod:`~ik_node.solvers.trees.task_priority`: the reachable tips first when some tip's target
  is proven out of reach.
"""
