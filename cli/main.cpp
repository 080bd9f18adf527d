// fusegen: kernel-fusion compiler command line (CommandLine.cpp parses it).
#include "CommandLine.h"

int main(int argc, char** argv) { return fusegen::cli::run_command_line({argv + 1, argv + argc}); }
