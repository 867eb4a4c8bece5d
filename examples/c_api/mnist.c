/* Runs the MNIST network exported by `transpile build -b cpp` from plain C99.
 *
 *   transpile build -b cpp --params mnist.params -o model menangerie__1.relay
 *   gcc -std=c99 examples/c_api/mnist.c -Imodel -Lmodel -lmain -Wl,-rpath,"$PWD/model" -o mnist
 *   ./mnist digit.f32          # 784 raw float32 pixels (1x1x28x28); prints the 10 scores and the class
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "main.h"

static DLTensor tensor(float* data, int ndim, int64_t* shape) {
  DLTensor t = {0};
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

int main(int argc, char** argv) {
  static float pixels[28 * 28], scores[10];
  if (argc != 2) {
    fprintf(stderr, "usage: %s IMAGE.f32  (784 raw float32 values)\n", argv[0]);
    return 2;
  }
  FILE* in = fopen(argv[1], "rb");
  if (!in || fread(pixels, sizeof(float), 28 * 28, in) != 28 * 28) {
    fprintf(stderr, "cannot read 784 float32 values from %s\n", argv[1]);
    return 2;
  }
  fclose(in);

  int64_t image_shape[] = {1, 1, 28, 28}, score_shape[] = {1, 10};
  DLTensor image = tensor(pixels, 4, image_shape), result = tensor(scores, 2, score_shape);
  const DLTensor* inputs[] = {&image};
  DLTensor* outputs[] = {&result};
  if (transpile_main_run(inputs, outputs) != 0) {
    fprintf(stderr, "error: %s\n", transpile_last_error());
    return 1;
  }
  int best = 0;
  for (int i = 0; i < 10; ++i) {
    printf("%d: %8.4f\n", i, scores[i]);
    if (scores[i] > scores[best]) best = i;
  }
  printf("class %d\n", best);
  return 0;
}
