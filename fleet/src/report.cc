#include "mimic/fleet/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "mimic/base/json_writer.h"
#include "mimic/base/stats.h"

namespace mimic::fleet {
namespace {

// Quantiles of a sorted distribution at 1%, 2%, ..., 100%: enough to draw its CDF.
std::vector<double> Quantiles(const std::vector<double>& sorted) {
  std::vector<double> q;
  if (sorted.empty()) return q;
  for (int p = 1; p <= 100; ++p) q.push_back(PercentileOfSorted(sorted, p));
  return q;
}

void StepJson(JsonWriter& j, const StepTime& s) {
  j.BeginObject();
  j.Key("ms").Double(s.ms);
  j.Key("source").String(s.source);
  j.Key("detail").String(s.detail);
  if (s.collective_ms >= 0) {
    j.Key("ranks").Int(s.ranks);
    j.Key("collective_ms").Double(s.collective_ms);
    j.Key("exposed_collective_ms").Double(s.exposed_collective_ms);
    j.Key("collective_share").Double(s.ms > 0 ? s.collective_ms / s.ms : 0);
    j.Key("exposed_collective_share").Double(s.ms > 0 ? s.exposed_collective_ms / s.ms : 0);
  }
  j.EndObject();
}

}  // namespace

std::string PlanJson(const ReportContext& c, const PlanResult& p) {
  JsonWriter j;
  j.BeginObject();
  j.Key("context").BeginObject();
  j.Key("mimic_version").String(c.mimic_version);
  j.Key("date").String(c.date);
  j.Key("host").String(c.host);
  j.Key("manifest").String(p.manifest);
  j.Key("manifest_sha256").String(c.manifest_sha256);
  j.EndObject();

  j.Key("arrivals").BeginObject();
  j.Key("source").String(p.arrivals);
  j.Key("jobs").Int(p.jobs);
  j.Key("cpu_only_rows").Int(p.cpu_only_rows);
  j.Key("span_hours").Double(p.span_hours);
  j.Key("jobs_per_hour").Double(p.jobs_per_hour);
  j.Key("by_state").BeginObject();
  for (const auto& [state, n] : p.jobs_by_state) {
    j.Key(state).BeginObject();
    j.Key("jobs").Int(n);
    j.Key("gpu_hours_today").Double(p.gpu_hours_by_state.at(state));
    j.EndObject();
  }
  j.EndObject();
  j.EndObject();

  j.Key("inventory_gpus").Int(p.inventory_gpus);
  j.Key("target_utilization").Double(p.target_utilization);

  j.Key("classes").BeginArray();
  for (const ClassPlan& k : p.classes) {
    j.BeginObject();
    j.Key("name").String(k.name);
    j.Key("platform").String(k.platform);
    j.Key("jobs").Int(k.jobs);
    j.Key("job_share").Double(k.job_share);
    j.Key("mean_iterations").Double(k.mean_iterations);
    j.Key("step_ms").BeginObject();
    for (const auto& [platform, s] : k.step) {
      j.Key(platform);
      StepJson(j, s);
    }
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();

  j.Key("scenarios").BeginArray();
  for (const Scenario& s : p.scenarios) {
    j.BeginObject();
    j.Key("name").String(s.name);
    j.Key("kind").String(s.is_target ? "target" : "today");
    j.Key("pools").BeginArray();
    for (size_t i = 0; i < s.pools.size(); ++i) {
      j.BeginObject();
      j.Key("gpu_type").String(s.pool_types[i]);
      j.Key("nodes").Int(s.pools[i].nodes);
      j.Key("gpus_per_node").Int(s.pools[i].gpus_per_node);
      j.EndObject();
    }
    j.EndArray();
    j.Key("gpu_hours").Double(s.gpu_hours);
    j.Key("class_gpu_hours").BeginObject();
    for (size_t i = 0; i < p.classes.size(); ++i) j.Key(p.classes[i].name).Double(s.class_gpu_hours[i]);
    j.EndObject();
    j.Key("relative_throughput").Double(s.relative_throughput);
    j.Key("offered_load_gpus").Double(s.offered_load_gpus);
    j.Key("gpus_needed").Int(s.gpus_needed);
    j.Key("nodes_needed").Int(s.nodes_needed);
    if (s.price_per_gpu_hour > 0) j.Key("price_per_gpu_hour").Double(s.price_per_gpu_hour);
    else j.Key("price_per_gpu_hour").Null();
    j.Key("cost").Optional(s.cost);
    j.Key("cost_per_hour_needed").Optional(s.cost_per_hour_needed);
    j.Key("simulation").BeginArray();
    for (const PolicyOutcome& o : s.outcomes) {
      j.BeginObject();
      j.Key("policy").String(o.policy);
      j.Key("jobs").Int(o.sim.jobs);
      j.Key("unplaceable").Int(o.sim.unplaceable);
      j.Key("mean_jct_s").Double(o.mean_jct_s);
      j.Key("p50_jct_s").Double(o.p50_jct_s);
      j.Key("p99_jct_s").Double(o.p99_jct_s);
      j.Key("mean_queue_s").Double(o.mean_queue_s);
      j.Key("p50_queue_s").Double(o.p50_queue_s);
      j.Key("p99_queue_s").Double(o.p99_queue_s);
      j.Key("makespan_s").Double(o.sim.makespan_s);
      j.Key("utilization").Double(o.utilization);
      j.Key("mean_allocated_gpus").Double(o.sim.mean_allocated_gpus);
      j.Key("peak_allocated_gpus").Int(o.sim.peak_allocated_gpus);
      j.Key("mean_gpus_by_tenant").BeginObject();
      for (const auto& [tenant, g] : o.mean_gpus_by_tenant) j.Key(tenant).Double(g);
      j.EndObject();
      j.Key("allocation").BeginObject();
      j.Key("t_s").BeginArray();
      for (double t : o.sim.timeline_t_s) j.Double(t);
      j.EndArray();
      j.Key("gpus").BeginArray();
      for (double g : o.sim.timeline_gpus) j.Double(g);
      j.EndArray();
      j.EndObject();
      j.Key("jct_quantiles_s").BeginArray();
      for (double q : Quantiles(o.jct_s)) j.Double(q);
      j.EndArray();
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();

  j.Key("simulation").BeginObject();
  j.Key("backfill").Bool(p.backfill);
  j.Key("simulated_jobs").Int(p.simulated_jobs);
  j.Key("seconds").Double(p.simulate_seconds);
  j.Key("jobs_per_second").Double(p.simulate_seconds > 0 ? p.simulated_jobs / p.simulate_seconds : 0);
  j.EndObject();
  j.EndObject();
  return j.str() + "\n";
}

namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

struct Series {
  std::string name;
  std::vector<double> x, y;
};

// A line chart as inline SVG: axes with min/max labels, one polyline per series, a legend.
std::string LineChart(const std::string& id, const std::string& title, const std::string& x_label,
                      const std::string& y_label, const std::vector<Series>& series, bool log_x) {
  const double w = 640, h = 300, left = 60, right = 160, top = 30, bottom = 40;
  double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
  auto tx = [&](double x) { return log_x ? std::log10(std::max(x, 1e-9)) : x; };
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      x0 = std::min(x0, tx(s.x[i]));
      x1 = std::max(x1, tx(s.x[i]));
      y1 = std::max(y1, s.y[i]);
    }
  if (!std::isfinite(x0) || !std::isfinite(x1)) x0 = 0, x1 = 1;  // no points at all
  if (!std::isfinite(y1)) y1 = 1;
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > y0)) y1 = y0 + 1;
  auto px = [&](double x) { return left + (tx(x) - x0) / (x1 - x0) * (w - left - right); };
  auto py = [&](double y) { return h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom); };
  auto xlab = [&](double v) { return log_x ? Fmt("%.3g", std::pow(10, v)) : Fmt("%.3g", v); };
  std::string svg = "<svg id=\"" + id + "\" class=\"chart\" width=\"640\" height=\"300\" viewBox=\"0 0 640 300\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  svg += "<text x=\"" + Fmt("%.0f", left) + "\" y=\"18\" font-weight=\"bold\">" + Escape(title) + "</text>\n";
  svg += "<line x1=\"" + Fmt("%.1f", left) + "\" y1=\"" + Fmt("%.1f", h - bottom) + "\" x2=\"" + Fmt("%.1f", w - right) +
         "\" y2=\"" + Fmt("%.1f", h - bottom) + "\" stroke=\"#444\"/>\n";
  svg += "<line x1=\"" + Fmt("%.1f", left) + "\" y1=\"" + Fmt("%.1f", top) + "\" x2=\"" + Fmt("%.1f", left) + "\" y2=\"" +
         Fmt("%.1f", h - bottom) + "\" stroke=\"#444\"/>\n";
  svg += "<text x=\"" + Fmt("%.1f", left) + "\" y=\"" + Fmt("%.1f", h - bottom + 15) + "\" font-size=\"11\">" + xlab(x0) + "</text>\n";
  svg += "<text x=\"" + Fmt("%.1f", w - right) + "\" y=\"" + Fmt("%.1f", h - bottom + 15) +
         "\" font-size=\"11\" text-anchor=\"end\">" + xlab(x1) + "</text>\n";
  svg += "<text x=\"" + Fmt("%.1f", (left + w - right) / 2) + "\" y=\"" + Fmt("%.1f", h - 8) +
         "\" font-size=\"12\" text-anchor=\"middle\">" + Escape(x_label) + "</text>\n";
  svg += "<text x=\"" + Fmt("%.1f", left - 5) + "\" y=\"" + Fmt("%.1f", top + 4) + "\" font-size=\"11\" text-anchor=\"end\">" +
         Fmt("%.3g", y1) + "</text>\n";
  svg += "<text x=\"" + Fmt("%.1f", left - 5) + "\" y=\"" + Fmt("%.1f", h - bottom) + "\" font-size=\"11\" text-anchor=\"end\">0</text>\n";
  svg += "<text x=\"12\" y=\"" + Fmt("%.1f", (top + h - bottom) / 2) + "\" font-size=\"12\" transform=\"rotate(-90 12 " +
         Fmt("%.1f", (top + h - bottom) / 2) + ")\" text-anchor=\"middle\">" + Escape(y_label) + "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const char* color = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    svg += "<polyline class=\"series\" data-series=\"" + Escape(s.name) + "\" data-points=\"" + std::to_string(s.x.size()) +
           "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < s.x.size(); ++i) svg += Fmt("%.1f", px(s.x[i])) + "," + Fmt("%.1f", py(s.y[i])) + " ";
    svg += "\"/>\n";
    const double ly = top + 14.0 * static_cast<double>(k);
    svg += "<rect x=\"" + Fmt("%.0f", w - right + 10) + "\" y=\"" + Fmt("%.0f", ly) + "\" width=\"10\" height=\"10\" fill=\"" + color +
           "\"/><text x=\"" + Fmt("%.0f", w - right + 24) + "\" y=\"" + Fmt("%.0f", ly + 9) + "\" font-size=\"11\">" +
           Escape(s.name) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace

std::string PlanHtml(const ReportContext& c, const PlanResult& p) {
  std::string h =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mimic plan: " + Escape(p.manifest) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1100px}table{border-collapse:collapse;"
      "margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f2f2f2}"
      "td.l,th.l{text-align:left}.measured{color:#1a7f37}.predicted{color:#8250df}</style></head><body>\n";
  h += "<h1>Fleet plan: " + Escape(p.manifest) + "</h1>\n";
  h += "<p>mimic " + Escape(c.mimic_version) + ", " + Escape(c.date) + ", host " + Escape(c.host) + "; " +
       std::to_string(p.jobs) + " jobs from " + Escape(p.arrivals) + " over " + Fmt("%.2f", p.span_hours) + " h (" +
       Fmt("%.2f", p.jobs_per_hour) + " jobs/h); inventory " + std::to_string(p.inventory_gpus) + " GPUs; target utilization " +
       Fmt("%.2f", p.target_utilization) + (p.backfill ? "; backfill on" : "") + ".</p>\n";

  h += "<h2>Step time per class (ms)</h2>\n<table id=\"step-times\"><tr><th class=\"l\">class</th><th class=\"l\">captured on</th><th>jobs</th>";
  std::vector<std::string> platforms;
  for (const Scenario& s : p.scenarios)
    if (s.is_target) platforms.push_back(s.name);
  h += "<th>today</th>";
  for (const std::string& t : platforms) h += "<th>" + Escape(t) + "</th>";
  h += "</tr>\n";
  for (const ClassPlan& k : p.classes) {
    h += "<tr><td class=\"l\">" + Escape(k.name) + "</td><td class=\"l\">" + Escape(k.platform) + "</td><td>" +
         std::to_string(k.jobs) + "</td>";
    std::vector<std::string> cols = {k.platform};
    cols.insert(cols.end(), platforms.begin(), platforms.end());
    for (const std::string& pl : cols) {
      const StepTime& s = k.step.at(pl);
      h += "<td class=\"" + Escape(s.source) + "\" title=\"" + Escape(s.detail) + "\">" +
           Fmt("%.3f", s.ms) + " (" + Escape(s.source) +
           (s.collective_ms > 0 ? ", collectives " + Fmt("%.0f", 100 * s.collective_ms / s.ms) + "%"
                                : "") +
           ")</td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n";

  h += "<h2>Fleet totals</h2>\n<table id=\"totals\"><tr><th class=\"l\">scenario</th><th>GPU-hours</th><th>relative throughput</th>"
       "<th>offered load (GPUs)</th><th>GPUs needed</th><th>nodes needed</th><th>$/GPU-h</th><th>cost</th></tr>\n";
  for (const Scenario& s : p.scenarios) {
    h += "<tr data-scenario=\"" + Escape(s.name) + "\"><td class=\"l\">" + Escape(s.name) + "</td><td>" + Fmt("%.2f", s.gpu_hours) +
         "</td><td>" + Fmt("%.3f", s.relative_throughput) + "</td><td>" + Fmt("%.2f", s.offered_load_gpus) +
         "</td><td class=\"gpus-needed\">" + std::to_string(s.gpus_needed) + "</td><td>" + std::to_string(s.nodes_needed) +
         "</td><td>" + (s.price_per_gpu_hour > 0 ? Fmt("%.2f", s.price_per_gpu_hour) : "-") + "</td><td>" +
         (s.cost ? Fmt("%.0f", *s.cost) : "-") + "</td></tr>\n";
  }
  h += "</table>\n";

  h += "<h2>Simulation</h2>\n<table id=\"simulation\"><tr><th class=\"l\">scenario</th><th class=\"l\">policy</th><th>jobs</th>"
       "<th>mean JCT (h)</th><th>p99 JCT (h)</th><th>mean queueing (h)</th><th>p99 queueing (h)</th><th>utilization</th>"
       "<th>makespan (h)</th></tr>\n";
  for (const Scenario& s : p.scenarios)
    for (const PolicyOutcome& o : s.outcomes)
      h += "<tr><td class=\"l\">" + Escape(s.name) + "</td><td class=\"l\">" + o.policy + "</td><td>" + std::to_string(o.sim.jobs) +
           "</td><td>" + Fmt("%.3f", o.mean_jct_s / 3600) + "</td><td>" + Fmt("%.3f", o.p99_jct_s / 3600) + "</td><td>" +
           Fmt("%.3f", o.mean_queue_s / 3600) + "</td><td>" + Fmt("%.3f", o.p99_queue_s / 3600) + "</td><td>" +
           Fmt("%.3f", o.utilization) + "</td><td>" + Fmt("%.2f", o.sim.makespan_s / 3600) + "</td></tr>\n";
  h += "</table>\n";

  std::vector<std::string> policies;
  for (const Scenario& s : p.scenarios)
    for (const PolicyOutcome& o : s.outcomes)
      if (std::find(policies.begin(), policies.end(), o.policy) == policies.end()) policies.push_back(o.policy);
  for (const std::string& policy : policies) {
    std::vector<Series> alloc, cdf;
    for (const Scenario& s : p.scenarios)
      for (const PolicyOutcome& o : s.outcomes) {
        if (o.policy != policy) continue;
        Series a{s.name, {}, o.sim.timeline_gpus};
        for (double t : o.sim.timeline_t_s) a.x.push_back(t / 3600);
        alloc.push_back(std::move(a));
        Series d{s.name, {}, {}};
        const std::vector<double> q = Quantiles(o.jct_s);
        for (size_t i = 0; i < q.size(); ++i) {
          d.x.push_back(q[i] / 3600);
          d.y.push_back((i + 1) / 100.0);
        }
        cdf.push_back(std::move(d));
      }
    h += "<h2>" + Escape(policy) + "</h2>\n";
    h += LineChart("allocation-" + policy, "GPUs allocated over time (" + policy + ")", "hours since the first submission",
                   "allocated GPUs", alloc, false);
    h += LineChart("jct-" + policy, "Job completion time distribution (" + policy + ")", "JCT (hours, log scale)",
                   "fraction of jobs", cdf, true);
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace mimic::fleet
