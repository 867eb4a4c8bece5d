// The generic part of every tir library: `main(*inputs)` returning its outputs, the W0 interface
// (`default(dev)` executors and the module-level functions)
// and the thread-pool default, over the program described by `transpile_tir_program` (program.c).
// It is compiled once per toolchain and linked into each library.
#include <dlpack/dlpack.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <tvm/ffi/any.h>
#include <tvm/ffi/cast.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "tir_program.h"

namespace ffi = tvm::ffi;

namespace {

struct Aligned64 {  // TIR code assumes 64-byte aligned buffers
  void AllocData(DLTensor* t) {
    size_t bytes = (ffi::GetDataSize(*t) + 63) / 64 * 64;
    t->data = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
    if (t->data == nullptr) throw std::bad_alloc();
  }
  void FreeData(DLTensor* t) { std::free(t->data); }
};

struct Borrowed {  // embedded constants: never freed
  void* data;
  void AllocData(DLTensor* t) { t->data = data; }
  void FreeData(DLTensor*) {}
};

const TirProgram& program() { return transpile_tir_program; }

ffi::Tensor make(const TirTensorDesc& d, bool borrowed) {
  ffi::ShapeView shape(d.shape, d.ndim);
  if (borrowed) return ffi::Tensor::FromNDAlloc(Borrowed{d.data}, shape, d.dtype, DLDevice{kDLCPU, 0});
  return ffi::Tensor::FromNDAlloc(Aligned64(), shape, d.dtype, DLDevice{kDLCPU, 0});
}

const std::vector<ffi::Tensor>& constants() {
  static const std::vector<ffi::Tensor> tensors = [] {
    std::vector<ffi::Tensor> out;
    for (int i = 0; i < program().num_constants; ++i) out.push_back(make(program().constants[i], true));
    return out;
  }();
  return tensors;
}

// Recursive programs recurse on the native stack: their entry runs on a 1 GiB stack of the calling
// thread (reserved once per thread, pages touched only as it grows), so no thread is started per call.
constexpr uintptr_t kBigStackBytes = uintptr_t(1) << 30;  // also its alignment (see the stack guard)
constexpr uintptr_t kGuardBytes = 4096;          // the lowest page faults instead of corrupting memory
constexpr uintptr_t kStackReserve = 256 * 1024;  // headroom below the limit for kernels and libraries
constexpr uintptr_t kLowZone = kGuardBytes + kStackReserve;  // the big stack's limit is base + kLowZone

// ---------------------------------------------------------------- stack guard
// Every recursive TIR function starts with transpile_tir_stack_check(): past the limit of the current
// entry, it longjmps back to that entry (run_guarded), which raises a RecursionError and returns -1.
// Only TIR code (plain C frames: no destructors) lies between, on the same stack. What the abandoned
// frames held stays allocated: their workspace buffers (TVMBackendAllocWorkspace, intermediates over
// 1 KiB) remain in TVM's per-thread workspace pool until the thread exits; scalar code loses nothing.
//
// The check must cost next to nothing per call and cannot use initial-exec TLS (a process would fail
// to dlopen more than ~70 such libraries: static TLS runs out). The big stack is aligned to its size
// and its limit sits kLowZone above its base (a smaller budget lowers the top instead), so a frame
// is too deep only if its address modulo kBigStackBytes is below kLowZone: pure arithmetic. Only
// then, or while some thread runs guarded on its own stack (no big stack could be mapped), does the
// check read the thread's real limit.
struct Guard {
  char* limit = nullptr;  // frames below it are too deep; null outside a guarded entry (no check)
  size_t allowed = 0;     // bytes between the entry and the limit, for the message
  jmp_buf* target = nullptr;
};
thread_local Guard guard;
std::atomic<int> guards_off_big_stack{0};

size_t stack_budget(size_t available) {
  if (const char* env = std::getenv("TRANSPILE_STACK_MIB")) {  // a smaller budget (tests of the guard)
    long long mib = std::atoll(env);
    if (mib > 0 && (static_cast<size_t>(mib) << 20) < available) return static_cast<size_t>(mib) << 20;
  }
  return available;
}

__attribute__((noinline, cold)) void check_limit(char* frame) {
  if (frame < guard.limit) longjmp(*guard.target, 1);
}

void raise_too_deep(size_t allowed) {
  // Raised back at the entry: the error's backtrace, taken down there, would walk millions of frames.
  std::string message = "recursion deeper than the stack allows: " +
                        std::to_string((allowed + (size_t(1) << 20) - 1) >> 20) +
                        " MiB of call stack used by nested calls in @" + program().entry_name +
                        " (TRANSPILE_STACK_MIB lowers the budget)";
  TVMFFIErrorSetRaisedFromCStr("RecursionError", message.c_str());
}

// Runs the entry with frames allowed down to `limit` (below the caller, on the caller's stack).
int run_guarded(TirPackedFn entry, const void* args, int32_t num_args, void* result, char* limit, bool on_big) {
  jmp_buf target;
  const Guard saved = guard;
  char* here = static_cast<char*>(__builtin_frame_address(0));
  guard.limit = limit;
  guard.allowed = here > limit ? static_cast<size_t>(here - limit) : 0;
  guard.target = &target;
  if (!on_big) guards_off_big_stack.fetch_add(1);
  int rc;
  if (setjmp(target) == 0) {
    rc = entry(nullptr, args, num_args, result);
  } else {
    rc = -1;
    raise_too_deep(guard.allowed);
  }
  if (!on_big) guards_off_big_stack.fetch_sub(1);
  guard = saved;
  return rc;
}

// The limit on the calling thread's own stack (when no big stack can be had).
char* thread_stack_limit() {
  pthread_attr_t attr;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
  }
  char* here = static_cast<char*>(__builtin_frame_address(0));
  char* low = static_cast<char*>(base);
  if (base == nullptr || size <= 2 * kStackReserve || here < low || here > low + size)
    low = here - (size_t(8) << 20) + 64 * 1024;  // unknown bounds: assume the usual 8 MiB
  char* limit = low + kStackReserve;
  return here - stack_budget(static_cast<size_t>(here - limit));
}

// kBigStackBytes of address space aligned to kBigStackBytes (reserved, not committed), or null.
char* map_aligned_stack() {
  void* raw = mmap(nullptr, 2 * kBigStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t base = (start + kBigStackBytes - 1) & ~(kBigStackBytes - 1);
  if (base > start) munmap(raw, base - start);
  if (start + 2 * kBigStackBytes > base + kBigStackBytes)
    munmap(reinterpret_cast<void*>(base + kBigStackBytes), start + 2 * kBigStackBytes - (base + kBigStackBytes));
  mprotect(reinterpret_cast<void*>(base), kGuardBytes, PROT_NONE);
  return reinterpret_cast<char*>(base);
}

struct EntryCall {
  TirPackedFn entry;
  const void* args;
  int32_t num_args;
  void* result;
  int rc;
};

thread_local EntryCall* pending = nullptr;
thread_local char* big_stack = nullptr;
thread_local bool on_big_stack = false;

void run_pending() {
  pending->rc =
      run_guarded(pending->entry, pending->args, pending->num_args, pending->result, big_stack + kLowZone, true);
}

int call_entry(const TirProgram& p, const void* args, int32_t num_args, void* result) {
  if (!p.big_stack) return p.entry(nullptr, args, num_args, result);  // no recursion: nothing to guard
  if (on_big_stack) return run_guarded(p.entry, args, num_args, result, guard.limit, true);  // nested: same stack
  if (big_stack == nullptr) big_stack = map_aligned_stack();
  if (big_stack == nullptr) return run_guarded(p.entry, args, num_args, result, thread_stack_limit(), false);
  size_t budget = stack_budget(kBigStackBytes - kLowZone);
  EntryCall call{p.entry, args, num_args, result, 0};
  ucontext_t caller, callee;
  getcontext(&callee);
  callee.uc_stack.ss_sp = big_stack;
  callee.uc_stack.ss_size = kLowZone + budget;  // the top moves down for a smaller budget; the limit stays
  callee.uc_link = &caller;
  makecontext(&callee, run_pending, 0);
  pending = &call;
  on_big_stack = true;
  swapcontext(&caller, &callee);
  on_big_stack = false;
  pending = nullptr;
  // After an overflow the whole budget was touched: give those pages back (keep the top 1 MiB).
  if (call.rc != 0 && budget > (size_t(1) << 20))
    madvise(big_stack + kGuardBytes, kStackReserve + budget - (size_t(1) << 20), MADV_DONTNEED);
  return call.rc;
}

std::vector<ffi::Tensor> run_program(const std::vector<ffi::Tensor>& in) {
  const TirProgram& p = program();
  if (static_cast<int>(in.size()) != p.num_inputs)
    TVM_FFI_THROW(TypeError) << "@" << p.entry_name << " expects " << p.num_inputs << " tensor(s) but got " << in.size();
  std::vector<ffi::Tensor> out;
  for (int i = 0; i < p.num_outputs; ++i) out.push_back(make(p.outputs[i], false));
  std::vector<ffi::AnyView> args;
  for (const auto& t : in) args.emplace_back(t);
  for (const auto& t : constants()) args.emplace_back(t);
  for (const auto& t : out) args.emplace_back(t);
  ffi::Any ret;
  TVM_FFI_CHECK_SAFE_CALL(call_entry(p, static_cast<const void*>(args.data()), static_cast<int32_t>(args.size()),
                                     static_cast<void*>(&ret)));
  return out;
}

ffi::Any pack_outputs(std::vector<ffi::Tensor> out) {
  if (program().single_output) return ffi::Any(out[0]);
  return ffi::Any(ffi::Array<ffi::Any>(out.begin(), out.end()));
}

// ---------------------------------------------------------------- W0
// TVM's graph-executor convention: `default(dev)` makes an executor, a module of its own with
// set_input(index or name, tensor), run(), get_output(index), get_input(index or name),
// get_num_inputs(), get_num_outputs() and get_input_index(name), owning its inputs and outputs:
// several executors run at once on several threads. A lock guards one executor's state (runs do
// not hold it). The module-level functions act on one process-wide executor, for compatibility.
int64_t input_index(const ffi::Any& key) {
  const TirProgram& p = program();
  if (auto name = key.try_cast<ffi::String>()) {
    for (int i = 0; i < p.num_inputs; ++i)
      if (std::string(p.inputs[i].name) == std::string(*name)) return i;
    TVM_FFI_THROW(KeyError) << "no input named " << std::string(*name);
  }
  int64_t index = key.cast<int64_t>();
  if (index < 0 || index >= p.num_inputs) TVM_FFI_THROW(IndexError) << "input index " << index << " out of range";
  return index;
}

class Executor final : public ffi::ModuleObj {
 public:
  Executor() : inputs_(program().num_inputs) {}
  const char* kind() const final { return "transpile.w0"; }

  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    ffi::Module self = ffi::GetRef<ffi::Module>(this);  // the functions keep the executor alive
    Executor* e = this;
    if (name == "set_input")
      return ffi::Function::FromTyped([self, e](ffi::Any key, ffi::Tensor value) { e->set_input(key, std::move(value)); });
    if (name == "run") return ffi::Function::FromTyped([self, e]() { e->run(); });
    if (name == "get_output") return ffi::Function::FromTyped([self, e](int64_t index) { return e->get_output(index); });
    if (name == "get_input") return ffi::Function::FromTyped([self, e](ffi::Any key) { return e->get_input(key); });
    if (name == "get_num_inputs") return ffi::Function::FromTyped([self]() { return int64_t(program().num_inputs); });
    if (name == "get_num_outputs") return ffi::Function::FromTyped([self]() { return int64_t(program().num_outputs); });
    if (name == "get_input_index")
      return ffi::Function::FromTyped([self](ffi::String key) { return input_index(ffi::Any(key)); });
    return std::nullopt;
  }

  void set_input(const ffi::Any& key, ffi::Tensor value) {
    int64_t index = input_index(key);
    std::lock_guard<std::mutex> lock(mutex_);
    inputs_[index] = std::move(value);
  }
  ffi::Tensor get_input(const ffi::Any& key) {
    int64_t index = input_index(key);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!inputs_[index].defined())
      TVM_FFI_THROW(ValueError) << "input " << index << " (" << program().inputs[index].name << ") was not set";
    return inputs_[index];
  }
  void run() {
    std::vector<ffi::Tensor> inputs;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      inputs = inputs_;
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].defined())
        TVM_FFI_THROW(ValueError) << "input " << i << " (" << program().inputs[i].name << ") was not set";
    std::vector<ffi::Tensor> outputs = run_program(inputs);
    std::lock_guard<std::mutex> lock(mutex_);
    outputs_ = std::move(outputs);
  }
  ffi::Tensor get_output(int64_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index < 0 || index >= static_cast<int64_t>(outputs_.size()))
      TVM_FFI_THROW(IndexError) << "output index " << index << " out of range (run() first?)";
    return outputs_[index];
  }

 private:
  std::mutex mutex_;
  std::vector<ffi::Tensor> inputs_;
  std::vector<ffi::Tensor> outputs_;
};

ffi::Module make_executor(DLDevice device) {
  if (device.device_type != kDLCPU)
    TVM_FFI_THROW(ValueError) << "this library runs on the CPU only, not on device type "
                              << static_cast<int>(device.device_type);
  return ffi::Module(ffi::make_object<Executor>());
}

Executor& shared_executor() {
  static ffi::Module module = make_executor(DLDevice{kDLCPU, 0});
  return *static_cast<Executor*>(const_cast<ffi::ModuleObj*>(module.get()));
}

void set_input(ffi::Any key, ffi::Tensor value) { shared_executor().set_input(key, std::move(value)); }
void run() { shared_executor().run(); }
ffi::Tensor get_output(int64_t index) { return shared_executor().get_output(index); }
int64_t get_num_inputs() { return program().num_inputs; }
int64_t get_num_outputs() { return program().num_outputs; }
int64_t get_input_index(ffi::String name) { return input_index(ffi::Any(name)); }

__attribute__((constructor)) void configure_threads() {
  // Passive waits and no pinning unless the user chose: TVM's defaults (300000 sched_yield calls per
  // idle worker, workers pinned to cores) slow kernels several-fold next to another busy process
  // (see transpile_rt.h and README, "Threads").
  setenv("TVM_THREAD_POOL_SPIN_COUNT", "0", 0);
  setenv("TVM_BIND_THREADS", "0", 0);
  // TVM's pool defaults to half the logical CPUs on x86; use all of them unless the user chose.
  if (std::getenv("TVM_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) return;
  cpu_set_t set;
  int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  setenv("TVM_NUM_THREADS", std::to_string(n > 0 ? n : 1).c_str(), 0);
}

}  // namespace

// main(*inputs): the outputs as one tensor or an array of tensors.
extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi_main(void*, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  TVM_FFI_SAFE_CALL_BEGIN();
  const ffi::AnyView* views = reinterpret_cast<const ffi::AnyView*>(args);
  std::vector<ffi::Tensor> in;
  for (int32_t i = 0; i < num_args; ++i) in.push_back(views[i].cast<ffi::Tensor>());
  *reinterpret_cast<ffi::Any*>(result) = pack_outputs(run_program(in));
  TVM_FFI_SAFE_CALL_END();
}

// Called first by every recursive TIR function (T.call_extern, see lowering/script.py STACK_CHECK).
extern "C" __attribute__((visibility("default"))) int32_t transpile_tir_stack_check() {
#if defined(__x86_64__)
  char* frame;  // the stack pointer: no frame of its own to set up (measurably cheaper in fib-like code)
  __asm__("mov %%rsp, %0" : "=r"(frame));
#else
  char* frame = static_cast<char*>(__builtin_frame_address(0));
#endif
  if (__builtin_expect((reinterpret_cast<uintptr_t>(frame) & (kBigStackBytes - 1)) < kLowZone ||
                           guards_off_big_stack.load(std::memory_order_relaxed) != 0,
                       0))
    check_limit(frame);
  return 0;
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(default, make_executor);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(set_input, set_input);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(get_output, get_output);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(get_num_inputs, get_num_inputs);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(get_num_outputs, get_num_outputs);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(get_input_index, get_input_index);
