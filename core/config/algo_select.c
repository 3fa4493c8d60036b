/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * algo_select.c: parsing NCCL_ALGO / NCCL_PROTO (syntax in algo_select.h) into per-operation masks.
 *
 * The parser works on (pointer, length) spans of the caller's string and never copies or writes it,
 * so any length and any bytes are safe; only the error message copies a bounded, sanitized excerpt.
 * The parser itself never logs: it describes what is wrong in a parseErr, and only the public mask
 * functions report it (chrFail). The config loader checks settings through chrAlgoSettingCheck while
 * the logger may still be reading its own settings, so that path must stay silent.
 */
#include "config/algo_select.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/param.h"
#include "log/check.h"
#include "log/log.h"

/* Operations that go through algorithm selection: ncclFuncBroadcast (0) .. ncclFuncAllReduce (4). */
#define CHR_SELECT_FUNCS 5

static const char* const algoNames[CHR_NUM_ALGOS] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                                      "NVLS", "NVLS_TREE", "PAT"};
static const char* const protoNames[CHR_NUM_PROTOS] = {"LL", "LL128", "SIMPLE"};

const char* chrAlgoName(int algo) { return algo >= 0 && algo < CHR_NUM_ALGOS ? algoNames[algo] : "UNDEF"; }
const char* chrProtoName(int proto) {
  return proto >= 0 && proto < CHR_NUM_PROTOS ? protoNames[proto] : "UNDEF";
}

struct nameBits {
  const char* name;
  unsigned bits;
};

/* Our canonical names plus the spellings NCCL documents (CollNetDirect, NVLSTree, ...). */
static const struct nameBits algoTable[] = {
    {"tree", 1u << CHR_ALGO_TREE},
    {"ring", 1u << CHR_ALGO_RING},
    {"collnet_direct", 1u << CHR_ALGO_COLLNET_DIRECT},
    {"collnetdirect", 1u << CHR_ALGO_COLLNET_DIRECT},
    {"collnet_chain", 1u << CHR_ALGO_COLLNET_CHAIN},
    {"collnetchain", 1u << CHR_ALGO_COLLNET_CHAIN},
    {"collnet", (1u << CHR_ALGO_COLLNET_DIRECT) | (1u << CHR_ALGO_COLLNET_CHAIN)},
    {"nvls", 1u << CHR_ALGO_NVLS},
    {"nvls_tree", 1u << CHR_ALGO_NVLS_TREE},
    {"nvlstree", 1u << CHR_ALGO_NVLS_TREE},
    {"pat", 1u << CHR_ALGO_PAT},
};
static const struct nameBits protoTable[] = {
    {"ll", 1u << CHR_PROTO_LL},
    {"ll128", 1u << CHR_PROTO_LL128},
    {"simple", 1u << CHR_PROTO_SIMPLE},
};
static const char* const funcNames[CHR_SELECT_FUNCS] = {"broadcast", "reduce", "allgather", "reducescatter",
                                                        "allreduce"};

struct settingKind {
  const char* param; /* for messages */
  const char* what;  /* "algorithm" / "protocol" */
  const char* known; /* list for the message on an unknown name */
  const struct nameBits* table;
  int tableSize;
  unsigned all;
};

static const struct settingKind algoKind = {
    "NCCL_ALGO", "algorithm", "tree, ring, collnet_direct, collnet_chain, collnet, nvls, nvls_tree, pat",
    algoTable, (int)(sizeof(algoTable) / sizeof(algoTable[0])), CHR_ALL_ALGOS};
static const struct settingKind protoKind = {"NCCL_PROTO", "protocol", "ll, ll128, simple", protoTable,
                                             (int)(sizeof(protoTable) / sizeof(protoTable[0])), CHR_ALL_PROTOS};

/* A piece of the setting: [p, p+n). */
struct span {
  const char* p;
  size_t n;
};

static int isSpace(char c) { return isspace((unsigned char)c) != 0; }

static struct span trim(struct span s) {
  while (s.n > 0 && isSpace(s.p[0])) s.p++, s.n--;
  while (s.n > 0 && isSpace(s.p[s.n - 1])) s.n--;
  return s;
}

static int spanIs(struct span s, const char* name) {
  return strlen(name) == s.n && strncasecmp(s.p, name, s.n) == 0;
}

/* Index of the first `c` in s, or s.n. */
static size_t spanFind(struct span s, char c) {
  const char* hit = memchr(s.p, c, s.n);
  return hit ? (size_t)(hit - s.p) : s.n;
}

/* Bounded, printable copy for messages: control and non-ASCII bytes become '?'. */
static void excerpt(char* out, size_t cap, const char* p, size_t n) {
  size_t keep = n < cap - 1 ? n : cap - 4; /* room for "..." when cut */
  for (size_t i = 0; i < keep; i++) {
    unsigned char c = (unsigned char)p[i];
    out[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  if (keep < n) {
    memcpy(out + keep, "...", 4);
  } else {
    out[keep] = '\0';
  }
}

/* What is wrong with a setting, without the parameter name or the setting itself. */
struct parseErr {
  char text[320];
};

/* Describes a parse error: what is wrong and the token. */
static ncclResult_t parseError(struct parseErr* err, const char* problem, struct span token, const char* hint) {
  char tokenText[64];
  excerpt(tokenText, sizeof(tokenText), token.p, token.n);
  snprintf(err->text, sizeof(err->text), "%s \"%s\"%s%s", problem, tokenText, hint ? "; " : "", hint ? hint : "");
  return ncclInvalidArgument;
}

/* Reports a parse error once, with the parameter and the setting: the WARN and the last error. */
static ncclResult_t reportError(const struct settingKind* kind, const char* setting, const struct parseErr* err) {
  char settingText[200];
  excerpt(settingText, sizeof(settingText), setting, strlen(setting));
  return chrFail(ncclInvalidArgument, "%s=\"%s\": %s", kind->param, settingText, err->text);
}

/* One list: [^]name[,name...]. `section` (the list with its "func:") is quoted for empty lists/names. */
static ncclResult_t parseList(const struct settingKind* kind, struct span list, struct span section, unsigned* mask,
                              struct parseErr* err) {
  struct span rest = trim(list);
  int exclude = 0;
  if (rest.n > 0 && rest.p[0] == '^') {
    exclude = 1;
    rest.p++, rest.n--;
    rest = trim(rest);
  }
  if (rest.n == 0) return parseError(err, "empty list in section", section, NULL);
  unsigned named = 0;
  for (;;) {
    size_t comma = spanFind(rest, ',');
    struct span token = trim((struct span){rest.p, comma});
    if (token.n == 0) return parseError(err, "empty name in list", section, NULL);
    int found = 0;
    for (int i = 0; i < kind->tableSize; i++) {
      if (spanIs(token, kind->table[i].name)) {
        named |= kind->table[i].bits;
        found = 1;
        break;
      }
    }
    if (!found) {
      char hint[160];
      snprintf(hint, sizeof(hint), "known: %s", kind->known);
      return parseError(err, kind == &algoKind ? "unknown algorithm" : "unknown protocol", token, hint);
    }
    if (comma == rest.n) break;
    rest.p += comma + 1;
    rest.n -= comma + 1;
  }
  *mask = exclude ? (kind->all & ~named) : named;
  return ncclSuccess;
}

/* The whole setting into one mask per selectable operation. */
static ncclResult_t parseSetting(const struct settingKind* kind, const char* setting,
                                 unsigned masks[CHR_SELECT_FUNCS], struct parseErr* err) {
  unsigned sectionMask[CHR_SELECT_FUNCS] = {0};
  int funcNamed[CHR_SELECT_FUNCS] = {0};
  unsigned defaultMask = kind->all;
  int haveDefault = 0;
  struct span rest = {setting, strlen(setting)};
  while (rest.n > 0) {
    size_t semi = spanFind(rest, ';');
    struct span section = trim((struct span){rest.p, semi});
    if (section.n > 0) { /* empty sections (";;", a trailing ';') are skipped */
      size_t colon = spanFind(section, ':');
      if (colon == section.n) {
        if (haveDefault)
          return parseError(err, "two sections without a function; the second is", section, NULL);
        if (parseList(kind, section, section, &defaultMask, err) != ncclSuccess) return ncclInvalidArgument;
        haveDefault = 1;
      } else {
        struct span funcName = trim((struct span){section.p, colon});
        int func = -1;
        for (int f = 0; f < CHR_SELECT_FUNCS; f++)
          if (spanIs(funcName, funcNames[f])) func = f;
        if (func < 0)
          return parseError(err, "unknown function", funcName,
                            "known: broadcast, reduce, allgather, reducescatter, allreduce");
        if (funcNamed[func]) return parseError(err, "function named twice:", funcName, NULL);
        struct span list = {section.p + colon + 1, section.n - colon - 1};
        if (parseList(kind, list, section, &sectionMask[func], err) != ncclSuccess) return ncclInvalidArgument;
        funcNamed[func] = 1;
      }
    }
    if (semi == rest.n) break;
    rest.p += semi + 1;
    rest.n -= semi + 1;
  }
  for (int f = 0; f < CHR_SELECT_FUNCS; f++) masks[f] = funcNamed[f] ? sectionMask[f] : defaultMask;
  return ncclSuccess;
}

static ncclResult_t maskFor(const struct settingKind* kind, const char* setting, ncclFunc_t func, unsigned* mask) {
  if (mask == NULL) return chrFail(ncclInvalidArgument, "%s mask: NULL output pointer", kind->what);
  unsigned masks[CHR_SELECT_FUNCS];
  struct parseErr err;
  if (setting == NULL) setting = "";
  if (parseSetting(kind, setting, masks, &err) != ncclSuccess) return reportError(kind, setting, &err);
  *mask = ((int)func >= 0 && (int)func < CHR_SELECT_FUNCS) ? masks[func] : kind->all;
  return ncclSuccess;
}

ncclResult_t chrAlgoMask(const char* setting, ncclFunc_t func, unsigned* mask) {
  return maskFor(&algoKind, setting, func, mask);
}

ncclResult_t chrProtoMask(const char* setting, ncclFunc_t func, unsigned* mask) {
  return maskFor(&protoKind, setting, func, mask);
}

/* Silent check for the config loader. The text always ends with the names the setting may use. */
static ncclResult_t checkSetting(const struct settingKind* kind, const char* setting, char* why, size_t cap) {
  unsigned masks[CHR_SELECT_FUNCS];
  struct parseErr err;
  if (parseSetting(kind, setting ? setting : "", masks, &err) == ncclSuccess) return ncclSuccess;
  if (strstr(err.text, "known: ") && strstr(err.text, kind->known)) snprintf(why, cap, "%s", err.text);
  else snprintf(why, cap, "%s; known %s names: %s", err.text, kind->what, kind->known);
  return ncclInvalidArgument;
}

ncclResult_t chrAlgoSettingCheck(const char* setting, char* why, size_t cap) {
  return checkSetting(&algoKind, setting, why, cap);
}

ncclResult_t chrProtoSettingCheck(const char* setting, char* why, size_t cap) {
  return checkSetting(&protoKind, setting, why, cap);
}

/*
 * Cache of the last valid setting per parameter. Entries are immutable once published, so readers
 * load the pointer and compare the text without a lock. A replaced entry is never freed (a reader may
 * still hold it); it goes on a retired list, so it stays reachable. Settings change only on
 * chrConfigReload, so the list stays short. Invalid settings are not cached: each call re-parses and
 * sets the calling thread's last error (the error path is not hot).
 */
struct maskCache {
  struct maskCache* retiredNext;
  unsigned masks[CHR_SELECT_FUNCS];
  char setting[]; /* NUL-terminated copy */
};

static _Atomic(struct maskCache*) algoCache;
static _Atomic(struct maskCache*) protoCache;
static pthread_mutex_t retiredLock = PTHREAD_MUTEX_INITIALIZER;
static struct maskCache* retiredCaches;

static ncclResult_t cachedMask(const struct settingKind* kind, _Atomic(struct maskCache*)* cache,
                               const char* setting, ncclFunc_t func, unsigned* mask) {
  if (mask == NULL) return chrFail(ncclInvalidArgument, "%s mask: NULL output pointer", kind->what);
  struct maskCache* entry = atomic_load_explicit(cache, memory_order_acquire);
  if (entry == NULL || strcmp(entry->setting, setting) != 0) {
    unsigned masks[CHR_SELECT_FUNCS];
    struct parseErr err;
    if (parseSetting(kind, setting, masks, &err) != ncclSuccess) return reportError(kind, setting, &err);
    size_t len = strlen(setting);
    entry = malloc(sizeof(*entry) + len + 1);
    if (entry == NULL) { /* no cache this time; the answer is still right */
      *mask = ((int)func >= 0 && (int)func < CHR_SELECT_FUNCS) ? masks[func] : kind->all;
      return ncclSuccess;
    }
    memcpy(entry->masks, masks, sizeof(masks));
    memcpy(entry->setting, setting, len + 1);
    entry->retiredNext = NULL;
    struct maskCache* old = atomic_exchange_explicit(cache, entry, memory_order_acq_rel);
    if (old != NULL) {
      pthread_mutex_lock(&retiredLock);
      old->retiredNext = retiredCaches;
      retiredCaches = old;
      pthread_mutex_unlock(&retiredLock);
    }
  }
  *mask = ((int)func >= 0 && (int)func < CHR_SELECT_FUNCS) ? entry->masks[func] : kind->all;
  return ncclSuccess;
}

ncclResult_t chrAllowedAlgos(ncclFunc_t func, unsigned* mask) {
  return cachedMask(&algoKind, &algoCache, chrParamStr(CHR_P_ALGO), func, mask);
}

ncclResult_t chrAllowedProtos(ncclFunc_t func, unsigned* mask) {
  return cachedMask(&protoKind, &protoCache, chrParamStr(CHR_P_PROTO), func, mask);
}
