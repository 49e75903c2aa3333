#include "comm.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "mimic/eg/collective.h"

namespace mimic::replay {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kHeartbeatPeriod{200};
constexpr std::string_view kHeartbeatKey = "mimic/heartbeat/";

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

class C10dWork final : public PendingWork {
 public:
  explicit C10dWork(c10::intrusive_ptr<c10d::Work> w) : work(std::move(w)) {}
  c10::intrusive_ptr<c10d::Work> work;
};

struct Group {
  std::vector<int64_t> ranks;  // global ranks, in group-rank order
  int group_rank = -1;         // this rank's; -1 when not a member
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
};

}  // namespace

bool WritesInPlace(proto::Collective::Type t) {
  return t == proto::Collective::ALL_REDUCE || t == proto::Collective::BROADCAST ||
         t == proto::Collective::REDUCE || t == proto::Collective::SEND || t == proto::Collective::RECV ||
         t == proto::Collective::BARRIER;
}

struct Communicator::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
  std::map<std::string, Group> groups;  // by recorded name
  std::string world;                    // the world group's name

  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  std::string progress = "starting";
  std::thread heartbeat;

  void StopHeartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    wake.notify_all();
    if (heartbeat.joinable()) heartbeat.join();
  }
};

Communicator::Communicator(const DistEnv& env, milliseconds timeout)
    : env_(env), timeout_(timeout), impl_(std::make_unique<Impl>()) {}

Communicator::~Communicator() { impl_->StopHeartbeat(); }

Result<std::unique_ptr<Communicator>> Communicator::Create(const DistEnv& env,
                                                           const proto::Workload& w,
                                                           Executor& executor,
                                                           milliseconds timeout) {
  MIMIC_RETURN_IF_ERROR(CheckLaunchMatchesTrace(env, w));
  std::unique_ptr<Communicator> c(new Communicator(env, timeout));
  Impl& impl = *c->impl_;
  const std::string where = "rank " + std::to_string(env.rank) + ": rendezvous at " + env.master_addr + ":" +
                            std::to_string(env.master_port);
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(env.master_port);
    o.isServer = env.rank == 0;
    o.numWorkers = env.world_size;
    o.timeout = timeout;
    impl.store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
  } catch (const std::exception& e) {
    return Status::Internal(where + " failed: " + FirstLine(e.what()));
  }

  // The world group and the recorded sub-groups, created in recorded order on every rank (a
  // group's creation waits for all of its members).
  std::vector<std::pair<std::string, std::vector<int64_t>>> recorded_groups;
  for (const proto::ProcessGroup& g : w.provenance().process_groups()) {
    std::vector<int64_t> ranks(g.ranks().begin(), g.ranks().end());
    if (ranks.empty() || static_cast<int64_t>(ranks.size()) == env.world_size) {
      ranks.resize(env.world_size);
      for (int r = 0; r < env.world_size; ++r) ranks[r] = r;
      if (impl.world.empty()) impl.world = g.name();
    }
    recorded_groups.emplace_back(g.name(), std::move(ranks));
  }
  if (impl.world.empty()) {
    std::vector<int64_t> all(env.world_size);
    for (int r = 0; r < env.world_size; ++r) all[r] = r;
    impl.world = "0";
    recorded_groups.insert(recorded_groups.begin(), {impl.world, all});
  }
  try {
    for (auto& [name, ranks] : recorded_groups) {
      if (impl.groups.count(name)) continue;
      Group& g = impl.groups[name];
      g.ranks = ranks;
      for (int64_t r : ranks)
        if (r < 0 || r >= env.world_size)
          return Status::InvalidInput("process group " + name + " holds rank " + std::to_string(r) +
                                      ", outside the world of " + std::to_string(env.world_size));
      const auto it = std::find(ranks.begin(), ranks.end(), env.rank);
      if (it == ranks.end()) continue;
      g.group_rank = static_cast<int>(it - ranks.begin());
      const int size = static_cast<int>(ranks.size());
      auto store = c10::make_intrusive<c10d::PrefixStore>("mimic/pg/" + name, impl.store);
      Result<c10::intrusive_ptr<c10d::Backend>> backend =
          executor.CreateCollectiveBackend(store, g.group_rank, size, timeout, env.master_addr);
      if (!backend.ok()) return backend.status().WithContext(where + ": process group " + name);
      const auto type = std::string(executor.collective_backend()) == "nccl"
                            ? c10d::ProcessGroup::BackendType::NCCL
                            : c10d::ProcessGroup::BackendType::GLOO;
      g.pg = c10::make_intrusive<c10d::ProcessGroup>(store, g.group_rank, size);
      g.pg->setBackend(executor.device().type(), type, *backend);
      g.pg->setDefaultBackend(type);
      g.pg->setGroupName(name);
    }
  } catch (const std::exception& e) {
    return Status::Internal(where + ": creating the process groups failed: " + FirstLine(e.what()));
  }

  impl.heartbeat = std::thread([&impl, key = std::string(kHeartbeatKey) + std::to_string(env.rank)] {
    int64_t beat = 0;
    std::unique_lock<std::mutex> lock(impl.mu);
    while (!impl.stop) {
      const std::string value = std::to_string(beat++) + " " + impl.progress;
      lock.unlock();
      try {
        impl.store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
      } catch (const std::exception&) {
        // The store's host is gone; a waiting collective reports it.
      }
      lock.lock();
      impl.wake.wait_for(lock, kHeartbeatPeriod, [&impl] { return impl.stop; });
    }
  });
  return c;
}

void Communicator::SetProgress(const std::string& what) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->progress = what;
}

Result<std::shared_ptr<PendingWork>> Communicator::Issue(const proto::Collective& c, const CollectiveBuffers& b) {
  const std::string name = c.process_group().empty() ? impl_->world : c.process_group();
  auto it = impl_->groups.find(name);
  if (it == impl_->groups.end())
    return Status::Unsupported("process group \"" + name + "\" is not in the trace's process-group table");
  Group& g = it->second;
  if (!g.pg)
    return Status::Unsupported("rank " + std::to_string(env_.rank) + " is not a member of process group " + name);
  const int64_t size = static_cast<int64_t>(g.ranks.size());
  at::Tensor input = b.input, output = b.output;  // the c10d *_base calls take non-const references
  std::vector<at::Tensor> in{input};
  std::vector<at::Tensor> out{output};
  // An all-gather's output (a reduce-scatter's input) holds one `small` per rank.
  auto uneven = [&](const char* name, const at::Tensor& big, const at::Tensor& small) -> std::optional<Status> {
    if (big.numel() == small.numel() * size) return std::nullopt;
    return Status::Unsupported(std::string("uneven ") + name + " (" + std::to_string(input.numel()) + " in, " +
                               std::to_string(output.numel()) + " out on " + std::to_string(size) + " ranks)");
  };
  c10::intrusive_ptr<c10d::Work> work;
  try {
    switch (c.type()) {
      case proto::Collective::ALL_REDUCE:
        work = g.pg->allreduce(in);
        break;
      case proto::Collective::BROADCAST: {
        c10d::BroadcastOptions o;
        o.rootRank = c.root();
        work = g.pg->broadcast(in, o);
        break;
      }
      case proto::Collective::REDUCE: {
        c10d::ReduceOptions o;
        o.rootRank = c.root();
        work = g.pg->reduce(in, o);
        break;
      }
      case proto::Collective::ALL_GATHER:
        if (auto bad = uneven("all_gather", output, input)) return *bad;
        work = g.pg->_allgather_base(output, input);
        break;
      case proto::Collective::REDUCE_SCATTER:
        if (auto bad = uneven("reduce_scatter", input, output)) return *bad;
        work = g.pg->_reduce_scatter_base(output, input);
        break;
      case proto::Collective::ALL_TO_ALL: {
        std::vector<int64_t> out_splits(c.out_split_sizes().begin(), c.out_split_sizes().end());
        std::vector<int64_t> in_splits(c.in_split_sizes().begin(), c.in_split_sizes().end());
        work = g.pg->alltoall_base(output, input, out_splits, in_splits);
        break;
      }
      case proto::Collective::GATHER: {
        c10d::GatherOptions o;
        o.rootRank = c.root();
        std::vector<std::vector<at::Tensor>> outs(1);
        if (g.group_rank == c.root()) outs[0] = b.output.chunk(size);
        work = g.pg->gather(outs, in, o);
        break;
      }
      case proto::Collective::SCATTER: {
        c10d::ScatterOptions o;
        o.rootRank = c.root();
        std::vector<std::vector<at::Tensor>> ins(1);
        if (g.group_rank == c.root()) ins[0] = b.input.chunk(size);
        work = g.pg->scatter(out, ins, o);
        break;
      }
      case proto::Collective::BARRIER:
        work = g.pg->barrier();
        break;
      case proto::Collective::SEND:
        work = g.pg->send(in, static_cast<int>(c.root()), 0);
        break;
      case proto::Collective::RECV:
        work = g.pg->recv(out, static_cast<int>(c.root()), 0);
        break;
      default:
        return Status::Unsupported(std::string("collective type ") + eg::CollectiveTypeName(c.type()));
    }
  } catch (const std::exception& e) {  // the backend refuses what it cannot run
    return Status::Unsupported(FirstLine(e.what()));
  }
  return std::shared_ptr<PendingWork>(std::make_shared<C10dWork>(std::move(work)));
}

Status Communicator::Wait(const std::shared_ptr<PendingWork>& work, const std::string& what) {
  auto* c10d_work = static_cast<C10dWork*>(work.get());
  std::string error;
  try {
    if (c10d_work->work->wait(timeout_)) return Status::Ok();
    error = "timed out after " + std::to_string(timeout_.count()) + " ms";
  } catch (const std::exception& e) {
    error = FirstLine(e.what());
  }
  return Status::Internal("rank " + std::to_string(env_.rank) + ": " + what + " failed: " + error +
                          DiagnosePeers());
}

Status Communicator::Barrier(const std::string& what) {
  try {
    return Wait(std::make_shared<C10dWork>(impl_->groups.at(impl_->world).pg->barrier()), what);
  } catch (const std::exception& e) {
    return Status::Internal("rank " + std::to_string(env_.rank) + ": " + what + " failed: " + FirstLine(e.what()) +
                            DiagnosePeers());
  }
}

// Reads every other rank's heartbeat twice, a few periods apart: a rank whose beat did not move
// is dead or hung. Rank 0 hosts the store, so when the store is unreachable rank 0 is gone.
std::string Communicator::DiagnosePeers() {
  auto read_all = [&](std::map<int, std::string>& out) {
    for (int r = 0; r < env_.world_size; ++r) {
      if (r == env_.rank) continue;
      const std::string key = std::string(kHeartbeatKey) + std::to_string(r);
      if (!impl_->store->check({key})) continue;
      const std::vector<uint8_t> v = impl_->store->get(key);
      out[r] = std::string(v.begin(), v.end());
    }
  };
  std::map<int, std::string> before, after;
  try {
    impl_->store->setTimeout(milliseconds(2000));
    read_all(before);
    std::this_thread::sleep_for(kHeartbeatPeriod * 5);
    read_all(after);
  } catch (const std::exception&) {
    return env_.rank == 0 ? "" : "; rank 0 (the host of the rendezvous store) is unreachable: it died or hung";
  }
  std::string stalled;
  for (int r = 0; r < env_.world_size; ++r) {
    if (r == env_.rank) continue;
    auto b = before.find(r);
    auto a = after.find(r);
    if (a != after.end() && b != before.end() && a->second != b->second) continue;
    const std::string last = a == after.end() ? "never started" : "last at " + a->second.substr(a->second.find(' ') + 1);
    stalled += (stalled.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " (" + last + ")";
  }
  return stalled.empty() ? "; every other rank is still responding" : "; stopped responding: " + stalled;
}

void Communicator::Abandon() {
  impl_->StopHeartbeat();
  // Their destructors would join threads blocked on a dead peer.
  for (auto& [name, g] : impl_->groups) g.pg.release();
  impl_->store.release();
}

}  // namespace mimic::replay
