/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire.c: the listen handle and the connection info, as bytes (ib_logic.h). The layouts are explicit
 * (little-endian fields at fixed offsets), so both ends agree whatever their compilers, and every
 * decoded field is checked before use: these bytes come from the network.
 *
 * Handle (IB_HANDLE_BYTES): magic u64 @0, version u32 @8, family u32 @12, port u16 @16, pad u16 @18,
 *   scope id u32 @20, address 16 bytes @24 (IPv4 in the first 4), nonce u64 @40, zeros to the end.
 * Info (IB_INFO_BYTES): magic u64 @0, version u32 @8, nQps u32 @12, linkLayer u32 @16, lid u32 @20,
 *   mtu u32 @24, gidIndex u32 @28, gid 16 bytes @32, qpn u32[16] @48, psn u32[16] @112,
 *   fifoAddr u64 @176, fifoRkey u32 @184, fifoDepth u32 @188, nonce u64 @192.
 */
#include <stdio.h>
#include <string.h>

#include "ib_logic.h"

static void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static int bad(char* err, size_t errLen, const char* what, unsigned long long v) {
  if (err && errLen) snprintf(err, errLen, "%s (%llu)", what, v);
  return -1;
}

void ibHandleEncode(const ibHandle* h, uint8_t out[IB_HANDLE_BYTES]) {
  memset(out, 0, IB_HANDLE_BYTES);
  put64(out, IB_HANDLE_MAGIC);
  put32(out + 8, IB_WIRE_VERSION);
  int fam = h->addr.sa.sa_family;
  put32(out + 12, (uint32_t)fam);
  int port = chrSockAddrPort(&h->addr);
  out[16] = (uint8_t)(port & 0xff);
  out[17] = (uint8_t)((port >> 8) & 0xff);
  if (fam == AF_INET) {
    memcpy(out + 24, &h->addr.sin.sin_addr, 4);
  } else if (fam == AF_INET6) {
    put32(out + 20, h->addr.sin6.sin6_scope_id);
    memcpy(out + 24, &h->addr.sin6.sin6_addr, 16);
  }
  put64(out + 40, h->nonce);
}

int ibHandleDecode(const uint8_t in[IB_HANDLE_BYTES], ibHandle* h, char* err, size_t errLen) {
  memset(h, 0, sizeof(*h));
  if (get64(in) != IB_HANDLE_MAGIC) return bad(err, errLen, "not an IB plugin handle: bad magic", get64(in));
  if (get32(in + 8) != IB_WIRE_VERSION) return bad(err, errLen, "handle of another wire version", get32(in + 8));
  uint32_t fam = get32(in + 12);
  int port = in[16] | (in[17] << 8);
  if (port == 0) return bad(err, errLen, "handle with port 0", 0);
  for (int i = 48; i < IB_HANDLE_BYTES; i++)
    if (in[i] != 0) return bad(err, errLen, "handle with garbage after its fields, at byte", (unsigned long long)i);
  if (fam == AF_INET) {
    h->addr.sin.sin_family = AF_INET;
    memcpy(&h->addr.sin.sin_addr, in + 24, 4);
    for (int i = 28; i < 40; i++)
      if (in[i] != 0) return bad(err, errLen, "IPv4 handle with bytes beyond the address, at byte", (unsigned long long)i);
  } else if (fam == AF_INET6) {
    h->addr.sin6.sin6_family = AF_INET6;
    h->addr.sin6.sin6_scope_id = get32(in + 20);
    memcpy(&h->addr.sin6.sin6_addr, in + 24, 16);
  } else {
    return bad(err, errLen, "handle with an unknown address family", fam);
  }
  chrSockAddrSetPort(&h->addr, port);
  if (chrSockAddrIsAny(&h->addr)) return bad(err, errLen, "handle with a wildcard address", 0);
  h->nonce = get64(in + 40);
  return 0;
}

void ibInfoEncode(const ibConnInfo* c, uint8_t out[IB_INFO_BYTES]) {
  memset(out, 0, IB_INFO_BYTES);
  put64(out, IB_INFO_MAGIC);
  put32(out + 8, IB_WIRE_VERSION);
  put32(out + 12, c->nQps);
  put32(out + 16, c->linkLayer);
  put32(out + 20, c->lid);
  put32(out + 24, c->mtu);
  put32(out + 28, c->gidIndex);
  memcpy(out + 32, c->gid, 16);
  for (int i = 0; i < IB_MAX_QPS; i++) {
    put32(out + 48 + 4 * i, i < (int)c->nQps ? c->qpn[i] : 0);
    put32(out + 112 + 4 * i, i < (int)c->nQps ? c->psn[i] : 0);
  }
  put64(out + 176, c->fifoAddr);
  put32(out + 184, c->fifoRkey);
  put32(out + 188, c->fifoDepth);
  put64(out + 192, c->nonce);
}

int ibInfoDecode(const uint8_t in[IB_INFO_BYTES], ibConnInfo* c, char* err, size_t errLen) {
  memset(c, 0, sizeof(*c));
  if (get64(in) != IB_INFO_MAGIC) return bad(err, errLen, "peer sent no IB connection info: bad magic", get64(in));
  if (get32(in + 8) != IB_WIRE_VERSION) return bad(err, errLen, "peer speaks another wire version", get32(in + 8));
  c->nQps = get32(in + 12);
  if (c->nQps < 1 || c->nQps > IB_MAX_QPS) return bad(err, errLen, "peer's QP count is outside 1..16", c->nQps);
  c->linkLayer = get32(in + 16);
  if (c->linkLayer != IB_LINK_IB && c->linkLayer != IB_LINK_ETHERNET)
    return bad(err, errLen, "peer's link layer is unknown", c->linkLayer);
  c->lid = get32(in + 20);
  if (c->lid > 0xffff) return bad(err, errLen, "peer's LID does not fit 16 bits", c->lid);
  if (c->linkLayer == IB_LINK_IB && c->lid == 0) return bad(err, errLen, "IB peer without a LID", 0);
  c->mtu = get32(in + 24);
  if (c->mtu < 1 || c->mtu > 5) return bad(err, errLen, "peer's MTU code is outside 1..5", c->mtu);
  c->gidIndex = get32(in + 28);
  if (c->gidIndex > 0xffff) return bad(err, errLen, "peer's GID index is out of range", c->gidIndex);
  memcpy(c->gid, in + 32, 16);
  if (c->linkLayer == IB_LINK_ETHERNET && ibGidIsZero(c->gid)) return bad(err, errLen, "RoCE peer with a zero GID", 0);
  for (int i = 0; i < IB_MAX_QPS; i++) {
    uint32_t qpn = get32(in + 48 + 4 * i), psn = get32(in + 112 + 4 * i);
    if (i < (int)c->nQps) {
      if (qpn == 0 || qpn > 0xffffff) return bad(err, errLen, "peer's QP number is outside 1..2^24-1", qpn);
      if (psn > 0xffffff) return bad(err, errLen, "peer's PSN does not fit 24 bits", psn);
      c->qpn[i] = qpn;
      c->psn[i] = psn;
    } else if (qpn != 0 || psn != 0) {
      return bad(err, errLen, "peer sent QP numbers beyond its QP count, at QP", (unsigned long long)i);
    }
  }
  c->fifoAddr = get64(in + 176);
  c->fifoRkey = get32(in + 184);
  c->fifoDepth = get32(in + 188);
  if (c->fifoDepth != 0 && c->fifoDepth != IB_FIFO_DEPTH)
    return bad(err, errLen, "peer's FIFO depth differs from ours", c->fifoDepth);
  if (c->fifoDepth != 0 && c->fifoAddr == 0) return bad(err, errLen, "peer's FIFO has a NULL address", 0);
  c->nonce = get64(in + 192);
  return 0;
}
