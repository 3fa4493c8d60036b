/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket_if.c: choosing network interfaces (NCCL_SOCKET_IFNAME syntax) and the local address that
 * reaches a given remote address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "socket/socket_internal.h"

/* Does `name` match one comma-separated item list of `list` (prefix or exact)? */
static int matchList(const char* list, const char* name, int exact) {
  const char* p = list;
  while (*p != '\0') {
    while (*p == ' ' || *p == ',') p++;
    const char* start = p;
    while (*p != '\0' && *p != ',') p++;
    const char* end = p;
    /* Trailing spaces and an optional ":port" suffix are not part of the name. */
    const char* colon = memchr(start, ':', (size_t)(end - start));
    if (colon != NULL) end = colon;
    while (end > start && end[-1] == ' ') end--;
    size_t n = (size_t)(end - start);
    if (n == 0) continue;
    if (exact) {
      if (strlen(name) == n && strncmp(name, start, n) == 0) return 1;
    } else {
      if (strncmp(name, start, n) == 0) return 1;
    }
  }
  return 0;
}

int chrSockIfMatches(const char* spec, const char* name) {
  if (spec == NULL) return 1;
  while (*spec == ' ') spec++;
  if (*spec == '\0') return 1;
  int exclude = 0, exact = 0;
  if (*spec == '^') { exclude = 1; spec++; }
  if (*spec == '=') { exact = 1; spec++; }
  int m = matchList(spec, name, exact);
  return exclude ? !m : m;
}

static int isLinkLocal6(const struct sockaddr_in6* s6) { return IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr); }

/* One pass over getifaddrs for one family; appends matching entries. */
static void collect(struct ifaddrs* list, const char* spec, int useDefault, int family, chrSockIf* ifs,
                    int maxIfs, int* n) {
  for (struct ifaddrs* ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != family) continue;
    if (!(ifa->ifa_flags & IFF_UP)) continue;
    if (family == AF_INET6 && isLinkLocal6((const struct sockaddr_in6*)ifa->ifa_addr)) continue;
    if (useDefault == 1) { /* default: anything but loopback and docker bridges */
      if (strncmp(ifa->ifa_name, "lo", 2) == 0 || strncmp(ifa->ifa_name, "docker", 6) == 0) continue;
    } else if (useDefault == 2) { /* default fallback: loopback only */
      if (strncmp(ifa->ifa_name, "lo", 2) != 0) continue;
    } else if (!chrSockIfMatches(spec, ifa->ifa_name)) {
      continue;
    }
    if (*n >= maxIfs) { (*n)++; continue; } /* count only; the caller sees min(n, maxIfs) */
    chrSockIf* e = &ifs[*n];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", ifa->ifa_name);
    if (family == AF_INET)
      memcpy(&e->addr.sin, ifa->ifa_addr, sizeof(struct sockaddr_in));
    else
      memcpy(&e->addr.sin6, ifa->ifa_addr, sizeof(struct sockaddr_in6));
    chrSockAddrSetPort(&e->addr, 0);
    (*n)++;
  }
}

ncclResult_t chrSockFindInterfaces(const char* spec, int family, chrSockIf* ifs, int maxIfs, int* nIfs,
                                   chrSockErr* err) {
  *nIfs = 0;
  if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)
    return chrSockSetErr(err, ncclInvalidArgument, "bad address family %d", family);
  if (maxIfs < 0) maxIfs = 0;
  struct ifaddrs* list = NULL;
  if (getifaddrs(&list) != 0)
    return chrSockSetErrno(err, ncclSystemError, errno, "getifaddrs failed: %s", strerror(errno));
  int emptySpec = (spec == NULL || spec[strspn(spec, " ")] == '\0');
  int n = 0;
  for (int pass = 0; pass < 2 && n == 0; pass++) {
    int useDefault = emptySpec ? pass + 1 : 0;
    if (!emptySpec && pass == 1) break;
    if (family == AF_UNSPEC || family == AF_INET) collect(list, spec, useDefault, AF_INET, ifs, maxIfs, &n);
    if (family == AF_UNSPEC || family == AF_INET6) collect(list, spec, useDefault, AF_INET6, ifs, maxIfs, &n);
  }
  freeifaddrs(list);
  *nIfs = n < maxIfs ? n : maxIfs;
  for (int i = 0; i < *nIfs; i++) {
    char buf[CHR_SOCK_ADDR_STRLEN];
    CHR_SOCK_TRACE("socket: interface %s %s matches '%s'", ifs[i].name,
                   chrSockAddrToString(&ifs[i].addr, buf, sizeof(buf)), emptySpec ? "(default)" : spec);
  }
  return ncclSuccess;
}

ncclResult_t chrSockLocalAddrFor(const chrSockAddr* remote, chrSockAddr* local, chrSockErr* err) {
  char rbuf[CHR_SOCK_ADDR_STRLEN];
  socklen_t len = chrSockAddrLen(remote);
  if (len == 0) return chrSockSetErr(err, ncclInvalidArgument, "remote address has unknown family");
  int fd = socket(remote->sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return chrSockSetErrno(err, ncclSystemError, errno, "socket(UDP) failed: %s", strerror(errno));
  chrSockAddr r = *remote;
  if (chrSockAddrPort(&r) == 0) chrSockAddrSetPort(&r, 9); /* a UDP connect needs some port */
  if (connect(fd, &r.sa, len) != 0) {
    int e = errno;
    close(fd);
    return chrSockSetErrno(err, ncclSystemError, e, "no route to %s: %s",
                         chrSockAddrToString(remote, rbuf, sizeof(rbuf)), strerror(e));
  }
  socklen_t l = sizeof(*local);
  memset(local, 0, sizeof(*local));
  if (getsockname(fd, &local->sa, &l) != 0) {
    int e = errno;
    close(fd);
    return chrSockSetErrno(err, ncclSystemError, e, "getsockname failed: %s", strerror(e));
  }
  close(fd);
  chrSockAddrSetPort(local, 0);
  return ncclSuccess;
}
