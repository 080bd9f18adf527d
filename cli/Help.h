// The help of `fusegen --help` and `fusegen COMMAND --help`: each command's
// synopsis, written out, and (for a command) the options CLI11 lists from
// their declarations (CommandLine.cpp).
#pragma once

#include <memory>
#include <string>

namespace CLI {
class FormatterBase;
} // namespace CLI

namespace fusegen::cli {

// The full help: every command's synopsis, the options and exit codes.
std::string full_usage();

// What CLI11 prints for --help: the full help for `fusegen`, and for a
// command its synopsis, its options and the exit codes.
std::shared_ptr<CLI::FormatterBase> help_formatter();

} // namespace fusegen::cli
