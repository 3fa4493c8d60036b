#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# netns_run.sh: run one rank per network namespace, so every rank is a host of its own with its own
# network stack, hostname and interface (a veth into a bridge), and always tear everything down.
#
#   netns_run.sh [options] -- PROGRAM ARGS...
#     --hosts N          namespaces (= ranks), 2..16 (default 2)
#     --timeout SEC      deadline for the whole job; ranks still running then are killed (default 100)
#     --plugin NAME      the net plugin: a line of net_plugins.txt (beside this script), whose
#                        environment every rank gets
#     --libdir DIR       with --plugin: skip (exit 77) while the plugin's library is not in DIR
#     --need-lib FILE    skip (exit 77) when FILE does not exist
#     --env NAME=VALUE   extra environment of every rank (repeatable), e.g. NCCL_SOCKET_NTHREADS=2
#     --cut K@SEC        SEC seconds after the ranks start, take host K's link down at the bridge
#                        (a cable pulled: no RST, no FIN, the peers' packets just vanish);
#                        K:J@SEC takes only NIC J of host K down (with --nics)
#     --fail-within SEC  with --cut: every rank must exit with status 3 ("the library reported an
#                        error and abort returned", see test_linkcut.c) within SEC seconds of the cut
#     --expect-text TEXT every rank's output must contain TEXT (e.g. the NIC an error names)
#     --nics N           interfaces ("NICs") per host, 1..4 (default 1), each on a network of its own
#     --nic-share J:MIN:MAX  after the run, NIC J of every host must have carried MIN..MAX percent of
#                        that host's bytes (received and sent, all NICs); repeatable
#
# Without --cut every rank must exit 0. Exit: 0 pass, 1 fail, 77 when this machine cannot make
# namespaces (not root, no CAP_NET_ADMIN, no veth or bridge support), with the reason on stderr.
#
# Topology: namespace <pfx>-hub holds bridge "chrbr" and one end of a veth pair per host (b<K>); host K
# lives in namespace <pfx>-h<K> with the other end, "chrv0", address 10.77.0.<K+1>/24. Rank K runs
# there in a UTS namespace of its own with hostname chorus-h<K>, so the library's host detection sees
# K separate hosts without NCCL_HOSTID. The bootstrap root is rank 0 at NCCL_COMM_ID=10.77.0.1:29400.
# With --nics N, NIC J > 0 of host K is "chrv<J>" at 10.77.<J>.<K+1>/24, its other end b<K>n<J> on
# bridge "chrbr<J>": one network per NIC index (a rail), and NCCL_SOCKET_IFNAME=chrv names them all.
#
# Names carry this script's pid (<pfx> = chrnet-<pid>), so concurrent runs never collide; a trap
# removes everything on exit, INT, TERM and HUP, and every run first removes the namespaces (and
# kills the processes inside them) of earlier runs whose script is gone, e.g. one that ctest killed.
# The deadline and the cut are driven by this script's own polling loop (no helper processes that
# could outlive it).
set -u

PFX=chrnet-$$
IFACE=chrv0
SUBNET=10.77.0
PORT=29400

die_usage() { echo "netns_run.sh: $*" >&2; exit 2; }
skip() { echo "netns_run.sh: SKIP: $*" >&2; exit 77; }

hosts=2 timeout=100 cut="" fail_within=0 envs=() plugin="" libdir="" nics=1 shares=() expect_text=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=${2:?}; shift 2 ;;
    --timeout) timeout=${2:?}; shift 2 ;;
    --need-lib) [ -e "${2:?}" ] || skip "$2 is not built"; shift 2 ;;
    --env) case "${2:?}" in [A-Za-z_]*=*) envs+=("$2") ;; *) die_usage "--env wants NAME=VALUE, got $2" ;; esac
           shift 2 ;;
    --plugin) plugin=${2:?}; shift 2 ;;
    --libdir) libdir=${2:?}; shift 2 ;;
    --cut) cut=${2:?}; shift 2 ;;
    --fail-within) fail_within=${2:?}; shift 2 ;;
    --nics) nics=${2:?}; shift 2 ;;
    --expect-text) expect_text=${2:?}; shift 2 ;;
    --nic-share) case "${2:?}" in [0-9]:[0-9]*:[0-9]*) shares+=("$2") ;; *) die_usage "--nic-share wants J:MIN:MAX, got $2" ;; esac
                 shift 2 ;;
    --) shift; break ;;
    *) die_usage "unknown option $1" ;;
  esac
done
[ $# -ge 1 ] || die_usage "no program given"
if [ -n "$plugin" ]; then
  table=$(dirname "$0")/net_plugins.txt
  line=$(grep -E "^$plugin[[:space:]]" "$table" 2>/dev/null | head -n 1)
  [ -n "$line" ] || die_usage "plugin $plugin is not in $table"
  read -r _ lib plugin_env <<<"$line"
  [ -z "$libdir" ] || [ -e "$libdir/$lib" ] || skip "net plugin $plugin: $libdir/$lib is not built"
  read -r -a plugin_envs <<<"$plugin_env"
  envs=("${plugin_envs[@]}" "${envs[@]}")
fi
case "$hosts" in ''|*[!0-9]*) die_usage "--hosts $hosts is not a number" ;; esac
[ "$hosts" -ge 2 ] && [ "$hosts" -le 16 ] || die_usage "--hosts must be 2..16"
case "$timeout" in ''|*[!0-9]*) die_usage "--timeout $timeout is not a number" ;; esac
case "$nics" in [1-4]) ;; *) die_usage "--nics must be 1..4" ;; esac
cut_host="" cut_sec="" cut_nic=0
if [ -n "$cut" ]; then
  cut_host=${cut%@*} cut_sec=${cut#*@}
  case "$cut_host" in *:*) cut_nic=${cut_host#*:} cut_host=${cut_host%%:*} ;; esac
  case "$cut_host$cut_nic$cut_sec" in ''|*[!0-9.]*) die_usage "--cut wants K@SEC or K:J@SEC, got $cut" ;; esac
  [ "$cut_host" -lt "$hosts" ] || die_usage "--cut host $cut_host is not below --hosts $hosts"
  [ "$cut_nic" -lt "$nics" ] || die_usage "--cut NIC $cut_nic is not below --nics $nics"
  case "$fail_within" in ''|*[!0-9.]*) die_usage "--fail-within $fail_within is not a number" ;; esac
  [ "$fail_within" != 0 ] || die_usage "--cut needs --fail-within SEC"
fi

# --- what this machine must allow ------------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "network namespaces need root (CAP_NET_ADMIN); running as uid $(id -u)"
for tool in ip unshare hostname; do
  command -v "$tool" >/dev/null 2>&1 || skip "'$tool' is not installed (iproute2 / util-linux)"
done

# --- clean-up: ours on any exit, and what runs that died before their trap left behind -------------
# Each rank runs under a watcher subshell (watcher_pids) that records the rank's pid, exit status and
# end time in files; the ranks' pids stay valid while their watchers have not reaped them.
watcher_pids=()
remove_ns() {  # kills what still runs inside namespace $1 (processes our runs started), then deletes it
  local p
  for p in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  ip netns del "$1" 2>/dev/null
}
kill_ranks() {
  local k
  for ((k = 0; k < hosts; k++)); do
    [ -e "$workdir/rc$k" ] || [ ! -s "$workdir/pid$k" ] || kill -KILL "$(cat "$workdir/pid$k")" 2>/dev/null
  done
}
cleanup() {
  local k
  exec 2>/dev/null  # the verdict is out; nothing more to say
  [ -n "${workdir:-}" ] && kill_ranks
  for ((k = 0; k < hosts; k++)); do remove_ns "$PFX-h$k"; done
  remove_ns "$PFX-hub"
  wait "${watcher_pids[@]}" 2>/dev/null
  [ -n "${workdir:-}" ] && rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
# A run is alive while its pid is still this script (not a zombie, not a reused pid).
alive_run() { grep -q netns_run "/proc/$1/cmdline" 2>/dev/null; }
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^chrnet-[0-9]*-'); do
  owner=${ns#chrnet-}; owner=${owner%%-*}
  alive_run "$owner" || remove_ns "$ns"
done
workdir=$(mktemp -d /tmp/chrnet.XXXXXX) || exit 1

# --- the network -----------------------------------------------------------------------------------
ip netns add "$PFX-hub" 2>"$workdir/err" || skip "cannot create a network namespace: $(cat "$workdir/err")"
ip -n "$PFX-hub" link add name chrbr type bridge 2>"$workdir/err" || skip "no bridge support: $(cat "$workdir/err")"
ip -n "$PFX-hub" link set lo up && ip -n "$PFX-hub" link set chrbr up || exit 1
for ((j = 1; j < nics; j++)); do
  ip -n "$PFX-hub" link add name "chrbr$j" type bridge && ip -n "$PFX-hub" link set "chrbr$j" up || exit 1
done
for ((k = 0; k < hosts; k++)); do
  ns=$PFX-h$k
  ip netns add "$ns" || exit 1
  ip -n "$ns" link set lo up || exit 1
  for ((j = 0; j < nics; j++)); do
    hub=b$k br=chrbr
    [ "$j" = 0 ] || hub=b${k}n$j br=chrbr$j
    ip -n "$PFX-hub" link add name "$hub" type veth peer name "chrv$j" netns "$ns" 2>"$workdir/err" ||
      skip "no veth support: $(cat "$workdir/err")"
    ip -n "$PFX-hub" link set "$hub" master "$br" up &&
      ip -n "$ns" addr add "10.77.$j.$((k + 1))/24" dev "chrv$j" &&
      ip -n "$ns" link set "chrv$j" up || exit 1
  done
done
ifname="=$IFACE"
[ "$nics" = 1 ] || ifname=chrv

# --- the ranks -------------------------------------------------------------------------------------
# The environment every rank gets: its rank, the root's address, the interface; NCCL_HOSTID is
# dropped so that the hostname decides (one host per namespace).
now() { date +%s.%N; }
later() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }  # true when time $1 >= time $2
start=$(now)
for ((k = 0; k < hosts; k++)); do
  (
    ip netns exec "$PFX-h$k" unshare --uts sh -c 'hostname "$0" && exec "$@"' "chorus-h$k" \
      env -u NCCL_HOSTID CHORUS_RANK=$k CHORUS_NRANKS=$hosts NCCL_COMM_ID=$SUBNET.1:$PORT \
      NCCL_SOCKET_IFNAME="$ifname" "${envs[@]}" "$@" >"$workdir/out$k" 2>&1 &
    echo $! >"$workdir/pid$k"
    exec 2>/dev/null  # the rank's output has its file; no "Killed" notice from this watcher
    wait $!
    rc=$?
    now >"$workdir/at$k"
    echo $rc >"$workdir/rc$k"
  ) >/dev/null 2>&1 &  # not holding ctest's output pipe should this script be killed
  watcher_pids+=($!)
done

# Wait for every rank, taking the link down at the cut time and killing what runs at the deadline.
cut_at="" deadline_hit=0
deadline=$(awk -v a="$start" -v t="$timeout" 'BEGIN { printf "%.3f", a + t }')
[ -z "$cut" ] || cut_time=$(awk -v a="$start" -v t="$cut_sec" 'BEGIN { printf "%.3f", a + t }')
while :; do
  left=0
  for ((k = 0; k < hosts; k++)); do [ -e "$workdir/rc$k" ] || left=$((left + 1)); done
  [ "$left" -gt 0 ] || break
  t=$(now)
  if [ -n "$cut" ] && [ -z "$cut_at" ] && later "$t" "$cut_time"; then
    cut_if=b$cut_host
    [ "$cut_nic" = 0 ] || cut_if=b${cut_host}n$cut_nic
    ip -n "$PFX-hub" link set "$cut_if" down || { echo "netns_run.sh: could not take $cut_if down" >&2; exit 1; }
    cut_at=$(now)
  fi
  if [ "$deadline_hit" = 0 ] && later "$t" "$deadline"; then
    deadline_hit=1
    kill_ranks
  fi
  sleep 0.1
done
declare -A status at
for ((k = 0; k < hosts; k++)); do status[$k]=$(cat "$workdir/rc$k") at[$k]=$(cat "$workdir/at$k"); done

# --- verdict ---------------------------------------------------------------------------------------
fail=0
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
if [ "$deadline_hit" = 1 ]; then
  echo "netns_run.sh: deadline of $timeout s passed; ranks were killed" >&2
  fail=1
fi
if [ -z "$cut" ]; then
  for ((k = 0; k < hosts; k++)); do
    [ "${status[$k]}" = 0 ] || { echo "netns_run.sh: rank $k (host $PFX-h$k) exited ${status[$k]}" >&2; fail=1; }
  done
else
  if [ -z "$cut_at" ]; then
    echo "netns_run.sh: the ranks ended before the cut at $cut_sec s" >&2
    fail=1
  else
    summary="link $cut_nic of host $cut_host cut at $(secs "$start" "$cut_at") s;"
    for ((k = 0; k < hosts; k++)); do
      after=$(secs "$cut_at" "${at[$k]}")
      summary="$summary rank $k exit ${status[$k]} after ${after} s;"
      if [ "${status[$k]}" != 3 ]; then
        echo "netns_run.sh: rank $k exited ${status[$k]}, not 3 (an error reported, abort returned)" >&2
        fail=1
      elif awk -v a="$after" -v w="$fail_within" 'BEGIN { exit !(a > w) }'; then
        echo "netns_run.sh: rank $k took $after s after the cut to fail (limit $fail_within s)" >&2
        fail=1
      fi
    done
    echo "netns_run.sh: $summary"
  fi
fi
if [ -n "$expect_text" ]; then
  for ((k = 0; k < hosts; k++)); do
    grep -qF -- "$expect_text" "$workdir/out$k" ||
      { echo "netns_run.sh: rank $k's output does not contain \"$expect_text\"" >&2; fail=1; }
  done
fi
# Bytes per NIC (received and sent), per host, and the shares --nic-share asks for.
if [ "$nics" -gt 1 ] || [ ${#shares[@]} -gt 0 ]; then
  for ((k = 0; k < hosts; k++)); do
    total=0 bytes=()
    for ((j = 0; j < nics; j++)); do
      b=$(ip netns exec "$PFX-h$k" sh -c "cat /sys/class/net/chrv$j/statistics/rx_bytes /sys/class/net/chrv$j/statistics/tx_bytes" |
          awk '{ s += $1 } END { printf "%.0f\n", s }')
      bytes[$j]=$b total=$((total + b))
    done
    line="netns_run.sh: host $k bytes per NIC:"
    for ((j = 0; j < nics; j++)); do line="$line chrv$j ${bytes[$j]}"; done
    echo "$line"
    for spec in "${shares[@]}"; do
      IFS=: read -r j lo hi <<<"$spec"
      [ "$j" -lt "$nics" ] || { echo "netns_run.sh: --nic-share $spec: no NIC $j" >&2; fail=1; continue; }
      pct=$(awk -v b="${bytes[$j]}" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * b / t : 0 }')
      if awk -v p="$pct" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(p < lo || p > hi) }'; then
        echo "netns_run.sh: host $k NIC chrv$j carried $pct% of its bytes, expected $lo..$hi%" >&2
        fail=1
      fi
    done
  done
fi
if [ "$fail" != 0 ]; then
  for ((k = 0; k < hosts; k++)); do
    [ -s "$workdir/out$k" ] && sed "s/^/[h$k] /" "$workdir/out$k" | tail -n 40 >&2
  done
fi
exit "$fail"
