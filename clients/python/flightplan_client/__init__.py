"""flightplan's training-side client: report a run's events to flightpland.

    from flightplan_client import Tracker

    with Tracker("dense-70b-10t", spool_dir="/tmp/flightplan-spool") as t:
        t.job_started(attempt=1, restored_step=0)
        for step in ...:
            t.step(step, tokens)

Every call returns at once and never raises into the training loop; a background thread
batches, sends, retries, and spools to disk while the daemon is unreachable.
"""

from flightplan_client.hostlist import expand_hostlist, slurm_nodes, torch_nodes
from flightplan_client.tracker import Tracker

__all__ = ["Tracker", "expand_hostlist", "slurm_nodes", "torch_nodes"]
