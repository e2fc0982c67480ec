// ApiRouter: Leaf's monitor routes, GET /cache and GET /db, answered as JSON
// in the field names of Leaf's LeafMonitorController (which renders the same
// objects into its own HTML pages), so what reads Leaf's monitor data finds
// it here under the same names:
//
//   /cache  {"<key>": {"initOk", "key", "pos", "nextReady",
//                      "value0", "max0", "step0", "value1", "max1", "step1"}}
//           the keys held in memory (Leaf's SegmentBufferView). Segment 0 is
//           always the one being served (pos is 0) and segment 1 the next;
//           value is the next ID to hand out and max one past the last ID,
//           as in Leaf's Segment; a segment not loaded is all zeros.
//   /db     [{"key", "maxId", "step", "updateTime"}]  leaf_alloc rows
//           (Leaf's LeafAlloc); updateTime as "YYYY-MM-DD HH:MM:SS", UTC.
//
// Leaf lists everything; seqd answers at most ?limit= keys (1000 by
// default, the most allowed) greater than ?after=, sorted by key: a monitor
// with more keys asks again after the last key it got. Reserved keys
// (KeyIsReserved) are never shown: the allocator never holds them and
// KeyAdmin never lists them. Both need the admin scope.
#include <ctime>
#include <string>
#include <vector>

#include "server/http/api_call.h"
#include "server/service/id_api.h"
#include "server/service/key_admin_api.h"
#include "server/service/services.h"

namespace seqd {
namespace {

// One buffer as Leaf's Segment shows it: value, max (exclusive), step.
void SegmentFields(Json& j, char index, const BufferSnapshot& b) {
  const bool loaded = b.step > 0;
  j[std::string("value") + index] = loaded ? b.next : 0;
  j[std::string("max") + index] = loaded ? b.last + 1 : 0;
  j[std::string("step") + index] = b.step;
}

Json SegmentBufferView(const KeySnapshot& s) {
  Json j;
  j["initOk"] = s.current.step > 0 || s.next.step > 0;
  j["key"] = s.key;
  j["pos"] = 0;
  j["nextReady"] = s.next.ready;
  SegmentFields(j, '0', s.current);
  SegmentFields(j, '1', s.next);
  return j;
}

std::string UtcDateTime(int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return std::string(text, n);
}

Json LeafAlloc(const KeyRow& row) {
  Json j;
  j["key"] = row.key;
  j["maxId"] = row.max_id;
  j["step"] = row.step;
  j["updateTime"] = UtcDateTime(row.update_time_ms);
  return j;
}

}  // namespace

void ApiRouter::HandleLeafCache(const std::shared_ptr<Call>& call) {
  std::optional<Page> page = PageParams(*call, kMaxListLimit);
  if (!page) return;
  call->Reply([&] {
    Json map = Json::object();
    for (const KeySnapshot& s : services_.ids.Snapshot(page->after, page->limit)) {
      map[s.key] = SegmentBufferView(s);
    }
    return call->JsonResponse(http::status::ok, map);
  });
}

void ApiRouter::HandleLeafDb(const std::shared_ptr<Call>& call) {
  std::optional<Page> page = PageParams(*call, kMaxListLimit);
  if (!page) return;
  services_.keys.ListKeys(std::move(page->after), page->limit,
                          [call](Result<std::vector<KeyRow>> rows) {
                            call->Reply([&]() -> Response {
                              if (!rows) return call->ErrorJson(rows.error());
                              Json list = Json::array();
                              for (const KeyRow& row : *rows) list.push_back(LeafAlloc(row));
                              return call->JsonResponse(http::status::ok, list);
                            });
                          });
}

}  // namespace seqd
