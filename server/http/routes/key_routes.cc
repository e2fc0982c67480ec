// ApiRouter: the leaf_alloc rows, /admin/keys (list, get, create, step) and
// /admin/cache.
#include <string>
#include <vector>

#include "server/http/api_call.h"
#include "server/service/id_api.h"
#include "server/service/key_admin_api.h"
#include "server/service/services.h"

namespace seqd {
namespace {

Json BufferJson(const BufferSnapshot& b) {
  Json j;
  j["ready"] = b.ready;
  j["first"] = b.first;
  j["next"] = b.next;
  j["last"] = b.last;
  j["step"] = b.step;
  j["remaining"] = b.ready ? std::max<int64_t>(0, b.last - b.next + 1) : 0;
  return j;
}

Json SnapshotJson(const KeySnapshot& s) {
  Json j;
  j["key"] = s.key;
  j["auto_created"] = s.auto_created;
  j["loading"] = s.loading;
  j["step"] = s.step;
  j["table_step"] = s.table_step;
  j["parked"] = s.parked;
  j["reservations"] = s.reservations;
  j["idle_ms"] = s.idle_ms;
  j["last_error"] = s.last_error ? Json(*s.last_error) : Json(nullptr);
  j["current"] = BufferJson(s.current);
  j["next"] = BufferJson(s.next);
  return j;
}

Json RowJson(const KeyRow& row) {
  Json j;
  j["key"] = row.key;
  j["max_id"] = row.max_id;
  j["step"] = row.step;
  j["description"] = row.description;
  j["update_time_ms"] = row.update_time_ms;
  return j;
}

Json RowWithCacheJson(const KeyRow& row, const IdApi& allocator) {
  Json j = RowJson(row);
  std::optional<KeySnapshot> snap = allocator.SnapshotKey(row.key);
  j["cache"] = snap ? SnapshotJson(*snap) : Json(nullptr);
  return j;
}

}  // namespace

std::optional<Page> PageParams(ApiRouter::Call& call, size_t default_limit) {
  Page page;
  page.limit = default_limit;
  if (auto raw = call.RawParam("after")) {
    std::optional<std::string> decoded = PercentDecode(*raw, true);
    if (!decoded) {
      call.Finish(call.ErrorJson(http::status::bad_request, "invalid_argument",
                                 "after has a malformed percent-escape"));
      return std::nullopt;
    }
    page.after = std::move(*decoded);
  }
  if (auto raw = call.RawParam("limit")) {
    std::optional<std::string> decoded = PercentDecode(*raw, true);
    std::optional<int64_t> n =
        decoded ? ParseBoundedInt(*decoded, 1, static_cast<int64_t>(kMaxListLimit)) : std::nullopt;
    if (!n) {
      call.Finish(
          call.ErrorJson(http::status::bad_request, "invalid_argument",
                         "limit must be an integer in [1, " + std::to_string(kMaxListLimit) + "]"));
      return std::nullopt;
    }
    page.limit = static_cast<size_t>(*n);
  }
  return page;
}

void ApiRouter::HandleListKeys(const std::shared_ptr<Call>& call) {
  std::optional<Page> page = PageParams(*call);
  if (!page) return;
  const size_t limit = page->limit;
  services_.keys.ListKeys(
      std::move(page->after), limit, [this, call, limit](Result<std::vector<KeyRow>> rows) {
        call->Reply([&]() -> Response {
          if (!rows) return call->ErrorJson(rows.error());
          seqd::Json keys = seqd::Json::array();
          for (const KeyRow& row : *rows) {
            keys.push_back(RowWithCacheJson(row, services_.ids));
          }
          seqd::Json j;
          j["keys"] = std::move(keys);
          j["next_after"] = rows->size() == limit && !rows->empty() ? seqd::Json(rows->back().key)
                                                                    : seqd::Json(nullptr);
          return call->JsonResponse(http::status::ok, j);
        });
      });
}

void ApiRouter::HandleGetKey(const std::shared_ptr<Call>& call, std::string key) {
  services_.keys.GetKey(std::move(key), [this, call](Result<KeyRow> row) {
    call->Reply([&]() -> Response {
      if (!row) return call->ErrorJson(row.error());
      return call->JsonResponse(http::status::ok, RowWithCacheJson(*row, services_.ids));
    });
  });
}

void ApiRouter::HandleCreateKey(const std::shared_ptr<Call>& call) {
  Result<nlohmann::json> body = ParseObject(call->req.body);
  if (!body) return call->Finish(call->ErrorJson(body.error()));
  const nlohmann::json& j = *body;

  auto key_it = j.find("key");
  if (key_it == j.end()) return call->Finish(call->ErrorJson(FieldError("key", "is required")));
  if (!key_it->is_string()) {
    return call->Finish(call->ErrorJson(FieldError("key", "must be a string")));
  }
  auto step_it = j.find("step");
  if (step_it == j.end()) return call->Finish(call->ErrorJson(FieldError("step", "is required")));
  std::optional<int64_t> step = IntField(*step_it);
  if (!step) return call->Finish(call->ErrorJson(FieldError("step", "must be an integer")));
  std::string description;
  if (auto it = j.find("description"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) {
      return call->Finish(call->ErrorJson(FieldError("description", "must be a string")));
    }
    description = it->get<std::string>();
  }

  const std::string key = key_it->get<std::string>();
  services_.keys.CreateKey(
      key, *step, std::move(description), [call, key, step = *step](Result<KeyRow> row) {
        call->access->AuditMutation("key_create", key, row.ok(), "",
                                    "step " + std::to_string(step));
        call->Reply([&]() -> Response {
          if (!row) return call->ErrorJson(row.error());
          Response res = call->JsonResponse(http::status::created, RowJson(*row));
          // Keys use only characters a path segment may hold.
          res.set(http::field::location, "/admin/keys/" + PercentEncode(row->key));
          return res;
        });
      });
}

void ApiRouter::HandleSetStep(const std::shared_ptr<Call>& call, std::string key) {
  Result<nlohmann::json> body = ParseObject(call->req.body);
  if (!body) return call->Finish(call->ErrorJson(body.error()));
  auto step_it = body->find("step");
  if (step_it == body->end()) {
    return call->Finish(call->ErrorJson(FieldError("step", "is required")));
  }
  std::optional<int64_t> step = IntField(*step_it);
  if (!step) return call->Finish(call->ErrorJson(FieldError("step", "must be an integer")));

  // The step before, for the audit line (read just before the change).
  services_.keys.GetKey(key, [this, call, key, step = *step](Result<KeyRow> before) {
    std::string old_step = before ? "step " + std::to_string(before->step) : "";
    services_.keys.SetStep(key, step, [call, key, step, old_step](Result<KeyRow> row) {
      call->access->AuditMutation("key_step", key, row.ok(), old_step,
                                  "step " + std::to_string(step));
      call->Reply([&]() -> Response {
        if (!row) return call->ErrorJson(row.error());
        return call->JsonResponse(http::status::ok, RowJson(*row));
      });
    });
  });
}

void ApiRouter::HandleCache(const std::shared_ptr<Call>& call) {
  std::optional<Page> page = PageParams(*call);
  if (!page) return;
  call->Reply([&] {
    const std::vector<KeySnapshot> snaps = services_.ids.Snapshot(page->after, page->limit);
    seqd::Json keys = seqd::Json::array();
    for (const KeySnapshot& s : snaps) keys.push_back(SnapshotJson(s));
    seqd::Json j;
    j["keys"] = std::move(keys);
    j["next_after"] =
        snaps.size() == page->limit ? seqd::Json(snaps.back().key) : seqd::Json(nullptr);
    return call->JsonResponse(http::status::ok, j);
  });
}

}  // namespace seqd
