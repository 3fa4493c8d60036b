/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_names.c: which names Chorus knows, and the closest one to a name it does not (for the
 * warning on an unknown CHORUS_ variable or an unknown key in a core section of a file).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/config_store.h"

/* Names read outside params.def, with who reads them: a name missing here gets its reader's users
 * a WARN about an unknown variable. unit.known_names fails when a CHORUS_ name that plugins/ or
 * tools/ read is neither here nor in params.def. */
static const char* const otherNames[] = {
    "CHORUS_CONF",                       /* config_load.c: locates the config file */
    "NCCL_ENV_PLUGIN",                   /* config/env_plugin.c: read with getenv before the configuration exists */
    "CHORUS_ENV_PLUGIN_FILE",            /* plugins/env_chorus: its settings file, read with getenv */
    "CHORUS_RANK", "CHORUS_NRANKS",      /* tools/launch.c: rank of a process started by any launcher */
    "CHORUS_SOCKET_EAGER_BYTES",         /* plugins/net_socket: read with getenv, as plugins do */
    "CHORUS_SOCKET_HELLO_TIMEOUT_MS",
    "CHORUS_SOCKET_CONNECT_TIMEOUT_MS",
    "CHORUS_SOCKET_BUFSIZE",
    "CHORUS_OFI_PROVIDER", "CHORUS_OFI_DOMAIN", /* plugins/net_ofi: read with getenv, as plugins do */
    "CHORUS_OFI_CUDA", "CHORUS_OFI_FORCE_FLUSH", "CHORUS_OFI_PING_MS", "CHORUS_OFI_PEER_TIMEOUT_MS",
    "CHORUS_OFI_CLOSE_WAIT_MS", "CHORUS_OFI_ENDPOINTS", "CHORUS_OFI_PROGRESS_THREADS",
    "CHORUS_SOCKET_LINK_TIMEOUT_MS",
    "CHORUS_IB_CONNECT_TIMEOUT_MS",      /* plugins/net_ib: read with getenv, as plugins do */
    "CHORUS_PROFILER_DIR", "CHORUS_PROFILER_MASK", /* plugins/profiler_chorus: its output folder, events */
    "CHORUS_PERF_CHECK_THREADS",         /* tools/chorus-perf.c: threads per rank of its buffer loops */
    "CHORUS_ENV",                        /* tools/bench/net_compare.sh: settings put before each run */
    "CHORUS_FUZZ_SEED", "CHORUS_FUZZ_VERBOSE", /* tests/fuzz: seed and chatter of a fuzz run */
    "CHORUS_KILL_VERBOSE",               /* tests/ranks/test_kill.c */
};
/* Names under this prefix belong to test harnesses (e.g. CHORUS_TEST_TIME_SCALE, set on every test). */
#define TEST_PREFIX "CHORUS_TEST_"
#define N_OTHER_NAMES (int)(sizeof(otherNames) / sizeof(otherNames[0]))

static int sameName(const char* a, const char* b, int exactCase) {
  return exactCase ? strcmp(a, b) == 0 : strcasecmp(a, b) == 0;
}

int chrConfigKnownName(const char* name, int exactCase) {
  for (int i = 0; i < CHR_P_COUNT; i++)
    if (sameName(chrParamTable[i].name, name, exactCase)) return 1;
  for (int i = 0; i < N_OTHER_NAMES; i++)
    if (sameName(otherNames[i], name, exactCase)) return 1;
  return strncmp(name, TEST_PREFIX, strlen(TEST_PREFIX)) == 0;
}

/* The prefixes of names a file may export, as one line (it is also what messages quote): NCCL's, Chorus's
 * (its reference tuner's rules included) and the network libraries' that net plugins read. */
static const char exportPrefixes[] =
    "NCCL_, CHORUS_, TUNER_RULE_, OFI_NCCL_, FI_, UCX_, IBV_, MLX5_, RDMAV_, SHARP_, HCOLL_";

int chrConfigExportable(const char* name) {
  for (const char* p = exportPrefixes; *p;) {
    size_t n = strcspn(p, ",");
    if (strncmp(name, p, n) == 0 && name[n] != '\0') return 1;
    p += n;
    p += strspn(p, ", ");
  }
  return 0;
}

const char* chrConfigExportablePrefixes(void) { return exportPrefixes; }

#define MAX_COMPARED 64 /* names are short; a longer one is compared by its first 64 bytes */

/* Levenshtein distance, case-insensitive, two rows. */
static int editDistance(const char* a, const char* b) {
  int n = (int)strnlen(a, MAX_COMPARED), m = (int)strnlen(b, MAX_COMPARED);
  int prev[MAX_COMPARED + 1], cur[MAX_COMPARED + 1];
  for (int j = 0; j <= m; j++) prev[j] = j;
  for (int i = 1; i <= n; i++) {
    cur[0] = i;
    for (int j = 1; j <= m; j++) {
      int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
      int best = prev[j - 1] + cost;
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      cur[j] = best;
    }
    memcpy(prev, cur, sizeof(int) * (size_t)(m + 1));
  }
  return prev[m];
}

/* Keeps `candidate` (written as `shown`) if it is closer than the best so far; ties keep the first. */
static void consider(const char* key, const char* candidate, const char* shown, int* best, char* out, size_t cap) {
  int d = editDistance(key, candidate);
  if (d >= *best) return;
  *best = d;
  snprintf(out, cap, "%s", shown);
}

void chrConfigClosestName(const char* key, const char* section, char* out, size_t cap) {
  int best = 1 << 30;
  snprintf(out, cap, "?");
  int inSection = section && section[0];
  for (int i = 0; i < CHR_P_COUNT; i++) {
    consider(key, chrParamTable[i].name, chrParamTable[i].name, &best, out, cap);
    if (!inSection) continue;
    char shown[160];
    const char* shortName = chrParamShortName((chrParamId)i);
    if (strcasecmp(section, chrParamTable[i].section) == 0) snprintf(shown, sizeof(shown), "%s", shortName);
    else snprintf(shown, sizeof(shown), "%s in [%s]", shortName, chrParamTable[i].section);
    consider(key, shortName, shown, &best, out, cap);
  }
  if (inSection) return; /* the other names are environment variables, never keys of a core section */
  for (int i = 0; i < N_OTHER_NAMES; i++) consider(key, otherNames[i], otherNames[i], &best, out, cap);
}
