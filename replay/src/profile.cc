#include "profile.h"

#include <ATen/ops/add.h>
#include <ATen/ops/ones.h>
#include <ATen/record_function.h>
#include <fcntl.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/profiler/standalone/execution_trace_observer.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

#include "mimic/base/file.h"

namespace mimic::replay {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

Result<std::unique_ptr<ProfileSession>> ProfileSession::Start(c10::Device device) {
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/true);
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

Status ProfileSession::Stop(const std::string& path) {
  step_.reset();
  running_ = false;
  std::unique_ptr<profiler::ProfilerResult> result;
  try {
    result = profiler::disableProfiler();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Status::Internal("--profile: " + what.substr(0, what.find('\n')));
  }
  // Written beside the destination and renamed, as every output of Mimic is.
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  try {
    result->save(tmp);
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

namespace {

// Sends what LibTorch and Kineto print to stderr (observer and device-probe notices) to
// /dev/null while it lives: the measurement is setup, not news for the user.
class SilencedStderr {
 public:
  SilencedStderr() : saved_(dup(STDERR_FILENO)) {
    std::fflush(stderr);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDERR_FILENO);
      close(null);
    }
  }
  ~SilencedStderr() {
    std::fflush(stderr);
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);
      close(saved_);
    }
  }
  SilencedStderr(const SilencedStderr&) = delete;
  SilencedStderr& operator=(const SilencedStderr&) = delete;

 private:
  int saved_;
};

}  // namespace

Result<double> MeasureCaptureCostUs(c10::Device device) {
  SilencedStderr quiet;
  constexpr int kCalls = 2000;
  const at::Tensor a = at::ones({1}, at::TensorOptions().device(device));
  for (int i = 0; i < 100; ++i) (void)at::add(a, a);  // warm the dispatcher and allocator
  const std::string et = "/tmp/mimic-capture-cost." + std::to_string(getpid()) + ".json";
  const bool observer = torch::profiler::impl::addExecutionTraceObserver(et);
  if (observer) torch::profiler::impl::enableExecutionTraceObserver();
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<ProfileSession> session, ProfileSession::Start(device));
  for (int i = 0; i < kCalls; ++i) (void)at::add(a, a);
  std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  session->running_ = false;
  if (observer) {
    torch::profiler::impl::disableExecutionTraceObserver();
    torch::profiler::impl::removeExecutionTraceObserver();
    std::remove(et.c_str());
  }
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& e : result->events())
    if (e.name() == "aten::add") spans.emplace_back(e.startNs(), e.endNs());
  std::sort(spans.begin(), spans.end());
  std::vector<double> gaps;
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first >= spans[i - 1].second)
      gaps.push_back(static_cast<double>(spans[i].first - spans[i - 1].second) / 1000.0);
  if (gaps.size() < kCalls / 2)
    return Status::Internal("the profiler recorded " + std::to_string(spans.size()) + " of " +
                            std::to_string(kCalls) + " calls");
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2] / 2;
}

}  // namespace mimic::replay
