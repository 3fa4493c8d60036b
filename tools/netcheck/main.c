/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chorus-netcheck: conformance and stress check of a net plugin (README.md in this folder).
 *
 *   chorus-netcheck [options] PLUGIN            two ranks forked on this host, over loopback
 *   chorus-netcheck [options] --listen PORT PLUGIN      two hosts: this one is rank 0
 *   chorus-netcheck [options] --peer HOST:PORT PLUGIN   two hosts: this one is rank 1
 *
 * PLUGIN is a libnccl-net-*.so path or name (as NCCL_NET_PLUGIN takes it). Each --setting runs the
 * whole check in two fresh processes with those environment variables (a plugin reads its settings
 * at its first init). Exit status: 0 when every rule passed in every setting, 1 otherwise, 2 for
 * bad usage (an unknown option, or a value not read whole or out of range: args.h), after a line
 * that names the option, and for --mem cuda where GPU --gpu cannot be used (no driver, no such GPU).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "netcheck.h"

ncOptions ncOpt = {
    .dev = 0,
    .comms = 3,
    .depth = 8,
    .scale = 1.0,
    .perf = 1,
    .perfBytes = 64u << 20,
    .perfReps = 3,
    .baseline = 0,
    .timeoutSec = 20,
    .seed = 0x6e6574636865636bULL,
    .abi = 0,
    .mem = NC_MEM_HOST,
    .gpu = 0,
};

static void usage(FILE* f) {
  fprintf(f,
          "usage: chorus-netcheck [options] PLUGIN\n"
          "  PLUGIN               libnccl-net-*.so path or name, loaded as Chorus loads net plugins (ABI v8..v12)\n"
          "  -s, --setting \"K=V ...\"  run the whole check with these environment variables, in fresh processes;\n"
          "                       repeat for several settings (each gets its own report)\n"
          "  --comms N            connections per direction, all driven at once (default 3, max %d)\n"
          "  --depth N            receives in flight per connection (default 8; comm 1 always uses 32, comm 2 uses 1)\n"
          "  --scale X            multiply the number of messages of the checked traffic (0 < X <= 1000; default 1)\n"
          "  --dev N              device to use (default 0)\n"
          "  --abi N              bind at most ABI version N (8..12; default: the newest the library exports)\n"
          "  --mem host|cuda|cuda-host  memory of the checked traffic's buffers (default host). cuda: GPU memory,\n"
          "                       registered with regMr(NCCL_PTR_CUDA) or regMrDmaBuf, flushed with iflush after\n"
          "                       every receive, when the device advertises NCCL_PTR_CUDA/NCCL_PTR_DMABUF (the\n"
          "                       gpu.* rules); needs the CUDA driver. cuda-host: for a plugin's own CI on\n"
          "                       machines without GPUs: host memory handed to the plugin as NCCL_PTR_CUDA, no\n"
          "                       dma-buf; only test plugins (gdrtest with TESTNET_GDR_HOST_AS_CUDA=1) take it\n"
          "  --gpu N              the GPU of --mem cuda (default 0)\n"
          "  --timeout S          no progress for S seconds counts as a hang (default 20)\n"
          "  --seed N             seed of the schedules and payloads\n"
          "  --no-perf            skip the bandwidth/latency table\n"
          "  --perf-bytes B       bytes per bandwidth cell (default 64M; K/M/G suffixes)\n"
          "  --perf-reps N        measure every cell N times and show the best (default 3)\n"
          "  --baseline           add raw TCP (one stream) cells to the table, measured in the same run\n"
          "  --tcp-addr ADDR      address rank 1 listens on for the raw TCP baseline (default: loopback, or the\n"
          "                       local address of the side channel with --peer)\n"
          "  --time-limit S       kill a setting's two processes after S seconds (default 300)\n"
          "  --listen PORT        two hosts: this host is rank 0 and waits for rank 1 on PORT (side channel)\n"
          "  --peer HOST:PORT     two hosts: this host is rank 1 and connects to rank 0\n"
          "  --version            print chorus-netcheck's version\n"
          "Prints the plugin's devices, the bandwidth/latency table and the pass/fail list of rules (a broken\n"
          "rule is named with what was seen); exits 1 if any rule failed.\n",
          NC_MAX_COMMS);
}

/* Apply "K=V K=V" to this process's environment. */
static int applySetting(const char* setting) {
  char* copy = strdup(setting);
  if (copy == NULL) return -1;
  char* save = NULL;
  for (char* tok = strtok_r(copy, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save)) {
    char* eq = strchr(tok, '=');
    if (eq == NULL || eq == tok) {
      fprintf(stderr, "chorus-netcheck: setting '%s': '%s' is not NAME=VALUE\n", setting, tok);
      free(copy);
      return -1;
    }
    *eq = '\0';
    setenv(tok, eq + 1, 1);
  }
  free(copy);
  return 0;
}

/* What every rank needs in its environment before the core reads its parameters. */
static void prepareEnv(void) {
  setenv("NCCL_NET_PLUGIN", ncOpt.plugin, 1);
  setenv("NCCL_NET", "", 1);             /* no name filter: the given library is the one to check */
  setenv("CHORUS_PLUGIN_STRICT", "1", 1); /* a library that cannot load is an error, not a fallback */
  if (getenv("NCCL_DEBUG") == NULL) setenv("NCCL_DEBUG", "WARN", 1); /* the plugin's warnings explain failures */
  if (ncOpt.abi > 0) {
    char v[16];
    snprintf(v, sizeof(v), "%d", ncOpt.abi);
    setenv("CHORUS_NET_PLUGIN_ABI", v, 1);
  }
}

/* One setting on this host: fork rank 0 and rank 1 joined by a socketpair. Returns 0 if it passed. */
static int runLocal(const char* setting, double timeLimit) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    fprintf(stderr, "chorus-netcheck: socketpair: %s\n", strerror(errno));
    return 1;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pids[2];
  for (int rank = 0; rank < 2; rank++) {
    pids[rank] = fork();
    if (pids[rank] < 0) {
      fprintf(stderr, "chorus-netcheck: fork: %s\n", strerror(errno));
      if (rank == 1) kill(pids[0], SIGKILL);
      return 1;
    }
    if (pids[rank] == 0) {
      close(sv[1 - rank]);
      if (setting != NULL && applySetting(setting) != 0) _exit(2);
      _exit(ncRunRank(rank, sv[rank], "127.0.0.1"));
    }
  }
  close(sv[0]);
  close(sv[1]);
  int status[2] = {0, 0}, alive = 2;
  int reaped[2] = {0, 0};
  double deadline = ncNow() + timeLimit;
  int timedOut = 0;
  while (alive > 0) {
    for (int rank = 0; rank < 2; rank++) {
      if (reaped[rank]) continue;
      pid_t w = waitpid(pids[rank], &status[rank], WNOHANG);
      if (w == pids[rank]) reaped[rank] = 1, alive--;
    }
    if (alive > 0 && ncNow() > deadline && !timedOut) {
      timedOut = 1;
      for (int rank = 0; rank < 2; rank++)
        if (!reaped[rank]) kill(pids[rank], SIGKILL);
    }
    if (alive > 0) usleep(20000);
  }
  int failed = 0;
  for (int rank = 0; rank < 2; rank++) {
    if (WIFSIGNALED(status[rank])) {
      printf("  FAIL  %-20s rank %d %s (signal %d)\n", "peer", rank,
             timedOut ? "killed: the setting ran past --time-limit (a hang?)" : "died", WTERMSIG(status[rank]));
      failed = 1;
    } else if (WEXITSTATUS(status[rank]) != 0) {
      if (rank == 1) printf("  FAIL  %-20s rank 1 exited with status %d\n", "peer", WEXITSTATUS(status[rank]));
      failed = 1;
    }
  }
  if (failed && (WIFSIGNALED(status[0]) || timedOut)) printf("result: FAIL\n");
  fflush(stdout);
  return failed;
}

/* Two hosts: connect the side channel, then run one rank here. */
static int runRemote(int rank, const char* where) {
  int fd = -1;
  char peerIp[INET6_ADDRSTRLEN] = "", localIp[INET6_ADDRSTRLEN] = "";
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (rank == 0) {
    int lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int zero = 0, one = 1;
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)atoi(where)), .sin6_addr = in6addr_any};
    if (lfd >= 0) {
      setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    }
    if (lfd < 0 || bind(lfd, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(lfd, 1) != 0) {
      fprintf(stderr, "chorus-netcheck: listening on port %s: %s\n", where, strerror(errno));
      return 1;
    }
    printf("chorus-netcheck: waiting for rank 1 on port %s\n", where);
    fflush(stdout);
    fd = accept4(lfd, (struct sockaddr*)&ss, &len, SOCK_CLOEXEC);
    close(lfd);
    if (fd < 0) {
      fprintf(stderr, "chorus-netcheck: accept: %s\n", strerror(errno));
      return 1;
    }
  } else {
    char host[256];
    snprintf(host, sizeof(host), "%s", where);
    char* colon = strrchr(host, ':');
    if (colon == NULL) {
      usage(stderr);
      return 2;
    }
    *colon = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || ai == NULL) {
      fprintf(stderr, "chorus-netcheck: cannot resolve %s\n", where);
      return 1;
    }
    double deadline = ncNow() + 60;
    while (fd < 0) {
      fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
      if (fd >= 0) close(fd);
      fd = -1;
      if (ncNow() > deadline) {
        fprintf(stderr, "chorus-netcheck: cannot connect to %s: %s\n", where, strerror(errno));
        freeaddrinfo(ai);
        return 1;
      }
      usleep(200000);
    }
    freeaddrinfo(ai);
    len = sizeof(ss);
    getpeername(fd, (struct sockaddr*)&ss, &len);
  }
  /* Numeric addresses of both ends, with IPv4-mapped IPv6 shown as IPv4 for the TCP baseline. */
  struct sockaddr_storage loc;
  socklen_t locLen = sizeof(loc);
  getsockname(fd, (struct sockaddr*)&loc, &locLen);
  getnameinfo((struct sockaddr*)&ss, len, peerIp, sizeof(peerIp), NULL, 0, NI_NUMERICHOST);
  getnameinfo((struct sockaddr*)&loc, locLen, localIp, sizeof(localIp), NULL, 0, NI_NUMERICHOST);
  if (strncmp(peerIp, "::ffff:", 7) == 0) memmove(peerIp, peerIp + 7, strlen(peerIp + 7) + 1);
  if (strncmp(localIp, "::ffff:", 7) == 0) memmove(localIp, localIp + 7, strlen(localIp + 7) + 1);
  static char tcpAddr[INET6_ADDRSTRLEN];
  snprintf(tcpAddr, sizeof(tcpAddr), "%s", localIp);
  if (ncOpt.tcpAddr == NULL) ncOpt.tcpAddr = tcpAddr;
  return ncRunRank(rank, fd, peerIp);
}

/* A usage error: one line naming the option and what is wrong, then the usage; exit status 2. */
static int badUsage(const char* what, const char* opt, const char* value) {
  if (value != NULL) fprintf(stderr, "chorus-netcheck: %s '%s': '%s'\n", what, opt, value);
  else fprintf(stderr, "chorus-netcheck: %s '%s'\n", what, opt);
  usage(stderr);
  return 2;
}

static int parseMem(const char* v, ncMemKind* out) {
  static const ncMemKind kinds[] = {NC_MEM_HOST, NC_MEM_CUDA, NC_MEM_CUDA_HOST};
  for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
    if (strcmp(v, ncMemName(kinds[k])) == 0) {
      *out = kinds[k];
      return 0;
    }
  return -1;
}

/* What the command line asks beyond ncOpt. */
typedef struct {
  const char* settings[64];
  int nSettings;
  const char* listenPort;
  const char* peer;
  double timeLimit;
} ncCommand;

/* Reads the command line into ncOpt and *cmd. Returns -1 to go on, else the exit status: 0 after
 * --help or --version, 2 after a usage error (its line printed, then the usage). */
static int parseArgs(int argc, char** argv, ncCommand* cmd) {
  /* Every option not handled before this list takes a value, which must be read whole and in range. */
  static const char* const withValue[] = {"-s", "--setting", "--comms", "--depth", "--scale", "--dev",
                                          "--abi", "--timeout", "--seed", "--perf-bytes", "--perf-reps",
                                          "--tcp-addr", "--time-limit", "--listen", "--peer", "--mem", "--gpu"};
  int port;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--version") == 0) {
      chrArgPrintVersion("netcheck");
      return 0;
    }
    if (strcmp(a, "--no-perf") == 0) {
      ncOpt.perf = 0;
      continue;
    }
    if (strcmp(a, "--baseline") == 0) {
      ncOpt.baseline = 1;
      continue;
    }
    if (a[0] != '-') {
      if (ncOpt.plugin != NULL) return badUsage("a second PLUGIN", a, NULL);
      ncOpt.plugin = a;
      continue;
    }
    int known = 0;
    for (size_t k = 0; k < sizeof(withValue) / sizeof(withValue[0]); k++) known |= strcmp(a, withValue[k]) == 0;
    if (!known) return badUsage("unknown option", a, NULL);
    if (i + 1 >= argc) return badUsage("no value for", a, NULL);
    const char* v = argv[++i];
    int bad = 0;
    if (strcmp(a, "-s") == 0 || strcmp(a, "--setting") == 0) {
      if (cmd->nSettings == 64) return badUsage("more than 64 settings at", a, v);
      cmd->settings[cmd->nSettings++] = v;
    } else if (strcmp(a, "--comms") == 0) bad = chrArgInt(v, 1, NC_MAX_COMMS, &ncOpt.comms);
    else if (strcmp(a, "--depth") == 0) bad = chrArgInt(v, 1, NC_MAX_DEPTH, &ncOpt.depth);
    else if (strcmp(a, "--scale") == 0) bad = chrArgDouble(v, &ncOpt.scale) || !(ncOpt.scale > 0 && ncOpt.scale <= 1000);
    else if (strcmp(a, "--dev") == 0) bad = chrArgInt(v, 0, 1 << 20, &ncOpt.dev);
    else if (strcmp(a, "--abi") == 0) bad = chrArgInt(v, 8, 12, &ncOpt.abi);
    else if (strcmp(a, "--mem") == 0) bad = parseMem(v, &ncOpt.mem);
    else if (strcmp(a, "--gpu") == 0) bad = chrArgInt(v, 0, 1 << 20, &ncOpt.gpu);
    else if (strcmp(a, "--timeout") == 0) bad = chrArgDouble(v, &ncOpt.timeoutSec) || !(ncOpt.timeoutSec > 0);
    else if (strcmp(a, "--seed") == 0) bad = chrArgU64(v, &ncOpt.seed);
    else if (strcmp(a, "--perf-bytes") == 0) bad = chrArgSize(v, &ncOpt.perfBytes) || ncOpt.perfBytes == 0;
    else if (strcmp(a, "--perf-reps") == 0) bad = chrArgInt(v, 1, 1 << 20, &ncOpt.perfReps);
    else if (strcmp(a, "--tcp-addr") == 0) ncOpt.tcpAddr = v;
    else if (strcmp(a, "--time-limit") == 0) bad = chrArgDouble(v, &cmd->timeLimit) || !(cmd->timeLimit > 0);
    else if (strcmp(a, "--listen") == 0) {
      bad = chrArgInt(v, 1, 65535, &port);
      cmd->listenPort = v;
    } else if (strcmp(a, "--peer") == 0) {
      const char* colon = strrchr(v, ':');
      bad = colon == NULL || colon == v || chrArgInt(colon + 1, 1, 65535, &port) != 0;
      cmd->peer = v;
    }
    if (bad) return badUsage("bad value for", a, v);
  }
  const char* wrong = ncOpt.plugin == NULL                 ? "no PLUGIN given"
                      : cmd->listenPort != NULL && cmd->peer ? "--listen and --peer: give one of them"
                                                             : NULL;
  if (wrong == NULL) return -1;
  fprintf(stderr, "chorus-netcheck: %s\n", wrong);
  usage(stderr);
  return 2;
}

int main(int argc, char** argv) {
  ncCommand cmd = {.nSettings = 0, .timeLimit = 300};
  int rc = parseArgs(argc, argv, &cmd);
  if (rc >= 0) return rc;
  signal(SIGPIPE, SIG_IGN);
  if (ncOpt.mem == NC_MEM_CUDA) {
    char why[320] = "";
    if (ncGpuProbe(why, sizeof(why)) != 0) {
      fprintf(stderr, "chorus-netcheck: --mem cuda: %s\n"
                      "chorus-netcheck: (--mem cuda-host runs the same rules on host memory, for plugins that take it: README)\n",
              why);
      return 2;
    }
  }
  prepareEnv();

  if (cmd.listenPort || cmd.peer) {
    if (cmd.nSettings > 0 && applySetting(cmd.settings[0]) != 0) return 2;
    return runRemote(cmd.listenPort ? 0 : 1, cmd.listenPort ? cmd.listenPort : cmd.peer) ? 1 : 0;
  }
  int failed = 0;
  for (int s = 0; s < (cmd.nSettings ? cmd.nSettings : 1); s++) {
    const char* setting = cmd.nSettings ? cmd.settings[s] : NULL;
    printf("== chorus-netcheck %s%s%s\n", ncOpt.plugin, setting ? ", setting: " : "", setting ? setting : "");
    fflush(stdout);
    if (runLocal(setting, cmd.timeLimit) != 0) {
      failed++;
      printf("== FAILED: %s\n", setting ? setting : "default setting");
    }
    printf("\n");
  }
  if (cmd.nSettings > 1)
    printf("chorus-netcheck: %d setting%s, %d failed\n", cmd.nSettings, cmd.nSettings == 1 ? "" : "s", failed);
  return failed ? 1 : 0;
}
