#include "server/http/routes/status_page.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace seqd {

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatDuration(std::chrono::seconds d) {
  int64_t s = std::max<int64_t>(0, d.count());
  const int64_t days = s / 86400;
  const int64_t hours = s / 3600 % 24;
  const int64_t minutes = s / 60 % 60;
  s %= 60;
  std::string out;
  auto part = [&out](int64_t n, const char* unit) {
    if (!out.empty()) out += ' ';
    out += std::to_string(n);
    out += unit;
  };
  if (days > 0) part(days, "d");
  if (days > 0 || hours > 0) part(hours, "h");
  if (days > 0 || hours > 0 || minutes > 0) part(minutes, "m");
  part(s, "s");
  return out;
}

namespace {

constexpr std::string_view kStyle = R"css(
:root{color-scheme:light;--fg:#1d2330;--muted:#6b7385;--line:#e3e6ee;--bg:#f6f7fb;
--ok:#17803d;--okbg:#e3f6e9;--bad:#b3261e;--badbg:#fde8e6;--warnbg:#fff4d6;--warn:#8a5a00;}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
header{display:flex;flex-wrap:wrap;align-items:center;gap:12px 28px;padding:16px 24px;
background:#fff;border-bottom:1px solid var(--line)}
header h1{margin:0;font-size:20px;letter-spacing:.02em}
.meta{display:flex;gap:20px;flex-wrap:wrap;color:var(--muted)}
.meta b{color:var(--fg);font-weight:600}
.pill{display:inline-block;padding:2px 10px;border-radius:999px;font-weight:600;font-size:13px}
.pill.up{background:var(--okbg);color:var(--ok)}
.pill.down{background:var(--badbg);color:var(--bad)}
.banner{margin:16px 24px 0;padding:12px 16px;border-radius:8px;background:var(--badbg);
color:var(--bad);border:1px solid #f3b8b2;font-weight:600}
.banner.warn{background:var(--warnbg);color:var(--warn);border-color:#f0d690}
main{padding:8px 24px 24px}
h2{font-size:15px;margin:20px 0 8px}
.summary{color:var(--muted);margin:0 0 8px}
.tablewrap{overflow-x:auto;background:#fff;border:1px solid var(--line);border-radius:8px}
table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:6px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap;
vertical-align:top}
th{white-space:normal;background:#fafbfd;font-size:12px;color:var(--muted);font-weight:600;position:sticky;top:0}
th.l,td.l{text-align:left}
tr:last-child td{border-bottom:0}
tr.low td{background:var(--warnbg)}
td.warn{color:var(--warn)}
td.key{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-weight:600}
.tag{display:inline-block;margin-left:6px;padding:0 6px;border-radius:4px;font-size:11px;
font-weight:600;background:#e8ecf8;color:#3b4a7a;font-family:system-ui,sans-serif}
.tag.load{background:#e6f0ff;color:#1c4fb0}
.tag.bad{background:var(--badbg);color:var(--bad)}
.tag.warn{background:#ffe4a3;color:var(--warn)}
.muted{color:var(--muted)}
.err{color:var(--bad);white-space:normal;max-width:360px;text-align:left;word-break:break-word}
.buf small,td small,th small{display:block;color:var(--muted);font-weight:400}
.bar{height:4px;background:var(--line);border-radius:2px;margin-top:3px;min-width:90px}
.bar i{display:block;height:4px;border-radius:2px;background:#5b7be0}
.desc{white-space:normal;max-width:240px;text-align:left;color:var(--muted)}
footer{padding:0 24px 24px;color:var(--muted);font-size:12px}
footer a{color:inherit}
)css";

std::string Num(int64_t n) { return std::to_string(n); }

int64_t Remaining(const BufferSnapshot& b) {
  return b.ready ? std::max<int64_t>(0, b.last - b.next + 1) : 0;
}

// One buffer: range, position, remaining and a usage bar.
std::string BufferCell(const BufferSnapshot& b) {
  if (!b.ready) return R"(<td class="buf"><span class="muted">not ready</span></td>)";
  const int64_t size = std::max<int64_t>(1, b.last - b.first + 1);
  const int64_t used = std::clamp<int64_t>(b.next - b.first, 0, size);
  const int pct = static_cast<int>(used * 100 / size);
  std::string out = R"(<td class="buf">)";
  out += Num(b.first) + " &ndash; " + Num(b.last);
  out += "<small>next " + Num(b.next) + " &middot; " + Num(Remaining(b)) + " left</small>";
  out += R"(<div class="bar" title=")" + std::to_string(pct) + R"(% used"><i style="width:)" +
         std::to_string(pct) + R"(%"></i></div></td>)";
  return out;
}

struct Entry {
  const KeySnapshot* snap = nullptr;
  const KeyRow* row = nullptr;
};

bool LowRunway(const KeySnapshot& s) { return s.runway_s && *s.runway_s < kLowRunwaySeconds; }

std::string RateText(double rate) {
  char buf[64];
  std::snprintf(buf, sizeof buf, rate < 100 ? "%.1f" : "%.0f", rate);
  return buf;
}

std::string RunwayCell(const KeySnapshot& s) {
  if (!s.runway_s) return R"(<td class="muted" title="no IDs taken recently">&ndash;</td>)";
  constexpr double kMonth = 30 * 86400.0;
  if (*s.runway_s > kMonth) return "<td>&gt; 30d</td>";
  std::string text = FormatDuration(std::chrono::seconds(static_cast<int64_t>(*s.runway_s)));
  return LowRunway(s) ? R"(<td class="warn"><b>)" + text + "</b></td>" : "<td>" + text + "</td>";
}

// One row: the worker id, serving or not, the lease and the counters.
std::string SnowflakeSection(const SnowflakeStatus& s) {
  std::string h = "<h2>Snowflake</h2>\n";
  h += R"(<div class="tablewrap"><table id="snowflake"><thead><tr>)"
       R"(<th>Worker id</th><th class="l">State</th><th>Lease left</th>)"
       R"(<th>Last timestamp (ms)</th><th>Issued</th><th>Waits for next ms</th>)"
       R"(<th>Clock back: waited</th><th>Clock back: refused</th></tr></thead><tbody><tr>)";
  h += "<td>" + (s.worker_id >= 0 ? Num(s.worker_id) : std::string("&ndash;")) + "</td>";
  if (s.serving) {
    h += R"(<td class="l"><span class="pill up">serving</span></td>)";
  } else {
    h += R"(<td class="l err">)" + HtmlEscape(s.why_not) + "</td>";
  }
  h += "<td>" +
       (s.lease_left_s > 0
            ? FormatDuration(std::chrono::seconds(static_cast<int64_t>(s.lease_left_s)))
            : std::string("&ndash;")) +
       "</td>";
  h += "<td>" + Num(s.last_time_ms) + "</td>";
  h += "<td>" + std::to_string(s.issued) + "</td>";
  h += "<td>" + std::to_string(s.sequence_waits) + "</td>";
  h += "<td>" + std::to_string(s.clock_back_waits) + "</td>";
  h += s.clock_back_refusals > 0
           ? R"(<td class="warn"><b>)" + std::to_string(s.clock_back_refusals) + "</b></td>"
           : "<td>0</td>";
  h += "</tr></tbody></table></div>\n";
  return h;
}

// One row: the dense allocator's totals since the start.
std::string DenseSection(const DenseStats& d) {
  std::string h = "<h2>Dense keys</h2>\n";
  h += R"(<div class="tablewrap"><table id="dense"><thead><tr>)"
       R"(<th>Blocks</th><th>Transactions</th><th>Blocks per transaction</th>)"
       R"(<th>Replayed for a token</th><th>Failed</th><th>Waiting now</th></tr></thead><tbody><tr>)";
  char per[32];
  std::snprintf(per, sizeof per, "%.1f",
                d.transactions > 0 ? static_cast<double>(d.requests) / d.transactions : 0.0);
  h += "<td>" + std::to_string(d.requests) + "</td>";
  h += "<td>" + std::to_string(d.transactions) + "</td>";
  h += std::string("<td>") + per + "</td>";
  h += "<td>" + std::to_string(d.replayed) + "</td>";
  h += d.failures > 0 ? R"(<td class="warn"><b>)" + std::to_string(d.failures) + "</b></td>"
                      : "<td>0</td>";
  h += "<td>" + std::to_string(d.waiting_now) + "</td>";
  h += "</tr></tbody></table></div>\n";
  return h;
}

// The members (with the shards each owns) and the shard map as a grid of
// member numbers; the full map with epochs is at /admin/cluster.
std::string ClusterSection(const StatusPageInput::Cluster& c) {
  std::string h = "<h2>Cluster</h2>\n";
  if (!c.snapshot) {
    return h + R"(<p class="summary err" id="cluster-waiting">waiting for the cluster tables )"
               R"((is the store up?)</p>)"
               "\n";
  }
  const ClusterSnapshot& snap = *c.snapshot;
  std::map<std::string, size_t> number;  // member -> 1-based number in the table
  ClusterSnapshot::Counts counts = snap.Count();
  for (const auto& [id, m] : snap.members) number.emplace(id, number.size() + 1);
  h += R"(<p class="summary">)" + std::to_string(snap.shards.size()) + " shards &middot; " +
       std::to_string(counts.unowned) + " without a live owner</p>\n";
  h += R"(<div class="tablewrap"><table id="cluster-members"><thead><tr><th>#</th>)"
       R"(<th class="l">Instance</th><th class="l">Address</th><th class="l">State</th>)"
       R"(<th>Shards</th></tr></thead><tbody>)";
  for (const auto& [id, m] : snap.members) {
    h += "<tr><td>" + std::to_string(number[id]) + R"(</td><td class="l">)" + HtmlEscape(id);
    if (id == c.instance) h += " (this one)";
    h += R"(</td><td class="l">)" + HtmlEscape(m.advertise) + R"(</td><td class="l">)";
    h += m.live ? R"(<span class="pill up">live</span>)" : R"(<span class="err">gone</span>)";
    h += "</td><td>" + std::to_string(counts.owned[id]) + "</td></tr>";
  }
  h += "</tbody></table></div>\n";
  h += R"(<details><summary>Shard map (member # per shard)</summary><p id="shard-map" )"
       R"(style="font-family:monospace;word-break:break-all">)";
  for (size_t i = 0; i < snap.shards.size(); ++i) {
    const auto& s = snap.shards[i];
    auto n = number.find(s.owner);
    const std::string cell = n == number.end() ? "-" : std::to_string(n->second);
    h += "<span title=\"shard " + std::to_string(i) + " epoch " + std::to_string(s.epoch) + "\">" +
         cell + "</span> ";
  }
  h += "</p></details>\n";
  return h;
}

// Store groups: the groups, where shards are away from home or moving, and
// this instance's mover.
std::string PlacementSection(const PlacementView& v) {
  std::string h = "<h2>Store groups</h2>\n";
  std::map<std::string, int64_t> away;  // group -> shards placed there
  int64_t moving = 0;
  for (const PlacementRow& row : v.map->rows) {
    ++away[row.group];
    if (!row.move_state.empty() && row.move_state != "cleanup") ++moving;
  }
  h += R"(<p class="summary" id="placement">)" + std::to_string(v.groups.size()) +
       " groups (home " + HtmlEscape(v.groups.front()) + ") &middot; placement version " +
       std::to_string(v.map->version) + " &middot; " + std::to_string(moving) +
       " moves in progress</p>\n<p>";
  for (const std::string& g : v.groups) {
    if (g == v.groups.front()) continue;
    h += HtmlEscape(g) + ": " + std::to_string(away[g]) + " shards &middot; ";
  }
  const MoverStatus& m = v.mover;
  h += "this instance's mover: " + std::string(m.running ? "moving" : "idle");
  if (!m.phase.empty()) {
    h += ", shard " + std::to_string(m.shard) + " " + HtmlEscape(m.from) + " &rarr; " +
         HtmlEscape(m.to) + " " + HtmlEscape(m.phase) + ", " + std::to_string(m.rows_copied) +
         " rows copied";
    if (m.pause_ms >= 0) h += ", pause " + std::to_string(m.pause_ms) + " ms";
  }
  return h + "</p>\n";
}

}  // namespace

std::string RenderStatusPage(const StatusPageInput& in) {
  std::map<std::string, Entry> keys;  // sorted by name
  for (const KeySnapshot& s : in.snapshots) keys[s.key].snap = &s;
  if (in.rows) {
    for (const KeyRow& r : *in.rows) keys[r.key].row = &r;
  }
  int low = 0;
  for (const auto& [name, e] : keys) {
    if (e.snap && LowRunway(*e.snap)) ++low;
  }

  std::string h;
  h.reserve(8192 + keys.size() * 1024);
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  if (in.refresh_s > 0) {
    h += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(in.refresh_s) + "\">";
  }
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  h += "<title>seqd ";
  h += HtmlEscape(in.version);
  h += in.store_up ? "" : " &middot; store down";
  h += "</title><style>";
  h += kStyle;
  h += "</style></head><body>\n";

  // Header: identity, uptime, store health.
  h += "<header><h1>seqd</h1><div class=\"meta\">";
  h += "<span>version <b id=\"version\">" + HtmlEscape(in.version) + "</b></span>";
  h += "<span>uptime <b id=\"uptime\">" + FormatDuration(in.uptime) + "</b></span>";
  h += "<span>store ";
  h += in.store_up ? R"(<span id="store" class="pill up">store up</span>)"
                   : R"(<span id="store" class="pill down">store down</span>)";
  h += "</span></div></header>\n";

  if (!in.store_up) {
    h += R"(<div class="banner" id="store-down">Store down: )";
    h += HtmlEscape(in.store_error.empty() ? "no answer" : in.store_error);
    h += " &mdash; keys keep serving from memory until their buffers run out.</div>\n";
  }
  if (low > 0) {
    h += R"(<div class="banner warn" id="low-runway">)";
    h += std::to_string(low);
    h += low == 1 ? " key has" : " keys have";
    h += " less than " + std::to_string(static_cast<int64_t>(kLowRunwaySeconds) / 60) +
         " min of IDs left in memory at the current rate.</div>\n";
  }

  if (in.snowflake && !in.snowflake->serving) {
    h += R"(<div class="banner warn" id="snowflake-down">Snowflake IDs are refused: )";
    h += HtmlEscape(in.snowflake->why_not);
    h += "</div>\n";
  }

  h += "<main>";
  if (in.cluster) h += ClusterSection(*in.cluster);
  if (in.placement) h += PlacementSection(*in.placement);
  if (in.snowflake) h += SnowflakeSection(*in.snowflake);
  if (in.dense) h += DenseSection(*in.dense);
  h += "<h2>Keys</h2><p class=\"summary\">";
  h += std::to_string(in.snapshots.size()) + " in memory";
  if (in.rows) {
    h += " &middot; " + std::to_string(in.rows->size()) + " registered in the store";
    if (in.rows_truncated) h += " (first page only; see /admin/keys?after=)";
  } else {
    h += " &middot; <span class=\"err\">registered keys unavailable";
    if (!in.rows_error.empty()) h += ": " + HtmlEscape(in.rows_error);
    h += "</span>";
  }
  h += "</p>\n";

  h +=
      R"(<div class="tablewrap"><table id="keys"><thead><tr>)"
      R"(<th class="l">Key</th><th>Max ID (store)</th><th class="l">Description</th>)"
      R"(<th class="l">Current buffer</th><th class="l">Next buffer</th><th>Position</th>)"
      R"(<th>Remaining</th><th>Rate (IDs/s)</th><th>Runway</th><th>Step<small>table step</small></th><th>Parked</th>)"
      R"(<th class="l">State</th><th class="l">Last error</th></tr></thead><tbody>)"
      "\n";
  if (keys.empty()) {
    h += R"(<tr><td class="l muted" colspan="13">No keys yet.</td></tr>)";
  }
  for (const auto& [name, e] : keys) {
    const bool is_low = e.snap && LowRunway(*e.snap);
    h += is_low ? R"(<tr class="low">)" : "<tr>";
    h += R"(<td class="l key">)" + HtmlEscape(name);
    const bool dense = in.is_dense && in.is_dense(name);
    if (dense) {
      h += R"(<span class="tag" title="every block stored before it is answered">dense</span>)";
    } else if (e.snap && e.snap->auto_created) {
      h += R"(<span class="tag" title="auto-created">auto</span>)";
    }
    if (is_low) h += R"(<span class="tag warn">low runway</span>)";
    h += "</td>";
    if (e.row) {
      h += "<td>" + Num(e.row->max_id) + "</td>";
      h += R"(<td class="desc">)" + HtmlEscape(e.row->description) + "</td>";
    } else {
      h += R"(<td class="muted">&ndash;</td><td class="desc">)";
      h += in.rows ? "not on this page" : "";
      h += "</td>";
    }
    if (dense) {
      h += R"(<td class="l muted" colspan="10">dense: no buffers, each block is stored )"
           R"(before it is answered; the max ID is the last one handed out</td></tr>)";
      h += "\n";
      continue;
    }
    if (!e.snap) {
      h += R"(<td class="l muted" colspan="10">not in memory (loads on first use)</td></tr>)";
      h += "\n";
      continue;
    }
    const KeySnapshot& s = *e.snap;
    h += BufferCell(s.current);
    h += BufferCell(s.next);
    h += "<td>" + (s.current.ready ? Num(s.current.next) : std::string("&ndash;")) + "</td>";
    h += "<td>" + Num(Remaining(s.current) + Remaining(s.next)) + "</td>";
    h += "<td>" + RateText(s.rate_per_s) + "</td>";
    h += RunwayCell(s);
    h += "<td>" + Num(s.step) + "<small>table " + Num(s.table_step) + "</small></td>";
    h += s.parked > 0 ? "<td><b>" + Num(s.parked) + "</b></td>" : "<td>0</td>";
    h += R"(<td class="l">)";
    if (s.loading) {
      h += R"(<span class="tag load">loading</span>)";
    } else {
      h += R"(<span class="muted">idle )" + FormatDuration(std::chrono::seconds(s.idle_ms / 1000)) +
           "</span>";
    }
    h += "</td>";
    if (s.last_error) {
      h += R"(<td class="err">)" + HtmlEscape(*s.last_error) + "</td>";
    } else {
      h += R"(<td class="l muted">none</td>)";
    }
    h += "</tr>\n";
  }
  h += "</tbody></table></div></main>\n";

  h += "<footer>";
  if (in.refresh_s > 0) h += "Refreshes every " + std::to_string(in.refresh_s) + " s. ";
  h += R"(JSON: <a href="/admin/cache">/admin/cache</a> &middot; )";
  if (in.snowflake) h += R"(<a href="/admin/snowflake">/admin/snowflake</a> &middot; )";
  if (in.cluster) h += R"(<a href="/admin/cluster">/admin/cluster</a> &middot; )";
  h += R"(<a href="/admin/keys">/admin/keys</a> &middot; <a href="/readyz">/readyz</a> &middot; )"
       R"(<a href="/healthz">/healthz</a></footer>)";
  h += "\n</body></html>\n";
  return h;
}

}  // namespace seqd
