/* dlpack.h (minimal): the DLPack tensor structs the standalone bundle needs, written for transpile.
 *
 * Layout-compatible with DLPack 1.x (https://github.com/dmlc/dlpack) for DLDevice, DLDataType and
 * DLTensor, and it uses the same include guard, so a program that already includes the real
 * dlpack.h gets the real one and nothing is defined twice. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
  uint8_t code;   /* a DLDataTypeCode */
  uint8_t bits;   /* bits per lane: 8, 16, 32, 64 */
  uint16_t lanes; /* 1 for scalars */
} DLDataType;

typedef struct {
  void* data;          /* the buffer (64-byte aligned in transpile's tensors) */
  DLDevice device;     /* always {kDLCPU, 0} here */
  int32_t ndim;        /* number of dimensions */
  DLDataType dtype;    /* element type */
  int64_t* shape;      /* ndim sizes */
  int64_t* strides;    /* NULL for compact row-major data, else ndim strides in elements */
  uint64_t byte_offset; /* offset of the first element from data, in bytes */
} DLTensor;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */
