/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_init.c: a rank's side of the rendezvous (chrBootstrapInit) and chrBootstrapClose.
 *
 * Open our own listening socket (peers connect to it for p2p), start the root first when we are rank
 * 0 of an NCCL_COMM_ID id, connect to the root, send the hello, and wait for the root's answer: the
 * table, a reject (our hello was wrong), or an abort (init failed for everyone). We wait a little
 * longer than the root's own timeout so that its precise message (which ranks are missing) arrives
 * before our own, vaguer, timeout fires.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bootstrap/bootstrap_internal.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"

#define ROOT_ANSWER_GRACE_SEC 5 /* extra wait for the root's answer beyond the bootstrap timeout */
#define ROOT_ENDED "the root ended: the process that runs it exited, or a rank in it gave up its init"

int chrBootstrapRank(const struct chrBootstrap* bs) { return bs->rank; }
int chrBootstrapNranks(const struct chrBootstrap* bs) { return bs->nranks; }

/* Rank 0 of an NCCL_COMM_ID id runs the root, on exactly the address of the id. */
static ncclResult_t startCommIdRoot(const struct chrBsId* bid, int64_t timeoutSec, int64_t deadlineNs) {
  char buf[CHR_SOCK_ADDR_STRLEN];
  chrSockAddr bound;
  CHECK(chrBsRootStart(&bid->root, bid->secret, timeoutSec, deadlineNs, &bound));
  INFO(NCCL_BOOTSTRAP, "bootstrap: rank 0 runs the root at %s (NCCL_COMM_ID)",
       chrSockAddrToString(&bound, buf, sizeof(buf)));
  return ncclSuccess;
}

/* Wait for and read the root's answer to our hello. */
static ncclResult_t readRootAnswer(struct chrBootstrap* bs, int fd, size_t infoSize, void* allInfo,
                                   const char* rootStr, int64_t deadlineNs) {
  struct chrBsReply rep;
  chrSockErr err;
  ncclResult_t r = chrSockRecvAll(fd, &rep, sizeof(rep), deadlineNs, bs->abortFlag, &err);
  if (r == ncclTimeout)
    return chrFail(ncclTimeout, "bootstrap: rank %d timed out after %lld s waiting for the root at %s to answer",
                   bs->rank, (long long)(chrParamInt(CHR_P_BOOTSTRAP_TIMEOUT) + ROOT_ANSWER_GRACE_SEC), rootStr);
  if (r != ncclSuccess)
    return chrFail(r, "bootstrap: rank %d lost the root at %s: %s (%s)", bs->rank, rootStr, err.msg, ROOT_ENDED);
  if (rep.magic != CHR_BS_REPLY_MAGIC)
    return chrFail(ncclRemoteError, "bootstrap: answer from %s is not from a bootstrap root (magic 0x%08x)", rootStr,
                   rep.magic);

  if (rep.type == CHR_BS_REPLY_REJECT || rep.type == CHR_BS_REPLY_ABORT) {
    char text[CHR_BS_MAX_TEXT + 1];
    if (rep.payloadSize > CHR_BS_MAX_TEXT)
      return chrFail(ncclRemoteError, "bootstrap: root sent a %s text of %llu bytes (limit %d)",
                     rep.type == CHR_BS_REPLY_REJECT ? "reject" : "abort", (unsigned long long)rep.payloadSize,
                     CHR_BS_MAX_TEXT);
    r = chrSockRecvAll(fd, text, (size_t)rep.payloadSize, deadlineNs, bs->abortFlag, &err);
    if (r != ncclSuccess) return chrFail(r, "bootstrap: rank %d lost the root at %s: %s", bs->rank, rootStr, err.msg);
    text[rep.payloadSize] = '\0';
    ncclResult_t code = (rep.result > ncclSuccess && rep.result < ncclNumResults && rep.result != ncclInProgress)
                            ? (ncclResult_t)rep.result
                            : ncclRemoteError;
    if (rep.type == CHR_BS_REPLY_REJECT)
      return chrFail(code, "bootstrap: root rejected rank %d: %s", bs->rank, text);
    return chrFail(code, "bootstrap: %s", text);
  }
  if (rep.type != CHR_BS_REPLY_TABLE)
    return chrFail(ncclRemoteError, "bootstrap: root sent an answer of unknown type %u", rep.type);

  uint64_t expect = (uint64_t)bs->nranks * (sizeof(chrSockAddr) + infoSize);
  if (rep.nranks != bs->nranks || rep.infoSize != infoSize || rep.payloadSize != expect)
    return chrFail(ncclRemoteError,
                   "bootstrap: root's table does not fit (nranks %d, info %u, %llu bytes; expected %d, %zu, %llu)",
                   rep.nranks, rep.infoSize, (unsigned long long)rep.payloadSize, bs->nranks, infoSize,
                   (unsigned long long)expect);
  r = chrSockRecvAll(fd, bs->peerAddrs, sizeof(chrSockAddr) * (size_t)bs->nranks, deadlineNs, bs->abortFlag, &err);
  if (r == ncclSuccess && infoSize > 0)
    r = chrSockRecvAll(fd, allInfo, infoSize * (size_t)bs->nranks, deadlineNs, bs->abortFlag, &err);
  if (r != ncclSuccess) return chrFail(r, "bootstrap: rank %d lost the root at %s: %s", bs->rank, rootStr, err.msg);
  for (int k = 0; k < bs->nranks; k++)
    if (chrSockAddrLen(&bs->peerAddrs[k]) == 0 || chrSockAddrPort(&bs->peerAddrs[k]) <= 0)
      return chrFail(ncclRemoteError, "bootstrap: root's table has no valid address for rank %d", k);
  return ncclSuccess;
}

static ncclResult_t rendezvous(struct chrBootstrap* bs, const struct chrBsId* bid, const void* myInfo,
                               size_t infoSize, void* allInfo, chrSockAddr* myAddr) {
  ncclResult_t res = ncclSuccess;
  char rootStr[CHR_SOCK_ADDR_STRLEN];
  chrSockAddrToString(&bid->root, rootStr, sizeof(rootStr));
  int64_t timeoutSec = chrParamInt(CHR_P_BOOTSTRAP_TIMEOUT);
  int64_t connectDeadline = chrSockDeadlineSec(timeoutSec);
  int64_t answerDeadline = chrSockDeadlineSec(timeoutSec > 0 ? timeoutSec + ROOT_ANSWER_GRACE_SEC : 0);

  if ((bid->flags & CHR_BS_ID_FLAG_COMM_ID) && bs->rank == 0)
    CHECK(startCommIdRoot(bid, timeoutSec, connectDeadline));

  int fd = -1;
  chrSockErr err;
  /* A root made with the id (ncclGetUniqueId) listened before the id existed, so a refusal means it is
   * gone: its process exited, or the id served a communicator already and its root ended. Only an
   * NCCL_COMM_ID root may not have started yet, and is waited for. */
  const int rootMayComeLater = (bid->flags & CHR_BS_ID_FLAG_COMM_ID) != 0;
  ncclResult_t r = rootMayComeLater ? chrSockConnect(&bid->root, connectDeadline, bs->abortFlag, &fd, &err)
                                    : chrSockConnectListening(&bid->root, connectDeadline, bs->abortFlag, &fd, &err);
  if (r == ncclRemoteError && !rootMayComeLater)
    return chrFail(r, "bootstrap: rank %d: the root of this unique id at %s is gone (%s): the process that made "
                   "the id with ncclGetUniqueId has exited or aborted, or the id was used up by an earlier "
                   "communicator (an id serves one communicator)", bs->rank, rootStr, err.msg);
  if (r == ncclTimeout || r == ncclRemoteError)
    return chrFail(r, "bootstrap: rank %d cannot reach the root at %s within %lld s: %s", bs->rank, rootStr,
                   (long long)timeoutSec, err.msg);
  if (r != ncclSuccess) return chrFail(r, "bootstrap: rank %d cannot connect to the root: %s", bs->rank, err.msg);

  struct chrBsHello hello;
  memset(&hello, 0, sizeof(hello));
  hello.magic = CHR_BS_HELLO_MAGIC;
  hello.version = CHR_BS_WIRE_VERSION;
  hello.secret = bid->secret;
  hello.rank = bs->rank;
  hello.nranks = bs->nranks;
  hello.infoSize = (uint32_t)infoSize;
  hello.listenAddr = *myAddr;
  r = chrSockSendAll(fd, &hello, sizeof(hello), connectDeadline, bs->abortFlag, &err);
  if (r == ncclSuccess) r = chrSockSendAll(fd, myInfo, infoSize, connectDeadline, bs->abortFlag, &err);
  if (r != ncclSuccess) {
    res = chrFail(r, "bootstrap: rank %d cannot send its hello to the root at %s: %s (%s)", bs->rank, rootStr, err.msg,
                  ROOT_ENDED);
    goto fail_close_root;
  }
  CHECK_GOTO(readRootAnswer(bs, fd, infoSize, allInfo, rootStr, answerDeadline), res, fail_close_root);
  chrSockClose(&fd);
  return ncclSuccess;

fail_close_root:
  chrSockClose(&fd);
  return res;
}

ncclResult_t chrBootstrapInit(const ncclUniqueId* id, int rank, int nranks, const void* myInfo, size_t infoSize,
                              void* allInfo, volatile uint32_t* abortFlag, struct chrBootstrap** out) {
  ncclResult_t res = ncclSuccess;
  chrBsUseCoreLogger();
  if (out == NULL) return chrFail(ncclInvalidArgument, "bootstrap: out is NULL");
  *out = NULL;
  if (nranks <= 0 || nranks > CHR_BOOTSTRAP_MAX_RANKS)
    return chrFail(ncclInvalidArgument, "bootstrap: nranks %d out of range (1..%d)", nranks, CHR_BOOTSTRAP_MAX_RANKS);
  if (rank < 0 || rank >= nranks)
    return chrFail(ncclInvalidArgument, "bootstrap: rank %d out of range (nranks %d)", rank, nranks);
  if (infoSize > CHR_BOOTSTRAP_MAX_INFO)
    return chrFail(ncclInvalidArgument, "bootstrap: info size %zu is over the limit of %d bytes", infoSize,
                   CHR_BOOTSTRAP_MAX_INFO);
  if (infoSize > 0 && (myInfo == NULL || allInfo == NULL))
    return chrFail(ncclInvalidArgument, "bootstrap: info buffers are NULL with info size %zu", infoSize);
  struct chrBsId bid;
  CHECK(chrBsIdDecode(id, &bid));
  bid.secret = chrBsJoinSecret(bid.secret); /* what this rank presents, and an NCCL_COMM_ID root expects */

  struct chrBootstrap* bs = calloc(1, sizeof(*bs));
  if (bs == NULL) return chrFail(ncclSystemError, "bootstrap: out of memory");
  bs->rank = rank;
  bs->nranks = nranks;
  bs->secret = bid.secret;
  bs->abortFlag = abortFlag;
  bs->timeoutSec = chrParamInt(CHR_P_TIMEOUT);
  bs->listenFd = -1;
  CHECK_GOTO(chrBsP2pSetup(bs), res, fail_free_bs);

  chrSockAddr myAddr;
  chrSockErr err;
  CHECK_GOTO(chrBsPickListenAddr(&bid.root, &myAddr), res, fail_free_bs);
  if (chrSockListen(&myAddr, 0, &bs->listenFd, &myAddr, &err) != ncclSuccess) {
    res = chrFail(ncclSystemError, "bootstrap: rank %d cannot open its listening socket: %s", rank, err.msg);
    goto fail_free_bs;
  }
  CHECK_GOTO(rendezvous(bs, &bid, myInfo, infoSize, allInfo, &myAddr), res, fail_free_bs);
  char buf[CHR_SOCK_ADDR_STRLEN];
  INFO(NCCL_BOOTSTRAP, "bootstrap: rank %d of %d in, listening at %s", rank, nranks,
       chrSockAddrToString(&myAddr, buf, sizeof(buf)));
  *out = bs;
  return ncclSuccess;

fail_free_bs:
  chrBsP2pFree(bs);
  return res;
}

ncclResult_t chrBootstrapClose(struct chrBootstrap* bs) {
  if (bs == NULL) return ncclSuccess;
  chrBsP2pFree(bs);
  return ncclSuccess;
}
