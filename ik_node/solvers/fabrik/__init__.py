"""fabrik: FABRIK with joint limits on serial chains and branched trees (position only)."""
