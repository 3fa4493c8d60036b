/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_versions.h: the one thing a net plugin built on plugins/net_common writes to export every net
 * ABI version from v12 down to v8 (README.md in this folder shows a whole example).
 *
 * The plugin implements the v12 table once, under the fixed name chrNetPluginV12, and exports it with
 * CHR_NET_EXPORT_V12() in the same file:
 *
 *     #include "net_versions.h"
 *     const ncclNet_v12_t chrNetPluginV12 = {.name = "IB", .init = ibInit, ...};
 *     CHR_NET_EXPORT_V12();
 *
 * and links net_common's object library (target chorus_net_common). net_common then exports
 * ncclNetPlugin_v11, _v10, _v9 and _v8, each built from chrNetPluginV12:
 *  - properties are copied into the older layout (v11: no rail/plane ids; v9/v10: no
 *    maxMultiRequestSize; v8: the base fields only; vNIC children clipped to the older array);
 *  - v8..v10 initialise once per process: the first init calls the v12 init with commId 0 and an
 *    undefined traffic class, later ones reuse that context; listen/connect of those versions use it;
 *  - v9 and v8 drop the profiler handles; v8 takes int sizes (negative ones are refused) and clears
 *    *request before irecv (a v8 core never stores the optional-completion hint there);
 *  - v10's connect takes the comm config, which is not passed on (the v12 connect has none);
 *  - optional slots (makeVDevice, setNetAttr, irecvConsumed, getDeviceMr, regMrDmaBuf) stay NULL in
 *    the older tables wherever the v12 table has them NULL.
 * The older tables are filled by a constructor when the library loads, before any dlsym can see them.
 */
#ifndef CHORUS_NET_COMMON_VERSIONS_H_
#define CHORUS_NET_COMMON_VERSIONS_H_

#include "plugin/net.h"

#define CHR_NET_HIDDEN __attribute__((visibility("hidden")))

/* The plugin's v12 implementation (defined by the plugin, hidden: net_common reaches it without going
 * through the dynamic symbol table, so another library's ncclNetPlugin_v12 can never stand in). */
extern CHR_NET_HIDDEN const ncclNet_v12_t chrNetPluginV12;

/* Exports chrNetPluginV12 as ncclNetPlugin_v12. Place after the definition of chrNetPluginV12. */
#define CHR_NET_EXPORT_V12()                                                                         \
  extern __attribute__((visibility("default"), alias("chrNetPluginV12"))) const ncclNet_v12_t \
      ncclNetPlugin_v12

/* Most buffers one grouped irecv may carry through the v8 table (its int sizes are widened on the
 * stack). A plugin whose maxRecvs is larger gets an error from v8 irecv beyond this count. */
#define CHR_NET_COMMON_MAX_RECVS 64

#endif /* CHORUS_NET_COMMON_VERSIONS_H_ */
