"""A fleet: launchers for the engines fleets run on (Slurm, Kubernetes) and the fleet report."""
