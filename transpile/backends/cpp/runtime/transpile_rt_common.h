// transpile_rt_common.h: the part of the generated code's runtime that both flavours share.
//
// Included at the end of a flavour header (transpile_rt.h over tvm::ffi, transpile_rt_standalone.h
// with no TVM at all), which first defines in namespace trt:
//   Tensor                       a ref-counted tensor: GetDLTensorPtr(), IsContiguous(), IsAligned(n), defined()
//   empty(shape, dtype)          a new 64-byte aligned tensor; shape a braced list or shape_view(ptr, ndim)
//   shape_view(ptr, ndim)        a shape taken by empty/wrap_static
//   wrap_static(ptr, shape, dt)  a tensor borrowing memory it never frees
//   raise(kind, message)         throws the flavour's error ([[noreturn]])
//   TRT_THROW(Kind) << ...       the same, with a streamed message
//   TRT_EXPORT                   marks the exported C API
//   call(fn, args, n)            runs a kernel, turning its error code into an exception
//   data_size(dl), is_contiguous(dl), dtype_text(dt)
// and the TVMFFIAny / DLTensor C types. Everything here is written against that list only.
#pragma once

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace trt {

using Unit = std::tuple<>;
using KernelFn = int (*)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);

// ---------------------------------------------------------------- errors

// Raised by `Fail` (e.g. an incomplete match); the Python wrapper turns it into EvaluationError.
[[noreturn]] inline void fail(const char* message) { raise("RuntimeError", message); }

// ---------------------------------------------------------------- stack guard
// Deep recursion must give a clean error, never a crash: every generated function compares its
// frame address with a limit computed once per thread from the thread's real stack bounds.

constexpr size_t kStackReserve = 256 * 1024;  // headroom kept for kernels, allocators and unwinding
// At most this much stack is used by generated code per entry: deep enough for millions of small
// frames, small enough that unwinding after the error stays quick.
constexpr size_t kStackBudget = size_t(256) << 20;

// Plain function-local thread_locals, by default in the initial-exec model: one load on every
// call. A flavour may choose another model (a library dlopen'ed into a process whose static TLS
// space is used up fails to load with initial-exec TLS).
#ifndef TRT_TLS_MODEL
#define TRT_TLS_MODEL "initial-exec"
#endif

inline char*& stack_limit() {
  static thread_local char* limit __attribute__((tls_model(TRT_TLS_MODEL))) = nullptr;
  return limit;
}

inline size_t& stack_bytes_allowed() {
  static thread_local size_t size __attribute__((tls_model(TRT_TLS_MODEL))) = 0;
  return size;
}

inline void init_stack_limit() {
  if (stack_limit() != nullptr) return;
  pthread_attr_t attr;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
  }
  char* here = static_cast<char*>(__builtin_frame_address(0));
  char* low = static_cast<char*>(base);
  if (base == nullptr || size <= 2 * kStackReserve || here < low || here > low + size) {
    low = here - (size_t(8) << 20) + 64 * 1024;  // unknown bounds: assume the usual 8 MiB
  }
  size_t budget = kStackBudget;
  if (const char* env = std::getenv("TRANSPILE_STACK_MIB")) {  // a smaller budget (tests of the guard)
    long long mib = std::atoll(env);
    if (mib > 0) budget = static_cast<size_t>(mib) << 20;
  }
  char* limit = low + kStackReserve;
  if (here - limit > static_cast<ptrdiff_t>(budget)) limit = here - budget;
  stack_bytes_allowed() = static_cast<size_t>(here - limit);
  stack_limit() = limit;
}

[[noreturn]] inline void too_deep() {
  // No backtrace: capturing one over millions of frames would take minutes.
  raise("RecursionError", "recursion deeper than the stack allows: " + std::to_string(stack_bytes_allowed() >> 20) +
                              " MiB of call stack used by nested calls");
}

#define TRT_STACK_CHECK()                                                                         \
  do {                                                                                           \
    if (__builtin_expect(static_cast<char*>(__builtin_frame_address(0)) < ::trt::stack_limit(), 0)) \
      ::trt::too_deep();                                                                         \
  } while (0)

// ---------------------------------------------------------------- big stack (issue 4, helper: memory/perf)
// Runs fn() on a big stack without leaving the calling thread: a per-thread mapping (reserved
// address space; pages are touched only as deep recursion grows into them) entered with
// swapcontext. Staying on the caller's thread keeps TVM's per-thread thread pool and workspace
// pools, and the allocator's caches, warm: a fresh thread per call cost more than most calls.
// A call made while already on the big stack (a callback re-entering generated code) runs
// where it is. Errors are caught on the big stack and rethrown on the caller's.

// Address space only (MAP_NORESERVE): pages are touched as recursion grows into them and given
// back after each call. Generated functions stop at kStackBudget; the rest is for code without
// depth checks: the boundary's ADT decoders and encoders, which loop along a list's spine (and a
// tree's last branch) but nest once per level of the other recursive fields (a tree's left
// branches, a few hundred bytes each). Releasing values never nests (release_later).
constexpr size_t kBigStackBytes = size_t(4) << 30;

struct BigStack {
  char* base = nullptr;  // lowest address; its first page is a guard page
  size_t size = 0;
  bool inside = false;
  ~BigStack() {
    if (base != nullptr) munmap(base, size);
  }
};

inline BigStack& big_stack() {
  static thread_local BigStack stack;
  return stack;
}

struct StackJob {
  void (*run)(void*);
  void* arg;
  std::exception_ptr error;
  ucontext_t caller;
};

inline StackJob*& current_stack_job() {
  static thread_local StackJob* job = nullptr;
  return job;
}

inline void stack_job_entry() {
  StackJob* job = current_stack_job();
  try {
    job->run(job->arg);
  } catch (...) {
    job->error = std::current_exception();
  }
}  // returning resumes job->caller (uc_link)

inline size_t stack_budget() {
  size_t budget = kStackBudget;
  if (const char* env = std::getenv("TRANSPILE_STACK_MIB")) {  // a smaller budget (tests of the guard)
    long long mib = std::atoll(env);
    if (mib > 0) budget = static_cast<size_t>(mib) << 20;
  }
  return budget;
}

template <class F>
void run_on_big_stack(F&& fn, size_t bytes = kBigStackBytes) {
  BigStack& stack = big_stack();
  if (stack.inside) {
    fn();
    return;
  }
  if (stack.base == nullptr) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                   -1, 0);
    if (p == MAP_FAILED) {  // no big stack available: run here, still guarded
      init_stack_limit();
      fn();
      return;
    }
    mprotect(p, 4096, PROT_NONE);
    stack.base = static_cast<char*>(p);
    stack.size = bytes;
  }
  using Fn = typename std::remove_reference<F>::type;
  StackJob job{[](void* f) { (*static_cast<Fn*>(f))(); }, static_cast<void*>(&fn), nullptr, {}};
  ucontext_t callee;
  getcontext(&callee);
  callee.uc_stack.ss_sp = stack.base;
  callee.uc_stack.ss_size = stack.size;
  callee.uc_link = &job.caller;
  makecontext(&callee, stack_job_entry, 0);
  char* top = stack.base + stack.size;
  char* limit = stack.base + 4096 + kStackReserve;
  size_t budget = stack_budget();
  if (top - limit > static_cast<ptrdiff_t>(budget)) limit = top - budget;
  char* saved_limit = stack_limit();
  size_t saved_allowed = stack_bytes_allowed();
  StackJob* saved_job = current_stack_job();
  stack_limit() = limit;
  stack_bytes_allowed() = static_cast<size_t>(top - limit);
  current_stack_job() = &job;
  stack.inside = true;
  swapcontext(&job.caller, &callee);
  stack.inside = false;
  current_stack_job() = saved_job;
  stack_limit() = saved_limit;
  stack_bytes_allowed() = saved_allowed;
  // Give back what deep recursion touched (all but the top 1 MiB, which most calls reuse).
  if (stack.size > (size_t(2) << 20)) madvise(stack.base + 4096, stack.size - 4096 - (size_t(1) << 20), MADV_DONTNEED);
  if (job.error) std::rethrow_exception(job.error);
}

// ---------------------------------------------------------------- tensors

constexpr DLDevice kCPU{kDLCPU, 0};

inline DLDataType dtype(uint8_t code, uint8_t bits) { return DLDataType{code, bits, 1}; }

inline std::string shape_text(const DLTensor& t) {
  std::string s = "(";
  for (int i = 0; i < t.ndim; ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + (t.ndim == 1 ? ",)" : ")");
}

// Row-major strides exactly (or none). Kernels with `?` dimensions check every stride, even of
// dimensions of size 0 or 1, where exporters such as numpy may put any value.
inline bool compact_strides(const DLTensor& d) {
  if (d.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = d.ndim - 1; i >= 0; --i) {
    if (d.strides[i] != expected) return false;
    expected *= d.shape[i];
  }
  return true;
}

// A contiguous, 64-byte aligned tensor with the expected dtype and shape (copied when unaligned).
inline Tensor checked_tensor(const Tensor& t, std::initializer_list<int64_t> shape, DLDataType dt, const char* what) {
  const DLTensor& d = *t.GetDLTensorPtr();
  bool ok = d.dtype.code == dt.code && d.dtype.bits == dt.bits && d.dtype.lanes == dt.lanes &&
            d.ndim == static_cast<int>(shape.size()) && d.device.device_type == kDLCPU;
  if (ok) {
    int i = 0;
    for (int64_t s : shape) ok = ok && (s < 0 || d.shape[i] == s), ++i;  // s < 0: a `?` dimension
  }
  if (!ok) {
    std::string expected = "(";
    int i = 0;
    for (int64_t s : shape) expected += (i++ ? ", " : "") + (s < 0 ? std::string("?") : std::to_string(s));
    expected += shape.size() == 1 ? ",)" : ")";
    TRT_THROW(ValueError) << what << ": expected Tensor[" << expected << ", " << dtype_text(dt) << "] but got Tensor["
                          << shape_text(d) << ", " << dtype_text(d.dtype) << "]";
  }
  if (t.IsContiguous() && compact_strides(d) && t.IsAligned(64) && d.byte_offset == 0) return t;
  Tensor copy = empty(shape_view(d.shape, d.ndim), d.dtype);
  DLTensor* c = const_cast<DLTensor*>(copy.GetDLTensorPtr());
  if (t.IsContiguous()) {
    std::memcpy(c->data, static_cast<const char*>(d.data) + d.byte_offset, data_size(d));
  } else {  // strided: copy element by element
    size_t n = 1, item = (d.dtype.bits * d.dtype.lanes + 7) / 8;
    for (int i = 0; i < d.ndim; ++i) n *= d.shape[i];
    std::vector<int64_t> index(d.ndim, 0);
    for (size_t k = 0; k < n; ++k) {
      int64_t offset = 0;
      for (int i = 0; i < d.ndim; ++i) offset += index[i] * d.strides[i];
      std::memcpy(static_cast<char*>(c->data) + k * item,
                  static_cast<const char*>(d.data) + d.byte_offset + offset * item, item);
      for (int i = d.ndim - 1; i >= 0; --i) {
        if (++index[i] < d.shape[i]) break;
        index[i] = 0;
      }
    }
  }
  return copy;
}

template <class T>
T scalar_of(const Tensor& t) {  // a checked 0-d tensor's value
  T value;
  const DLTensor& d = *t.GetDLTensorPtr();
  std::memcpy(&value, static_cast<const char*>(d.data) + d.byte_offset, sizeof(T));
  return value;
}

template <class T>
Tensor scalar_tensor(T value, DLDataType dt) {
  Tensor t = empty({}, dt);
  std::memcpy(t.GetDLTensorPtr()->data, &value, sizeof(T));
  return t;
}

// ---------------------------------------------------------------- kernel calls

inline TVMFFIAny arg(const DLTensor* t) {
  TVMFFIAny a;
  a.type_index = kTVMFFIDLTensorPtr;
  a.zero_padding = 0;
  a.v_ptr = const_cast<DLTensor*>(t);
  return a;
}

inline TVMFFIAny arg(const Tensor& t) { return arg(t.GetDLTensorPtr()); }

// A 0-d tensor view of a scalar, so a plain C++ scalar can be a kernel argument or result.
template <class T>
struct Scalar {
  alignas(64) T value;
  DLTensor dl;
  Scalar(T v, DLDataType dt) : value(v) { init(dt); }
  explicit Scalar(DLDataType dt) : value() { init(dt); }
  Scalar(const Scalar&) = delete;
  void init(DLDataType dt) { dl = DLTensor{&value, kCPU, 0, dt, nullptr, nullptr, 0}; }
  TVMFFIAny arg() const { return trt::arg(&dl); }
};

// ---------------------------------------------------------------- objects

template <class T>
using Adt = std::shared_ptr<const T>;  // ADT values: a struct per constructor deriving from the ADT's struct

// ---------------------------------------------------------------- releasing long chains
// Dropping the last reference to a list's head releases its tail from the head's destructor, the
// tail's tail from the tail's, and so on: one nested destructor per item, which overflows any stack
// for a long enough list. The generated constructor structs and closures, and reference cells,
// release their reference-counted fields through release_later instead: a value the dying object
// holds alone is moved to a worklist that the outermost release on this thread empties in a loop,
// so the nesting stays a few frames deep whatever the length (trees included: every field queues).

using PendingReleases = std::vector<std::shared_ptr<const void>>;

// The worklist of the release running on this thread (it lives in that release's frame), or null.
// A trivially destructible pointer: releases during thread or process exit still find it valid.
inline PendingReleases*& pending_releases() {
  static thread_local PendingReleases* pending __attribute__((tls_model(TRT_TLS_MODEL))) = nullptr;
  return pending;
}

template <class T>
void release_later(std::shared_ptr<T>& field) noexcept {
  // use_count() == 1: the dying object holds the only reference, so no other thread can take
  // another (values are never weakly referenced). A shared field just loses a count, in place.
  if (!field || field.use_count() != 1) return;
  if (PendingReleases* pending = pending_releases()) {
    try {
      pending->emplace_back(std::move(field));
    } catch (...) {  // out of memory: released in place, as without the worklist
    }
    return;
  }
  PendingReleases local;
  pending_releases() = &local;
  try {
    local.emplace_back(std::move(field));
  } catch (...) {
  }
  while (!local.empty()) {
    std::shared_ptr<const void> item = std::move(local.back());
    local.pop_back();
    item.reset();  // its destructor queues the fields it held alone
  }
  pending_releases() = nullptr;
}

template <class T>
void release_later(T&) noexcept {}  // tensors and scalars end no chain

template <class... T>
void release_later(std::tuple<T...>& fields) noexcept {
  std::apply([](auto&... f) { (release_later(f), ...); }, fields);
}

template <class T>
struct Cell {  // a mutable reference cell
  T value;
  explicit Cell(T value) : value(std::move(value)) {}
  Cell(const Cell&) = delete;
  Cell& operator=(const Cell&) = delete;
  ~Cell() { release_later(value); }
};
template <class T>
using Ref = std::shared_ptr<Cell<T>>;

template <class T>
Ref<T> ref_new(T value) {
  return std::make_shared<Cell<T>>(std::move(value));
}

template <class R, class... A>
struct FnObj {  // a closure: the generated subclass holds the captured values
  virtual ~FnObj() = default;
  virtual R call(A... args) const = 0;
};
template <class R, class... A>
using Fn = std::shared_ptr<const FnObj<R, A...>>;

// ---------------------------------------------------------------- planned buffers (issue 4, helper: memory/perf)
// Kernel results that never leave a function (transpile.passes.memory_plan) live in the
// function invocation's Arena instead of one allocation each: Views at planned offsets.
// An Arena is a slice of a per-thread LIFO Workspace, so recursion and re-entrant calls nest,
// exceptions unwind it, and once the workspace has grown to the deepest call's needs calls
// allocate nothing.

struct View {  // a tensor in an Arena: static shape, owns nothing
  DLTensor dl;
  View(void* data, const int64_t* shape, int32_t ndim, DLDataType dt)
      : dl{data, kCPU, ndim, dt, const_cast<int64_t*>(shape), nullptr, 0} {}
};

inline TVMFFIAny arg(const View& v) { return arg(&v.dl); }

struct In {  // a kernel wrapper's tensor argument: a Tensor or a View
  const DLTensor* dl;
  In(const Tensor& t) : dl(t.GetDLTensorPtr()) {}  // NOLINT: implicit by design
  In(const View& v) : dl(&v.dl) {}                 // NOLINT
  const DLTensor* GetDLTensorPtr() const { return dl; }
};

inline TVMFFIAny arg(const In& x) { return arg(x.dl); }

class Workspace {
 public:
  struct Mark {
    size_t chunk, used;
  };
  // `bytes` (a multiple of 64) from the top of the stack; `mark` restores the stack in pop().
  char* push(size_t bytes, Mark& mark) {
    if (chunks_.empty()) chunks_.push_back(new_chunk(bytes));
    Chunk* c = &chunks_[current_];
    mark = Mark{current_, c->used};
    if (c->used + bytes > c->size) {  // the next chunk (chunks above the current one are free)
      ++current_;
      if (current_ == chunks_.size()) {
        chunks_.push_back(new_chunk(bytes));
      } else if (chunks_[current_].size < bytes) {
        std::free(chunks_[current_].data);
        chunks_[current_] = new_chunk(bytes);
      }
      c = &chunks_[current_];
      c->used = 0;
    }
    char* p = c->data + c->used;
    c->used += bytes;
    return p;
  }
  void pop(const Mark& mark) {
    current_ = mark.chunk;
    chunks_[current_].used = mark.used;
  }
  ~Workspace() {
    for (Chunk& c : chunks_) std::free(c.data);
  }

 private:
  struct Chunk {
    char* data;
    size_t size, used;
  };
  Chunk new_chunk(size_t bytes) {
    size_t size = size_t(256) << 10;
    if (!chunks_.empty()) size = std::max(size, 2 * chunks_.back().size);
    size = std::max(size, (bytes + 63) / 64 * 64);
    void* data = std::aligned_alloc(64, size);
    if (data == nullptr) throw std::bad_alloc();
    return Chunk{static_cast<char*>(data), size, 0};
  }
  std::vector<Chunk> chunks_;
  size_t current_ = 0;
};

inline Workspace& workspace() {
  static thread_local Workspace w;
  return w;
}

class Arena {
 public:
  explicit Arena(size_t bytes) : base_(workspace().push(bytes, mark_)) {}
  ~Arena() { workspace().pop(mark_); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  void* at(size_t offset) const { return base_ + offset; }

 private:
  Workspace::Mark mark_;
  char* base_;
};

}  // namespace trt
