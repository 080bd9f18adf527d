# cmake -DCOMMITTED=<generated/fusegen/TemplateText.h> -DGENERATED=<the build's> -DBUILD=<dir> -P ...
# Builds without Clang use the committed copy: it must be what the template
# tool generates from the current templates, input hash line included.
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${COMMITTED} ${GENERATED} RESULT_VARIABLE differs)
if(differs)
  message(FATAL_ERROR "${COMMITTED} differs from what fusegen-template-tool generates now (${GENERATED}): "
    "after changing templates, their hooks or the tool, run scripts/update-template-text.sh ${BUILD} "
    "and commit the result.")
endif()
