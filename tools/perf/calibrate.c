/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate.c: chorus-perf --calibrate, which measures the constants of the planner's cost model
 * (core/plan/cost_model.h) on this machine and writes them as the [cost_model] INI section that the
 * library reads (point CHORUS_CONF at the output, or paste it into an INI file).
 *
 *   chorus-perf --calibrate [-np 4] [-b 8] [-e 8M] [-f 4] [-n 20] [-w 5] [--reps 3]
 *                           [--transports shm,net] [--output FILE] [-T 120]
 *
 * For each transport (shm: the ranks on this host; net: every rank acts out its own host, so every
 * link goes through the net plugin) and each algorithm of the host path (ring, tree; its one protocol,
 * SIMPLE), this binary runs itself as an ordinary all-reduce benchmark on -np ranks, --reps times, with
 * the choice forced by NCCL_ALGO and NCCL_PROTO. Each run is a fresh process, so the library reads those
 * settings anew. The plan column of every row must name the forced algorithm, or the run is refused.
 * Per size, the time kept is the smallest of the out-of-place and in-place times over the runs (noise
 * on a shared machine only ever adds time); each time is the slowest rank's (-a 3).
 *
 * The fit: time = A + bytes x c by least squares weighted by 1/time^2, i.e. on relative errors, so the
 * small sizes decide A as much as the large ones decide c. Then, with the model's shape for all-reduce
 * on n ranks (cost_model.h), latency per hop = A / hops(algorithm, n) and bus bandwidth = busFactor(n) /
 * (c x 1e3) GB/s. An intercept at or below 0 means the latency is below what the sizes can show: it is
 * written as 0.01 us per hop, with a comment.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "perf.h"
#include "plan/cost_model.h"

extern const char* ncclChorusVersionString(void) __attribute__((weak));

#define CAL_MAX_SIZES 64
#define CAL_MAX_OUTPUT (4 << 20) /* a run's table is a few KB; more means something else is talking */
#define CAL_LATENCY_FLOOR_US 0.01

typedef struct {
  int np, reps, iters, warmup, timeoutSec;
  size_t minBytes, maxBytes;
  double factor;
  int transports[CHR_COST_TRANSPORTS]; /* 1: measure */
  const char* outPath;                 /* NULL: stdout */
} calOptions;

/* One (transport, algorithm): the sizes and the best time of each, then the fit. */
typedef struct {
  int measured;
  int nSizes;
  size_t sizes[CAL_MAX_SIZES];
  double us[CAL_MAX_SIZES]; /* smallest time seen; 0 until a run reports the size */
  double interceptUs, usPerByte, worstResidual;
  double latencyUs, busGBs;
  int latencyFloored;
} calResult;

static const char* const lowerTransport[CHR_COST_TRANSPORTS] = {"shm", "net"};
static const char* const lowerAlgo[CHR_COST_ALGOS] = {"ring", "tree"};

static void usage(FILE* f, const char* prog) {
  fprintf(f,
          "usage: %s --calibrate [-np N] [-b MIN] [-e MAX] [-f F] [-n ITERS] [-w WARMUP] [--reps R]\n"
          "                   [--transports shm,net] [--output FILE] [-T SEC]\n"
          "Measures the planner's cost model (latency per hop, bus bandwidth) of each transport and\n"
          "algorithm with all-reduce on N local ranks, and writes it as a [cost_model] INI section.\n"
          "  -np N            ranks (default 4; at least 2); net runs act out N hosts\n"
          "  -b, -e, -f       sizes: MIN to MAX bytes, times F each step (default 8, 8M, 4)\n"
          "  -n, -w           timed and warm-up iterations per size (default 20, 5)\n"
          "  --reps R         runs per transport and algorithm; the best time per size is kept (default 3)\n"
          "  --transports L   comma list of shm, net (default shm,net)\n"
          "  --output FILE    write the section to FILE (default: standard output)\n"
          "  -T SEC           a run that takes longer is killed and calibration fails (default 120)\n",
          prog);
}

static int parseTransports(const char* s, calOptions* o) {
  memset(o->transports, 0, sizeof(o->transports));
  char buf[64];
  if (strlen(s) >= sizeof(buf)) return -1;
  strcpy(buf, s);
  int any = 0;
  for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int t = strcmp(tok, "shm") == 0 ? CHR_COST_SHM : strcmp(tok, "net") == 0 ? CHR_COST_NET : -1;
    if (t < 0) return -1;
    o->transports[t] = any = 1;
  }
  return any ? 0 : -1;
}

static const char* optName(int c) {
  switch (c) {
    case 'N': return "-np";
    case 'R': return "--reps";
    case 'X': return "--transports";
    case 'O': return "--output";
    case 'b': return "-b";
    case 'e': return "-e";
    case 'f': return "-f";
    case 'n': return "-n";
    case 'w': return "-w";
    case 'T': return "-T";
    default: return "an option";
  }
}

/* 0 on success, 1 on a usage error (printed), 2 for --help. */
static int parseOptions(int argc, char** argv, calOptions* o) {
  *o = (calOptions){.np = 4, .reps = 3, .iters = 20, .warmup = 5, .timeoutSec = 120, .minBytes = 8,
                    .maxBytes = 8u << 20, .factor = 4, .transports = {1, 1}};
  const char* prog = argv[0];
  static const struct option longOpts[] = {
      {"calibrate", no_argument, 0, 'C'},      {"np", required_argument, 0, 'N'},
      {"minbytes", required_argument, 0, 'b'}, {"maxbytes", required_argument, 0, 'e'},
      {"stepfactor", required_argument, 0, 'f'}, {"iters", required_argument, 0, 'n'},
      {"warmup_iters", required_argument, 0, 'w'}, {"reps", required_argument, 0, 'R'},
      {"transports", required_argument, 0, 'X'}, {"output", required_argument, 0, 'O'},
      {"timeout", required_argument, 0, 'T'},  {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  /* "-np N" reads as -n p to getopt: turn it into --np first (argv of our own copy). */
  char** args = malloc(sizeof(char*) * (size_t)(argc + 1));
  if (!args) return 1;
  for (int i = 0; i < argc; i++) args[i] = strcmp(argv[i], "-np") == 0 ? "--np" : argv[i];
  args[argc] = NULL;
  int rc = 0;
  optind = 1;
  opterr = 1;
  for (;;) {
    int c = getopt_long(argc, args, "b:e:f:n:w:T:h", longOpts, NULL);
    if (c == -1) break;
    int bad = 0;
    switch (c) {
      case 'C': break;
      case 'N': bad = chrArgInt(optarg, 2, 1024, &o->np); break;
      case 'b': bad = chrArgSize(optarg, &o->minBytes) || o->minBytes < 4; break;
      case 'e': bad = chrArgSize(optarg, &o->maxBytes); break;
      case 'f': bad = chrArgDouble(optarg, &o->factor) || !(o->factor >= 1.5 && o->factor <= 1024); break;
      case 'n': bad = chrArgInt(optarg, 1, 1 << 20, &o->iters); break;
      case 'w': bad = chrArgInt(optarg, 0, 1 << 20, &o->warmup); break;
      case 'R': bad = chrArgInt(optarg, 1, 100, &o->reps); break;
      case 'X': bad = parseTransports(optarg, o); break;
      case 'O': o->outPath = optarg; break;
      case 'T': bad = chrArgInt(optarg, 1, 86400, &o->timeoutSec); break;
      case 'h': usage(stdout, prog); free(args); return 2;
      default: rc = 1; break;
    }
    if (bad) {
      fprintf(stderr, "%s --calibrate: bad value for %s: '%s'\n", prog, optName(c), optarg ? optarg : "");
      rc = 1;
    }
  }
  if (rc == 0 && optind < argc) {
    fprintf(stderr, "%s --calibrate: unexpected argument '%s' (the collective is always all-reduce)\n", prog,
            args[optind]);
    rc = 1;
  }
  free(args);
  if (rc) {
    usage(stderr, prog);
    return 1;
  }
  if (o->maxBytes < o->minBytes) {
    fprintf(stderr, "%s --calibrate: -e %zu is smaller than -b %zu\n", prog, o->maxBytes, o->minBytes);
    return 1;
  }
  return 0;
}

/* The sizes chorus-perf will run: -b, x -f, up to -e (its own rule, options.c/nextSize), as multiples
 * of 4 bytes (float elements). At least two are needed for a fit. */
static int planSizes(const calOptions* o, calResult* r) {
  r->nSizes = 0;
  size_t size = o->minBytes;
  for (;;) {
    if (r->nSizes == CAL_MAX_SIZES) return -1;
    r->sizes[r->nSizes] = size / 4 * 4;
    r->us[r->nSizes++] = 0;
    size_t next = (size_t)((double)size * o->factor);
    if (next <= size || next > o->maxBytes) break;
    size = next;
  }
  return r->nSizes >= 2 ? 0 : -1;
}

/* ---- one run ------------------------------------------------------------------------------------ */

/* Reads everything from fd into a growing buffer (NUL-terminated). */
static char* readAll(int fd, size_t* lenOut) {
  size_t cap = 16384, len = 0;
  char* buf = malloc(cap);
  if (!buf) return NULL;
  for (;;) {
    if (len + 1 == cap) {
      if (cap >= CAL_MAX_OUTPUT) break; /* keep draining below, so the child never blocks on a full pipe */
      char* grown = realloc(buf, cap * 2);
      if (!grown) break;
      buf = grown;
      cap *= 2;
    }
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  char sink[4096];
  while (read(fd, sink, sizeof(sink)) > 0) {
  }
  buf[len] = '\0';
  *lenOut = len;
  return buf;
}

/* Runs this binary as `chorus-perf -np N [--hosts N] allreduce ...` with the algorithm forced and
 * returns its standard output (malloc'd), or NULL after saying why. */
static char* runOnce(const calOptions* o, int transport, int algo) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    fprintf(stderr, "chorus-perf --calibrate: cannot find this program (/proc/self/exe): %s\n", strerror(errno));
    return NULL;
  }
  self[n] = '\0';
  char np[16], b[32], e[32], f[32], iters[16], warm[16], tmo[16];
  snprintf(np, sizeof(np), "%d", o->np);
  snprintf(b, sizeof(b), "%zu", o->minBytes);
  snprintf(e, sizeof(e), "%zu", o->maxBytes);
  snprintf(f, sizeof(f), "%g", o->factor);
  snprintf(iters, sizeof(iters), "%d", o->iters);
  snprintf(warm, sizeof(warm), "%d", o->warmup);
  snprintf(tmo, sizeof(tmo), "%d", o->timeoutSec);
  const char* argv[32];
  int k = 0;
  argv[k++] = self;
  argv[k++] = "-np";
  argv[k++] = np;
  if (transport == CHR_COST_NET) {
    argv[k++] = "--hosts";
    argv[k++] = np;
  }
  const char* rest[] = {"allreduce", "-b", b, "-e", e, "-f", f, "-n", iters, "-w", warm, "-c", "0", "-a", "3",
                        "-q", "-T", tmo, NULL};
  for (int i = 0; rest[i]; i++) argv[k++] = rest[i];
  argv[k] = NULL;

  int fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "chorus-perf --calibrate: pipe: %s\n", strerror(errno));
    return NULL;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "chorus-perf --calibrate: fork: %s\n", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return NULL;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    /* The forced choice, and the link kind asked for whatever the caller's settings say. */
    setenv("NCCL_ALGO", algo == CHR_COST_TREE ? "tree" : "ring", 1);
    setenv("NCCL_PROTO", "simple", 1);
    setenv("CHORUS_TRANSPORT", transport == CHR_COST_NET ? "net" : "shm", 1);
    unsetenv("NCCL_SHM_DISABLE");
    setenv("NCCL_SOCKET_IFNAME", "lo", 0); /* every rank is on this machine; a set value wins */
    execv(self, (char* const*)argv);
    fprintf(stderr, "chorus-perf --calibrate: exec %s: %s\n", self, strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0;
  char* out = readAll(fds[0], &len);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !out) {
    fprintf(stderr, "chorus-perf --calibrate: the %s %s run failed (%s %d):", lowerTransport[transport],
            lowerAlgo[algo], WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    for (int i = 0; argv[i]; i++) fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, "\n%s", out ? out : "");
    free(out);
    return NULL;
  }
  return out;
}

/* Takes the rows of one run's table into r: per size the smaller of the out-of-place and in-place
 * times. Every row must carry the forced algorithm in its plan column. */
static int takeRows(const char* out, int algo, calResult* r) {
  char want[32];
  snprintf(want, sizeof(want), "%s/SIMPLE", chrCostAlgoName(algo));
  int rows = 0;
  for (const char* line = out; *line;) {
    const char* eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    char text[512];
    if (len < sizeof(text) && line[0] != '#' && len > 0) {
      memcpy(text, line, len);
      text[len] = '\0';
      size_t size, count;
      double outUs, inUs;
      char plan[32] = "";
      int fields = sscanf(text, "%zu %zu %*s %*s %*d %lf %*s %*s %*s %lf %*s %*s %*s %31s", &size, &count, &outUs,
                          &inUs, plan);
      int idx = -1;
      for (int i = 0; i < r->nSizes && fields >= 4; i++)
        if (r->sizes[i] == size) idx = i;
      if (fields < 4 || idx < 0 || !(outUs > 0) || !(inUs > 0)) {
        fprintf(stderr, "chorus-perf --calibrate: unexpected row in chorus-perf's output: %s\n", text);
        return -1;
      }
      if (strcmp(plan, want) != 0) {
        fprintf(stderr, "chorus-perf --calibrate: size %zu ran as '%s', not the forced %s (a tuner plugin or a "
                "setting overrides NCCL_ALGO?)\n", size, plan[0] ? plan : "?", want);
        return -1;
      }
      double best = outUs < inUs ? outUs : inUs;
      if (r->us[idx] == 0 || best < r->us[idx]) r->us[idx] = best;
      rows++;
    }
    line = eol ? eol + 1 : line + len;
  }
  if (rows != r->nSizes) {
    fprintf(stderr, "chorus-perf --calibrate: a run reported %d sizes, expected %d\n", rows, r->nSizes);
    return -1;
  }
  return 0;
}

/* ---- the fit ------------------------------------------------------------------------------------ */

static int fit(const calOptions* o, int transport, int algo, calResult* r) {
  double sw = 0, sx = 0, sxx = 0, sy = 0, sxy = 0;
  for (int i = 0; i < r->nSizes; i++) {
    double x = (double)r->sizes[i], y = r->us[i], w = 1.0 / (y * y);
    sw += w;
    sx += w * x;
    sxx += w * x * x;
    sy += w * y;
    sxy += w * x * y;
  }
  double det = sw * sxx - sx * sx;
  double a = det > 0 ? (sxx * sy - sx * sxy) / det : 0;
  double c = det > 0 ? (sw * sxy - sx * sy) / det : 0;
  if (!(a > 0)) {
    a = 0; /* the latency is below what these sizes can show: the best line through the origin */
    c = sxx > 0 ? sxy / sxx : 0;
  }
  if (!(c > 0) || !isfinite(c)) {
    fprintf(stderr, "chorus-perf --calibrate: %s %s: the time does not grow with the size from %zu to %zu bytes, "
            "so no bandwidth can be fitted (raise -e)\n", lowerTransport[transport], lowerAlgo[algo],
            r->sizes[0], r->sizes[r->nSizes - 1]);
    return -1;
  }
  r->interceptUs = a;
  r->usPerByte = c;
  r->worstResidual = 0;
  for (int i = 0; i < r->nSizes; i++) {
    double res = fabs(r->us[i] - (a + c * (double)r->sizes[i])) / r->us[i];
    if (res > r->worstResidual) r->worstResidual = res;
  }
  int hops = chrCostAllReduceHops(algo, o->np);
  r->latencyUs = a / hops;
  r->latencyFloored = r->latencyUs < CAL_LATENCY_FLOOR_US;
  if (r->latencyFloored) r->latencyUs = CAL_LATENCY_FLOOR_US;
  r->busGBs = chrCostAllReduceBusFactor(o->np) / (c * 1e3);
  return 0;
}

/* ---- output ------------------------------------------------------------------------------------- */

/* Three significant digits, never in exponent form (the values are read back by strtod either way). */
static void fmtNum(char* out, size_t cap, double v) {
  if (v >= 100) snprintf(out, cap, "%.0f", v);
  else if (v >= 10) snprintf(out, cap, "%.1f", v);
  else if (v >= 1) snprintf(out, cap, "%.2f", v);
  else if (v >= 0.1) snprintf(out, cap, "%.3f", v);
  else snprintf(out, cap, "%.4f", v);
}

static void hostLine(char* out, size_t cap) {
  char model[160] = "?";
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof(line), f))
      if (strncmp(line, "model name", 10) == 0) {
        const char* colon = strchr(line, ':');
        if (colon) snprintf(model, sizeof(model), "%s", colon + 2);
        model[strcspn(model, "\n")] = '\0';
        break;
      }
    fclose(f);
  }
  struct utsname u;
  if (uname(&u) != 0) strcpy(u.nodename, "?");
  double load[3] = {0, 0, 0};
  f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = load[1] = load[2] = 0;
    fclose(f);
  }
  snprintf(out, cap, "%s, %ld cores, %s, load %.2f %.2f %.2f", u.nodename, sysconf(_SC_NPROCESSORS_ONLN), model,
           load[0], load[1], load[2]);
}

static void writeSection(FILE* f, int argc, char** argv, const calOptions* o,
                         calResult res[CHR_COST_TRANSPORTS][CHR_COST_ALGOS], const char* hostBefore) {
  char when[64], hostAfter[512];
  time_t now = time(NULL);
  strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
  hostLine(hostAfter, sizeof(hostAfter));
  fprintf(f, "; The planner's cost model, measured by chorus-perf --calibrate (%s)\n", when);
  fprintf(f, "; command:");
  for (int i = 0; i < argc; i++) fprintf(f, " %s", argv[i]);
  fprintf(f, "\n; library: %s\n", ncclChorusVersionString ? ncclChorusVersionString() : "?");
  fprintf(f, "; host at the start: %s\n; host at the end:   %s\n", hostBefore, hostAfter);
  fprintf(f, "; all-reduce on %d ranks (net: %d hosts acted out), float, best of %d runs x (out of place, in place), "
          "slowest rank\n", o->np, o->np, o->reps);
  fprintf(f, "; model: time = hops x latency_us + %.4g x bytes / (bandwidth_gbs x 1e3); hops ring %d, tree %d\n",
          chrCostAllReduceBusFactor(o->np), chrCostAllReduceHops(CHR_COST_RING, o->np),
          chrCostAllReduceHops(CHR_COST_TREE, o->np));
  /* The measurements, one column per (transport, algorithm). */
  fprintf(f, ";\n; %12s", "bytes");
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++)
      if (res[t][a].measured) fprintf(f, "  %6s %-5s", lowerTransport[t], lowerAlgo[a]);
  fprintf(f, "  (microseconds)\n");
  const calResult* any = NULL;
  for (int t = 0; t < CHR_COST_TRANSPORTS && !any; t++)
    for (int a = 0; a < CHR_COST_ALGOS && !any; a++)
      if (res[t][a].measured) any = &res[t][a];
  for (int i = 0; any && i < any->nSizes; i++) {
    fprintf(f, "; %12zu", any->sizes[i]);
    for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
      for (int a = 0; a < CHR_COST_ALGOS; a++)
        if (res[t][a].measured) fprintf(f, "  %12.2f", res[t][a].us[i]);
    fprintf(f, "\n");
  }
  fprintf(f, ";\n");
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++) {
      const calResult* r = &res[t][a];
      if (!r->measured) {
        fprintf(f, "; %s %s: not measured (--transports)\n", lowerTransport[t], lowerAlgo[a]);
        continue;
      }
      fprintf(f, "; %s %s: fit %.3f us + bytes / %.3f GB/s, worst relative residual %.0f%%%s\n", lowerTransport[t],
              lowerAlgo[a], r->interceptUs, 1.0 / (r->usPerByte * 1e3), 100 * r->worstResidual,
              r->latencyFloored ? "; latency below what the sizes show: written as the floor, 0.01 us" : "");
    }
  fprintf(f, "\n[cost_model]\n");
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++) {
      const calResult* r = &res[t][a];
      if (!r->measured) continue;
      char lat[32], bw[32];
      fmtNum(lat, sizeof(lat), r->latencyUs);
      fmtNum(bw, sizeof(bw), r->busGBs);
      fprintf(f, "CHORUS_COST_%s_%s_SIMPLE_LATENCY_US = %s\n", chrCostTransportName(t), chrCostAlgoName(a), lat);
      fprintf(f, "CHORUS_COST_%s_%s_SIMPLE_BANDWIDTH_GBS = %s\n", chrCostTransportName(t), chrCostAlgoName(a), bw);
    }
}

int chrPerfCalibrate(int argc, char** argv) {
  calOptions o;
  int prc = parseOptions(argc, argv, &o);
  if (prc == 2) return 0;
  if (prc != 0) return 1;
  static calResult res[CHR_COST_TRANSPORTS][CHR_COST_ALGOS];
  memset(res, 0, sizeof(res));
  char hostBefore[512];
  hostLine(hostBefore, sizeof(hostBefore));
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++) {
      if (!o.transports[t]) continue;
      calResult* r = &res[t][a];
      if (planSizes(&o, r) != 0) {
        fprintf(stderr, "chorus-perf --calibrate: -b %zu -e %zu -f %g give fewer than 2 sizes (or more than %d)\n",
                o.minBytes, o.maxBytes, o.factor, CAL_MAX_SIZES);
        return 1;
      }
      for (int rep = 0; rep < o.reps; rep++) {
        char* out = runOnce(&o, t, a);
        if (!out) return 1;
        int bad = takeRows(out, a, r);
        free(out);
        if (bad) return 1;
      }
      if (fit(&o, t, a, r) != 0) return 1;
      r->measured = 1;
    }
  FILE* f = stdout;
  if (o.outPath && !(f = fopen(o.outPath, "w"))) {
    fprintf(stderr, "chorus-perf --calibrate: cannot write %s: %s\n", o.outPath, strerror(errno));
    return 1;
  }
  writeSection(f, argc, argv, &o, res, hostBefore);
  int werr = ferror(f);
  if (f != stdout && fclose(f) != 0) werr = 1;
  if (werr) {
    fprintf(stderr, "chorus-perf --calibrate: writing %s failed\n", o.outPath ? o.outPath : "standard output");
    return 1;
  }
  return 0;
}
