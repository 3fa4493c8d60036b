/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_staging.h: the proxy's copies between a GPU end's slots and host memory, for a net plugin that
 * refuses the GPU memory (dev_net.h, chrDevNetCopier), through the CUDA driver.
 */
#ifndef CHORUS_CUDA_NET_STAGING_H_
#define CHORUS_CUDA_NET_STAGING_H_

#include "transport/dev_net.h"

/* A copier for GPU `cudaDev` (the runtime's ordinal). Nothing is asked of the driver until the first
 * copy; each proxy thread then copies on a non-blocking stream of its own in the device's primary
 * context, so a copy never waits behind the rank's kernels (which may be waiting for it). */
ncclResult_t chrNetStagingCopier(int cudaDev, struct chrDevNetCopier* out);

#endif /* CHORUS_CUDA_NET_STAGING_H_ */
