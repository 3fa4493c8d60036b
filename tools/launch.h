/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch.h: run N ranks of a program, each in its own process, on one machine; or run this process
 * as one rank of a job started by someone else (a shell loop, mpirun).
 *
 * Uses only the public NCCL API (ncclGetUniqueId), so tools built on it also run on NVIDIA's NCCL.
 */
#ifndef CHORUS_TOOLS_LAUNCH_H_
#define CHORUS_TOOLS_LAUNCH_H_

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a rank runs. Returns 0 on success; any other value is the process's exit status. */
typedef int (*chrRankMain_t)(int rank, int nranks, const ncclUniqueId* id, void* arg);

/*
 * Forks nranks children (rank r gets NCCL_HOSTID="host<r % nhosts>" when nhosts > 1, so that the
 * library treats them as separate hosts), hands each the unique id, and waits for all of them.
 * The children are forked before this process calls into the library, so each child's environment
 * is in place before the library reads its configuration; the unique id (and with it the bootstrap
 * root, which lives in this process) is created afterwards and sent to each child through a pipe.
 * A child that loses its parent is killed (PR_SET_PDEATHSIG).
 *
 * timeoutSec <= 0 means no deadline. If a child exits non-zero, dies from a signal, or the deadline
 * passes, the others are killed with SIGKILL, each failure is printed on stderr ("rank 2 (pid 123):
 * killed by signal 11 (Segmentation fault)"), and the return value is non-zero. Returns 0 when every
 * rank returned 0. Children end with _exit(rankMain's value), after flushing stdio.
 */
int chrLaunchRanks(int nranks, int nhosts, int timeoutSec, chrRankMain_t rankMain, void* arg);

/*
 * Environment-driven mode, for ranks started by someone else:
 *   CHORUS_RANK + CHORUS_NRANKS            (any launcher, e.g. a shell loop or ssh)
 *   OMPI_COMM_WORLD_RANK + _SIZE           (when run under Open MPI's mpirun)
 * NCCL_COMM_ID=host:port must be set when nranks > 1: every rank derives the same unique id from it
 * (ncclGetUniqueId), and rank 0 starts the bootstrap root inside ncclCommInitRank.
 * Returns 1 and sets *rank and *nranks when such variables are present, 0 when they are not, and -1
 * (after printing why) when they are present but unusable.
 */
int chrLaunchEnvRank(int* rank, int* nranks);

/* Runs rankMain once, in this process, as the rank the environment describes (see above).
 * Returns rankMain's value, or non-zero (after printing why) when the environment is unusable. */
int chrLaunchFromEnv(chrRankMain_t rankMain, void* arg);

/*
 * What a test program's main calls: when the environment describes a rank (chrLaunchEnvRank), run
 * that one rank here (the job was started by someone else, e.g. one process per network namespace);
 * otherwise fork nranks ranks as chrLaunchRanks does. In the environment mode the environment's rank
 * count must equal nranks (the program computed its references for that many), else it fails.
 */
int chrLaunchRanksOrEnv(int nranks, int nhosts, int timeoutSec, chrRankMain_t rankMain, void* arg);

/* Small helpers the launcher uses, shared with tests that fork their own ranks. */
double chrLaunchNowSec(void);                               /* CLOCK_MONOTONIC seconds */
void chrLaunchSleepMs(int ms);                              /* resumes after signals */
int chrLaunchReadFull(int fd, void* buf, size_t len);       /* 0, or -1 on error / EOF */
int chrLaunchFreeLoopbackPort(void);                         /* a loopback port nobody listens on now, or -1 */

/* Runs nranks ranks as threads of this process (one thread each, rank r in thread r), sharing one
 * unique id: how ranks that share one GPU run at full speed (their kernels run side by side; ranks
 * in several processes on one GPU are time-sliced by the driver). Returns 0 when every rank returned
 * 0, else the first non-zero value (by rank). There is no deadline: a stuck rank stays stuck. */
int chrLaunchThreads(int nranks, chrRankMain_t rankMain, void* arg);

/* With chrLaunchThreads: waits until every rank thread of the process has called it (a rank that
 * returns non-zero ends the whole process, so nobody waits for it forever). Otherwise: returns at
 * once. */
void chrLaunchLocalBarrier(void);

/* Runs rankMain as the only rank of a 1-rank job in this process. */
int chrLaunchSingle(chrRankMain_t rankMain, void* arg);

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_TOOLS_LAUNCH_H_ */
