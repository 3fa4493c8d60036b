/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graph_works.h: storage for the works of a launch captured into a CUDA graph when they do not fit
 * in the kernel arguments. A graph keeps a launch's arguments, not what a rank's reusable work slots
 * hold later, so such a launch gets a buffer of its own that the graph owns (a CUDA user object) and
 * gives back when the graph and every instantiation of it are destroyed.
 */
#ifndef CHORUS_DEVICE_GRAPH_WORKS_H_
#define CHORUS_DEVICE_GRAPH_WORKS_H_

#include <cuda_runtime.h>
#include "hostdev/work.h"
#include "nccl.h"

/* A host-mapped buffer for `count` works, owned from now on by the graph that `stream` is being
 * captured into: *host is where to write them, *dev the address the kernel reads. Buffers the
 * graphs gave back are reused before new ones are allocated (with the thread's capture mode relaxed
 * for the allocation, as an allocation during a global-mode capture would end the capture). */
ncclResult_t chrDevGraphWorks(int rank, cudaStream_t stream, int count, struct chrWork** host, struct chrWork** dev);

/* Frees the buffers graphs gave back (this thread's capture mode relaxed around it). Called when a
 * rank is destroyed. */
void chrDevGraphWorksTrim(void);

#endif /* CHORUS_DEVICE_GRAPH_WORKS_H_ */
