/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * links.h: finding and connecting the links that planned tasks' works name (exec/links.c), and
 * closing them: the comm's ring links (comm->channels) and point-to-point links (comm->p2pSend,
 * p2pRecv) are kept here. The transports below know nothing of tasks or of the comm's tables: this
 * is where works meet connections.
 */
#ifndef CHORUS_LINKS_H_
#define CHORUS_LINKS_H_

#include "hostdev/task.h"
#include "hostdev/work.h"
#include "transport/transport.h"

/* The connected link a work's link names on `channel`, or NULL. */
struct chrLink* chrLinkFind(struct ncclComm* comm, int channel, const struct chrWorkLink* use);

/* Pseudo channel number of point-to-point links (keeps their bootstrap tags apart from rings'). */
#define CHR_P2P_CHANNEL 0x800

/* Connect every link the tasks of the list need and do not have yet. Connecting is collective and
 * blocks, so when the list spans several communicators each connects on its own thread; otherwise
 * comm A would wait for a peer that this very thread must drive in comm B. A comm whose connection
 * fails gets the error as its async error. */
ncclResult_t chrLinksConnectForTasks(struct chrCollTask* list);

/* Close one link of the comm and forget it (a later plan would connect it afresh). */
void chrLinksRetire(struct ncclComm* comm, struct chrLink* link);
/* Close every link of the comm. */
void chrLinksCloseAll(struct ncclComm* comm);

#endif
