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

/* Ranks on one GPU, found in n log n time (checking every pair of ranks is 134 M comparisons at
 * 16,384 ranks). A rank's GPU is its host and bus id (byBus; a rank without a GPU, busId < 0, shares
 * nothing) or its host and cudaDev. largest: the most ranks on one GPU (1 when none share, 0 for no
 * ranks); first < second: the lowest pair of ranks that share a GPU, first the lowest rank that
 * shares with a higher one (-1 both when none do), so every rank that checks names the same pair. */
struct chrGpuShare {
  int largest, first, second;
};
/* 0, or -1 out of memory (out then says no rank shares). */
int chrPeersGpuShare(const struct chrPeerInfo* peers, int n, int byBus, struct chrGpuShare* out);

#endif /* CHORUS_BOOTSTRAP_PEER_INFO_H_ */
