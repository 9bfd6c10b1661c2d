#!/usr/bin/env bash
# A one-node Slurm cluster on this host for tests/fleet/test_fleet_slurm.py: munge, slurmctld and slurmd from the
# system's packages, a slurm.conf with CPU slots and no cgroups (proctrack/linuxproc, task/none), so it
# runs in a container without systemd, and batch jobs scheduled as soon as resources free up
# (batch_sched_delay=0; Slurm's default lets them wait up to 3 s). Run as root; every wait is bounded.
# Prints the variable to export.
set -euo pipefail
if [ "${1:-}" = stop ]; then  # the daemons this script started, by their pid files
  for pidfile in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
    if [ -s "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  exit 0
fi
slots="${LAUNCHBENCH_SLURM_SLOTS:-4}"
running() {  # a live (not zombie) process holds the pid file $1
  local pid
  pid="$(cat "$1" 2>/dev/null || true)"
  [ -n "$pid" ] && ps -o stat= -p "$pid" 2>/dev/null | grep -qv Z
}
if ! command -v slurmctld >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi
node="$(hostname -s)"
mkdir -p /etc/munge /run/munge /var/log/munge /var/lib/munge /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
running /run/munge/munged.pid || runuser -u munge -- /usr/sbin/munged --force 2>/dev/null || /usr/sbin/munged --force
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=launchbench-ci
SlurmctldHost=${node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=${node} NodeAddr=127.0.0.1 CPUs=${slots} State=UNKNOWN
PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
running /run/slurmctld.pid || slurmctld
running /run/slurmd.pid || slurmd
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do  # at most 30 s for the node to come up (sinfo 2 s each)
  if timeout 2 sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "LAUNCHBENCH_TEST_SLURM=1"
    exit 0
  fi
  sleep 0.5
done
echo "slurm: the node did not come up within 30 s" >&2
timeout 5 sinfo -N -l >&2 || true
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
