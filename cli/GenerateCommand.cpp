// `fusegen SPEC -o kernels.cu [-H kernels.h] [--dims N=1024] [--arch sm_90]
//  [--precision strict|tf32] [--gemm-block 128x64] [--emit=ir|plan|cuda]`:
//  offline generation.
#include "CommandLine.h"
#include "Commands.h"
#include "OutputFile.h"

#include "fusegen/Codegen.h"
#include "fusegen/IRPrinter.h"
#include "fusegen/Planner.h"

#include <iostream>

namespace fusegen::cli {
namespace {

// "128x64" or "64x64:8" -> one of kGemmBlocks with one of kGemmSplits.
Result<GemmBlock> parse_gemm_block(const std::string& text) {
  for (GemmBlock block : kGemmBlocks)
    for (int split : kGemmSplits) {
      block.split_k = split;
      if (text == format_gemm_block(block))
        return block;
    }
  return Error{"bad --gemm-block '" + text +
               "' (expected 128x256, 128x128, 128x64 or 64x64, optionally with a split-K of 2, 4 or 8 as in 64x64:8)"};
}

} // namespace

int generate_command(const std::vector<std::string>& args) {
  Result<CommandLine> parsed = parse_command_line(args, {{"o", true, false},
                                                         {"H", true, false},
                                                         {"dims", true, true},
                                                         {"arch", true, false},
                                                         {"precision", true, false},
                                                         {"gemm-block", true, false},
                                                         {"emit", true, false},
                                                         {"dump-after", true, false}});
  if (!parsed) {
    std::cerr << "fusegen: error: " << parsed.error() << "\n";
    return kExitUsage;
  }
  const CommandLine& line = parsed.value();
  if (line.positional.size() != 1) {
    std::cerr << "fusegen: error: expected one spec file (usage: fusegen SPEC -o kernels.cu [-H kernels.h])\n";
    return kExitUsage;
  }
  Result<DimBindings> dims = parse_dims(line.values.count("dims") ? line.values.at("dims") : std::vector<std::string>{});
  Result<int> arch = parse_sm_arch(line.value("arch", "sm_90"));
  std::string emit = line.value("emit", "cuda");
  std::string precision_text = line.value("precision");
  std::optional<Result<GemmBlock>> gemm_block;
  if (line.has("gemm-block"))
    gemm_block = parse_gemm_block(line.value("gemm-block"));
  std::string usage_error;
  if (!dims)
    usage_error = dims.error();
  else if (!arch)
    usage_error = arch.error();
  else if (emit != "cuda" && emit != "plan" && emit != "ir")
    usage_error = "bad --emit '" + emit + "' (expected ir, plan or cuda)";
  else if (!precision_text.empty() && precision_text != "strict" && precision_text != "tf32")
    usage_error = "bad --precision '" + precision_text + "' (expected strict or tf32)";
  else if (gemm_block && !*gemm_block)
    usage_error = gemm_block->error();
  if (!usage_error.empty()) {
    std::cerr << "fusegen: error: " << usage_error << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(line.positional[0], line.value("dump-after"), exit_code);
  if (!spec)
    return exit_code;
  if (!dims_are_known(*spec, dims.value(), ""))
    return kExitUsage;

  CodegenOptions options;
  options.arch = arch.value();
  options.source_name = line.positional[0];
  options.arch_guard = true; // a file nvcc may compile for any -arch
  if (!precision_text.empty())
    options.precision = precision_text == "tf32" ? Precision::TF32 : Precision::Strict;
  if (gemm_block)
    options.gemm_block = gemm_block->value();
  std::vector<Plan> plans;
  std::string text;
  for (const Fusion& fusion : spec->module.fusions) {
    std::optional<Fusion> concrete = specialize_for(*spec, fusion, dims.value(), exit_code);
    if (!concrete)
      return exit_code;
    if (options.precision)
      concrete->precision = *options.precision;
    if (emit == "ir")
      text += print_fusion(*concrete);
    plans.push_back(plan_fusion(*concrete));
    if (emit == "plan")
      text += print_plan(plans.back());
  }
  std::string header;
  if (emit == "cuda") {
    Result<GeneratedCode> code = generate_cuda(plans, options);
    if (!code) {
      std::cerr << render_refusal(*spec, "", code.error(), code.error_loc());
      return kExitSpecError;
    }
    text = std::move(code.value().source);
    header = std::move(code.value().header);
  }
  const std::vector<std::string> inputs = {line.positional[0]};
  if (line.has("H")) {
    if (emit != "cuda") {
      std::cerr << "fusegen: error: -H needs --emit=cuda\n";
      return kExitUsage;
    }
    if (line.has("o") && line.value("o") == line.value("H")) {
      std::cerr << "fusegen: error: -o and -H name the same file " << line.value("o") << "\n";
      return kExitUsage;
    }
  }
  if (!line.has("o")) {
    std::cout << text;
  } else if (Status written = write_output_file(line.value("o"), text, inputs); !written) {
    std::cerr << "fusegen: error: " << written.error() << "\n";
    return kExitUsage;
  }
  if (line.has("H")) {
    if (Status written = write_output_file(line.value("H"), header, inputs); !written) {
      std::cerr << "fusegen: error: " << written.error() << "\n";
      return kExitUsage;
    }
  }
  return kExitOk;
}

} // namespace fusegen::cli
