// `fusegen SPEC -o kernels.cu [-H kernels.h] [--dims N=1024] [--arch sm_90]
//  [--precision strict|tf32] [--gemm-block 128x64] [--emit=ir|plan|cuda]`:
//  offline generation.
#include "Commands.h"
#include "OptionValues.h"
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

int generate_command(const GenerateArgs& args) {
  if (args.specs.size() != 1) {
    std::cerr << "fusegen: error: expected one spec file (usage: fusegen SPEC -o kernels.cu [-H kernels.h])\n";
    return kExitUsage;
  }
  const std::string& path = args.specs[0];
  Result<DimBindings> dims = parse_dims(args.dims);
  Result<int> arch = parse_sm_arch(args.arch);
  Result<std::optional<Precision>> precision = parse_precision(args.precision);
  Result<std::optional<StrictProduct>> strict_product = parse_strict_product_option(args.strict_product);
  std::optional<Result<GemmBlock>> gemm_block;
  if (args.gemm_block)
    gemm_block = parse_gemm_block(*args.gemm_block);
  const std::string& emit = args.emit;
  std::string usage_error;
  if (!dims)
    usage_error = dims.error();
  else if (!arch)
    usage_error = arch.error();
  else if (emit != "cuda" && emit != "plan" && emit != "ir")
    usage_error = "bad --emit '" + emit + "' (expected ir, plan or cuda)";
  else if (!precision)
    usage_error = precision.error();
  else if (!strict_product)
    usage_error = strict_product.error();
  else if (gemm_block && !*gemm_block)
    usage_error = gemm_block->error();
  if (!usage_error.empty()) {
    std::cerr << "fusegen: error: " << usage_error << "\n";
    return kExitUsage;
  }
  int exit_code = kExitOk;
  std::unique_ptr<LoadedSpec> spec = load_spec(path, args.dump_after, exit_code);
  if (!spec)
    return exit_code;
  if (!dims_are_known(*spec, dims.value(), ""))
    return kExitUsage;

  CodegenOptions options;
  options.arch = arch.value();
  options.source_name = path;
  options.arch_guard = true; // a file nvcc may compile for any -arch
  options.precision = precision.value();
  options.strict_product = strict_product.value();
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
  const std::vector<std::string> inputs = {path};
  if (args.header) {
    if (emit != "cuda") {
      std::cerr << "fusegen: error: -H needs --emit=cuda\n";
      return kExitUsage;
    }
    if (args.output && *args.output == *args.header) {
      std::cerr << "fusegen: error: -o and -H name the same file " << *args.output << "\n";
      return kExitUsage;
    }
  }
  if (!args.output) {
    std::cout << text;
  } else if (Status written = write_output_file(*args.output, text, inputs); !written) {
    std::cerr << "fusegen: error: " << written.error() << "\n";
    return kExitUsage;
  }
  if (args.header) {
    if (Status written = write_output_file(*args.header, header, inputs); !written) {
      std::cerr << "fusegen: error: " << written.error() << "\n";
      return kExitUsage;
    }
  }
  return kExitOk;
}

} // namespace fusegen::cli
