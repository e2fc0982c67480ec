#include "bench_report.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

namespace seqd::bench {
namespace {

// `s` as a JSON string literal.
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// `{"p50":..,"p99":..,"p999":..,"p9999":..,"max":..,"mean":..}` in us.
std::string JsonLatency(const Histogram& h) {
  std::ostringstream o;
  o.precision(12);
  o << "{\"p50\":" << h.Quantile(0.5) / 1000.0 << ",\"p99\":" << h.Quantile(0.99) / 1000.0
    << ",\"p999\":" << h.Quantile(0.999) / 1000.0 << ",\"p9999\":" << h.Quantile(0.9999) / 1000.0
    << ",\"max\":" << h.max() / 1000.0 << ",\"mean\":" << h.mean() / 1000.0 << "}";
  return o.str();
}

// `"error_kinds":{...}` of `s`.
std::string JsonErrorKinds(const Stats& s) {
  std::string out = "\"error_kinds\":{";
  bool first = true;
  for (const auto& [k, v] : s.error_kinds) {
    if (!first) out += ',';
    out += JsonString(k);
    out += ':';
    out += std::to_string(v);
    first = false;
  }
  return out + "}";
}

// The text report's lines for the answers in `s`: errors (by kind), the
// requests left unanswered, latency; each led by `prefix`.
void PrintOutcome(const char* prefix, const Stats& s) {
  const auto us = [&](double q) { return s.latency.Quantile(q) / 1000.0; };
  std::printf("%serrors    %llu\n", prefix, static_cast<unsigned long long>(s.errors));
  if (s.unanswered > 0) {
    std::printf("%sunanswered %llu  (in flight when the run ended; not in the figures)\n", prefix,
                static_cast<unsigned long long>(s.unanswered));
  }
  for (const auto& [k, v] : s.error_kinds) {
    std::printf("%s  %-40s %llu\n", prefix, k.c_str(), static_cast<unsigned long long>(v));
  }
  std::printf(
      "%slatency   p50 %.1f us  p99 %.1f us  p999 %.1f us  p9999 %.1f us  max %.1f us  mean %.1f "
      "us\n",
      prefix, us(0.5), us(0.99), us(0.999), us(0.9999), s.latency.max() / 1000.0,
      s.latency.mean() / 1000.0);
}

}  // namespace

void PrintReport(const Config& cfg, double elapsed, const Stats& total,
                 const tools::BenchSubscriber::Result& pushes, const tools::SchedTimes& client,
                 const Stats* also_resp) {
  const auto push_us = [&](double q) { return pushes.latency.Quantile(q) / 1000.0; };
  const double rps = total.requests / elapsed, ips = total.ids / elapsed;
  if (cfg.json) {
    std::ostringstream o;
    o.precision(12);
    o << "{\"protocol\":\""
      << (cfg.http   ? "http"
          : cfg.resp ? "resp"
                     : "tcp")
      << "\",\"tls\":" << (cfg.tls.enabled ? "true" : "false")
      << ",\"endpoint\":" << JsonString(cfg.endpoint) << ",\"mode\":\""
      << (cfg.snowflake           ? "snowflake"
          : !cfg.messages.empty() ? "messages"
          : cfg.new_keys.empty()  ? "key"
                                  : "new_keys")
      << "\",\"key\":"
      << JsonString(!cfg.messages.empty()  ? cfg.messages
                    : cfg.new_keys.empty() ? cfg.key
                                           : cfg.new_keys + "*")
      << ",\"connections\":" << cfg.connections << ",\"pipeline\":" << cfg.pipeline
      << ",\"count\":" << cfg.count << ",\"rate\":" << cfg.rate << ",\"warmup_s\":" << cfg.warmup_s
      << ",\"warmup_requests\":" << total.warmup_requests << ",\"duration_s\":" << elapsed
      << ",\"requests\":" << total.requests << ",\"requests_per_s\":" << rps
      << ",\"ids\":" << total.ids << ",\"ids_per_s\":" << ips << ",\"errors\":" << total.errors
      << ",\"unanswered\":" << total.unanswered << "," << JsonErrorKinds(total)
      << ",\"latency_us\":" << JsonLatency(total.latency);
    if (also_resp) {
      o << ",\"also_resp\":{\"endpoint\":" << JsonString(cfg.also_resp_endpoint)
        << ",\"requests\":" << also_resp->requests
        << ",\"requests_per_s\":" << also_resp->requests / elapsed << ",\"ids\":" << also_resp->ids
        << ",\"warmup_requests\":" << also_resp->warmup_requests
        << ",\"errors\":" << also_resp->errors << ",\"unanswered\":" << also_resp->unanswered << ","
        << JsonErrorKinds(*also_resp) << ",\"latency_us\":" << JsonLatency(also_resp->latency)
        << "}";
    }
    if (client.known) {
      o << ",\"client_cpu_s\":" << client.cpu_s << ",\"client_wait_s\":" << client.wait_s;
    }
    if (cfg.subscribers > 0) {
      o << ",\"push\":{\"transport\":\"" << (cfg.sse_endpoint.empty() ? "binary" : "sse")
        << "\",\"subscribers\":" << cfg.subscribers << ",\"pushes\":" << pushes.pushes
        << ",\"expected\":" << total.ids * cfg.subscribers << ",\"errors\":" << pushes.errors
        << ",\"latency_us\":" << JsonLatency(pushes.latency) << "}";
    }
    o << "}";
    std::cout << o.str() << "\n";
  } else {
    const std::string what = cfg.snowflake           ? "snowflake"
                             : !cfg.messages.empty() ? "messages=" + cfg.messages
                             : cfg.new_keys.empty()  ? "key=" + cfg.key
                                                     : "new-keys=" + cfg.new_keys + "*";
    std::printf("%s%s %s %s connections=%d pipeline=%d count=%u duration=%.2fs threads=%d\n",
                cfg.http   ? "http"
                : cfg.resp ? "resp"
                           : "tcp",
                cfg.tls.enabled ? "+tls" : "", cfg.endpoint.c_str(), what.c_str(), cfg.connections,
                cfg.pipeline, cfg.count, elapsed, cfg.threads);
    std::printf("requests  %llu  (%.0f/s)\n", static_cast<unsigned long long>(total.requests), rps);
    if (cfg.rate > 0) std::printf("open loop %.0f/s scheduled\n", cfg.rate);
    if (cfg.warmup_s > 0) {
      std::printf("warmup    %llu requests in the first %.2fs, not in the latency figures\n",
                  static_cast<unsigned long long>(total.warmup_requests), cfg.warmup_s);
    }
    std::printf("%s  %llu  (%.0f/s)\n", cfg.messages.empty() ? "ids     " : "messages",
                static_cast<unsigned long long>(total.ids), ips);
    PrintOutcome("", total);
    if (also_resp) {
      std::printf("also RESP %s (INCR %s, the same schedule):\n", cfg.also_resp_endpoint.c_str(),
                  cfg.key.c_str());
      std::printf("  requests  %llu  (%.0f/s)\n",
                  static_cast<unsigned long long>(also_resp->requests),
                  also_resp->requests / elapsed);
      PrintOutcome("  ", *also_resp);
    }
    if (client.known) {
      std::printf("client    %.2f s on a CPU, %.2f s runnable waiting for one (adds to latency)\n",
                  client.cpu_s, client.wait_s);
    }
  }
  if (cfg.subscribers > 0 && !cfg.json) {
    std::printf("pushes    %llu of %llu expected to %d %s, %llu errors\n",
                static_cast<unsigned long long>(pushes.pushes),
                static_cast<unsigned long long>(total.ids * cfg.subscribers), cfg.subscribers,
                cfg.sse_endpoint.empty() ? "subscribers" : "SSE streams",
                static_cast<unsigned long long>(pushes.errors));
    for (const auto& [k, v] : pushes.error_kinds) {
      std::printf("  %-40s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
    }
    std::printf(
        "push lat  p50 %.1f us  p99 %.1f us  p999 %.1f us  p9999 %.1f us  max %.1f us (send "
        "written to push read)\n",
        push_us(0.5), push_us(0.99), push_us(0.999), push_us(0.9999),
        pushes.latency.max() / 1000.0);
  }
}

}  // namespace seqd::bench
