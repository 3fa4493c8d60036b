/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_file.c: the topology file at communicator init (topo_file.h).
 *
 * Read on every rank (each rank's init must fail on a bad file, not only the dumping one's); the
 * model is freed again, since no decision uses it yet. Without NCCL_TOPO_FILE there is nothing to dump:
 * the dump is the file's model, not a discovered one, and a dump asked for then gets one WARN per
 * process saying so, rather than a file that would pass for a detected topology.
 */
#include <stdatomic.h>

#include "comm/topo_file.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "topo/topo_model.h"

ncclResult_t chrCommTopoFile(struct ncclComm* comm) {
  const char* path = chrParamStr(CHR_P_TOPO_FILE);
  const char* dump = chrParamStr(CHR_P_TOPO_DUMP_FILE);
  int dumper = dump[0] && comm->rank == chrParamInt(CHR_P_TOPO_DUMP_FILE_RANK);
  if (!path[0]) {
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (dumper && !atomic_flag_test_and_set(&warned))
      WARN("NCCL_TOPO_DUMP_FILE=%s: nothing written: Chorus does not discover the topology yet, it only reads "
           "NCCL_TOPO_FILE", dump);
    return ncclSuccess;
  }
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  CHECK(chrXmlLoad(path, &xml));
  CHECK(chrTopoBuild(xml, NULL, &sys)); /* owns xml from here, also on failure */
  INFO(NCCL_INIT | NCCL_GRAPH, "NCCL_TOPO_FILE %s: %d CPUs, %d GPUs, %d NETs (read and checked; not used yet)", path,
       sys->count[CHR_TOPO_CPU], sys->count[CHR_TOPO_GPU], sys->count[CHR_TOPO_NET]);
  ncclResult_t res = dumper ? chrXmlWriteFile(sys->xml, dump) : ncclSuccess;
  if (dumper && res == ncclSuccess) INFO(NCCL_INIT | NCCL_GRAPH, "topology written to %s", dump);
  chrTopoFree(sys);
  return res;
}
