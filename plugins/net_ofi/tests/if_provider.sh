#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# if_provider.sh: run a command only where the libfabric provider of the environment can be opened.
#
#   if_provider.sh TEST_NET_OFI PLUGIN -- COMMAND [ARGS...]
#
# TEST_NET_OFI PLUGIN probe loads the plugin and inits it; when the provider cannot be opened it
# prints why and exits 77, which this script passes on (ctest: skipped). Otherwise COMMAND runs and
# its exit status is the result.
set -u
[ $# -ge 4 ] && [ "$3" = "--" ] || { echo "usage: if_provider.sh TEST_NET_OFI PLUGIN -- COMMAND..." >&2; exit 2; }
probe=$1
plugin=$2
shift 3
"$probe" "$plugin" probe || exit $?
exec "$@"
