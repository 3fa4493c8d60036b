/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer_info.h: what each rank tells the others at init, gathered by the bootstrap's rendezvous
 * (chrBootstrapInit's info blob; comm/init.c fills and checks it).
 *
 * Plain data, here below the communicator and the transports, so that both read a peer's host and
 * GPU without one including the other.
 */
#ifndef CHORUS_BOOTSTRAP_PEER_INFO_H_
#define CHORUS_BOOTSTRAP_PEER_INFO_H_

#include <stdint.h>
#include "util/cpu_mask.h"

#define CHR_HOSTID_LEN 64

/* Fixed size, no pointers: it crosses process boundaries as bytes. */
struct chrPeerInfo {
  uint32_t magic;
  int32_t rank;
  uint64_t hostHash;           /* from NCCL_HOSTID, else the machine's host identity */
  char hostId[CHR_HOSTID_LEN]; /* printable form, for logs */
  int64_t pid;
  int32_t cudaDev;             /* -1: host-only */
  int32_t sms;                 /* streaming multiprocessors of cudaDev; 0: unknown */
  int64_t busId;
  struct chrCpuMask cpus;      /* the CPUs the rank's init thread may run on */
};

#endif /* CHORUS_BOOTSTRAP_PEER_INFO_H_ */
