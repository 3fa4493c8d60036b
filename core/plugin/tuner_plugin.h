/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_plugin.h: the core's only door to tuner plugins.
 *
 * A tuner library is loaded once per process (NCCL_TUNER_PLUGIN: a name, a path, or "none"; unset:
 * libnccl-tuner.so, and when that does not open, the net plugin library the communicator uses) and
 * stays loaded; each communicator that uses it holds a reference and gets its own context from the
 * plugin's init. Whatever ABI version the library exports (v2 .. v6), the core sees the v6 interface:
 * older tables are wrapped by the adapters in tuner_v2.c .. tuner_v5.c. The calls below check their
 * arguments, handle the optional getChunkSize slot and trace (NCCL_DEBUG=TRACE, subsystem TUNING).
 * An error a plugin returns from getCollInfo or getChunkSize is passed on with the thread's last
 * error naming the plugin and call, but not logged: the caller (the planner) decides whether it is
 * a fallback or fatal, and logs that.
 *
 * Threading: chrTunerOpen/chrTunerClose are thread-safe. Calls on one struct chrTuner must come from
 * one thread at a time; different communicators may call concurrently.
 */
#ifndef CHORUS_TUNER_PLUGIN_H_
#define CHORUS_TUNER_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "plugin/tuner.h"

struct chrNet;
struct chrTunerLib; /* one loaded tuner library (private to core/plugin) */

/* A tuner plugin initialised for one communicator. */
struct chrTuner {
  /* The v6 table the wrappers call: the plugin's own, or its adapter's (whose init slot is NULL:
   * the adapter's init needs the library, see tuner_adapter.h). Always go through the wrappers. */
  const ncclTuner_v6_t* table;
  void* ctx;             /* what init returned for this communicator */
  int version;           /* ABI version the library exports: 2 .. 6 */
  const char* name;      /* the plugin's name (its table's name field) */
  const char* path;      /* the file that was opened */
  uint64_t commHash;
  struct chrTunerLib* lib;
  unsigned refusedWarned; /* refusals already WARNed for this communicator (plan/tuner_hook.c) */
};

/* What a communicator tells the tuner's init. */
struct chrTunerCommInfo {
  uint64_t commHash;                  /* handed to v5+ init as commId */
  size_t nRanks, nNodes;
  ncclNvlDomainInfo_v6_t nvlDomain;   /* v5+ */
  ncclTunerConstants_v6_t constants;  /* v5+; the plugin may edit this copy during init */
  const struct chrNet* net;           /* the communicator's net plugin, NULL when it uses none: its
                                         library is searched when nothing else provides a tuner */
};

/* Find and initialise the tuner for a communicator. *out = NULL (and ncclSuccess) when there is none
 * to use: NCCL_TUNER_PLUGIN=none, nothing found (INFO), or a tuner that was asked for and cannot be
 * used (one WARN with the file tried and the exact reason: dlerror text, no ncclTunerPlugin_v6..v2
 * symbol, a NULL mandatory slot, init failing). With CHORUS_PLUGIN_STRICT=1 those failures are
 * errors of this call (ncclInvalidUsage). info->constants may be changed by the plugin. Free with
 * chrTunerClose. */
ncclResult_t chrTunerOpen(struct chrTunerCommInfo* info, struct chrTuner** out);

/* Finalize the communicator's context, drop its reference to the library and free tuner. NULL is
 * accepted. The library stays loaded for the life of the process. */
ncclResult_t chrTunerClose(struct chrTuner* tuner);

/* The plugin's getCollInfo on a cost table float[numAlgo][numProto] (NCCL_NUM_ALGORITHMS x
 * NCCL_NUM_PROTOCOLS, microseconds, NCCL_ALGO_PROTO_IGNORE = cannot run). *nChannels is set to 0
 * before the call. A plugin error is returned unlogged (see the top of this file). */
ncclResult_t chrTunerGetCollInfo(struct chrTuner* tuner, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                 float* table, int numAlgo, int numProto, int regBuff, int* nChannels);

/* The plugin's getChunkSize (v6) for the chosen algo/proto/nChannels. *chunkSize holds the core's step
 * size in bytes and may be rewritten; a plugin without the slot leaves it unchanged. */
ncclResult_t chrTunerGetChunkSize(struct chrTuner* tuner, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                                  int nChannels, size_t* chunkSize);

/* Communicators holding a context of the library tuner came from (for tests and chorus-info). */
int chrTunerLibRefs(const struct chrTuner* tuner);

/* For chorus-info: NCCL_TUNER_PLUGIN, the library found or why none is usable, its name and version
 * (loads it, calls no init). */
void chrTunerDescribe(FILE* out);

#endif /* CHORUS_TUNER_PLUGIN_H_ */
