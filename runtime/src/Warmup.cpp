#include "fusegen/Warmup.h"

#include "CacheDir.h"
#include "KernelProvider.h"
#include "Nvrtc.h"

#include "fusegen/CacheAdmin.h"
#include "fusegen/IRPrinter.h"
#include "fusegen/Runtime.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <set>
#include <sstream>
#include <thread>

namespace fusegen {

const char* warmup_outcome_name(WarmupOutcome outcome) {
  switch (outcome) {
  case WarmupOutcome::Compiled: return "compiled";
  case WarmupOutcome::Cached: return "cached";
  case WarmupOutcome::NotStored:
    return "not stored";
  case WarmupOutcome::Failed: return "failed";
  case WarmupOutcome::Fetched:
    return "fetched";
  }
  return "?";
}

size_t WarmupReport::count(WarmupOutcome outcome) const {
  return static_cast<size_t>(
      std::count_if(items.begin(), items.end(), [&](const WarmupItem& item) { return item.outcome == outcome; }));
}

Result<std::vector<DimBindings>> expand_dim_lists(const std::vector<std::string>& lists) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
  for (const std::string& list : lists) {
    std::stringstream items(list);
    std::string item;
    while (std::getline(items, item, ',')) {
      std::string number = item;
      if (size_t eq = item.find('='); eq != std::string::npos) {
        std::string name = item.substr(0, eq);
        if (name.empty())
          return Error{"bad --dims entry '" + item + "' (expected NAME=VALUE[,VALUE...], e.g. N=128,1024)"};
        for (const auto& [known, values] : dims)
          if (known == name)
            return Error{"dim " + name + " given twice in --dims"};
        dims.push_back({name, {}});
        number = item.substr(eq + 1);
      } else if (dims.empty()) {
        return Error{"bad --dims entry '" + item + "' (expected NAME=VALUE[,VALUE...], e.g. N=128,1024)"};
      }
      int64_t value = 0;
      auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
      if (number.empty() || ec != std::errc() || end != number.data() + number.size() || value <= 0)
        return Error{"bad value '" + number + "' for dim " + dims.back().first + " (expected a positive integer)"};
      dims.back().second.push_back(value);
    }
  }
  std::vector<DimBindings> bindings = {{}};
  for (const auto& [name, values] : dims) {
    std::vector<DimBindings> next;
    for (const DimBindings& partial : bindings)
      for (int64_t value : values) {
        DimBindings b = partial;
        b[name] = value;
        next.push_back(std::move(b));
      }
    bindings = std::move(next);
  }
  return bindings;
}

WarmupReport warmup(const Module& module, const SourceManager& sources, const std::vector<DimBindings>& bindings,
                    const WarmupOptions& options) {
  CacheLocation where = cache_location(options.cache_dir);
  if (!where.enabled)
    throw RuntimeError(ErrorKind::Io, "no disk cache to warm up: " + where.reason);
  if (Status usable = runtime::prepare_cache_dir(where.dir, true); !usable)
    throw RuntimeError(ErrorKind::Io, "cannot use the cache directory: " + usable.error());
  Result<NvrtcTarget> target = runtime::choose_target(options.arch, runtime::nvrtc_info());
  if (!target)
    throw RuntimeError(ErrorKind::Compile, target.error());

  WarmupReport report;
  report.cache_dir = where.dir;
  report.target = runtime::target_name(target.value());

  // One item per (fusion, its own dims); a binding lacking a dim it needs is
  // a failed item.
  struct Job {
    const Fusion* fusion;
    std::string fingerprint;
  };
  std::vector<Job> jobs;
  std::set<std::pair<std::string, DimBindings>> seen;
  for (const Fusion& fusion : module.fusions) {
    std::string fp = fingerprint(fusion);
    for (const DimBindings& binding : bindings) {
      WarmupItem item;
      item.fusion = fusion.name;
      for (const std::string& symbol : fusion.symbols())
        if (auto it = binding.find(symbol); it != binding.end())
          item.dims[symbol] = it->second;
      if (!seen.insert({fusion.name, item.dims}).second)
        continue;
      if (Status bound = check_bindings(fusion, item.dims); !bound)
        item.error = bound.error();
      report.items.push_back(std::move(item));
      jobs.push_back({&fusion, fp});
    }
  }

  runtime::Warnings warnings(options.warning_sink);
  auto disk = std::make_shared<const runtime::DiskCache>(where.dir);
  std::shared_ptr<runtime::RemoteCache> remote = runtime::open_remote_cache(options.remote_cache, warnings);
  if (remote)
    report.remote_cache = remote->describe();
  runtime::KernelProvider provider(disk, warnings, remote);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < report.items.size(); i = next++) {
      WarmupItem& item = report.items[i];
      if (!item.error.empty())
        continue;
      runtime::KernelRequest request;
      request.fusion = jobs[i].fusion;
      request.fingerprint = jobs[i].fingerprint;
      request.dims = item.dims;
      request.precision = options.precision.value_or(jobs[i].fusion->precision);
      request.strict_product = options.strict_product;
      request.arch = options.arch;
      request.sources = &sources;
      try {
        runtime::ProvidedKernels kernels = provider.provide(request);
        // Warm-up fills the remote cache too, from a warm disk cache.
        if (kernels.from_disk && !kernels.from_remote)
          provider.share(kernels);
        item.published = kernels.published;
        item.outcome = kernels.from_remote ? WarmupOutcome::Fetched
                       : kernels.from_disk ? WarmupOutcome::Cached
                                           : WarmupOutcome::Compiled;
        if (!kernels.store_error.empty()) {
          item.outcome = WarmupOutcome::NotStored;
          item.error = kernels.store_error;
        }
      } catch (const RuntimeError& error) {
        item.error = error.what();
      } catch (const std::exception& error) {
        item.error = std::string("internal error: ") + error.what();
      }
    }
  };
  if (report.items.empty())
    return report;
  size_t threads = std::min(static_cast<size_t>(std::max(options.jobs, 1)), report.items.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& thread : pool)
    thread.join();
  if (remote)
    report.remote_failures = remote->failures();
  return report;
}

} // namespace fusegen
