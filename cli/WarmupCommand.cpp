// `fusegen warmup SPEC --dims N=128,1024 [--arch sm_90] [--precision strict|tf32]
//  [--jobs 4] [--cache-dir D] [--remote-cache URL [--cache-key-file K]]`:
// compiles every fusion of SPEC for each binding into the disk cache, and the
// fleet's remote cache when there is one, without a GPU.
#ifdef FUSEGEN_HAVE_RUNTIME
#include "Commands.h"
#include "OptionValues.h"
#include "RuntimeCli.h"

#include "fusegen/Runtime.h"
#include "fusegen/Warmup.h"

#include <charconv>
#include <iostream>

namespace fusegen::cli {

int warmup_command(const WarmupArgs& args) {
  if (args.specs.size() != 1) {
    std::cerr << "fusegen warmup: error: expected one spec file (usage: fusegen warmup SPEC --dims N=128,1024 "
                 "[--arch sm_90] [--precision strict|tf32] [--strict-product 3xtf32|fp16x3] [--jobs 4] [--cache-dir D] "
                 "[--remote-cache URL] "
                 "[--cache-key-file K])\n";
    return kExitUsage;
  }
  const std::string& path = args.specs[0];
  Result<std::vector<DimBindings>> bindings = expand_dim_lists(args.dims);
  Result<int> arch = parse_sm_arch(args.arch);
  Result<std::optional<Precision>> precision = parse_precision(args.precision);
  Result<std::optional<StrictProduct>> strict_product = parse_strict_product_option(args.strict_product);
  int jobs = 1;
  const std::string& jobs_text = args.jobs;
  auto [end, ec] = std::from_chars(jobs_text.data(), jobs_text.data() + jobs_text.size(), jobs);
  std::string usage_error;
  if (!bindings)
    usage_error = bindings.error();
  else if (!arch)
    usage_error = arch.error();
  else if (!precision)
    usage_error = precision.error();
  else if (!strict_product)
    usage_error = strict_product.error();
  else if (ec != std::errc() || end != jobs_text.data() + jobs_text.size() || jobs < 1 || jobs > 256)
    usage_error = "bad --jobs '" + jobs_text + "' (expected 1 to 256)";
  if (!usage_error.empty()) {
    std::cerr << "fusegen warmup: error: " << usage_error << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(path, "", exit_code);
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
  options.strict_product = strict_product.value();
  options.jobs = jobs;
  options.cache_dir = args.cache_dir;
  options.remote_cache.url = args.remote_cache;
  options.remote_cache.key_file = args.cache_key_file;
  WarmupReport report;
  try {
    report = warmup(spec->module, spec->sources, bindings.value(), options);
  } catch (const RuntimeError& error) {
    std::cerr << "fusegen warmup: error: " << error.what() << "\n";
    return kExitSpecError;
  }
  std::cout << "warmup " << path << " for sm_" << options.arch << " (" << report.target << ") into " << report.cache_dir
            << "\n";
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
