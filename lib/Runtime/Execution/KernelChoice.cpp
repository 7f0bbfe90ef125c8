//===- KernelChoice.cpp - Kernel flags of the commands that run programs --===//

#include "snn/Runtime/Execution/KernelChoice.h"
#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Execution/ConvolutionLayout.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"

namespace snn::runtime {

void applyKernelChoice(const KernelChoice &choice) {
  setSpikeLinearMaxDensity(choice.spikeLinearDensity);
  setSpikingBlocksEnabled(choice.fusion);
  setSpikeBitsEnabled(choice.spikeBits);
  setSpikeConvMaxDensity(choice.spikeConvDensity);
  setChannelsLastConvolutionEnabled(choice.channelsLast);
}

} // namespace snn::runtime
