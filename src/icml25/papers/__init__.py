"""One sub-package per paper, named by its slug."""
