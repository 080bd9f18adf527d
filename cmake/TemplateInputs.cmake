# The inputs of fusegen-template-tool and their SHA-256, which the first line
# of every header it generates records ("// fusegen-template-inputs-sha256:
# HASH"), so that a build without Clang can tell whether the committed copy
# generated/fusegen/TemplateText.h is current (compiler/template_tool).
#
# Script mode: prepends that line to the tool's output BODY, giving OUTPUT
# (left untouched when unchanged, so that its dependents do not rebuild):
#   cmake -DINPUTS=<list file> -DROOT=<source dir> -DBODY=<file> -DOUTPUT=<header> -P TemplateInputs.cmake

# fusegen_template_inputs(<out> <root> <template.cu>...): what the tool reads
# for these templates: them, the pieces beside them (*.cuh, *.h), the hook
# headers, fusegen/KernelLimits.h, fusegen/TemplateHooks.h (the hook specs)
# and the tool's prelude. A new file reconfigures (CONFIGURE_DEPENDS).
function(fusegen_template_inputs out root)
  set(inputs ${ARGN})
  foreach(template IN LISTS ARGN)
    get_filename_component(dir ${template} DIRECTORY)
    file(GLOB_RECURSE pieces CONFIGURE_DEPENDS ${dir}/*.cuh ${dir}/*.h)
    list(APPEND inputs ${pieces})
  endforeach()
  file(GLOB hooks CONFIGURE_DEPENDS ${root}/compiler/include/fusegen/hooks/*.h)
  list(APPEND inputs ${hooks} ${root}/compiler/include/fusegen/KernelLimits.h
    ${root}/compiler/include/fusegen/TemplateHooks.h ${root}/compiler/template_tool/prelude.h)
  list(REMOVE_DUPLICATES inputs)
  set(${out} ${inputs} PARENT_SCOPE)
endfunction()

# fusegen_template_inputs_sha256(<out> <root> <file>...): the SHA-256 of the
# lines "NAME SHA256" sorted by NAME, each file's path relative to root, so
# that a checkout and an sdist's fusegen-src/ agree wherever they are.
function(fusegen_template_inputs_sha256 out root)
  set(lines)
  foreach(file IN LISTS ARGN)
    file(SHA256 ${file} digest)
    file(RELATIVE_PATH name ${root} ${file})
    list(APPEND lines "${name} ${digest}")
  endforeach()
  list(SORT lines)
  list(JOIN lines "\n" manifest)
  string(SHA256 hash "${manifest}\n")
  set(${out} ${hash} PARENT_SCOPE)
endfunction()

# fusegen_recorded_template_inputs_sha256(<out> <header>): the hash a
# generated header records, or "" if it records none.
function(fusegen_recorded_template_inputs_sha256 out header)
  file(STRINGS ${header} first LIMIT_COUNT 1)
  if(first MATCHES "^// fusegen-template-inputs-sha256: ([0-9a-f]+)$")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT INPUTS OR NOT ROOT OR NOT BODY OR NOT OUTPUT)
    message(FATAL_ERROR "usage: cmake -DINPUTS=<list file> -DROOT=<dir> -DBODY=<file> -DOUTPUT=<header> "
      "-P TemplateInputs.cmake")
  endif()
  file(STRINGS ${INPUTS} inputs)
  fusegen_template_inputs_sha256(hash ${ROOT} ${inputs})
  file(READ ${BODY} body)
  set(text "// fusegen-template-inputs-sha256: ${hash}\n${body}")
  include(${CMAKE_CURRENT_LIST_DIR}/WriteIfChanged.cmake)
  fusegen_write_if_changed(${OUTPUT} "${text}")
endif()
