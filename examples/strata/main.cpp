// strata: the example command-line tool over libstrata's public API.
#include <fmt/format.h>

#include <cstdio>

#include "common.h"

int main(int argc, char** argv) {
  CLI::App app{"strata: Mixture-of-Experts inference beyond GPU memory"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("strata ") + strata_version_string());
  cli::add_run(app);
  cli::add_bench(app);
  cli::add_eval(app);
  cli::add_tokenize(app);
  cli::add_tools(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const strata::Error& e) {
    fmt::print(stderr, "strata: error: {} ({})\n", e.what(), strata_status_name(e.status()));
    return e.status() == STRATA_ABORTED ? 130 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
