"""A one-node Slurm cluster on this machine, for the tests: Debian 12's munge 0.5 and Slurm 22.05
(slurmctld, slurmd, slurm-client), started by the test itself and stopped by it.

Everything lives under one temporary directory: a munge key and socket of its own, the
controller's state, the node's spool, the logs, the job completion log (jobcomp/filetxt) and a
slurm.conf on free loopback ports. Nothing under /etc or /run is read or written, so it runs
beside a site's own Slurm or munge without touching them. The daemons run as root, and so do
the jobs (SlurmUser=root): slurmd must be root to start a job as its user.

    with Cluster() as c:
        job = c.sbatch("--requeue", "--wrap", "sleep 600")
        c.wait_job(job, "RUNNING")
        c.scontrol("requeue", job)

With accounting=True it also starts MariaDB (Debian 12's 10.11, on a loopback port, its data
under the directory) and slurmdbd on it, so that sacct and sacctmgr answer; jobcomp=False leaves
the completion log out (JobCompType=jobcomp/none), as at a site that keeps accounting only. Two
partitions, main (the default) and urgent (a higher PriorityTier, PreemptMode=REQUEUE), let a
job submitted to urgent preempt one running in main.

The configuration keeps the test machine's kernel out of it (ProctrackType=proctrack/linuxproc,
TaskPlugin=task/none: no cgroups) and makes a node set DOWN by an operator stay down until
resumed (ReturnToService=1).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, workdir=None, timeout=60, accounting=False, jobcomp=True):
        if os.geteuid() != 0:
            raise SystemExit("cluster.py: slurmd must run as root to start jobs (run the test as root)")
        for tool in ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo"):
            if shutil.which(tool) is None:
                raise SystemExit(f"cluster.py: {tool} is not installed (deploy/install-deps.sh installs it)")
        if accounting:
            for tool in ("mariadbd", "mariadb-install-db", "slurmdbd", "sacct", "sacctmgr"):
                if shutil.which(tool) is None:
                    raise SystemExit(f"cluster.py: {tool} is not installed (deploy/install-deps.sh installs it)")
        self.accounting = accounting
        self.keep_jobcomp = jobcomp
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="flightplan-slurm-")
        self.timeout = timeout
        self.node = socket.gethostname().split(".")[0]
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.jobcomp = os.path.join(self.dir, "log", "jobcomp.log")
        # TZ=UTC: slurmctld writes the completion log in its local time; UTC keeps it unambiguous.
        self.env = dict(os.environ, SLURM_CONF=self.conf, TZ="UTC")
        self._pids = []

    # Setup and teardown.

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def start(self):
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(self.path(d), exist_ok=True)
        os.chmod(self.path("munge"), 0o711)  # munged wants its socket's directory searchable
        key = self.path("munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.munge_socket = self.path("munge", "munge.socket")
        subprocess.run(["munged", "--force", f"--socket={self.munge_socket}", f"--key-file={key}",
                        f"--log-file={self.path('log', 'munged.log')}",
                        f"--pid-file={self.path('munge', 'munged.pid')}",
                        f"--seed-file={self.path('munge', 'munged.seed')}"], check=True)
        self._pids.append(self.path("munge", "munged.pid"))
        self.ctld_port, self.slurmd_port = _free_port(), _free_port()
        if self.accounting:
            self.start_accounting()
        with open(self.conf, "w") as f:
            f.write(self.config())
        subprocess.run(["slurmctld", "-c", "-f", self.conf], check=True, env=self.env)
        self._pids.append(self.path("slurmctld.pid"))
        subprocess.run(["slurmd", "-f", self.conf, "-N", self.node], check=True, env=self.env)
        self._pids.append(self.path("slurmd.pid"))
        self.wait("the node to register idle", lambda: self.node_state() == "idle")

    def start_accounting(self):
        """MariaDB (Debian 12's 10.11) on a loopback port with its data under the directory, and
        slurmdbd on it: Slurm's accounting, which sacct and sacctmgr read."""
        data = self.path("mariadb")
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"], check=True,
                       capture_output=True)
        self.db_port, self.dbd_port = _free_port(), _free_port()
        db_pid = self.path("mariadb.pid")
        subprocess.Popen(["mariadbd", "--no-defaults", f"--datadir={data}", "--user=root", "--bind-address=127.0.0.1",
                          f"--port={self.db_port}", f"--socket={self.path('mariadb.sock')}", f"--pid-file={db_pid}",
                          f"--log-error={self.path('log', 'mariadb.log')}", "--innodb-buffer-pool-size=64M"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
        self._pids.append(db_pid)
        self.wait("MariaDB to listen", lambda: os.path.exists(db_pid) and _listening(self.db_port))
        dbd_conf = self.path("slurmdbd.conf")  # read from SLURM_CONF's directory; slurmdbd wants it 0600
        with open(dbd_conf, "w") as f:
            f.write(f"""# Written by tests/slurm/cluster.py.
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
DbdAddr=127.0.0.1
DbdHost={self.node}
DbdPort={self.dbd_port}
SlurmUser=root
LogFile={self.dir}/log/slurmdbd.log
PidFile={self.dir}/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.db_port}
StorageUser=root
StorageLoc=slurm_acct_db
""")
        os.chmod(dbd_conf, 0o600)
        subprocess.run(["slurmdbd"], check=True, env=self.env)
        self._pids.append(self.path("slurmdbd.pid"))
        self.wait("slurmdbd to listen", lambda: _listening(self.dbd_port))
        with open(self.conf, "w") as f:  # sacctmgr reads slurm.conf for the slurmdbd's address
            f.write(self.config())
        self.run("sacctmgr", "-i", "add", "cluster", "flightplan-test")

    def config(self):
        d = self.dir
        return f"""# Written by tests/slurm/cluster.py: a one-node test cluster under {d}.
ClusterName=flightplan-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
{self.accounting_config()}
{self.jobcomp_config()}
ReturnToService=1
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=600
KillWait=10
OverTimeLimit=0
Waittime=0
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
PartitionName=main Nodes={self.node} Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes={self.node} MaxTime=INFINITE State=UP PriorityTier=2
"""

    def jobcomp_config(self):
        if not self.keep_jobcomp:
            return "JobCompType=jobcomp/none"
        return f"JobCompType=jobcomp/filetxt\nJobCompLoc={self.jobcomp}"

    def accounting_config(self):
        if not self.accounting:
            return "AccountingStorageType=accounting_storage/none"
        return (f"AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\n"
                f"AccountingStoragePort={self.dbd_port}\n"
                # the munge socket for the connection to slurmdbd (slurm.conf(5): AccountingStoragePass)
                f"AccountingStoragePass={self.munge_socket}")

    def stop(self):
        """Cancels every job (waiting up to 20 s for their steps to end), then SIGTERM to each
        daemon, SIGKILL after 10 s; then the directory goes (unless given)."""
        if self._pids and os.path.exists(self.conf):
            subprocess.run(["scancel", "--full", "--user=root"], env=self.env, capture_output=True)
            end = time.time() + 20
            while time.time() < end and subprocess.run(
                    ["squeue", "--noheader", "--states=RUNNING,COMPLETING"], env=self.env,
                    capture_output=True, text=True).stdout.strip():
                time.sleep(0.2)
        procs = []
        for pidfile in reversed(self._pids):
            try:
                with open(pidfile) as f:
                    pid = int(f.read().split()[0])
                os.kill(pid, signal.SIGTERM)
                procs.append(pid)
            except (OSError, ValueError, IndexError):
                pass
        end = time.time() + 10
        for pid in procs:
            while time.time() < end and _alive(pid):
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        self._pids = []
        if self.own_dir and os.environ.get("KEEP_SLURM_DIR") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)

    # Commands.

    def run(self, *args):
        out = subprocess.run(list(args), env=self.env, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
        return out.stdout

    def sbatch(self, *args):
        return int(self.run("sbatch", "--parsable", *args).strip().split(";")[0])

    def scontrol(self, *args):
        return self.run("scontrol", *[str(a) for a in args])

    def job(self, job_id):
        """The job as squeue --json shows it (Slurm 22.05: openapi/v0.0.38), or None."""
        out = subprocess.run(["squeue", "--json", "--jobs", str(job_id)], env=self.env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            return None
        # Debian 12's squeue 22.05 prints every job with --json, whatever --jobs says.
        jobs = [j for j in json.loads(out.stdout).get("jobs", []) if j["job_id"] == int(job_id)]
        return jobs[0] if jobs else None

    def node_state(self):
        nodes = json.loads(self.run("sinfo", "--json")).get("nodes", [])
        return nodes[0]["state"] if nodes else None

    def wait(self, what, check, timeout=None):
        end = time.time() + (timeout or self.timeout)
        while time.time() < end:
            try:
                got = check()
            except (RuntimeError, ValueError, KeyError, IndexError):
                got = None
            if got:
                return got
            time.sleep(0.2)
        raise SystemExit(f"cluster.py: timed out waiting for {what}; logs in {self.path('log')}")

    def wait_job(self, job_id, state, restarts=None):
        def check():
            j = self.job(job_id)
            if j and j["job_state"] == state and (restarts is None or j["restart_cnt"] == restarts):
                return j
            return None
        return self.wait(f"job {job_id} to be {state}" + ("" if restarts is None else f" after {restarts} restarts"),
                         check)

    def release(self, job_id):
        """A requeued job waits for a begin time about two minutes out; start it now."""
        self.scontrol("update", f"jobid={job_id}", "StartTime=now")

    # The columns `flightplan slurm` asks sacct for (cli/slurm_command.cc).
    SACCT_FORMAT = "JobIDRaw,JobName,State,Start,End,NodeList,ExitCode,Submit"

    def sacct(self, *job_ids):
        """sacct -D -P -X of the jobs, as `flightplan slurm` runs it: one row per run, with a header."""
        return self.run("sacct", "-D", "-P", "-X", "-j", ",".join(str(j) for j in job_ids), "-o", self.SACCT_FORMAT)

    def sacct_rows(self, *job_ids):
        lines = self.sacct(*job_ids).strip().splitlines()
        head = lines[0].split("|")
        return [dict(zip(head, line.split("|"))) for line in lines[1:]]

    def node_events(self):
        """The node's events as accounting keeps them, as `flightplan slurm` asks for them."""
        return self.run("sacctmgr", "-n", "-P", "show", "event", f"Nodes={self.node}", "Start=2020-01-01T00:00:00",
                        "format=NodeName,TimeStart,TimeEnd,State,Reason")

    def jobcomp_records(self):
        """The job completion log's records (jobcomp/filetxt: one line of Key=Value per record)."""
        if not os.path.exists(self.jobcomp):
            return []
        with open(self.jobcomp) as f:
            return [dict(kv.split("=", 1) for kv in line.split() if "=" in kv) for line in f if line.strip()]


def _listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie of ours counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False
