// The --config file and the store password file: the two files LoadConfig
// reads (config.cc holds the option table and the order of the sources).
#include <fstream>
#include <string>
#include <string_view>

#include "server/config/config.h"
#include "server/config/config_options.h"

namespace seqd {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// `text` up to a comment: a '#' at the start or after a space or tab.
std::string_view WithoutComment(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      return text.substr(0, i);
    }
  }
  return text;
}

}  // namespace

Status ApplyFile(Config& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorCode::kInvalidArgument, "--config: cannot read '" + path + "'");
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    std::string_view text = Trim(WithoutComment(line));
    if (text.empty()) continue;
    const std::string where = path + ":" + std::to_string(lineno);
    size_t eq = text.find('=');
    if (eq == std::string_view::npos) {
      return MakeError(ErrorCode::kInvalidArgument, where + ": expected 'name = value'");
    }
    std::string name(Trim(text.substr(0, eq)));
    const Option* o = FindOption(name);
    if (!o || name == "config") {
      return MakeError(ErrorCode::kInvalidArgument, where + ": unknown option '" + name + "'");
    }
    if (auto s = Apply(c, *o, Trim(text.substr(eq + 1)), where + ": " + name,
                       {ConfigSource::kFile, where});
        !s) {
      return s;
    }
  }
  return OkStatus();
}

Status ReadStorePassword(Config& c) {
  if (c.store_password_file.empty()) return OkStatus();
  if (!c.store_password.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "store_password and store_password_file are both set; give one");
  }
  std::ifstream in(c.store_password_file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "store_password_file: cannot read '" + c.store_password_file + "'");
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "store_password_file: '" + c.store_password_file +
                                                      "' has an empty first line");
  }
  c.store_password = std::move(line);
  c.origins["store_password"] = {ConfigSource::kFile, c.store_password_file};
  return OkStatus();
}

}  // namespace seqd
