/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_sim.h: the reference. Runs the step programs of every rank's works (hostdev/work.h) on the CPU,
 * with the host executor's arithmetic (core/exec/reduce.c, chrReduce / chrReducePost, in the order
 * core/exec/exec.c applies them) and connections of CHR_DEV_STEPS slots, so the GPU result of a plan
 * must equal the simulation's bit for bit. Works address device buffers; a table of regions maps
 * each device address to the host copy the simulation updates.
 */
#ifndef CHORUS_TESTS_GPU_SIM_H_
#define CHORUS_TESTS_GPU_SIM_H_

#include <stddef.h>
#include <stdint.h>
#include "hostdev/dev_api.h"
#include "hostdev/work.h"

struct chrSimRegion {
  uint64_t dev;   /* address the works use */
  char* host;     /* the simulation's copy */
  size_t bytes;
};

struct chrSimRank {
  const struct chrWork* works; /* channel after channel */
  const int* nWorks;           /* per channel */
  int nChannels;
  /* The kernel each work runs in (as works), in launch order; NULL: one kernel. A rank's kernels run
   * one after the other on its stream: no channel starts a work of launch k + 1 before every
   * channel of the rank has finished launch k. */
  const int* launch;
};

/* Runs every rank's plan to completion. Engine sends and receives (CHR_WORK_ENGINE on a P2P work)
 * take no step on their channel: once every channel has finished, the k-th engine send of rank r to
 * rank p of a transfer class (links[0].conn, CHR_WORK_CLASSES of them) is copied into the k-th engine
 * receive of p from r of that class (gpu_sim.c runEngineP2p). Returns 0, or -1 with a message in err
 * (a deadlock, a size disagreement between the ends of a link or of an engine transfer, engine sends
 * and receives of a pair and class that differ in number, a class out of range, an address outside
 * every region). */
int chrSimRun(int nRanks, const int* ringOrder, const struct chrSimRank* ranks, const struct chrSimRegion* regions,
              int nRegions, char* err, size_t errLen);

/* A launch (hostdev/dev_api.h) as one rank of the simulation takes it: the copy engine's copies and
 * transfers lead channel 0 (a transfer takes no step there, a copy runs at once: both run apart from
 * the kernels' order), then the kernels' works. *flat (malloc'd, the caller frees it) and nWorks
 * (CHR_DEV_MAX_CHANNELS entries); returns the channels to simulate (at least 1), -1 out of memory. */
int chrSimFlattenLaunch(const struct chrDevLaunch* launch, struct chrWork** flat, int* nWorks);

#endif /* CHORUS_TESTS_GPU_SIM_H_ */
