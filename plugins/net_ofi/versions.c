/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * versions.c: the exported tables. The plugin is implemented once, as the v12 table below;
 * plugins/net_common builds ncclNetPlugin_v11 .. _v8 from it (property layouts, per-process init of
 * v8..v10, no profiler handles before v10, int sizes in v8: its README.md says how).
 */
#include "net_versions.h"
#include "ofi_plugin.h"

const ncclNet_v12_t chrNetPluginV12 = {
    .name = "OFI",
    .init = ofiInit,
    .devices = ofiDevices,
    .getProperties = ofiGetProperties,
    .listen = ofiListen,
    .connect = ofiConnect,
    .accept = ofiAccept,
    .regMr = ofiRegMr,
    .regMrDmaBuf = ofiRegMrDmaBuf,
    .deregMr = ofiDeregMr,
    .isend = ofiIsend,
    .irecv = ofiIrecv,
    .iflush = ofiIflush,
    .test = ofiTest,
    .closeSend = ofiCloseSend,
    .closeRecv = ofiCloseRecv,
    .closeListen = ofiCloseListen,
    .getDeviceMr = ofiGetDeviceMr,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = ofiFinalize,
    .setNetAttr = NULL,
};
CHR_NET_EXPORT_V12();
