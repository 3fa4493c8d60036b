/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chorus-tcp-stream: raw TCP bandwidth and latency between two processes, the baseline for a net
 * plugin (docs/perf/net.md).
 *
 *   chorus-tcp-stream [-s SIZE] [-b BYTES] [-n STREAMS] [-l ITERS] [-a ADDR]
 *   chorus-tcp-stream --server [-a ADDR] ...            (prints the port, waits for a client)
 *   chorus-tcp-stream --client ADDR:PORT ...
 *
 *   -s  bytes per send()/recv() call (default 1M; K/M/G suffixes)
 *   -b  bytes per stream (default 256M)
 *   -n  parallel streams, one thread each (default 1)
 *   -l  ping-pong round trips of 8 bytes for the latency line (default 2000; 0: none)
 *   -a  address to listen on (default 127.0.0.1)
 * Without --server/--client it forks a receiver and a sender over ADDR (loopback by default).
 * Prints: "raw TCP: N stream(s) x BYTES, SIZE per call: X GB/s (Y s)" and "raw TCP latency: Z us".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcp_stream.h"

static size_t parseSize(const char* s) {
  char* end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return v < 0 ? 0 : (size_t)v;
}

static void usage(const char* prog) {
  fprintf(stderr, "usage: %s [--server | --client ADDR:PORT] [-s SIZE] [-b BYTES] [-n STREAMS] [-l ITERS] [-a ADDR]\n",
          prog);
  exit(2);
}

/* One side of the measurement over n fresh connections from listenFd (server) or to addr:port. */
static int runSide(int isServer, int listenFd, const char* addr, int port, int n, size_t size, size_t bytes, int iters) {
  int fds[64];
  for (int i = 0; i < n; i++) {
    fds[i] = isServer ? tcpsAccept(listenFd, 30) : tcpsConnect(addr, port, 30);
    if (fds[i] < 0) return 1;
  }
  /* The client sends: its clock covers the transfer. */
  double sec = tcpsStream(fds, n, !isServer, size, bytes);
  if (sec < 0) return 1;
  if (!isServer)
    printf("raw TCP: %d stream(s) x %zu bytes, %zu bytes per call: %.2f GB/s (%.3f s)\n", n, bytes, size,
           (double)bytes * n / sec / 1e9, sec);
  if (iters > 0) {
    double us = tcpsPingPong(fds[0], !isServer, 8, iters);
    if (us < 0) return 1;
    if (!isServer) printf("raw TCP latency: %.1f us (8-byte ping-pong, half round trip, %d iterations)\n", us, iters);
  }
  for (int i = 0; i < n; i++) close(fds[i]);
  fflush(stdout); /* the forked client leaves through _exit */
  return 0;
}

int main(int argc, char** argv) {
  size_t size = 1 << 20, bytes = 256u << 20;
  int n = 1, iters = 2000, mode = 0; /* 0 fork, 1 server, 2 client */
  const char* addr = "127.0.0.1";
  char peer[256] = "";
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--server") == 0) mode = 1;
    else if (strcmp(a, "--client") == 0 && v) mode = 2, snprintf(peer, sizeof(peer), "%s", v), i++;
    else if (strcmp(a, "-s") == 0 && v) size = parseSize(v), i++;
    else if (strcmp(a, "-b") == 0 && v) bytes = parseSize(v), i++;
    else if (strcmp(a, "-n") == 0 && v) n = atoi(v), i++;
    else if (strcmp(a, "-l") == 0 && v) iters = atoi(v), i++;
    else if (strcmp(a, "-a") == 0 && v) addr = v, i++;
    else usage(argv[0]);
  }
  if (n < 1 || n > 64 || size == 0) usage(argv[0]);
  if (mode == 2) {
    char* colon = strrchr(peer, ':');
    if (colon == NULL) usage(argv[0]);
    *colon = '\0';
    return runSide(0, -1, peer, atoi(colon + 1), n, size, bytes, iters);
  }
  int port = 0;
  int lfd = tcpsListen(addr, &port);
  if (lfd < 0) return 1;
  if (mode == 1) {
    printf("listening on %s:%d\n", addr, port);
    fflush(stdout);
    return runSide(1, lfd, NULL, 0, n, size, bytes, iters);
  }
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(lfd);
    _exit(runSide(0, -1, addr, port, n, size, bytes, iters));
  }
  int rc = runSide(1, lfd, NULL, 0, n, size, bytes, iters);
  int status = 0;
  waitpid(child, &status, 0);
  return rc || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
