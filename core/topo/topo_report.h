/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_report.h: what `chorus-info --topo [FILE]` prints, and its dump (`--dump OUT`).
 *
 * The report is line-oriented and stable: each line is a keyword followed by space-separated
 * "key value" pairs, values never contain blanks, numbers of GB/s have two decimals.
 *   topology FILE cpus C switches P gpus G nics N nets K nvswitches V  (FILE: "discovered" for this machine)
 *   gpu DEV rank R busid B sm S gdr 0|1 numa M                       (R is - when the file gives none)
 *   gpu DEV channels NET0 NET1 ...                                   (the NET dev of channels 0..; - none)
 *   gpu DEV net NETDEV name X busid B path TYPE bw F gdr_read 0|1 gdr_write 0|1 [via GPUDEV]
 *   gpu DEV gpu DEV2 path TYPE bw F
 *   note TEXT                                                        (free text, e.g. no GPUs)
 * GPUs and NETs come in dev order. `via` names the NVLink peer of a PXN path.
 */
#ifndef CHORUS_TOPO_REPORT_H_
#define CHORUS_TOPO_REPORT_H_

#include <stdio.h>
#include "nccl.h"
#include "topo/topo_model.h"

struct chrTopoInfoRequest {
  const char* path;      /* the topology file; NULL for this machine (comm/topo_file.h) */
  const char* dumpPath;  /* write the model back here; NULL: no dump */
  int fill;              /* 1: complete the file offline (chrTopoFill) with fillOptions */
  struct chrTopoFillOptions fillOptions;
  int channels;          /* channels listed per GPU */
};

/* Loads, completes, builds, prints to `out` and dumps. On an error nothing is printed; the cause is
 * the thread's last error (file:line for what is wrong in the file). */
ncclResult_t chrTopoInfo(const struct chrTopoInfoRequest* req, FILE* out);

/* The same for a tree already made (a discovered one: comm/topo_file.c), which it takes over; `name`
 * stands for the file on the first line. */
ncclResult_t chrTopoInfoXml(const struct chrTopoInfoRequest* req, struct chrXml* xml, const char* name, FILE* out);

/* The report of a built model (chrTopoInfo's output after loading). */
void chrTopoReport(const struct chrTopoSystem* sys, const char* name, int channels, FILE* out);

#endif /* CHORUS_TOPO_REPORT_H_ */
