#!/usr/bin/env bash
# A single-node SLURM cluster with accounting on localhost, for the workflow's SLURM test.
#
#   tests/cluster/local_slurm.sh start    install (Debian packages) and start munged, MariaDB, slurmdbd,
#                                         slurmctld and slurmd
#   tests/cluster/local_slurm.sh stop     stop exactly the daemons that `start` started (by pid file)
#
# Idempotent: `start` on a running cluster only checks it; `stop` without one does nothing. Needs root
# (daemons run as root, except munged as user munge and MariaDB as user mysql). Everything the cluster
# writes lives under $GROKSLT_SLURM_DIR (default /tmp/grokslt-slurm).
set -euo pipefail

DIR=${GROKSLT_SLURM_DIR:-/tmp/grokslt-slurm}
# Job steps (srun inside a batch job) read the configuration from the default path, whatever SLURM_CONF
# the submitting shell had: the files are written there, marked, and removed again by `stop`.
ETC=/etc/slurm
MARK="# written by grokslt tests/cluster/local_slurm.sh"
export SLURM_CONF=$ETC/slurm.conf
CLUSTER=grokslt
ACCOUNT=grokslt
PARTITION=debug
NODE=$(hostname -s)
DAEMONS=(slurmd slurmctld slurmdbd mariadb munged)  # stop order

log() { echo "local_slurm: $*" >&2; }

install_packages() {
    local missing=()
    for binary in munged slurmctld slurmd sbatch slurmdbd mariadbd; do
        command -v "$binary" > /dev/null || missing+=("$binary")
    done
    [ ${#missing[@]} -eq 0 ] && return
    log "installing munge, slurm and mariadb (missing: ${missing[*]})"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends munge slurmctld slurmd slurm-client slurmdbd mariadb-server \
        > "$DIR/log/apt.log"
}

pid_of() { cat "$DIR/run/$1.pid" 2> /dev/null; }
running() { local pid; pid=$(pid_of "$1") && [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...  (generous: CI starts the cluster beside busy tests)
    local seconds=$1 what=$2 started=$SECONDS
    shift 2
    for _ in $(seq 1 $((seconds * 2))); do
        if "$@" > /dev/null 2>&1; then
            log "$what after $((SECONDS - started)) s"
            return 0
        fi
        sleep 0.5
    done
    log "timed out after $seconds s waiting for $what"
    return 1
}

show_node() {  # what the controller thinks of the node, and the daemons' last words
    sinfo -N -l >&2 || true
    scontrol show node "$NODE" >&2 || true
    tail -n 20 "$DIR/log/slurmd.log" "$DIR/log/slurmctld.log" >&2 || true
}

start_munge() {
    running munged && return
    mkdir -p /etc/munge /run/munge "$DIR/munge"
    [ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    chown munge:munge /etc/munge/munge.key /run/munge "$DIR/munge"
    chmod 400 /etc/munge/munge.key
    runuser -u munge -- munged --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log"
    wait_for 60 munged test -s "$DIR/munge/munged.pid"
    cp "$DIR/munge/munged.pid" "$DIR/run/munged.pid"
    wait_for 60 "munge credentials" bash -c "munge -n | unmunge"
}

start_mariadb() {
    running mariadb && return
    mkdir -p /run/mysqld
    chown mysql:mysql /run/mysqld
    if [ ! -d "$DIR/mysql/mysql" ]; then
        mkdir -p "$DIR/mysql"
        chown mysql:mysql "$DIR/mysql"
        mysql_install_db --user=mysql --datadir="$DIR/mysql" --skip-test-db > "$DIR/log/mysql_install.log" 2>&1
    fi
    runuser -u mysql -- mariadbd --datadir="$DIR/mysql" --socket=/run/mysqld/mysqld.sock --skip-networking \
        --pid-file=/run/mysqld/grokslt.pid --log-error="$DIR/mysql/mariadb.log" > /dev/null 2>&1 &
    wait_for 120 mariadb mariadb --socket=/run/mysqld/mysqld.sock -e "SELECT 1"
    cp /run/mysqld/grokslt.pid "$DIR/run/mariadb.pid"
    mariadb --socket=/run/mysqld/mysqld.sock -e "
        CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'grokslt';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
}

write_config() {
    local memory
    memory=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
    mkdir -p "$ETC" "$DIR/spool/ctld" "$DIR/spool/d"
    if [ -f "$ETC/slurm.conf" ] && ! grep -q "$MARK" "$ETC/slurm.conf"; then
        log "$ETC/slurm.conf exists and is not ours: refusing to overwrite it"
        exit 1
    fi
    cat > "$ETC/slurm.conf" << EOF
$MARK
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=300
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$((memory - 512)) State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    cat > "$ETC/slurmdbd.conf" << EOF
$MARK
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=grokslt
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$ETC/slurmdbd.conf"
}

start_slurm() {
    running slurmdbd || slurmdbd
    wait_for 120 slurmdbd sacctmgr -n list cluster
    if ! sacctmgr -n -P list account "$ACCOUNT" | grep -q "$ACCOUNT"; then
        sacctmgr -i add cluster "$CLUSTER" > /dev/null || true
        sacctmgr -i add account "$ACCOUNT" cluster="$CLUSTER" > /dev/null
        sacctmgr -i add user root account="$ACCOUNT" cluster="$CLUSTER" > /dev/null
    fi
    running slurmctld || slurmctld
    wait_for 120 slurmctld scontrol ping
    running slurmd || slurmd
    wait_for 300 "node $NODE idle" bash -c "sinfo -h -N -o %t | grep -q idle" || { show_node; return 1; }
}

start() {
    mkdir -p "$DIR/log" "$DIR/run"
    install_packages
    start_munge
    start_mariadb
    write_config
    start_slurm
    log "cluster $CLUSTER up: partition $PARTITION, account $ACCOUNT, configuration $SLURM_CONF"
}

stop() {
    local pid
    for daemon in "${DAEMONS[@]}"; do
        pid=$(pid_of "$daemon") || continue
        if running "$daemon"; then
            kill "$pid"
            for _ in $(seq 1 40); do kill -0 "$pid" 2> /dev/null || break; sleep 0.25; done
            kill -0 "$pid" 2> /dev/null && kill -9 "$pid"
        fi
        rm -f "$DIR/run/$daemon.pid"
    done
    for file in "$ETC/slurm.conf" "$ETC/slurmdbd.conf"; do
        if [ -f "$file" ] && grep -q "$MARK" "$file"; then rm -f "$file"; fi
    done
    log "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
