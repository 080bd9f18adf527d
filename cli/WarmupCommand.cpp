// `fusegen warmup SPEC --dims N=128,1024 [--arch sm_90] [--precision strict|tf32]
//  [--jobs 4] [--cache-dir D] [--remote-cache URL [--cache-key-file K]]`:
// compiles every fusion of SPEC for each binding into the disk cache, and the
// fleet's remote cache when there is one, without a GPU.
#ifdef FUSEGEN_HAVE_RUNTIME
#include "CommandLine.h"
#include "Commands.h"
#include "RuntimeCli.h"

#include "fusegen/Runtime.h"
#include "fusegen/Warmup.h"

#include <charconv>
#include <iostream>

namespace fusegen::cli {

int warmup_command(const std::vector<std::string>& args) {
  Result<CommandLine> parsed = parse_command_line(args, {{"dims", true, true},
                                                         {"arch", true, false},
                                                         {"precision", true, false},
                                                         {"jobs", true, false},
                                                         {"cache-dir", true, false},
                                                         {"remote-cache", true, false},
                                                         {"cache-key-file", true, false}});
  if (!parsed) {
    std::cerr << "fusegen warmup: error: " << parsed.error() << "\n";
    return kExitUsage;
  }
  const CommandLine& line = parsed.value();
  if (line.positional.size() != 1) {
    std::cerr << "fusegen warmup: error: expected one spec file (usage: fusegen warmup SPEC --dims N=128,1024 "
                 "[--arch sm_90] [--precision strict|tf32] [--jobs 4] [--cache-dir D] [--remote-cache URL] "
                 "[--cache-key-file K])\n";
    return kExitUsage;
  }
  Result<std::vector<DimBindings>> bindings =
      expand_dim_lists(line.values.count("dims") ? line.values.at("dims") : std::vector<std::string>{});
  Result<int> arch = parse_sm_arch(line.value("arch", "sm_90"));
  Result<std::optional<Precision>> precision = parse_precision(line.value("precision"));
  int jobs = 1;
  std::string jobs_text = line.value("jobs", "1");
  auto [end, ec] = std::from_chars(jobs_text.data(), jobs_text.data() + jobs_text.size(), jobs);
  std::string usage_error;
  if (!bindings)
    usage_error = bindings.error();
  else if (!arch)
    usage_error = arch.error();
  else if (!precision)
    usage_error = precision.error();
  else if (ec != std::errc() || end != jobs_text.data() + jobs_text.size() || jobs < 1 || jobs > 256)
    usage_error = "bad --jobs '" + jobs_text + "' (expected 1 to 256)";
  if (!usage_error.empty()) {
    std::cerr << "fusegen warmup: error: " << usage_error << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(line.positional[0], "", exit_code);
  if (!spec)
    return exit_code;
  std::vector<std::string> dim_names;
  for (const DimBindings& binding : bindings.value())
    for (const auto& [name, value] : binding)
      dim_names.push_back(name);
  if (!dims_are_known(*spec, dim_names, "warmup"))
    return kExitUsage;

  WarmupOptions options;
  options.arch = arch.value();
  options.precision = precision.value();
  options.jobs = jobs;
  options.cache_dir = line.value("cache-dir");
  options.remote_cache.url = line.value("remote-cache");
  options.remote_cache.key_file = line.value("cache-key-file");
  WarmupReport report;
  try {
    report = warmup(spec->module, spec->sources, bindings.value(), options);
  } catch (const RuntimeError& error) {
    std::cerr << "fusegen warmup: error: " << error.what() << "\n";
    return kExitSpecError;
  }
  std::cout << "warmup " << line.positional[0] << " for sm_" << options.arch << " (" << report.target << ") into "
            << report.cache_dir << "\n";
  for (const WarmupItem& item : report.items) {
    const std::string outcome = warmup_outcome_name(item.outcome);
    std::cout << "  " << outcome << std::string(outcome.size() < 10 ? 10 - outcome.size() : 1, ' ') << item.fusion
              << " " << dims_summary(item.dims) << "\n";
    if (item.outcome == WarmupOutcome::Failed || item.outcome == WarmupOutcome::NotStored)
      std::cerr << "fusegen warmup: error: " << item.fusion << " " << dims_summary(item.dims) << ": " << item.error
                << "\n";
  }
  // A deployment script reads the exit code: the cache is warm only if every
  // item is in it.
  size_t failed = report.count(WarmupOutcome::Failed);
  size_t not_stored = report.count(WarmupOutcome::NotStored);
  std::cout << report.count(WarmupOutcome::Compiled) << " compiled, " << report.count(WarmupOutcome::Cached)
            << " already cached, " << failed << " failed\n";
  if (!report.remote_cache.empty()) {
    size_t published = 0;
    for (const WarmupItem& item : report.items)
      published += item.published ? 1 : 0;
    std::cout << "remote cache " << report.remote_cache << ": " << report.count(WarmupOutcome::Fetched) << " fetched, "
              << published << " published"
              << (report.remote_failures ? ", " + std::to_string(report.remote_failures) + " failed operations" : "")
              << "\n";
  }
  if (not_stored)
    std::cerr << "fusegen warmup: error: " << not_stored << " of " << report.items.size()
              << " compiled but not stored in " << report.cache_dir << ": the cache is not warm for them\n";
  return failed || not_stored ? kExitSpecError : kExitOk;
}

} // namespace fusegen::cli
#endif // FUSEGEN_HAVE_RUNTIME
