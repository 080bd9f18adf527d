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
  endif()
endmacro()
