// Loading specs (Runtime::load_file/load_string) and looking at their fusions.
#include "fusegen/Runtime.h"

#include "RuntimeState.h"

#include "fusegen/Frontend.h"
#include "fusegen/IRPrinter.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fusegen {

Program Runtime::load_string(const std::string& text, const std::string& name) {
  auto state = std::make_shared<ProgramState>();
  state->name = name;
  uint32_t file = state->sources.add_buffer(name, text);
  Diagnostics diags;
  std::optional<Module> module = compile_spec(state->sources, file, diags);
  if (!module) {
    std::string rendered = diags.render(state->sources);
    while (!rendered.empty() && rendered.back() == '\n')
      rendered.pop_back();
    throw RuntimeError(ErrorKind::Spec, rendered);
  }
  state->module = std::move(*module);
  Program program;
  program.runtime_ = state_;
  program.state_ = std::move(state);
  return program;
}

Program Runtime::load_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw RuntimeError(ErrorKind::Io,
                       path + ": " + (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in)
    throw RuntimeError(ErrorKind::Io, path + ": cannot read file");
  return load_string(text.str(), path);
}

const std::string& Program::name() const { return state_->name; }

std::vector<std::string> Program::function_names() const {
  std::vector<std::string> names;
  for (const Fusion& fusion : state_->module.fusions)
    names.push_back(fusion.name);
  return names;
}

Function Program::function(const std::string& name) const {
  const Fusion* fusion = state_->module.find(name);
  if (!fusion) {
    std::string known;
    for (const std::string& n : function_names())
      known += (known.empty() ? "" : ", ") + n;
    throw RuntimeError(ErrorKind::Argument,
                       state_->name + " has no fusion named '" + name + "' (it has: " + known + ")");
  }
  auto state = std::make_shared<FunctionState>(state_, *fusion);
  Function function;
  function.runtime_ = runtime_;
  function.state_ = std::move(state);
  return function;
}

const std::string& Function::name() const { return state_->fusion->name; }

std::vector<std::string> Function::argument_names() const {
  std::vector<std::string> names;
  for (ValueId id : state_->fusion->arguments)
    names.push_back(state_->fusion->value(id).name);
  return names;
}

std::vector<std::string> Function::output_names() const {
  std::vector<std::string> names;
  for (const FusionOutput& output : state_->fusion->outputs)
    names.push_back(output.name);
  return names;
}

std::string Function::signature() const {
  const Fusion& fusion = *state_->fusion;
  std::string text = fusion.name + "(";
  for (size_t i = 0; i < fusion.arguments.size(); ++i) {
    const Value& arg = fusion.value(fusion.arguments[i]);
    text += (i ? ", " : "") + arg.name + ": " + dtype_name(arg.type.dtype) + shape_str(arg.type.shape);
  }
  text += ") -> (";
  for (size_t i = 0; i < fusion.outputs.size(); ++i) {
    const Value& value = fusion.value(fusion.outputs[i].value);
    text +=
        (i ? ", " : "") + fusion.outputs[i].name + ": " + dtype_name(value.type.dtype) + shape_str(value.type.shape);
  }
  return text + ")";
}

} // namespace fusegen
