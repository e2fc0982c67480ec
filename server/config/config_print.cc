// `seqd --print-config`: the effective configuration as a config file, each
// value with its source, secrets redacted.
#include <algorithm>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "server/config/config.h"
#include "server/config/config_options.h"

namespace seqd {

namespace {

constexpr std::string_view kRedacted = "<redacted>";

// A URL's password ("scheme://user:PASSWORD@host...") as <redacted>. As the
// store URL parser does, the last '@' ends the user info, so a password
// holding '@' or '/' is hidden whole.
std::string RedactUrlPassword(std::string_view value) {
  const size_t scheme = value.find("://");
  if (scheme == std::string_view::npos) return std::string(value);
  const size_t user_start = scheme + 3;
  const size_t at = value.rfind('@');
  if (at == std::string_view::npos || at < user_start) return std::string(value);
  const size_t colon = value.substr(user_start, at - user_start).find(':');
  if (colon == std::string_view::npos) return std::string(value);
  return std::string(value.substr(0, user_start + colon + 1)) + std::string(kRedacted) +
         std::string(value.substr(at));
}

// A config file would cut `value` at a '#' that follows a space or tab.
bool HasComment(std::string_view value) {
  for (size_t i = 1; i < value.size(); ++i) {
    if (value[i] == '#' && (value[i - 1] == ' ' || value[i - 1] == '\t')) return true;
  }
  return false;
}

std::string SourceText(const OptionOrigin* origin) {
  if (origin == nullptr) return "default";
  switch (origin->source) {
    case ConfigSource::kDefault:
      break;
    case ConfigSource::kFile:
      return "file " + origin->where;
    case ConfigSource::kEnvironment:
      return "environment " + origin->where;
    case ConfigSource::kFlag:
      return "flag " + origin->where;
  }
  return "default";
}

// The values `o` prints, one line each: a repeatable option's values (one
// empty line when it has none), else its one value.
std::vector<std::string> ShownValues(const Option& o, const Config& config) {
  if (!o.show_each) return {o.show(config)};
  std::vector<std::string> values = o.show_each(config);
  if (values.empty()) values.emplace_back();
  return values;
}

}  // namespace

std::string PrintConfig(const Config& config) {
  struct Line {
    bool commented;  // not valid in a config file: `config` itself, a redacted secret
    std::string key_value;
    std::string source;
  };
  std::vector<Line> lines;
  size_t width = 0;
  for (const Option& o : Options()) {
    auto it = config.origins.find(o.name);
    const OptionOrigin* origin = it == config.origins.end() ? nullptr : &it->second;
    for (std::string value : ShownValues(o, config)) {
      if (o.secret) {
        if (!value.empty()) value = kRedacted;
      } else {
        value = RedactUrlPassword(value);
      }
      const bool commented = std::string_view(o.name) == "config" ||
                             value.find(kRedacted) != std::string::npos || HasComment(value);
      lines.push_back({commented, std::string(o.name) + " = " + value, SourceText(origin)});
      width = std::max(width, lines.back().key_value.size() + (commented ? 2 : 0));
    }
  }
  width = std::min<size_t>(width, 48);
  std::ostringstream out;
  out << "# seqd " << SEQD_VERSION
      << " --print-config: the effective configuration, one option a line as\n"
         "# `name = value  # source` (a repeatable option: one line per value); the\n"
         "# source is default, file PATH:LINE, environment VARIABLE or flag --NAME.\n"
         "# Secrets show as <redacted>; lines that a config file cannot hold (config\n"
         "# itself, redacted values, values with \" #\") are commented out.\n";
  for (const Line& l : lines) {
    std::string text = l.commented ? "# " : "";
    text += l.key_value;
    if (text.size() < width) text.append(width - text.size(), ' ');
    out << text << "  # " << l.source << "\n";
  }
  return out.str();
}

}  // namespace seqd
