"""/proc and process trees, in one package: a process by pid and start time (``pidwatch``), a launch's
tree (``proctree``), who listens on a port (``ports``), why ptrace was refused (``access``)."""
