/*
 * idle.h: what a polling loop does when nothing moved.
 *
 * The host executor polls its transports. When ranks outnumber cores (8 ranks on a 2-core machine),
 * spinning steals the core from exactly the rank we are waiting for, and every ring hop then costs a
 * scheduler time slice; sleeping costs the timer's slack (tens of microseconds) per hop. So: spin
 * for the first 3 microseconds of idleness (the common, fast case), yield until 2 milliseconds,
 * then sleep 100 microseconds at a time.
 */
#ifndef CHORUS_IDLE_H_
#define CHORUS_IDLE_H_

#include <stdint.h>

uint64_t chrNowNs(void);
/* idleNs: how long the caller has seen no progress. */
void chrIdleWait(uint64_t idleNs);

#endif
