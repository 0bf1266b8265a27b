#!/usr/bin/env bash
# Many client hosts (flint bench --hosts, docs/hosts.md): what the coordinator costs per worker,
# the control traffic per worker, and how closely hosts start together.
#
# 1. WORKERS local workers (a template without ssh) run an open-loop load of RATE pages/s for DUR
#    against `flint serve`; each worker's control channel passes through `tee` into files, so
#    both directions are counted. The coordinator's own CPU (utime + stime of its process only,
#    not its children) and peak memory (VmHWM) are sampled from /proc until it exits.
# 2. Start skew over ssh: an sshd on a free loopback port with throwaway keys, hosts 127.0.0.1,
#    .2 and .3. 3. Start skew with network namespaces as hosts (needs root). Median and worst of
#    each host's start_skew_ms.
#
# Environment: WORKERS (40), DUR (10s), RATE (2000), SKEW_RUNS (3), FLINT (path).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WORKERS=${WORKERS:-40}
DUR=${DUR:-10s}
RATE=${RATE:-2000}
SKEW_RUNS=${SKEW_RUNS:-3}
secs=$(seconds "$DUR")
[[ $WORKERS =~ ^[1-9][0-9]*$ ]] || die "WORKERS must be a positive number"

bench_init
need_flint
need ip ssh ssh-keygen /usr/sbin/sshd
make_docroot "$WORK/docs"
start_flint "$WORK/docs"
url="http://127.0.0.1:$FLINT_PORT/1k.bin"

# ---- 1. the coordinator with WORKERS workers ----------------------------------------------------
mkdir "$WORK/wire"
hosts=$(seq -f "w%g" 1 "$WORKERS" | paste -sd, -)
template="tee $WORK/wire/{host}.in | $FLINT worker | tee $WORK/wire/{host}.out"
"$FLINT" bench "$url" -c "$WORKERS" -t 1 --rate "$RATE" -d "$DUR" -q --report none \
    --json "$WORK/local.json" --hosts "$hosts" --launch "$template" 2>"$WORK/local.err" &
coordinator=$!
STARTED+=("$coordinator")
python3 - "$coordinator" >"$WORK/coordinator.txt" <<'PY'
import os, sys, time
pid = sys.argv[1]
tick = os.sysconf("SC_CLK_TCK")
cpu = hwm = 0
start = time.monotonic()
while True:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        if fields[0] == "Z":
            break
        cpu = (int(fields[11]) + int(fields[12])) / tick  # utime + stime, its own only
    except (FileNotFoundError, ProcessLookupError, IndexError):
        break
    time.sleep(0.1)
print(cpu, hwm, time.monotonic() - start)
PY
wait "$coordinator" || die "the 40-worker run failed: $(tail -3 "$WORK/local.err")"
read -r cpu_s hwm_kib wall_s <"$WORK/coordinator.txt"
python3 - "$WORK" "$WORKERS" "$secs" "$cpu_s" "$hwm_kib" "$wall_s" <<'PY'
import json, os, sys
work, workers, secs, cpu_s, hwm_kib, wall_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
doc = json.load(open(f"{work}/local.json"))
ok = sum(h["status"] == "ok" for h in doc["hosts"])
total = result = 0
for name in os.listdir(f"{work}/wire"):
    data = open(f"{work}/wire/{name}", "rb").read()
    total += len(data)
    if name.endswith(".out"):
        result += len(data.rstrip(b"\n").rsplit(b"\n", 1)[-1])  # the last line: the result
print(f"{workers} local workers, {doc['summary']['requests']} requests in {secs:.0f} s, {ok} ok")
print(f"coordinator CPU: {cpu_s:.2f} s over {wall_s:.1f} s = {1e6 * cpu_s / workers / wall_s:.0f} us per worker per second")
print(f"coordinator peak memory: {hwm_kib / 1024:.1f} MiB = {hwm_kib / workers:.0f} KiB per worker")
print(f"control traffic: {(total - result) / workers / secs:.0f} B per worker per second during the run, "
      f"plus {result / workers / 1024:.1f} KiB per worker for its final result")
print(f"1,000 hosts on paper: {1000 * cpu_s / workers / wall_s:.2f} cores, {1000 * hwm_kib / workers / 1024:.0f} MiB")
PY

# ---- 2. start skew over ssh ---------------------------------------------------------------------
skew() { # skew NAME JSON...: median and worst start_skew_ms over every host of every run
    python3 - "$@" <<'PY'
import json, statistics, sys
skews = [h["start_skew_ms"] for f in sys.argv[2:] for h in json.load(open(f))["hosts"] if h["start_skew_ms"] is not None]
offsets = [abs(h["clock_offset_ms"]) for f in sys.argv[2:] for h in json.load(open(f))["hosts"] if h["clock_offset_ms"] is not None]
print(f"start skew, {sys.argv[1]}: median {statistics.median(skews):.3f} ms, worst {max(skews):.3f} ms "
      f"({len(skews)} host starts); |clock offset| worst {max(offsets):.3f} ms")
PY
}
ssh_dir="$WORK/ssh"
mkdir "$ssh_dir"
ssh-keygen -q -t ed25519 -N "" -f "$ssh_dir/host_key"
ssh-keygen -q -t ed25519 -N "" -f "$ssh_dir/id"
cp "$ssh_dir/id.pub" "$ssh_dir/authorized_keys"
ssh_port=$(free_port)
cat >"$ssh_dir/sshd_config" <<CONF
Port $ssh_port
ListenAddress 127.0.0.1
ListenAddress 127.0.0.2
ListenAddress 127.0.0.3
HostKey $ssh_dir/host_key
AuthorizedKeysFile $ssh_dir/authorized_keys
PidFile $ssh_dir/sshd.pid
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
CONF
mkdir -p /run/sshd
/usr/sbin/sshd -D -e -f "$ssh_dir/sshd_config" 2>"$WORK/sshd.log" &
STARTED+=("$!")
"${MEASURE[@]}" wait-port --port "$ssh_port" --pid "$!" --timeout 15 || die "sshd did not start"
ssh_template="ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -i $ssh_dir/id -p $ssh_port {host} $FLINT worker"
runs=()
for ((i = 0; i < SKEW_RUNS; i++)); do
    "$FLINT" bench "$url" -c 3 -t 1 -d 2s -q --report none --json "$WORK/ssh$i.json" \
        --hosts 127.0.0.1,127.0.0.2,127.0.0.3 --launch "$ssh_template" 2>/dev/null
    runs+=("$WORK/ssh$i.json")
done
skew ssh "${runs[@]}"

# ---- 3. start skew with network namespaces ------------------------------------------------------
ns_prefix="flintb$$"
bridge="fbb$$"
cleanup_netns() {
    local i
    for ((i = 0; i < 3; i++)); do ip netns del "$ns_prefix-$i" 2>/dev/null || true; done
    ip link del "$bridge" 2>/dev/null || true
}
trap 'cleanup_netns; on_exit' EXIT
net="10.214.$(($$ % 250 + 1))"
ip link add "$bridge" type bridge
ip addr add "$net.1/24" dev "$bridge"
ip link set "$bridge" up
names=()
for ((i = 0; i < 3; i++)); do
    ns="$ns_prefix-$i"
    ip netns add "$ns"
    ip link add "vh$$_$i" type veth peer name "vn$$_$i"
    ip link set "vn$$_$i" netns "$ns"
    ip link set "vh$$_$i" master "$bridge" up
    ip -n "$ns" addr add "$net.$((10 + i))/24" dev "vn$$_$i"
    ip -n "$ns" link set "vn$$_$i" up
    ip -n "$ns" link set lo up
    names+=("$ns")
done
ns_port=$(free_port)
# On every address: the namespaces reach it on the bridge, the readiness check on loopback.
start_pinned flint-serve-ns "$ns_port" "$FLINT" serve "$WORK/docs" --listen "0.0.0.0:$ns_port" --threads 1
runs=()
for ((i = 0; i < SKEW_RUNS; i++)); do
    "$FLINT" bench "http://$net.1:$ns_port/1k.bin" -c 3 -t 1 -d 2s -q --report none \
        --json "$WORK/ns$i.json" --hosts "$(IFS=,; echo "${names[*]}")" \
        --launch "ip netns exec {host} $FLINT worker" 2>/dev/null
    runs+=("$WORK/ns$i.json")
done
skew "network namespaces" "${runs[@]}"
