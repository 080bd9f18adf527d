# fusegen_write_if_changed(<path> <text>): writes <text> to <path> unless the
# file already holds exactly that, so that what depends on a generated
# header does not rebuild when its content is the same. Included by the
# script-mode generators (GeneratorIdentity.cmake, TemplateInputs.cmake).
function(fusegen_write_if_changed path text)
  set(old "")
  if(EXISTS ${path})
    file(READ ${path} old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE ${path} "${text}")
  endif()
endfunction()
