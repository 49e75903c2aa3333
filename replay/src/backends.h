// Collective backends of the executors, each in a file of its own because each needs its
// library's headers: Gloo (gloo_backend.cc; Debian's libgloo-dev, as LibTorch's wheel carries
// Gloo's code but not its headers) and NCCL (nccl_backend.cc, CUDA builds only).
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "mimic/base/status.h"

namespace mimic::replay {

// A ProcessGroupGloo on `store`, bound to the loopback when `rendezvous_host` is local (or to
// GLOO_SOCKET_IFNAME's interface, as torch.distributed honours it). Errors: Internal.
Result<c10::intrusive_ptr<c10d::Backend>> CreateGlooBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout, const std::string& rendezvous_host);

#if defined(MIMIC_WITH_CUDA)
// A ProcessGroupNCCL on `store` for the current CUDA device. Errors: Internal.
Result<c10::intrusive_ptr<c10d::Backend>> CreateNcclBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout);
#endif

}  // namespace mimic::replay
