/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_stream.h: a tiny raw-TCP benchmark, the baseline a net plugin's bandwidth and latency are
 * compared with. Plain blocking POSIX sockets with TCP_NODELAY and the kernel's default buffers,
 * nothing else: what one application thread gets from one TCP stream.
 *
 * Used by chorus-tcp-stream (tcp_stream_main.c) and by chorus-netcheck's baseline rows. Every
 * function returns -1 on failure after printing one line to stderr saying why.
 */
#ifndef CHORUS_TCP_STREAM_H_
#define CHORUS_TCP_STREAM_H_

#include <stddef.h>

/* Listen on ip (numeric IPv4/IPv6) at an ephemeral port. Returns the fd; *port gets the port. */
int tcpsListen(const char* ip, int* port);
/* Accept one connection within timeoutSec. Returns the fd. */
int tcpsAccept(int listenFd, double timeoutSec);
/* Connect to ip:port, retrying refused connections until timeoutSec. Returns the fd. */
int tcpsConnect(const char* ip, int port, double timeoutSec);

/* Move `total` bytes one way over each of the n streams fds[0..n-1] (one thread per stream), in
 * send()/recv() calls of up to `chunk` bytes. Every receiver answers with one byte once it has
 * everything, so the sender's clock covers the whole transfer. Returns the sender's seconds from
 * the first byte to the last answer; the receiver returns 0. */
double tcpsStream(const int* fds, int n, int isSender, size_t chunk, size_t total);

/* iters round trips of `size` bytes each way (after a few unmeasured ones). Returns the client's
 * mean one-way latency (half a round trip) in microseconds; the server returns 0. */
double tcpsPingPong(int fd, int isClient, size_t size, int iters);

#endif /* CHORUS_TCP_STREAM_H_ */
