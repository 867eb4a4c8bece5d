/* `python -m bench boundary`: one exported transpile library called from THREADS pthreads, CALLS calls each.
 * Usage: boundary_driver INPUT.bin OUTPUT.bin THREADS CALLS; BATCH and WIDTH come from the compile line (-D).
 * Prints the wall-clock seconds from the first thread's start to the last one's end, and the failed calls;
 * writes every thread's last output so the caller can check it. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c99 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "main.h"

static int64_t shape[2] = {BATCH, WIDTH};
static float x[BATCH * WIDTH];
static int calls;

typedef struct { float out[BATCH * WIDTH]; int failures; } Job;

static DLTensor tensor(float* data) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static void* work(void* arg) {
  Job* job = (Job*)arg;
  DLTensor in = tensor(x), out = tensor(job->out);
  const DLTensor* inputs[1] = {&in};
  DLTensor* outputs[1] = {&out};
  for (int c = 0; c < calls; ++c)
    if (transpile_main_run(inputs, outputs) != 0) job->failures++;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL || fread(x, sizeof(float), BATCH * WIDTH, f) != BATCH * WIDTH) return 2;
  fclose(f);
  int threads = atoi(argv[3]);
  calls = atoi(argv[4]);
  Job* jobs = calloc(threads, sizeof(Job));
  pthread_t* ids = calloc(threads, sizeof(pthread_t));
  DLTensor in = tensor(x), warm = tensor(jobs[0].out);  /* one call first, as the Python side makes */
  const DLTensor* inputs[1] = {&in};
  DLTensor* outputs[1] = {&warm};
  if (transpile_main_run(inputs, outputs) != 0) return 3;
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int k = 0; k < threads; ++k) pthread_create(&ids[k], NULL, work, &jobs[k]);
  for (int k = 0; k < threads; ++k) pthread_join(ids[k], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  FILE* out = fopen(argv[2], "wb");
  int failures = 0;
  for (int k = 0; k < threads; ++k) {
    fwrite(jobs[k].out, sizeof(float), BATCH * WIDTH, out);
    failures += jobs[k].failures;
  }
  fclose(out);
  printf("%.9f %d\n", (end.tv_sec - start.tv_sec) + 1e-9 * (end.tv_nsec - start.tv_nsec), failures);
  return 0;
}
