#include "mimic/replay/page_faults.h"

#include <ATen/TensorIterator.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>

namespace mimic::replay {

// A TensorIterator over a byte of each page: its for_each runs on ATen's own thread pool, which
// at::parallel_for compiled here (without OpenMP) would not. A claim of one chunk or less runs
// on this thread either way, so it is written here, without building a tensor and an iterator
// (the replay's step calls this before every op that takes faults).
void FaultInOnIntraOpThreads(FreshPages& pages, int64_t n) {
  const auto [first, end] = pages.Claim(n);
  if (end <= first) return;  // nothing claimed (none asked, none left, or nothing mapped)
  const int64_t page = pages.page_bytes();
  const int64_t grain = std::max<int64_t>(1, at::internal::GRAIN_SIZE * 4 / page);  // fp32
  if (end - first <= grain) return pages.Touch(first, end);
  const at::Tensor bytes =
      at::from_blob(pages.page(first), {end - first}, {page}, at::TensorOptions(at::kByte));
  auto write = [](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
    for (int64_t j = 0; j < size1; ++j)
      for (int64_t k = 0; k < size0; ++k)
        *reinterpret_cast<volatile char*>(data[0] + j * strides[1] + k * strides[0]) = 1;
  };
  at::TensorIterator::borrowing_nullary_op(bytes).for_each(write, grain);
}

}  // namespace mimic::replay
