/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * versions.c: the IB plugin's v12 table. plugins/net_common builds and exports ncclNetPlugin_v11 ..
 * _v8 from it (property copies, per-process init for v8..v10, int sizes for v8).
 */
#include "ib_plugin.h"
#include "net_versions.h"

const ncclNet_v12_t chrNetPluginV12 = {
    .name = "IB",
    .init = ibInit,
    .devices = ibDevices,
    .getProperties = ibGetProperties,
    .listen = ibListen,
    .connect = ibConnect,
    .accept = ibAccept,
    .regMr = ibRegMr,
    .regMrDmaBuf = ibRegMrDmaBuf,
    .deregMr = ibDeregMr,
    .isend = ibIsend,
    .irecv = ibIrecv,
    .iflush = ibIflush,
    .test = ibTest,
    .closeSend = ibCloseSend,
    .closeRecv = ibCloseRecv,
    .closeListen = ibCloseListen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = ibFinalize,
    .setNetAttr = NULL,
};
CHR_NET_EXPORT_V12();
