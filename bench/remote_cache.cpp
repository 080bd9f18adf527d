// What the remote kernel cache costs and saves, on one host
// (bench/remote_cache.sh starts the redis-server and the fleet key):
//
//   fill       the KernelBench seed specs (specs/kernelbench/warmup.manifest,
//              the first batch size of each) compiled into the store
//   fresh      Function::prepare as the first call of a fresh process with an
//              empty disk cache: the kernels come from the store (connect,
//              fetch, check the signature, decode, write to disk, module
//              load: with the fake driver the module load is not a real one)
//   dead       what a process pays the store on a local miss for M = 8 keys
//              (fetch, claim, publish, as the kernel provider asks) when the
//              store refuses connections, and when it is paused (SIGSTOP:
//              connections accepted, nothing answered), in a fresh child
//
// Medians of --repeat fresh processes, in milliseconds.
//
//   fusegen_bench_remote_cache --remote URL --key-file K --server-pid PID [--repeat N] [--driver auto|real|fake]
#include "BenchDriver.h"
#include "Manifest.h"

#include "CacheDir.h"
#include "DiskCache.h"
#include "KernelProvider.h"
#include "RemoteCache.h"
#include "SingleFlight.h"

#include "fusegen/Frontend.h"
#include "fusegen/IRPrinter.h"
#include "fusegen/Runtime.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0 : samples[samples.size() / 2];
}

using fusegen::bench::manifest_items;
using Item = fusegen::bench::ManifestItem;

fs::path fresh_dir(const std::string& what) {
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() /
                 ("fusegen-bench-remote-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all);
  return dir;
}

// A child's run: prepare with an empty disk cache, kernels from the store.
int fresh_prepare(const std::string& spec, const std::string& dim, int64_t value, const std::string& url,
                  const std::string& key_file) {
  fs::path dir = fresh_dir("fresh");
  double ms = 0;
  fusegen::Stats stats;
  {
    fusegen::RuntimeOptions options;
    options.cache_dir = dir.string();
    options.remote_cache.url = url;
    options.remote_cache.key_file = key_file;
    fusegen::Runtime rt(0, options);
    fusegen::Program program = rt.load_file(spec);
    fusegen::Function f = program.function(program.function_names().at(0));
    rt.arch();
    rt.synchronize(); // context creation is not cache loading
    Clock::time_point start = Clock::now();
    f.prepare({{dim, value}});
    ms = ms_since(start);
    stats = rt.stats();
  }
  fs::remove_all(dir);
  std::printf("%.3f %llu %llu\n", ms, static_cast<unsigned long long>(stats.remote_loads),
              static_cast<unsigned long long>(stats.compiles));
  return 0;
}

// A child's run: the store's part of M local misses against a failing store.
int dead_store(const std::string& url, const std::string& key_file, int keys) {
  fusegen::runtime::Warnings warnings([](const std::string&) {});
  fusegen::RemoteCacheOptions options;
  options.url = url;
  options.key_file = key_file;
  std::shared_ptr<fusegen::runtime::RemoteCache> remote = fusegen::runtime::open_remote_cache(options, warnings);
  if (!remote)
    return 1;
  fusegen::runtime::CacheEntry entry;
  entry.image.assign(300 << 10, 'x'); // a typical image's size
  Clock::time_point start = Clock::now();
  for (int i = 0; i < keys; ++i) {
    fusegen::runtime::CacheKey key;
    key.fusion = "bench_" + std::to_string(i);
    fusegen::runtime::FleetAnswer answer = fusegen::runtime::fetch_or_claim(*remote, key);
    entry.key_material = key.material();
    remote->publish(key, entry);
  }
  std::printf("%.3f %llu\n", ms_since(start), static_cast<unsigned long long>(remote->failures()));
  return 0;
}

// Runs this program again with `args`; its first line.
std::string child_line(const std::string& self, const std::string& args) {
  std::string out;
  if (FILE* pipe = ::popen(("'" + self + "' " + args).c_str(), "r")) {
    char line[256] = {};
    if (std::fgets(line, sizeof line, pipe))
      out = line;
    ::pclose(pipe);
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::string mode = "auto", url, key_file;
  int repeat = 9;
  pid_t server = 0;
  std::vector<std::string> fresh;
  bool dead = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--driver" && i + 1 < argc)
      mode = argv[++i];
    else if (arg == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--remote" && i + 1 < argc)
      url = argv[++i];
    else if (arg == "--key-file" && i + 1 < argc)
      key_file = argv[++i];
    else if (arg == "--server-pid" && i + 1 < argc)
      server = static_cast<pid_t>(std::atoi(argv[++i]));
    else if (arg == "--fresh" && i + 3 < argc) // internal: SPEC DIM VALUE
      fresh = {argv[i + 1], argv[i + 2], argv[i + 3]}, i += 3;
    else if (arg == "--dead") // internal
      dead = true;
    else {
      std::fprintf(stderr,
                   "usage: %s --remote URL --key-file K --server-pid PID [--repeat N] [--driver auto|real|fake]\n",
                   argv[0]);
      return 2;
    }
  }
  if (url.empty() || key_file.empty()) {
    std::fprintf(stderr, "%s: --remote and --key-file are required (bench/remote_cache.sh gives them)\n", argv[0]);
    return 2;
  }
  try {
    if (dead)
      return dead_store(url, key_file, 8);
    fusegen::bench::Driver driver = fusegen::bench::choose_driver(mode);
    if (!fresh.empty())
      return fresh_prepare(fresh[0], fresh[1], std::stoll(fresh[2]), url, key_file);
    const std::string common = "--driver " + std::string(driver.fake ? "fake" : "real") + " --remote '" + url +
                               "' --key-file '" + key_file + "'";
    std::printf("fusegen %s remote cache, driver: %s\n", FUSEGEN_VERSION, driver.description.c_str());
    std::printf("store %s; medians of %d fresh processes, ms\n", url.c_str(), repeat);

    // Fill the store (compiling, unless it already holds them).
    fusegen::RuntimeOptions no_cache;
    no_cache.disk_cache = false;
    const int arch = fusegen::Runtime(0, no_cache).arch();
    fs::path fill_dir = fresh_dir("fill");
    {
      fusegen::runtime::Warnings warnings(nullptr);
      fusegen::RemoteCacheOptions options;
      options.url = url;
      options.key_file = key_file;
      auto remote = fusegen::runtime::open_remote_cache(options, warnings);
      auto disk = std::make_shared<const fusegen::runtime::DiskCache>(fill_dir.string());
      fusegen::runtime::KernelProvider provider(disk, warnings, remote);
      std::vector<fusegen::runtime::ProvidedKernels> filled;
      Clock::time_point start = Clock::now();
      for (const Item& item : manifest_items()) {
        fusegen::SourceManager sources;
        std::ifstream in(item.spec);
        std::stringstream text;
        text << in.rdbuf();
        fusegen::Diagnostics diags;
        std::optional<fusegen::Module> module =
            fusegen::compile_spec(sources, sources.add_buffer(item.spec, text.str()), diags);
        if (!module)
          throw std::runtime_error(diags.render(sources));
        const fusegen::Fusion& fusion = module->fusions.at(0);
        fusegen::runtime::KernelRequest request;
        request.fusion = &fusion;
        request.fingerprint = fusegen::fingerprint(fusion);
        request.dims = {{item.dim, item.value}};
        request.precision = fusion.precision;
        request.arch = arch;
        request.sources = &sources;
        filled.push_back(provider.provide(request));
      }
      std::printf("fill: %llu compiled, %llu published in %.0f ms\n",
                  static_cast<unsigned long long>(provider.counters().compiles.load()),
                  static_cast<unsigned long long>(provider.counters().remote_writes.load()), ms_since(start));
      // Where a fetch's time goes, in this (warm) process: the store's round
      // trip with the signature check and decoding, and the disk cache's
      // write (fsync of the file and the directory).
      std::vector<double> fetch_ms, store_ms, sizes;
      for (int r = 0; r < repeat; ++r)
        for (const fusegen::runtime::ProvidedKernels& kernels : filled) {
          Clock::time_point begin = Clock::now();
          fusegen::runtime::RemoteCache::Fetched fetched = remote->fetch(kernels.key);
          fetch_ms.push_back(ms_since(begin));
          if (fetched.status != fusegen::runtime::RemoteCache::Lookup::Hit)
            throw std::runtime_error("the store lost an entry: " + fetched.problem);
          begin = Clock::now();
          (void)disk->store(kernels.key, kernels.entry);
          store_ms.push_back(ms_since(begin));
          sizes.push_back(static_cast<double>(kernels.entry.image.size()) / 1024.0);
        }
      std::printf("parts, median per fusion in a warm process: fetch + verify + decode %.3f ms, disk cache write "
                  "%.3f ms (images: median %.0f KiB)\n",
                  median(fetch_ms), median(store_ms), median(sizes));
    }
    fs::remove_all(fill_dir);

    std::printf("%-58s %10s\n", "fresh process, prepare from the store", "ms");
    std::vector<double> all;
    for (const Item& item : manifest_items()) {
      std::vector<double> samples;
      bool all_remote = true;
      for (int r = 0; r < repeat; ++r) {
        std::string line =
            child_line(argv[0], common + " --fresh '" + item.spec + "' " + item.dim + " " + std::to_string(item.value));
        double ms = 0;
        unsigned long long loads = 0, compiles = 0;
        if (std::sscanf(line.c_str(), "%lf %llu %llu", &ms, &loads, &compiles) != 3)
          throw std::runtime_error("a fresh process failed: " + line);
        all_remote = all_remote && loads == 1 && compiles == 0;
        samples.push_back(ms);
        all.push_back(ms);
      }
      std::string name = fs::path(item.spec).parent_path().filename().string() + "/" +
                         fs::path(item.spec).filename().string() + " " + item.dim + "=" + std::to_string(item.value);
      std::printf("%-58s %10.3f%s\n", name.c_str(), median(samples), all_remote ? "" : "  (not all from the store!)");
    }
    std::printf("%-58s %10.3f\n", "median over every fusion and process", median(all));

    // A dead store: refused connections (a port nothing listens on), then
    // the benchmark's own server paused.
    std::vector<double> refused, paused;
    unsigned long long refused_failures = 0, paused_failures = 0;
    const std::string dead_common = "--key-file '" + key_file + "' --dead";
    for (int r = 0; r < repeat; ++r) {
      double ms = 0;
      unsigned long long failures = 0;
      std::string line = child_line(argv[0], "--remote redis://127.0.0.1:1 " + dead_common);
      if (std::sscanf(line.c_str(), "%lf %llu", &ms, &failures) == 2) {
        refused.push_back(ms);
        refused_failures = std::max(refused_failures, failures);
      }
      if (server > 0) {
        ::kill(server, SIGSTOP);
        line = child_line(argv[0], "--remote '" + url + "' " + dead_common);
        ::kill(server, SIGCONT);
        if (std::sscanf(line.c_str(), "%lf %llu", &ms, &failures) == 2) {
          paused.push_back(ms);
          paused_failures = std::max(paused_failures, failures);
        }
      }
    }
    std::printf("dead store, 8 local misses in a fresh process (fetch, claim, publish each):\n");
    std::printf("  refused connections: %.3f ms median (at most %llu failed operation%s)\n", median(refused),
                refused_failures, refused_failures == 1 ? "" : "s");
    if (!paused.empty())
      std::printf("  paused (SIGSTOP), default 25 ms timeout: %.3f ms median (at most %llu failed operation%s)\n",
                  median(paused), paused_failures, paused_failures == 1 ? "" : "s");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
