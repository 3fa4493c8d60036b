/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api.h: how a public function is defined.
 *
 *   NCCL_API(ncclResult_t, ncclGetVersion, int* version) { ... }
 *
 * defines the implementation as pncclGetVersion and makes ncclGetVersion a weak alias of it, so a
 * PMPI-style interposer can define a strong ncclGetVersion and forward to pncclGetVersion.
 * The version script (core/libnccl.map) exports only nccl* and pnccl*.
 */
#ifndef CHORUS_API_H_
#define CHORUS_API_H_

#include "nccl.h"

#define CHR_EXPORT __attribute__((visibility("default")))

#define NCCL_API(ret, func, ...)                                                  \
  CHR_EXPORT ret p##func(__VA_ARGS__);                                            \
  extern __typeof(p##func) func __attribute__((weak, alias("p" #func))) CHR_EXPORT; \
  CHR_EXPORT ret p##func(__VA_ARGS__)

#endif /* CHORUS_API_H_ */
