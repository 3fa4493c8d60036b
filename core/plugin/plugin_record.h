/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_record.h: what the tuner and profiler loaders keep about one plugin library, and the steps
 * they share: open it by the NCCL naming rules, or borrow the handle of a net plugin library to look
 * for the symbol there; find the newest versioned table it exports; report a library that cannot be
 * used (WARN once per distinct reason, or fail under CHORUS_PLUGIN_STRICT).
 *
 * Each loader embeds one record (`rec`) at the head of its own library struct, which adds the bound
 * table and the version adapters.
 */
#ifndef CHORUS_PLUGIN_RECORD_H_
#define CHORUS_PLUGIN_RECORD_H_

#include "nccl.h"
#include "util/plugin_open.h"

struct chrNet;

struct chrPluginRecord {
  char label[CHR_PLUGIN_PATH_MAX]; /* what the user asked for, or the default name, for messages */
  chrPluginLib dl;                 /* handle, path opened, names tried, dlerror texts */
  int borrowed;                    /* dl.handle belongs to the net loader: never closed here */
  const void* netKey;              /* the net library this record searched (NULL: not from a net library) */
  int usable;                      /* 1: a table was found and bound */
  char failReason[CHR_PLUGIN_REASON_MAX + 64]; /* why not usable (open or probe) */
  int version;                     /* ABI version of the bound table */
  const char* name;                /* the table's name */
  int announced;                   /* the INFO load line was written */
  int refs;                        /* communicators holding a context (guarded by the loader's lock) */
  char lastWarn[CHR_PLUGIN_REASON_MAX + 64]; /* last failure WARNed, so repeats stay quiet */
};

/* Labels the record and opens (prefix, value) (plugin_open.h). Returns 1 when opened; 0 with
 * failReason set. */
int chrPluginRecordOpen(struct chrPluginRecord* rec, const char* prefix, const char* value);

/* Labels the record after net plugin `net` and borrows that library's handle (it stays loaded for
 * the process). */
void chrPluginRecordBorrow(struct chrPluginRecord* rec, const struct chrNet* net);

/* The index in symbols[0..n) (newest first) of the first symbol the library exports, with its
 * address in *table; -1 when none. */
int chrPluginRecordFind(struct chrPluginRecord* rec, const char* const* symbols, int n, const void** table);

/* " (<file>: <name>, ABI vN)" for messages (chrPluginDescribe). */
void chrPluginRecordDescribe(const struct chrPluginRecord* rec, char* where, size_t cap);

/* A plugin that was found or asked for cannot be used. kind: "TUNER" / "PROFILER"; what: "tuner" /
 * "profiler"; without: how Chorus goes on ("running without a profiler"). Strict: fails with
 * ncclInvalidUsage; otherwise WARNs once per distinct reason and returns ncclSuccess. */
ncclResult_t chrPluginRecordFailed(struct chrPluginRecord* rec, const char* kind, const char* what,
                                   const char* without, const char* reason, int strict);

#endif /* CHORUS_PLUGIN_RECORD_H_ */
