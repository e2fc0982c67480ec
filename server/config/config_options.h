// The option table behind LoadConfig, --help and --help-markdown: private
// to server/config (config.cc parses with it, config_help.cc prints it).
//
// Thread safety: Options() is built once and immutable after.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "server/config/config.h"

namespace seqd {

struct Option {
  const char* name;  // file key; flag is --name with '_' → '-'
  const char* help;
  std::function<Status(Config&, std::string_view)> set;
  std::function<std::string(const Config&)> show;
  bool bare_means_on = false;  // "--name" alone (no value follows) means "on"
};

// Every option, in --help order.
const std::vector<Option>& Options();

// "--max-step" for "max_step".
std::string FlagName(std::string_view name);
// "SEQD_MAX_STEP" for "max_step".
std::string EnvName(std::string_view name);

}  // namespace seqd
