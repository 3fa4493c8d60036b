/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * qp.c: the verbs objects of one comm: its completion queue, its RC queue pairs (INIT at creation;
 * RTR and RTS once the peer's numbers are known), the FIFO (send side) or the staging entries the
 * FIFO writes go out from (receive side), the flush QP of a receive side that takes GPU memory, and
 * their teardown.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ib_plugin.h"

/* Work requests one QP may have outstanding: every request of the pool, plus the FIFO writes. */
#define IB_QP_DEPTH (2 * IB_MAX_REQUESTS)

static ncclResult_t verbsFail(const char* what, const ibDev* d, int err) {
  IB_WARN("%s on %s failed: %s", what, d->fullName, strerror(err ? err : errno));
  return ncclSystemError;
}

static uint32_t randomPsn(void) {
  uint32_t v;
  chrPluginRandom(&v, sizeof(v));
  return v & 0xffffff;
}

/* One RC QP on the comm's CQ, moved to INIT with the given remote access. */
static ncclResult_t qpCreate(ibComm* c, int sendDepth, int recvDepth, int access, struct ibv_qp** out) {
  const ibDev* d = &ibDevs[c->dev];
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof(ia));
  ia.send_cq = c->cq;
  ia.recv_cq = c->cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = (uint32_t)sendDepth;
  ia.cap.max_recv_wr = (uint32_t)recvDepth;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  struct ibv_qp* qp = ibv_create_qp(d->pd, &ia);
  if (qp == NULL) return verbsFail("ibv_create_qp", d, 0);
  struct ibv_qp_attr qa;
  memset(&qa, 0, sizeof(qa));
  qa.qp_state = IBV_QPS_INIT;
  qa.pkey_index = (uint16_t)ibConf.pkeyIndex;
  qa.port_num = (uint8_t)d->port;
  qa.qp_access_flags = (unsigned)access;
  int rc = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) {
    ibv_destroy_qp(qp);
    return verbsFail("moving a QP to INIT", d, rc);
  }
  *out = qp;
  return ncclSuccess;
}

/* INIT -> RTR -> RTS towards QP dqpn at (lid, gid), one outstanding RDMA read each way. */
static ncclResult_t qpConnect(ibComm* c, struct ibv_qp* qp, enum ibv_mtu mtu, uint32_t dqpn, uint32_t rqPsn,
                              uint32_t sqPsn, uint32_t lid, const uint8_t gid[16]) {
  const ibDev* d = &ibDevs[c->dev];
  struct ibv_qp_attr qa;
  memset(&qa, 0, sizeof(qa));
  qa.qp_state = IBV_QPS_RTR;
  qa.path_mtu = mtu;
  qa.dest_qp_num = dqpn;
  qa.rq_psn = rqPsn;
  qa.max_dest_rd_atomic = 1;
  qa.min_rnr_timer = 12;
  qa.ah_attr.port_num = (uint8_t)d->port;
  qa.ah_attr.sl = (uint8_t)ibConf.sl;
  if (d->linkLayer == IB_LINK_ETHERNET) {
    qa.ah_attr.is_global = 1;
    memcpy(qa.ah_attr.grh.dgid.raw, gid, 16);
    qa.ah_attr.grh.sgid_index = (uint8_t)d->gidIndex;
    qa.ah_attr.grh.hop_limit = 255;
    qa.ah_attr.grh.traffic_class = (uint8_t)ibConf.tc;
  } else {
    qa.ah_attr.dlid = (uint16_t)lid;
  }
  int rc = ibv_modify_qp(qp, &qa,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) return verbsFail("moving a QP to RTR", d, rc);
  memset(&qa, 0, sizeof(qa));
  qa.qp_state = IBV_QPS_RTS;
  qa.timeout = (uint8_t)ibConf.timeout;
  qa.retry_cnt = (uint8_t)ibConf.retryCnt;
  qa.rnr_retry = 7;
  qa.sq_psn = sqPsn;
  qa.max_rd_atomic = 1;
  rc = ibv_modify_qp(qp, &qa,
                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) return verbsFail("moving a QP to RTS", d, rc);
  return ncclSuccess;
}

ncclResult_t ibCommCreateVerbs(ibComm* c, int nQps, ibConnInfo* local) {
  const ibDev* d = &ibDevs[c->dev];
  int depth = IB_QP_DEPTH;
  if (d->maxQpWr > 0 && depth > d->maxQpWr) depth = d->maxQpWr;
  /* Room for every completion at once: per data QP its requests and FIFO writes, and the flush QP's
   * reads (at most one per request) in the extra QP's share. */
  c->cq = ibv_create_cq(d->ctx, 2 * depth * (nQps + 1), NULL, NULL, 0);
  if (c->cq == NULL) return verbsFail("ibv_create_cq", d, 0);
  memset(local, 0, sizeof(*local));
  for (int q = 0; q < nQps; q++) {
    ncclResult_t res = qpCreate(c, depth, depth, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE, &c->qps[q]);
    if (res != ncclSuccess) return res;
    c->nQps = q + 1;
    local->qpn[q] = c->qps[q]->qp_num;
    local->psn[q] = randomPsn();
  }
  local->nQps = (uint32_t)nQps;
  local->linkLayer = (uint32_t)d->linkLayer;
  local->lid = d->lid;
  local->mtu = (uint32_t)d->mtu;
  local->gidIndex = d->linkLayer == IB_LINK_ETHERNET ? (uint32_t)d->gidIndex : 0;
  memcpy(local->gid, d->gid.raw, 16);

  size_t fifoBytes = sizeof(ibFifoEntry) * IB_FIFO_DEPTH;
  void* mem = NULL;
  if (posix_memalign(&mem, 4096, fifoBytes) != 0) {
    IB_WARN("out of memory for the FIFO of a connection on %s", d->fullName);
    return ncclSystemError;
  }
  memset(mem, 0, fifoBytes);
  if (c->isSend) {
    /* the receiver writes here */
    c->fifo = mem;
    c->fifoMr = ibv_reg_mr(d->pd, mem, fifoBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (c->fifoMr == NULL) return verbsFail("registering the FIFO", d, 0);
    local->fifoAddr = (uint64_t)(uintptr_t)mem;
    local->fifoRkey = c->fifoMr->rkey;
    local->fifoDepth = IB_FIFO_DEPTH;
  } else {
    /* the FIFO writes are sent from here */
    c->staging = mem;
    c->stagingMr = ibv_reg_mr(d->pd, mem, fifoBytes, IBV_ACCESS_LOCAL_WRITE);
    if (c->stagingMr == NULL) return verbsFail("registering the FIFO staging area", d, 0);
  }
  return ncclSuccess;
}

ncclResult_t ibCommConnectQps(ibComm* c, const ibConnInfo* local, const ibConnInfo* remote) {
  const ibDev* d = &ibDevs[c->dev];
  if ((int)remote->nQps != c->nQps) {
    IB_WARN("%s: the peer has %u QPs for this connection, this side %d", d->fullName, remote->nQps, c->nQps);
    return ncclInvalidUsage;
  }
  if ((int)remote->linkLayer != d->linkLayer) {
    IB_WARN("%s: the peer's port is %s, this one %s", d->fullName, remote->linkLayer == IB_LINK_IB ? "InfiniBand" : "RoCE",
            d->linkLayer == IB_LINK_IB ? "InfiniBand" : "RoCE");
    return ncclInvalidUsage;
  }
  enum ibv_mtu mtu = (enum ibv_mtu)(remote->mtu < (uint32_t)d->mtu ? remote->mtu : (uint32_t)d->mtu);
  for (int q = 0; q < c->nQps; q++) {
    ncclResult_t res = qpConnect(c, c->qps[q], mtu, remote->qpn[q], remote->psn[q], local->psn[q], remote->lid, remote->gid);
    if (res != ncclSuccess) return res;
  }
  if (!c->isSend) {
    c->remFifoAddr = remote->fifoAddr;
    c->remFifoRkey = remote->fifoRkey;
  }
  return ncclSuccess;
}

/* The flush QP reads from this comm's own GPU receive buffers, so it is connected to itself: the
 * responder side needs remote-read access, the requester a local buffer to land in. A read of GPU
 * memory completes only after the NIC's earlier writes to it have reached the GPU (PCIe ordering),
 * which is what a flush must wait for. */
ncclResult_t ibCommCreateFlush(ibComm* c) {
  const ibDev* d = &ibDevs[c->dev];
  int depth = IB_MAX_REQUESTS; /* one read per request at most */
  if (d->maxQpWr > 0 && depth > d->maxQpWr) depth = d->maxQpWr;
  ncclResult_t res = qpCreate(c, depth, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, &c->flushQp);
  if (res != ncclSuccess) return res;
  uint32_t psn = randomPsn();
  res = qpConnect(c, c->flushQp, d->mtu, c->flushQp->qp_num, psn, psn, d->lid, d->gid.raw);
  if (res != ncclSuccess) return res;
  if (posix_memalign(&c->flushBuf, 64, 64) != 0) {
    c->flushBuf = NULL;
    IB_WARN("out of memory for the flush buffer of a connection on %s", d->fullName);
    return ncclSystemError;
  }
  memset(c->flushBuf, 0, 64);
  c->flushMr = ibv_reg_mr(d->pd, c->flushBuf, 64, IBV_ACCESS_LOCAL_WRITE);
  if (c->flushMr == NULL) return verbsFail("registering the flush buffer", d, 0);
  return ncclSuccess;
}

void ibCommDestroy(ibComm* c) {
  if (c == NULL) return;
  for (int q = 0; q < c->nQps; q++)
    if (c->qps[q]) ibv_destroy_qp(c->qps[q]);
  if (c->flushQp) ibv_destroy_qp(c->flushQp);
  if (c->cq) ibv_destroy_cq(c->cq);
  if (c->fifoMr) ibv_dereg_mr(c->fifoMr);
  if (c->stagingMr) ibv_dereg_mr(c->stagingMr);
  if (c->flushMr) ibv_dereg_mr(c->flushMr);
  free(c->flushBuf);
  free((void*)c->fifo);
  free(c->staging);
  chrSockClose(&c->fd);
  free(c);
}
