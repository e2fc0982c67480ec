// ApiRouter: store groups' placement and shard moves (docs/cluster.md,
// "Store groups"): GET /admin/placement, POST /admin/placement/move.
#include <string>

#include "server/http/api_call.h"
#include "server/http/api_router.h"
#include "server/http/http_util.h"
#include "server/service/placement_api.h"
#include "server/service/services.h"

namespace seqd {
namespace {

seqd::Json MoverJson(const MoverStatus& m) {
  return {{"running", m.running},
          {"shard", m.shard},
          {"from", m.from},
          {"to", m.to},
          {"phase", m.phase},
          {"error", m.error},
          {"rows_copied", m.rows_copied},
          {"statements", m.statements},
          {"pause_ms", m.pause_ms},
          {"moves_done", m.moves_done},
          {"moves_failed", m.moves_failed}};
}

}  // namespace

void ApiRouter::HandlePlacement(const std::shared_ptr<Call>& call) {
  const PlacementApi* api = services_.placement;
  call->Reply([&] {
    if (!api) {
      return call->ErrorJson(http::status::not_found, "not_found",
                             "this instance has no store groups (see --store-group)");
    }
    const PlacementView view = api->View();
    seqd::Json shards = seqd::Json::array();
    for (const PlacementRow& row : view.map->rows) {
      shards.push_back({{"shard", row.shard},
                        {"group", row.group},
                        {"move_target", row.move_target},
                        {"move_state", row.move_state}});
    }
    seqd::Json j;
    j["groups"] = view.groups;
    j["home"] = view.groups.front();
    j["version"] = view.map->version;
    j["placed"] = std::move(shards);
    j["mover"] = MoverJson(view.mover);
    return call->JsonResponse(http::status::ok, j);
  });
}

void ApiRouter::HandleMoveShard(const std::shared_ptr<Call>& call) {
  PlacementApi* api = services_.placement;
  if (!api) {
    return call->Finish(call->ErrorJson(http::status::not_found, "not_found",
                                        "this instance has no store groups (see --store-group)"));
  }
  Result<nlohmann::json> body = ParseObject(call->req.body);
  if (!body) return call->Finish(call->ErrorJson(body.error()));
  MoveRequest request;
  auto shard = body->find("shard");
  std::optional<int64_t> number = shard == body->end() ? std::nullopt : IntField(*shard);
  if (!number || *number < 0 || *number > UINT32_MAX) {
    return call->Finish(call->ErrorJson(FieldError("shard", "must be a shard number")));
  }
  request.shard = static_cast<uint32_t>(*number);
  if (auto it = body->find("undo"); it != body->end()) {
    if (!it->is_boolean()) {
      return call->Finish(call->ErrorJson(FieldError("undo", "must be true or false")));
    }
    request.undo = it->get<bool>();
  }
  if (auto it = body->find("to"); it != body->end()) {
    if (!it->is_string())
      return call->Finish(call->ErrorJson(FieldError("to", "must be a string")));
    request.to = it->get<std::string>();
  }
  if (request.to.empty() && !request.undo) {
    return call->Finish(call->ErrorJson(FieldError("to", "is required (or undo)")));
  }
  if (auto it = body->find("rate"); it != body->end()) {
    std::optional<int64_t> rate = IntField(*it);
    if (!rate || *rate < 0) {
      return call->Finish(call->ErrorJson(FieldError("rate", "must be an integer >= 0")));
    }
    request.rate = *rate;
  }
  const Status started = api->StartMove(request);
  call->access->AuditMutation("shard_move", std::to_string(request.shard), started.ok(), "",
                              request.undo ? "undo" : "to " + request.to);
  call->Reply([&] {
    if (!started) return call->ErrorJson(started.error());
    return call->JsonResponse(http::status::accepted, MoverJson(api->View().mover));
  });
}

}  // namespace seqd
