/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c: the nccl-tests table: header, one row per size with an
 * out-of-place and an in-place half, the footer, and the same rows as JSON (-J) and CSV (-C).
 * Both files print every number with the same format (%.6g), so a row reads the same in either.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chorus.h" /* CHORUS_VERSION_*: chorus-perf's own version */
#include "launch.h"
#include "perf.h"

/* Column widths of a row: size count type redop root | time algbw busbw #wrong (x2), two spaces apart. */
#define W_SIZE 12
#define W_COUNT 12
#define W_TYPE 8
#define W_OP 6
#define W_ROOT 6
#define W_TIME 7
#define W_BW 6
#define W_WRONG 6

static void formatTime(char* out, size_t len, double us) {
  if (us >= 10000.0) snprintf(out, len, "%*.0f", W_TIME, us);
  else if (us >= 100.0) snprintf(out, len, "%*.1f", W_TIME, us);
  else snprintf(out, len, "%*.2f", W_TIME, us);
}

/* Bandwidth in 6 characters: 2 decimals, then 1, then 0, then exponent form. */
static void formatBw(char* out, size_t len, double gbs) {
  static const char* fmts[] = {"%.2f", "%.1f", "%.0f", "%.0e"};
  char tmp[24];
  for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
    snprintf(tmp, sizeof(tmp), fmts[i], gbs);
    if (strlen(tmp) <= W_BW) break;
  }
  snprintf(out, len, "%*s", W_BW, tmp);
}

static void formatWrong(char* out, size_t len, int64_t wrong) {
  if (wrong < 0) snprintf(out, len, "%*s", W_WRONG, "N/A");
  else snprintf(out, len, "%*g", W_WRONG, (double)wrong);
}

void chrPerfPrintHeader(FILE* f) {
  const int prefix = W_SIZE + 2 + W_COUNT + 2 + W_TYPE + 2 + W_OP + 2 + W_ROOT;
  const int half = 2 + W_TIME + 2 + W_BW + 2 + W_BW + 2 + W_WRONG;
  const char* titles[2] = {"out-of-place", "in-place"};
  fprintf(f, "#\n#%*s", prefix - 1, "");
  for (int h = 0; h < 2; h++) {
    int len = (int)strlen(titles[h]);
    int left = (half - len) / 2;
    fprintf(f, "%*s%s%*s", left, "", titles[h], half - left - len, "");
  }
  fprintf(f, "\n#%*s  %*s  %*s  %*s  %*s", W_SIZE - 1, "size", W_COUNT, "count", W_TYPE, "type", W_OP, "redop",
          W_ROOT, "root");
  for (int h = 0; h < 2; h++)
    fprintf(f, "  %*s  %*s  %*s  %*s", W_TIME, "time", W_BW, "algbw", W_BW, "busbw", W_WRONG, "#wrong");
  fprintf(f, "  %s", "algo/proto");
  fprintf(f, "\n#%*s  %*s  %*s  %*s  %*s", W_SIZE - 1, "(B)", W_COUNT, "(elements)", W_TYPE, "", W_OP, "", W_ROOT, "");
  for (int h = 0; h < 2; h++)
    fprintf(f, "  %*s  %*s  %*s  %*s", W_TIME, "(us)", W_BW, "(GB/s)", W_BW, "(GB/s)", W_WRONG, "");
  fprintf(f, "\n");
  fflush(f);
}

void chrPerfPrintRow(FILE* f, const chrPerfRow* row) {
  fprintf(f, "%*zu  %*zu  %*s  %*s  %*d", W_SIZE, row->size, W_COUNT, row->count, W_TYPE, row->type, W_OP, row->redop,
          W_ROOT, row->root);
  for (int h = 0; h < 2; h++) {
    char t[32], a[32], b[32], w[32];
    formatTime(t, sizeof(t), row->timeUs[h]);
    formatBw(a, sizeof(a), row->algBw[h]);
    formatBw(b, sizeof(b), row->busBw[h]);
    formatWrong(w, sizeof(w), row->wrong[h]);
    fprintf(f, "  %s  %s  %s  %s", t, a, b, w);
  }
  if (row->algo[0]) fprintf(f, "  %s/%s", row->algo, row->proto);
  fprintf(f, "\n");
  fflush(f);
}

int chrPerfReportAdd(chrPerfReport* r, const chrPerfRow* row) {
  if (r->nrows == r->cap) {
    int cap = r->cap ? 2 * r->cap : 64;
    chrPerfRow* rows = realloc(r->rows, sizeof(*rows) * (size_t)cap);
    if (!rows) return 1;
    r->rows = rows;
    r->cap = cap;
  }
  r->rows[r->nrows++] = *row;
  for (int h = 0; h < 2; h++) {
    r->busBwSum += row->busBw[h];
    r->busBwCount++;
    if (row->wrong[h] > 0) r->outOfBounds++;
  }
  return 0;
}

int chrPerfPrintFooter(FILE* f, const chrPerfReport* r, const chrPerfColl* c) {
  int failed = r->outOfBounds > 0;
  double avg = r->busBwCount ? r->busBwSum / r->busBwCount : 0;
  const char* minEnv = getenv("NCCL_TESTS_MIN_BW");
  int bwFailed = 0;
  if (minEnv && *minEnv) bwFailed = avg < 0.9 * strtod(minEnv, NULL);
  fprintf(f, "# Out of bounds values : %lld %s\n", (long long)r->outOfBounds, failed ? "FAILED" : "OK");
  fprintf(f, "# Avg bus bandwidth    : %g %s\n", avg, bwFailed ? "FAILED" : "");
  fprintf(f, "#\n# Collective test concluded: %s\n#\n", c->testName);
  fflush(f);
  return failed || bwFailed;
}

/* A JSON string, or null for NULL or "". Quotes and backslashes escaped, control characters dropped. */
static void jsonString(FILE* f, const char* s) {
  if (!s || !*s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const char* p = s; *p; p++) {
    if (*p == '"' || *p == '\\') fputc('\\', f);
    if ((unsigned char)*p >= 0x20) fputc(*p, f);
  }
  fputc('"', f);
}

static void jsonHalf(FILE* f, const chrPerfRow* row, int h) {
  fprintf(f, "{\"time\": %.6g, \"host_time\": %.6g, \"alg_bw\": %.6g, \"bus_bw\": %.6g, \"nwrong\": ", row->timeUs[h],
          row->hostUs[h], row->algBw[h], row->busBw[h]);
  if (row->wrong[h] < 0) fprintf(f, "null}");
  else fprintf(f, "%lld}", (long long)row->wrong[h]);
}

static int closeOutput(FILE* f, const char* path) {
  int err = ferror(f);
  if (fclose(f) != 0 || err) {
    perror(path);
    return 1;
  }
  return 0;
}

int chrPerfWriteJson(const char* path, const chrPerfReport* r, const chrPerfOptions* o, int nranks,
                     const chrPerfLibrary* lib) {
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  double avg = r->busBwCount ? r->busBwSum / r->busBwCount : 0;
  fprintf(f, "{\n  \"tool\": \"chorus-perf\",\n  \"tool_version\": \"%d.%d.%d\",\n  \"collective\": \"%s\",\n"
             "  \"test\": \"%s\",\n", CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR, CHORUS_VERSION_PATCH, o->coll->name,
          o->coll->testName);
  fprintf(f, "  \"nranks\": %d,\n  \"nhosts\": %d,\n  \"nccl_headers\": %d,\n  \"nccl_library\": %d,\n", nranks,
          o->nhosts, lib->headers, lib->library);
  fprintf(f, "  \"library\": ");
  jsonString(f, lib->name ? lib->name : "");
  fprintf(f, ",\n  \"library_path\": ");
  jsonString(f, lib->path);
  /* Rank 0's host, then every rank's (index = rank). */
  fprintf(f, ",\n  \"host\": ");
  jsonString(f, r->hosts);
  fprintf(f, ",\n  \"hosts\": [");
  for (int i = 0; r->hosts && i < nranks; i++) {
    fprintf(f, "%s", i ? ", " : "");
    jsonString(f, r->hosts + (size_t)i * PERF_HOST_LEN);
  }
  char start[32] = "";
  struct tm utc;
  if (gmtime_r(&o->startTime, &utc)) strftime(start, sizeof(start), "%Y-%m-%dT%H:%M:%SZ", &utc);
  fprintf(f, "],\n  \"start_time\": ");
  jsonString(f, start);
  fprintf(f, ",\n  \"duration_s\": %.3f,\n", chrLaunchNowSec() - o->startSec);
  fprintf(f, "  \"memory\": \"%s\",\n", o->vmm ? "vmm" : o->mem == PERF_MEM_CUDA ? "cuda" : "host");
  fprintf(f, "  \"options\": {\"minbytes\": %zu, \"maxbytes\": %zu, \"stepfactor\": %g, \"stepbytes\": %zu, "
             "\"iters\": %d, \"warmup_iters\": %d, \"agg_iters\": %d, \"check\": %d, \"average\": %d, \"blocking\": %d, "
             "\"cudagraph\": %d},\n",
          o->minBytes, o->maxBytes, o->stepFactor, o->stepBytes, o->iters, o->warmup, o->agg, o->check, o->average,
          o->blocking, o->graphLaunches);
  fprintf(f, "  \"results\": [");
  for (int i = 0; i < r->nrows; i++) {
    const chrPerfRow* row = &r->rows[i];
    fprintf(f, "%s\n    {\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", \"root\": %d, ",
            i ? "," : "", row->size, row->count, row->type, row->redop, row->root);
    fprintf(f, "\"out_of_place\": ");
    jsonHalf(f, row, 0);
    fprintf(f, ", \"in_place\": ");
    jsonHalf(f, row, 1);
    fprintf(f, ", \"algo\": ");
    jsonString(f, row->algo);
    fprintf(f, ", \"proto\": ");
    jsonString(f, row->algo[0] ? row->proto : NULL);
    fprintf(f, "}");
  }
  fprintf(f, "\n  ],\n  \"out_of_bounds\": %lld,\n  \"avg_bus_bw\": %.6g\n}\n", (long long)r->outOfBounds, avg);
  return closeOutput(f, path);
}

int chrPerfWriteCsv(const char* path, const chrPerfReport* r, const chrPerfOptions* o, int nranks) {
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  /* The table's columns in its order, units in the names, then what the table says in its header.
   * Names, types and algorithms hold no comma or quote: no field needs quoting. */
  fprintf(f, "size,count,type,redop,root,oop_time_us,oop_algbw_gbs,oop_busbw_gbs,oop_nwrong,"
             "ip_time_us,ip_algbw_gbs,ip_busbw_gbs,ip_nwrong,algo,proto,collective,nranks\n");
  for (int i = 0; i < r->nrows; i++) {
    const chrPerfRow* row = &r->rows[i];
    fprintf(f, "%zu,%zu,%s,%s,%d", row->size, row->count, row->type, row->redop, row->root);
    for (int h = 0; h < 2; h++) {
      fprintf(f, ",%.6g,%.6g,%.6g,", row->timeUs[h], row->algBw[h], row->busBw[h]);
      if (row->wrong[h] >= 0) fprintf(f, "%lld", (long long)row->wrong[h]); /* empty: not checked */
    }
    fprintf(f, ",%s,%s,%s,%d\n", row->algo, row->algo[0] ? row->proto : "", o->coll->name, nranks);
  }
  return closeOutput(f, path);
}

void chrPerfReportFree(chrPerfReport* r) {
  free(r->rows);
  free(r->hosts);
  memset(r, 0, sizeof(*r));
}
