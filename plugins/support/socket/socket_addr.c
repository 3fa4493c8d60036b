/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket_addr.c: socket addresses: parse "host:port" / "[v6]:port", print, compare, family names.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "socket/socket_internal.h"

socklen_t chrSockAddrLen(const chrSockAddr* addr) {
  if (addr->sa.sa_family == AF_INET) return sizeof(struct sockaddr_in);
  if (addr->sa.sa_family == AF_INET6) return sizeof(struct sockaddr_in6);
  return 0;
}

int chrSockAddrPort(const chrSockAddr* addr) {
  if (addr->sa.sa_family == AF_INET) return ntohs(addr->sin.sin_port);
  if (addr->sa.sa_family == AF_INET6) return ntohs(addr->sin6.sin6_port);
  return -1;
}

void chrSockAddrSetPort(chrSockAddr* addr, int port) {
  if (addr->sa.sa_family == AF_INET) addr->sin.sin_port = htons((uint16_t)port);
  if (addr->sa.sa_family == AF_INET6) addr->sin6.sin6_port = htons((uint16_t)port);
}

int chrSockAddrEqual(const chrSockAddr* a, const chrSockAddr* b) {
  if (a->sa.sa_family != b->sa.sa_family) return 0;
  if (a->sa.sa_family == AF_INET)
    return a->sin.sin_port == b->sin.sin_port && a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
  if (a->sa.sa_family == AF_INET6)
    return a->sin6.sin6_port == b->sin6.sin6_port &&
           memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr, sizeof(struct in6_addr)) == 0 &&
           a->sin6.sin6_scope_id == b->sin6.sin6_scope_id;
  return 0;
}

int chrSockAddrIsAny(const chrSockAddr* addr) {
  if (addr->sa.sa_family == AF_INET) return addr->sin.sin_addr.s_addr == htonl(INADDR_ANY);
  if (addr->sa.sa_family == AF_INET6) return IN6_IS_ADDR_UNSPECIFIED(&addr->sin6.sin6_addr);
  return 0;
}

const char* chrSockAddrToString(const chrSockAddr* addr, char* buf, size_t size) {
  char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
  if (size == 0) return buf;
  if (addr->sa.sa_family == AF_INET) {
    if (inet_ntop(AF_INET, &addr->sin.sin_addr, host, sizeof(host)) == NULL) snprintf(host, sizeof(host), "?");
    snprintf(buf, size, "%s:%d", host, ntohs(addr->sin.sin_port));
  } else if (addr->sa.sa_family == AF_INET6) {
    if (inet_ntop(AF_INET6, &addr->sin6.sin6_addr, host, sizeof(host)) == NULL) snprintf(host, sizeof(host), "?");
    if (addr->sin6.sin6_scope_id != 0) {
      char ifname[IF_NAMESIZE];
      size_t n = strlen(host);
      if (if_indextoname(addr->sin6.sin6_scope_id, ifname) != NULL)
        snprintf(host + n, sizeof(host) - n, "%%%s", ifname);
      else
        snprintf(host + n, sizeof(host) - n, "%%%u", (unsigned)addr->sin6.sin6_scope_id);
    }
    snprintf(buf, size, "[%s]:%d", host, ntohs(addr->sin6.sin6_port));
  } else {
    snprintf(buf, size, "<family %d>", (int)addr->sa.sa_family);
  }
  return buf;
}

ncclResult_t chrSockAddrParse(const char* str, int family, chrSockAddr* out, chrSockErr* err) {
  char host[256];
  const char* portStr;
  if (str == NULL || str[0] == '\0')
    return chrSockSetErr(err, ncclInvalidArgument, "empty socket address (expected host:port)");
  if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6)
    return chrSockSetErr(err, ncclInvalidArgument, "bad address family %d for '%s'", family, str);

  if (str[0] == '[') {
    const char* close = strchr(str, ']');
    if (close == NULL || close[1] != ':')
      return chrSockSetErr(err, ncclInvalidArgument, "bad address '%s': expected [v6addr]:port", str);
    size_t n = (size_t)(close - str - 1);
    if (n == 0 || n >= sizeof(host))
      return chrSockSetErr(err, ncclInvalidArgument, "bad address '%s': host part empty or too long", str);
    memcpy(host, str + 1, n);
    host[n] = '\0';
    portStr = close + 2;
    if (family == AF_UNSPEC) family = AF_INET6;
  } else {
    const char* colon = strrchr(str, ':');
    if (colon == NULL)
      return chrSockSetErr(err, ncclInvalidArgument, "bad address '%s': expected host:port", str);
    if (memchr(str, ':', (size_t)(colon - str)) != NULL)
      return chrSockSetErr(err, ncclInvalidArgument,
                           "bad address '%s': an IPv6 address needs brackets, as in [::1]:port", str);
    size_t n = (size_t)(colon - str);
    if (n == 0 || n >= sizeof(host))
      return chrSockSetErr(err, ncclInvalidArgument, "bad address '%s': host part empty or too long", str);
    memcpy(host, str, n);
    host[n] = '\0';
    portStr = colon + 1;
  }

  char* end = NULL;
  errno = 0;
  long port = strtol(portStr, &end, 10);
  if (portStr[0] == '\0' || *end != '\0' || errno != 0 || port < 0 || port > 65535)
    return chrSockSetErr(err, ncclInvalidArgument, "bad port in '%s' (expected 0..65535)", str);

  struct addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = NULL;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0)
    return chrSockSetErr(err, ncclInvalidArgument, "cannot resolve '%s': %s", host,
                         rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
  /* AF_UNSPEC: prefer the first IPv4 result, as bootstrap addresses mostly are. */
  struct addrinfo* pick = NULL;
  for (struct addrinfo* ai = res; ai != NULL; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    if (pick == NULL) pick = ai;
    if (family == AF_UNSPEC && ai->ai_family == AF_INET) { pick = ai; break; }
  }
  if (pick == NULL) {
    freeaddrinfo(res);
    return chrSockSetErr(err, ncclInvalidArgument, "'%s' has no IPv4/IPv6 address", host);
  }
  memset(out, 0, sizeof(*out));
  memcpy(out, pick->ai_addr, pick->ai_addrlen <= sizeof(*out) ? pick->ai_addrlen : sizeof(*out));
  freeaddrinfo(res);
  chrSockAddrSetPort(out, (int)port);
  return ncclSuccess;
}

ncclResult_t chrSockParseFamily(const char* name, int* family, chrSockErr* err) {
  if (name == NULL || name[0] == '\0') { *family = AF_UNSPEC; return ncclSuccess; }
  if (!strcasecmp(name, "AF_INET") || !strcasecmp(name, "inet") || !strcasecmp(name, "ipv4") ||
      !strcmp(name, "4")) {
    *family = AF_INET;
    return ncclSuccess;
  }
  if (!strcasecmp(name, "AF_INET6") || !strcasecmp(name, "inet6") || !strcasecmp(name, "ipv6") ||
      !strcmp(name, "6")) {
    *family = AF_INET6;
    return ncclSuccess;
  }
  return chrSockSetErr(err, ncclInvalidArgument, "unknown socket family '%s' (expected AF_INET or AF_INET6)",
                       name);
}
