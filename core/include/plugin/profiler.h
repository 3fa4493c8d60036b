/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler.h: every profiler plugin ABI version, and the unversioned names the core uses.
 * The core speaks only the newest version (v6); older plugins are wrapped by adapters
 * (core/plugin/profiler_v1.c .. profiler_v5.c) that present the v6 table.
 */
#ifndef CHORUS_PLUGIN_PROFILER_H_
#define CHORUS_PLUGIN_PROFILER_H_

#include "plugin/profiler_common.h"
#include "plugin/profiler_v1.h"
#include "plugin/profiler_v2.h"
#include "plugin/profiler_v3.h"
#include "plugin/profiler_v4.h"
#include "plugin/profiler_v5.h"
#include "plugin/profiler_v6.h"

typedef ncclProfiler_v6_t ncclProfiler_t;
typedef ncclProfilerEventDescr_v6_t ncclProfilerEventDescr_t;
typedef ncclProfilerEventStateArgs_v6_t ncclProfilerEventStateArgs_t;

#endif /* CHORUS_PLUGIN_PROFILER_H_ */
