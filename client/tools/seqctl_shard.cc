// seqctl's store-group commands (docs/cluster.md, "Store groups"): shard
// status, shard move S --to GROUP [--undo] [--rate N], and shard rebalance
// --to GROUP --count N [--rate N], over the admin API
// (/admin/placement, /admin/placement/move).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "seqctl.h"
#include "tool_args.h"
#include "tool_flags.h"

namespace seqd::tools {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(200);

void PrintMover(const Json& m) {
  std::cout << "mover: " << (m.value("running", false) ? "running" : "idle") << ", shard "
            << m.value("shard", 0) << " " << m.value("from", "") << " -> " << m.value("to", "")
            << ", " << m.value("phase", "") << ", " << m.value("rows_copied", 0) << " rows copied";
  if (m.value("pause_ms", -1) >= 0) std::cout << ", pause " << m.value("pause_ms", 0) << " ms";
  if (!m.value("error", "").empty()) std::cout << ", error: " << m.value("error", "");
  std::cout << "\n";
}

int ShowPlacement(const Args& args, const Http& http) {
  const std::string body = http.Call("GET", "/admin/placement");
  if (args.json) {
    std::cout << body << "\n";
    return 0;
  }
  const Json j = ParseJson(body);
  std::cout << "placement version " << j.value("version", 0) << ", home group "
            << j.value("home", "") << "; every shard not listed is in the home group\n";
  std::vector<std::vector<std::string>> rows = {{"SHARD", "GROUP", "MOVE"}};
  for (const Json& s : j.value("placed", Json::array())) {
    const std::string state = s.value("move_state", "");
    rows.push_back({std::to_string(s.value("shard", 0)), s.value("group", ""),
                    state.empty() ? "-" : state + " (" + s.value("move_target", "") + ")"});
  }
  PrintTable(rows);
  PrintMover(j.value("mover", Json::object()));
  return 0;
}

// "placement version V: shard S in G[, copying to T]" from the placement
// answer `j`: where `shard` is in the version the answer carried.
void PrintShardPlacement(int64_t version, int64_t shard, const Json& j) {
  std::string where = j.value("home", "");
  std::string move;
  for (const Json& s : j.value("placed", Json::array())) {
    if (s.value("shard", -1) != shard) continue;
    where = s.value("group", "");
    if (!s.value("move_state", "").empty()) {
      move = ", " + s.value("move_state", "") + " (" + s.value("move_target", "") + ")";
    }
  }
  std::cout << "placement version " << version << ": shard " << shard << " in " << where << move
            << "\n";
}

// Starts the move and waits for this instance's mover to end it, showing
// the shard's placement each time an answer carries a newer version.
int MoveOne(const Http& http, const Json& request, bool quiet) {
  http.Call("POST", "/admin/placement/move", request.dump());
  int64_t shown = http.placement_version;
  for (;;) {
    std::this_thread::sleep_for(kPoll);
    const Json placement = ParseJson(http.Call("GET", "/admin/placement"));
    if (!quiet && http.placement_version > shown) {
      shown = http.placement_version;
      PrintShardPlacement(shown, request.value("shard", int64_t{0}), placement);
    }
    const Json m = placement.value("mover", Json::object());
    if (m.value("running", true)) continue;
    if (!quiet || m.value("phase", "") == "failed") PrintMover(m);
    if (m.value("phase", "") == "failed") {
      throw Failure{"the move stopped: " + m.value("error", "") +
                    " (run the same command again to finish it, or with --undo)"};
    }
    return 0;
  }
}

Json MoveRequest(const Args& args, int64_t shard) {
  Json req;
  req["shard"] = shard;
  if (args.msg.to) req["to"] = *args.msg.to;
  if (args.undo) req["undo"] = true;
  if (args.rate) req["rate"] = ParseNumber<int64_t>(*args.rate, "--rate", 0, INT64_MAX);
  return req;
}

// Moves --count shards not yet in --to onto it, one at a time, spread over
// the shard range.
int Rebalance(const Args& args, const Http& http) {
  if (!args.msg.to || !args.count) {
    throw UsageError{"usage: seqctl shard rebalance --to GROUP --count N [--rate ROWS_PER_S]"};
  }
  const int64_t count = ParseNumber<int64_t>(*args.count, "--count", 1, 65536);
  const int64_t shards = ParseJson(http.Call("GET", "/admin/cluster")).value("shards", 0);
  const Json placement = ParseJson(http.Call("GET", "/admin/placement"));
  std::set<int64_t> there;
  for (const Json& s : placement.value("placed", Json::array())) {
    if (s.value("group", "") == *args.msg.to) there.insert(s.value("shard", 0));
  }
  if (placement.value("home", "") == *args.msg.to) {
    throw UsageError{"rebalance moves shards onto a group other than the home group"};
  }
  int64_t moved = 0;
  const int64_t stride = std::max<int64_t>(1, shards / count);
  for (int64_t s = 0; s < shards && moved < count; s += stride) {
    if (there.count(s)) continue;
    std::cout << "moving shard " << s << " to " << *args.msg.to << "\n";
    MoveOne(http, MoveRequest(args, s), /*quiet=*/false);
    ++moved;
  }
  std::cout << moved << " shards moved\n";
  return 0;
}

}  // namespace

int ShardCommand(const Args& args, const Http& http) {
  if (args.positional.size() < 2) {
    throw UsageError{"usage: seqctl shard status | move SHARD --to GROUP | rebalance"};
  }
  const std::string& sub = args.positional[1];
  if (sub == "status") {
    Need(args, 1, 1, "shard status");
    return ShowPlacement(args, http);
  }
  if (sub == "rebalance") {
    Need(args, 1, 1, "shard rebalance --to GROUP --count N [--rate ROWS_PER_S]");
    return Rebalance(args, http);
  }
  if (sub == "move") {
    Need(args, 2, 2, "shard move SHARD (--to GROUP | --undo) [--rate ROWS_PER_S]");
    if (!args.msg.to && !args.undo) throw UsageError{"shard move needs --to GROUP or --undo"};
    const int64_t shard = ParseNumber<int64_t>(args.positional[2], "SHARD", 0, 65535);
    return MoveOne(http, MoveRequest(args, shard), /*quiet=*/false);
  }
  throw UsageError{"unknown shard command '" + sub + "' (status, move, rebalance)"};
}

}  // namespace seqd::tools
