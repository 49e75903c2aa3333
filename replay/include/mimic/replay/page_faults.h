// Page faults taken on purpose, as an op takes them when it writes a fresh output: the replay
// takes the original's count a step this way, and `mimic calibrate` prices a fault by it.
#pragma once

#include <cstdint>

#include "mimic/base/host.h"

namespace mimic::replay {

// Writes the next `n` untouched pages of `pages` (one fault each) on ATen's intra-op threads, a
// chunk of at::internal::GRAIN_SIZE fp32 elements (128 KiB) to a thread, as an elementwise
// kernel splits its output. A block that faults is one glibc mapped fresh, at least its least
// mmap threshold of 128 KiB, so the op's threads share its first writes.
void FaultInOnIntraOpThreads(FreshPages& pages, int64_t n);

}  // namespace mimic::replay
