/* The description of a TIR program library that the generic shim (tir_shim.cc) serves.
 * Generated per program as plain C (program.c): no TVM headers, so it compiles in milliseconds. */
#ifndef TRANSPILE_TIR_PROGRAM_H_
#define TRANSPILE_TIR_PROGRAM_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A TVM-FFI safe-call function (args and result are TVMFFIAny arrays; void* keeps this header plain C). */
typedef int (*TirPackedFn)(void* self, const void* args, int32_t num_args, void* result);

typedef struct {
  const char* name;
  int32_t ndim;
  const int64_t* shape;
  DLDataType dtype;
  void* data; /* constants only: the weights blob, 64-byte aligned, linked into the library */
} TirTensorDesc;

typedef struct {
  const char* entry_name;  /* the Relay entry, for messages */
  int32_t num_inputs;
  const TirTensorDesc* inputs;
  int32_t num_constants;
  const TirTensorDesc* constants;
  int32_t num_outputs;
  const TirTensorDesc* outputs;
  int32_t single_output; /* main returns one tensor rather than an array */
  int32_t big_stack;     /* the program recurses: run the entry on a big stack, stack-checked */
  TirPackedFn entry;     /* the TIR entry: inputs, constants (the weights blob, if any), outputs */
} TirProgram;

extern const TirProgram transpile_tir_program;

#ifdef __cplusplus
}
#endif

#endif /* TRANSPILE_TIR_PROGRAM_H_ */
