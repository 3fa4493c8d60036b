/* SPDX-License-Identifier: BSD-3-Clause */
/* testtuner_old.c: a library exporting only ncclTunerPlugin_v1, an ABI older than Chorus supports.
 * The object's content does not matter: the loader must refuse it by its name alone. */
__attribute__((visibility("default"))) const void* ncclTunerPlugin_v1[4] = {"old", 0, 0, 0};
