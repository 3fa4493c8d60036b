/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config_ini_complete.c: config/chorus.ini documents every parameter of params.def.
 * Usage: test_config_ini_complete <path to config/chorus.ini>
 *
 * Each parameter must appear as a commented-out line ";NAME = <default>" inside its own [section],
 * preceded by a comment line (for an integer, ending with its range: "(integer, MIN to MAX)"). Then the file is loaded twice: as shipped (all commented out: no problems,
 * every value a default) and with those lines uncommented (no problems, every value from the file).
 */
#include "config_test_util.h"

static char* currentSection(const char* text, const char* at, char* out, size_t size) {
  out[0] = '\0';
  for (const char* p = text; p < at; p++) {
    if ((p == text || p[-1] == '\n') && *p == '[') {
      size_t n = strcspn(p + 1, "]\n");
      snprintf(out, size, "%.*s", (int)n, p + 1);
    }
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s config/chorus.ini\n", argv[0]);
    return 2;
  }
  isolateConfig();
  char* text = readWholeFile(argv[1]);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  for (int i = 0; i < CHR_P_COUNT; i++) {
    char want[256];
    snprintf(want, sizeof(want), "\n;%s = %s\n", chrParamName((chrParamId)i), chrParamDefault((chrParamId)i));
    if (chrParamDefault((chrParamId)i)[0] == '\0')
      snprintf(want, sizeof(want), "\n;%s =\n", chrParamName((chrParamId)i));
    const char* at = strstr(text, want);
    EXPECT(at != NULL, "%s does not document %s (expected a line '%.*s')", argv[1], chrParamName((chrParamId)i),
           (int)strlen(want) - 2, want + 1);
    if (!at) continue;
    char section[128];
    currentSection(text, at, section, sizeof(section));
    EXPECT(strcmp(section, chrParamSection((chrParamId)i)) == 0, "%s is under [%s], params.def says [%s]",
           chrParamName((chrParamId)i), section, chrParamSection((chrParamId)i));
    /* the line before must be its help comment; an integer's ends with its range from params.def */
    const char* prev = at;
    while (prev > text && prev[-1] != '\n') prev--;
    EXPECT(at > text && prev[0] == ';' && prev[1] == ' ', "%s has no help line above it", chrParamName((chrParamId)i));
    if (chrParamIsInt((chrParamId)i)) {
      char range[100];
      snprintf(range, sizeof(range), "(integer, %lld to %lld)\n", (long long)chrParamTable[i].min,
               (long long)chrParamTable[i].max);
      EXPECT((size_t)(at + 1 - prev) > strlen(range) && strncmp(at + 1 - strlen(range), range, strlen(range)) == 0,
             "%s: help line does not end with '%.*s'", chrParamName((chrParamId)i), (int)strlen(range) - 1, range);
    }
  }

  /* As shipped: parses cleanly and changes nothing. */
  setenv("CHORUS_CONF", argv[1], 1);
  chrConfigReload();
  EXPECT_STR(chrConfigProblems(), "");
  for (int i = 0; i < CHR_P_COUNT; i++) EXPECT_STR(chrParamSource((chrParamId)i), "default");

  /* Uncommented: every documented default is accepted in its section. */
  size_t len = strlen(text);
  char* on = malloc(len + 1);
  size_t o = 0;
  for (size_t p = 0; p < len; p++) {
    int lineStart = p == 0 || text[p - 1] == '\n';
    if (lineStart && text[p] == ';') {
      char name[128];
      size_t n = strcspn(text + p + 1, " =\n");
      snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1), text + p + 1);
      if (chrParamLookup(name) >= 0) continue; /* a parameter line: drop its ';' */
    }
    on[o++] = text[p];
  }
  on[o] = '\0';
  writeTestFile("uncommented.ini", on);
  char path[512];
  testPath(path, sizeof(path), "uncommented.ini");
  setenv("CHORUS_CONF", path, 1);
  chrConfigReload();
  EXPECT_STR(chrConfigProblems(), "");
  for (int i = 0; i < CHR_P_COUNT; i++) {
    EXPECT(strncmp(chrParamSource((chrParamId)i), path, strlen(path)) == 0, "%s from %s",
           chrParamName((chrParamId)i), chrParamSource((chrParamId)i));
    EXPECT_STR(chrParamStr((chrParamId)i), chrParamDefault((chrParamId)i));
  }
  free(on);
  free(text);
  return finishTest();
}
