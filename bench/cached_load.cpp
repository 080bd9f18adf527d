// Where the time of a cached load goes: for the KernelBench seed specs
// (specs/kernelbench/warmup.manifest, the first batch size of each), the
// kernels are put in a disk cache first, then timed:
//
//   specialize   specialize_or_throw at the dims
//   generate     generate_unit: specialize, plan, generate CUDA, launch plan
//   disk hit     KernelProvider::provide on a fresh provider (what a new
//                process pays to find the kernels on disk)
//   prepare      Function::prepare on a fresh Runtime whose device is open
//                (disk hit plus module load: with the fake driver the module
//                load is not a real one)
//   fresh        prepare as the first call of a fresh process (a child)
//
// Medians of --repeat runs, in milliseconds. NVRTC's own query (nvrtc_info,
// once per process) is timed first.
//
//   fusegen_bench_cached_load [--driver auto|real|fake] [--repeat N] [--cache-dir DIR]
#include "BenchDriver.h"
#include "Manifest.h"

#include "CacheDir.h"
#include "DiskCache.h"
#include "Generate.h"
#include "KernelProvider.h"
#include "Nvrtc.h"

#include "fusegen/Frontend.h"
#include "fusegen/IRPrinter.h"
#include "fusegen/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median_ms(int repeat, const std::function<void()>& run) {
  std::vector<double> samples;
  for (int i = 0; i < repeat; ++i) {
    Clock::time_point start = Clock::now();
    run();
    samples.push_back(ms_since(start));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The median of what `run` measured itself.
double median_of(int repeat, const std::function<double()>& run) {
  std::vector<double> samples;
  for (int i = 0; i < repeat; ++i)
    samples.push_back(run());
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

using fusegen::bench::manifest_items;
using Item = fusegen::bench::ManifestItem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Spec {
  fusegen::SourceManager sources;
  fusegen::Module module;
};

std::unique_ptr<Spec> load(const std::string& path) {
  auto spec = std::make_unique<Spec>();
  uint32_t file = spec->sources.add_buffer(path, read_file(path));
  fusegen::Diagnostics diags;
  std::optional<fusegen::Module> module = fusegen::compile_spec(spec->sources, file, diags);
  if (!module)
    throw std::runtime_error(diags.render(spec->sources));
  spec->module = std::move(*module);
  return spec;
}

// The child's part of the "fresh" column: prepare as a new process's first.
int fresh_prepare(const std::string& path, const std::string& dim, int64_t value, const std::string& cache_dir) {
  fusegen::RuntimeOptions options;
  options.cache_dir = cache_dir;
  fusegen::Runtime rt(0, options);
  fusegen::Program program = rt.load_file(path);
  fusegen::Function f = program.function(program.function_names().at(0));
  rt.arch();        // the device is opened first, as bench/kernelbench.py does
  rt.synchronize(); // and its context made: context creation is not cache loading
  Clock::time_point start = Clock::now();
  f.prepare({{dim, value}});
  double ms = ms_since(start);
  fusegen::Stats stats = rt.stats();
  std::printf("%.3f %llu %llu %llu\n", ms, static_cast<unsigned long long>(stats.generations),
              static_cast<unsigned long long>(stats.compiles), static_cast<unsigned long long>(stats.disk_loads));
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::string mode = "auto", cache_dir;
  int repeat = 5;
  std::vector<std::string> fresh;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--driver" && i + 1 < argc)
      mode = argv[++i];
    else if (arg == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--cache-dir" && i + 1 < argc)
      cache_dir = argv[++i];
    else if (arg == "--fresh" && i + 3 < argc) // internal: SPEC DIM VALUE
      fresh = {argv[i + 1], argv[i + 2], argv[i + 3]}, i += 3;
    else {
      std::fprintf(stderr, "usage: %s [--driver auto|real|fake] [--repeat N] [--cache-dir DIR]\n", argv[0]);
      return 2;
    }
  }
  try {
    fusegen::bench::Driver driver = fusegen::bench::choose_driver(mode);
    if (!fresh.empty())
      return fresh_prepare(fresh[0], fresh[1], std::stoll(fresh[2]), cache_dir);

    Clock::time_point start = Clock::now();
    const fusegen::runtime::NvrtcInfo& nvrtc = fusegen::runtime::nvrtc_info();
    double nvrtc_ms = ms_since(start);
    std::filesystem::path temp;
    if (cache_dir.empty()) {
      temp = std::filesystem::temp_directory_path() / ("fusegen-bench-cache-" + std::to_string(::getpid()));
      cache_dir = temp.string();
    }
    if (fusegen::Status usable = fusegen::runtime::prepare_cache_dir(cache_dir, true); !usable)
      throw std::runtime_error("cannot use the cache directory: " + usable.error());
    std::printf("fusegen %s cached load, NVRTC %s\n", FUSEGEN_VERSION, nvrtc.version().c_str());
    std::printf("driver: %s\n", driver.description.c_str());
    std::printf("cache: %s; medians of %d runs, ms\n", cache_dir.c_str(), repeat);
    std::printf("nvrtc_info (first call in the process): %.3f ms\n", nvrtc_ms);
    std::printf("%-58s %10s %10s %10s %10s %10s\n", "spec", "specialize", "generate", "disk hit", "prepare", "fresh");

    fusegen::RuntimeOptions no_cache;
    no_cache.disk_cache = false;
    fusegen::Runtime probe(0, no_cache);
    const int arch = probe.arch();
    fusegen::runtime::Warnings warnings(nullptr);
    auto disk = std::make_shared<const fusegen::runtime::DiskCache>(cache_dir);
    for (const Item& item : manifest_items()) {
      std::unique_ptr<Spec> spec = load(item.spec);
      const fusegen::Fusion& fusion = spec->module.fusions.at(0);
      fusegen::runtime::KernelRequest request;
      request.fusion = &fusion;
      request.fingerprint = fusegen::fingerprint(fusion);
      request.dims = {{item.dim, item.value}};
      request.precision = fusion.precision;
      request.arch = arch;
      request.sources = &spec->sources;
      {
        fusegen::runtime::KernelProvider fill(disk, warnings);
        fill.provide(request); // compiles unless cached
      }
      double specialize =
          median_ms(repeat, [&] { fusegen::runtime::specialize_or_throw(fusion, request.dims, &spec->sources); });
      double generate = median_ms(repeat, [&] {
        fusegen::runtime::generate_unit(fusion, request.dims, request.precision, arch, &spec->sources);
      });
      bool all_hits = true;
      double hit = median_ms(repeat, [&] {
        fusegen::runtime::KernelProvider provider(disk, warnings);
        all_hits = provider.provide(request).from_disk && all_hits;
      });
      double prepare = median_of(repeat, [&] {
        fusegen::RuntimeOptions options;
        options.cache_dir = cache_dir;
        fusegen::Runtime rt(0, options);
        fusegen::Function f = rt.load_file(item.spec).function(fusion.name);
        rt.arch();
        rt.synchronize();
        Clock::time_point begin = Clock::now();
        f.prepare({{item.dim, item.value}});
        all_hits = rt.stats().disk_loads == 1 && all_hits;
        return ms_since(begin);
      });
      // The child process, on the same driver.
      std::string command = std::string("'") + argv[0] + "' --driver " + (driver.fake ? "fake" : "real") +
                            " --cache-dir '" + cache_dir + "' --fresh '" + item.spec + "' " + item.dim + " " +
                            std::to_string(item.value);
      std::string fresh_text = "-";
      if (FILE* pipe = ::popen(command.c_str(), "r")) {
        char line[256] = {};
        double ms = 0;
        unsigned long long generations = 0, compiles = 0, loads = 0;
        if (std::fgets(line, sizeof line, pipe) &&
            std::sscanf(line, "%lf %llu %llu %llu", &ms, &generations, &compiles, &loads) == 4) {
          char text[64];
          std::snprintf(text, sizeof text, "%.3f%s", ms, loads == 1 && compiles == 0 ? "" : "(!)");
          fresh_text = text;
        }
        ::pclose(pipe);
      }
      std::string name = std::filesystem::path(item.spec).parent_path().filename().string() + "/" +
                         std::filesystem::path(item.spec).filename().string() + " " + item.dim + "=" +
                         std::to_string(item.value);
      std::printf("%-58s %10.3f %10.3f %10.3f %10.3f %10s%s\n", name.c_str(), specialize, generate, hit, prepare,
                  fresh_text.c_str(), all_hits ? "" : "  (not all disk hits!)");
      std::fflush(stdout);
    }
    if (!temp.empty())
      std::filesystem::remove_all(temp);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
