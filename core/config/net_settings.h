/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_settings.h: the syntax of NCCL_NET_GDR_LEVEL and NCCL_NETDEVS_POLICY.
 *
 * Both are STR parameters with a syntax, so config_check.c checks them when the configuration is
 * loaded (a bad value fails the next init with its reason, like every other one), and core/topo,
 * which uses them, reads them with the same functions: one parser for each, in the lower layer.
 * Never logs; 0 on success, -1 with what is wrong and what is accepted in `why`.
 */
#ifndef CHORUS_CONFIG_NET_SETTINGS_H_
#define CHORUS_CONFIG_NET_SETTINGS_H_

#include <stddef.h>

/* NCCL's path types LOC..SYS in NCCL's order (topo_model.h's enum chrTopoPathType has the same
 * numbers, checked there at compile time). */
enum chrGdrLevel { CHR_GDR_LOC, CHR_GDR_NVL, CHR_GDR_NVB, CHR_GDR_C2C, CHR_GDR_PIX, CHR_GDR_PXB, CHR_GDR_P2C,
                   CHR_GDR_PXN, CHR_GDR_PHB, CHR_GDR_SYS };

/* NCCL_NET_GDR_LEVEL: "" -> -1 (the default: P2C or PXB, by NCCL_NET_GDR_C2C); a name LOC..SYS
 * (upper case, as NCCL compares them) -> its enum chrGdrLevel; the old numbers 0-4 -> LOC, PIX, PXB,
 * PHB, SYS, larger numbers SYS (NCCL clamps them). */
int chrConfigParseGdrLevel(const char* text, int* level, char* why, size_t cap);

/* NCCL_NETDEVS_POLICY: "" or AUTO, ALL, MAX:N with N from 1 to CHR_NETDEVS_MAX_N (case-insensitive). */
enum chrNetDevsPolicy { CHR_NETDEVS_AUTO, CHR_NETDEVS_ALL, CHR_NETDEVS_MAX };
#define CHR_NETDEVS_MAX_N 256 /* more NETs than a topology holds (NCCL's 256 elements) */
int chrConfigParseNetDevsPolicy(const char* text, int* policy, int* max, char* why, size_t cap);

#endif /* CHORUS_CONFIG_NET_SETTINGS_H_ */
