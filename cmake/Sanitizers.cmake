# FUSEGEN_SANITIZE=ON instruments fusegen's own code with AddressSanitizer
# and UndefinedBehaviorSanitizer (build with clang; scripts/test-sanitizers.sh).
# fusegen_enable_sanitizers() applies the flags to targets created after the
# call in the calling directory: it is called after the template tool is
# added, so the build-time tool (linked with an uninstrumented LLVM) stays
# plain.
option(FUSEGEN_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(FUSEGEN_FUZZ "Build the libFuzzer targets (clang only)" OFF)

macro(fusegen_enable_sanitizers)
  if(FUSEGEN_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
    # An instrumented shared library (libfusegen.so) refers to the sanitizer
    # runtime, which the executable that loads it provides; so undefined
    # symbols must be allowed there despite -Wl,--no-undefined. Link
    # libraries come last on the link line, so this one wins.
    link_libraries(-Wl,-z,undefs)
  endif()
  # libFuzzer is guided by coverage of the code under test, so the libraries
  # a fuzz target links need the coverage instrumentation too (without it
  # the fuzzer sees only its own entry function). Only the fuzz targets link
  # libFuzzer itself (-fsanitize=fuzzer, tests/fuzz).
  if(FUSEGEN_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endmacro()
