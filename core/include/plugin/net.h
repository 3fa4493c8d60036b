/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/net.h: every net plugin ABI version, and the unversioned names the core uses internally.
 * The core speaks only the newest version (v12); older plugins are wrapped by adapters
 * (core/plugin/net_v8.c .. net_v11.c) that present the v12 table.
 */
#ifndef CHORUS_PLUGIN_NET_H_
#define CHORUS_PLUGIN_NET_H_

#include "plugin/net_common.h"
#include "plugin/net_v6.h" /* v6 and v7: types only, for plugins that also export them; never loaded */
#include "plugin/net_v7.h"
#include "plugin/net_v8.h"
#include "plugin/net_v9.h"
#include "plugin/net_v10.h"
#include "plugin/net_v11.h"
#include "plugin/net_v12.h"

#define NCCL_NET_MAX_DEVS_PER_NIC NCCL_NET_MAX_DEVS_PER_NIC_V12

typedef ncclNet_v12_t ncclNet_t;
typedef ncclCollNet_v12_t ncclCollNet_t;
typedef ncclNetProperties_v12_t ncclNetProperties_t;
typedef ncclNetVDeviceProps_v12_t ncclNetVDeviceProps_t;
typedef ncclNetCommConfig_v12_t ncclNetCommConfig_t;
typedef ncclNetCommAttr_v12_t ncclNetCommAttr_t;
typedef ncclNetAttr_v12_t ncclNetAttr_t;
typedef ncclNetDeviceHandle_v12_t ncclNetDeviceHandle_t;
typedef ncclNetSGE_v12_t ncclNetSGE_t;

/* Names of the objects a plugin built against these headers exports (the newest version), so that a
 * plugin can write `const ncclNet_t NCCL_NET_PLUGIN_SYMBOL = {...};`. Not strings: identifiers. */
#define NCCL_NET_PLUGIN_SYMBOL ncclNetPlugin_v12
#define NCCL_COLLNET_PLUGIN_SYMBOL ncclCollNetPlugin_v12

#endif /* CHORUS_PLUGIN_NET_H_ */
