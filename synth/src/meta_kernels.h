// Meta kernels for the ops whose output shapes LibTorch's C++ cannot compute on the meta device
// (convolution, batch and layer norm, cuDNN's attention, and their backwards: PyTorch registers
// theirs in Python), so that batch scaling propagates them there instead of running them on
// zero-filled CPU tensors. Registered once, and only for an op that has no Meta kernel.
#pragma once

namespace mimic::synth {

void RegisterMissingMetaKernels();

}  // namespace mimic::synth
