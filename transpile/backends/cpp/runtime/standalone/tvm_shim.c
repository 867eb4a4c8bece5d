/* tvm_shim.c: the TVM C backend functions kernels from TVM's `c` target call (see tvm_shim.h). */
#include "tvm_shim.h"

#include <stdlib.h>
#include <string.h>

/* TVM aligns workspaces to 64 bytes (kTempAllocaAlignment); its kernels may rely on it. */
void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint) {
  (void)device_type, (void)device_id, (void)dtype_code_hint, (void)dtype_bits_hint;
  uint64_t rounded = (nbytes + 63) / 64 * 64;
  void* ptr = aligned_alloc(64, rounded == 0 ? 64 : (size_t)rounded);
  if (ptr == NULL) TVMFFIErrorSetRaisedFromCStr("MemoryError", "cannot allocate a kernel workspace");
  return ptr;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  (void)device_type, (void)device_id;
  free(ptr);
  return 0;
}

/* Serial: one task does all the work (a TVM parallel lambda splits its loop by num_task). */
int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  (void)num_task;
  TVMParallelGroupEnv env = {NULL, 1};
  return flambda(0, &env, cdata);
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  (void)task_id, (void)penv;
  return 0;
}

enum { kMessageCapacity = 2048, kKindCapacity = 64 };
static _Thread_local char error_kind[kKindCapacity];
static _Thread_local char error_message[kMessageCapacity];

static void copy_truncated(char* dst, size_t capacity, size_t* used, const char* text) {
  size_t n = strlen(text);
  if (*used + n >= capacity) n = capacity - 1 - *used;
  memcpy(dst + *used, text, n);
  *used += n;
  dst[*used] = '\0';
}

void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** message_parts, int32_t num_parts) {
  size_t used = 0;
  error_kind[0] = '\0';
  copy_truncated(error_kind, kKindCapacity, &used, kind ? kind : "RuntimeError");
  used = 0;
  error_message[0] = '\0';
  for (int32_t i = 0; i < num_parts; ++i) {
    if (message_parts[i] != NULL) copy_truncated(error_message, kMessageCapacity, &used, message_parts[i]);
  }
}

void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStrParts(kind, &message, 1);
}

const char* transpile_shim_error_kind(void) { return error_kind[0] ? error_kind : "RuntimeError"; }

const char* transpile_shim_error_message(void) { return error_message[0] ? error_message : "a kernel failed"; }
