/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_id.c: the unique id (make, decode) and which interface/address the bootstrap uses.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include "bootstrap/bootstrap_internal.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "util/siphash.h"

_Static_assert(sizeof(struct chrBsId) <= NCCL_UNIQUE_ID_BYTES, "bootstrap id must fit in ncclUniqueId");

int chrBsSecretEqual(uint64_t a, uint64_t b) {
  /* No early exit: the time taken does not tell how many bytes matched. */
  volatile uint64_t diff = a ^ b;
  return diff == 0;
}

/* splitmix64 finalizer over an FNV-1a hash: a well-spread 64-bit value from a string. */
static uint64_t hashString(const char* s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char* p = "chorus-comm-id:"; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

uint64_t chrBsJoinSecret(uint64_t idSecret) {
  const char* op = chrParamStr(CHR_P_COMM_SECRET);
  if (op[0] == '\0') return idSecret;
  /* A 128-bit key from the operator's string, then the id's secret under that key: the value that
   * travels (in hellos and message headers) tells nothing of the operator's secret. */
  const size_t n = strlen(op);
  const uint64_t k0 = chrSipHash24(0x63686f7275732d6bull, 0x65792d6669727374ull, op, n);
  const uint64_t k1 = chrSipHash24(0x63686f7275732d6bull, 0x65792d7365636f6eull, op, n);
  return chrSipHash24(k0, k1, &idSecret, sizeof(idSecret));
}

static ncclResult_t randomSecret(uint64_t* out) {
  size_t got = 0;
  while (got < sizeof(*out)) {
    ssize_t n = getrandom((char*)out + got, sizeof(*out) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return chrFail(ncclSystemError, "bootstrap: getrandom failed: %s", strerror(errno));
    }
    got += (size_t)n;
  }
  return ncclSuccess;
}

static ncclResult_t familyParam(int* family) {
  chrSockErr err;
  if (chrSockParseFamily(chrParamStr(CHR_P_SOCKET_FAMILY), family, &err) != ncclSuccess)
    return chrFail(ncclInvalidArgument, "bootstrap: NCCL_SOCKET_FAMILY: %s", err.msg);
  return ncclSuccess;
}

/* First interface matching NCCL_SOCKET_IFNAME (default rules when empty) of `family`. */
static ncclResult_t firstInterface(int family, chrSockAddr* out) {
  const char* spec = chrParamStr(CHR_P_SOCKET_IFNAME);
  chrSockIf ifs[1];
  int n = 0;
  chrSockErr err;
  if (chrSockFindInterfaces(spec, family, ifs, 1, &n, &err) != ncclSuccess)
    return chrFail(ncclSystemError, "bootstrap: cannot list network interfaces: %s", err.msg);
  if (n == 0)
    return chrFail(ncclSystemError, "bootstrap: no network interface matches NCCL_SOCKET_IFNAME='%s'%s", spec,
                   family == AF_INET ? " with an IPv4 address" : family == AF_INET6 ? " with an IPv6 address" : "");
  *out = ifs[0].addr;
  char buf[CHR_SOCK_ADDR_STRLEN];
  INFO(NCCL_BOOTSTRAP, "bootstrap: using interface %s %s", ifs[0].name,
       chrSockAddrToString(&ifs[0].addr, buf, sizeof(buf)));
  return ncclSuccess;
}

ncclResult_t chrBsPickListenAddr(const chrSockAddr* root, chrSockAddr* out) {
  const char* spec = chrParamStr(CHR_P_SOCKET_IFNAME);
  int family;
  CHECK(familyParam(&family));
  if (spec[0] == '\0' && (family == AF_UNSPEC || family == root->sa.sa_family)) {
    /* No interface asked for: use the one the kernel routes to the root through, so that the root
     * and the other ranks (on the root's network) can reach us. */
    chrSockErr err;
    if (chrSockLocalAddrFor(root, out, &err) == ncclSuccess) return ncclSuccess;
    INFO(NCCL_BOOTSTRAP, "bootstrap: %s; falling back to interface discovery", err.msg);
  }
  return firstInterface(family, out);
}

ncclResult_t chrBsIdDecode(const ncclUniqueId* id, struct chrBsId* out) {
  if (id == NULL) return chrFail(ncclInvalidArgument, "bootstrap: unique id is NULL");
  memcpy(out, id->internal, sizeof(*out));
  if (out->magic != CHR_BS_ID_MAGIC)
    return chrFail(ncclInvalidArgument,
                   "bootstrap: unique id is not one made by ncclGetUniqueId (magic 0x%08x, expected 0x%08x)",
                   out->magic, CHR_BS_ID_MAGIC);
  if (out->version != CHR_BS_ID_VERSION)
    return chrFail(ncclInvalidArgument, "bootstrap: unique id has format version %u; this library reads %u",
                   (unsigned)out->version, (unsigned)CHR_BS_ID_VERSION);
  if (chrSockAddrLen(&out->root) == 0 || chrSockAddrPort(&out->root) <= 0)
    return chrFail(ncclInvalidArgument, "bootstrap: unique id holds no valid root address (family %d)",
                   (int)out->root.sa.sa_family);
  return ncclSuccess;
}

void chrBsUseCoreLogger(void) {
  /* The socket utilities log (TRACE of connect retries) only through a logger handed to them. */
  chrSockSetLogger(chrLog);
}

/* honourCommId: an NCCL_COMM_ID setting names the root (every process computes the same id). */
static ncclResult_t makeUniqueId(ncclUniqueId* id, int honourCommId) {
  chrBsUseCoreLogger();
  if (id == NULL) return chrFail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  struct chrBsId bid;
  memset(&bid, 0, sizeof(bid));
  bid.magic = CHR_BS_ID_MAGIC;
  bid.version = CHR_BS_ID_VERSION;
  char buf[CHR_SOCK_ADDR_STRLEN];

  const char* commId = honourCommId ? chrParamStr(CHR_P_COMM_ID) : "";
  if (commId[0] != '\0') {
    /* The address names its own family ("[::1]:port" is IPv6); NCCL_SOCKET_FAMILY does not apply. */
    chrSockErr err;
    if (chrSockAddrParse(commId, AF_UNSPEC, &bid.root, &err) != ncclSuccess)
      return chrFail(ncclInvalidArgument, "bootstrap: NCCL_COMM_ID='%s': %s", commId, err.msg);
    if (chrSockAddrPort(&bid.root) == 0)
      return chrFail(ncclInvalidArgument, "bootstrap: NCCL_COMM_ID='%s' needs a nonzero port", commId);
    /* Every process computes this same id; the secret only guards against a corrupted or foreign id. */
    bid.flags = CHR_BS_ID_FLAG_COMM_ID;
    bid.secret = hashString(commId);
    INFO(NCCL_BOOTSTRAP, "bootstrap: unique id from NCCL_COMM_ID=%s (rank 0 runs the root at %s)", commId,
         chrSockAddrToString(&bid.root, buf, sizeof(buf)));
  } else {
    int family;
    CHECK(familyParam(&family));
    chrSockAddr local;
    CHECK(firstInterface(family, &local));
    CHECK(randomSecret(&bid.secret));
    CHECK(chrBsRootStart(&local, chrBsJoinSecret(bid.secret), chrParamInt(CHR_P_BOOTSTRAP_TIMEOUT), 0, &bid.root));
    INFO(NCCL_BOOTSTRAP, "bootstrap: unique id made, root listening at %s",
         chrSockAddrToString(&bid.root, buf, sizeof(buf)));
  }
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &bid, sizeof(bid));
  return ncclSuccess;
}

ncclResult_t chrBootstrapGetUniqueId(ncclUniqueId* id) { return makeUniqueId(id, 1); }

ncclResult_t chrBootstrapNewUniqueId(ncclUniqueId* id) { return makeUniqueId(id, 0); }
