/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config_api.c: the public ncclParam* functions on top of the parameter table.
 */
#include "config_test_util.h"
#include "log/log.h"
#include "nccl.h"

static void bindOk(const char* key, ncclParamHandle_t* h) {
  ncclResult_t r = ncclParamBind(h, key);
  EXPECT(r == ncclSuccess, "ncclParamBind(%s) = %d", key, r);
}

static void checkIntegers(void) {
  ncclParamHandle_t buff, share, commId, debug;
  bindOk("NCCL_BUFFSIZE", &buff);
  bindOk("NCCL_COMM_SPLIT_SHARE_RESOURCES", &share);
  bindOk("NCCL_COMM_ID", &commId);
  bindOk("NCCL_DEBUG", &debug);

  int8_t i8 = 5;
  int16_t i16;
  int32_t i32 = 0;
  int64_t i64 = 0;
  uint8_t u8 = 9;
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  /* NCCL_BUFFSIZE=4194304 (default): fits 32 bits, not 8 or 16. */
  EXPECT(ncclParamGetI32(buff, &i32) == ncclSuccess && i32 == 4194304, "I32 %d", i32);
  EXPECT(ncclParamGetI64(buff, &i64) == ncclSuccess && i64 == 4194304, "I64");
  EXPECT(ncclParamGetU32(buff, &u32) == ncclSuccess && u32 == 4194304u, "U32");
  EXPECT(ncclParamGetU64(buff, &u64) == ncclSuccess && u64 == 4194304u, "U64");
  EXPECT(ncclParamGetI8(buff, &i8) == ncclInvalidArgument && i8 == 5, "I8 out of range must fail, untouched");
  EXPECT(strstr(chrThreadLastError(), "out of range"), "last error: %s", chrThreadLastError());
  EXPECT(ncclParamGetI16(buff, &i16) == ncclInvalidArgument, "I16 out of range must fail");
  EXPECT(ncclParamGetU16(buff, &u16) == ncclInvalidArgument, "U16 out of range must fail");
  /* -1: fine signed, refused unsigned. */
  EXPECT(ncclParamGetI8(share, &i8) == ncclSuccess && i8 == -1, "I8 %d", i8);
  EXPECT(ncclParamGetU8(share, &u8) == ncclInvalidArgument && u8 == 9, "U8 of -1 must fail");
  EXPECT(strstr(chrThreadLastError(), "negative"), "last error: %s", chrThreadLastError());
  /* A STR parameter converts when its text is an integer, else fails. */
  EXPECT(ncclParamGetU16(commId, &u16) == ncclSuccess && u16 == 0x1234, "U16 %u", u16);
  EXPECT(ncclParamGetU64(commId, &u64) == ncclSuccess && u64 == 0x1234, "U64");
  EXPECT(ncclParamGetI32(debug, &i32) == ncclInvalidArgument, "STR 'WARN' is not an integer");
  EXPECT(strstr(chrThreadLastError(), "NCCL_DEBUG='WARN' is not an integer"), "last error: %s", chrThreadLastError());
  /* Bad handles and NULL outputs. */
  EXPECT(ncclParamGetI32(NULL, &i32) == ncclInvalidArgument, "NULL handle");
  EXPECT(ncclParamGetI32((ncclParamHandle_t)(uintptr_t)100000, &i32) == ncclInvalidArgument, "bad handle");
  EXPECT(ncclParamGetI32(buff, NULL) == ncclInvalidArgument, "NULL out");
  EXPECT(ncclParamGetU64(buff, NULL) == ncclInvalidArgument, "NULL out");
}

static void checkStrings(void) {
  ncclParamHandle_t h;
  EXPECT(ncclParamBind(&h, "NCCL_NO_SUCH_THING") == ncclInvalidArgument, "unknown key");
  EXPECT(strstr(chrThreadLastError(), "unknown parameter 'NCCL_NO_SUCH_THING'"), "last error: %s",
         chrThreadLastError());
  EXPECT(ncclParamBind(NULL, "NCCL_DEBUG") == ncclInvalidArgument, "NULL out");
  EXPECT(ncclParamBind(&h, NULL) == ncclInvalidArgument, "NULL key");

  bindOk("NCCL_NET_PLUGIN", &h);
  const char* s = NULL;
  EXPECT(ncclParamGetStr(h, &s) == ncclSuccess && s && strcmp(s, "socket") == 0, "GetStr %s", s ? s : "(null)");
  EXPECT(ncclParamGetStr(h, NULL) == ncclInvalidArgument, "NULL out");

  char buf[16];
  int len = 0;
  EXPECT(ncclParamGet(h, NULL, 0, &len) == ncclSuccess && len == 7, "length query %d", len);
  memset(buf, '#', sizeof(buf));
  EXPECT(ncclParamGet(h, buf, sizeof(buf), &len) == ncclSuccess && len == 7 && strcmp(buf, "socket") == 0, "Get");
  memset(buf, '#', sizeof(buf));
  EXPECT(ncclParamGet(h, buf, 6, &len) == ncclInvalidArgument && len == 7 && buf[0] == '#', "short buffer");
  EXPECT(ncclParamGet(h, buf, sizeof(buf), NULL) == ncclInvalidArgument, "NULL len");
  EXPECT(ncclParamGet(h, NULL, 4, &len) == ncclInvalidArgument, "NULL out with maxLen");
  EXPECT(ncclParamGet(h, buf, -1, &len) == ncclInvalidArgument, "negative maxLen");

  const char* value = NULL;
  int valueLen = -1;
  EXPECT(ncclParamGetParameter("NCCL_DEBUG", &value, &valueLen) == ncclSuccess && value &&
             strcmp(value, "WARN") == 0 && valueLen == 4,
         "GetParameter");
  EXPECT(ncclParamGetParameter("DEBUG", &value, &valueLen) == ncclInvalidArgument, "short names are not keys");
  EXPECT(ncclParamGetParameter(NULL, &value, &valueLen) == ncclInvalidArgument, "NULL key");
  EXPECT(ncclParamGetParameter("NCCL_DEBUG", NULL, &valueLen) == ncclInvalidArgument, "NULL value");
  EXPECT(ncclParamGetParameter("NCCL_DEBUG", &value, NULL) == ncclInvalidArgument, "NULL valueLen");

  const char** table = NULL;
  int n = 0;
  EXPECT(ncclParamGetAllParameterKeys(&table, &n) == ncclSuccess && n == CHR_P_COUNT, "keys %d", n);
  for (int i = 0; table && i < n; i++) EXPECT_STR(table[i], chrParamName((chrParamId)i));
  EXPECT(ncclParamGetAllParameterKeys(NULL, &n) == ncclInvalidArgument, "NULL table");
  EXPECT(ncclParamGetAllParameterKeys(&table, NULL) == ncclInvalidArgument, "NULL len");
}

static void checkDumpAll(void) {
  char out[512];
  testPath(out, sizeof(out), "dump.txt");
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  if (!freopen(out, "w", stdout)) return;
  ncclParamDumpAll();
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  char* text = readWholeFile(out);
  EXPECT(text && strstr(text, "NCCL_DEBUG=WARN (env)\n") && strstr(text, "NCCL_NET_PLUGIN=socket (default)\n") &&
             strstr(text, "CHORUS_TIMEOUT=0 (default)\n"),
         "%s", text ? text : "(none)");
  int lines = 0;
  for (const char* p = text; p && *p; p++) lines += *p == '\n';
  EXPECT(lines == CHR_P_COUNT, "%d lines", lines);
  free(text);
}

int main(void) {
  isolateConfig();
  char logPath[512];
  testPath(logPath, sizeof(logPath), "log.txt");
  setenv("NCCL_DEBUG", "WARN", 1); /* the WARNs of chrFail go to a file, not to the test output */
  setenv("NCCL_DEBUG_FILE", logPath, 1);
  setenv("NCCL_COMM_ID", "0x1234", 1);
  chrLogReset();
  checkIntegers();
  checkStrings();
  checkDumpAll();
  return finishTest();
}
