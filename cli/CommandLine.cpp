#include "CommandLine.h"

#include "Commands.h"
#include "Help.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <iostream>

namespace fusegen::cli {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// ---- Declaring the options ----

// A command as declared: its CLI11 app, and what runs it once parsed.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// Every command's parsed options; the options write into these.
struct ParsedArgs {
  GenerateArgs generate;
  CheckArgs check;
  PlanArgs plan;
  RunArgs run;
  WarmupArgs warmup;
  CacheArgs cache;
};

CLI::App* add_command(CLI::App& fusegen, const std::string& name) {
  CLI::App* command = fusegen.add_subcommand(name);
  // Unknown options are kept aside rather than refused, so that their error
  // can suggest a declared name (unknown_option_error).
  command->allow_extras();
  return command;
}

// The words that are not options (the spec; cache's action and file), all of
// them, so that a second spec is the command's error, not CLI11's. Left out
// of the option list: the synopsis names them.
void add_words(CLI::App& command, const std::string& name, std::vector<std::string>& words) {
  command.add_option(name, words)->group("");
}

// An option whose presence counts even when it is given empty (Commands.h).
CLI::Option* add_optional(CLI::App& command, const std::string& name, std::optional<std::string>& slot,
                          const std::string& help) {
  return command.add_option_function<std::string>(
      name, [&slot](const std::string& value) { slot = value; }, help);
}

// --dims: repeatable, one value each time (a CLI11 vector would otherwise take
// every word that follows, the spec included).
CLI::Option* add_dims(CLI::App& command, std::vector<std::string>& dims, const std::string& help) {
  return command.add_option("--dims", dims, help)->allow_extra_args(false);
}

CLI::Option* add_dump_after(CLI::App& command, std::string& pass) {
  return command.add_option("--dump-after", pass, "print the IR after that pass (or each) to stderr")
      ->option_text("PASS|all");
}

Command declare_generate(CLI::App& fusegen, GenerateArgs& args) {
  CLI::App* command = add_command(fusegen, "generate");
  add_words(*command, "SPEC", args.specs);
  add_optional(*command, "-o", args.output, "write the .cu to FILE (default: stdout)")->option_text("FILE");
  add_optional(*command, "-H", args.header, "also write a header declaring the launchers")->option_text("FILE");
  add_dims(*command, args.dims, "bake these sizes in; repeatable")->option_text("N=1024[,M=64]");
  command->add_option("--arch", args.arch, "the target (default sm_90)")->option_text("sm_NN");
  command->add_option("--precision", args.precision, "every fusion's precision")->option_text("strict|tf32");
  command->add_option("--strict-product", args.strict_product, "how strict GEMMs multiply (default 3xtf32)")
      ->option_text("3xtf32|fp16x3");
  add_optional(*command, "--gemm-block", args.gemm_block, "every GEMM kernel's block, and split-K")
      ->option_text("128x64[:8]");
  command->add_option("--emit", args.emit, "stop after the IR or the plan (default cuda)")->option_text("ir|plan|cuda");
  add_dump_after(*command, args.dump_after);
  return {command, [&args] { return generate_command(args); }};
}

Command declare_check(CLI::App& fusegen, CheckArgs& args) {
  CLI::App* command = add_command(fusegen, "check");
  add_words(*command, "SPEC", args.specs);
  add_dims(*command, args.dims, "check at these sizes; repeatable")->option_text("N=128[,M=64]");
  add_dump_after(*command, args.dump_after);
  return {command, [&args] { return check_command(args); }};
}

Command declare_plan(CLI::App& fusegen, PlanArgs& args) {
  CLI::App* command = add_command(fusegen, "plan");
  add_words(*command, "SPEC", args.specs);
  command->add_option("--fusion", args.fusion, "plan this fusion only")->option_text("NAME");
  add_dims(*command, args.dims, "plan for these sizes; repeatable")->option_text("N=1024[,M=64]");
  command->add_option("--strict-product", args.strict_product, "how strict GEMMs multiply (default 3xtf32)")
      ->option_text("3xtf32|fp16x3");
  add_dump_after(*command, args.dump_after);
  return {command, [&args] { return plan_command(args); }};
}

// One command, two runs: the device run's options need --device, the
// reference run's exclude it (CLI11 refuses either mix-up).
Command declare_run(CLI::App& fusegen, RunArgs& args) {
  CLI::App* command = add_command(fusegen, "run");
  add_words(*command, "SPEC", args.specs);
  add_optional(*command, "--fusion", args.fusion, "the fusion to run (needed when the spec has several)")
      ->option_text("NAME");
  add_dims(*command, args.dims, "the sizes to run at; repeatable")->option_text("N=128[,M=64]");
  command->add_option("--seed", args.seed, "the random inputs' seed (default 0)")->option_text("S");
  add_optional(*command, "--inputs", args.inputs, "the arguments from DIR/<name>.npy instead")->option_text("DIR");
  CLI::Option* device = command->add_flag("--device", args.device, "run on GPU 0 through the JIT runtime");

  const std::string reference = "Reference run (without --device)";
  command->add_flag("--reference")
      ->description("on the reference interpreter (the default)")
      ->excludes(device)
      ->group(reference);
  add_optional(*command, "--save", args.save, "write inputs and outputs as .npy under DIR")
      ->option_text("DIR")
      ->excludes(device)
      ->group(reference);
  add_dump_after(*command, args.dump_after)->excludes(device)->group(reference);

  const std::string on_device = "Device run (with --device)";
  command->add_flag("--compare", args.compare, "check the results against the reference interpreter")
      ->needs(device)
      ->group(on_device);
  add_optional(*command, "--expect", args.expect, "check the results against DIR/<name>.npy (with --inputs)")
      ->option_text("DIR")
      ->needs(device)
      ->group(on_device);
  auto device_option = [&](const std::string& name, std::string& slot, const std::string& text,
                           const std::string& help) {
    command->add_option(name, slot, help)->option_text(text)->needs(device)->group(on_device);
  };
  device_option("--precision", args.precision, "strict|tf32", "every fusion's precision");
  device_option("--cache-dir", args.cache_dir, "D", "the disk cache of compiled kernels");
  device_option("--remote-cache", args.remote_cache, "URL", "the fleet's cache (redis://host:port[/db])");
  device_option("--cache-key-file", args.cache_key_file, "K", "the fleet's signing key");
  return {command, [&args] { return run_command(args); }};
}

Command declare_warmup(CLI::App& fusegen, WarmupArgs& args) {
  CLI::App* command = add_command(fusegen, "warmup");
  add_words(*command, "SPEC", args.specs);
  add_dims(*command, args.dims, "values to compile for (every combination); repeatable")->option_text("N=128,1024");
  command->add_option("--arch", args.arch, "the GPU to compile for (default sm_90)")->option_text("sm_NN");
  command->add_option("--precision", args.precision, "every fusion's precision")->option_text("strict|tf32");
  command->add_option("--strict-product", args.strict_product, "how strict GEMMs multiply (default 3xtf32)")
      ->option_text("3xtf32|fp16x3");
  command->add_option("--jobs", args.jobs, "compile this many at once (1 to 256, default 1)")->option_text("N");
  command->add_option("--cache-dir", args.cache_dir, "the disk cache to fill")->option_text("D");
  command->add_option("--remote-cache", args.remote_cache, "the fleet's cache (redis://host:port[/db])")
      ->option_text("URL");
  command->add_option("--cache-key-file", args.cache_key_file, "the fleet's signing key")->option_text("K");
  return {command, [&args] { return warmup_command(args); }};
}

Command declare_cache(CLI::App& fusegen, CacheArgs& args) {
  CLI::App* command = add_command(fusegen, "cache");
  add_words(*command, "ACTION", args.words);
  command->add_option("--cache-dir", args.cache_dir, "the disk cache")->option_text("D");
  command->add_option("--cache-key-file", args.cache_key_file, "the fleet's signing key (export, import)")
      ->option_text("K");
  add_optional(*command, "--remote-cache", args.remote_cache, "import into the fleet's cache too")->option_text("URL");
  return {command, [&args] { return cache_command(args); }};
}

// ---- Errors in fusegen's words ----

int unknown_command(const std::string& word, const std::vector<std::string>& commands) {
  const std::string suggestion = closest_name(word, commands);
  std::cerr << "fusegen: error: unknown command '" << word << "' ("
            << (suggestion.empty() ? "" : "did you mean " + suggestion + "? ") << "see fusegen --help)\n";
  return kExitUsage;
}

// The first word CLI11 kept aside (add_command), as an error that suggests
// the closest option of `command`; "" when there is none.
std::string unknown_option_error(const CLI::App& command) {
  for (const std::string& arg : command.remaining()) {
    const size_t start = arg.find_first_not_of('-');
    if (start == 0 || start == std::string::npos)
      return "unexpected argument '" + arg + "' (see --help)";
    const std::string name = arg.substr(start, arg.find('=') - start);
    std::vector<std::string> names;
    for (const CLI::Option* option : command.get_options()) {
      for (const std::string& long_name : option->get_lnames())
        names.push_back(long_name);
      for (const std::string& short_name : option->get_snames())
        names.push_back(short_name);
    }
    const std::string suggestion = closest_name(name, names);
    if (suggestion.empty())
      return "unknown option '" + arg + "' (see --help)";
    return "unknown option '" + arg + "' (did you mean " + (suggestion.size() == 1 ? "-" : "--") + suggestion +
           "? see --help)";
  }
  return "";
}

// CLI11's message for a bad command line, reworded where fusegen has always
// said it otherwise. CLI11 2.1's texts for an option's value count are
// "NAME: 1 required TEXT missing" and "NAME: At Most 1 required but received 2".
std::string parse_error_text(const CLI::ParseError& error) {
  const std::string what = error.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error)) {
    const std::string name = what.substr(0, what.find(':'));
    if (what.size() >= 8 && what.compare(what.size() - 8, 8, " missing") == 0)
      return "option " + name + " needs a value"; // as spelled: -o or --dims
    if (what.find(": At Most 1 required") != std::string::npos)
      return "option " + name + " given twice";
  }
  return what + " (see --help)";
}

} // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3; // at most two edits
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance && distance < word.size()) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

int run_command_line(std::vector<std::string> args) {
  if (args.empty()) {
    std::cerr << full_usage();
    return kExitUsage;
  }
  CLI::App fusegen("", "fusegen");
  // Commands take the formatter and help flag as they are added.
  fusegen.formatter(help_formatter());
  fusegen.set_help_flag("-h,--help", "show this help");
  fusegen.set_version_flag("--version", std::string("fusegen ") + FUSEGEN_VERSION, "show the version");
  ParsedArgs parsed;
  const Command commands[] = {declare_generate(fusegen, parsed.generate), declare_check(fusegen, parsed.check),
                              declare_run(fusegen, parsed.run),           declare_plan(fusegen, parsed.plan),
                              declare_warmup(fusegen, parsed.warmup),     declare_cache(fusegen, parsed.cache)};
  std::vector<std::string> names;
  for (const Command& command : commands)
    names.push_back(command.app->get_name());
  auto is_command = [&](const std::string& word) { return std::find(names.begin(), names.end(), word) != names.end(); };

  // `fusegen help [COMMAND]` is `fusegen [COMMAND] --help`.
  if (args[0] == "help") {
    if (args.size() > 1 && !is_command(args[1]))
      return unknown_command(args[1], names);
    args = args.size() > 1 ? std::vector<std::string>{args[1], "--help"} : std::vector<std::string>{"--help"};
  }
  const std::string word = args[0];
  if (!is_command(word) && word != "--help" && word != "-h" && word != "--version") {
    // `fusegen SPEC -o kernels.cu`: a path that is not a command is the spec.
    const bool path = word[0] != '-' && word.find_first_of("./") != std::string::npos;
    if (!path)
      return unknown_command(word, names);
    args.insert(args.begin(), "generate");
  }
  const std::string command_name = args[0] == "generate" || !is_command(args[0]) ? "fusegen" : "fusegen " + args[0];

  std::vector<std::string> reversed(args.rbegin(), args.rend()); // CLI11 takes them last first
  try {
    fusegen.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << fusegen.help(); // the command's, where one was named
    return kExitOk;
  } catch (const CLI::CallForVersion& version) {
    std::cout << version.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& error) {
    std::cerr << command_name << ": error: " << parse_error_text(error) << "\n";
    return kExitUsage;
  }
  for (const Command& command : commands) {
    if (!command.app->parsed())
      continue;
    if (const std::string error = unknown_option_error(*command.app); !error.empty()) {
      std::cerr << command_name << ": error: " << error << "\n";
      return kExitUsage;
    }
    return command.run();
  }
  std::cerr << full_usage();
  return kExitUsage;
}

} // namespace fusegen::cli
