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
  bool secret = false;  // never shown: --help shows no default, --print-config <redacted>
  // Set: the option may be given several times (each value is added); the
  // first value from a later source (file, environment, flags) calls it to
  // drop the earlier source's values.
  void (*reset)(Config&) = nullptr;
  // Set for a repeatable option: each value, as --print-config writes it,
  // one config line a value (show() joins them on one line, for --help).
  std::function<std::vector<std::string>(const Config&)> show_each;
};

// Every option, in --help order.
const std::vector<Option>& Options();

// The option named `name` (file key spelling); null if none.
const Option* FindOption(std::string_view name);

// Sets `o` from `value` and records `origin` in c.origins; errors start with
// `source` ("--max-step: ...").
Status Apply(Config& c, const Option& o, std::string_view value, const std::string& source,
             OptionOrigin origin);

// Reads the --config file into `c` (config_file.cc): `name = value` lines,
// blank lines and `#` comments, also after a value following whitespace.
Status ApplyFile(Config& c, const std::string& path);

// store_password_file → store_password (its first line). Errors name the
// file, never its content.
Status ReadStorePassword(Config& c);

// "--max-step" for "max_step".
std::string FlagName(std::string_view name);
// "SEQD_MAX_STEP" for "max_step".
std::string EnvName(std::string_view name);

}  // namespace seqd
