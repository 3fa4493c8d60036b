/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * versions.c: the socket plugin's v12 table. Everything is implemented once, with the v12 signatures;
 * plugins/net_common builds and exports ncclNetPlugin_v11 .. _v8 from this table (property copies,
 * per-process init for v8..v10, no profiler handles for v9/v8, int sizes for v8).
 */
#include "net_versions.h"
#include "socket_plugin.h"

const ncclNet_v12_t chrNetPluginV12 = {
    .name = "Socket",
    .init = nsInit,
    .devices = nsDevices,
    .getProperties = nsGetProperties,
    .listen = nsListen,
    .connect = nsConnect,
    .accept = nsAccept,
    .regMr = nsRegMr,
    .regMrDmaBuf = nsRegMrDmaBuf,
    .deregMr = nsDeregMr,
    .isend = nsIsend,
    .irecv = nsIrecv,
    .iflush = nsIflush,
    .test = nsTest,
    .closeSend = nsCloseSend,
    .closeRecv = nsCloseRecv,
    .closeListen = nsCloseListen,
    .getDeviceMr = nsGetDeviceMr,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = nsFinalize,
    .setNetAttr = NULL,
};
CHR_NET_EXPORT_V12();
