/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_net_ib.h: the event descriptor an InfiniBand (verbs) net plugin hands to the profiler
 * callback, layout version 1. FROZEN.
 *
 * The net plugin calls the ncclProfilerCallback_t it got at init with
 *   pluginId = NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER
 *   extData  = a ncclProfilerNetIbDescr_v1_t it owns (valid until the matching stop)
 * and the profiler plugin, seeing that id in eDescr->netPlugin.id, reads extData with this layout.
 */
#ifndef CHORUS_PLUGIN_PROFILER_NET_IB_H_
#define CHORUS_PLUGIN_PROFILER_NET_IB_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/profiler_common.h"

#define NCCL_PROFILER_NET_IB_VER 1

/* Event kinds of this layout (the descriptor's `type`). */
enum {
  ncclProfileQp = (1 << 0), /* one work request posted on one queue pair, until its completion */
};

typedef struct {
  uint8_t type; /* ncclProfileQp */
  union {
    struct {
      int device;     /* the plugin's device index */
      uint64_t wr_id; /* work request id */
      int opcode;     /* verbs opcode of the work request (IBV_WR_*) */
      int qpNum;      /* queue pair number */
      size_t length;  /* bytes the work request moves */
    } qp;
  };
} ncclProfilerNetIbDescr_v1_t;

#endif /* CHORUS_PLUGIN_PROFILER_NET_IB_H_ */
