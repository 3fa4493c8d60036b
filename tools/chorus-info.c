/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chorus-info: the effective configuration, with the source of every value, and the plugins found.
 *
 *   chorus-info            version, parameters, plugin sections, config problems, plugins
 *   chorus-info --params   the parameter table only
 *   chorus-info --version  "chorus-info <version>"
 *   chorus-info --topo [FILE] [--dump OUT] [--channels N] [--no-fill] [--sm N] [--net-speed MBPS]
 *               [--leaf-class HEX] [--gpu-per-switch]
 *                          each GPU's NIC per channel, path types, GPUDirect decisions of an NCCL
 *                          topology XML, or of this machine without FILE (format:
 *                          core/topo/topo_report.h); --dump writes it as XML
 *
 * Parameter lines have four columns separated by at least two blanks: name, value, source, help.
 * An empty value prints as "" so the columns stay aligned and parseable.
 * Exit status 1 when the configuration would make communicator init fail (chrConfigValidate): a bad
 * value or a malformed file. Unknown names are only listed among the problems.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "chorus.h"
#include "comm/topo_file.h"
#include "config/param.h"
#include "nccl.h"
#include "plugin/plugin_info.h"
#include "topo/topo_report.h"

/* Until the plugin loader provides chrPluginsDescribe, this stub keeps chorus-info linkable. The
 * tool links chorus_static as a whole archive, so the loader's strong definition replaces it. */
__attribute__((weak)) void chrPluginsDescribe(FILE* out) { fprintf(out, "plugins: (loader not built)\n"); }

static void usage(FILE* out, const char* prog) {
  fprintf(out,
          "usage: %s [--params] [--version] [--help]\n"
          "       %s --topo [FILE] [--dump OUT] [--channels N] [--no-fill] [--sm N] [--net-speed MBPS]\n"
          "                  [--leaf-class HEX] [--gpu-per-switch]\n"
          "  Prints Chorus's version, every parameter with its value and where the value came from\n"
          "  (env, env plugin, <file>:<line> or default), the plugin sections of the config files,\n"
          "  config problems and the plugins found. Exits with 1 when the configuration would make\n"
          "  communicator init fail (a value that is not valid, a malformed config file).\n"
          "  --params   print only the parameter table\n"
          "  --version  print chorus-info's version\n"
          "  --help     print this help\n"
          "  --topo FILE  read an NCCL topology XML (NCCL_TOPO_FILE format) and print, per GPU, the NET\n"
          "             of its first channels, the path type and bandwidth to every NET and GPU, and the\n"
          "             GPUDirect read/write decision under the current NCCL_NET_GDR_* settings. Files\n"
          "             that name only bus ids are completed as detection would (--no-fill: not):\n"
          "             GPU-class devices get a GPU of sm --sm (90), NIC-class ones a NET of --net-speed\n"
          "             Mbps (100000), both GPUDirect-capable; --leaf-class gives leaf devices without\n"
          "             a class that class (0x020000 makes p5's NICs); --gpu-per-switch puts a GPU beside\n"
          "             the NICs of each switch that has none. Exit status 1 when the file is not valid.\n"
          "  --topo       without FILE: the same for this machine, as init discovers it: the PCI tree\n"
          "             and NUMA nodes from sysfs (CHORUS_SYSFS_ROOT), the CUDA driver's GPUs, the NICs\n"
          "             of the net plugin NCCL_NET_PLUGIN opens\n"
          "  --dump OUT   with --topo: write the model as XML (NCCL_TOPO_DUMP_FILE format)\n"
          "  --channels N with --topo: channels listed per GPU (default 4, at most 64)\n",
          prog, prog);
}

static const char* shown(const char* value) { return value[0] ? value : "\"\""; }

static void printParams(FILE* out) {
  int nameW = 4, valueW = 5, sourceW = 6;
  for (int i = 0; i < CHR_P_COUNT; i++) {
    chrParamId id = (chrParamId)i;
    int n = (int)strlen(chrParamName(id)), v = (int)strlen(shown(chrParamShown(id))),
        s = (int)strlen(chrParamSource(id));
    if (n > nameW) nameW = n;
    if (v > valueW && v <= 40) valueW = v; /* a very long value breaks the alignment, not the columns */
    if (s > sourceW) sourceW = s;
  }
  fprintf(out, "%-*s  %-*s  %-*s  %s\n", nameW, "NAME", valueW, "VALUE", sourceW, "SOURCE", "HELP");
  for (int i = 0; i < CHR_P_COUNT; i++) {
    chrParamId id = (chrParamId)i;
    fprintf(out, "%-*s  %-*s  %-*s  %s\n", nameW, chrParamName(id), valueW, shown(chrParamShown(id)), sourceW,
            chrParamSource(id), chrParamHelp(id));
  }
}

static void printKey(void* arg, const char* key, const char* value, const char* source) {
  FILE* out = arg;
  fprintf(out, "    %s = %s  (%s)\n", key, shown(value), source);
}

static void printSection(void* arg, const char* section) {
  FILE* out = arg;
  fprintf(out, "  [%s]\n", section);
  chrConfigForEachInSection(section, printKey, out);
}

static void countKey(void* arg, const char* key, const char* value, const char* source) { ++*(int*)arg; }
static void countSection(void* arg, const char* section) { ++*(int*)arg; }

static void printSections(FILE* out) {
  int sections = 0, topLevel = 0;
  chrConfigForEachSection(countSection, &sections);
  chrConfigForEachInSection("", countKey, &topLevel);
  fprintf(out, "\nPlugin sections (exported to the environment before the plugin's init, never overwriting):\n");
  if (sections == 0) fprintf(out, "  (none)\n");
  chrConfigForEachSection(printSection, out);
  if (topLevel > 0) {
    fprintf(out, "  top-level keys that are not Chorus parameters (exported like nccl.conf):\n");
    chrConfigForEachInSection("", printKey, out);
  }
}

static void printProblems(FILE* out) {
  const char* p = chrConfigProblems();
  fprintf(out, "\nConfig problems:\n");
  if (!p[0]) fprintf(out, "  (none)\n");
  while (*p) {
    size_t len = strcspn(p, "\n");
    fprintf(out, "  %.*s\n", (int)len, p);
    p += len;
    if (*p == '\n') p++;
  }
}

/* A whole-number option value in [min, max]; exits with 2 otherwise. */
static long number(const char* prog, const char* opt, const char* text, long min, long max) {
  char* end;
  long v = strtol(text, &end, 0);
  if (text[0] == '\0' || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "%s: %s '%s' is not a number from %ld to %ld\n", prog, opt, text, min, max);
    exit(2);
  }
  return v;
}

static int topoInfo(const struct chrTopoInfoRequest* req) {
  if (chrConfigValidate() != ncclSuccess) {
    fprintf(stderr, "chorus-info: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  if ((req->path ? chrTopoInfo(req, stdout) : chrCommTopoInfoLocal(req, stdout)) != ncclSuccess) {
    fprintf(stderr, "chorus-info: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  int paramsOnly = 0, topoAsked = 0;
  struct chrTopoInfoRequest topo = {.fill = 1, .channels = 4, .fillOptions = {.sm = 90, .netSpeed = 100000}};
  for (int i = 1; i < argc; i++) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--topo") == 0) { /* FILE is optional: without one, this machine */
      topoAsked = 1;
      if (value && strncmp(value, "--", 2) != 0) topo.path = argv[++i];
      continue;
    }
    int takes = strcmp(argv[i], "--dump") == 0 ||
                strcmp(argv[i], "--channels") == 0 || strcmp(argv[i], "--sm") == 0 ||
                strcmp(argv[i], "--net-speed") == 0 || strcmp(argv[i], "--leaf-class") == 0;
    if (takes && !value) {
      fprintf(stderr, "%s: %s needs a value\n", argv[0], argv[i]);
      return 2;
    }
    if (strcmp(argv[i], "--dump") == 0) topo.dumpPath = value;
    else if (strcmp(argv[i], "--channels") == 0) topo.channels = (int)number(argv[0], argv[i], value, 1, 64);
    else if (strcmp(argv[i], "--sm") == 0) topo.fillOptions.sm = (int)number(argv[0], argv[i], value, 10, 1000);
    else if (strcmp(argv[i], "--net-speed") == 0)
      topo.fillOptions.netSpeed = number(argv[0], argv[i], value, 1, 100000000);
    else if (strcmp(argv[i], "--leaf-class") == 0) topo.fillOptions.leafClass = value;
    else if (strcmp(argv[i], "--gpu-per-switch") == 0) topo.fillOptions.gpuPerSwitch = 1;
    else if (strcmp(argv[i], "--no-fill") == 0) topo.fill = 0;
    int flag = strcmp(argv[i], "--gpu-per-switch") == 0 || strcmp(argv[i], "--no-fill") == 0;
    i += takes;
    if (takes || flag) continue;
    if (strcmp(argv[i], "--params") == 0) {
      paramsOnly = 1;
    } else if (strcmp(argv[i], "--version") == 0) {
      chrArgPrintVersion("info");
      return 0;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout, argv[0]);
      return 0;
    } else {
      fprintf(stderr, "%s: unknown option '%s'\n", argv[0], argv[i]);
      usage(stderr, argv[0]);
      return 2;
    }
  }
  if (topo.dumpPath && !topoAsked) {
    fprintf(stderr, "%s: --dump needs --topo\n", argv[0]);
    return 2;
  }
  if (topoAsked) return topoInfo(&topo);
  /* Checked first, so a WARN it logs (NCCL_DEBUG=WARN) comes before the report, not inside it. */
  int usable = chrConfigValidate() == ncclSuccess;
  if (paramsOnly) {
    printParams(stdout);
    if (!usable) fprintf(stderr, "chorus-info: %s\n", ncclGetLastError(NULL));
    return usable ? 0 : 1;
  }
  printf("Chorus %d.%d.%d, NCCL API %d.%d.%d%s\n\n", CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR,
         CHORUS_VERSION_PATCH, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX);
  printf("Parameters:\n");
  printParams(stdout);
  printSections(stdout);
  printProblems(stdout);
  printf("\nPlugins:\n");
  fflush(stdout);
  chrPluginsDescribe(stdout); /* owned by core/plugin/ (plugin_info.h) */
  if (!usable)
    printf("\nThe configuration is not usable: communicator init fails with ncclInvalidUsage (problems above).\n");
  fflush(stdout);
  return usable ? 0 : 1;
}
