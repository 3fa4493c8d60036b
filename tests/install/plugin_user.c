/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin_user.c: a net plugin author's first file, compiled against the installed plugin headers. */
#include "plugin/net_v12.h"

int plugin_user_table_size(void) { return (int)sizeof(ncclNet_v12_t); }
