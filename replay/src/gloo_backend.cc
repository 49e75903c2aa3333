// The only file that sees ProcessGroupGloo: its header needs Gloo's headers. Only the
// constructor and Options are used; every collective goes through c10d::ProcessGroup.
#include <cstdlib>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "backends.h"

namespace mimic::replay {
namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// The network device Gloo binds to: GLOO_SOCKET_IFNAME as torch.distributed honours it, the
// loopback when the whole job is on this host, else the address the host name resolves to.
std::shared_ptr<::gloo::transport::Device> GlooDevice(const std::string& rendezvous_host) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (IsLoopback(rendezvous_host))
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

Result<c10::intrusive_ptr<c10d::Backend>> CreateGlooBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout, const std::string& rendezvous_host) {
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(GlooDevice(rendezvous_host));
    return c10::intrusive_ptr<c10d::Backend>(
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Status::Internal("Gloo: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace mimic::replay
