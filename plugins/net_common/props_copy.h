/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * props_copy.h: ncclNetProperties_v12_t and vNIC descriptions converted to and from the older layouts.
 * Plain functions (no plugin state), used by versions.c and tested on their own.
 */
#ifndef CHORUS_NET_COMMON_PROPS_COPY_H_
#define CHORUS_NET_COMMON_PROPS_COPY_H_

#include "plugin/net.h"

#define CHR_NC_HIDDEN __attribute__((visibility("hidden")))

/* Older property layouts, every field written (fields the old layout lacks are dropped; vNIC children
 * beyond the older array's 4 are dropped and ndevs clipped to 4). */
CHR_NC_HIDDEN void chrNetPropsToV11(const ncclNetProperties_v12_t* src, ncclNetProperties_v11_t* dst);
CHR_NC_HIDDEN void chrNetPropsToV10(const ncclNetProperties_v12_t* src, ncclNetProperties_v10_t* dst);
CHR_NC_HIDDEN void chrNetPropsToV9(const ncclNetProperties_v12_t* src, ncclNetProperties_v9_t* dst);
CHR_NC_HIDDEN void chrNetPropsToV8(const ncclNetProperties_v12_t* src, ncclNetProperties_v8_t* dst);

/* A vNIC request of the v9..v11 layout (4 children) as the v12 layout. Returns 0, or -1 when ndevs is
 * outside 1..4 (the request is then not converted). */
CHR_NC_HIDDEN int chrNetVPropsFromV11(const ncclNetVDeviceProps_v11_t* src, ncclNetVDeviceProps_v12_t* dst);
CHR_NC_HIDDEN int chrNetVPropsFromV10(const ncclNetVDeviceProps_v10_t* src, ncclNetVDeviceProps_v12_t* dst);
CHR_NC_HIDDEN int chrNetVPropsFromV9(const ncclNetVDeviceProps_v9_t* src, ncclNetVDeviceProps_v12_t* dst);

#endif /* CHORUS_NET_COMMON_PROPS_COPY_H_ */
