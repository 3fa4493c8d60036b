#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# with_small_shm.sh SIZE PROGRAM [ARGS...]: run PROGRAM in a mount namespace of its own whose /dev/shm
# is a tmpfs of SIZE (e.g. 4m), as a container's small /dev/shm is. Exits 77 (skipped) where a mount
# namespace cannot be made (not root, no CAP_SYS_ADMIN).
size=$1
shift
unshare -m sh -c "mount -t tmpfs -o size=$size tmpfs /dev/shm" 2>/dev/null || {
  echo "with_small_shm.sh: cannot make a mount namespace here; skipped"
  exit 77
}
exec unshare -m sh -c 'size=$1; shift; mount -t tmpfs -o size="$size" tmpfs /dev/shm && exec "$@"' sh "$size" "$@"
