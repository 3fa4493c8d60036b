/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_net_socket.h: the event descriptor a socket net plugin hands to the profiler callback,
 * layout version 1. FROZEN.
 *
 * pluginId = NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER, extData = a
 * ncclProfilerNetSockDescr_v1_t owned by the net plugin (valid until the matching stop).
 */
#ifndef CHORUS_PLUGIN_PROFILER_NET_SOCKET_H_
#define CHORUS_PLUGIN_PROFILER_NET_SOCKET_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/profiler_common.h"

#define NCCL_PROFILER_NET_SOCKET_VER 1

/* Event kinds of this layout (the descriptor's `type`). */
enum {
  ncclProfileSocket = (1 << 0), /* one transfer on one socket */
};

typedef struct {
  uint8_t type; /* ncclProfileSocket */
  union {
    struct {
      int fd;        /* the socket */
      int op;        /* plugin-defined: which direction / operation */
      size_t length; /* bytes moved */
    } sock;
  };
} ncclProfilerNetSockDescr_v1_t;

#endif /* CHORUS_PLUGIN_PROFILER_NET_SOCKET_H_ */
