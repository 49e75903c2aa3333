#include "mimic/fleet/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <set>

namespace mimic::fleet {
namespace {

// The nodes of one pool, bucketed by their free GPUs so that best-fit placement costs
// O(gpus_per_node) whatever the node count.
class NodePool {
 public:
  NodePool(int64_t nodes, int64_t gpus_per_node)
      : g_(gpus_per_node), free_(nodes, gpus_per_node), pos_(nodes), buckets_(gpus_per_node + 1) {
    buckets_[g_].resize(nodes);
    for (int64_t i = 0; i < nodes; ++i) buckets_[g_][i] = i, pos_[i] = i;
    free_gpus_ = nodes * gpus_per_node;
  }

  bool CanPlace(int64_t n) const {
    if (n > free_gpus_) return false;
    if (n <= g_) return SmallestFit(n, g_) >= 0;
    const int64_t k = n / g_, r = n % g_;
    const int64_t full = static_cast<int64_t>(buckets_[g_].size());
    if (full < k) return false;
    if (r == 0) return true;
    return SmallestFit(r, g_ - 1) >= 0 || full >= k + 1;
  }

  // REQUIRES: CanPlace(n). Appends (node, gpus) to `alloc`.
  void Place(int64_t n, std::vector<std::pair<int64_t, int64_t>>& alloc) {
    if (n <= g_) {
      Take(buckets_[SmallestFit(n, g_)].back(), n, alloc);
      return;
    }
    const int64_t k = n / g_, r = n % g_;
    for (int64_t i = 0; i < k; ++i) Take(buckets_[g_].back(), g_, alloc);
    if (r == 0) return;
    const int64_t f = SmallestFit(r, g_ - 1);
    Take(buckets_[f >= 0 ? f : g_].back(), r, alloc);
  }

  void Release(const std::vector<std::pair<int64_t, int64_t>>& alloc) {
    for (const auto& [node, n] : alloc) Move(node, free_[node] + n);
  }

  int64_t free_gpus() const { return free_gpus_; }

 private:
  // The smallest free level in [lo, hi] that has a node, or -1.
  int64_t SmallestFit(int64_t lo, int64_t hi) const {
    for (int64_t f = lo; f <= hi; ++f)
      if (!buckets_[f].empty()) return f;
    return -1;
  }
  void Take(int64_t node, int64_t n, std::vector<std::pair<int64_t, int64_t>>& alloc) {
    alloc.emplace_back(node, n);
    Move(node, free_[node] - n);
  }
  void Move(int64_t node, int64_t to) {
    std::vector<int64_t>& from = buckets_[free_[node]];
    const int64_t last = from.back();
    from[pos_[node]] = last;
    pos_[last] = pos_[node];
    from.pop_back();
    free_gpus_ += to - free_[node];
    free_[node] = to;
    pos_[node] = static_cast<int64_t>(buckets_[to].size());
    buckets_[to].push_back(node);
  }

  int64_t g_;
  std::vector<int64_t> free_;  // free GPUs per node
  std::vector<int64_t> pos_;   // index of each node in its bucket
  std::vector<std::vector<int64_t>> buckets_;
  int64_t free_gpus_ = 0;
};

}  // namespace

const char* PolicyName(Policy policy) { return policy == Policy::kFifo ? "fifo" : "sjf"; }

Result<SimResult> Simulate(const std::vector<Pool>& pools, const std::vector<SimJob>& jobs,
                           const SimOptions& options) {
  if (pools.empty() || pools.size() > 32) return Status::InvalidInput("simulation: 1 to 32 pools are needed");
  SimResult result;
  std::vector<NodePool> nodes;
  std::vector<int64_t> pool_capacity;
  for (const Pool& p : pools) {
    if (p.nodes <= 0 || p.gpus_per_node <= 0) return Status::InvalidInput("simulation: a pool without nodes or GPUs");
    nodes.emplace_back(p.nodes, p.gpus_per_node);
    pool_capacity.push_back(p.nodes * p.gpus_per_node);
    result.total_gpus += p.nodes * p.gpus_per_node;
  }
  const int64_t n = static_cast<int64_t>(jobs.size());
  std::vector<char> placeable(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    const SimJob& j = jobs[i];
    if (j.gpus <= 0 || !std::isfinite(j.duration_s) || j.duration_s < 0 || !std::isfinite(j.submit_s) ||
        (i > 0 && j.submit_s < jobs[i - 1].submit_s))
      return Status::InvalidInput("simulation: job #" + std::to_string(i) +
                                  ": needs gpus > 0, a finite duration >= 0 and submit times in order");
    for (size_t p = 0; p < pools.size(); ++p)
      if ((j.pool_mask >> p & 1u) && j.gpus <= pool_capacity[p]) placeable[i] = 1;
    if (j.tenant >= 0 && static_cast<size_t>(j.tenant) < options.tenant_quota.size() &&
        options.tenant_quota[j.tenant] > 0 && j.gpus > options.tenant_quota[j.tenant])
      placeable[i] = 0;
    result.unplaceable += !placeable[i];
  }
  result.jobs = n - result.unplaceable;
  result.start_s.assign(n, std::numeric_limits<double>::quiet_NaN());

  // One queue per tenant with a quota (index tenant + 1) and one for everyone else (0), each in
  // policy order: FIFO by arrival index, SJF by duration then arrival. The scheduler walks them
  // merged, in that same order.
  const size_t num_queues = options.tenant_quota.size() + 1;
  using Queue = std::set<std::pair<double, int64_t>>;
  std::vector<Queue> queues(num_queues);
  std::vector<int64_t> tenant_allocated(num_queues, 0);
  auto queue_of = [&](int64_t i) -> size_t {
    const int t = jobs[i].tenant;
    return t >= 0 && static_cast<size_t>(t) + 1 < num_queues && options.tenant_quota[t] > 0 ? t + 1 : 0;
  };
  auto key = [&](int64_t i) { return options.policy == Policy::kFifo ? static_cast<double>(i) : jobs[i].duration_s; };
  using End = std::pair<double, int64_t>;
  std::priority_queue<End, std::vector<End>, std::greater<End>> running;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> alloc(n);
  std::vector<int> pool_of(n, -1);
  std::vector<std::pair<double, int64_t>> changes;  // (time, allocated GPUs) after each event time
  int64_t allocated = 0, started = 0;
  const int64_t progress_every = std::max<int64_t>(1, result.jobs / 100);

  auto try_start = [&](int64_t i, double now) {
    const SimJob& j = jobs[i];
    for (size_t p = 0; p < nodes.size(); ++p) {
      if (!(j.pool_mask >> p & 1u) || !nodes[p].CanPlace(j.gpus)) continue;
      nodes[p].Place(j.gpus, alloc[i]);
      pool_of[i] = static_cast<int>(p);
      result.start_s[i] = now;
      running.emplace(now + j.duration_s, i);
      allocated += j.gpus;
      tenant_allocated[queue_of(i)] += j.gpus;
      if (++started % progress_every == 0 && options.progress)
        options.progress(static_cast<double>(started) / static_cast<double>(result.jobs));
      return true;
    }
    return false;
  };

  int64_t next = 0;
  std::vector<Queue::iterator> cursor(num_queues);  // per queue: the next job to consider
  while (next < n || !running.empty()) {
    const double t_arrival = next < n ? jobs[next].submit_s : std::numeric_limits<double>::infinity();
    const double t_end = running.empty() ? std::numeric_limits<double>::infinity() : running.top().first;
    const double now = std::min(t_arrival, t_end);
    while (!running.empty() && running.top().first <= now) {
      const int64_t i = running.top().second;
      running.pop();
      nodes[pool_of[i]].Release(alloc[i]);
      allocated -= jobs[i].gpus;
      tenant_allocated[queue_of(i)] -= jobs[i].gpus;
      std::vector<std::pair<int64_t, int64_t>>().swap(alloc[i]);
    }
    while (next < n && jobs[next].submit_s <= now) {
      if (placeable[next]) queues[queue_of(next)].emplace(key(next), next);
      ++next;
    }
    for (size_t q = 0; q < num_queues; ++q) cursor[q] = queues[q].begin();
    int scanned = 0;
    while (scanned < kBackfillWindow) {
      size_t q = num_queues;  // the queue whose next job comes first in policy order
      for (size_t k = 0; k < num_queues; ++k)
        if (cursor[k] != queues[k].end() && (q == num_queues || *cursor[k] < *cursor[q])) q = k;
      if (q == num_queues) break;
      const int64_t i = cursor[q]->second;
      if (q > 0 && tenant_allocated[q] + jobs[i].gpus > options.tenant_quota[q - 1]) {
        cursor[q] = queues[q].end();  // the tenant waits for its own jobs to end
        continue;
      }
      if (try_start(i, now)) {
        cursor[q] = queues[q].erase(cursor[q]);
        continue;
      }
      if (!options.backfill) break;
      ++scanned;
      ++cursor[q];
    }
    if (changes.empty() || changes.back().second != allocated) changes.emplace_back(now, allocated);
    result.peak_allocated_gpus = std::max(result.peak_allocated_gpus, allocated);
    result.makespan_s = std::max(result.makespan_s, now);
  }

  // The allocation step function, integrated over equal bins of [0, makespan].
  const int points = std::max(1, options.timeline_points);
  const double span = result.makespan_s > 0 ? result.makespan_s : 1;
  const double width = span / points;
  result.timeline_t_s.resize(points);
  result.timeline_gpus.assign(points, 0);
  for (int b = 0; b < points; ++b) result.timeline_t_s[b] = b * width;
  double area = 0;
  for (size_t c = 0; c < changes.size(); ++c) {
    const double a = changes[c].first;
    const double z = c + 1 < changes.size() ? changes[c + 1].first : result.makespan_s;
    const double level = static_cast<double>(changes[c].second);
    if (z <= a || level == 0) continue;
    area += level * (z - a);
    for (int b = std::max(0, static_cast<int>(a / width)); b < points && b * width < z; ++b) {
      const double lo = std::max(a, b * width), hi = std::min(z, (b + 1) * width);
      if (hi > lo) result.timeline_gpus[b] += level * (hi - lo) / width;
    }
  }
  result.mean_allocated_gpus = result.makespan_s > 0 ? area / result.makespan_s : 0;
  if (options.progress) options.progress(1.0);
  return result;
}

}  // namespace mimic::fleet
