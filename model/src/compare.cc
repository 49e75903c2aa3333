#include "mimic/model/compare.h"

#include <cmath>

#include "mimic/base/json_writer.h"

namespace mimic::model {
namespace {

using Side = std::optional<double> SideBySide::*;

void WriteSides(JsonWriter& j, const SideBySide& s) {
  j.Key("ops").Int(s.ops);
  j.Key("original_ms").Optional(s.original_ms);
  j.Key("replay_ms").Optional(s.replay_ms);
  j.Key("predicted_ms").Optional(s.predicted_ms);
  j.Key("error_replay_vs_original").Optional(RelativeError(s.replay_ms, s.original_ms));
  j.Key("error_predicted_vs_replay").Optional(RelativeError(s.predicted_ms, s.replay_ms));
  j.Key("error_predicted_vs_original").Optional(RelativeError(s.predicted_ms, s.original_ms));
  j.Key("original_gpu_active_ms").Optional(s.original_gpu_active_ms);
  j.Key("predicted_gpu_active_ms").Optional(s.predicted_gpu_active_ms);
  j.Key("error_predicted_vs_original_gpu_active")
      .Optional(RelativeError(s.predicted_gpu_active_ms, s.original_gpu_active_ms));
}

void WriteGpuActive(JsonWriter& j, const SideBySide& s) {
  j.BeginObject();
  j.Key("original_ms").Optional(s.original_gpu_active_ms);
  j.Key("predicted_ms").Optional(s.predicted_gpu_active_ms);
  j.Key("error_predicted_vs_original")
      .Optional(RelativeError(s.predicted_gpu_active_ms, s.original_gpu_active_ms));
  j.EndObject();
}

void WritePageFaults(JsonWriter& j, const PageFaults& f, std::optional<double> replay_ms) {
  j.BeginObject();
  j.Key("original_per_iteration").Optional(f.original);
  j.Key("replay_per_iteration").Optional(f.replay);
  j.Key("us_each").Double(f.us_each);
  j.Key("predicted_ms_at_replays").Optional(f.predicted_ms_at_replays);
  j.Key("error_predicted_vs_replay_at_replays")
      .Optional(RelativeError(f.predicted_ms_at_replays, replay_ms));
  j.EndObject();
}

void WriteUnmodelled(JsonWriter& j, const UnmodelledOps& u) {
  j.BeginObject();
  j.Key("ops").Int(u.ops);
  j.Key("original_gpu_active_ms").Optional(u.original_gpu_active_ms);
  j.Key("predicted_ms").Double(u.predicted_ms);
  j.Key("reasons").BeginObject();
  for (const auto& [reason, n] : u.reasons) j.Key(reason).Int(n);
  j.EndObject();
  j.Key("by_name").BeginArray();
  for (const UnmodelledOps::ByName& b : u.by_name) {
    j.BeginObject();
    j.Key("name").String(b.name);
    j.Key("reason").String(b.reason);
    j.Key("ops").Int(b.ops);
    j.Key("original_ms").Optional(b.original_ms);
    j.Key("predicted_ms").Double(b.predicted_ms);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void WriteOpGroups(JsonWriter& j, const std::vector<OpGroup>& groups) {
  j.BeginArray();
  for (const OpGroup& g : groups) {
    j.BeginObject();
    j.Key("name").String(g.name);
    j.Key("op_class").String(g.op_class);
    j.Key("inputs").String(g.inputs);
    j.Key("ops").Int(g.ops);
    j.Key("original_ms").Double(g.original_ms);
    j.Key("predicted_ms").Double(g.predicted_ms);
    j.Key("error_predicted_vs_original").Optional(RelativeError(g.predicted_ms, g.original_ms));
    j.Key("bound").StringOrNull(g.bound);
    j.EndObject();
  }
  j.EndArray();
}

void WriteTimeline(JsonWriter& j, const std::vector<Span>& spans) {
  j.BeginArray();
  for (const Span& s : spans) {
    j.BeginObject();
    j.Key("start_ms").Double(s.start_ms);
    j.Key("duration_ms").Double(s.duration_ms);
    j.Key("op_class").String(s.op_class);
    j.Key("name").String(s.name);
    j.EndObject();
  }
  j.EndArray();
}

// The page: data in a JSON script block, drawn by the inline script into SVG. When it is
// done it sets <body data-rendered="ok">, which the headless-browser test waits for.
constexpr const char* kHtmlHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Mimic comparison</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 20px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3} td:first-child,th:first-child{text-align:left}
.neg{color:#a33}.pos{color:#2a6}
svg text{font:11px system-ui,sans-serif}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:600}
</style></head><body>
<h1>Mimic: original vs replay vs prediction</h1>
<h2>Summary</h2><table id="summary"></table>
<h2>Time per op class</h2>
<div class="legend"><span style="background:#4c72b0"></span>original<span style="background:#dd8452"></span>replay<span style="background:#55a868"></span>prediction</div>
<svg id="bars" width="760" height="10"></svg>
<h2>One iteration</h2><svg id="timeline" width="760" height="10"></svg>
<div class="legend" id="timeline-legend"></div>
<h2>Ops the prediction misses most</h2><p id="differences"></p><table id="differences-ops"></table>
<h2>Ops no model sees into</h2><p id="unmodelled"></p><table id="unmodelled-ops"></table>
<h2>Context</h2><dl id="context"></dl>
<h2>Notes</h2><ul id="notes"></ul>
<script type="application/json" id="data">)html";

constexpr const char* kHtmlTail = R"html(</script>
<script>
(function () {
  const d = JSON.parse(document.getElementById('data').textContent);
  const NS = 'http://www.w3.org/2000/svg';
  const sides = [['original_ms', '#4c72b0'], ['replay_ms', '#dd8452'], ['predicted_ms', '#55a868']];
  const fmt = v => v === null || v === undefined ? '\u2014' : v.toFixed(3);
  const pct = v => v === null || v === undefined ? '\u2014' : (v >= 0 ? '+' : '') + (100 * v).toFixed(1) + '%';
  function el(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // Summary table: end to end, then each class.
  const t = document.getElementById('summary');
  t.innerHTML = '<tr><th>row</th><th>ops</th><th>original ms</th><th>replay ms</th><th>predicted ms</th>' +
      '<th>replay vs original</th><th>predicted vs replay</th><th>predicted vs original</th>' +
      '<th>original GPU active ms</th><th>predicted GPU active ms</th><th>predicted vs original GPU active</th></tr>';
  const rows = [['end_to_end', d.end_to_end]].concat(Object.entries(d.op_classes));
  for (const [name, r] of rows) {
    const tr = document.createElement('tr');
    tr.dataset.row = name;
    const cells = [name, String(r.ops), fmt(r.original_ms), fmt(r.replay_ms), fmt(r.predicted_ms),
                   pct(r.error_replay_vs_original), pct(r.error_predicted_vs_replay), pct(r.error_predicted_vs_original),
                   fmt(r.original_gpu_active_ms), fmt(r.predicted_gpu_active_ms), pct(r.error_predicted_vs_original_gpu_active)];
    const keys = ['row', 'ops', 'original_ms', 'replay_ms', 'predicted_ms', 'error_replay_vs_original',
                  'error_predicted_vs_replay', 'error_predicted_vs_original', 'original_gpu_active_ms',
                  'predicted_gpu_active_ms', 'error_predicted_vs_original_gpu_active'];
    cells.forEach((c, i) => {
      const td = document.createElement('td');
      td.textContent = c;
      td.dataset.key = keys[i];
      tr.appendChild(td);
    });
    t.appendChild(tr);
  }
  // GPU active time without communication, and of the modelled ops alone.
  for (const [name, key] of [['GPU active, no communication', 'compute_gpu_active'],
                             ['GPU active, modelled ops', 'modelled_gpu_active']]) {
    const a = d.end_to_end[key];
    if (!a || (a.original_ms === null && a.predicted_ms === null)) continue;
    const tr = document.createElement('tr');
    tr.dataset.row = key;
    tr.innerHTML = '<td>' + name + '</td>' + '<td></td>'.repeat(7) +
        '<td data-key="original_gpu_active_ms">' + fmt(a.original_ms) + '</td>' +
        '<td data-key="predicted_gpu_active_ms">' + fmt(a.predicted_ms) + '</td>' +
        '<td data-key="error_predicted_vs_original_gpu_active">' + pct(a.error_predicted_vs_original) + '</td>';
    t.appendChild(tr);
  }
  const u = d.unmodelled;
  const reasons = Object.entries(u.reasons).map(([k, n]) => n + ' ' + k).join(', ');
  document.getElementById('unmodelled').textContent = u.ops === 0 ? 'None: the models see every op.' :
      u.ops + ' ops (' + reasons + '): recorded ' + fmt(u.original_gpu_active_ms) + ' ms of kernels, ' +
      'predicted ' + fmt(u.predicted_ms) + ' ms (a floor: their bytes at memory bandwidth).';
  const ut = document.getElementById('unmodelled-ops');
  if (u.by_name.length) ut.innerHTML = '<tr><th>op</th><th>why</th><th>ops</th><th>recorded ms</th><th>predicted ms</th></tr>';
  for (const b of u.by_name) {
    const tr = document.createElement('tr');
    for (const v of [b.name, b.reason, String(b.ops), fmt(b.original_ms), fmt(b.predicted_ms)]) {
      const td = document.createElement('td');
      td.textContent = v;
      tr.appendChild(td);
    }
    ut.appendChild(tr);
  }
  // The op groups whose predicted kernel time is farthest from the recorded.
  const diffs = document.getElementById('differences-ops');
  document.getElementById('differences').textContent = d.largest_differences.length ?
      'Ops of one name and inputs, their recorded kernel time against the predicted, per iteration.' :
      'None: no kernels recorded, or a CPU platform.';
  if (d.largest_differences.length) diffs.innerHTML = '<tr><th>op</th><th>inputs</th><th>ops</th><th>recorded ms</th>' +
      '<th>predicted ms</th><th>predicted vs recorded</th><th>limited by</th></tr>';
  d.largest_differences.forEach((o, i) => {
    const tr = document.createElement('tr');
    tr.dataset.row = 'difference' + i;
    const cells = [['name', o.name], ['inputs', o.inputs], ['ops', String(o.ops)], ['original_ms', fmt(o.original_ms)],
                   ['predicted_ms', fmt(o.predicted_ms)], ['error_predicted_vs_original', pct(o.error_predicted_vs_original)],
                   ['bound', o.bound === null ? '\u2014' : o.bound]];
    for (const [k, v] of cells) {
      const td = document.createElement('td');
      td.textContent = v;
      td.dataset.key = k;
      tr.appendChild(td);
    }
    diffs.appendChild(tr);
  });
  const g = d.geomean_abs_error || {};
  const gt = document.createElement('tr');
  gt.innerHTML = '<td>geomean |error| over classes</td><td></td><td></td><td></td><td></td><td>' + pct(g.replay_vs_original) +
      '</td><td>' + pct(g.predicted_vs_replay) + '</td><td>' + pct(g.predicted_vs_original) + '</td>';
  t.appendChild(gt);
  // Bars: one group per class, one bar per side.
  const bars = document.getElementById('bars');
  const classes = Object.entries(d.op_classes);
  let max = 0;
  for (const [, r] of classes) for (const [k] of sides) if (r[k]) max = Math.max(max, r[k]);
  const rowH = 3 * 12 + 10, left = 130, width = 560;
  bars.setAttribute('height', Math.max(20, classes.length * rowH + 10));
  classes.forEach(([name, r], i) => {
    const y0 = 5 + i * rowH;
    bars.appendChild(el('text', {x: 0, y: y0 + 22}, name));
    sides.forEach(([k, color], j) => {
      const v = r[k];
      const w = v && max > 0 ? Math.max(1, width * v / max) : 0;
      bars.appendChild(el('rect', {x: left, y: y0 + j * 12, width: w, height: 10, fill: color,
                                   'data-class': name, 'data-side': k, 'data-value': v === null ? '' : v}));
      bars.appendChild(el('text', {x: left + w + 4, y: y0 + j * 12 + 9}, fmt(v)));
    });
  });
  // Timeline: one strip per side, ops coloured by class.
  const palette = ['#4c72b0', '#dd8452', '#55a868', '#c44e52', '#8172b3', '#937860', '#da8bc3', '#8c8c8c', '#ccb974'];
  const colorOf = {};
  const strips = [['original', d.timeline.original], ['replay', d.timeline.replay], ['prediction', d.timeline.predicted]];
  let end = 0;
  for (const [, spans] of strips) for (const s of spans) end = Math.max(end, s.start_ms + s.duration_ms);
  const tl = document.getElementById('timeline');
  tl.setAttribute('height', strips.length * 28 + 24);
  strips.forEach(([label, spans], i) => {
    const y = 4 + i * 28;
    tl.appendChild(el('text', {x: 0, y: y + 14}, label));
    for (const s of spans) {
      if (!(s.op_class in colorOf)) colorOf[s.op_class] = palette[Object.keys(colorOf).length % palette.length];
      const x = 80 + (end > 0 ? 660 * s.start_ms / end : 0);
      const r = el('rect', {x: x, y: y, width: Math.max(0.5, end > 0 ? 660 * s.duration_ms / end : 0), height: 20,
                            fill: colorOf[s.op_class], 'data-strip': label});
      r.appendChild(el('title', {}, s.name + ' ' + s.duration_ms.toFixed(3) + ' ms'));
      tl.appendChild(r);
    }
  });
  tl.appendChild(el('text', {x: 80, y: strips.length * 28 + 18}, '0 ms'));
  tl.appendChild(el('text', {x: 700, y: strips.length * 28 + 18}, end.toFixed(2) + ' ms'));
  const lg = document.getElementById('timeline-legend');
  for (const [k, c] of Object.entries(colorOf)) lg.innerHTML += '<span style="background:' + c + '"></span>' + k;
  const ctx = document.getElementById('context');
  for (const [k, v] of Object.entries(d.context)) {
    const dt = document.createElement('dt'); dt.textContent = k;
    const dd = document.createElement('dd'); dd.textContent = v;
    ctx.appendChild(dt); ctx.appendChild(dd);
  }
  const notes = document.getElementById('notes');
  for (const n of d.notes) { const li = document.createElement('li'); li.textContent = n; notes.appendChild(li); }
  document.body.dataset.rendered = 'ok';
})();
</script></body></html>
)html";

}  // namespace

std::optional<double> RelativeError(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || !(*b > 0)) return std::nullopt;
  return (*a - *b) / *b;
}

std::optional<double> GeomeanAbsError(const Comparison& c, Side a, Side b) {
  double log_sum = 0;
  int n = 0;
  for (const auto& [name, s] : c.op_classes) {
    const std::optional<double> e = RelativeError(s.*a, s.*b);
    if (!e || *e == 0) continue;
    log_sum += std::log(std::fabs(*e));
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::exp(log_sum / n);
}

std::string RenderComparisonJson(const Comparison& c) {
  JsonWriter j;
  j.BeginObject();
  j.Key("context").BeginObject();
  for (const auto& [k, v] : c.context) j.Key(k).String(v);
  j.EndObject();
  j.Key("platform").BeginObject();
  j.Key("name").String(c.platform_name);
  j.Key("chosen_by").String(c.platform_chosen_by);
  j.EndObject();
  j.Key("end_to_end").BeginObject();
  WriteSides(j, c.end_to_end);
  j.Key("predicted_exposed_comm_ms").Double(c.exposed_comm_ms);
  j.Key("compute_gpu_active");
  WriteGpuActive(j, c.compute);
  j.Key("modelled_gpu_active");
  WriteGpuActive(j, c.modelled);
  if (c.page_faults.us_each > 0) {
    j.Key("page_faults");
    WritePageFaults(j, c.page_faults, c.end_to_end.replay_ms);
  }
  j.EndObject();
  j.Key("unmodelled");
  WriteUnmodelled(j, c.unmodelled);
  j.Key("op_classes").BeginObject();
  for (const auto& [name, s] : c.op_classes) {
    j.Key(name).BeginObject();
    WriteSides(j, s);
    j.EndObject();
  }
  j.EndObject();
  j.Key("largest_differences");
  WriteOpGroups(j, c.largest_differences);
  j.Key("geomean_abs_error").BeginObject();
  j.Key("replay_vs_original")
      .Optional(GeomeanAbsError(c, &SideBySide::replay_ms, &SideBySide::original_ms));
  j.Key("predicted_vs_replay")
      .Optional(GeomeanAbsError(c, &SideBySide::predicted_ms, &SideBySide::replay_ms));
  j.Key("predicted_vs_original")
      .Optional(GeomeanAbsError(c, &SideBySide::predicted_ms, &SideBySide::original_ms));
  j.EndObject();
  j.Key("profiled_ops").BeginObject();
  for (const auto& [name, s] : c.profiled_ops) {
    j.Key(name).BeginObject();
    j.Key("calls").Int(s.ops);
    j.Key("original_ms").Optional(s.original_ms);
    j.Key("replay_ms").Optional(s.replay_ms);
    j.Key("error_replay_vs_original").Optional(RelativeError(s.replay_ms, s.original_ms));
    j.EndObject();
  }
  j.EndObject();
  j.Key("timeline").BeginObject();
  j.Key("original");
  WriteTimeline(j, c.original_timeline);
  j.Key("replay");
  WriteTimeline(j, c.replay_timeline);
  j.Key("predicted");
  WriteTimeline(j, c.predicted_timeline);
  j.EndObject();
  j.Key("notes").BeginArray();
  for (const std::string& n : c.notes) j.String(n);
  j.EndArray();
  j.EndObject();
  return j.str() + "\n";
}

std::string RenderComparisonHtml(const Comparison& c) {
  // The JSON goes inside a <script> element: "</" would end it early.
  std::string json = RenderComparisonJson(c);
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe += json[i];
    }
  }
  return std::string(kHtmlHead) + safe + kHtmlTail;
}

}  // namespace mimic::model
