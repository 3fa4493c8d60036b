/* SPDX-License-Identifier: BSD-3-Clause */
/* peermem.c: is a peer-memory driver loaded (ib_logic.h)? A file test only, so it runs anywhere. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "ib_logic.h"

/* nv_peer_mem (Mellanox's module, two flavours) and nvidia_peermem (NVIDIA's driver, R470 on). */
static const char* const peerMemFiles[] = {
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
};

int ibPeerMemFind(const char* root, char* which, size_t whichLen) {
  if (which && whichLen) which[0] = '\0';
  for (size_t i = 0; i < sizeof(peerMemFiles) / sizeof(peerMemFiles[0]); i++) {
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s%s", root ? root : "", peerMemFiles[i]);
    if (n < 0 || (size_t)n >= sizeof(path) || access(path, F_OK) != 0) continue;
    if (which && whichLen) snprintf(which, whichLen, "%s", path);
    return 1;
  }
  return 0;
}
