/*
 * connect.c: connecting the ring links of a communicator, lazily, the first time a plan needs them.
 *
 * For each channel: the receiving side listens and sends its handle to its ring predecessor over the
 * bootstrap; the sending side receives the handle from its successor and connects. connect and
 * accept are non-blocking in the net ABI, so both are driven in one loop until both are done, with
 * the CHORUS_TIMEOUT deadline and the abort flag checked on every pass.
 */
#include <string.h>
#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "config/param.h"
#include "exec/idle.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "transport/net_link.h"

#define TAG_RING_CONNECT 0x10000

static size_t stepSizeBytes(void) {
  int64_t buff = chrParamInt(CHR_P_BUFFSIZE);
  if (buff < CHR_STEPS * 4096) buff = CHR_STEPS * 4096;
  size_t step = (size_t)buff / CHR_STEPS;
  return step & ~(size_t)4095; /* whole pages */
}

static ncclResult_t connectChannel(struct ncclComm* comm, struct chrChannel* ch) {
  char myHandle[NCCL_NET_HANDLE_MAXSIZE];
  char peerHandle[NCCL_NET_HANDLE_MAXSIZE];
  void* listenComm = NULL;
  void* sendComm = NULL;
  void* recvComm = NULL;
  ncclResult_t res = ncclSuccess;
  int tag = TAG_RING_CONNECT + ch->id;
  memset(myHandle, 0, sizeof(myHandle));

  CHECK(chrNetListen(comm->net, comm->netDev, myHandle, &listenComm));
  CHECK_GOTO(chrBootstrapSend(comm->bootstrap, ch->ringPrev, tag, myHandle, sizeof(myHandle)), res, fail_listen);
  CHECK_GOTO(chrBootstrapRecv(comm->bootstrap, ch->ringNext, tag, peerHandle, sizeof(peerHandle)), res, fail_listen);

  uint64_t start = chrNowNs();
  uint64_t deadline = start + (uint64_t)chrParamInt(CHR_P_TIMEOUT) * 1000000000ull;
  while (sendComm == NULL || recvComm == NULL) {
    if (sendComm == NULL) CHECK_GOTO(chrNetConnect(comm->net, comm->netDev, peerHandle, &sendComm, NULL), res, fail_comms);
    if (recvComm == NULL) CHECK_GOTO(chrNetAccept(comm->net, listenComm, &recvComm, NULL), res, fail_comms);
    if (sendComm && recvComm) break;
    if (comm->abortFlag) {
      res = chrFail(ncclRemoteError, "connecting channel %d: communicator aborted", ch->id);
      goto fail_comms;
    }
    if (chrNowNs() > deadline) {
      res = chrFail(ncclTimeout, "connecting channel %d: %s rank %d not reached within %lld s (CHORUS_TIMEOUT)", ch->id,
                    sendComm ? "from" : "to", sendComm ? ch->ringPrev : ch->ringNext,
                    (long long)chrParamInt(CHR_P_TIMEOUT));
      goto fail_comms;
    }
    chrIdleWait(chrNowNs() - start);
  }
  chrNetCloseListen(comm->net, listenComm);
  listenComm = NULL;

  size_t step = stepSizeBytes();
  res = chrNetLinkCreate(comm, ch->id, ch->ringNext, 1, sendComm, step, &ch->ringSend);
  sendComm = NULL; /* owned (or closed) by the link now */
  if (res != ncclSuccess) goto fail_comms;
  res = chrNetLinkCreate(comm, ch->id, ch->ringPrev, 0, recvComm, step, &ch->ringRecv);
  recvComm = NULL;
  if (res != ncclSuccess) goto fail_comms;
  INFO(NCCL_INIT | NCCL_NET, "channel %02d: rank %d -> %d -> %d via net, %d x %zu B slots", ch->id, ch->ringPrev,
       comm->rank, ch->ringNext, CHR_STEPS, step);
  return ncclSuccess;

fail_comms:
  if (sendComm) chrNetCloseSend(comm->net, sendComm);
  if (recvComm) chrNetCloseRecv(comm->net, recvComm);
  if (ch->ringSend) { ch->ringSend->ops->close(ch->ringSend); ch->ringSend = NULL; }
  if (ch->ringRecv) { ch->ringRecv->ops->close(ch->ringRecv); ch->ringRecv = NULL; }
fail_listen:
  if (listenComm) chrNetCloseListen(comm->net, listenComm);
  return res;
}

ncclResult_t chrTransportConnectRing(struct ncclComm* comm, int nChannels) {
  if (comm->nRanks == 1) return ncclSuccess;
  if (comm->net == NULL) return chrFail(ncclInternalError, "no net plugin open on comm %p", (void*)comm);
  for (int c = 0; c < nChannels; c++) {
    struct chrChannel* ch = &comm->channels[c];
    if (ch->ringSend && ch->ringRecv) continue;
    CHECK(connectChannel(comm, ch));
  }
  return ncclSuccess;
}

void chrTransportCloseAll(struct ncclComm* comm) {
  for (int c = 0; c < CHR_MAX_CHANNELS; c++) {
    struct chrChannel* ch = &comm->channels[c];
    if (ch->ringSend) ch->ringSend->ops->close(ch->ringSend);
    if (ch->ringRecv) ch->ringRecv->ops->close(ch->ringRecv);
    ch->ringSend = ch->ringRecv = NULL;
  }
}
