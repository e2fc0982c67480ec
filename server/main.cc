// seqd: parses the configuration, builds the App (server/app.h) and runs it
// until SIGTERM/SIGINT; exits 0 after draining, 1 if it cannot start, 2 on a
// bad configuration.
#include <cstdio>

#include "seqd_git_commit.h"  // generated at build time (cmake/git_commit.cmake)
#include "server/app.h"
#include "server/base/log.h"
#include "server/base/malloc_tuning.h"
#include "server/config/config.h"

int main(int argc, char** argv) {
  auto config = seqd::LoadConfig(argc, argv, seqd::ProcessEnvironment());
  if (!config) {
    std::fprintf(stderr, "seqd: %s\n", config.error().message.c_str());
    return 2;
  }
  if (config->show_help) {
    std::fputs(seqd::ConfigHelp().c_str(), stdout);
    return 0;
  }
  if (config->show_help_markdown) {
    std::fputs(seqd::ConfigReferenceMarkdown().c_str(), stdout);
    return 0;
  }
  if (config->show_version) {
    std::printf("seqd %s (commit %s)\n", SEQD_VERSION, SEQD_GIT_COMMIT);
    return 0;
  }
  if (config->print_config) {
    std::fputs(seqd::PrintConfig(*config).c_str(), stdout);
    return 0;
  }
  seqd::TuneMallocForBursts();  // before App::Create starts any thread
  seqd::SetLogLevel(*seqd::ParseLogLevel(config->log_level));
  seqd::SetLogFormat(*seqd::ParseLogFormat(config->log_format));
  auto app = seqd::App::Create(*config);
  if (!app) {
    SEQD_LOG(kError) << app.error().message;
    return 1;
  }
  return (*app)->Run();
}
