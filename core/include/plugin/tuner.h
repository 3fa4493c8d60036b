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

#endif /* CHORUS_PLUGIN_TUNER_H_ */
