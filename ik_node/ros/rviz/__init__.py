"""What RViz shows and takes: passive markers (``~/markers``), the reachability map display
(``~/reachability``) and the interactive target markers whose drags become targets."""
