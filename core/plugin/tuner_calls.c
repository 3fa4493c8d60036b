/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tuner_calls.c: the thin wrappers of tuner_plugin.h, the only place the core calls into a tuner
 * plugin after chrTunerOpen. Each one checks its arguments, handles an optional slot that is NULL,
 * calls the v6 table (the plugin's own or its adapter's) and traces the call. An error the plugin
 * returns is put into the thread's last-error text (naming the plugin, the call and the code) and
 * passed on WITHOUT a log line: the planner (plan/tuner_hook.c) decides whether it falls back to its
 * own choice (one WARN per communicator and collective) or, with CHORUS_PLUGIN_STRICT=1, fails the
 * call, and says so once. Whether a successful answer is usable is the planner's business too.
 */
#include <stdint.h>

#include "log/check.h"
#include "log/log.h"
#include "plugin/tuner_adapter.h"
#include "plugin/tuner_plugin.h"

static ncclResult_t pluginFailed(const struct chrTuner* tuner, const char* call, ncclResult_t res) {
  if (chrTunerAdaptTakeReported()) return res; /* an adapter refused the call and said why */
  chrSetLastError("tuner plugin %s (ABI v%d): %s returned error %d (%s)", tuner->name, tuner->version, call, (int)res,
                  chrResultName(res));
  TRACE(NCCL_TUNING, "tuner %s: %s returned %d", tuner->name, call, (int)res);
  return res;
}

ncclResult_t chrTunerGetCollInfo(struct chrTuner* tuner, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                 float* table, int numAlgo, int numProto, int regBuff, int* nChannels) {
  if (tuner == NULL || table == NULL || nChannels == NULL)
    return chrFail(ncclInternalError, "chrTunerGetCollInfo: NULL %s",
                   tuner == NULL ? "tuner" : table == NULL ? "cost table" : "nChannels");
  /* The plugin indexes the table as [NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] whatever it is told. */
  if (numAlgo != NCCL_NUM_ALGORITHMS || numProto != NCCL_NUM_PROTOCOLS)
    return chrFail(ncclInternalError, "chrTunerGetCollInfo: cost table of %dx%d, the ABI says %dx%d", numAlgo,
                   numProto, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS);
  if ((int)collType < 0 || (int)collType >= NCCL_NUM_FUNCTIONS)
    return chrFail(ncclInternalError, "chrTunerGetCollInfo: collective %d does not go through a tuner", (int)collType);
  *nChannels = 0;
  ncclResult_t res = tuner->table->getCollInfo(tuner->ctx, collType, nBytes, numPipeOps, (float**)table, numAlgo,
                                               numProto, regBuff, nChannels);
  if (res != ncclSuccess) return pluginFailed(tuner, "getCollInfo", res);
  TRACE(NCCL_TUNING, "tuner %s: getCollInfo(coll %d, %zu bytes, %d ops, regBuff %d) -> nChannels %d", tuner->name,
        (int)collType, nBytes, numPipeOps, regBuff, *nChannels);
  return ncclSuccess;
}

ncclResult_t chrTunerGetChunkSize(struct chrTuner* tuner, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                                  int nChannels, size_t* chunkSize) {
  if (tuner == NULL || chunkSize == NULL)
    return chrFail(ncclInternalError, "chrTunerGetChunkSize: NULL %s", tuner == NULL ? "tuner" : "chunkSize");
  if (tuner->table->getChunkSize == NULL) return ncclSuccess; /* optional; before v6 it does not exist */
  size_t in = *chunkSize;
  ncclResult_t res = tuner->table->getChunkSize(tuner->ctx, collType, nBytes, algo, proto, nChannels, chunkSize);
  if (res != ncclSuccess) {
    *chunkSize = in;
    return pluginFailed(tuner, "getChunkSize", res);
  }
  TRACE(NCCL_TUNING, "tuner %s: getChunkSize(coll %d, %zu bytes, algo %d proto %d, %d channels) %zu -> %zu",
        tuner->name, (int)collType, nBytes, algo, proto, nChannels, in, *chunkSize);
  return ncclSuccess;
}
