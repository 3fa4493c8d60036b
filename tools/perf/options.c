/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * options.c: chorus-perf's command line. The nccl-tests options keep their letters and defaults;
 * -np/--hosts/-M/-T/-q/-C are ours; -G is nccl-tests' --cudagraph, -J its --output_file (JSON).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "perf.h"

/* The largest value of the counts (-n, -t, -np, ...): far above any useful one, far from overflow. */
#define MAX_COUNT (1 << 30)

void chrPerfUsage(FILE* f, const char* prog) {
  fprintf(f,
          "usage: %s [-np N [--hosts K] | -t T] <collective> [options]\n"
          "collectives: ",
          prog);
  chrPerfListColls(f);
  fprintf(f,
          "\n"
          "  -np N               run N ranks as local processes (default: 1 rank, or the ranks the\n"
          "                      environment describes: CHORUS_RANK/CHORUS_NRANKS or mpirun, with NCCL_COMM_ID)\n"
          "  --hosts K           act out K hosts among the local ranks (NCCL_HOSTID=host<r%%K>)\n"
          "  -b, --minbytes S    smallest size (default 32M; K/M/G suffixes)\n"
          "  -e, --maxbytes S    largest size (default 32M)\n"
          "  -f, --stepfactor F  multiply the size by F each step\n"
          "  -i, --stepbytes S   add S bytes each step (when no -f; default 1M)\n"
          "  -n, --iters N       timed iterations per size (default 20)\n"
          "  -w, --warmup_iters N  warm-up iterations per size (default 1)\n"
          "  -m, --agg_iters N   operations per iteration, in one ncclGroupStart/End (default 1)\n"
          "  -c, --check N       check results N times per size (default 1; 0: no check, #wrong N/A)\n"
          "  -d, --datatype T    int8 uint8 int32 uint32 int64 uint64 half float double bfloat16\n"
          "                      f8e4m3 f8e5m2, or all (default float)\n"
          "  -o, --op OP         sum prod max min avg mulsum, or all (default sum); with \"all\" (ops or\n"
          "                      types) a combination the library rejects as invalid is skipped\n"
          "  -r, --root R        root rank of broadcast, reduce, gather, scatter (default 0)\n"
          "  -a, --average A     time over ranks: 0 rank 0, 1 mean, 2 min, 3 max (default 1)\n"
          "  -z, --blocking 0|1  1: wait for completion after every operation (default 0)\n"
          "  -M, --memory host|cuda|vmm  buffer memory (default host; cuda needs a CHORUS_PERF_CUDA build;\n"
          "                      vmm: cuMemCreate chunks of 20 MiB side by side, exportable by file descriptor,\n"
          "                      as PyTorch's expandable segments are; not with -t)\n"
          "  -G, --cudagraph N   capture the -n iterations into one CUDA graph per size and time N launches\n"
          "                      of it: GPU time per operation without the per-call launch cost (default 0:\n"
          "                      off; needs -M cuda, not with -z 1)\n"
          "  -I, --iter_times 0|1  1: every rank also prints each timed iteration's time (\"# iteration us:\"\n"
          "                      lines; with -M cuda the GPU's, by events; not with -G)\n"
          "  -R, --local_register 0|1|2  register the buffers with the communicator: 1 ncclCommRegister,\n"
          "                      2 ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC (default 0: none)\n"
          "  -J, --output_file F also write the results as JSON to F\n"
          "  -C, --csv F         also write the results as CSV to F (a header line, then one line per row)\n"
          "  -T, --timeout SEC   with -np: kill every rank after SEC seconds (default 0: never)\n"
          "  -q, --quiet         no preamble, only the table and the footer\n"
          "  -t, --nthreads T    run T ranks as threads of this process (ranks sharing a GPU run side\n"
          "                      by side only this way; with -M cuda rank r uses GPU r %% device count)\n"
          "  -g, -p              accepted for nccl-tests compatibility (-g must be 1)\n"
          "  --version           print chorus-perf's version\n");
}

static int parseOps(const char* s, chrPerfOptions* o) {
  if (strcasecmp(s, "all") == 0) {
    for (int op = 0; op < PERF_NUM_OPS; op++) o->ops[op] = op;
    o->nops = PERF_NUM_OPS;
    o->skipRejected = 1;
    return 0;
  }
  for (int op = 0; op < PERF_NUM_OPS; op++) {
    if (strcasecmp(s, chrPerfOpName(op)) == 0 || (op == PERF_MULSUM && strcasecmp(s, "premulsum") == 0)) {
      o->ops[0] = op;
      o->nops = 1;
      return 0;
    }
  }
  return -1;
}

static int parseTypes(const char* s, chrPerfOptions* o) {
  if (strcasecmp(s, "all") == 0) {
    for (int t = 0; t < ncclNumTypes; t++) o->types[t] = (ncclDataType_t)t;
    o->ntypes = ncclNumTypes;
    o->skipRejected = 1;
    return 0;
  }
  ncclDataType_t t;
  if (chrNumTypeFromName(s, &t) != 0) return -1;
  o->types[0] = t;
  o->ntypes = 1;
  return 0;
}

/* An output file: not empty, and not what looks like the next option ("-J -q" forgot the file); a
 * file whose name starts with '-' is still reachable as ./-name. */
static int parsePath(const char* s, const char** out) {
  if (s[0] == '\0' || s[0] == '-') return -1;
  *out = s;
  return 0;
}

static void setDefaults(chrPerfOptions* o) {
  memset(o, 0, sizeof(*o));
  o->nhosts = 1;
  o->minBytes = o->maxBytes = 32u << 20;
  o->stepBytes = 1u << 20;
  o->stepFactor = 1;
  o->iters = 20;
  o->warmup = 1;
  o->agg = 1;
  o->check = 1;
  o->average = 1;
  o->types[0] = ncclFloat32;
  o->ntypes = 1;
  o->ops[0] = PERF_SUM;
  o->nops = 1;
  o->mem = PERF_MEM_HOST;
}

int chrPerfParseOptions(int argc, char** argv, chrPerfOptions* o) {
  setDefaults(o);
  const char* prog = argv[0];
  /* "-np N" is not a getopt option (it would read as -n p): take it, and --hosts, out first. */
  char** args = malloc(sizeof(char*) * (size_t)(argc + 1));
  if (!args) return 1;
  int nargs = 0;
  args[nargs++] = argv[0];
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    int isNp = strcmp(a, "-np") == 0 || strcmp(a, "--np") == 0;
    int isHosts = strcmp(a, "--hosts") == 0;
    if (isNp || isHosts) {
      if (i + 1 >= argc || chrArgInt(argv[i + 1], 1, MAX_COUNT, isNp ? &o->np : &o->nhosts) != 0) {
        fprintf(stderr, "%s: %s needs a positive number\n", prog, a);
        free(args);
        return 1;
      }
      i++;
      continue;
    }
    args[nargs++] = argv[i];
  }
  args[nargs] = NULL;

  static const struct option longOpts[] = {
      {"nthreads", required_argument, 0, 't'},   {"ngpus", required_argument, 0, 'g'},
      {"minbytes", required_argument, 0, 'b'},   {"maxbytes", required_argument, 0, 'e'},
      {"stepbytes", required_argument, 0, 'i'},  {"stepfactor", required_argument, 0, 'f'},
      {"iters", required_argument, 0, 'n'},      {"warmup_iters", required_argument, 0, 'w'},
      {"agg_iters", required_argument, 0, 'm'},  {"check", required_argument, 0, 'c'},
      {"datatype", required_argument, 0, 'd'},   {"op", required_argument, 0, 'o'},
      {"root", required_argument, 0, 'r'},       {"average", required_argument, 0, 'a'},
      {"blocking", required_argument, 0, 'z'},   {"parallel_init", required_argument, 0, 'p'},
      {"memory", required_argument, 0, 'M'},     {"output_file", required_argument, 0, 'J'},
      {"timeout", required_argument, 0, 'T'},    {"quiet", no_argument, 0, 'q'},
      {"cudagraph", required_argument, 0, 'G'},  {"help", no_argument, 0, 'h'},
      {"iter_times", required_argument, 0, 'I'}, {"local_register", required_argument, 0, 'R'},
      {"csv", required_argument, 0, 'C'},        {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  int rc = 0, stepSet = 0, factorSet = 0, one;
  optind = 1;
  opterr = 1;
  for (;;) {
    int c = getopt_long(nargs, args, "t:g:b:e:i:f:n:w:m:c:d:o:r:a:z:p:M:G:I:R:J:C:T:qh", longOpts, NULL);
    if (c == -1) break;
    int bad = 0;
    switch (c) {
      case 't': bad = chrArgInt(optarg, 1, MAX_COUNT, &o->nthreads); break;
      case 'g':
        bad = chrArgInt(optarg, 1, MAX_COUNT, &one) != 0 || one != 1;
        if (bad) fprintf(stderr, "%s: -g: only 1 is supported (use -t or -np for more ranks)\n", prog);
        break;
      case 'b': bad = chrArgSize(optarg, &o->minBytes); break;
      case 'e': bad = chrArgSize(optarg, &o->maxBytes); break;
      case 'i': bad = chrArgSize(optarg, &o->stepBytes) || o->stepBytes == 0; stepSet = 1; break;
      case 'f': bad = chrArgDouble(optarg, &o->stepFactor) || !(o->stepFactor >= 1); factorSet = 1; break;
      case 'n': bad = chrArgInt(optarg, 1, MAX_COUNT, &o->iters); break;
      case 'w': bad = chrArgInt(optarg, 0, MAX_COUNT, &o->warmup); break;
      case 'm': bad = chrArgInt(optarg, 1, MAX_COUNT, &o->agg); break;
      case 'c': bad = chrArgInt(optarg, 0, MAX_COUNT, &o->check); break;
      case 'd': bad = parseTypes(optarg, o); break;
      case 'o': bad = parseOps(optarg, o); break;
      case 'r': bad = chrArgInt(optarg, 0, MAX_COUNT, &o->root); break;
      case 'a': bad = chrArgInt(optarg, 0, 3, &o->average); break;
      case 'z': bad = chrArgInt(optarg, 0, 1, &o->blocking); break;
      case 'p': bad = chrArgInt(optarg, 0, MAX_COUNT, &o->parallelInit); break;
      case 'M':
        if (strcasecmp(optarg, "host") == 0) o->mem = PERF_MEM_HOST;
        else if (strcasecmp(optarg, "cuda") == 0 || strcasecmp(optarg, "device") == 0) o->mem = PERF_MEM_CUDA;
        else if (strcasecmp(optarg, "vmm") == 0) {
          o->mem = PERF_MEM_CUDA;
          o->vmm = 1;
        } else bad = 1;
        break;
      case 'G': bad = chrArgInt(optarg, 0, MAX_COUNT, &o->graphLaunches); break;
      case 'I': bad = chrArgInt(optarg, 0, 1, &o->iterTimes); break;
      case 'R': bad = chrArgInt(optarg, 0, 2, &o->registerMode); break;
      case 'J': bad = parsePath(optarg, &o->jsonPath); break;
      case 'C': bad = parsePath(optarg, &o->csvPath); break;
      case 'T': bad = chrArgInt(optarg, 0, MAX_COUNT, &o->timeoutSec); break;
      case 'q': o->quiet = 1; break;
      case 'h': chrPerfUsage(stdout, prog); free(args); return 2;
      case 'V': chrArgPrintVersion("perf"); free(args); return 2;
      default: rc = 1; break;
    }
    if (bad) {
      fprintf(stderr, "%s: bad value for -%c: %s\n", prog, c, optarg ? optarg : "");
      rc = 1;
    }
  }
  for (int i = optind; i < nargs && rc == 0; i++) {
    if (o->coll != NULL) {
      fprintf(stderr, "%s: unexpected argument '%s'\n", prog, args[i]);
      rc = 1;
      break;
    }
    o->coll = chrPerfFindColl(args[i]);
    if (o->coll == NULL) {
      fprintf(stderr, "%s: unknown collective '%s' (one of: ", prog, args[i]);
      chrPerfListColls(stderr);
      fprintf(stderr, ")\n");
      rc = 1;
    }
  }
  free(args);
  if (rc) return 1;
  if (o->coll == NULL) {
    chrPerfUsage(stderr, prog);
    return 1;
  }
  if (o->maxBytes < o->minBytes) {
    fprintf(stderr, "%s: -e (%zu) is smaller than -b (%zu)\n", prog, o->maxBytes, o->minBytes);
    return 1;
  }
  if (o->jsonPath && o->csvPath && strcmp(o->jsonPath, o->csvPath) == 0) {
    fprintf(stderr, "%s: -J and -C name the same file (%s)\n", prog, o->jsonPath);
    return 1;
  }
  if (factorSet && stepSet) fprintf(stderr, "%s: both -f and -i given; using -f\n", prog);
  if (!factorSet) o->stepFactor = 1;
  if (o->nthreads > 1 && o->np > 0) {
    fprintf(stderr, "%s: -t %d and -np %d: give one of them\n", prog, o->nthreads, o->np);
    return 1;
  }
  /* Memory laid out as expandable segments is read and written by its own GPU only (PyTorch grants
   * its peers access; ranks here that share a process would need that too). */
  if (o->vmm && o->nthreads > 1) {
    fprintf(stderr, "%s: -M vmm and -t %d: ranks that are threads of one process need their peers' access to "
            "such memory, which -M vmm does not grant; run one process per rank (-np or a launcher)\n", prog, o->nthreads);
    return 1;
  }
  if (o->np > 0 && o->nhosts > o->np) {
    fprintf(stderr, "%s: --hosts %d is more than -np %d\n", prog, o->nhosts, o->np);
    return 1;
  }
  /* A graph captures the launches on a rank's CUDA stream, which only device buffers have; and a
   * capture cannot wait for each operation as -z 1 does. */
  if (o->graphLaunches > 0 && o->mem != PERF_MEM_CUDA) {
    fprintf(stderr, "%s: -G %d (CUDA graph) needs -M cuda: with host buffers there is no CUDA stream to capture\n",
            prog, o->graphLaunches);
    return 1;
  }
  if (o->graphLaunches > 0 && o->iterTimes) {
    fprintf(stderr, "%s: -G %d and -I 1: a captured CUDA graph runs its iterations as one launch, with no time of "
            "each\n", prog, o->graphLaunches);
    return 1;
  }
  if (o->graphLaunches > 0 && o->blocking) {
    fprintf(stderr, "%s: -G %d and -z 1: a captured CUDA graph cannot wait after every operation\n", prog,
            o->graphLaunches);
    return 1;
  }
#ifndef CHORUS_PERF_CUDA
  if (o->mem == PERF_MEM_CUDA) {
    fprintf(stderr, "%s: -M cuda%s: this build has no CUDA support (CHORUS_PERF_CUDA)\n", prog,
            o->graphLaunches > 0 ? " (and -G)" : "");
    return 1;
  }
#endif
  return 0;
}
