/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * param_api.c: the public ncclParam* functions, on top of the parameter table (config/param.h).
 *
 * A handle is the parameter's id plus one, so a NULL handle is never valid. Integer getters convert
 * with a range check: an INT parameter's value, or a STR parameter whose text is an integer.
 * Strings returned stay valid for the life of the process (a config reload retires, never frees).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"

static ncclResult_t handleToId(const char* func, ncclParamHandle_t h, chrParamId* id) {
  uintptr_t v = (uintptr_t)h;
  if (v < 1 || v > (uintptr_t)CHR_P_COUNT)
    return chrFail(ncclInvalidArgument, "%s: invalid parameter handle %p (use ncclParamBind)", func, (void*)h);
  *id = (chrParamId)(v - 1);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key) {
  if (!out) return chrFail(ncclInvalidArgument, "ncclParamBind: out is NULL");
  if (!key) return chrFail(ncclInvalidArgument, "ncclParamBind: key is NULL");
  int id = chrParamLookup(key);
  if (id < 0) return chrFail(ncclInvalidArgument, "ncclParamBind: unknown parameter '%s'", key);
  *out = (ncclParamHandle_t)(uintptr_t)(id + 1);
  return ncclSuccess;
}

/* The value as a signed integer, for the signed getters and range checks. */
static ncclResult_t valueAsInt(const char* func, chrParamId id, int64_t* out) {
  if (chrParamIsInt(id)) {
    *out = chrParamInt(id);
    return ncclSuccess;
  }
  const char* s = chrParamStr(id);
  char* end;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (s[0] == '\0' || *end != '\0' || errno == ERANGE)
    return chrFail(ncclInvalidArgument, "%s: %s='%s' is not an integer", func, chrParamName(id), s);
  *out = (int64_t)v;
  return ncclSuccess;
}

static ncclResult_t getSigned(const char* func, ncclParamHandle_t h, int64_t lo, int64_t hi, int64_t* out) {
  chrParamId id = (chrParamId)0;
  CHECK(handleToId(func, h, &id));
  int64_t v;
  CHECK(valueAsInt(func, id, &v));
  if (v < lo || v > hi)
    return chrFail(ncclInvalidArgument, "%s: %s=%" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", func,
                   chrParamName(id), v, lo, hi);
  *out = v;
  return ncclSuccess;
}

static ncclResult_t getUnsigned(const char* func, ncclParamHandle_t h, uint64_t hi, uint64_t* out) {
  chrParamId id = (chrParamId)0;
  CHECK(handleToId(func, h, &id));
  uint64_t v;
  if (!chrParamIsInt(id) && chrParamStr(id)[0] != '-') {
    /* A STR value may exceed INT64_MAX and still fit a uint64_t. */
    const char* s = chrParamStr(id);
    char* end;
    errno = 0;
    unsigned long long u = strtoull(s, &end, 0);
    if (s[0] == '\0' || *end != '\0' || errno == ERANGE)
      return chrFail(ncclInvalidArgument, "%s: %s='%s' is not an unsigned integer", func, chrParamName(id), s);
    v = (uint64_t)u;
  } else {
    int64_t sv;
    CHECK(valueAsInt(func, id, &sv));
    if (sv < 0)
      return chrFail(ncclInvalidArgument, "%s: %s=%" PRId64 " is negative", func, chrParamName(id), sv);
    v = (uint64_t)sv;
  }
  if (v > hi)
    return chrFail(ncclInvalidArgument, "%s: %s=%" PRIu64 " is larger than %" PRIu64, func, chrParamName(id), v, hi);
  *out = v;
  return ncclSuccess;
}

#define CHR_PARAM_GET_SIGNED(func, type, lo, hi)                                   \
  NCCL_API(ncclResult_t, func, ncclParamHandle_t h, type* out) {                   \
    if (!out) return chrFail(ncclInvalidArgument, #func ": out is NULL");          \
    int64_t v;                                                                     \
    CHECK(getSigned(#func, h, (lo), (hi), &v));                                    \
    *out = (type)v;                                                                \
    return ncclSuccess;                                                            \
  }

#define CHR_PARAM_GET_UNSIGNED(func, type, hi)                                     \
  NCCL_API(ncclResult_t, func, ncclParamHandle_t h, type* out) {                   \
    if (!out) return chrFail(ncclInvalidArgument, #func ": out is NULL");          \
    uint64_t v;                                                                    \
    CHECK(getUnsigned(#func, h, (hi), &v));                                        \
    *out = (type)v;                                                                \
    return ncclSuccess;                                                            \
  }

CHR_PARAM_GET_SIGNED(ncclParamGetI8, int8_t, INT8_MIN, INT8_MAX)
CHR_PARAM_GET_SIGNED(ncclParamGetI16, int16_t, INT16_MIN, INT16_MAX)
CHR_PARAM_GET_SIGNED(ncclParamGetI32, int32_t, INT32_MIN, INT32_MAX)
CHR_PARAM_GET_SIGNED(ncclParamGetI64, int64_t, INT64_MIN, INT64_MAX)
CHR_PARAM_GET_UNSIGNED(ncclParamGetU8, uint8_t, UINT8_MAX)
CHR_PARAM_GET_UNSIGNED(ncclParamGetU16, uint16_t, UINT16_MAX)
CHR_PARAM_GET_UNSIGNED(ncclParamGetU32, uint32_t, UINT32_MAX)
CHR_PARAM_GET_UNSIGNED(ncclParamGetU64, uint64_t, UINT64_MAX)

NCCL_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out) {
  if (!out) return chrFail(ncclInvalidArgument, "ncclParamGetStr: out is NULL");
  chrParamId id = (chrParamId)0;
  CHECK(handleToId("ncclParamGetStr", h, &id));
  *out = chrParamStr(id);
  return ncclSuccess;
}

/* Copies the string form with its NUL into out[maxLen]; *len gets the bytes needed (strlen + 1).
 * out == NULL with maxLen == 0 only asks for the length. A buffer that is too small is an error and
 * is left untouched. */
NCCL_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len) {
  if (!len) return chrFail(ncclInvalidArgument, "ncclParamGet: len is NULL");
  if (maxLen < 0) return chrFail(ncclInvalidArgument, "ncclParamGet: maxLen %d is negative", maxLen);
  if (!out && maxLen > 0) return chrFail(ncclInvalidArgument, "ncclParamGet: out is NULL with maxLen %d", maxLen);
  chrParamId id = (chrParamId)0;
  CHECK(handleToId("ncclParamGet", h, &id));
  const char* value = chrParamStr(id);
  int needed = (int)strlen(value) + 1;
  *len = needed;
  if (!out) return ncclSuccess;
  if (maxLen < needed)
    return chrFail(ncclInvalidArgument, "ncclParamGet: %s needs %d bytes, buffer has %d", chrParamName(id), needed,
                   maxLen);
  memcpy(out, value, (size_t)needed);
  return ncclSuccess;
}

/* *value points at the value (NUL-terminated); *valueLen is its length without the NUL. */
NCCL_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen) {
  if (!key) return chrFail(ncclInvalidArgument, "ncclParamGetParameter: key is NULL");
  if (!value) return chrFail(ncclInvalidArgument, "ncclParamGetParameter: value is NULL");
  if (!valueLen) return chrFail(ncclInvalidArgument, "ncclParamGetParameter: valueLen is NULL");
  int id = chrParamLookup(key);
  if (id < 0) return chrFail(ncclInvalidArgument, "ncclParamGetParameter: unknown parameter '%s'", key);
  *value = chrParamStr((chrParamId)id);
  *valueLen = (int)strlen(*value);
  return ncclSuccess;
}

static const char* const allParamKeys[CHR_P_COUNT] = {
#define CHR_PARAM(id, name, type, def, section, help) [CHR_P_##id] = name,
#include "config/params.def"
#undef CHR_PARAM
};

NCCL_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen) {
  if (!table) return chrFail(ncclInvalidArgument, "ncclParamGetAllParameterKeys: table is NULL");
  if (!tableLen) return chrFail(ncclInvalidArgument, "ncclParamGetAllParameterKeys: tableLen is NULL");
  *table = (const char**)allParamKeys; /* static storage; the caller must not modify or free it */
  *tableLen = CHR_P_COUNT;
  return ncclSuccess;
}

NCCL_API(void, ncclParamDumpAll, void) {
  for (int i = 0; i < CHR_P_COUNT; i++)
    printf("%s=%s (%s)\n", chrParamName((chrParamId)i), chrParamStr((chrParamId)i), chrParamSource((chrParamId)i));
  fflush(stdout);
}
