/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testnet_gdr_stats.h: what the "gdrtest" net plugin (testnet_gdr.c) counts, per process. A test in
 * the same process reads it through the exported function testNetGdrStats (dlsym, type
 * testNetGdrStatsFn); other processes read the line the plugin appends to the file named by
 * TESTNET_GDR_STATS (see testnet_gdr.c).
 */
#ifndef CHORUS_TESTNET_GDR_STATS_H_
#define CHORUS_TESTNET_GDR_STATS_H_

struct testNetGdrStats {
  long long regHost;        /* regMr of NCCL_PTR_HOST that succeeded */
  long long regCuda;        /* regMr of NCCL_PTR_CUDA that succeeded (device memory, mirrored) */
  long long regRefused;     /* regMr refused: not device memory, no CUDA driver, bad type, dma-buf,
                               TESTNET_GDR_FAULT=refuse-cuda */
  long long sendHostBytes;  /* bytes of completed sends from host regions */
  long long sendCudaBytes;  /* bytes of completed sends from GPU regions */
  long long recvHostBytes;  /* bytes of completed receives into host regions */
  long long recvCudaBytes;  /* bytes of completed receives into GPU regions */
  long long flushes;        /* iflush calls */
  long long regionErrors;   /* isend/irecv/iflush given a buffer outside its handle's region */
};

typedef struct testNetGdrStats (*testNetGdrStatsFn)(void);

#endif /* CHORUS_TESTNET_GDR_STATS_H_ */
