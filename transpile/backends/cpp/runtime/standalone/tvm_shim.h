/* tvm_shim.h: the few TVM C declarations that kernels from TVM's `c` target use, without TVM.
 *
 * The standalone bundle rewrites kernels.c's `#include "tvm/..."` lines to this header. It
 * defines the TVM-FFI packed calling convention (TVMFFIAny, layout-compatible with
 * tvm/ffi/c_api.h of apache-tvm-ffi 0.1) and declares the backend functions tvm_shim.c implements:
 * workspace allocation (aligned malloc), parallel launch (serial: TVM's `c` target never emits it
 * for transpile's schedules, but an unscheduled kernel may) and error reporting (a thread-local
 * message that the C++ runtime turns into an exception). */
#ifndef TRANSPILE_TVM_SHIM_H_
#define TRANSPILE_TVM_SHIM_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TVM_DLL
#define TVM_DLL
#endif

/* Type indices of TVMFFIAny used by kernels (the values of tvm/ffi/c_api.h). */
enum {
  kTVMFFINone = 0,
  kTVMFFIInt = 1,
  kTVMFFIBool = 2,
  kTVMFFIFloat = 3,
  kTVMFFIOpaquePtr = 4,
  kTVMFFIDataType = 5,
  kTVMFFIDevice = 6,
  kTVMFFIDLTensorPtr = 7,
  kTVMFFITensor = 70
};

typedef struct {
  int32_t type_index;
  union {
    uint32_t zero_padding;
    uint32_t small_str_len;
  };
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
    void* v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
    uint64_t v_uint64;
  };
} TVMFFIAny;

typedef struct {
  void* sync_handle;
  int32_t num_task;
} TVMParallelGroupEnv;

typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint);
int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);
int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);
int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);
void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** message_parts, int32_t num_parts);

/* The error a kernel raised last on this thread (kind, e.g. "ValueError", and message). */
const char* transpile_shim_error_kind(void);
const char* transpile_shim_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* TRANSPILE_TVM_SHIM_H_ */
