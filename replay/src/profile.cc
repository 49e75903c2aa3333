#include "profile.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <unistd.h>

#include <cstdio>
#include <set>

namespace mimic::replay {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

Result<std::unique_ptr<ProfileSession>> ProfileSession::Start(c10::Device device,
                                                              Settings settings) {
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda() && settings.device_activity) activities.insert(ActivityType::CUDA);
  const ProfilerConfig config(ProfilerState::KINETO, settings.shapes, settings.memory);
  std::unique_ptr<ProfileSession> session(new ProfileSession());
  try {
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Status::Internal("--profile: LibTorch's profiler did not start: " +
                            what.substr(0, what.find('\n')));
  }
  session->running_ = true;
  return session;
}

ProfileSession::~ProfileSession() {
  step_.reset();
  if (running_) (void)profiler::disableProfiler();
}

void ProfileSession::BeginIteration(int n) {
  step_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (step_->isActive()) step_->before("ProfilerStep#" + std::to_string(n));
}

void ProfileSession::EndIteration() { step_.reset(); }

Result<std::unique_ptr<profiler::ProfilerResult>> ProfileSession::Finish() {
  step_.reset();
  running_ = false;  // stopped here, or never: the destructor must not try again
  try {
    return profiler::disableProfiler();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Status::Internal(what.substr(0, what.find('\n')));
  }
}

Status ProfileSession::Stop(const std::string& path) {
  Result<std::unique_ptr<profiler::ProfilerResult>> result = Finish();
  if (!result.ok()) return Status::Internal("--profile: " + result.status().message());
  // Written beside the destination and renamed, as every output of Mimic is.
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  try {
    (*result)->save(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    return Status::Io("--profile " + path + ": " + std::string(e.what()).substr(0, 200));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::Io("--profile " + path + ": cannot write it");
  }
  return Status::Ok();
}

}  // namespace mimic::replay
