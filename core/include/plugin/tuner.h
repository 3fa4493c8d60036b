/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/tuner.h: every tuner plugin ABI version, and the unversioned names the core uses internally.
 * The core speaks only the newest version (v6); older plugins are wrapped by adapters
 * (core/plugin/tuner_v2.c .. tuner_v5.c) that present the v6 table.
 */
#ifndef CHORUS_PLUGIN_TUNER_H_
#define CHORUS_PLUGIN_TUNER_H_

#include "plugin/tuner_common.h"
#include "plugin/tuner_v2.h"
#include "plugin/tuner_v3.h"
#include "plugin/tuner_v4.h"
#include "plugin/tuner_v5.h"
#include "plugin/tuner_v6.h"

typedef ncclTuner_v6_t ncclTuner_t;
typedef ncclNvlDomainInfo_v6_t ncclNvlDomainInfo_t;
typedef ncclTunerConstants_v6_t ncclTunerConstants_t;

/* Name of the object a tuner built against these headers exports, as a string (for dlsym); note that
 * NCCL_NET_PLUGIN_SYMBOL in net.h is an identifier instead. */
#define NCCL_TUNER_PLUGIN_SYMBOL "ncclTunerPlugin_v6"

#endif /* CHORUS_PLUGIN_TUNER_H_ */
