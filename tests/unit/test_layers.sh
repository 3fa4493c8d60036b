#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_layers.sh <source dir>: the layering check (tools/ci/check_layers.py) passes on the tree, and,
# on a small fake tree in a temporary folder, fails on a new upward include, on an include a plugin
# may not see, on an entry of the allow-list that no longer occurs, on an include found nowhere and
# on a folder without a rank. Exit 77 (skipped) without python3.
set -u
src=$1
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
check="python3 $src/tools/ci/check_layers.py"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# The repository: every violation is in the allow-list, every entry of the list still occurs.
$check --root "$src" || fail "the tree breaks the layer order (see above)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core/log" "$tmp/core/config" "$tmp/core/include/plugin" "$tmp/plugins/net_x" "$tmp/tools/ci"
printf '#include "plugin/common.h"\n' >"$tmp/core/log/log.h"
printf '/* ABI */\n' >"$tmp/core/include/plugin/common.h"
printf '#include "log/log.h"\n#include <stdio.h>\n' >"$tmp/core/config/param.h"
printf '#include "plugin/common.h"\n' >"$tmp/plugins/net_x/net_x.c"
debt=$tmp/tools/ci/layers_debt.txt
: >"$debt"

# expect <status> <pattern> <what>: run the check on the fake tree; its status and output must match.
expect() {
  out=$($check --root "$tmp" 2>&1)
  status=$?
  if [ "$status" != "$1" ] || ! printf '%s\n' "$out" | grep -q -- "$2"; then
    fail "$3: status $status (expected $1), output:"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
}

expect 0 "0 violations" "downward includes only"

# A new upward include (log is below config), reported with file, line and the include's text.
printf '#include "plugin/common.h"\n#include "config/param.h"\n' >"$tmp/core/log/log.h"
expect 1 'core/log/log.h:2: #include "config/param.h": goes up: core/log' "a new upward include"
expect 1 "circle of 2 folders: core/log, core/config" "the circle it makes"

# Allowed once it is in the list; --write-debt writes the list.
$check --root "$tmp" --write-debt >/dev/null
grep -qx 'core/log/log.h: config/param.h' "$debt" || fail "--write-debt did not list the violation"
expect 0 "1 violations (1 in the debt list), 0 new, 0 stale" "a violation in the list"

# A plugin sees only the ABI headers and the support library.
printf '#include "plugin/common.h"\n#include "log/log.h"\n' >"$tmp/plugins/net_x/net_x.c"
expect 1 'plugins/net_x/net_x.c:2: #include "log/log.h": a plugin sees only' "a plugin including core/log"
printf '#include "plugin/common.h"\n' >"$tmp/plugins/net_x/net_x.c"

# A fixed violation whose entry stays in the list: the list must shrink with the code.
printf '#include "plugin/common.h"\n' >"$tmp/core/log/log.h"
expect 1 "'core/log/log.h: config/param.h' no longer occurs" "a stale entry of the list"

# An include the build's search paths (as the script knows them) do not reach.
printf '#include "plugin/common.h"\n#include "nowhere.h"\n' >"$tmp/core/log/log.h"
expect 1 'core/log/log.h:2: #include "nowhere.h": found nowhere' "an include found nowhere"
printf '#include "plugin/common.h"\n' >"$tmp/core/log/log.h"

# A folder of core/ with sources that the table does not know.
$check --root "$tmp" --write-debt >/dev/null
mkdir -p "$tmp/core/newjob"
printf '#include "log/log.h"\n' >"$tmp/core/newjob/new.c"
expect 1 "core/newjob has no rank" "a folder without a rank"

[ $failed = 0 ] && echo "test_layers: all cases passed"
exit $failed
