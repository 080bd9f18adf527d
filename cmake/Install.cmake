# `cmake --install` rules and the exported package: a host program does
#   find_package(fusegen REQUIRED)
#   target_link_libraries(app PRIVATE fusegen::runtime)
# and gets libfusegen.so with the C++ (fusegen/Runtime.h) and C (fusegen.h)
# headers. The `fusegen` command line tool is installed beside it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS fusegen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/compiler/include/fusegen DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

if(TARGET fusegen_shared)
  install(TARGETS fusegen_shared EXPORT fusegenTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set(_fusegen_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/fusegen)
  install(EXPORT fusegenTargets NAMESPACE fusegen:: DESTINATION ${_fusegen_cmake_dir})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fusegenConfig.cmake.in
    ${CMAKE_CURRENT_BINARY_DIR}/fusegenConfig.cmake INSTALL_DESTINATION ${_fusegen_cmake_dir})
  write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/fusegenConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/fusegenConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/fusegenConfigVersion.cmake
    DESTINATION ${_fusegen_cmake_dir})
endif()
