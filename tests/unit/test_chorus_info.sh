#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_chorus_info.sh <chorus-info binary>: value and source columns for env, a named file, ~/.config
# and defaults; plugin sections and problems in the full report; exit status 1 for a configuration
# that init would refuse (a malformed file, a bad value), 0 when it only has unknown names.
set -u
bin=$1
dir=$(mktemp -d /tmp/chorus-info-test.XXXXXX) || exit 2
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/.config"
printf '[core]\n; a comment\nbuffsize = 65536\nhostid = from-named\nbogus = 1\n[net.socket]\nNCCL_NSOCKS_PERTHREAD = 4\n' >"$dir/named.ini"
printf '[core]\nHOSTID = from-user\nNCCL_MAX_NCHANNELS = 7\n' >"$dir/.config/chorus.ini"
fail=0
check() { # name value source
  line=$(grep "^$1 " "$dir/out") || { echo "no line for $1"; fail=1; return; }
  set -- $line "$1" "$2" "$3"
  # $1 name $2 value $3 source ... then the expected three at the end
  eval "en=\${$(($# - 2))} ev=\${$(($# - 1))} es=\${$#}"
  if [ "$2" != "$ev" ] || [ "$3" != "$es" ]; then
    echo "$en: got value '$2' source '$3', expected '$ev' '$es'"; fail=1
  fi
}
env -i HOME="$dir" CHORUS_CONF="$dir/named.ini" NCCL_ALGO=ring "$bin" --params >"$dir/out" 2>&1 || { echo "exit $?"; fail=1; }
check NCCL_ALGO ring env
check NCCL_BUFFSIZE 65536 "$dir/named.ini:3"
check NCCL_HOSTID from-named "$dir/named.ini:4"
check NCCL_MAX_NCHANNELS 7 "$dir/.config/chorus.ini:3"
check NCCL_NET_PLUGIN socket default
check NCCL_PROTO '""' default
grep -q "^NAME  *VALUE  *SOURCE  *HELP" "$dir/out" || { echo "no header"; fail=1; }
grep -q "Config problems" "$dir/out" && { echo "--params printed more than the params"; fail=1; }

env -i HOME="$dir" CHORUS_CONF="$dir/named.ini" "$bin" >"$dir/full" 2>&1 || { echo "exit $?"; fail=1; }
grep -q "^Chorus [0-9.]*, NCCL API 2\.30\.7" "$dir/full" || { echo "no version line"; fail=1; }
grep -q "^  \[net.socket\]" "$dir/full" || { echo "no plugin section"; fail=1; }
grep -q "^    NCCL_NSOCKS_PERTHREAD = 4  ($dir/named.ini:7)" "$dir/full" || { echo "no plugin key"; fail=1; }
grep -q "^  $dir/named.ini:5: unknown key 'bogus' in section \[core\]" "$dir/full" || { echo "no problem line"; fail=1; }
grep -q "configuration is not usable" "$dir/full" && { echo "an unknown key made the config unusable"; fail=1; }
grep -q "^Plugins:" "$dir/full" || { echo "no plugins part"; fail=1; }
"$bin" --help | grep -q -- "--params" || { echo "no help"; fail=1; }
"$bin" --bogus >/dev/null 2>&1 && { echo "bad option accepted"; fail=1; }
# A malformed file: the problem names file:line, nothing of the file applies, and the exit status says so.
printf '[core]\nhostid = half\n[net.socket\n' >"$dir/broken.ini"
for args in "" "--params"; do
  env -i HOME="$dir/nohome" CHORUS_CONF="$dir/broken.ini" "$bin" $args >"$dir/broken.out" 2>&1 && {
    echo "chorus-info $args: exit 0 with a malformed file"; fail=1; }
  grep -q "$dir/broken.ini:3: '\[' without a closing '\]'" "$dir/broken.out" || {
    echo "chorus-info $args: no file:line for the malformed file"; cat "$dir/broken.out"; fail=1; }
  grep -q "^NCCL_HOSTID  *\"\"  *default" "$dir/broken.out" || { echo "chorus-info $args: a key of it applied"; fail=1; }
done
env -i HOME="$dir/nohome" NCCL_BUFFSIZE=-1 "$bin" --params >"$dir/badvalue.out" 2>&1 && { echo "exit 0 with NCCL_BUFFSIZE=-1"; fail=1; }
grep -q "NCCL_BUFFSIZE='-1' is out of range" "$dir/badvalue.out" || { echo "bad value not named"; cat "$dir/badvalue.out"; fail=1; }

# Names that Chorus's own plugins and tools read are known: no "unknown variable" for them.
env -i HOME="$dir/nohome" CHORUS_PROFILER_DIR="$dir" CHORUS_PROFILER_MASK=0 CHORUS_PROFILER_DIRS=x "$bin" \
  >"$dir/names.out" 2>&1
grep -q "unknown variable CHORUS_PROFILER_DIR ignored" "$dir/names.out" && { echo "CHORUS_PROFILER_DIR called unknown"; fail=1; }
grep -q "unknown variable CHORUS_PROFILER_MASK ignored" "$dir/names.out" && { echo "CHORUS_PROFILER_MASK called unknown"; fail=1; }
grep -q "unknown variable CHORUS_PROFILER_DIRS ignored (closest known name: CHORUS_PROFILER_DIR)" "$dir/names.out" || {
  echo "no suggestion for CHORUS_PROFILER_DIRS"; cat "$dir/names.out"; fail=1; }

if [ $fail != 0 ]; then echo "---- --params output:"; cat "$dir/out"; echo "---- full output:"; cat "$dir/full"; fi
exit $fail
