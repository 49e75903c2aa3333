// The only file that sees ProcessGroupNCCL (CUDA builds only): its header needs nccl.h, from
// the CUDA toolkit's prefix. Only the constructor and Options are used; every collective goes
// through c10d::ProcessGroup.
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "backends.h"

namespace mimic::replay {

Result<c10::intrusive_ptr<c10d::Backend>> CreateNcclBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout) {
  try {
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::intrusive_ptr<c10d::Backend>(
        c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Status::Internal("NCCL: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace mimic::replay
