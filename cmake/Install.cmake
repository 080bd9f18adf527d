# `cmake --install` rules and the exported package: a host program does
#   find_package(fusegen REQUIRED)
#   target_link_libraries(app PRIVATE fusegen::runtime)
# and gets libfusegen.so with the C++ (fusegen/Runtime.h) and C (fusegen.h)
# headers. The `fusegen` command line tool is installed beside it.
#
# Only the public headers are installed: the runtime's API and the compiler
# headers it includes. The rest of compiler/include (parser, passes, codegen,
# Sha256.h, Npy.h, ...) is internal to fusegen and its tools; a header added
# to the public API (or included by one) goes into this list, and
# scripts/test-install.sh compiles every installed header on its own, so a
# public header that includes an uninstalled one fails there.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FUSEGEN_PUBLIC_COMPILER_HEADERS Diagnostics.h IR.h Result.h Specialize.h)
set(FUSEGEN_PUBLIC_RUNTIME_HEADERS CacheAdmin.h RemoteCacheOptions.h Runtime.h Warmup.h)

install(TARGETS fusegen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
list(TRANSFORM FUSEGEN_PUBLIC_COMPILER_HEADERS PREPEND ${PROJECT_SOURCE_DIR}/compiler/include/fusegen/)
install(FILES ${FUSEGEN_PUBLIC_COMPILER_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fusegen)

if(TARGET fusegen_shared)
  install(TARGETS fusegen_shared EXPORT fusegenTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  list(TRANSFORM FUSEGEN_PUBLIC_RUNTIME_HEADERS PREPEND ${PROJECT_SOURCE_DIR}/runtime/include/fusegen/)
  install(FILES ${FUSEGEN_PUBLIC_RUNTIME_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fusegen)
  install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/fusegen.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set(_fusegen_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/fusegen)
  install(EXPORT fusegenTargets NAMESPACE fusegen:: DESTINATION ${_fusegen_cmake_dir})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fusegenConfig.cmake.in
    ${CMAKE_CURRENT_BINARY_DIR}/fusegenConfig.cmake INSTALL_DESTINATION ${_fusegen_cmake_dir})
  write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/fusegenConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/fusegenConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/fusegenConfigVersion.cmake
    DESTINATION ${_fusegen_cmake_dir})
endif()
